"""A sweep as a DataFrame and a chart: bf16 vs fp8 GEMMs on the H200 from GEMV (m=1) to 16k tokens.

Run: python examples/sweep.py [OUT_DIR]   (writes gemm_sweep.csv and gemm_sweep.png; needs solkit[pandas,plot])
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import solkit as sk  # noqa: E402
from solkit import ops  # noqa: E402

out = Path(sys.argv[1] if len(sys.argv) > 1 else "out")
out.mkdir(parents=True, exist_ok=True)

# Llama-3-8B MLP up-projection: [m tokens, 4096] @ [4096, 14336], m from 1 to 16384
m = np.unique(np.geomspace(1, 16384, 60).astype(int))
frame = sk.sweep(ops.matmul, "h200", m=m, n=14336, k=4096, dtype=["bf16", "fp8"])
frame["tflops_at_sol"] = frame.executed_flops / frame.t_sol_s / 1e12
frame["tflops_predicted"] = frame.executed_flops / frame.predicted_s / 1e12
frame.to_csv(out / "gemm_sweep.csv", index=False)
print(frame[["m", "dtype", "bound", "t_sol_s", "predicted_s", "tflops_predicted"]].iloc[::12].to_string(index=False))

# where each precision turns compute-bound
for dtype, part in frame.groupby("dtype"):
    first = part[part.bound == "compute"].m.min()
    print(f"{dtype}: compute-bound from m = {first} tokens")

fig, ax = plt.subplots(figsize=(8, 5))
for dtype, part in frame.groupby("dtype"):
    ax.plot(part.m, part.tflops_at_sol, label=f"{dtype} speed of light")
    ax.plot(part.m, part.tflops_predicted, "--", label=f"{dtype} predicted (calibrated)")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("tokens m in [m, 4096] @ [4096, 14336]")
ax.set_ylabel("throughput (TFLOP/s)")
ax.set_title("Llama-3-8B MLP up-projection on H200: bound vs calibrated prediction")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(out / "gemm_sweep.png", dpi=150)
print(f"wrote {out / 'gemm_sweep.csv'} and {out / 'gemm_sweep.png'}")
