#!/usr/bin/env python3
"""Host time per call of single ATen ops at a Mixtral-shaped MoE layer's routing shapes, beside the launch probe.

    python benchmarks/programs/op_host.py --out "$OUT/op_host.json"      # on a GPU (about 30 s)
    python benchmarks/programs/op_host.py --set gemm --out "$OUT/op_host_gemm.json"  # GEMM calls as models issue them

Each op runs ``--calls`` times back to back after a warm-up (``time.perf_counter`` around the loop, no sync inside,
``torch.cuda.synchronize()`` after it), the median of ``--repeats`` loops per call; the launch probe of steps.py
(2,000 ``torch.add(a, b, out=c)`` on 1,024 floats, median of 5) before and after the ops. The shapes: 1,640 tokens
(batch 4 x 410) of hidden size 1,024 routed top-2 over 8 experts (3,280 rows), as the seed-2046 MoE prefill ran.
Never imports solkit; records what a capture cannot see of a call's host work (the CUDA implementation's nested
calls and runtime queries).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steps import launch_probe  # noqa: E402 - the steps' own probe


def per_call(torch: Any, fn: Callable[[], Any], calls: int, repeats: int = 5, warmup: int = 20) -> float:
    """Median over ``repeats`` loops of the host seconds per call of ``calls`` calls of ``fn`` (``warmup`` first)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls)
        torch.cuda.synchronize()
    return statistics.median(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--set", choices=("routing", "gemm"), default="routing",
                   help="routing: a MoE layer's routing ops (the spec's op_host_weight); gemm: GEMM calls as models "
                        "issue them (a biased Conv1D addmm, linear with and without a bias, 2-D and 3-D, the backward's "
                        "mm), at a decode's and a prefill's token counts")
    args = p.parse_args()
    import torch

    dev = "cuda"
    if args.set == "gemm":
        return gemm_set(torch, args)
    tokens, hidden, experts, k = 1640, 1024, 8, 2
    rows = tokens * k
    x = torch.randn(tokens, hidden, device=dev, dtype=torch.bfloat16)
    logits = torch.randn(tokens, experts, device=dev)
    ids = torch.randint(0, experts, (rows,), device=dev)
    ids_long = torch.randint(0, experts, (6792,), device=dev)
    ids_int = ids.int()
    counts = torch.histc(ids_int, bins=experts, min=0, max=experts - 1)
    perm = torch.argsort(ids)
    w_up = torch.randn(experts, hidden, 7168, device=dev, dtype=torch.bfloat16)
    offs = torch.cumsum(counts, 0, dtype=torch.int32)
    xs = torch.randn(rows, hidden, device=dev, dtype=torch.bfloat16)
    mask = (ids >= experts).unsqueeze(-1)
    inv = torch.empty_like(perm)
    ar = torch.arange(rows, device=dev)
    ops: dict[str, Callable[[], Any]] = {
        "add [1640, 1024] bf16": lambda: torch.add(x, x),
        "mm [1640, 1024] x [1024, 8]": lambda: torch.mm(x, w_up[0, :, :8]),
        "softmax [1640, 8]": lambda: torch.softmax(logits, dim=-1),
        "topk [1640, 8] k=2": lambda: torch.topk(logits, k, dim=-1),
        "sort [3280] int64": lambda: torch.sort(ids),
        "sort [6792] int64 (cub)": lambda: torch.sort(ids_long),
        "floor_divide [3280]": lambda: ids // k,
        "index [1640, 1024] by [3280]": lambda: x[perm // k],
        "index [3280] by [3280]": lambda: ids[perm],
        "to int32 [3280]": lambda: ids.int(),
        "histc [3280] int32": lambda: torch.histc(ids_int, bins=experts, min=0, max=experts - 1),
        "cumsum [8] int32": lambda: torch.cumsum(counts, 0, dtype=torch.int32),
        "masked_fill [3280, 1024]": lambda: xs.masked_fill(mask, 0.0),
        "_grouped_mm [3280, 1024] x [8, 1024, 7168]": lambda: torch._grouped_mm(xs, w_up, offs=offs),
        "index_put_ [3280]": lambda: inv.__setitem__(perm, ar),
        "arange [3280]": lambda: torch.arange(rows, device=dev),
    }
    try:  # the whole MoE block as transformers runs it (its Python between the ops included)
        import transformers
        from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

        cfg = transformers.MixtralConfig(hidden_size=hidden, intermediate_size=3584, num_local_experts=experts,
                                         num_experts_per_tok=k, num_hidden_layers=4, num_attention_heads=16,
                                         num_key_value_heads=4)
        cfg._experts_implementation = "grouped_mm"
        block = MixtralSparseMoeBlock(cfg).to(dev, torch.bfloat16).eval()
        h = x.view(4, 410, hidden)
        block(h)

        def moe() -> Any:
            with torch.inference_mode():
                return block(h)
        ops["MixtralSparseMoeBlock [4, 410, 1024] bf16"] = moe
        moe_error = None
    except Exception as err:  # noqa: BLE001 - record why, keep the ops
        moe_error = f"{type(err).__name__}: {err}"[:300]
    before = launch_probe(torch)
    result = {name: round(per_call(torch, fn, args.calls, args.repeats) * 1e6, 3) for name, fn in ops.items()}
    after = launch_probe(torch)
    doc = {"schema": 1, "command": "benchmarks/programs/op_host.py", "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(), "probe_us_before": round(before * 1e6, 3),
           "probe_us_after": round(after * 1e6, 3), "calls": args.calls, "repeats": args.repeats,
           "host_us_per_call": result, "moe_block_error": moe_error}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps(doc))
    return 0


def gemm_ops(torch: Any, dev: str) -> dict[str, Callable[[], Any]]:
    """GEMM calls as Hugging Face models issue them, beside the routing set's unit (the plain add) and its mm: GPT-2
    medium's Conv1D (``addmm`` of a bias, hidden 1,024 -> 3,072), Qwen2's biased and Llama's unbiased ``linear``, on 2-D
    and 3-D inputs, and a linear's two backward GEMMs (``mm`` of the gradient by the weight, of its transpose by the
    input, as the autograd engine issues them), at 18 tokens (a decode at batch 18) and 4,096 (a prefill)."""
    F = torch.nn.functional
    bf = torch.bfloat16
    x1640 = torch.randn(1640, 1024, device=dev, dtype=bf)
    router = torch.randn(1024, 8, device=dev, dtype=bf)
    w = torch.randn(1024, 3072, device=dev, dtype=bf)  # Conv1D's weight: in x out
    wt = w.t().contiguous()  # linear's weight: out x in
    bias = torch.randn(3072, device=dev, dtype=bf)
    ops: dict[str, Callable[[], Any]] = {"add [1640, 1024] bf16": lambda: torch.add(x1640, x1640),
                                         "mm [1640, 1024] x [1024, 8]": lambda: torch.mm(x1640, router)}
    for t in (18, 4096):
        x = torch.randn(t, 1024, device=dev, dtype=bf)
        x3 = x.view(t, 1, 1024)
        g = torch.randn(t, 3072, device=dev, dtype=bf)
        ops.update({
            f"addmm bias [{t}, 1024] x [1024, 3072] (Conv1D)": lambda x=x: torch.addmm(bias, x, w),
            f"linear bias [{t}, 1024] -> 3072": lambda x=x: F.linear(x, wt, bias),
            f"linear [{t}, 1024] -> 3072": lambda x=x: F.linear(x, wt),
            f"linear bias [{t}, 1, 1024] -> 3072 (3-D)": lambda x3=x3: F.linear(x3, wt, bias),
            f"linear [{t}, 1, 1024] -> 3072 (3-D)": lambda x3=x3: F.linear(x3, wt),
            f"mm [{t}, 3072] x [3072, 1024] (dgrad)": lambda g=g: torch.mm(g, wt),
            f"mm [3072, {t}] x [{t}, 1024] (wgrad)": lambda g=g, x=x: torch.mm(g.t(), x),
        })
    return ops


def gemm_set(torch: Any, args: argparse.Namespace) -> int:
    """``--set gemm``: the host time per call of ``gemm_ops``, beside the launch probe, written to ``--out``."""
    ops = gemm_ops(torch, "cuda")
    before = launch_probe(torch)
    with torch.inference_mode():
        result = {name: round(per_call(torch, fn, args.calls, args.repeats) * 1e6, 3) for name, fn in ops.items()}
    after = launch_probe(torch)
    doc = {"schema": 1, "command": "benchmarks/programs/op_host.py --set gemm", "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(), "probe_us_before": round(before * 1e6, 3),
           "probe_us_after": round(after * 1e6, 3), "calls": args.calls, "repeats": args.repeats,
           "host_us_per_call": result}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
