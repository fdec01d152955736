"""The torch builders (a case as random device tensors and the callable to time) and the float64 spot checks."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from .cases import TOLERANCE, Case

torch: Any = None  # set by runner.load_torch()
F: Any = None  # torch.nn.functional, set by runner.load_torch()
DEVICE = "cuda"  # where every tensor is made


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
    """dst.copy_(src), device to device; with ``out_dtype``, dst in that precision (a cast)."""
    p = c.params
    src = randn(p["elements"], dtype=p["dtype"])
    out = p.get("out_dtype")
    dst = torch.empty_like(src) if out is None else torch.empty(p["elements"], dtype=randn(1, dtype=out).dtype,
                                                                 device=src.device)
    return Prepared(lambda: dst.copy_(src), lambda: src.double(), 0.0 if out is None else 1e-2, poison=(dst,))


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
    """q [b,h,sq,d], k and v [b,kv,skv,d], random normal, in the case's dtype.

    NB: before 2026-11-30T20:40Z every attention case ran in bf16 whatever its dtype (the sampled
    fp16 attention and decode cases of the seed-2026 and seed-2027 files are bf16 runs: flash
    attention runs both at one speed).
    """
    p = c.params
    dt = p.get("dtype", "bf16")
    q = randn(p["batch"], p["heads"], p["seq_q"], p["head_dim"], dtype=dt)
    k = randn(p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"], dtype=dt)
    v = randn(p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"], dtype=dt)
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


def build_sdpa_default(c: Case) -> Prepared:
    """SDPA as users call it: no backend forced, so PyTorch picks (the kernel census records which ran)."""
    q, k, v = _attn_inputs(c)
    causal = c.params["causal"]
    # q [b,h,sq,d], k/v [b,kv,skv,d] -> o [b,h,sq,d]
    return Prepared(_sdpa_fn(q, k, v, causal), lambda: attention_reference(q, k, v, causal), TOLERANCE["bf16"])


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
    "sdpa": build_sdpa, "sdpa_default": build_sdpa_default, "naive_attention": build_naive_attention,
    "decode": build_decode,
}

# --------------------------------------------------------------------------------------------
# Spot checks against the float64 reference
# --------------------------------------------------------------------------------------------


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

