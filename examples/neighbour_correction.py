"""What the neighbour correction does: the physical model, the corrected prediction and the measurement, side by side.

    python examples/neighbour_correction.py

The H200's spec ships a bank of 12,285 measured cases; ``sk.predict`` scales each kernel's body by how its
nearest measured neighbours missed (``solkit.prediction.neighbours``), and ``predict(..., neighbours=False)``
gives the physical model alone. The cases below come from the seed-2032 test draw
(``data/h200_sample_test_seed2032.json``, measured after its model was frozen, spent since, in no fit and not in
the bank): the ones the correction moved most, and how far each prediction lands from the measurement.
"""

from __future__ import annotations

import math
from pathlib import Path

import solkit as sk
from solkit.calibration import load_measurements, workload_of

DATA = Path(__file__).resolve().parents[1] / "data" / "h200_sample_test_seed2032.json"


def main() -> None:
    gpu = sk.load_gpu("h200")
    rows = []
    for case in load_measurements(DATA).cases:
        w = workload_of(case)
        physical = float(sk.predict(w, gpu, warn=False, neighbours=False).seconds)
        corrected = float(sk.predict(w, gpu, warn=False).seconds)
        rows.append((case.id, case.seconds, physical, corrected))
    moved = sorted(rows, key=lambda r: -abs(math.log(r[3] / r[2])))[:8]
    print(f"{'case':<98} {'measured':>9} {'physical':>9} {'corrected':>9}")
    for cid, measured, physical, corrected in moved:
        print(f"{cid[:98]:<98} {measured * 1e6:8.1f}u {physical * 1e6:8.1f}u {corrected * 1e6:8.1f}u")

    def spread(i: int) -> tuple[float, float]:
        errors = sorted(abs(math.log(r[i] / r[1])) for r in rows)
        return math.expm1(errors[len(errors) // 2]), math.expm1(errors[int(0.9 * (len(errors) - 1))])

    print(f"\nover all {len(rows)} cases of the frozen draw (error = exp|log(pred/meas)| - 1):")
    print("  physical model alone: median {:.1%}, p90 {:.1%}".format(*spread(2)))
    print("  with the correction:  median {:.1%}, p90 {:.1%}".format(*spread(3)))
    note = sk.predict(sk.ops.matmul(25, 8, 6984, dtype="fp32", batch=2), gpu).notes[-1]
    print(f"\na batched fp32 GEMM of tiny m and n with a long k (cuBLAS walks k serially):\n  {note}")


if __name__ == "__main__":
    main()
