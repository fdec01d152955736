"""The current calibrated predictor against randomly sampled H200 cases, per op family (CPU; reads committed data).

    python benchmarks/evaluate_samples.py data/h200_sample_fit.json data/h200_sample_validation.json

Error = exp(median or p90 of |log(predicted / measured)|) - 1; SOL fraction = T_SOL / measured (must stay <= 1).
The cases come from benchmarks/measuring/sampling.py (seeded, log-uniform sizes, a share of unaligned dims).
"""

from __future__ import annotations

import collections
import sys

import numpy as np

from solkit.calibration.data import load_measurements
from solkit.calibration.metrics import evaluate
from solkit.hardware import load_spec_file


def _stats(rows: list) -> tuple[int, float, float, float]:
    e = np.array([abs(np.log(r.predicted / r.measured)) for r in rows])
    return len(rows), float(np.expm1(np.median(e))), float(np.expm1(np.quantile(e, 0.9))), max(r.sol_fraction for r in rows)


def main(paths: list[str]) -> int:
    gpu = load_spec_file("hardware_specs/h200-sxm.yaml")
    for path in paths:
        rows = evaluate(load_measurements(path), gpu)
        by: dict[str, list] = collections.defaultdict(list)
        for r in rows:
            by[r.group].append(r)
        print(f"\n{path}\n\n| group | cases | median error | p90 error | max SOL fraction |\n|---|---:|---:|---:|---:|")
        for name in sorted(by) + ["all"]:
            n, med, p90, top = _stats(rows if name == "all" else by[name])
            print(f"| {name} | {n} | {med:.1%} | {p90:.1%} | {top:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
