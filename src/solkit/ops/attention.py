"""Scaled dot-product attention: flash (one fused kernel) or naive (two GEMMs and a softmax).

Q, O are [b, h, sq, d]; K, V are [b, kv, skv, d] (kv = kv_heads; GQA/MQA when kv < h).
Pairs of (query, key) that count: sq*skv; causal (bottom-right aligned, query i sees keys
j <= i + skv - sq) counts sq*skv - sq*(sq - 1)/2 when sq <= skv, and skv*(skv + 1)/2 when
sq > skv (the first sq - skv queries see no key).
Model FLOPs: 4*b*h*d*pairs (QK^T and PV, 2 per multiply-add); the softmax is not counted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .._validate import broadcast, choice, dim, flag
from ..precision import storage_bytes
from ..workload import GemmDims, Kernel, Workload
from ._common import at_most, divisible, dtype_of
from .elementwise import FLOPS_PER_ELEMENT
from .matmul import gemm_kernel

__all__ = ["attention", "attention_pairs", "IMPLS"]

IMPLS = ("flash", "naive")


def attention_pairs(seq_q: Any, seq_kv: Any, causal: bool = False) -> np.ndarray:
    """Unmasked (query, key) pairs per head: sq*skv, or the bottom-right causal count."""
    sq, skv = dim("seq_q", seq_q), dim("seq_kv", seq_kv)
    broadcast(seq_q=sq, seq_kv=skv)
    if not flag("causal", causal):
        return sq * skv
    return np.where(sq <= skv, sq * skv - sq * (sq - 1) / 2, skv * (skv + 1) / 2)


def attention(
    batch: Any,
    heads: Any,
    seq_q: Any,
    seq_kv: Any = None,
    head_dim: Any = 128,
    kv_heads: Any = None,
    causal: bool = False,
    impl: str = "flash",
    dtype: Any = "bf16",
) -> Workload:
    """softmax(Q K^T / sqrt(d)) V over ``heads`` heads; ``seq_kv`` defaults to ``seq_q``.

    flash: one kernel; bytes (2*b*h*sq*d + 2*b*kv*skv*d)*e (Q, O; K, V each read once);
      executed FLOPs = model FLOPs (NB: the diagonal tiles' masked half is not charged).
    naive: S = Q K^T written [b,h,sq,skv]; softmax reads S, writes P; O = P V reads P:
      bytes (b*h*sq*d + b*kv*skv*d + b*h*sq*skv)*e + 2*b*h*sq*skv*e + (b*h*sq*skv + b*kv*skv*d + b*h*sq*d)*e;
      executed FLOPs 4*b*h*d*sq*skv (every pair, masked or not) + 5*b*h*sq*skv softmax.
    Decode is seq_q = 1 against a KV cache of seq_kv.
    """
    dt = dtype_of(dtype)
    mode = choice("impl", impl, IMPLS)
    is_causal = flag("causal", causal)
    b, h = dim("batch", batch), dim("heads", heads)
    sq = dim("seq_q", seq_q)
    skv = sq if seq_kv is None else dim("seq_kv", seq_kv)
    d = dim("head_dim", head_dim)
    kv = h if kv_heads is None else dim("kv_heads", kv_heads)
    broadcast(batch=b, heads=h, seq_q=sq, seq_kv=skv, head_dim=d, kv_heads=kv)
    at_most("kv_heads", kv, "heads", h)
    divisible("heads", h, "kv_heads", kv)
    e = storage_bytes(dt)
    pairs = attention_pairs(sq, skv, is_causal)
    model = 4.0 * b * h * d * pairs
    q_bytes = b * h * sq * d * e  # also O
    kv_bytes = b * kv * skv * d * e  # each of K and V
    if mode == "flash":
        kernel = Kernel(
            name="flash attention",
            kind="attention",
            precision=dt,
            matrix_flops=model,
            bytes_read=q_bytes + 2 * kv_bytes,
            bytes_written=q_bytes,
            # per KV head, the h/kv query heads that share it packed as rows: [sq*h/kv, d] x [d, skv]
            gemm=GemmDims(m=sq * h / kv, n=skv, k=d, batch=b * kv),
            op="flash_attention",
        )
        return Workload("attention (flash" + (", causal)" if is_causal else ")"), (kernel,))
    s_bytes = b * h * sq * skv * e
    # s [b,h,sq,skv] = q [b,h,sq,d] @ k^T [b,kv,d,skv]
    qk = gemm_kernel("S = Q K^T", sq, skv, d, batch=b * h, dtype=dt, out_dtype=dt)
    qk = replace(qk, bytes_read=q_bytes + kv_bytes, bytes_written=s_bytes, model_flops=2.0 * b * h * d * pairs)
    soft = Kernel(
        name="P = softmax(S)",
        kind="reduction",
        precision=dt,
        vector_flops=FLOPS_PER_ELEMENT["softmax"] * b * h * sq * skv,
        bytes_read=s_bytes,
        bytes_written=s_bytes,
        model_flops=0.0,
        op="softmax",
    )
    # o [b,h,sq,d] = p [b,h,sq,skv] @ v [b,kv,skv,d]
    pv = gemm_kernel("O = P V", sq, d, skv, batch=b * h, dtype=dt, out_dtype=dt)
    pv = replace(pv, bytes_read=s_bytes + kv_bytes, bytes_written=q_bytes, model_flops=2.0 * b * h * d * pairs)
    return Workload("attention (naive" + (", causal)" if is_causal else ")"), (qk, soft, pv))
