"""Rank a Triton GEMM's configs for a few shapes before timing any, and see which cannot launch and why.

    python examples/tune_matmul.py

The configs are the usual grid (tune.triton_matmul_space(): 336 configs); for each shape the tile model's three
fastest configs are printed with their waves and occupancy, and the quarter an autotuner would time
(tune.early_config_prune does the same inside triton.autotune).
"""

from __future__ import annotations

from solkit import tune

space = tune.triton_matmul_space()
r = tune.rank("triton_matmul", space, gpu="h200", m=4096, n=4096, k=4096)
print(f"{len(space)} configs in the usual grid, {r.launchable} can launch on the H200; for example:")
first = next(i for i, why in enumerate(r.reasons) if why)
print(f"  {r.configs[first]}: {r.reasons[first]}")
for m, n, k in [(4096, 4096, 4096), (8192, 1024, 4096), (512, 7168, 2048), (4000, 4000, 1000), (256, 256, 8192)]:
    r = tune.rank("triton_matmul", space, gpu="h200", m=m, n=n, k=k)
    tflops = 2 * m * n * k / r.best_seconds / 1e12
    print(f"\nm={m} n={n} k={k}: best {r.best_seconds * 1e6:.1f} us ({tflops:.0f} TFLOP/s); an autotuner would time "
          f"{len(r.prune(0.25))} of {r.launchable}")
    for place, i in enumerate(r.order[:3], 1):
        c = r.configs[i]
        print(f"  {place}. {r.seconds[i] * 1e6:8.1f} us  BLOCK {c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']}, "
              f"{c['num_warps']} warps, {c['num_stages']} stages: {r.parts['waves'][i]:.0f} waves of "
              f"{r.parts['programs'][i]:.0f} programs, {r.parts['occupancy'][i]:.0f} per SM")
