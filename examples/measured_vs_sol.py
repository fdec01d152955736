"""How far is a measured kernel from the speed of light, and what happens when the timing is wrong.

Uses real H200 timings from data/h200_measurements.json (triton.testing.do_bench, L2 flushed):
each case's SOL fraction (T_SOL / measured) and MFU. Then the classic timing mistake, a CPU
timer stopped before the GPU finished, which gives a time below T_SOL: solkit returns the
number with an ImpossibleMeasurementWarning, and with strict=True refuses it (what a perf
pipeline should do).

Run: python examples/measured_vs_sol.py
"""

import json
import warnings
from pathlib import Path

import solkit as sk
from solkit import ops
from solkit.errors import ImpossibleMeasurementError, ImpossibleMeasurementWarning

DATA = Path(__file__).resolve().parents[1] / "data" / "h200_measurements.json"
gpu = sk.load_gpu("h200")
measured = {case["id"]: case["seconds"] for case in json.loads(DATA.read_text())["cases"]}

print("bf16 GEMMs on the H200, measured (do_bench median) against T_SOL:")
for m, n, k in ((1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (1, 4096, 4096)):
    w = ops.matmul(m, n, k)
    seconds = measured[f"matmul/matmul/m={m},n={n},k={k},dtype=bf16"]
    r = sk.roofline(w, gpu)
    print(f"  {m:>5} x {n} x {k}: measured {seconds * 1e6:8.1f} us, T_SOL {r.t_sol * 1e6:8.1f} us ({r.bound}-bound), "
          f"SOL fraction {sk.sol_fraction(w, gpu, seconds):.2f}, MFU {sk.mfu(w, seconds, gpu):.1%}")

# The mistake: time.perf_counter() around torch.matmul without torch.cuda.synchronize() measures the
# launch (tens of microseconds), not the kernel. 8192^3 bf16 cannot finish in under 1.111 ms on an H200.
w = ops.matmul(8192, 8192, 8192)
launch_only = 25e-6
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fraction = sk.sol_fraction(w, gpu, launch_only)
flag = next(x for x in caught if issubclass(x.category, ImpossibleMeasurementWarning))
print(f"\na 25 us 'measurement' of the 8192^3 GEMM gives SOL fraction {fraction:.1f}, flagged:\n  {flag.message}")
try:
    sk.mfu(w, launch_only, gpu, strict=True)
except ImpossibleMeasurementError as exc:
    print(f"with strict=True the number is refused: {type(exc).__name__}")
