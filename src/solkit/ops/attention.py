"""Scaled dot-product attention: flash (one fused kernel) or naive (two GEMMs and a softmax).

Q, O are [b, h, sq, d]; K, V are [b, kv, skv, d] (kv = kv_heads; GQA/MQA when kv < h).
Pairs of (query, key) that count: sq*skv; causal (bottom-right aligned, query i sees keys
j <= i + skv - sq) counts sq*skv - sq*(sq - 1)/2 when sq <= skv, and skv*(skv + 1)/2 when
sq > skv (the first sq - skv queries see no key).
Model FLOPs: 4*b*h*d*pairs (QK^T and PV, 2 per multiply-add); the softmax is not counted.
Varlen (FlashAttention's ``flash_attn_varlen_func``: ``seq_lens``, ``seq_lens_kv``): sequence i has q_i queries and
k_i keys; its pairs are counted as above with (sq, skv) = (q_i, k_i), and summed: 4*h*d*sum pairs_i.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._num import all_, any_, where
from .._validate import checked_call, broadcast, dim, flag
from ..errors import OptionError, ShapeError
from ..workload import Gemm, Kernel, Rows, Workload
from ..stacks.torch211 import EFFICIENT_KERNELS, EFFICIENT_WARPS_PER_SM, SDPA_HALF
from ._common import at_most, divisible, element_bytes, single
from .elementwise import FLOPS_PER_ELEMENT
from .registry import boolean, lengths, operator, option, precision, size

__all__ = ["attention", "attention_pairs", "IMPLS"]

IMPLS = ("flash", "naive", "cudnn", "efficient", "sdpa")
#: the fused kernel each fused impl runs (its calibration key); "sdpa" in half precision is resolved by ``predict``
FUSED_OPS = {"flash": "flash_attention", "cudnn": "cudnn_attention", "efficient": "efficient_attention",
             "sdpa": "sdpa_attention"}

#: flash attention's backward executes five matrix products for the forward's two
FLASH_BACKWARD_EXECUTED = 2.5


def _pairs(sq: Any, skv: Any, causal: bool) -> Any:
    """Unmasked (query, key) pairs per head from validated values."""
    if not causal:
        return sq * skv
    return where(sq <= skv, sq * skv - sq * (sq - 1) / 2, skv * (skv + 1) / 2)  # pragma: no mutate (< and <= agree at sq = skv)


@checked_call
def attention_pairs(seq_q: Any, seq_kv: Any, causal: bool = False) -> Any:
    """Unmasked (query, key) pairs per head: sq*skv, or the bottom-right causal count."""
    sq, skv = dim("seq_q", seq_q), dim("seq_kv", seq_kv)
    broadcast(seq_q=sq, seq_kv=skv)
    return _pairs(sq, skv, flag("causal", causal))


def _check_heads(args: dict[str, Any]) -> None:
    """kv_heads divides heads (and so is at most heads); a varlen call's lengths fit its batch and declared lengths."""
    if args["kv_heads"] is not None:
        at_most("kv_heads", args["kv_heads"], "heads", args["heads"])
        divisible("heads", args["heads"], "kv_heads", args["kv_heads"])
    if args["seq_lens"] is None and args["seq_lens_kv"] is None:
        return
    named = ("seq_lens" if args["seq_lens"] is not None else "seq_lens_kv")
    for dim_name in ("batch", "heads", "seq_q", "seq_kv", "head_dim", "kv_heads"):
        if isinstance(args[dim_name], np.ndarray):
            raise ShapeError(f"{named} takes one shape: {dim_name} must be one value, got an array of shape "
                             f"{args[dim_name].shape} (call once per shape)")
    limits = (("seq_lens", "seq_q", args["seq_q"]),
              ("seq_lens_kv", "seq_kv" if args["seq_kv"] is not None else "seq_q",
               args["seq_q"] if args["seq_kv"] is None else args["seq_kv"]))
    for name, limit_name, limit in limits:
        lens = args[name]
        if lens is None:
            continue
        if len(lens) != args["batch"]:
            raise ShapeError(f"{name} must hold one length per sequence (batch={args['batch']:g}), got {len(lens)} "
                             f"lengths")
        over = [i for i, n in enumerate(lens) if n > limit]
        if over:
            raise ShapeError(f"{name} must be at most {limit_name} ({limit:g}, the longest sequence declared), got "
                             f"{lens[over[0]]:g} at index {over[0]}")


def _varlen(b: Any, sq: Any, skv: Any, seq_lens: Any, seq_lens_kv: Any) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """(queries, keys) per sequence of a varlen call, None for a padded one: ``seq_lens`` (else sq each) and
    ``seq_lens_kv`` (else ``seq_lens`` when seq_kv is None, self-attention, else skv each)."""
    if seq_lens is None and seq_lens_kv is None:
        return None
    q = np.full(int(b), sq) if seq_lens is None else np.asarray(seq_lens, dtype=float)
    if seq_lens_kv is not None:
        k = np.asarray(seq_lens_kv, dtype=float)
    else:
        k = q if skv is None else np.full(int(b), skv)
    return q, k


class _Sizes:
    """Elements of Q (and O), of K (and V), of S (and P), the pairs and the model FLOPs of a validated call.

    Varlen (``lens``: queries and keys per sequence): Q, O hold h*sum(q_i)*d elements, K, V kv*sum(k_i)*d, the
    model FLOPs are 4*h*d*sum(pairs_i); ``pairs`` is then the mean per sequence (b*pairs = sum pairs_i).
    """

    def __init__(self, b: Any, h: Any, sq: Any, skv: Any, d: Any, kv: Any, causal: bool,
                 lens: Optional[tuple[np.ndarray, np.ndarray]] = None) -> None:
        self.kv = h if kv is None else kv
        self.skv = sq if skv is None else skv
        self.lens = lens
        if lens is not None:
            q, k = lens
            self.skv = float(k.max())  # the longest sequence's keys (the padded kernel's extent)
            self.q = h * float(q.sum()) * d  # Q [sum q_i, h, d], also O
            self.k = self.kv * float(k.sum()) * d  # K [sum k_i, kv, d], also V
            self.s = h * float(np.sum(q * k))  # S per sequence [h, q_i, k_i], also P
            total = float(np.sum(_pairs(q, k, causal)))
            self.pairs = total / b
            self.model = 4.0 * h * d * total  # QK^T and PV over each sequence's unmasked pairs
            return
        self.q = b * h * sq * d  # Q [b,h,sq,d], also O
        self.k = b * self.kv * self.skv * d  # K [b,kv,skv,d], also V
        self.s = b * h * sq * self.skv  # S [b,h,sq,skv], also P
        self.pairs = _pairs(sq, self.skv, causal)
        self.model = 4.0 * b * h * d * self.pairs  # QK^T and PV over the unmasked pairs


#: the precisions PyTorch's memory-efficient kernel takes (mem_eff_attention/kernels/cutlassF.h: f32, f16, bf16), as
#: ``stacks.torch211.EFFICIENT_WARPS_PER_SM`` lists them
EFFICIENT_PRECISIONS = tuple(EFFICIENT_WARPS_PER_SM)


def _fused_only(resolved: str, impl: str, z: _Sizes, dtype: Any = None, head_dim: Any = None) -> str:
    """``resolved``, unless a varlen call resolves to the unfused path (which has no varlen form) or the memory-efficient
    kernel is asked for a precision it has no kernel for: an OptionError."""
    if resolved == "efficient" and dtype is not None and dtype not in EFFICIENT_PRECISIONS:
        raise OptionError(f"impl={impl!r} runs the memory-efficient kernel, which PyTorch builds for dtype "
                          f"{', '.join(map(repr, EFFICIENT_PRECISIONS))}; got dtype={dtype!r}")
    if resolved == "efficient" and head_dim is not None and np.any(np.asarray(head_dim) > EFFICIENT_KERNELS[-1][0]):
        raise OptionError(f"impl={impl!r} runs the memory-efficient kernel, which PyTorch builds for head_dim up to "
                          f"{EFFICIENT_KERNELS[-1][0]:.0f}; got head_dim={head_dim!r}")
    if z.lens is not None and resolved not in FUSED_OPS:
        raise OptionError(f"seq_lens needs a fused attention kernel (impl 'flash', 'cudnn', 'efficient', or 'sdpa' in "
                          f"fp16/bf16): FlashAttention's varlen form; impl={impl!r} runs the unfused {resolved} path")
    return resolved


def _sdpa_choice(impl: str, z: _Sizes, h: Any, dtype: Any) -> str:
    """The impl an SDPA call runs, where it does not depend on the GPU: fp32 MHA efficient, fp32 GQA naive (math)."""
    if impl != "sdpa" or dtype in SDPA_HALF:
        return impl
    if dtype not in EFFICIENT_PRECISIONS:  # fp64, tf32, fp8, int8: no fused kernel takes them, the math path runs
        return "naive"
    gqa = z.kv < h
    if any_(gqa) and not all_(gqa):
        raise OptionError(f"impl='sdpa' with dtype={dtype!r} runs the efficient kernel without GQA and the unfused math "
                          f"path with it; this sweep mixes both (kv_heads < heads in some entries): call once per kind")
    return "naive" if all_(gqa) else "efficient"


def _flash_kernel(name: str, z: _Sizes, b: Any, h: Any, sq: Any, d: Any, dtype: str, e: float,
                  impl: str = "flash", e_kv: Any = None) -> Kernel:
    # per head, its queries as rows: [sq, d] x [d, skv]; a one-query decode packs the h/kv query heads that share a KV
    # head as rows, [h/kv, d] x [d, skv] (flash_api.cpp's seqlenq_ngroups_swapped, for seqlen_q == 1 only; the
    # memory-efficient kernel runs a block per (query block, head, sequence): NB it packs the heads of a one-query
    # MQA whose K and V are expanded views, not modelled)
    group = 1.0 if impl == "efficient" else where(sq == 1, h / z.kv, 1.0)
    kv_bytes = e if e_kv is None else e_kv  # K and V as the cache stores them (an fp8 KV cache: 1 byte)
    rows, groups, split = sq * group, None, True
    if z.lens is not None:  # varlen: each sequence's (queries, keys, d), its query heads packed as in the padded call
        groups = tuple((float(qi * group), float(ki), float(d)) for qi, ki in zip(*z.lens))
        rows = max(m for m, _, _ in groups)  # the longest sequence's (Gemm.m, n: the largest of the groups)
        # mha_varlen_fwd splits the keys only where it packs a decode's query heads (one query, GQA)
        split = bool(sq == 1 and group > 1)
    return Kernel(name, "attention", dtype, matrix_flops=z.model, bytes_read=z.q * e + 2 * z.k * kv_bytes,
                  bytes_written=z.q * e,
                  gemm=Gemm(rows, z.skv, d, b * h / group, groups=groups, split=split), op=FUSED_OPS[impl])


def _attention_backward(label: str, batch: Any, heads: Any, seq_q: Any, seq_kv: Any, head_dim: Any, kv_heads: Any,
                        causal: bool, impl: str, dtype: str, kv_dtype: Any = None, seq_lens: Any = None,
                        seq_lens_kv: Any = None) -> Workload:
    """flash: one kernel recomputing S and P: 2.5x the forward's executed FLOPs (five products for two),
    2x its model FLOPs; reads Q, K, V, O and dO, writes dQ, dK and dV. The memory-efficient backward (cutlassB)
    counts the same and has its own op, ``efficient_attention_backward``.

    naive, as autograd runs it: dP = dO V^T, dV = P^T dO, the softmax's gradient dS (reads P and
    dP, writes dS, 2 x 5 vector FLOPs per element), dQ = dS K, dK = dS^T Q; each product executes
    2*b*h*sq*skv*d and counts 2*b*h*d*pairs. NB: with GQA, dK and dV are written once per KV head.
    Varlen: the flash backward over the same sequences (fused impls only, as the forward).
    """
    b, h, sq, d = batch, heads, seq_q, head_dim
    z = _Sizes(b, h, sq, seq_kv, d, kv_heads, causal, _varlen(b, sq, seq_kv, seq_lens, seq_lens_kv))
    e = element_bytes(dtype)
    impl = _fused_only(_sdpa_choice(impl, z, h, dtype), impl, z, dtype, d)
    if impl in FUSED_OPS:
        fwd = _flash_kernel(f"{label} backward", z, b, h, sq, d, dtype, e, impl)
        # the memory-efficient backward is its own kernel (cutlassB), not the forward's key-block walk: its own op,
        # which the predictor times by flash's tile model at the forward class's entries (NB: cutlassB not measured)
        back = fwd._replace(matrix_flops=FLASH_BACKWARD_EXECUTED * fwd.matrix_flops, model_flops=2.0 * fwd.model_flops,
                            bytes_read=(z.q + 2 * z.k + 2 * z.q) * e, bytes_written=(z.q + 2 * z.k) * e,
                            op=fwd.op + "_backward" if fwd.op == FUSED_OPS["efficient"] else fwd.op)
        return single(f"{label} backward", back)
    half = 2.0 * b * h * d * z.pairs  # model FLOPs of one product
    skv = z.skv

    def product(name: str, m: Any, n: Any, k: Any, read: Any, written: Any) -> tuple[Kernel, int]:
        return Kernel(f"{label} {name}", "gemm", dtype, matrix_flops=2.0 * b * h * m * n * k, bytes_read=read * e,
                      bytes_written=written * e, model_flops=half, gemm=Gemm(m, n, k, b * h), op="matmul"), 1

    soft = Kernel(f"{label} softmax backward", "reduction", dtype, vector_flops=2.0 * FLOPS_PER_ELEMENT["softmax"] * z.s,
                  bytes_read=2.0 * z.s * e, bytes_written=z.s * e, model_flops=0.0, op="softmax")
    return Workload.of(f"{label} backward", (
        product("dP = dO V^T", sq, skv, d, z.q + z.k, z.s),  # dO [b,h,sq,d] @ V^T [b,kv,d,skv] -> dP [b,h,sq,skv]
        product("dV = P^T dO", skv, d, sq, z.s + z.q, z.k),  # P^T [b,h,skv,sq] @ dO [b,h,sq,d] -> dV [b,kv,skv,d]
        (soft, 1),  # P, dP [b,h,sq,skv] -> dS [b,h,sq,skv]
        product("dQ = dS K", sq, d, skv, z.s + z.k, z.q),  # dS [b,h,sq,skv] @ K [b,kv,skv,d] -> dQ [b,h,sq,d]
        product("dK = dS^T Q", skv, d, sq, z.s + z.q, z.k),  # dS^T [b,h,skv,sq] @ Q [b,h,sq,d] -> dK [b,kv,skv,d]
    ))


@operator(
    "attention",
    params=dict(
        batch=size("sequences"),
        heads=size("query heads"),
        seq_q=size("queries per sequence (1 for decode)"),
        seq_kv=size("keys per sequence (default: seq_q; the KV cache for decode)", optional=True),
        head_dim=size("width of a head"),
        kv_heads=size("key/value heads (default: heads; fewer is GQA, 1 is MQA)", optional=True),
        causal=boolean("mask keys after each query (bottom-right aligned)"),
        impl=option("flash, cudnn, efficient: one fused kernel (FlashAttention-2, cuDNN's, the memory-efficient "
                    "one); naive: QK^T, softmax and PV as three kernels; sdpa: what F.scaled_dot_product_attention "
                    "runs (fp16/bf16: cuDNN's on Hopper and Blackwell, else flash, chosen by predict; fp32: efficient, "
                    "or naive with GQA)", *IMPLS),
        dtype=precision(),
        kv_dtype=precision("precision K and V are read in (an fp8 KV cache; default: dtype; fused impls only)",
                           optional=True),
        seq_lens=lengths("varlen: each sequence's queries, one per sequence, each at most seq_q (default: seq_q "
                         "each; fused impls only)"),
        seq_lens_kv=lengths("varlen: each sequence's keys, each at most seq_kv (default: seq_lens when seq_kv is "
                            "none, else seq_kv each)"),
    ),
    kinds=("attention", "gemm", "reduction"),
    keys=tuple(op + variant for op in FUSED_OPS.values()
               for variant in ("", "_splitkv", "_causal", "_decode", "_decodesplit", "_decodewide")) + tuple(
                   "efficient_attention_" + v for v in ("keys128", "gmem", "half", "halfkeys128", "halfgmem", "backward")),
    aten=("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
          "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
          "aten::_flash_attention_forward", "aten::_efficient_attention_forward", "aten::_cudnn_attention_forward"),
    aten_backward=("aten::_scaled_dot_product_flash_attention_backward",
                   "aten::_scaled_dot_product_efficient_attention_backward",
                   "aten::_scaled_dot_product_cudnn_attention_backward", "aten::_flash_attention_backward",
                   "aten::_efficient_attention_backward", "aten::_cudnn_attention_backward"),
    backward=_attention_backward,
    check=_check_heads,
    example=dict(batch=1, heads=32, seq_q=8192, head_dim=128, kv_heads=8, causal=True),
)
def attention(
    batch: Any,
    heads: Any,
    seq_q: Any,
    seq_kv: Any = None,
    head_dim: Any = 128,
    kv_heads: Any = None,
    causal: Any = False,
    impl: Any = "flash",
    dtype: Any = "bf16",
    kv_dtype: Any = None,
    seq_lens: Any = None,
    seq_lens_kv: Any = None,
) -> Workload:
    """softmax(Q K^T / sqrt(d)) V over ``heads`` heads; ``seq_kv`` defaults to ``seq_q``.

    flash: one kernel; bytes (2*b*h*sq*d + 2*b*kv*skv*d)*e (Q, O; K, V each read once);
      executed FLOPs = model FLOPs (NB: the diagonal tiles' masked half is not charged).
    naive: S = Q K^T written [b,h,sq,skv]; softmax reads S, writes P; O = P V reads P:
      bytes (b*h*sq*d + b*kv*skv*d + b*h*sq*skv)*e + 2*b*h*sq*skv*e + (b*h*sq*skv + b*kv*skv*d + b*h*sq*d)*e;
      executed FLOPs 4*b*h*d*sq*skv (every pair, masked or not) + 5*b*h*sq*skv softmax.
    cudnn, efficient: one kernel, counted as flash (their calibration keys differ; the memory-efficient kernel in
      fp32, bf16 and fp16 only, a block per (query block, head, sequence), its GQA heads not packed).
    sdpa: what F.scaled_dot_product_attention runs with no backend forced. fp16/bf16: one fused
      kernel counted as flash, which ``predict`` resolves to the backend PyTorch 2.11 picks on the
      GPU: cuDNN's on Hopper and Blackwell (cuDNN >= 9.15; measured on an H200: 326 of 326 random
      half-precision cases, prefill and decode, GQA or not), flash elsewhere. fp32: the efficient
      kernel, or with GQA (which it does not take) the unfused math path, counted as naive.
    Decode is seq_q = 1 against a KV cache of seq_kv. ``kv_dtype``: K and V read in another
    precision (an fp8 KV cache, dequantized in the kernel): 2*b*kv*skv*d*e_kv bytes; fused impls only.
    Varlen (``seq_lens``, ``seq_lens_kv``; FlashAttention's varlen kernel over packed sequences, fused impls only):
      sequence i has q_i queries and k_i keys (each at most seq_q, seq_kv); pairs are counted per sequence (causal
      bottom-right aligned in each) and summed; bytes (2*h*sum(q_i)*d + 2*kv*sum(k_i)*d)*e; model FLOPs
      4*h*d*sum(pairs_i); the kernel's tiles are counted per sequence (``Gemm.groups``). NB: one shape per call
      (no array arguments with lengths).
    """
    b, h, sq, d = batch, heads, seq_q, head_dim
    z = _Sizes(b, h, sq, seq_kv, d, kv_heads, causal, _varlen(b, sq, seq_kv, seq_lens, seq_lens_kv))
    e = element_bytes(dtype)
    tag = (", varlen" if z.lens is not None else "") + (", causal)" if causal else ")")
    resolved = _fused_only(_sdpa_choice(impl, z, h, dtype), impl, z, dtype, d)
    e_kv = None if kv_dtype is None or kv_dtype == dtype else element_bytes(kv_dtype)
    if resolved in FUSED_OPS:
        label = impl if resolved == impl else f"sdpa: {resolved}"
        return single(f"attention ({label}" + tag, _flash_kernel(f"{resolved} attention", z, b, h, sq, d, dtype, e,
                                                                 resolved, e_kv))
    if e_kv is not None:
        raise OptionError(f"kv_dtype={kv_dtype!r} needs a fused attention kernel (impl 'sdpa', 'flash', 'cudnn' or "
                          f"'efficient'); impl={impl!r} runs {resolved}, which reads K and V in dtype={dtype!r}")
    skv, half = z.skv, 2.0 * b * h * d * z.pairs
    # s [b,h,sq,skv] = q [b,h,sq,d] @ k^T [b,kv,d,skv]
    qk = Kernel("S = Q K^T", "gemm", dtype, matrix_flops=2.0 * b * h * sq * skv * d, bytes_read=(z.q + z.k) * e,
                bytes_written=z.s * e, model_flops=half, gemm=Gemm(sq, skv, d, b * h), op="matmul")
    # p [b,h,sq,skv] = softmax(s)
    soft = Kernel("P = softmax(S)", "reduction", dtype, vector_flops=FLOPS_PER_ELEMENT["softmax"] * z.s,
                  bytes_read=z.s * e, bytes_written=z.s * e, model_flops=0.0, op="softmax", rows=Rows(b * h * sq, skv))
    # o [b,h,sq,d] = p [b,h,sq,skv] @ v [b,kv,skv,d]
    pv = Kernel("O = P V", "gemm", dtype, matrix_flops=2.0 * b * h * sq * skv * d, bytes_read=(z.s + z.k) * e,
                bytes_written=z.q * e, model_flops=half, gemm=Gemm(sq, d, skv, b * h), op="matmul")
    name = "attention (sdpa: math" if impl == "sdpa" else "attention (naive"
    return Workload.of(name + tag, ((qk, 1), (soft, 1), (pv, 1)))
