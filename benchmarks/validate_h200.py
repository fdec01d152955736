"""Validation report: the model against the committed H200 measurements.

    python benchmarks/validate_h200.py        # writes data/h200_validation.md and prints it

Per group of cases: prediction error (exp|log(pred/meas)| - 1: median and p90) and the SOL fraction
(T_SOL / measured), on all primary cases, the training two thirds and the held-out third.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from solkit.hardware import load_gpu  # noqa: E402
from solkit.validation import (  # noqa: E402
    evaluate,
    format_summary,
    load_measurements,
    measured_pairs,
    run_to_run,
    summarize,
)

PAIRS = (
    ("fused", False, True, "fusion: unfused -> fused (QKV: 3 GEMMs -> 1; LayerNorm+residual: add + LN -> 1 kernel)"),
    ("layout", "nchw", "nhwc", "conv layout: NCHW -> NHWC"),
    ("layout", "im2col", "nhwc", "conv: explicit im2col -> implicit GEMM (NHWC)"),
    ("impl", "naive", "flash", "attention: naive -> flash"),
)

DATA = ROOT / "data" / "h200_measurements.json"
REPEAT = ROOT / "data" / "h200_measurements_run2.json"  # the same cases again, another seed, another machine start
REPORT = ROOT / "data" / "h200_validation.md"


def main() -> int:
    mset = load_measurements(DATA)
    gpu = load_gpu("h200")
    results = evaluate(mset, gpu)
    primary = {c.id for c in mset.cases if c.primary}
    main_rows = [r for r in results if r.id in primary]
    other = [r for r in results if r.id not in primary]
    meta, m = mset.meta, gpu.measured
    worst = sorted(main_rows, key=lambda r: -r.error)[:15]
    repeat = load_measurements(REPEAT)
    n_rep, rep_median, rep_p90, rep_max = run_to_run(mset, repeat)
    repeat_primary = {c.id for c in repeat.cases if c.primary}
    repeat_rows = [r for r in evaluate(repeat, gpu) if r.id in repeat_primary]
    noise = [
        "## Run to run, and the model against a second run",
        "",
        f"`data/h200_measurements_run2.json` measured the same {n_rep} cases again ({repeat.meta['date_utc'][:16]}, "
        f"seed {repeat.meta['args']['seed']}, a fresh machine). Spread between the runs, exp|log(t2/t1)| - 1: "
        f"median {rep_median:.1%}, p90 {rep_p90:.1%}, max {rep_max:.0%} (the torch.compile'd fused LayerNorm at "
        "d_model=768 ran 2.5x slower in run 2; run 2 was not profiled, so the cause is not established). "
        "The calibrated model (fitted on run 1 only) against run 2:",
        "",
        format_summary(summarize(repeat_rows)[-1:]),
        "",
    ]
    pair_lines = []
    for key, a, b, title in PAIRS:
        pairs = measured_pairs(mset, gpu, key, a, b)
        pair_lines += [f"### {title}", "", "| op | shape | baseline us | variant us | measured ratio | T_SOL ratio | predicted ratio |",
                       "|---|---|---:|---:|---:|---:|---:|"]
        pair_lines += [f"| {p.op} | {p.shape} | {p.baseline_seconds * 1e6:.1f} | {p.variant_seconds * 1e6:.1f} | "
                       f"{p.measured_ratio:.2f} | {p.t_sol_ratio:.2f} | {p.predicted_ratio:.2f} |" for p in pairs]
        pair_lines.append("")
    lines = [
        "# solkit on the H200: model vs measurement",
        "",
        f"Measured {meta['date_utc'][:10]} on an {meta['gpu_name']} (driver {meta['nvidia_smi'].split(',')[0]}), "
        f"torch {meta['torch_version']}, CUDA {meta['cuda_version']}, Triton {meta['triton_version']}, "
        f"cuDNN {meta['cudnn_version']}, by `benchmarks/measure_h200.py` (raw data: `data/h200_measurements.json`).",
        f"Method: {meta['method']}",
        "",
        "Predictions use the calibration in `hardware_specs/h200-sxm.yaml` (`measured:`), fitted by",
        f"`benchmarks/calibrate_h200.py` on the training cases only ({m.fit}).",
        "Error = exp(|log(predicted / measured)|) - 1. SOL fraction = T_SOL / measured (datasheet peaks, compulsory bytes).",
        "",
        f"## All {len(main_rows)} primary cases",
        "",
        format_summary(summarize(main_rows)),
        "",
        f"## Held out ({sum(r.holdout for r in main_rows)} cases never used in fitting)",
        "",
        format_summary(summarize([r for r in main_rows if r.holdout])),
        "",
        f"## Training ({sum(not r.holdout for r in main_rows)} cases)",
        "",
        format_summary(summarize([r for r in main_rows if not r.holdout])[-1:]),
        "",
        f"## Other implementations of the same ops ({len(other)} cases: cuDNN attention, addmm)",
        "",
        "The predictor models the default implementation; these rows show the spread between libraries.",
        "",
        "| case | measured us | predicted us | SOL fraction |",
        "|---|---:|---:|---:|",
        *[f"| {r.id} | {r.measured * 1e6:.1f} | {r.predicted * 1e6:.1f} | {r.sol_fraction:.3f} |" for r in other],
        "",
        *noise,
        "## What the variants buy, measured",
        "",
        "Each row: the same op and shape, two variants. Ratio = baseline time / variant time.",
        "",
        *pair_lines,
        "## The 15 worst predictions",
        "",
        "| case | measured us | predicted us | log(pred/meas) |",
        "|---|---:|---:|---:|",
        *[f"| {r.id} | {r.measured * 1e6:.1f} | {r.predicted * 1e6:.1f} | {np.log(r.predicted / r.measured):+.2f} |" for r in worst],
        "",
    ]
    text = "\n".join(lines)
    REPORT.write_text(text)
    print(text)
    sol_max = max(r.sol_fraction for r in results)
    print(f"\nmax SOL fraction over all {len(results)} cases: {sol_max:.3f} (must be <= 1)")
    return 0 if sol_max <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
