"""The validation report (``data/h200_validation.md``): the model against the committed measurements.

Per group of cases: prediction error (exp|log(pred/meas)| - 1: median and p90) and the SOL
fraction (T_SOL / measured), on all primary cases, the training two thirds and the held-out third;
other implementations of the same ops; the run-to-run spread; what the measured variants buy; the
worst predictions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from .data import MeasurementSet
from .manifest import manifest
from .metrics import CaseResult, evaluate, format_summary, measured_pairs, run_to_run, summarize

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU

__all__ = ["validation_report", "sampled_report", "family_table", "PAIRS"]

#: (parameter, baseline value, variant value, title) of the measured variant pairs
PAIRS = (
    ("fused", False, True, "fusion: unfused -> fused (QKV: 3 GEMMs -> 1; LayerNorm+residual: add + LN -> 1 kernel)"),
    ("layout", "nchw", "nhwc", "conv layout: NCHW -> NHWC"),
    ("layout", "im2col", "nhwc", "conv: explicit im2col -> implicit GEMM (NHWC)"),
    ("impl", "naive", "flash", "attention: naive -> flash"),
)


def _pairs_section(mset: MeasurementSet, gpu: "GPU") -> list[str]:
    lines = []
    for key, a, b, title in PAIRS:
        pairs = measured_pairs(mset, gpu, key, a, b)
        lines += [f"### {title}", "", "| op | shape | baseline us | variant us | measured ratio | T_SOL ratio | predicted ratio |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {p.op} | {p.shape} | {p.baseline_seconds * 1e6:.1f} | {p.variant_seconds * 1e6:.1f} | "
                  f"{p.measured_ratio:.2f} | {p.t_sol_ratio:.2f} | {p.predicted_ratio:.2f} |" for p in pairs]
        lines.append("")
    return lines


def _repeat_section(mset: MeasurementSet, repeat: MeasurementSet, gpu: "GPU") -> list[str]:
    n, median, p90, worst = run_to_run(mset, repeat)
    first = {c.id: c.seconds for c in mset.cases if c.ok and c.seconds}
    spread = {c.id: abs(np.log(c.seconds / first[c.id])) for c in repeat.cases if c.ok and c.seconds and c.id in first}
    worst_id = max(spread, key=lambda i: spread[i])
    primary = {c.id for c in repeat.cases if c.primary}
    rows = [r for r in evaluate(repeat, gpu) if r.id in primary]
    return [
        "## Run to run, and the model against a second run",
        "",
        f"A second measurement of the same {n} cases ({repeat.meta['date_utc'][:16]}, seed "
        f"{repeat.meta['args']['seed']}, a fresh machine). Spread between the runs, exp|log(t2/t1)| - 1: median "
        f"{median:.1%}, p90 {p90:.1%}, max {worst:.0%} (`{worst_id}`). The calibrated model (fitted on the first run only) against the "
        "second run:",
        "",
        format_summary(summarize(rows)[-1:]),
        "",
    ]


def validation_report(mset: MeasurementSet, gpu: "GPU", data: str, spec: str, repeat: Optional[MeasurementSet] = None,
                      frozen: "Optional[tuple[str, MeasurementSet]]" = None) -> str:
    """The Markdown report of ``gpu``'s calibration (from the file ``spec``) against the measurement file ``mset`` (``data``).

    ``frozen``: (path, file) of the random test draw measured after the model was frozen, reported first.
    """
    results: list[CaseResult] = evaluate(mset, gpu)
    primary = {c.id for c in mset.cases if c.primary}
    main = [r for r in results if r.id in primary]
    other = [r for r in results if r.id not in primary]
    meta = mset.meta
    fit = gpu.measured.fit if gpu.measured is not None else "(uncalibrated)"
    worst = sorted(main, key=lambda r: -r.error)[:15]
    lines = [
        f"# solkit on the {meta['gpu_name'].removeprefix('NVIDIA ')}: model vs measurement",
        "",
        f"Measured {meta['date_utc'][:10]} on an {meta['gpu_name']} (driver {meta['nvidia_smi'].split(',')[0]}), "
        f"torch {meta['torch_version']}, CUDA {meta['cuda_version']}, Triton {meta['triton_version']}, "
        f"cuDNN {meta['cudnn_version']}, by `benchmarks/measure_h200.py` (raw data: `{data}`).",
        f"Method: {meta['method']}",
        "",
        f"Predictions use the calibration in `{spec}` "
        f"(`measured:`), fitted on the training cases only ({fit}), and its neighbour correction "
        "(`solkit.prediction.neighbours`), whose bank holds the training cases but not the held-out third.",
        "Error = exp(|log(predicted / measured)|) - 1. SOL fraction = T_SOL / measured (datasheet peaks, compulsory bytes).",
        "",
        *(_frozen_section(*frozen, gpu) if frozen is not None else []),
        f"## All {len(main)} primary cases",
        "",
        format_summary(summarize(main)),
        "",
        f"## Held out ({sum(r.holdout for r in main)} cases never used in fitting)",
        "",
        format_summary(summarize([r for r in main if r.holdout])),
        "",
        f"## Training ({sum(not r.holdout for r in main)} cases)",
        "",
        format_summary(summarize([r for r in main if not r.holdout])[-1:]),
        "",
        f"## Other implementations of the same ops ({len(other)} cases: cuDNN attention, addmm)",
        "",
        "The predictor models the default implementation; these rows show the spread between libraries.",
        "",
        "| case | measured us | predicted us | SOL fraction |",
        "|---|---:|---:|---:|",
        *[f"| {r.id} | {r.measured * 1e6:.1f} | {r.predicted * 1e6:.1f} | {r.sol_fraction:.3f} |" for r in other],
        "",
        *(_repeat_section(mset, repeat, gpu) if repeat is not None else []),
        "## What the variants buy, measured",
        "",
        "Each row: the same op and shape, two variants. Ratio = baseline time / variant time.",
        "",
        *_pairs_section(mset, gpu),
        "## The 15 worst predictions",
        "",
        "| case | measured us | predicted us | log(pred/meas) |",
        "|---|---:|---:|---:|",
        *[f"| {r.id} | {r.measured * 1e6:.1f} | {r.predicted * 1e6:.1f} | {np.log(r.predicted / r.measured):+.2f} |"
          for r in worst],
        "",
    ]
    return "\n".join(lines)


def family_table(rows: list[CaseResult]) -> str:
    """Per group: cases, median and p90 error, max SOL fraction (must stay <= 1)."""
    lines = ["| group | cases | median error | p90 error | max SOL fraction |", "|---|---:|---:|---:|---:|"]
    for s in summarize(rows):
        lines.append(f"| {s.group} | {s.n} | {s.median_error:.1%} | {s.p90_error:.1%} | {s.sol_max:.3f} |")
    return "\n".join(lines)


def _frozen_section(path: str, mset: MeasurementSet, gpu: "GPU") -> list[str]:
    """The frozen random test draw: the figures to trust for shapes nobody chose."""
    meta = mset.meta
    return [f"## Shapes nobody chose: the frozen random test draw ({meta['counts']['ok']} cases, seed "
            f"{meta['args'].get('sample_seed')})", "",
            f"Drawn at random from the declared space per op family (`benchmarks/measuring/sampling.py`: log-uniform sizes, a "
            f"quarter with unaligned dimensions, every dtype), measured once on {meta['date_utc'][:16]} UTC, after the model "
            f"was frozen; in no fit and not in the neighbour bank (`{path}`; the protocol and the earlier draws: "
            "`data/h200_sample_report.md`). Issue 12's goal: median at most 10%, p90 at most 30%, no family's median above "
            "20%, T_SOL never above a measurement.", "", format_summary(summarize(evaluate(mset, gpu))), ""]


def sampled_report(sets: "list[tuple[str, str, MeasurementSet]]", gpu: "GPU", spec: str, cv_table: str = "",
                   repeat: "Optional[tuple[MeasurementSet, MeasurementSet]]" = None,
                   held_by_set: "Sequence[tuple[str, int, float, float, float, float]]" = ()) -> str:
    """The Markdown report of the model on randomly sampled cases: one per-family table per set (name, path, file).

    ``cv_table``: the cross-validation table (``crossval.format_scores``), if computed; ``repeat``: two
    runs of the same sampled cases, for the run-to-run spread; ``held_by_set``: the neighbour correction
    held out by set (``neighbours.holdout_by_set``).
    """
    fit = gpu.measured.fit if gpu.measured is not None else "(uncalibrated)"
    banked = set(manifest().files(bank=True))
    apart = [f"`{Path(path).name}`" for _, path, _ in sets if Path(path).name not in banked]
    outside = (f"Every set below but {', '.join(apart)} is in that bank" if apart else "Every set below is in that bank")
    lines = [
        f"# solkit on randomly sampled {gpu.name} cases: fit, validation and frozen test sets",
        "",
        "Cases are drawn at random from a declared space per op family (`benchmarks/measuring/sampling.py`: seeded, "
        "log-uniform sizes, a quarter with unaligned dimensions, every dtype the op supports) and timed by "
        "`benchmarks/measure_h200.py --sample SET`. A case's set follows from a hash of its id: fit (60%), validation "
        "(20%, for model choices), test (20%, measured once, after the model was frozen). "
        f"Predictions use `{spec}` ({fit}), with its neighbour correction (`solkit.prediction.neighbours`): each kernel's "
        f"body scaled by how its nearest measured kernels missed. {outside}, so its rows are in-sample for the "
        "correction: the honest figures are the frozen test draws and the table of the correction held out by set at "
        "the end.",
        "Error = exp(|log(predicted / measured)|) - 1; SOL fraction = T_SOL / measured (never above 1).",
        "",
    ]
    for name, path, mset in sets:
        meta = mset.meta
        rows = evaluate(mset, gpu)
        lines += [f"## {name}: {len(rows)} cases (`{path}`)", "",
                  f"Measured {meta['date_utc'][:16]} UTC on an {meta['gpu_name']}, torch {meta['torch_version']}, "
                  f"sampler seed {meta['args'].get('sample_seed')}, {meta['args'].get('sample_n')} cases asked, "
                  f"{meta['counts']['ok']} ran.", "", family_table(rows), ""]
    if repeat is not None:
        n, median, p90, worst = run_to_run(*repeat)
        lines += ["## Run to run", "",
                  f"The same {n} sampled cases timed on two machines ({repeat[0].meta['date_utc'][:16]} and "
                  f"{repeat[1].meta['date_utc'][:16]} UTC): exp|log(t2/t1)| - 1 median {median:.1%}, p90 {p90:.1%}, "
                  f"max {worst:.0%}. No model can beat this floor.", ""]
    if held_by_set:
        lines += ["## The neighbour correction, held out by set", "",
                  "Each file of the bank predicted as `predict` does (every kernel corrected, floored at T_SOL) with a "
                  "bank of all the other files (so none of its cases is its own neighbour), beside the physical model "
                  "alone. Times are shifted to the spec's launch floor, as in the bank.", "", "| file | cases | physical median | physical p90 | corrected median | corrected p90 |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| `{name}` | {n} | {a:.1%} | {b:.1%} | {c:.1%} | {d:.1%} |" for name, n, a, b, c, d in held_by_set]
        lines.append("")
    if cv_table:
        lines += ["## Parsimony: cross-validation beside simpler baselines", "",
                  "5-fold cross-validation over the sampled fit set (each fold predicted by a fit that never saw it; the "
                  "catalogue's training cases in every fit), and the validation set, for the full predictor and two "
                  "baselines: the launch floor plus T_SOL, and the floor plus one global compute and one global memory "
                  "efficiency (`python -m solkit.calibration cv`).", "", cv_table, ""]
    return "\n".join(lines)
