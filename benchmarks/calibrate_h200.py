"""Fit the predictor's named parameters to the committed H200 measurements; write them to the spec.

    python benchmarks/calibrate_h200.py            # fit, print, rewrite hardware_specs/h200-sxm.yaml's measured: section
    python benchmarks/calibrate_h200.py --dry-run  # fit and print only

Direct measurements (no fitting): the dense matmul rate per precision (best median of the square
sizes), the device-to-device copy bandwidth, the read bandwidth and the launch floor.
Fitted, on the training two thirds of the cases only (``solkit.validation.is_holdout`` keeps a
fixed third out): the kernel gap, a latency and a compute/memory efficiency per kernel kind, the
misaligned-GEMM and small-channel penalties, the overlap exponent. The fit is coordinate descent
on a grid, minimising mean + p90 of |log(predicted / measured)| (the p90 term keeps the tail in view).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from solkit.hardware import load_gpu  # noqa: E402
from solkit.precision import rate_class  # noqa: E402
from solkit.predict import Calibration, combine, kernel_terms  # noqa: E402
from solkit.validation import is_holdout, load_measurements, workload_of  # noqa: E402

DATA = ROOT / "data" / "h200_measurements.json"
SPEC = ROOT / "hardware_specs" / "h200-sxm.yaml"

EFF_GRID = np.geomspace(0.03, 1.1, 90)  # 1.1 x 4.27 TB/s = 4.7 < 4.8 datasheet; 1.1 x 691 < 989 TFLOP/s
LAT_GRID = np.linspace(0.0, 20e-6, 81)
PEN_GRID = np.geomspace(1.0, 40.0, 60)
MIN_CASES_PER_KEY = 5
OVERLAP_GRID = np.array([1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 12.0, np.inf])


def ceilings(mset) -> dict:
    """The directly measured ceilings, in the spec's units."""
    c = mset.ceilings
    rates: dict[str, float] = {}
    for run in c["matmul_runs"]:
        key = rate_class(run["dtype"])
        rates[key] = max(rates.get(key, 0.0), run["flops_per_s"])
    return {
        "matmul_tflops": {k: round(v / 1e12, 1) for k, v in rates.items()},
        "copy_bandwidth_tb_s": round(c["copy_bandwidth_bytes_per_s"] / 1e12, 3),
        "read_bandwidth_tb_s": round(c["read_bandwidth_bytes_per_s"] / 1e12, 3),
        "launch_floor_us": round(c["launch_floor_s"] * 1e6, 2),
    }


def _key(terms) -> str:
    """The operator entry a kernel's parameters come from (split-KV attention, depthwise convs have their own)."""
    return f"{terms.op}_{terms.variant}" if terms.variant and np.all(terms.variant_mask) else terms.op


def fit(mset, gpu, ceil: dict) -> tuple[Calibration, dict]:
    """Coordinate descent over the named parameters on the training cases."""
    base = Calibration(
        gpu=gpu.name, calibrated=True, source="fit", matmul_flops={k: v * 1e12 for k, v in ceil["matmul_tflops"].items()},
        bandwidth=ceil["copy_bandwidth_tb_s"] * 1e12, launch_s=ceil["launch_floor_us"] * 1e-6, gap_s=0.0,
        latency_s={}, compute_efficiency={}, memory_efficiency={}, misaligned_penalty=1.0, small_channel_penalty=1.0,
        overlap=float("inf"),
    )
    cases = [c for c in mset.cases if c.ok and c.seconds and c.primary]
    train = [c for c in cases if not is_holdout(c.id)]
    terms = {c.id: tuple(kernel_terms(k, gpu, base) for k in workload_of(c).kernels) for c in cases}
    kinds = sorted({t.kind for c in train for t in terms[c.id]})
    # row reductions and elementwise maps differ by implementation: an operator with at least
    # MIN_CASES_PER_KEY training cases gets its own entry (fewer would fit noise)
    op_count: dict[str, int] = {}
    for c in train:
        for op in {_key(t) for t in terms[c.id] if t.kind in ("reduction", "elementwise", "attention", "conv")}:
            op_count[op] = op_count.get(op, 0) + 1
    op_keys = sorted(op for op, n in op_count.items() if n >= MIN_CASES_PER_KEY)
    compute_kinds = sorted({t.kind for c in train for t in terms[c.id] if np.any(t.t_compute > t.t_memory)})
    measured = np.array([c.seconds for c in train])

    def loss(cal: Calibration) -> float:
        pred = np.array([float(combine(terms[c.id], cal)) for c in train])
        err = np.abs(np.log(pred / measured))
        return float(np.mean(err) + np.percentile(err, 90))

    params: list[tuple[str, str | None, np.ndarray]] = [("gap_s", None, LAT_GRID / 2)]
    params += [("memory_efficiency", k, EFF_GRID) for k in kinds + op_keys]
    params += [("compute_efficiency", k, EFF_GRID) for k in compute_kinds]
    params += [("latency_s", k, LAT_GRID) for k in kinds + op_keys]
    params += [("misaligned_penalty", None, PEN_GRID), ("small_channel_penalty", None, PEN_GRID)]
    params += [("overlap", None, OVERLAP_GRID)]

    def setp(cal: Calibration, name: str, key: str | None, value: float) -> Calibration:
        if key is None:
            return cal.with_params(**{name: float(value)})
        return cal.with_params(**{name: {**getattr(cal, name), key: float(value)}})

    cal = base
    best = loss(cal)
    for _ in range(6):
        for name, key, grid in params:
            for v in grid:
                trial = setp(cal, name, key, v)
                value = loss(trial)
                if value < best - 1e-12:
                    cal, best = trial, value
    # drop entries no training kernel resolves to (an operator's entry hides its kind's)
    used: dict[str, set[str]] = {"latency_s": set(), "compute_efficiency": set(), "memory_efficiency": set()}
    for c in train:
        for t in terms[c.id]:
            for table in used:
                mapping = getattr(cal, table)
                key = _key(t) if _key(t) in mapping else t.op if t.op in mapping else t.kind
                used[table].add(key)
    cal = cal.with_params(**{table: {k: v for k, v in getattr(cal, table).items() if k in keys} for table, keys in used.items()})
    return cal, {"train_cases": len(train), "holdout_cases": len(cases) - len(train), "train_mean_abs_log": best}


def measured_block(mset, ceil: dict, cal: Calibration, info: dict) -> str:
    """The spec's measured: section as YAML text."""
    meta = mset.meta
    stack = {
        "gpu": meta["gpu_name"],
        "driver": meta["nvidia_smi"].split(",")[0].strip(),
        "cuda": str(meta["cuda_version"]),
        "torch": meta["torch_version"],
        "triton": meta["triton_version"],
        "cudnn": str(meta["cudnn_version"]),
    }

    def mapping(d: dict, scale: float = 1.0, digits: int = 3) -> str:
        return "{" + ", ".join(f"{k}: {round(v * scale, digits):g}" for k, v in sorted(d.items())) + "}"

    return f"""measured:
  date: {meta['date_utc'][:10]}
  method: >-
    benchmarks/measure_h200.py: triton.testing.do_bench (median, L2 flushed before every call) on
    random data; matmul ceilings are the best median of 8192^3 and 16384^3 (torch.matmul, _scaled_mm
    for fp8, _int_mm for int8); copy = dst.copy_(src) of 4.3 GB, bytes read + written; read = sum of
    4.3 GB fp32; launch floor = do_bench of a one-element add. Raw data: data/h200_measurements.json.
  stack: {{{', '.join(f'{k}: "{v}"' for k, v in stack.items())}}}
  matmul_tflops: {mapping(ceil['matmul_tflops'], digits=1)}
  copy_bandwidth_tb_s: {ceil['copy_bandwidth_tb_s']}
  read_bandwidth_tb_s: {ceil['read_bandwidth_tb_s']}
  launch_floor_us: {ceil['launch_floor_us']}
  # fitted by benchmarks/calibrate_h200.py on the training two thirds of the cases
  kernel_gap_us: {cal.gap_s * 1e6:.2f}
  kernel_latency_us: {mapping(cal.latency_s, 1e6, 2)}
  compute_efficiency: {mapping(cal.compute_efficiency)}
  memory_efficiency: {mapping(cal.memory_efficiency)}
  misaligned_gemm_penalty: {cal.misaligned_penalty:.3f}
  small_channel_penalty: {cal.small_channel_penalty:.3f}
  overlap_exponent: {cal.overlap:g}
  fit: "{info['train_cases']} training cases, {info['holdout_cases']} held out; train objective mean + p90 of |log(pred/meas)| = {info['train_mean_abs_log']:.4f}"
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the fitted section, do not write the spec")
    args = parser.parse_args()
    mset = load_measurements(DATA)
    gpu = load_gpu(SPEC)
    ceil = ceilings(mset)
    cal, info = fit(mset, gpu, ceil)
    block = measured_block(mset, ceil, cal, info)
    print(block)
    if not args.dry_run:
        text = SPEC.read_text()
        text = re.split(r"(?m)^measured:", text)[0].rstrip() + "\n\n" + block
        SPEC.write_text(text)
        load_gpu(SPEC)  # validates
        print(f"wrote {SPEC.relative_to(ROOT)}")
    return 0 if math.isfinite(info["train_mean_abs_log"]) else 1


if __name__ == "__main__":
    sys.exit(main())
