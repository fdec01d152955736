"""The current calibrated predictor against randomly sampled H200 cases, per op family (CPU; reads committed data).

    python benchmarks/evaluate_samples.py data/h200_sample_fit.json data/h200_sample_validation.json

Error = exp(median or p90 of |log(predicted / measured)|) - 1; SOL fraction = T_SOL / measured (must stay <= 1).
The cases come from benchmarks/measuring/sampling.py (seeded, log-uniform sizes, a share of unaligned dims).
"""

from __future__ import annotations

import sys

from solkit.calibration.data import load_measurements
from solkit.calibration.metrics import evaluate
from solkit.calibration.report import family_table
from solkit.hardware import load_spec_file


def main(paths: list[str]) -> int:
    gpu = load_spec_file("hardware_specs/h200-sxm.yaml")
    for path in paths:
        print(f"\n{path}\n\n{family_table(evaluate(load_measurements(path), gpu))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
