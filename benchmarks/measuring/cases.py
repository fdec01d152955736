"""The case catalogue (no torch): cases, families, tiers, run order, dtypes, tolerances, params, dry-run estimates."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

FAMILIES: tuple[str, ...] = (
    "matmul", "bmm", "qkv", "layernorm", "rmsnorm", "layernorm_residual",
    "softmax", "elementwise", "embedding", "conv2d", "attention", "decode",
)
#: within a tier, families run in this order (the ones the predictor leans on most first)
RUN_ORDER: tuple[str, ...] = (
    "sdpa", "matmul", "attention", "decode", "conv2d", "elementwise", "layernorm", "rmsnorm",
    "softmax", "qkv", "layernorm_residual", "embedding", "bmm", "cast",
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
ROUGH_PEAK: dict[str, float] = {
    "fp64": 67e12, "fp32": 67e12, "tf32": 494e12, "bf16": 989e12, "fp16": 989e12,
    "fp8_e4m3": 1979e12, "int8": 1979e12,
}
ROUGH_BW = 4.8e12
ROUGH_EFF = 0.7  # achievable fraction of either peak, for the estimate only


# --------------------------------------------------------------------------------------------
# The case registry
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Case:
    """One measured workload: the solkit op and kwargs that model it, and how torch runs it."""

    family: str
    op: str  # solkit.ops function name
    params: dict[str, Any]  # the exact solkit kwargs
    impl: str  # key into builders.BUILDERS
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


def mm_case(
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
        yield mm_case(s, s, s, tier=0 if s in (1024, 4096, 8192) else 1, check=s == 1024)
    # decode-time GEMV and skinny GEMMs: x [m,k] @ W [k,n] -> [m,n]
    for m, n, k in ((1, 4096, 4096), (1, 14336, 4096), (1, 4096, 14336), (1, 128256, 4096),
                    (8, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096)):
        yield mm_case(m, n, k, tier=0 if (m, n, k) == (1, 4096, 4096) else 1)
    # Llama-3-8B, T tokens: o_proj d->d, gate+up d->2*ffn, down ffn->d, lm_head d->vocab
    for t in (512, 2048, 8192):
        for n, k in ((4096, 4096), (2 * 14336, 4096), (4096, 14336), (128256, 4096)):
            yield mm_case(t, n, k, tier=0 if (t, n, k) == (2048, 4096, 14336) else 1)
    # BERT-base, T tokens: attention out d->d, ffn d->4d and 4d->d, MLM head d->vocab
    for t in (512, 4096, 16384):
        for n, k in ((768, 768), (3072, 768), (768, 3072), (30522, 768)):
            yield mm_case(t, n, k, tier=0 if (t, n) == (4096, 3072) else 1)
    # odd sizes: not multiples of 8, or one past a tile
    for m, n, k in ((4095, 4096, 4096), (4096, 4096, 1000), (2048, 50257, 768), (1000, 1000, 1000),
                    (4097, 4097, 4097), (8192, 8192, 1000)):
        yield mm_case(m, n, k)
    # extreme aspect ratios: small K, large K (split-K territory), small N
    for m, n, k in ((8192, 8192, 128), (128, 128, 65536), (1024, 1024, 65536), (65536, 128, 4096)):
        yield mm_case(m, n, k, tier=2)
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
        yield mm_case(1024, 1024, 1024, dt, tier=0, check=True)
        for (m, n, k), tier in shapes:
            yield mm_case(m, n, k, dt, tier=tier)
    # bias and fused epilogues (cuBLASLt)
    yield mm_case(1024, 1024, 1024, impl="linear_bias", bias=True, tier=0, check=True)
    yield mm_case(4096, 4096, 4096, impl="linear_bias", bias=True)
    yield mm_case(4096, 14336, 4096, impl="linear_bias", bias=True)
    yield mm_case(4096, 4096, 4096, impl="addmm", bias=True, variant="addmm")
    yield mm_case(1024, 1024, 1024, impl="addmm_act", bias=True, epilogue="gelu", tier=0, check=True)
    yield mm_case(4096, 14336, 4096, impl="addmm_act", bias=True, epilogue="gelu")
    yield mm_case(4096, 14336, 4096, impl="addmm_act", bias=True, epilogue="relu", tier=2)


def bmm_cases() -> Iterator[Case]:
    """Batched matmuls (batch > 1): attention-like products and plain batched cubes."""
    yield mm_case(512, 512, 512, batch=16, tier=0, check=True)
    yield mm_case(2048, 2048, 2048, batch=8, tier=0)
    for b, m, n, k in ((64, 512, 512, 64), (64, 512, 64, 512), (384, 128, 128, 64),
                       (32, 4096, 4096, 128), (32, 4096, 128, 4096), (4, 4096, 4096, 4096), (256, 1, 4096, 128)):
        yield mm_case(m, n, k, batch=b)
    yield mm_case(2048, 2048, 2048, "fp16", batch=8, tier=2)
    yield mm_case(1024, 1024, 1024, "fp32", batch=8, tier=2)


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
    if family == "sdpa":
        builder = "sdpa_default"
        note = (f"F.scaled_dot_product_attention(q, k, v, is_causal={causal}{', enable_gqa=True' if gqa else ''}) "
                f"with PyTorch's own backend choice (no sdpa_kernel context); layout [b,h,s,d]")
    elif family == "decode":
        builder = "decode"
        note = (f"F.scaled_dot_product_attention(q[b,h,1,d], k, v [b,kv,skv,d], is_causal=False"
                f"{', enable_gqa=True' if gqa else ''}); first backend that runs of flash, efficient, cudnn, math")
    elif impl == "efficient":
        builder = "sdpa"
        backend = "efficient"
        note = (f"F.scaled_dot_product_attention(q, k, v, is_causal={causal}) under "
                f"sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION); layout [b,h,s,d]")
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
    return max(5e-6, flops / (ROUGH_PEAK[dt] * ROUGH_EFF), byt / (ROUGH_BW * ROUGH_EFF))


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

