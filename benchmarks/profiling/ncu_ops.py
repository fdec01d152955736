"""A handful of ops for Nsight Compute: each warmed up, then run ONCE inside named NVTX ranges.

``record.py`` runs this under ``ncu --profile-from-start off --nvtx ...``: the measured launches sit between
``cudaProfilerStart``/``cudaProfilerStop`` (``torch.cuda.profiler.start/stop``) and inside an outer NVTX
range ``sk_measure`` plus one inner range per op (``sk_measure`` alone is the fallback filter,
``--nvtx-include sk_measure/``). Warmups and tensor creation happen before the profiler starts, so only
the measured launches are captured.

Nothing is printed to stdout (ncu writes its CSV there); a JSON description of the ops, with the solkit
op and keyword arguments that model each one, goes to ``--meta-out``. ``--device cpu --small`` runs the
same code with tiny shapes and no NVTX/profiler calls, to test it without a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable

OUTER = "sk_measure"


def build_ops(torch: Any, device: str, small: bool) -> list[tuple[str, Callable[[], Any], dict[str, Any]]]:
    """(range name, callable, description) for each op; tensors are created here, before profiling."""
    F = torch.nn.functional
    bf16 = torch.bfloat16
    g = torch.Generator(device="cpu").manual_seed(0)

    def rnd(*shape: int) -> Any:
        return torch.randn(*shape, generator=g, dtype=torch.float32).to(device=device, dtype=bf16)

    n = 256 if small else 4096
    ln_t, ln_d = (64, 256) if small else (8192, 4096)
    sm_r, sm_c = (64, 256) if small else (4096, 4096)
    add_n = (1 << 16) if small else 64 * 1024 * 1024
    b, h, s, d = (1, 2, 64, 32) if small else (4, 32, 2048, 128)

    a, bm = rnd(n, n), rnd(n, n)
    x1 = rnd(1, n)
    ln_x, ln_w, ln_b = rnd(ln_t, ln_d), rnd(ln_d), rnd(ln_d)
    sm_x = rnd(sm_r, sm_c)
    add_a, add_b = rnd(add_n), rnd(add_n)
    q, k, v = rnd(b, h, s, d), rnd(b, h, s, d), rnd(b, h, s, d)

    sdpa_backend = "default (cpu)"
    sdpa_ctx: Callable[[], Any]
    if device == "cuda":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def sdpa_ctx() -> Any:
            return sdpa_kernel([SDPBackend.FLASH_ATTENTION])

        sdpa_backend = "FLASH_ATTENTION (forced with torch.nn.attention.sdpa_kernel)"
    else:
        from contextlib import nullcontext as sdpa_ctx  # type: ignore[assignment]

    def sdpa() -> Any:
        with sdpa_ctx():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    return [
        (f"mm_bf16_{n}x{n}x{n}", lambda: torch.mm(a, bm),
         {"aten": "aten::mm", "shapes": [[n, n], [n, n]], "dtype": "bf16",
          "solkit": {"op": "matmul", "params": {"m": n, "n": n, "k": n, "dtype": "bf16"}}}),
        (f"gemv_bf16_1x{n}x{n}", lambda: torch.mm(x1, bm),
         {"aten": "aten::mm", "shapes": [[1, n], [n, n]], "dtype": "bf16",
          "solkit": {"op": "matmul", "params": {"m": 1, "n": n, "k": n, "dtype": "bf16"}}}),
        (f"layernorm_bf16_{ln_t}x{ln_d}", lambda: F.layer_norm(ln_x, (ln_d,), ln_w, ln_b),
         {"aten": "aten::layer_norm", "shapes": [[ln_t, ln_d], [ln_d], [ln_d]], "dtype": "bf16",
          "solkit": {"op": "layernorm", "params": {"tokens": ln_t, "d_model": ln_d, "dtype": "bf16"}}}),
        (f"softmax_bf16_{sm_r}x{sm_c}", lambda: torch.softmax(sm_x, dim=-1),
         {"aten": "aten::softmax", "shapes": [[sm_r, sm_c]], "dtype": "bf16",
          "solkit": {"op": "softmax", "params": {"rows": sm_r, "cols": sm_c, "dtype": "bf16"}}}),
        (f"add_bf16_{add_n}", lambda: torch.add(add_a, add_b),
         {"aten": "aten::add", "shapes": [[add_n], [add_n]], "dtype": "bf16", "elements": add_n,
          "bytes_compulsory": 3 * 2 * add_n, "solkit": None}),
        (f"sdpa_flash_bf16_b{b}h{h}s{s}d{d}_causal", sdpa,
         {"aten": "aten::scaled_dot_product_attention", "shapes": [[b, h, s, d]] * 3, "dtype": "bf16",
          "backend": sdpa_backend,
          "solkit": {"op": "attention", "params": {"batch": b, "heads": h, "seq_q": s, "head_dim": d,
                                                   "causal": True, "impl": "flash", "dtype": "bf16"}}}),
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--small", action="store_true", help="tiny shapes (CPU test)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--meta-out", default=None, help="write the op descriptions (JSON) here")
    args = p.parse_args(argv)

    import torch

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("ncu_ops: CUDA is not available", file=sys.stderr)
        return 2
    ops = build_ops(torch, args.device, args.small)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    for _, fn, _ in ops:  # warmups: outside the profiler range and outside every NVTX range
        for _ in range(args.warmup):
            fn()
    sync()

    if cuda:
        torch.cuda.profiler.start()  # cudaProfilerStart: ncu --profile-from-start off begins here
        torch.cuda.nvtx.range_push(OUTER)
    walls = {}
    for name, fn, _ in ops:
        if cuda:
            torch.cuda.nvtx.range_push(name)
        t0 = time.perf_counter()
        fn()
        sync()
        walls[name] = time.perf_counter() - t0
        if cuda:
            torch.cuda.nvtx.range_pop()
    if cuda:
        torch.cuda.nvtx.range_pop()
        torch.cuda.profiler.stop()
    sync()

    meta = {
        "outer_range": OUTER,
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "warmup_runs_per_op": args.warmup,
        "ops": [{"range": name, "wall_s_under_ncu": walls[name], **desc} for name, _, desc in ops],
    }
    if args.meta_out:
        with open(args.meta_out, "w") as f:
            json.dump(meta, f, indent=1)
    print(f"ncu_ops: ran {len(ops)} ops once each after {args.warmup} warmups", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
