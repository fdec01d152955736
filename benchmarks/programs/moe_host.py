#!/usr/bin/env python3
"""Where a Mixtral-shaped MoE's host time goes: the whole prefill, the same model with its MoE blocks skipped, and the
MoE blocks alone, as transformers runs them (host time of the call, no sync inside).

    python benchmarks/programs/moe_host.py --out "$OUT/moe_host.json"      # on a GPU (about 30 s)

The model is the seed-2046 draw's MoE (hidden 1,024, 4 layers, 8 experts, top-2; bf16 weights, random init) at
batch 4 x 410 under inference_mode with a fresh DynamicCache and logits_to_keep=1 (as steps.py's prefill). Each
figure is the median of 5 loops of ``--calls`` calls (time.perf_counter around the loop, torch.cuda.synchronize()
after it), beside the launch probe of steps.py. Never imports solkit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_host import per_call  # noqa: E402 - one timing loop for the host records
from steps import launch_probe  # noqa: E402 - the steps' own probe


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--calls", type=int, default=20)
    args = p.parse_args()
    import torch
    import transformers
    from transformers import DynamicCache, MixtralConfig, MixtralForCausalLM

    cfg = MixtralConfig(hidden_size=1024, intermediate_size=3584, num_hidden_layers=4, num_attention_heads=16,
                        num_key_value_heads=4, num_local_experts=8, num_experts_per_tok=2, vocab_size=32000,
                        max_position_embeddings=32768, rope_theta=1e6)
    torch.manual_seed(0)
    # as steps.py builds it: experts as grouped GEMMs (no host sync in the routing), then the bf16 cast of a prefill
    model = MixtralForCausalLM._from_config(cfg, dtype=torch.float32, experts_implementation="grouped_mm")
    model = model.to("cuda", torch.bfloat16).eval()
    ids = torch.randint(0, 32000, (4, 410), device="cuda")

    def prefill() -> Any:
        with torch.inference_mode():
            return model(ids, past_key_values=DynamicCache(config=model.config), use_cache=True, logits_to_keep=1)

    h = torch.randn(4, 410, 1024, device="cuda", dtype=torch.bfloat16)
    blocks = [layer.mlp for layer in model.model.layers]

    def moe_alone() -> Any:
        with torch.inference_mode():
            for blk in blocks:
                blk(h)

    out: dict[str, Any] = {"probe_us_before": round(launch_probe(torch) * 1e6, 3)}
    out["prefill_ms"] = round(per_call(torch, prefill, args.calls, warmup=5) * 1e3, 4)
    out["moe_blocks_alone_ms"] = round(per_call(torch, moe_alone, args.calls, warmup=5) * 1e3, 4)
    saved = [blk.forward for blk in blocks]
    for blk in blocks:  # skip the MoE: the block returns its input (what the decoder layer adds to the residual)
        blk.forward = lambda hidden_states, *a, **k: hidden_states
    out["prefill_without_moe_ms"] = round(per_call(torch, prefill, args.calls, warmup=5) * 1e3, 4)
    for blk, f in zip(blocks, saved):
        blk.forward = f
    out["prefill_again_ms"] = round(per_call(torch, prefill, args.calls, warmup=5) * 1e3, 4)
    out["probe_us_after"] = round(launch_probe(torch) * 1e6, 3)
    doc = {"schema": 1, "command": "benchmarks/programs/moe_host.py", "torch": torch.__version__,
           "transformers": transformers.__version__, "gpu": torch.cuda.get_device_name(), "calls": args.calls, **out}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
