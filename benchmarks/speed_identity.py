"""Bit-identity guard for speed work: ``predict(...).seconds`` of seeded sweeps and scalars, saved or compared.

    PYTHONPATH=src python benchmarks/speed_identity.py save  [--to /tmp/solkit_identity.npz]   # before a change
    PYTHONPATH=src python benchmarks/speed_identity.py check [--to /tmp/solkit_identity.npz]   # after it

``check`` compares each figure with ``np.array_equal`` (bit for bit) and prints which differ, in how many elements
and by how much at most (relative); it exits 1 if any differs. The sweeps: random 3-D matmuls (bf16, fp32, a
batched fp16), the 1-D line of ``speed.py`` and a 2-D grid, random convs (NHWC, NCHW, depthwise), random attention
(sdpa, causal flash, decode with GQA), row kernels; each with and without the neighbour correction, and its first
``SCALARS_PER_SWEEP`` elements predicted one by one (the one-shape path). A few named scalars besides.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

import numpy as np

import solkit as sk
from solkit import ops

#: elements of each sweep also predicted one by one (the scalar path)
SCALARS_PER_SWEEP = 40
Build = Callable[..., Any]


def sweeps(n: int) -> dict[str, tuple[Build, list[Any]]]:
    """Named (builder, its arguments) of seeded sweeps: ``builder(*arguments)`` is the workload."""
    def ints(seed: int, *bounds: tuple[int, int]) -> list[Any]:
        rng = np.random.default_rng(seed)
        return [rng.integers(low, high + 1, n).astype(np.float64) for low, high in bounds]

    big = (1, 65535)
    line = np.arange(1, n + 1, dtype=np.float64)
    return {
        "matmul_random": (lambda m, nn, k: ops.matmul(m, nn, k), ints(31, big, big, big)),
        "matmul_random_fp32": (lambda m, nn, k: ops.matmul(m, nn, k, dtype="fp32"), ints(31, big, big, big)),
        "matmul_batched_fp16": (lambda m, nn, k, b: ops.matmul(m, nn, k, dtype="fp16", batch=b),
                                ints(32, (1, 8192), (1, 8192), (1, 8192), (1, 64))),
        "matmul_line": (lambda m: ops.matmul(m, 4096, 4096), [line]),
        "matmul_grid": (lambda m, nn: ops.matmul(m, nn, 4096), [line[:256, None] * 17, line[:200] * 33]),
        "conv_nhwc": (lambda b, c, s, o: ops.conv2d(b, c, s, s, o, kernel=3, padding=1, layout="nhwc"),
                      ints(33, (1, 64), (1, 1024), (7, 224), (1, 1024))),
        "conv_nchw": (lambda b, c, s, o: ops.conv2d(b, c, s, s, o, kernel=3, padding=1, layout="nchw"),
                      ints(33, (1, 64), (1, 1024), (7, 224), (1, 1024))),
        "conv_depthwise": (lambda b, c, s: ops.conv2d(b, c, s, s, c, kernel=3, padding=1, groups=c, layout="nhwc"),
                           ints(34, (1, 64), (1, 512), (7, 112))),
        "attention_sdpa": (lambda b, h, q, k: ops.attention(b, h, q, k, 128),
                           ints(35, (1, 16), (1, 64), (1, 16384), (1, 16384))),
        "attention_flash_causal": (lambda b, h, q, k: ops.attention(b, h, q, k, 64, causal=True, impl="flash"),
                                   ints(35, (1, 16), (1, 64), (1, 16384), (1, 16384))),
        "attention_decode": (lambda b, h, k: ops.attention(b, h * 8, 1, k, 128, kv_heads=h),
                             ints(36, (1, 64), (1, 8), (1, 65536))),
        "layernorm": (lambda t, d: ops.layernorm(t, d), ints(37, (1, 65536), (1, 16384))),
        "softmax": (lambda t, d: ops.softmax(t, d), ints(37, (1, 65536), (1, 16384))),
    }


#: scalar shapes through the one-shape path
SCALARS: dict[str, Callable[[], Any]] = {
    "matmul_4096": lambda: ops.matmul(4096, 4096, 4096),
    "matmul_skinny": lambda: ops.matmul(7, 4096, 11008),
    "matmul_odd": lambda: ops.matmul(1000, 1001, 999),
    "matmul_fp32_batched": lambda: ops.matmul(128, 64, 4096, dtype="fp32", batch=12),
    "conv_resnet": lambda: ops.conv2d(32, 64, 56, 56, 64, kernel=3, padding=1),
    "attention_llama": lambda: ops.attention(1, 32, 2048, 2048, 128, kv_heads=8, causal=True),
    "attention_decode": lambda: ops.attention(8, 32, 1, 8192, 128, kv_heads=8),
    "rmsnorm": lambda: ops.rmsnorm(8192, 4096),
}


def _element(args: list[Any], i: int) -> list[float]:
    """Element ``i`` (flat, of the broadcast shape) of a sweep's arguments, as Python floats."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return [float(np.broadcast_to(a, shape).reshape(-1)[i]) for a in args]


def figures(n: int) -> dict[str, np.ndarray]:
    """Every figure of the guard, by name."""
    gpu = sk.load_gpu("h200")
    out: dict[str, np.ndarray] = {}
    for name, (build, args) in sweeps(n).items():
        for nbr in (True, False):
            out[f"{name}|{nbr}"] = np.asarray(sk.predict(build(*args), gpu, warn=False, neighbours=nbr).seconds,
                                              dtype=np.float64)
        out[f"{name}|scalars"] = np.array([sk.predict(build(*_element(args, i)), gpu, warn=False).seconds
                                           for i in range(SCALARS_PER_SWEEP)])
    for name, one in SCALARS.items():
        for nbr in (True, False):
            out[f"scalar:{name}|{nbr}"] = np.array([sk.predict(one(), gpu, warn=False, neighbours=nbr).seconds])
    return out


def _stored(name: str) -> str:
    return name.replace("|", "__").replace(":", "_")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("save", "check"))
    parser.add_argument("--to", default="/tmp/solkit_identity.npz", help="where the figures are saved")
    parser.add_argument("--n", type=int, default=200_000, help="elements per sweep")
    args = parser.parse_args()
    got = figures(args.n)
    total = sum(v.size for v in got.values())
    if args.action == "save":
        np.savez(args.to, **{_stored(k): v for k, v in got.items()})
        print(f"saved {len(got)} figures ({total:,} numbers) to {args.to}")
        return 0
    saved = np.load(args.to)
    bad = 0
    for name, value in got.items():
        want = saved[_stored(name)]
        if value.shape == want.shape and np.array_equal(value, want):
            continue
        bad += 1
        if value.shape != want.shape:
            print(f"DIFFERS {name}: shape {value.shape}, saved {want.shape}")
            continue
        rel = float(np.max(np.abs(value - want) / np.abs(want)))
        print(f"DIFFERS {name}: {int(np.count_nonzero(value != want))} of {want.size} elements, at most {rel:.3g} relative")
    print(f"{len(got) - bad} of {len(got)} figures bit-identical ({total:,} numbers)")
    for name in (n for n in got if n.endswith("|scalars")):  # for information: the sweep against its scalars
        one, swept = got[name], got[name[:-len("scalars")] + "True"].reshape(-1)[:len(got[name])]
        if not np.array_equal(one, swept):
            print(f"  (sweep {name[:-8]}: its first {len(one)} elements at most "
                  f"{float(np.max(np.abs(one - swept) / swept)):.2g} relative from the scalar path's)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
