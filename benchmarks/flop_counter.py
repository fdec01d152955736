#!/usr/bin/env python3
"""FLOP counts of PyTorch's own counter (``torch.utils.flop_counter.FlopCounterMode``): solkit's outside oracle.

CI has no torch, so this script records what FlopCounterMode counts for every operator shape and
whole model the tests use, and ``tests/test_flop_counter.py`` checks solkit's counts against the
committed file (``data/flop_counter.json``). It needs torch (and torchvision and transformers for
the models); it never imports solkit. Everything but fused attention runs on meta tensors (shapes
only), so any machine with those packages gives the same numbers; the committed file was made on
the H200 machine with its PyTorch.

    python3 benchmarks/flop_counter.py --out "$OUT/flop_counter.json"

Each operator case names the solkit op and keyword arguments that model it and records the
forward count and the count of forward plus backward (every input requiring a gradient), so the
backward is their difference. Fused attention runs on the GPU (random data), where SDPA picks a
fused kernel (flash, efficient or cuDNN); on meta tensors it would decompose into bmm. FlopCounterMode counts matrix products, convolutions and
scaled-dot-product attention (2 FLOPs per multiply-add, attention over every (query, key) pair
whatever the mask: "NB: We aren't accounting for causal attention here"); it counts no
elementwise work. Each model case records the forward and the training step of a whole network.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import traceback
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

META = torch.device("meta")
BF16 = torch.bfloat16


def count(fn: Callable[[], Any]) -> tuple[int, dict[str, int]]:
    """(total FLOPs, per ATen op) that FlopCounterMode counts while ``fn`` runs."""
    counter = FlopCounterMode(display=False)
    with counter:
        fn()
    per_op = {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return int(counter.get_total_flops()), per_op


def tensor(*shape: int, grad: bool = True, dtype: torch.dtype = BF16, device: torch.device = META) -> torch.Tensor:
    """A tensor that requires a gradient: on meta (shapes only), or random on a GPU."""
    if device == META:
        return torch.empty(*shape, device=META, dtype=dtype, requires_grad=grad)
    return torch.randn(*shape, device=device, dtype=dtype).requires_grad_(grad)


#: fused attention runs where its kernels exist: on meta or a CPU, SDPA decomposes into bmm (the math backend)
FUSED = torch.device("cuda") if torch.cuda.is_available() else META


def forward_and_backward(build: Callable[[], tuple[list[torch.Tensor], Callable[..., torch.Tensor]]]) -> dict[str, Any]:
    """Counts of the forward alone and of the forward plus the backward of sum(output)."""
    inputs, fn = build()
    forward, per_op = count(lambda: fn(*inputs))
    inputs, fn = build()

    def step() -> None:
        fn(*inputs).float().sum().backward()

    total, step_ops = count(step)
    return {"forward": forward, "forward_ops": per_op, "step": total, "step_ops": step_ops}


# ---- operator cases: (id, solkit op, solkit params, builder) -------------------------------------------


def matmul_case(m: int, n: int, k: int, batch: int = 1, bias: bool = False) -> tuple[str, str, dict[str, Any], Callable]:
    params: dict[str, Any] = {"m": m, "n": n, "k": k}
    if batch > 1:
        params["batch"] = batch
    if bias:
        params["bias"] = True

    def build() -> tuple[list[torch.Tensor], Callable]:
        if bias:  # F.linear(x [m,k], w [n,k], b [n]): addmm
            return [tensor(m, k), tensor(n, k), tensor(n)], F.linear
        shape_a = (batch, m, k) if batch > 1 else (m, k)
        shape_b = (batch, k, n) if batch > 1 else (k, n)
        return [tensor(*shape_a), tensor(*shape_b)], torch.matmul

    return f"matmul/m={m},n={n},k={k},batch={batch},bias={bias}", "matmul", params, build


def qkv_case(tokens: int, d_model: int, heads: int, kv_heads: int, head_dim: int, fused: bool) -> tuple:
    q, kv = heads * head_dim, kv_heads * head_dim
    params = {"tokens": tokens, "d_model": d_model, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
              "fused": fused}

    def build() -> tuple[list[torch.Tensor], Callable]:
        if fused:
            return [tensor(tokens, d_model), tensor(q + 2 * kv, d_model)], lambda x, w: F.linear(x, w)
        return ([tensor(tokens, d_model), tensor(q, d_model), tensor(kv, d_model), tensor(kv, d_model)],
                lambda x, wq, wk, wv: torch.cat([F.linear(x, wq), F.linear(x, wk), F.linear(x, wv)], -1))

    return f"qkv_projection/T={tokens},d={d_model},h={heads},kv={kv_heads},hd={head_dim},fused={fused}", \
        "qkv_projection", params, build


def conv_case(n: int, c: int, h: int, k: int, r: int, stride: int, pad: int, dil: int, groups: int) -> tuple:
    params = {"batch": n, "in_channels": c, "height": h, "width": h, "out_channels": k, "kernel": r, "stride": stride,
              "padding": pad, "groups": groups, "dilation": dil}

    def build() -> tuple[list[torch.Tensor], Callable]:
        return ([tensor(n, c, h, h), tensor(k, c // groups, r, r)],
                lambda x, w: F.conv2d(x, w, stride=stride, padding=pad, dilation=dil, groups=groups))

    return f"conv2d/n={n},c={c},h={h},k={k},r={r},s={stride},p={pad},d={dil},g={groups}", "conv2d", params, build


def attention_case(b: int, h: int, sq: int, skv: int, d: int, kv: int, causal: bool, impl: str) -> tuple:
    params = {"batch": b, "heads": h, "seq_q": sq, "seq_kv": skv, "head_dim": d, "kv_heads": kv, "causal": causal,
              "impl": impl}

    def build() -> tuple[list[torch.Tensor], Callable]:
        where = META if impl == "naive" else FUSED
        tensors = [tensor(b, h, sq, d, device=where), tensor(b, kv, skv, d, device=where),
                   tensor(b, kv, skv, d, device=where)]
        if impl == "naive":  # S = Q K^T, P = softmax(S), O = P V (K, V repeated over the query heads they serve)
            def naive(q: torch.Tensor, k_: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
                k_, v = k_.repeat_interleave(h // kv, 1), v.repeat_interleave(h // kv, 1)
                return torch.matmul(torch.softmax(torch.matmul(q, k_.transpose(-1, -2)), -1), v)
            return tensors, naive
        return tensors, lambda q, k_, v: F.scaled_dot_product_attention(q, k_, v, is_causal=causal,
                                                                        enable_gqa=kv < h)

    return f"attention/b={b},h={h},sq={sq},skv={skv},d={d},kv={kv},causal={causal},impl={impl}", "attention", \
        params, build


OP_CASES = [
    matmul_case(4096, 1024, 512),
    matmul_case(1, 8192, 8192),
    matmul_case(4095, 50257, 1000),
    matmul_case(8192, 8192, 8192),
    matmul_case(512, 512, 64, batch=16),
    matmul_case(2048, 4096, 1024, bias=True),
    qkv_case(4096, 768, 12, 12, 64, True),
    qkv_case(4096, 768, 12, 12, 64, False),
    qkv_case(8192, 4096, 32, 8, 128, True),
    qkv_case(8192, 4096, 32, 8, 128, False),
    conv_case(2, 3, 224, 64, 7, 2, 3, 1, 1),
    conv_case(32, 64, 56, 64, 3, 1, 1, 1, 1),
    conv_case(4, 64, 56, 64, 3, 1, 1, 1, 1),
    conv_case(1, 256, 14, 256, 3, 1, 1, 1, 256),
    conv_case(1, 32, 33, 16, 3, 2, 0, 2, 2),
    conv_case(32, 256, 56, 64, 1, 1, 0, 1, 1),
    attention_case(2, 8, 256, 512, 64, 8, False, "flash"),
    attention_case(1, 32, 4096, 4096, 128, 32, True, "flash"),
    attention_case(1, 32, 8192, 8192, 128, 8, True, "flash"),
    attention_case(8, 32, 1, 32768, 128, 8, False, "flash"),
    attention_case(1, 4, 256, 256, 64, 4, True, "naive"),
    attention_case(1, 8, 1024, 1024, 64, 8, True, "naive"),
]


# ---- model cases ------------------------------------------------------------------------------------------


def resnet50_case(batch: int) -> dict[str, Any]:
    """torchvision's ResNet-50 (v1.5) on ``batch`` 224x224 images; the images need no gradient."""
    import torchvision

    def build() -> tuple[Any, torch.Tensor]:
        with torch.device(META):
            model = torchvision.models.resnet50().to(BF16)
        return model, tensor(batch, 3, 224, 224, grad=False)

    model, x = build()
    forward, per_op = count(lambda: model(x))
    model, x = build()
    step, step_ops = count(lambda: model(x).float().sum().backward())
    return {"id": f"resnet50/batch={batch}", "model": "resnet50", "params": {"batch": batch}, "forward": forward,
            "forward_ops": per_op, "step": step, "step_ops": step_ops,
            "note": "torchvision.models.resnet50(); the input images require no gradient (no dgrad of the stem)"}


def transformer_case(name: str, config: dict[str, Any], kind: str, batch: int, seq: int) -> dict[str, Any]:
    """A Hugging Face model from a config, on meta tensors, at ``batch`` x ``seq`` tokens (SDPA attention)."""
    import transformers

    def build() -> tuple[Any, torch.Tensor]:
        cls = getattr(transformers, kind)
        cfg_cls = getattr(transformers, config.pop("_config"))
        cfg = cfg_cls(**config, attn_implementation="sdpa")
        config["_config"] = cfg_cls.__name__
        with torch.device(META):
            model = cls(cfg).to(BF16)
        ids = torch.zeros(batch, seq, dtype=torch.long, device=META)
        return model, ids

    model, ids = build()
    forward, per_op = count(lambda: model(ids))
    model, ids = build()

    def step() -> None:
        out = model(ids)
        tensor_out = out.logits if hasattr(out, "logits") else out.last_hidden_state
        tensor_out.float().sum().backward()

    total, step_ops = count(step)
    return {"id": f"{name}/batch={batch},seq={seq}", "model": name, "params": {"batch": batch, "seq": seq},
            "hf_class": kind, "config": {k: v for k, v in config.items() if k != "_config"}, "forward": forward,
            "forward_ops": per_op, "step": total, "step_ops": step_ops}


LLAMA3_8B = dict(_config="LlamaConfig", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192,
                 tie_word_embeddings=False)
BERT_BASE = dict(_config="BertConfig", hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                 num_attention_heads=12, vocab_size=30522)


def model_cases() -> list[Callable[[], dict[str, Any]]]:
    return [
        lambda: resnet50_case(1),
        lambda: resnet50_case(32),
        lambda: transformer_case("llama3-8b", dict(LLAMA3_8B), "LlamaForCausalLM", 1, 8192),
        lambda: transformer_case("bert-base", dict(BERT_BASE), "BertModel", 8, 512),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "flop_counter.json"))
    args = parser.parse_args()
    ops_out, models_out, errors = [], [], []
    global FUSED
    for case_id, op, params, build in OP_CASES:
        try:
            ops_out.append({"id": case_id, "op": op, "params": params, **forward_and_backward(build)})
        except AssertionError as exc:  # the counter's SDPA formula refuses GQA: count the math backend on meta
            fused, FUSED = FUSED, META
            try:
                row = {"id": case_id, "op": op, "params": params, **forward_and_backward(build)}
                ops_out.append({**row, "note": f"counted on meta (SDPA's math backend): on the GPU the counter said {exc}"})
            finally:
                FUSED = fused
        except Exception as exc:  # noqa: BLE001 - a case that torch cannot count is recorded, not fatal
            errors.append({"id": case_id, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]})
    for make in model_cases():
        try:
            models_out.append(make())
        except Exception as exc:  # noqa: BLE001
            errors.append({"id": "model", "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]})
    versions = {"torch": torch.__version__, "python": sys.version.split()[0],
                "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}
    for name in ("torchvision", "transformers"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = None
    data = {"meta": {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "versions": versions, "device": "meta (shapes only)", "script": "benchmarks/flop_counter.py"},
            "ops": ops_out, "models": models_out, "errors": errors}
    with open(args.out, "w") as f:
        json.dump(data, f, indent=1, sort_keys=False)
    for row in ops_out + models_out:
        print(json.dumps({"id": row["id"], "forward": row["forward"], "step": row["step"]}))
    for e in errors:
        print("ERROR", e["id"], e["error"])
    print(f"{len(ops_out)} op cases, {len(models_out)} model cases, {len(errors)} errors -> {args.out}")
    return 0 if not errors and all(math.isfinite(r["forward"]) for r in ops_out) else 1


if __name__ == "__main__":
    sys.exit(main())
