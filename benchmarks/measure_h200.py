#!/usr/bin/env python3
"""Raw H200 measurements that solkit's cost models (``solkit.ops``) and calibrated predictor are tested against.

Runs on the device machine with torch, triton, numpy and the standard library only: it never imports
solkit. Every measured case names the solkit op and the exact keyword arguments of the solkit op
function that models it, so ``getattr(solkit.ops, row["op"])(**row["params"])`` rebuilds the
modelled workload.

    python3 benchmarks/measure_h200.py --out "$OUT/h200_measurements.json"    # on the H200
    python3 benchmarks/measure_h200.py --dry-run                              # anywhere, no torch needed

Phases, all under one global time budget (``--budget``, seconds since the process started):
  1. ceilings: copy and read bandwidth, dense matmul rate per precision, the launch floor;
  2. cases, most important first (tier 0, then 1, then 2), each with a fresh random input set; a
     few per family are also checked against a float64 reference before they are timed;
  3. kernel census (if time is left): one profiled call per measured case, naming the kernels torch
     launched, so that a row can be compared with the kernels its solkit model assumes.
The output JSON is rewritten after every case, so a run cut short still leaves its rows behind.
torch is imported lazily (``load_torch``), so ``--dry-run`` works on a machine without it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import hashlib
import json
import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

_T0 = time.monotonic()  # the budget counts from here, torch import included

SCRIPT_VERSION = "1.0"

FAMILIES: tuple[str, ...] = (
    "matmul", "bmm", "qkv", "layernorm", "rmsnorm", "layernorm_residual",
    "softmax", "elementwise", "embedding", "conv2d", "attention", "decode",
)
#: within a tier, families run in this order (the ones the predictor leans on most first)
RUN_ORDER: tuple[str, ...] = (
    "matmul", "attention", "decode", "conv2d", "elementwise", "layernorm", "rmsnorm",
    "softmax", "qkv", "layernorm_residual", "embedding", "bmm",
)
DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "int8")
ELEM_BYTES: dict[str, int] = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8_e4m3": 1, "int8": 1}
#: matmul output element bytes where it differs from the input's (fp8 -> bf16, int8 -> int32)
MATMUL_OUT_BYTES: dict[str, int] = {"fp8_e4m3": 2, "int8": 4}
#: spot-check tolerance on ||out - ref|| / ||ref|| against a float64 reference, by input precision
TOLERANCE: dict[str, float] = {
    "fp64": 1e-12, "fp32": 1e-5, "tf32": 2e-3, "bf16": 1e-2, "fp16": 5e-3, "fp8_e4m3": 1e-2, "int8": 0.0,
}

#: datasheet leads, used ONLY for the dry-run time estimate and the "~" figures on progress lines
_ROUGH_PEAK: dict[str, float] = {
    "fp64": 67e12, "fp32": 67e12, "tf32": 494e12, "bf16": 989e12, "fp16": 989e12,
    "fp8_e4m3": 1979e12, "int8": 1979e12,
}
_ROUGH_BW = 4.8e12
_ROUGH_EFF = 0.7  # achievable fraction of either peak, for the estimate only

METHOD = (
    "triton.testing.do_bench(fn, warmup=WARMUP ms, rep=REP ms, return_mode='all') per case: CUDA events "
    "around each call, L2 flushed (a 256 MB buffer zeroed) before every timed call; seconds = median of "
    "the per-call times, q20/q80 their 20th/80th percentiles (linear interpolation). rep is raised to "
    "about 10 calls' worth (at most 2 s) for kernels slower than REP/10 ms. Inputs: random normal "
    "(int8 uniform in [-128,127], ids uniform), fresh for every case, never zeros. torch.inference_mode(); "
    "torch.backends.cudnn.benchmark=True; one untimed call (or the spot check) before timing."
)


# --------------------------------------------------------------------------------------------
# The case registry
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Case:
    """One measured workload: the solkit op and kwargs that model it, and how torch runs it."""

    family: str
    op: str  # solkit.ops function name
    params: dict[str, Any]  # the exact solkit kwargs
    impl: str  # key into BUILDERS
    impl_note: str  # the torch call(s) that run, for the output row
    tier: int = 1  # 0 runs first; 2 is nice to have
    check: bool = False  # compare against a float64 reference before timing
    extra_kernels: int = 0  # kernels launched beyond the solkit model's (known in advance)
    primary: bool = True  # False: same params as another row, measured another way (alt backend)
    variant: str = ""  # distinguishes rows whose params coincide
    opts: dict[str, Any] = field(default_factory=dict)  # builder options that are not solkit kwargs

    @property
    def id(self) -> str:
        """A readable unique key: family/op/k=v,...[/variant]."""
        body = ",".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.family}/{self.op}/{body}" + (f"/{self.variant}" if self.variant else "")

    @property
    def compiles(self) -> bool:
        """Whether building this case runs torch.compile (seconds of host time)."""
        return self.impl == "lnres_compiled"


_MM_NOTES: dict[str, str] = {
    "matmul": "torch.matmul(a[m,k], b[k,n]) (row-major, cuBLAS)",
    "bmm": "torch.matmul(a[b,m,k], b[b,k,n]) -> bmm (cuBLAS strided batched)",
    "scaled_mm": "torch._scaled_mm(a e4m3 [m,k] row-major, b e4m3 [k,n] column-major (= b_t[n,k].t()), "
    "scale_a=scale_b=1.0 fp32 scalars, out_dtype=bf16)",
    "int_mm": "torch._int_mm(a int8 [m,k] row-major, b int8 [k,n] column-major (= b_t[n,k].t())) -> int32",
    "linear_bias": "F.linear(x[m,k], W[n,k], bias[n]) (weight transposed, as nn.Linear)",
    "addmm": "torch.addmm(bias[n], a[m,k], b[k,n])",
    "addmm_act": "torch._addmm_activation(bias[n], a[m,k], b[k,n], use_gelu=G) (cuBLASLt bias+act epilogue; "
    "GELU is the tanh form)",
}


def _mm(
    m: int,
    n: int,
    k: int,
    dtype: str = "bf16",
    *,
    batch: int = 1,
    tier: int = 1,
    check: bool = False,
    impl: str | None = None,
    bias: bool = False,
    epilogue: str = "none",
    variant: str = "",
) -> Case:
    """A matmul case; params carry only the kwargs that differ from solkit's defaults, plus dtype.

    A ``variant`` row repeats another row's params through another torch call (``primary`` False).
    """
    params: dict[str, Any] = {"m": m, "n": n, "k": k, "dtype": dtype}
    if batch != 1:
        params["batch"] = batch
    if bias:
        params["bias"] = True
    if epilogue != "none":
        params["epilogue"] = epilogue
    if impl is None:
        impl = {"fp8_e4m3": "scaled_mm", "int8": "int_mm"}.get(dtype, "matmul")
    note = _MM_NOTES["bmm" if batch != 1 and impl == "matmul" else impl]
    if impl == "addmm_act":
        note = note.replace("use_gelu=G", f"use_gelu={epilogue == 'gelu'}")
    if dtype == "tf32":
        note += "; fp32 tensors, torch.backends.cuda.matmul.allow_tf32=True"
    elif dtype == "fp32":
        note += "; torch.backends.cuda.matmul.allow_tf32=False"
    family = "bmm" if batch != 1 else "matmul"
    return Case(family, "matmul", params, impl, note, tier=tier, check=check, primary=not variant, variant=variant)


def matmul_cases() -> Iterator[Case]:
    """Dense GEMMs: square sweep, GEMV, Llama-3-8B and BERT-base layers, odd sizes, precisions, epilogues."""
    for s in (256, 512, 1024, 2048, 4096, 8192, 16384):
        yield _mm(s, s, s, tier=0 if s in (1024, 4096, 8192) else 1, check=s == 1024)
    # decode-time GEMV and skinny GEMMs: x [m,k] @ W [k,n] -> [m,n]
    for m, n, k in ((1, 4096, 4096), (1, 14336, 4096), (1, 4096, 14336), (1, 128256, 4096),
                    (8, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096)):
        yield _mm(m, n, k, tier=0 if (m, n, k) == (1, 4096, 4096) else 1)
    # Llama-3-8B, T tokens: o_proj d->d, gate+up d->2*ffn, down ffn->d, lm_head d->vocab
    for t in (512, 2048, 8192):
        for n, k in ((4096, 4096), (2 * 14336, 4096), (4096, 14336), (128256, 4096)):
            yield _mm(t, n, k, tier=0 if (t, n, k) == (2048, 4096, 14336) else 1)
    # BERT-base, T tokens: attention out d->d, ffn d->4d and 4d->d, MLM head d->vocab
    for t in (512, 4096, 16384):
        for n, k in ((768, 768), (3072, 768), (768, 3072), (30522, 768)):
            yield _mm(t, n, k, tier=0 if (t, n) == (4096, 3072) else 1)
    # odd sizes: not multiples of 8, or one past a tile
    for m, n, k in ((4095, 4096, 4096), (4096, 4096, 1000), (2048, 50257, 768), (1000, 1000, 1000),
                    (4097, 4097, 4097), (8192, 8192, 1000)):
        yield _mm(m, n, k)
    # extreme aspect ratios: small K, large K (split-K territory), small N
    for m, n, k in ((8192, 8192, 128), (128, 128, 65536), (1024, 1024, 65536), (65536, 128, 4096)):
        yield _mm(m, n, k, tier=2)
    # other precisions, a few sizes each (the 1024 cube of each is checked against float64)
    llama_ffn = (2048, 14336, 4096)
    per_dtype: dict[str, Sequence[tuple[tuple[int, int, int], int]]] = {
        "fp16": (((4096,) * 3, 1), ((8192,) * 3, 1), ((16384,) * 3, 2), (llama_ffn, 2)),
        "tf32": (((4096,) * 3, 1), ((8192,) * 3, 1)),
        "fp32": (((4096,) * 3, 1), ((8192,) * 3, 2)),
        "fp64": (((4096,) * 3, 1), ((8192,) * 3, 2)),
        "fp8_e4m3": (((4096,) * 3, 1), ((8192,) * 3, 1), ((16384,) * 3, 2), (llama_ffn, 1), ((16, 4096, 4096), 2)),
        "int8": (((4096,) * 3, 1), ((8192,) * 3, 1), ((16384,) * 3, 2), (llama_ffn, 1), ((32, 4096, 4096), 2)),
    }
    for dt, shapes in per_dtype.items():
        yield _mm(1024, 1024, 1024, dt, tier=0, check=True)
        for (m, n, k), tier in shapes:
            yield _mm(m, n, k, dt, tier=tier)
    # bias and fused epilogues (cuBLASLt)
    yield _mm(1024, 1024, 1024, impl="linear_bias", bias=True, tier=0, check=True)
    yield _mm(4096, 4096, 4096, impl="linear_bias", bias=True)
    yield _mm(4096, 14336, 4096, impl="linear_bias", bias=True)
    yield _mm(4096, 4096, 4096, impl="addmm", bias=True, variant="addmm")
    yield _mm(1024, 1024, 1024, impl="addmm_act", bias=True, epilogue="gelu", tier=0, check=True)
    yield _mm(4096, 14336, 4096, impl="addmm_act", bias=True, epilogue="gelu")
    yield _mm(4096, 14336, 4096, impl="addmm_act", bias=True, epilogue="relu", tier=2)


def bmm_cases() -> Iterator[Case]:
    """Batched matmuls (batch > 1): attention-like products and plain batched cubes."""
    yield _mm(512, 512, 512, batch=16, tier=0, check=True)
    yield _mm(2048, 2048, 2048, batch=8, tier=0)
    for b, m, n, k in ((64, 512, 512, 64), (64, 512, 64, 512), (384, 128, 128, 64),
                       (32, 4096, 4096, 128), (32, 4096, 128, 4096), (4, 4096, 4096, 4096), (256, 1, 4096, 128)):
        yield _mm(m, n, k, batch=b)
    yield _mm(2048, 2048, 2048, "fp16", batch=8, tier=2)
    yield _mm(1024, 1024, 1024, "fp32", batch=8, tier=2)


def qkv_cases() -> Iterator[Case]:
    """QKV projections, fused (one GEMM) and unfused (three GEMMs each reading x): GQA and MHA."""
    models = (
        # name, d_model, heads, kv_heads, head_dim, token counts
        ("llama3-8b", 4096, 32, 8, 128, (1, 128, 2048, 8192)),
        ("bert-base", 768, 12, 12, 64, (128, 4096, 16384)),
        ("llama2-7b", 4096, 32, 32, 128, (4096,)),
    )
    for name, d, h, kv, hd, tokens in models:
        for t in tokens:
            for fused in (True, False):
                params = {"tokens": t, "d_model": d, "heads": h, "kv_heads": kv, "head_dim": hd,
                          "fused": fused, "dtype": "bf16"}
                if fused:
                    note = "torch.matmul(x[T,d], W[d,q+2kv]) (one GEMM; q/k/v are column views)"
                else:
                    note = "torch.matmul(x, Wq[d,q]), torch.matmul(x, Wk[d,kv]), torch.matmul(x, Wv[d,kv])"
                tier = 0 if t in (128, 2048) and name != "llama2-7b" else 1
                yield Case("qkv", "qkv_projection", params, "qkv", f"{note} [{name}]", tier=tier,
                           check=(name == "bert-base" and t == 128))


def _norm_case(family: str, op: str, impl: str, note: str, t: int, d: int, dtype: str = "bf16",
               tier: int = 1, check: bool = False) -> Case:
    """A layernorm/rmsnorm/softmax-style case over [tokens, d_model] (softmax: rows, cols)."""
    if op == "softmax":
        params: dict[str, Any] = {"rows": t, "cols": d, "dtype": dtype}
    else:
        params = {"tokens": t, "d_model": d, "dtype": dtype}
    return Case(family, op, params, impl, note, tier=tier, check=check)


def norm_cases() -> Iterator[Case]:
    """LayerNorm and RMSNorm over [T, d], LLM and BERT widths, a few non-bf16."""
    ln_note = "F.layer_norm(x[T,d], (d,), gamma, beta, eps=1e-5)"
    rms_note = "F.rms_norm(x[T,d], (d,), gamma, eps=1e-6)"
    shapes = ((1, 4096, 1), (128, 4096, 1), (2048, 4096, 0), (8192, 4096, 0), (32768, 4096, 1),
              (4096, 768, 0), (16384, 768, 1), (65536, 768, 2), (8192, 8192, 1), (4096, 12288, 1),
              (8192, 1000, 2))
    for t, d, tier in shapes:
        yield _norm_case("layernorm", "layernorm", "layernorm", ln_note, t, d, tier=tier, check=(t, d) == (4096, 768))
    yield _norm_case("layernorm", "layernorm", "layernorm", ln_note, 8192, 4096, "fp32", tier=1, check=False)
    yield _norm_case("layernorm", "layernorm", "layernorm", ln_note, 4096, 1024, "fp32", tier=0, check=True)
    yield _norm_case("layernorm", "layernorm", "layernorm", ln_note, 8192, 4096, "fp16", tier=2)
    for t, d, tier in shapes:
        if (t, d) == (65536, 768):
            continue
        yield _norm_case("rmsnorm", "rmsnorm", "rmsnorm", rms_note, t, d, tier=tier, check=(t, d) == (4096, 768))
    yield _norm_case("rmsnorm", "rmsnorm", "rmsnorm", rms_note, 8192, 4096, "fp32", tier=2)


def layernorm_residual_cases() -> Iterator[Case]:
    """h = x + residual; y = layernorm(h): eager (two kernels) and torch.compile'd (one fused kernel)."""
    eager = "h = x + r (torch add); y = F.layer_norm(h, (d,), gamma, beta, eps=1e-5); returns (h, y)"
    fused = ("torch.compile(add_layernorm, dynamic=False, fullgraph=True): same function, Inductor fuses "
             "it into one Triton kernel writing h and y")
    for t, d, tier in ((4096, 768, 0), (16384, 768, 1), (2048, 4096, 1), (8192, 4096, 0), (32768, 4096, 1),
                       (8192, 8192, 2)):
        params = {"tokens": t, "d_model": d, "fused": False, "dtype": "bf16"}
        yield Case("layernorm_residual", "layernorm_residual", params, "lnres_eager", eager, tier=tier,
                   check=(t, d) == (4096, 768))
    for t, d, tier in ((4096, 768, 1), (8192, 4096, 1), (16384, 768, 2), (32768, 4096, 2)):
        params = {"tokens": t, "d_model": d, "fused": True, "dtype": "bf16"}
        yield Case("layernorm_residual", "layernorm_residual", params, "lnres_compiled", fused, tier=tier,
                   check=(t, d) == (4096, 768))


def softmax_cases() -> Iterator[Case]:
    """Softmax over the last dim: square, attention-score and vocabulary-sized rows."""
    note = "torch.softmax(x[rows,cols], dim=-1)"
    shapes = ((1024, 1024, 1), (4096, 1024, 0), (4096, 4096, 0), (8192, 8192, 1), (32768, 1024, 1),
              (8 * 12 * 512, 512, 1),  # BERT-base scores: b8 h12 s512
              (32 * 2048, 2048, 1),  # Llama scores: h32 s2048
              (2048, 128256, 0), (4096, 50257, 1), (8192, 32000, 2), (1, 128256, 2), (128, 32768, 2))
    for r, c, tier in shapes:
        yield _norm_case("softmax", "softmax", "softmax", note, r, c, tier=tier, check=(r, c) == (4096, 1024))
    yield _norm_case("softmax", "softmax", "softmax", note, 4096, 1024, "fp32", tier=0, check=True)
    yield _norm_case("softmax", "softmax", "softmax", note, 8192, 8192, "fp32", tier=2)


def elementwise_cases() -> Iterator[Case]:
    """add / gelu / silu / copy from 8 KB to 1 GiB per tensor (small ones expose the launch floor)."""
    notes = {
        "add": "torch.add(a, b, out=c)",
        "copy": "dst.copy_(src)",
        "gelu": "F.gelu(x) (erf form, torch default)",
        "silu": "F.silu(x)",
    }
    sizes = {  # log2(elements) -> tier
        "add": {12: 1, 14: 1, 16: 0, 18: 1, 20: 0, 22: 1, 24: 0, 26: 1, 28: 0, 29: 1},
        "copy": {12: 1, 14: 1, 16: 0, 18: 1, 20: 0, 22: 1, 24: 0, 26: 1, 28: 0, 29: 1},
        "gelu": {14: 1, 18: 1, 20: 0, 22: 1, 26: 1, 28: 1},
        "silu": {14: 1, 18: 1, 20: 0, 22: 1, 26: 1, 28: 1},
    }
    for op, by_size in sizes.items():
        for e, tier in by_size.items():
            yield Case("elementwise", op, {"elements": 2 ** e, "dtype": "bf16"}, op, notes[op], tier=tier,
                       check=e == 20)
    yield Case("elementwise", "add", {"elements": 2 ** 26, "dtype": "fp32"}, "add", notes["add"], tier=2)
    yield Case("elementwise", "add", {"elements": 1_000_003, "dtype": "bf16"}, "add", notes["add"], tier=2)
    yield Case("elementwise", "gelu", {"elements": 10 ** 8, "dtype": "bf16"}, "gelu", notes["gelu"], tier=2)


def embedding_cases() -> Iterator[Case]:
    """Embedding gathers: Llama-3 (128256 x 4096), BERT (30522 x 768), GPT-2 (50257 x 768)."""
    note = "F.embedding(ids int64 [T], table[vocab,d])"
    for vocab, d, tokens in ((128256, 4096, (1, 128, 2048, 8192, 32768)), (30522, 768, (512, 4096, 16384)),
                             (50257, 768, (8192,))):
        for t in tokens:
            params = {"tokens": t, "vocab": vocab, "d_model": d, "dtype": "bf16"}
            tier = 0 if t in (2048, 4096) else (2 if vocab == 50257 else 1)
            yield Case("embedding", "embedding", params, "embedding", note, tier=tier,
                       check=(vocab, t) == (30522, 512))


#: ResNet-50 (torchvision v1.5: stride in the 3x3) convolutions at 224x224:
#: name, in_channels, height (= width), out_channels, kernel, stride, padding
RESNET50_CONVS: tuple[tuple[str, int, int, int, int, int, int], ...] = (
    ("stem7x7s2", 3, 224, 64, 7, 2, 3),
    ("s1.1x1.64-64", 64, 56, 64, 1, 1, 0),
    ("s1.3x3.64", 64, 56, 64, 3, 1, 1),
    ("s1.1x1.64-256", 64, 56, 256, 1, 1, 0),
    ("s1.1x1.256-64", 256, 56, 64, 1, 1, 0),
    ("s2.3x3s2.128", 128, 56, 128, 3, 2, 1),
    ("s2.3x3.128", 128, 28, 128, 3, 1, 1),
    ("s2.1x1.128-512", 128, 28, 512, 1, 1, 0),
    ("s2.down1x1s2.256-512", 256, 56, 512, 1, 2, 0),
    ("s3.3x3.256", 256, 14, 256, 3, 1, 1),
    ("s3.1x1.1024-256", 1024, 14, 256, 1, 1, 0),
    ("s3.down1x1s2.512-1024", 512, 28, 1024, 1, 2, 0),
    ("s4.3x3.512", 512, 7, 512, 3, 1, 1),
    ("s4.1x1.2048-512", 2048, 7, 512, 1, 1, 0),
    ("s4.down1x1s2.1024-2048", 1024, 14, 2048, 1, 2, 0),
)

_CONV_NOTES: dict[str, str] = {
    "nhwc": "F.conv2d(x, w) with x and w in torch.channels_last (cuDNN, cudnn.benchmark=True)",
    "nchw": "F.conv2d(x, w) with contiguous NCHW x and w (cuDNN, cudnn.benchmark=True)",
    "im2col": "cols = F.unfold(x) [N,C*R*S,L]; torch.matmul(w[K,C*R*S], cols) -> y [N,K,L]",
}


def _conv(n: int, c: int, hw: int, k: int, ks: int, stride: int, pad: int, layout: str, *, name: str,
          groups: int = 1, dilation: int = 1, tier: int = 1, check: bool = False) -> Case:
    """A conv2d case; dilation is in params only when it is not 1."""
    params: dict[str, Any] = {"batch": n, "in_channels": c, "height": hw, "width": hw, "out_channels": k,
                              "kernel": ks, "stride": stride, "padding": pad, "groups": groups}
    if dilation != 1:
        params["dilation"] = dilation
    params["layout"] = layout
    params["dtype"] = "bf16"
    impl = "conv_im2col" if layout == "im2col" else "conv"
    return Case("conv2d", "conv2d", params, impl, f"{_CONV_NOTES[layout]} [{name}]", tier=tier, check=check)


def conv2d_cases() -> Iterator[Case]:
    """ResNet-50 layers in three layouts at batch 32 (and 1/8/128), depthwise and one dilated conv."""
    layers = {name: (c, hw, k, ks, s, p) for name, c, hw, k, ks, s, p in RESNET50_CONVS}
    tier0 = {"stem7x7s2", "s1.3x3.64", "s3.3x3.256", "s2.1x1.128-512"}
    for name, (c, hw, k, ks, s, p) in layers.items():
        yield _conv(32, c, hw, k, ks, s, p, "nhwc", name=name, tier=0 if name in tier0 else 1)
    for name in ("stem7x7s2", "s1.1x1.64-64", "s1.3x3.64", "s2.3x3s2.128", "s2.3x3.128", "s2.down1x1s2.256-512",
                 "s3.3x3.256", "s3.1x1.1024-256", "s4.3x3.512"):
        c, hw, k, ks, s, p = layers[name]
        yield _conv(32, c, hw, k, ks, s, p, "nchw", name=name, tier=0 if name in ("s1.3x3.64", "s1.1x1.64-64") else 1)
    for name in ("stem7x7s2", "s1.1x1.64-64", "s1.3x3.64", "s2.3x3.128", "s3.3x3.256", "s4.3x3.512"):
        c, hw, k, ks, s, p = layers[name]
        yield _conv(32, c, hw, k, ks, s, p, "im2col", name=name, tier=0 if name == "s1.3x3.64" else 1)
    # batch sweep (nhwc), with the batch-1 3x3 checked in every layout
    c, hw, k, ks, s, p = layers["s1.3x3.64"]
    for layout in ("nhwc", "nchw", "im2col"):
        yield _conv(1, c, hw, k, ks, s, p, layout, name="s1.3x3.64", tier=0, check=True)
    for n in (8, 128):
        yield _conv(n, c, hw, k, ks, s, p, "nhwc", name="s1.3x3.64", tier=1)
    for name, batches in (("s1.1x1.256-64", (1, 128)), ("s4.3x3.512", (1, 128)), ("stem7x7s2", (128,))):
        c, hw, k, ks, s, p = layers[name]
        for n in batches:
            yield _conv(n, c, hw, k, ks, s, p, "nhwc", name=name, tier=2)
    # depthwise 3x3 (MobileNet-style), groups = channels
    for ch, hw, s, layouts, tier in ((32, 112, 1, ("nhwc",), 1), (96, 112, 2, ("nhwc",), 1),
                                     (144, 56, 1, ("nhwc", "nchw"), 1), (384, 14, 1, ("nhwc", "nchw"), 2),
                                     (960, 7, 1, ("nhwc",), 2)):
        for layout in layouts:
            yield _conv(32, ch, hw, ch, 3, s, 1, layout, name=f"dw3x3.{ch}", groups=ch, tier=tier)
    yield _conv(1, 144, 56, 144, 3, 1, 1, "nhwc", name="dw3x3.144", groups=144, tier=0, check=True)
    # a dilated 3x3 (DeepLab-style stage 3)
    yield _conv(32, 256, 14, 256, 3, 1, 2, "nhwc", name="s3.3x3.256.dil2", dilation=2, tier=2)


def _attn(b: int, h: int, sq: int, d: int, *, skv: int | None = None, kv: int | None = None,
          causal: bool = False, impl: str = "flash", family: str = "attention", tier: int = 1,
          check: bool = False, backend: str = "flash", label: str = "") -> Case:
    """An attention case: q [b,h,sq,d], k/v [b,kv,skv,d]; all solkit kwargs spelled out."""
    params: dict[str, Any] = {"batch": b, "heads": h, "seq_q": sq, "seq_kv": skv or sq, "head_dim": d,
                              "kv_heads": kv or h, "causal": causal, "impl": impl, "dtype": "bf16"}
    gqa = (kv or h) != h
    extra = 0
    primary = True
    variant = ""
    if family == "decode":
        builder = "decode"
        note = (f"F.scaled_dot_product_attention(q[b,h,1,d], k, v [b,kv,skv,d], is_causal=False"
                f"{', enable_gqa=True' if gqa else ''}); first backend that runs of flash, efficient, cudnn, math")
    elif impl == "flash":
        builder = "sdpa"
        name = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION"}[backend]
        note = (f"F.scaled_dot_product_attention(q, k, v, is_causal={causal}{', enable_gqa=True' if gqa else ''}) "
                f"under sdpa_kernel(SDPBackend.{name}); layout [b,h,s,d]")
        if backend != "flash":
            primary, variant = False, backend
    else:
        builder = "naive_attention"
        note = ("s = torch.matmul(q*scale, k^T); " + ("s.masked_fill_(causal_mask, -inf); " if causal else "")
                + "p = torch.softmax(s, -1); o = torch.matmul(p, v) (q pre-scaled outside the timed region)")
        extra = 1 if causal else 0
    if label:
        note += f" [{label}]"
    return Case(family, "attention", params, builder, note, tier=tier, check=check, extra_kernels=extra,
                primary=primary, variant=variant, opts={"backend": backend})


def attention_cases() -> Iterator[Case]:
    """Prefill attention: flash SDPA (MHA and GQA, causal and not, d 64/128), naive three-kernel attention."""
    # correctness first: small MHA, causal, GQA
    yield _attn(2, 8, 256, 64, tier=0, check=True)
    yield _attn(2, 8, 256, 128, causal=True, tier=0, check=True)
    yield _attn(2, 8, 256, 128, kv=2, causal=True, tier=0, check=True)
    # FlashAttention-paper style sweep: batch*seq = 16k tokens, h16 d128 and h32 d64
    for s in (512, 1024, 2048, 4096, 8192, 16384):
        for causal in (False, True):
            yield _attn(max(1, 16384 // s), 16, s, 128, causal=causal, tier=0 if s in (2048, 8192) else 1)
    for s in (512, 2048, 8192):
        for causal in (False, True):
            yield _attn(max(1, 16384 // s), 32, s, 64, causal=causal, tier=0 if s == 2048 and causal else 1)
    # Llama-3-8B GQA (h32, kv8, d128), batch 1
    for s, causal, tier in ((2048, False, 1), (2048, True, 0), (8192, False, 1), (8192, True, 0), (16384, True, 1)):
        yield _attn(1, 32, s, 128, kv=8, causal=causal, tier=tier, label="llama3-8b")
    # BERT-base
    yield _attn(32, 12, 512, 64, tier=1, label="bert-base")
    yield _attn(128, 12, 128, 64, tier=2, label="bert-base")
    # cross attention (sq != skv; non-causal)
    yield _attn(8, 16, 1024, 64, skv=4096, tier=2)
    yield _attn(16, 8, 4096, 64, skv=77, tier=2, label="text-conditioning")
    # the same workloads through cuDNN's fused attention (not primary rows)
    for b, s, causal in ((4, 4096, False), (4, 4096, True), (1, 16384, True)):
        yield _attn(b, 16, s, 128, causal=causal, tier=2, backend="cudnn")
    # naive attention: S and P materialised in bf16 (non-causal, plus three causal with a mask kernel)
    yield _attn(2, 8, 256, 64, impl="naive", tier=0, check=True)
    yield _attn(2, 8, 256, 64, impl="naive", causal=True, tier=0, check=True)
    for b, h, s, d, tier in ((1, 32, 1024, 128, 1), (1, 32, 2048, 128, 0), (1, 32, 4096, 128, 1),
                             (1, 16, 8192, 128, 1), (8, 12, 512, 64, 0), (32, 12, 128, 64, 1), (4, 16, 2048, 64, 2)):
        yield _attn(b, h, s, d, impl="naive", tier=tier)
    for b, h, s, d in ((1, 32, 2048, 128), (1, 32, 4096, 128), (8, 12, 512, 64)):
        yield _attn(b, h, s, d, impl="naive", causal=True, tier=1)


def decode_cases() -> Iterator[Case]:
    """Decode attention: one query token against a KV cache of 1k..128k (non-causal, exact for sq=1)."""
    yield _attn(1, 32, 1, 128, skv=1024, kv=8, family="decode", tier=0, check=True, label="llama3-8b")
    for b, skvs in ((1, (4096, 16384, 32768, 131072)), (8, (1024, 4096, 16384, 131072)), (32, (4096, 32768)),
                    (64, (2048, 8192))):
        for skv in skvs:
            tier = 0 if (b, skv) in ((1, 32768), (8, 4096), (32, 4096)) else (2 if skv == 131072 and b == 8 else 1)
            yield _attn(b, 32, 1, 128, skv=skv, kv=8, family="decode", tier=tier, label="llama3-8b")
    for skv in (4096, 16384):  # MHA cache (llama2-7b-like)
        yield _attn(8, 32, 1, 128, skv=skv, family="decode", tier=1, label="mha")


CASE_SOURCES: tuple[Callable[[], Iterable[Case]], ...] = (
    matmul_cases, bmm_cases, qkv_cases, norm_cases, layernorm_residual_cases, softmax_cases,
    elementwise_cases, embedding_cases, conv2d_cases, attention_cases, decode_cases,
)


def all_cases() -> list[Case]:
    """Every registered case, in registry order; ids are unique (checked)."""
    cases = [c for source in CASE_SOURCES for c in source()]
    seen: dict[str, Case] = {}
    for c in cases:
        if c.id in seen:
            raise ValueError(f"duplicate case id {c.id!r}")
        if c.family not in FAMILIES:
            raise ValueError(f"case {c.id!r} has unknown family {c.family!r}")
        if c.params.get("dtype") not in DTYPES:
            raise ValueError(f"case {c.id!r} has dtype {c.params.get('dtype')!r}, expected one of {DTYPES}")
        seen[c.id] = c
    return cases


def run_order(cases: Sequence[Case]) -> list[Case]:
    """Most important first: by tier, then family (RUN_ORDER), then registry order."""
    index = {c.id: i for i, c in enumerate(cases)}
    return sorted(cases, key=lambda c: (c.tier, RUN_ORDER.index(c.family), index[c.id]))


def quick_subset(cases: Sequence[Case]) -> list[Case]:
    """A smoke test: every checked case plus the first tier-0 case of each family."""
    picked: list[Case] = []
    first: dict[str, bool] = {}
    for c in cases:
        if c.check or (c.tier == 0 and not first.get(c.family)):
            picked.append(c)
            if c.tier == 0:
                first[c.family] = True
    return picked


# --------------------------------------------------------------------------------------------
# Rough costs: only for the dry-run time estimate and the "~" figures on progress lines.
# solkit is the authority on FLOPs and bytes; none of this is written to the output.
# --------------------------------------------------------------------------------------------


def rough_cost(c: Case) -> tuple[float, float, str]:
    """(FLOPs, DRAM bytes, precision) by solkit's counting rules, roughly."""
    p = c.params
    dt = p.get("dtype", "bf16")
    e = ELEM_BYTES[dt]
    if c.op == "matmul":
        b, m, n, k = p.get("batch", 1), p["m"], p["n"], p["k"]
        eo = MATMUL_OUT_BYTES.get(dt, e)
        return 2.0 * b * m * n * k, (b * m * k + b * k * n) * e + b * m * n * eo, dt
    if c.op == "qkv_projection":
        t, d = p["tokens"], p["d_model"]
        cols = (p["heads"] + 2 * p["kv_heads"]) * p["head_dim"]
        extra_x = 0 if p["fused"] else 2 * t * d
        return 2.0 * t * d * cols, (t * d + d * cols + t * cols + extra_x) * e, dt
    if c.op in ("layernorm", "rmsnorm"):
        return 0.0, 2.0 * p["tokens"] * p["d_model"] * e, dt
    if c.op == "layernorm_residual":
        td = p["tokens"] * p["d_model"]
        return 0.0, (4.0 if p["fused"] else 5.0) * td * e, dt
    if c.op == "softmax":
        return 0.0, 2.0 * p["rows"] * p["cols"] * e, dt
    if c.op in ("add", "copy", "gelu", "silu"):
        return 0.0, (3.0 if c.op == "add" else 2.0) * p["elements"] * e, dt
    if c.op == "embedding":
        return 0.0, 2.0 * p["tokens"] * p["d_model"] * e + 8.0 * p["tokens"], dt
    if c.op == "conv2d":
        n, ch, h, w, k, r = p["batch"], p["in_channels"], p["height"], p["width"], p["out_channels"], p["kernel"]
        s, pad, g, dil = p["stride"], p["padding"], p["groups"], p.get("dilation", 1)
        ho = (h + 2 * pad - dil * (r - 1) - 1) // s + 1
        wo = (w + 2 * pad - dil * (r - 1) - 1) // s + 1
        flops = 2.0 * n * k * ho * wo * (ch // g) * r * r
        byt = (n * ch * h * w + k * (ch // g) * r * r + n * k * ho * wo) * e
        if p["layout"] == "im2col":
            byt += 2.0 * n * ho * wo * ch * r * r * e
        return flops, byt, dt
    if c.op == "attention":
        b, h, sq, skv, d, kv = p["batch"], p["heads"], p["seq_q"], p["seq_kv"], p["head_dim"], p["kv_heads"]
        pairs = sq * skv - (sq * (sq - 1) / 2 if p["causal"] and p["impl"] == "flash" else 0)
        byt = (2.0 * b * h * sq * d + 2.0 * b * kv * skv * d) * e
        if p["impl"] == "naive":
            byt += (4.0 + 2.0 * c.extra_kernels) * b * h * sq * skv * e
        return 4.0 * b * h * d * pairs, byt, dt
    raise ValueError(f"no rough cost for op {c.op!r}")


def rough_kernel_seconds(c: Case) -> float:
    """A guess at one call's device time from the datasheet leads, floored at 5 us."""
    flops, byt, dt = rough_cost(c)
    return max(5e-6, flops / (_ROUGH_PEAK[dt] * _ROUGH_EFF), byt / (_ROUGH_BW * _ROUGH_EFF))


def estimate_seconds(c: Case, warmup_ms: float, rep_ms: float, census: bool) -> float:
    """Wall seconds one case should take: build, check, do_bench's calls, census; compiles cost more."""
    t = rough_kernel_seconds(c)
    rep_s = max(rep_ms / 1e3, min(10 * t, 2.0))
    bench = 7 * t + max(warmup_ms / 1e3, t) + rep_s * 1.3 + 0.03
    build = 0.12 + rough_cost(c)[1] / 200e9  # Python, allocation, random fill
    total = build + bench + (0.3 if c.check else 0.0) + (0.25 + 2 * t if census else 0.0)
    if c.compiles:
        total += 10.0
    return total


# --------------------------------------------------------------------------------------------
# torch-side helpers (torch is imported lazily)
# --------------------------------------------------------------------------------------------

torch: Any = None  # set by load_torch()
F: Any = None
DEVICE = "cuda"  # where every tensor is made


def load_torch() -> None:
    """Import torch (and torch.nn.functional) into module globals."""
    global torch, F
    import torch as _torch
    import torch.nn.functional as _F

    torch, F = _torch, _F


def tdtype(name: str) -> Any:
    """The torch dtype that stores a solkit precision (tf32 is stored as float32)."""
    return {
        "fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
        "fp16": torch.float16, "fp8_e4m3": torch.float8_e4m3fn, "int8": torch.int8,
    }[name]


def randn(*shape: int, dtype: str = "bf16") -> Any:
    """Fresh random device tensor: normal for floats (fp8 by casting bf16 normals), uniform int8."""
    if dtype == "int8":
        return torch.randint(-128, 128, shape, device=DEVICE, dtype=torch.int8)
    if dtype == "fp8_e4m3":
        return torch.randn(shape, device=DEVICE, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    return torch.randn(shape, device=DEVICE, dtype=tdtype(dtype))


@contextlib.contextmanager
def tf32_matmul(enabled: bool) -> Iterator[None]:
    """Set torch.backends.cuda.matmul.allow_tf32 for the block, restore it after."""
    flags = torch.backends.cuda.matmul
    old = flags.allow_tf32
    flags.allow_tf32 = enabled
    try:
        yield
    finally:
        flags.allow_tf32 = old


def sdpa_backend(name: str) -> AbstractContextManager[Any]:
    """sdpa_kernel(SDPBackend.<name>) for 'flash', 'efficient', 'cudnn' or 'math'."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
               "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}[name]
    return sdpa_kernel(backend)


@dataclass
class Prepared:
    """A built case: the timed callable, its float64 reference, and the context both run in."""

    fn: Callable[[], Any]
    ref: Callable[[], Any] | None = None
    tol: float = 1e-2
    poison: tuple[Any, ...] = ()  # out= buffers filled with NaN before the spot check
    ctx: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
    note: str = ""  # found while building (e.g. which SDPA backend ran)


def attention_reference(q: Any, k: Any, v: Any, causal: bool) -> Any:
    """softmax(q k^T / sqrt(d) [+ bottom-right causal mask]) v in float64; GQA by repeating k, v."""
    qd, kd, vd = q.double(), k.double(), v.double()
    if kd.shape[1] != qd.shape[1]:
        rep = qd.shape[1] // kd.shape[1]
        kd, vd = kd.repeat_interleave(rep, dim=1), vd.repeat_interleave(rep, dim=1)
    s = torch.matmul(qd, kd.transpose(-1, -2)) * qd.shape[-1] ** -0.5  # [b,h,sq,d] @ [b,h,d,skv] -> [b,h,sq,skv]
    if causal:
        sq, skv = s.shape[-2:]
        mask = torch.ones(sq, skv, dtype=torch.bool, device=s.device).triu(1 + skv - sq)
        s = s.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), vd)  # [b,h,sq,skv] @ [b,h,skv,d] -> [b,h,sq,d]


def add_layernorm(x: Any, r: Any, w: Any, b: Any) -> tuple[Any, Any]:
    """h = x + r; y = layernorm(h): the residual-add + LayerNorm pair, returning both."""
    h = x + r  # x [T,d] + r [T,d] -> h [T,d]
    return h, F.layer_norm(h, (h.shape[-1],), w, b, 1e-5)  # h [T,d] -> y [T,d]


_COMPILED: dict[str, Any] = {}


def compiled_add_layernorm() -> Any:
    """One torch.compile'd add_layernorm shared by all shapes (each new shape recompiles once)."""
    if "lnres" not in _COMPILED:
        import torch._dynamo as dynamo

        for knob in ("cache_size_limit", "recompile_limit"):
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, 64)
        _COMPILED["lnres"] = torch.compile(add_layernorm, dynamic=False, fullgraph=True)
    return _COMPILED["lnres"]


# --------------------------------------------------------------------------------------------
# Builders: Case -> Prepared. One per impl key. Shapes follow solkit's names.
# --------------------------------------------------------------------------------------------


def build_matmul(c: Case) -> Prepared:
    """torch.matmul in bf16/fp16/fp32/tf32/fp64, batched when batch > 1."""
    p = c.params
    dt, b = p["dtype"], p.get("batch", 1)
    lead = (b,) if b != 1 else ()
    a = randn(*lead, p["m"], p["k"], dtype=dt)
    w = randn(*lead, p["k"], p["n"], dtype=dt)

    def fn() -> Any:
        return torch.matmul(a, w)  # a [b,m,k] @ w [b,k,n] -> c [b,m,n]

    if dt == "fp64":  # an independent reference: the CPU's BLAS
        def ref() -> Any:
            return torch.matmul(a.cpu(), w.cpu())
    else:
        def ref() -> Any:
            return torch.matmul(a.double(), w.double())

    ctx: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
    if dt in ("fp32", "tf32"):
        ctx = lambda: tf32_matmul(dt == "tf32")  # noqa: E731
    return Prepared(fn, ref, TOLERANCE[dt], ctx=ctx)


def build_scaled_mm(c: Case) -> Prepared:
    """fp8 e4m3 GEMM through torch._scaled_mm, unit scales, bf16 output."""
    p = c.params
    a = randn(p["m"], p["k"], dtype="fp8_e4m3")  # row-major
    b = randn(p["n"], p["k"], dtype="fp8_e4m3").t()  # [k,n] column-major
    sa = torch.ones((), device=DEVICE, dtype=torch.float32)
    sb = torch.ones((), device=DEVICE, dtype=torch.float32)

    def fn() -> Any:
        # a [m,k] e4m3 @ b [k,n] e4m3 -> c [m,n] bf16 (fp32 accumulate)
        return torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    def ref() -> Any:
        return torch.matmul(a.float().double(), b.float().double())

    return Prepared(fn, ref, TOLERANCE["fp8_e4m3"])


def build_int_mm(c: Case) -> Prepared:
    """int8 GEMM through torch._int_mm, int32 output (exact against float64)."""
    p = c.params
    a = randn(p["m"], p["k"], dtype="int8")
    b = randn(p["n"], p["k"], dtype="int8").t()  # [k,n] column-major

    def fn() -> Any:
        return torch._int_mm(a, b)  # a [m,k] int8 @ b [k,n] int8 -> c [m,n] int32

    def ref() -> Any:
        return torch.matmul(a.double(), b.double())

    return Prepared(fn, ref, TOLERANCE["int8"])


def build_linear_bias(c: Case) -> Prepared:
    """F.linear with bias: x [m,k] @ W[n,k]^T + bias[n]."""
    p = c.params
    x, w, bias = randn(p["m"], p["k"]), randn(p["n"], p["k"]), randn(p["n"])

    def fn() -> Any:
        return F.linear(x, w, bias)  # x [m,k] @ W^T [k,n] + bias [n] -> y [m,n]

    def ref() -> Any:
        return torch.matmul(x.double(), w.double().t()) + bias.double()

    return Prepared(fn, ref, TOLERANCE["bf16"])


def build_addmm(c: Case) -> Prepared:
    """torch.addmm(bias, a, b): a [m,k] @ b [k,n] + bias [n]."""
    p = c.params
    a, b, bias = randn(p["m"], p["k"]), randn(p["k"], p["n"]), randn(p["n"])

    def fn() -> Any:
        return torch.addmm(bias, a, b)  # bias [n] + a [m,k] @ b [k,n] -> c [m,n]

    def ref() -> Any:
        return torch.matmul(a.double(), b.double()) + bias.double()

    return Prepared(fn, ref, TOLERANCE["bf16"])


def build_addmm_act(c: Case) -> Prepared:
    """torch._addmm_activation: act(a @ b + bias) with GELU (tanh) or ReLU in the GEMM epilogue."""
    p = c.params
    gelu = p["epilogue"] == "gelu"
    a, b, bias = randn(p["m"], p["k"]), randn(p["k"], p["n"]), randn(p["n"])

    def fn() -> Any:
        return torch._addmm_activation(bias, a, b, use_gelu=gelu)  # act(a [m,k] @ b [k,n] + bias [n]) -> [m,n]

    def ref() -> Any:
        y = torch.matmul(a.double(), b.double()) + bias.double()
        return F.gelu(y, approximate="tanh") if gelu else torch.relu(y)

    return Prepared(fn, ref, TOLERANCE["bf16"])


def build_qkv(c: Case) -> Prepared:
    """QKV projection: fused x @ W[d, q+2kv], or three GEMMs each reading x."""
    p = c.params
    t, d = p["tokens"], p["d_model"]
    q_cols, kv_cols = p["heads"] * p["head_dim"], p["kv_heads"] * p["head_dim"]
    x = randn(t, d)
    if p["fused"]:
        w = randn(d, q_cols + 2 * kv_cols)

        def fn() -> Any:
            return torch.matmul(x, w)  # x [T,d] @ W [d,q+2kv] -> qkv [T,q+2kv]

        def ref() -> Any:
            return torch.matmul(x.double(), w.double())
    else:
        wq, wk, wv = randn(d, q_cols), randn(d, kv_cols), randn(d, kv_cols)

        def fn() -> Any:
            q = torch.matmul(x, wq)  # x [T,d] @ Wq [d,q] -> q [T,q]
            k = torch.matmul(x, wk)  # x [T,d] @ Wk [d,kv] -> k [T,kv]
            v = torch.matmul(x, wv)  # x [T,d] @ Wv [d,kv] -> v [T,kv]
            return q, k, v

        def ref() -> Any:
            xd = x.double()
            return xd @ wq.double(), xd @ wk.double(), xd @ wv.double()

    return Prepared(fn, ref, TOLERANCE["bf16"])


def build_layernorm(c: Case) -> Prepared:
    """F.layer_norm over the last dim, with gamma and beta."""
    p = c.params
    d, dt = p["d_model"], p["dtype"]
    x, w, b = randn(p["tokens"], d, dtype=dt), randn(d, dtype=dt), randn(d, dtype=dt)

    def fn() -> Any:
        return F.layer_norm(x, (d,), w, b, 1e-5)  # x [T,d] -> y [T,d]

    def ref() -> Any:
        return F.layer_norm(x.double(), (d,), w.double(), b.double(), 1e-5)

    return Prepared(fn, ref, TOLERANCE[dt])


def build_rmsnorm(c: Case) -> Prepared:
    """F.rms_norm over the last dim, with gamma (eps given: None would mean finfo(dtype).eps)."""
    p = c.params
    d, dt = p["d_model"], p["dtype"]
    x, w = randn(p["tokens"], d, dtype=dt), randn(d, dtype=dt)

    def fn() -> Any:
        return F.rms_norm(x, (d,), w, 1e-6)  # x [T,d] -> y [T,d]

    def ref() -> Any:
        xd = x.double()
        return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()

    return Prepared(fn, ref, TOLERANCE[dt])


def _lnres_inputs(c: Case) -> tuple[Any, Any, Any, Any, Callable[[], Any]]:
    """x, residual, gamma, beta and the float64 (h, y) reference."""
    p = c.params
    t, d = p["tokens"], p["d_model"]
    x, r, w, b = randn(t, d), randn(t, d), randn(d), randn(d)

    def ref() -> Any:
        h = x.double() + r.double()
        return h, F.layer_norm(h, (d,), w.double(), b.double(), 1e-5)

    return x, r, w, b, ref


def build_lnres_eager(c: Case) -> Prepared:
    """Unfused residual add + LayerNorm: two kernels."""
    x, r, w, b, ref = _lnres_inputs(c)
    return Prepared(lambda: add_layernorm(x, r, w, b), ref, TOLERANCE["bf16"])


def build_lnres_compiled(c: Case) -> Prepared:
    """Fused residual add + LayerNorm via torch.compile (warm-up call compiles this shape)."""
    x, r, w, b, ref = _lnres_inputs(c)
    fn_c = compiled_add_layernorm()
    return Prepared(lambda: fn_c(x, r, w, b), ref, TOLERANCE["bf16"])


def build_softmax(c: Case) -> Prepared:
    """torch.softmax over the last dim."""
    p = c.params
    dt = p["dtype"]
    x = randn(p["rows"], p["cols"], dtype=dt)

    def fn() -> Any:
        return torch.softmax(x, dim=-1)  # x [rows,cols] -> p [rows,cols]

    return Prepared(fn, lambda: torch.softmax(x.double(), dim=-1), TOLERANCE[dt])


def build_add(c: Case) -> Prepared:
    """c = a + b into a preallocated output."""
    p = c.params
    dt = p["dtype"]
    a, b = randn(p["elements"], dtype=dt), randn(p["elements"], dtype=dt)
    out = torch.empty_like(a)
    return Prepared(lambda: torch.add(a, b, out=out), lambda: a.double() + b.double(), TOLERANCE[dt],
                    poison=(out,))


def build_copy(c: Case) -> Prepared:
    """dst.copy_(src), device to device."""
    p = c.params
    src = randn(p["elements"], dtype=p["dtype"])
    dst = torch.empty_like(src)
    return Prepared(lambda: dst.copy_(src), lambda: src.double(), 0.0, poison=(dst,))


def build_gelu(c: Case) -> Prepared:
    """F.gelu (erf form)."""
    p = c.params
    x = randn(p["elements"], dtype=p["dtype"])
    return Prepared(lambda: F.gelu(x), lambda: F.gelu(x.double()), TOLERANCE[p["dtype"]])


def build_silu(c: Case) -> Prepared:
    """F.silu."""
    p = c.params
    x = randn(p["elements"], dtype=p["dtype"])
    return Prepared(lambda: F.silu(x), lambda: F.silu(x.double()), TOLERANCE[p["dtype"]])


def build_embedding(c: Case) -> Prepared:
    """F.embedding: gather T rows of a [vocab, d] table by int64 ids."""
    p = c.params
    table = randn(p["vocab"], p["d_model"], dtype=p["dtype"])
    ids = torch.randint(0, p["vocab"], (p["tokens"],), device=DEVICE, dtype=torch.int64)

    def fn() -> Any:
        return F.embedding(ids, table)  # ids [T] into table [vocab,d] -> y [T,d]

    return Prepared(fn, lambda: table.double()[ids], 0.0)


def _conv_inputs(c: Case) -> tuple[Any, Any, dict[str, Any]]:
    """x [N,C,H,W] and w [K,C/groups,R,S] (random normal) and the conv keyword arguments."""
    p = c.params
    x = randn(p["batch"], p["in_channels"], p["height"], p["width"], dtype=p["dtype"])
    ks = p["kernel"]
    w = randn(p["out_channels"], p["in_channels"] // p["groups"], ks, ks, dtype=p["dtype"])
    kw = {"stride": p["stride"], "padding": p["padding"], "dilation": p.get("dilation", 1), "groups": p["groups"]}
    return x, w, kw


def _conv_reference(x: Any, w: Any, kw: dict[str, Any]) -> Any:
    """float64 conv2d on the device, or on the CPU if the device has no float64 path."""
    try:
        return F.conv2d(x.double(), w.double(), None, **kw)
    except RuntimeError:
        return F.conv2d(x.double().cpu(), w.double().cpu(), None, **kw)


def build_conv(c: Case) -> Prepared:
    """F.conv2d in NHWC (channels_last) or NCHW (contiguous) memory format."""
    x, w, kw = _conv_inputs(c)
    if c.params["layout"] == "nhwc":
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)

    def fn() -> Any:
        return F.conv2d(x, w, None, **kw)  # x [N,C,H,W] * w [K,C/g,R,S] -> y [N,K,Ho,Wo]

    return Prepared(fn, lambda: _conv_reference(x, w, kw), TOLERANCE["bf16"])


def build_conv_im2col(c: Case) -> Prepared:
    """Explicit im2col: F.unfold, then one (batched) GEMM with the flattened weight."""
    x, w, kw = _conv_inputs(c)
    if kw["groups"] != 1:
        raise ValueError("im2col cases need groups=1")
    k, ks = w.shape[0], w.shape[-1]
    w2 = w.reshape(k, -1)  # [K, C*R*S]
    unfold_kw = {"dilation": kw["dilation"], "padding": kw["padding"], "stride": kw["stride"]}

    def fn() -> Any:
        cols = F.unfold(x, ks, **unfold_kw)  # x [N,C,H,W] -> cols [N, C*R*S, L=Ho*Wo]
        return torch.matmul(w2, cols)  # w2 [K, C*R*S] @ cols [N, C*R*S, L] -> y [N, K, L]

    def ref() -> Any:
        y = _conv_reference(x, w, kw)
        return y.reshape(y.shape[0], y.shape[1], -1)

    return Prepared(fn, ref, TOLERANCE["bf16"])


def _attn_inputs(c: Case) -> tuple[Any, Any, Any]:
    """q [b,h,sq,d], k and v [b,kv,skv,d], random normal."""
    p = c.params
    q = randn(p["batch"], p["heads"], p["seq_q"], p["head_dim"])
    k = randn(p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"])
    v = randn(p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"])
    return q, k, v


def _sdpa_fn(q: Any, k: Any, v: Any, causal: bool) -> Callable[[], Any]:
    """The SDPA call; enable_gqa only when kv_heads < heads."""
    if k.shape[1] != q.shape[1]:
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def build_sdpa(c: Case) -> Prepared:
    """One fused attention kernel through SDPA with a forced backend (flash, or cudnn for alt rows)."""
    q, k, v = _attn_inputs(c)
    causal = c.params["causal"]
    # q [b,h,sq,d], k/v [b,kv,skv,d] -> o [b,h,sq,d]
    backend = c.opts.get("backend", "flash")
    return Prepared(_sdpa_fn(q, k, v, causal), lambda: attention_reference(q, k, v, causal), TOLERANCE["bf16"],
                    ctx=lambda: sdpa_backend(backend))


def build_naive_attention(c: Case) -> Prepared:
    """Three kernels (four when causal): S = QK^T, P = softmax(S), O = PV with S and P in bf16."""
    q, k, v = _attn_inputs(c)
    if k.shape[1] != q.shape[1]:
        raise ValueError("naive attention cases are MHA only")
    causal = c.params["causal"]
    qs = q * q.shape[-1] ** -0.5  # pre-scaled outside the timed region
    kt = k.transpose(-1, -2)  # a view: [b,h,d,skv]
    sq, skv = q.shape[-2], k.shape[-2]
    mask = torch.ones(sq, skv, dtype=torch.bool, device=DEVICE).triu(1 + skv - sq) if causal else None

    def fn() -> Any:
        s = torch.matmul(qs, kt)  # qs [b,h,sq,d] @ k^T [b,h,d,skv] -> s [b,h,sq,skv]
        if mask is not None:
            s.masked_fill_(mask, float("-inf"))  # s [b,h,sq,skv] in place (the extra kernel)
        p = torch.softmax(s, dim=-1)  # s -> p [b,h,sq,skv]
        return torch.matmul(p, v)  # p [b,h,sq,skv] @ v [b,h,skv,d] -> o [b,h,sq,d]

    return Prepared(fn, lambda: attention_reference(q, k, v, causal), 2e-2)


def build_decode(c: Case) -> Prepared:
    """One-token attention against a KV cache: the first SDPA backend that runs it."""
    q, k, v = _attn_inputs(c)
    fn = _sdpa_fn(q, k, v, False)  # q [b,h,1,d], k/v [b,kv,skv,d] -> o [b,h,1,d]
    chosen = _first_working_backend(fn, ("flash", "efficient", "cudnn", "math"))
    return Prepared(fn, lambda: attention_reference(q, k, v, False), TOLERANCE["bf16"],
                    ctx=lambda: sdpa_backend(chosen[0]), note=chosen[1])


def _first_working_backend(fn: Callable[[], Any], backends: Sequence[str]) -> tuple[str, str]:
    """(backend, note): the first SDPA backend under which fn runs; the note lists those that refused."""
    errors: list[str] = []
    for backend in backends:
        try:
            with sdpa_backend(backend):
                fn()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - "No available kernel" and friends
            errors.append(f"{backend}: {str(exc).splitlines()[0][:120]}")
            continue
        return backend, f"backend={backend}" + (f" (refused: {'; '.join(errors)})" if errors else "")
    raise RuntimeError("no SDPA backend ran: " + " | ".join(errors))


BUILDERS: dict[str, Callable[[Case], Prepared]] = {
    "matmul": build_matmul, "scaled_mm": build_scaled_mm, "int_mm": build_int_mm,
    "linear_bias": build_linear_bias, "addmm": build_addmm, "addmm_act": build_addmm_act,
    "qkv": build_qkv, "layernorm": build_layernorm, "rmsnorm": build_rmsnorm,
    "lnres_eager": build_lnres_eager, "lnres_compiled": build_lnres_compiled, "softmax": build_softmax,
    "add": build_add, "copy": build_copy, "gelu": build_gelu, "silu": build_silu,
    "embedding": build_embedding, "conv": build_conv, "conv_im2col": build_conv_im2col,
    "sdpa": build_sdpa, "naive_attention": build_naive_attention, "decode": build_decode,
}


# --------------------------------------------------------------------------------------------
# Timing, checking, kernel census
# --------------------------------------------------------------------------------------------


class Bencher:
    """Times a callable with triton.testing.do_bench (or an identical local loop if triton fails)."""

    def __init__(self, warmup_ms: float, rep_ms: float) -> None:
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        self.mode = "unprobed"  # triton-all | triton-quantiles | local
        self.probe_error: str | None = None
        self._flush_buf: Any = None

    def probe(self) -> None:
        """Pick the first timing path that works on a tiny kernel."""
        x = torch.ones(1, device=DEVICE)
        tiny = lambda: x.add_(1.0)  # noqa: E731
        try:
            from triton.testing import do_bench

            r = do_bench(tiny, warmup=1, rep=2, return_mode="all")
            if isinstance(r, list) and r:
                self.mode = "triton-all"
                return
            raise TypeError(f"return_mode='all' gave {type(r).__name__}")
        except Exception as exc:  # noqa: BLE001 - any failure means: try the next path
            self.probe_error = f"{type(exc).__name__}: {exc}"[:300]
        try:
            from triton.testing import do_bench

            r = do_bench(tiny, warmup=1, rep=2, quantiles=[0.5, 0.2, 0.8])
            if isinstance(r, (list, tuple)) and len(r) == 3:
                self.mode = "triton-quantiles"
                return
        except Exception as exc:  # noqa: BLE001
            self.probe_error = (self.probe_error or "") + f" | quantiles: {type(exc).__name__}: {exc}"[:300]
        self.mode = "local"

    def flush_l2(self) -> None:
        """Zero a 256 MB buffer, as do_bench does before each timed call."""
        if self._flush_buf is None:
            self._flush_buf = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device=DEVICE)
        self._flush_buf.zero_()

    def _local_times(self, fn: Callable[[], Any], warmup_ms: float, rep_ms: float) -> list[float]:
        """triton.testing.do_bench's loop, in plain torch: list of per-call milliseconds."""
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            self.flush_l2()
            fn()
        end.record()
        torch.cuda.synchronize()
        est = max(start.elapsed_time(end) / 5, 1e-3)
        n_warmup, n_rep = max(1, int(warmup_ms / est)), max(1, int(rep_ms / est))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        for _ in range(n_warmup):
            fn()
        for i in range(n_rep):
            self.flush_l2()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]

    def estimate_ms(self, fn: Callable[[], Any]) -> float:
        """One event-timed call (after the caller's warm-up)."""
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def __call__(self, fn: Callable[[], Any]) -> dict[str, Any]:
        """Median, 20/80% quantiles (seconds) and sample count of fn's device time."""
        import numpy as np

        est = self.estimate_ms(fn)
        rep = max(self.rep_ms, min(10.0 * est, 2000.0))
        out: dict[str, Any] = {"rep_ms": rep, "n_reps": None, "mean_s": None, "min_s": None}
        if self.mode == "triton-quantiles":
            from triton.testing import do_bench

            med, q20, q80 = do_bench(fn, warmup=self.warmup_ms, rep=rep, quantiles=[0.5, 0.2, 0.8])
            out.update(seconds=med / 1e3, q20=q20 / 1e3, q80=q80 / 1e3)
            return out
        if self.mode == "triton-all":
            from triton.testing import do_bench

            times = list(do_bench(fn, warmup=self.warmup_ms, rep=rep, return_mode="all"))
        else:
            times = self._local_times(fn, self.warmup_ms, rep)
        arr = np.asarray(times, dtype=np.float64) / 1e3
        out.update(seconds=float(np.median(arr)), q20=float(np.quantile(arr, 0.2)), q80=float(np.quantile(arr, 0.8)),
                   n_reps=int(arr.size), mean_s=float(arr.mean()), min_s=float(arr.min()))
        return out


def rel_error(out: Any, ref: Any) -> float:
    """||out - ref|| / ||ref|| in float64 over all outputs; NaN if out has a non-finite value."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    if len(outs) != len(refs):
        raise ValueError(f"{len(outs)} outputs against {len(refs)} references")
    num = den = 0.0
    for o, r in zip(outs, refs, strict=True):
        o64 = o.detach().to(torch.float64)
        r64 = r.detach().to(device=o64.device, dtype=torch.float64)
        if tuple(o64.shape) != tuple(r64.shape):
            raise ValueError(f"output shape {tuple(o64.shape)} != reference shape {tuple(r64.shape)}")
        if not bool(torch.isfinite(o64).all()):
            return float("nan")
        num += float(((o64 - r64) ** 2).sum())
        den += float((r64 ** 2).sum())
    return math.sqrt(num / den) if den > 0 else math.sqrt(num)


def spot_check(prep: Prepared) -> dict[str, Any]:
    """Poison out= buffers, run once, compare with the float64 reference."""
    if prep.ref is None:
        return {"rel_err": None, "tol": None, "pass": None}
    for t in prep.poison:
        t.fill_(float("nan"))
    out = prep.fn()
    torch.cuda.synchronize()
    err = rel_error(out, prep.ref())
    passed = math.isfinite(err) and err <= prep.tol
    return {"rel_err": err if math.isfinite(err) else None, "tol": prep.tol, "pass": passed}


def kernel_census(prep: Prepared, bencher: Bencher) -> dict[str, Any]:
    """Profile one call (cold L2): the device kernels it launched, in order of first launch, with times."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    prep.fn()
    bencher.flush_l2()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        prep.fn()
        torch.cuda.synchronize()
    found: dict[str, list[float]] = {}
    for evt in prof.events():
        if evt.device_type != DeviceType.CUDA:
            continue
        name = evt.name if len(evt.name) <= 200 else evt.name[:197] + "..."
        slot = found.setdefault(name, [0, 0.0])
        slot[0] += 1
        slot[1] += float(evt.time_range.elapsed_us())
    kernels = [{"name": n, "count": int(v[0]), "us": round(v[1], 3)} for n, v in found.items()]
    return {"kernels": kernels, "n_kernels": sum(k["count"] for k in kernels)}


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------


def _sum_of(x: Any) -> Callable[[], Any]:
    """A callable that reduces x to a scalar (reads every byte of x once)."""
    return lambda: x.sum()


def _finite(x: Any) -> Any:
    """JSON-safe value: NaN and inf become None, recursively."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def nvidia_smi(fields: str) -> str | None:
    """One nvidia-smi --query-gpu line, or None if it is not there."""
    try:
        res = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return res.stdout.strip() or res.stderr.strip() or None
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable: {exc}"


def _read_flag(obj: Any, name: str) -> Any:
    """A torch.backends flag as a JSON value, or the error reading it raised."""
    try:
        value = getattr(obj, name)
        return value if isinstance(value, (bool, int, float, str)) or value is None else repr(value)
    except Exception as exc:  # noqa: BLE001
        return f"unreadable: {exc}"


def _short_error(exc: BaseException) -> str:
    """Exception type and the first lines of its message."""
    msg = " ".join(str(exc).split("\n")[:3]).strip()
    return f"{type(exc).__name__}: {msg}"[:600]


class Runner:
    """Runs ceilings, cases and the census under the budget and writes the JSON after each step."""

    def __init__(self, args: argparse.Namespace, cases: list[Case]) -> None:
        self.args = args
        self.cases = cases
        self.deadline = _T0 + args.budget
        self.rows: list[dict[str, Any]] = []
        self.ceilings: dict[str, Any] = {}
        self.meta: dict[str, Any] = {}
        self.skipped: list[str] = []
        self.census_skipped: list[str] = []
        self.bencher = Bencher(args.warmup, args.rep)
        self.log_lines: list[str] = []
        self.fatal: str | None = None

    # -- output -------------------------------------------------------------------------------
    def log(self, line: str) -> None:
        """Print with flush and keep a copy for the .log file."""
        print(line, flush=True)
        self.log_lines.append(line)

    def elapsed(self) -> float:
        """Seconds since the process started."""
        return time.monotonic() - _T0

    def save(self) -> None:
        """Write the JSON (atomically) and the log next to it."""
        self.meta["elapsed_s"] = round(self.elapsed(), 2)
        self.meta["skipped"] = self.skipped
        self.meta["census_skipped"] = self.census_skipped
        self.meta["fatal"] = self.fatal
        doc = {"meta": self.meta, "ceilings": self.ceilings, "cases": self.rows}
        path = self.args.out
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(_finite(doc), fh, indent=1, sort_keys=False)
            fh.write("\n")
        os.replace(tmp, path)
        with open(os.path.splitext(path)[0] + ".log", "w") as fh:
            fh.write("\n".join(self.log_lines) + "\n")

    # -- meta ---------------------------------------------------------------------------------
    def collect_meta(self) -> None:
        """GPU, driver, software stack, method."""
        import numpy as np

        props = torch.cuda.get_device_properties(0)
        try:
            import triton

            triton_version = triton.__version__
        except Exception as exc:  # noqa: BLE001
            triton_version = f"unavailable: {exc}"
        with open(os.path.abspath(__file__), "rb") as fh:
            script_sha = hashlib.sha256(fh.read()).hexdigest()
        self.meta = {
            "gpu_name": torch.cuda.get_device_name(0),
            "nvidia_smi": nvidia_smi("driver_version,name,clocks.max.sm,clocks.sm,clocks.mem"),
            "nvidia_smi_fields": "driver_version,name,clocks.max.sm,clocks.sm,clocks.mem",
            "torch_version": torch.__version__,
            "cuda_version": torch.version.cuda,
            "triton_version": triton_version,
            "cudnn_version": torch.backends.cudnn.version(),
            "numpy_version": np.__version__,
            "python_version": platform.python_version(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "hostname": socket.gethostname(),
            "sm_count": props.multi_processor_count,
            "l2_bytes": getattr(props, "L2_cache_size", None),
            "total_memory_bytes": props.total_memory,
            "compute_capability": f"{props.major}.{props.minor}",
            "method": METHOD.replace("WARMUP", str(self.args.warmup)).replace("REP", str(self.args.rep)),
            "script": "benchmarks/measure_h200.py",
            "script_version": SCRIPT_VERSION,
            "script_sha256": script_sha,
            "args": {k: v for k, v in vars(self.args).items() if k != "dry_run"},
            "flags": {
                "cudnn_benchmark": _read_flag(torch.backends.cudnn, "benchmark"),
                "matmul_allow_tf32_default": _read_flag(torch.backends.cuda.matmul, "allow_tf32"),
                "matmul_allow_bf16_reduced_precision_reduction":
                    _read_flag(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"),
                "matmul_allow_fp16_reduced_precision_reduction":
                    _read_flag(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"),
            },
            "cases_listed": len(self.cases),
        }
        self.log(f"# {self.meta['gpu_name']} | nvidia-smi: {self.meta['nvidia_smi']}")
        self.log(f"# torch {torch.__version__} cuda {torch.version.cuda} triton {triton_version} "
                 f"cudnn {self.meta['cudnn_version']} | {props.multi_processor_count} SMs, "
                 f"L2 {self.meta['l2_bytes']} B, {props.total_memory / 2**30:.1f} GiB")

    # -- ceilings -----------------------------------------------------------------------------
    def _timed(self, fn: Callable[[], Any]) -> dict[str, Any]:
        """Warm once, then bench."""
        fn()
        torch.cuda.synchronize()
        return self.bencher(fn)

    def warm_gpu(self, seconds: float) -> None:
        """Dense bf16 matmuls for a moment so clocks are up before the first ceiling."""
        a = torch.randn(8192, 8192, device=DEVICE, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=DEVICE, dtype=torch.bfloat16)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for _ in range(10):
                torch.matmul(a, b)
            torch.cuda.synchronize()
        del a, b

    def measure_ceilings(self) -> None:
        """Copy and read bandwidth, matmul rate per precision, launch floor (each step guarded)."""
        quick = self.args.quick
        c = self.ceilings
        steps: list[tuple[str, Callable[[], None]]] = [
            ("copy", lambda: self._ceiling_copy((2 ** 27,) if quick else (2 ** 29, 2 ** 31))),
            ("read", lambda: self._ceiling_read((2 ** 26,) if quick else (2 ** 28, 2 ** 30))),
            ("matmul", lambda: self._ceiling_matmul(quick)),
            ("launch", self._ceiling_launch),
        ]
        for name, step in steps:
            if time.monotonic() > self.deadline:
                c.setdefault("errors", {})[name] = "skipped: budget"
                continue
            try:
                step()
            except Exception as exc:  # noqa: BLE001
                c.setdefault("errors", {})[name] = _short_error(exc)
                self.log(f"ceiling {name}: FAILED {_short_error(exc)}")
                self._recover()
            self.save()

    def _ceiling_copy(self, sizes: Sequence[int]) -> None:
        """dst.copy_(src) in bf16 (the copy cases' builder); bandwidth counts bytes read + written."""
        runs = []
        for n in sizes:
            case = Case("elementwise", "copy", {"elements": n, "dtype": "bf16"}, "copy", "dst.copy_(src)")
            st = self._timed(BUILDERS["copy"](case).fn)
            moved = 2 * n * 2
            runs.append({"elements": n, "dtype": "bf16", "bytes_per_tensor": 2 * n, "bytes_moved": moved,
                         **st, "bytes_per_s": moved / st["seconds"]})
            self.log(f"ceiling copy  {2 * n / 1e9:6.2f} GB/tensor: {st['seconds'] * 1e3:8.3f} ms "
                     f"{moved / st['seconds'] / 1e12:6.3f} TB/s (read+write)")
            torch.cuda.empty_cache()
        best = max(runs, key=lambda r: r["bytes_per_s"])
        self.ceilings.update(copy_bandwidth_bytes_per_s=best["bytes_per_s"],
                             copy_bandwidth_bytes_moved=best["bytes_moved"],
                             copy_impl="dst.copy_(src), bf16, bytes read + written", copy_runs=runs)

    def _ceiling_read(self, sizes: Sequence[int]) -> None:
        """x.sum() over fp32; bandwidth counts bytes read."""
        runs = []
        for n in sizes:
            st = self._timed(_sum_of(torch.randn(n, device=DEVICE, dtype=torch.float32)))
            read = 4 * n
            runs.append({"elements": n, "dtype": "fp32", "bytes_read": read, **st,
                         "bytes_per_s": read / st["seconds"]})
            self.log(f"ceiling read  {read / 1e9:6.2f} GB: {st['seconds'] * 1e3:8.3f} ms "
                     f"{read / st['seconds'] / 1e12:6.3f} TB/s")
            torch.cuda.empty_cache()
        best = max(runs, key=lambda r: r["bytes_per_s"])
        self.ceilings.update(read_bandwidth_bytes_per_s=best["bytes_per_s"],
                             read_bandwidth_bytes_read=best["bytes_read"],
                             read_impl="x.sum() over fp32 x (one reduction to a scalar), bytes read", read_runs=runs)

    def _ceiling_matmul(self, quick: bool) -> None:
        """Square matmuls per precision through the same builders as the matmul cases."""
        sizes: dict[str, tuple[int, ...]] = {
            "bf16": (8192, 16384), "fp16": (8192, 16384), "fp8_e4m3": (8192, 16384), "int8": (8192, 16384),
            "tf32": (8192,), "fp32": (8192,), "fp64": (8192,),
        }
        runs: list[dict[str, Any]] = []
        best: dict[str, float] = {}
        self.ceilings["matmul_flops_per_s"] = best
        self.ceilings["matmul_runs"] = runs
        for dt, ns in sizes.items():
            for n in ((4096,) if quick else ns):
                case = _mm(n, n, n, dt)
                try:
                    prep = BUILDERS[case.impl](case)
                    with prep.ctx():
                        st = self._timed(prep.fn)
                    del prep
                except Exception as exc:  # noqa: BLE001
                    runs.append({"dtype": dt, "m": n, "n": n, "k": n, "error": _short_error(exc)})
                    self.log(f"ceiling matmul {dt} {n}: FAILED {_short_error(exc)}")
                    self._recover()
                    continue
                rate = 2.0 * n ** 3 / st["seconds"]
                runs.append({"dtype": dt, "m": n, "n": n, "k": n, "impl_note": case.impl_note, **st,
                             "flops_per_s": rate})
                best[dt] = max(best.get(dt, 0.0), rate)
                self.log(f"ceiling matmul {dt:8s} {n:5d}^3: {st['seconds'] * 1e3:8.3f} ms {rate / 1e12:7.1f} T(FL)OP/s")
                torch.cuda.empty_cache()

    def _ceiling_launch(self) -> None:
        """A 1-element add: do_bench (one launch), 1000 back-to-back launches, and a 100-launch CUDA graph."""
        a, b = torch.randn(1, device=DEVICE), torch.randn(1, device=DEVICE)
        out = torch.empty_like(a)
        tiny = lambda: torch.add(a, b, out=out)  # noqa: E731
        st = self._timed(tiny)
        # eager loop: the host's launch rate sets the pace
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        loop = []
        for _ in range(5):
            s.record()
            for _ in range(1000):
                tiny()
            e.record()
            e.synchronize()
            loop.append(s.elapsed_time(e) / 1000 / 1e3)
        # graph: 100 launches captured once, replayed
        graph_s: float | None = None
        graph_err: str | None = None
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    tiny()
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(100):
                    torch.add(a, b, out=out)
            g.replay()
            torch.cuda.synchronize()
            gst = self.bencher(g.replay)
            graph_s = gst["seconds"] / 100
        except Exception as exc:  # noqa: BLE001
            graph_err = _short_error(exc)
        self.ceilings.update(
            launch_floor_s=st["seconds"], launch_floor_q20_s=st["q20"], launch_floor_q80_s=st["q80"],
            launch_floor_impl="do_bench of torch.add(a, b, out=c) on 1-element fp32 tensors "
                              "(one launch between events)",
            launch_floor_eager_loop_s=statistics.median(loop),
            launch_floor_eager_loop_impl="1000 back-to-back eager launches of the same add, event-timed, "
                                         "/ 1000 (median of 5)",
            launch_floor_graph_s=graph_s,
            launch_floor_graph_impl="CUDA graph of 100 captured adds, do_bench of g.replay() / 100",
        )
        if graph_err:
            self.ceilings["launch_floor_graph_error"] = graph_err
        self.log(f"ceiling launch floor: do_bench {st['seconds'] * 1e6:6.2f} us, eager loop "
                 f"{statistics.median(loop) * 1e6:6.2f} us/launch, graph "
                 f"{'n/a' if graph_s is None else f'{graph_s * 1e6:6.2f}'} us/kernel")

    # -- cases --------------------------------------------------------------------------------
    def _recover(self) -> None:
        """After a failure: free memory; a sticky CUDA error ends the run."""
        gc.collect()
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception as exc:  # noqa: BLE001
            self.fatal = f"CUDA context unusable after a failure: {_short_error(exc)}"

    def run_case(self, c: Case) -> dict[str, Any]:
        """Build, check (if marked), time; every failure becomes the row's error."""
        row: dict[str, Any] = {
            "id": c.id, "family": c.family, "op": c.op, "params": dict(c.params), "impl_note": c.impl_note,
            "seconds": None, "q20": None, "q80": None, "ok": False, "error": None,
            "extra_kernels": c.extra_kernels, "tier": c.tier, "primary": c.primary,
            "n_reps": None, "rep_ms": None, "mean_s": None, "min_s": None, "check": None,
            "kernels": None, "n_kernels": None,
        }
        t_start = time.monotonic()
        prep: Prepared | None = None
        try:
            prep = BUILDERS[c.impl](c)
            if prep.note:
                row["impl_note"] = f"{c.impl_note}; {prep.note}"
            with prep.ctx():
                if c.check:
                    row["check"] = spot_check(prep)
                else:
                    prep.fn()
                    torch.cuda.synchronize()
                stats = self.bencher(prep.fn)
            row.update(stats)
            row["ok"] = True
            if row["check"] is not None and row["check"]["pass"] is False:
                row["ok"] = False
                row["error"] = f"spot check failed: rel_err={row['check']['rel_err']} > tol={row['check']['tol']}"
        except Exception as exc:  # noqa: BLE001 - OOM, unsupported shape, missing backend...
            row["error"] = _short_error(exc)
            prep = None
            self._recover()
        finally:
            del prep
        row["wall_s"] = round(time.monotonic() - t_start, 3)
        return row

    def _progress(self, i: int, n: int, c: Case, row: dict[str, Any]) -> None:
        """One line per case: time, rough achieved rates, check."""
        head = f"[{i:3d}/{n}] {self.elapsed():6.1f}s {c.id[:86]:<86}"
        if row["seconds"] is None:
            self.log(f"{head} ERROR {row['error']}")
            return
        flops, byt, _ = rough_cost(c)
        t = row["seconds"]
        rates = f"~{flops / t / 1e12:7.1f} TF/s ~{byt / t / 1e12:5.2f} TB/s"
        chk = ""
        if row["check"] is not None:
            err = row["check"]["rel_err"]
            verdict = "PASS" if row["check"]["pass"] else "FAIL"
            chk = f" check {verdict} (rel err {'nan' if err is None else f'{err:.1e}'})"
        self.log(f"{head} {t * 1e6:11.2f} us {rates}{chk}" + ("" if row["ok"] else f" NOT OK: {row['error']}"))

    def run_cases(self) -> None:
        """Every selected case in run order, while the budget lasts."""
        ordered = run_order(self.cases)
        n = len(ordered)
        compiled_once = False
        for i, c in enumerate(ordered, 1):
            if self.fatal:
                self.skipped.append(c.id)
                continue
            est = estimate_seconds(c, self.args.warmup, self.args.rep, census=False)
            if c.compiles and not compiled_once:
                est += 20.0  # the first torch.compile imports and warms Inductor
            if c.compiles and self.args.no_compile:
                self.skipped.append(c.id)
                continue
            if time.monotonic() + est > self.deadline:
                self.skipped.append(c.id)
                continue
            row = self.run_case(c)
            compiled_once = compiled_once or c.compiles
            self.rows.append(row)
            self._progress(i, n, c, row)
            if i % 25 == 0 or torch.cuda.memory_reserved() > 32 * 2 ** 30:
                gc.collect()
                torch.cuda.empty_cache()
            self.save()
        if self.skipped:
            self.log(f"skipped {len(self.skipped)} cases (budget, --no-compile or a fatal error): "
                     + ", ".join(self.skipped))

    def run_census(self) -> None:
        """Kernel census of the measured cases, most important first, while the budget lasts."""
        by_id = {c.id: c for c in self.cases}
        todo = [r for r in self.rows if r["seconds"] is not None]
        self.log(f"# kernel census of {len(todo)} cases")
        for row in todo:
            c = by_id[row["id"]]
            if self.fatal or time.monotonic() + 0.5 + (5.0 if c.compiles else 0.0) > self.deadline:
                self.census_skipped.append(c.id)
                continue
            prep: Prepared | None = None
            try:
                prep = BUILDERS[c.impl](c)
                with prep.ctx():
                    row.update(kernel_census(prep, self.bencher))
            except Exception as exc:  # noqa: BLE001
                row["census_error"] = _short_error(exc)
                prep = None
                self._recover()
            finally:
                del prep
        if self.census_skipped:
            self.log(f"census skipped for {len(self.census_skipped)} cases (budget)")
        self.save()

    # -- summary ------------------------------------------------------------------------------
    def summary(self) -> None:
        """Per-family counts and checks, then the ceilings."""
        listed: dict[str, int] = {}
        for case in self.cases:
            listed[case.family] = listed.get(case.family, 0) + 1
        skipped = set(self.skipped)
        self.log("")
        self.log(f"{'family':<20}{'listed':>7}{'ran':>6}{'ok':>6}{'fail':>6}{'skip':>6}  checks  kernels(median)")
        checks_meta: dict[str, dict[str, int]] = {}
        for fam in FAMILIES:
            if fam not in listed:
                continue
            rows = [r for r in self.rows if r["family"] == fam]
            ok = sum(1 for r in rows if r["ok"])
            chk = [r["check"]["pass"] for r in rows if r["check"] is not None]
            checks_meta[fam] = {"pass": sum(1 for x in chk if x), "total": len(chk)}
            nk = [r["n_kernels"] for r in rows if r.get("n_kernels") is not None]
            nk_s = f"{statistics.median(nk):.0f}" if nk else "-"
            n_skip = sum(1 for case in self.cases if case.family == fam and case.id in skipped)
            self.log(f"{fam:<20}{listed[fam]:>7}{len(rows):>6}{ok:>6}{len(rows) - ok:>6}{n_skip:>6}"
                     f"  {checks_meta[fam]['pass']}/{checks_meta[fam]['total']:<5}  {nk_s}")
        self.meta["checks"] = checks_meta
        self.meta["counts"] = {
            "listed": len(self.cases), "ran": len(self.rows), "ok": sum(1 for r in self.rows if r["ok"]),
            "failed": sum(1 for r in self.rows if not r["ok"]), "skipped": len(self.skipped),
        }
        c: dict[str, Any] = self.ceilings
        if c:
            self.log("")
            if "copy_bandwidth_bytes_per_s" in c:
                self.log(f"copy bandwidth  {c['copy_bandwidth_bytes_per_s'] / 1e12:7.3f} TB/s (read+write, "
                         f"{c['copy_bandwidth_bytes_moved'] / 1e9:.1f} GB moved)")
            if "read_bandwidth_bytes_per_s" in c:
                self.log(f"read bandwidth  {c['read_bandwidth_bytes_per_s'] / 1e12:7.3f} TB/s "
                         f"({c['read_bandwidth_bytes_read'] / 1e9:.1f} GB read)")
            for dt, v in c.get("matmul_flops_per_s", {}).items():
                self.log(f"matmul {dt:<9}{v / 1e12:9.1f} T(FL)OP/s")
            if "launch_floor_s" in c:
                g = c.get("launch_floor_graph_s")
                self.log(f"launch floor    {c['launch_floor_s'] * 1e6:7.2f} us (do_bench), "
                         f"{c['launch_floor_eager_loop_s'] * 1e6:.2f} us (eager loop), "
                         f"{'n/a' if g is None else f'{g * 1e6:.2f}'} us (graph)")
        self.log(f"elapsed {self.elapsed():.1f} s of budget {self.args.budget:.0f} s; output {self.args.out}")

    # -- main ---------------------------------------------------------------------------------
    def run(self) -> int:
        """All phases; the JSON is valid after every step."""
        torch.manual_seed(self.args.seed)
        torch.backends.cudnn.benchmark = True
        with contextlib.suppress(Exception):  # the default already; set so a stray env setting can't leak in
            torch.backends.cuda.matmul.allow_tf32 = False
        self.collect_meta()
        self.bencher.probe()
        self.meta["timer"] = self.bencher.mode
        self.meta["timer_probe_error"] = self.bencher.probe_error
        probe_note = f" ({self.bencher.probe_error})" if self.bencher.probe_error else ""
        self.log(f"# timer: {self.bencher.mode}{probe_note}")
        self.save()
        with torch.inference_mode():
            if self.args.ceilings:
                self.warm_gpu(0.3 if self.args.quick else 1.0)
                self.measure_ceilings()
            self.run_cases()
            if not self.args.no_census:
                self.run_census()
        self.meta["nvidia_smi_end"] = nvidia_smi("driver_version,name,clocks.max.sm,clocks.sm,clocks.mem")
        self.meta["nvidia_smi_end_power"] = nvidia_smi("power.draw,power.limit,temperature.gpu")
        self.summary()
        self.save()
        return 0 if not self.fatal else 3


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    default_out = os.path.join(os.environ.get("OUT", "."), "h200_measurements.json")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=default_out, help="output JSON (default: $OUT/h200_measurements.json)")
    ap.add_argument("--budget", type=float, default=480.0, help="seconds since start for all phases (default 480)")
    ap.add_argument("--only", default="", help="comma-separated families to run; add 'ceilings' to keep the "
                    f"ceilings (families: {', '.join(FAMILIES)})")
    ap.add_argument("--dry-run", action="store_true", help="print the case list, counts and a time estimate; no torch")
    ap.add_argument("--quick", action="store_true", help="smoke test: checked cases + one per family, short timing")
    ap.add_argument("--no-census", action="store_true", help="skip the profiler pass that names the kernels")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile'd (fused) cases")
    ap.add_argument("--warmup", type=float, default=None, help="do_bench warmup in ms (default 25; --quick 5)")
    ap.add_argument("--rep", type=float, default=None, help="do_bench rep in ms (default 100; --quick 20)")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed")
    args = ap.parse_args(argv)
    args.warmup = args.warmup if args.warmup is not None else (5.0 if args.quick else 25.0)
    args.rep = args.rep if args.rep is not None else (20.0 if args.quick else 100.0)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in FAMILIES and s != "ceilings"]
    if unknown:
        ap.error(f"--only: unknown family {', '.join(unknown)}; expected some of ceilings, {', '.join(FAMILIES)}")
    args.only = only
    args.ceilings = not only or "ceilings" in only
    return args


def select_cases(args: argparse.Namespace) -> list[Case]:
    """The registry filtered by --only and --quick."""
    cases = all_cases()
    if args.only:
        cases = [c for c in cases if c.family in args.only]
    if args.quick:
        cases = quick_subset(cases)
    return cases


def dry_run(cases: list[Case], args: argparse.Namespace) -> None:
    """Print the run order with estimates, counts per family and the estimated device time."""
    ordered = run_order(cases)
    census = not args.no_census
    total = 0.0
    print(f"{'#':>4} tier {'est s':>6}  id")
    for i, c in enumerate(ordered, 1):
        est = estimate_seconds(c, args.warmup, args.rep, census)
        total += est
        flags = ("C" if c.check else " ") + ("*" if c.compiles else " ")
        print(f"{i:4d}  t{c.tier}  {est:6.2f} {flags} {c.id}")
    print("\n(C = spot-checked against float64, * = torch.compile)\n")
    print(f"{'family':<20}{'cases':>6}{'t0':>5}{'t1':>5}{'t2':>5}{'checks':>8}{'est s':>8}")
    for fam in FAMILIES:
        fc = [c for c in cases if c.family == fam]
        if not fc:
            continue
        est = sum(estimate_seconds(c, args.warmup, args.rep, census) for c in fc)
        tiers = [sum(1 for c in fc if c.tier == t) for t in (0, 1, 2)]
        print(f"{fam:<20}{len(fc):>6}{tiers[0]:>5}{tiers[1]:>5}{tiers[2]:>5}{sum(c.check for c in fc):>8}{est:>8.1f}")
    fixed = 25.0 + (12.0 if args.ceilings else 0.0) + (20.0 if any(c.compiles for c in cases) else 0.0)
    fixed += 5.0 if census else 0.0
    print(f"{'total':<20}{len(cases):>6}{'':>23}{total:>8.1f}")
    print(f"\nestimated device time: {total:.0f} s for the cases + ~{fixed:.0f} s fixed (torch import, CUDA "
          f"init, warm-up, and as selected ceilings, first torch.compile, profiler init) = ~{total + fixed:.0f} s "
          f"(budget {args.budget:.0f} s; estimate from datasheet rates at {_ROUGH_EFF:.0%} efficiency)")
    print(f"ceilings: {'yes' if args.ceilings else 'no'}; census: {'yes' if census else 'no'}; "
          f"do_bench warmup {args.warmup:g} ms, rep {args.rep:g} ms")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(argv)
    cases = select_cases(args)
    if args.dry_run:
        dry_run(cases, args)
        return 0
    load_torch()
    if not torch.cuda.is_available():
        print("no CUDA device: run this on the H200 (or use --dry-run)", file=sys.stderr)
        return 2

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    runner = Runner(args, cases)
    try:
        return runner.run()
    except BaseException as exc:  # noqa: BLE001 - keep what was measured
        runner.fatal = runner.fatal or _short_error(exc)
        runner.log(f"ABORTED: {runner.fatal}")
        try:
            runner.save()
        except Exception:  # noqa: BLE001
            pass
        raise


if __name__ == "__main__":
    sys.exit(main())
