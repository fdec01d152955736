"""Quick start: the bound of a GEMM and of a decode step on an H200, and the MFU of a measured run."""

import solkit as sk
from solkit import ops

gpu = sk.load_gpu("h200")
print(gpu)

# a 8192^3 bf16 GEMM: 2*8192^3 = 1.0995e12 FLOP at 989.4 TFLOP/s -> 1.111 ms, compute-bound
r = sk.roofline(ops.matmul(8192, 8192, 8192), gpu)
print(f"GEMM 8192^3: T_SOL {r.t_sol * 1e3:.3f} ms, {r.bound}-bound, intensity {r.intensity:.0f} FLOP/B"
      f" (ridge {r.ridge_point:.0f})")

# one decode step's attention over a 32k KV cache (GQA 32/8 heads): memory-bound
r = sk.roofline(ops.attention(8, 32, 1, seq_kv=32768, head_dim=128, kv_heads=8), gpu)
print(f"decode attention: T_SOL {r.t_sol * 1e6:.1f} us, {r.bound}-bound")

# a measured GEMM of 1.40 ms: how close to the speed of light, and its MFU
w = ops.matmul(8192, 8192, 8192)
print(f"measured 1.40 ms: SOL fraction {sk.sol_fraction(w, gpu, 1.40e-3):.2f}, MFU {sk.mfu(w, 1.40e-3, gpu):.1%}")
