"""Attention input projections: ``qkv_projection`` (fused or three GEMMs; MHA, GQA, MQA)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validate import broadcast, dim
from ..errors import ShapeError
from ..workload import Workload
from ._common import at_most, divisible, dtype_of, flag
from .matmul import gemm_kernel

__all__ = ["qkv_projection", "qkv_widths"]


def qkv_widths(d_model: Any, heads: Any = None, kv_heads: Any = None, head_dim: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """(q, kv) output widths: q = heads*head_dim, kv = kv_heads*head_dim.

    Defaults: no ``heads`` -> q = kv = d_model; ``head_dim`` = d_model / heads;
    ``kv_heads`` = heads (multi-head). ``kv_heads`` must divide ``heads``.
    """
    d = dim("d_model", d_model)
    named = {"d_model": d}
    if heads is None:
        if kv_heads is not None or head_dim is not None:
            raise ShapeError(f"kv_heads and head_dim need heads; got heads=None, kv_heads={kv_heads!r}, head_dim={head_dim!r}")
        return d, d
    h = dim("heads", heads)
    if head_dim is None:
        divisible("d_model", d, "heads", h)
        hd = d / h
    else:
        hd = dim("head_dim", head_dim)
    kv = h if kv_heads is None else dim("kv_heads", kv_heads)
    named.update(heads=h, kv_heads=kv, head_dim=hd)
    broadcast(**named)
    at_most("kv_heads", kv, "heads", h)
    divisible("heads", h, "kv_heads", kv)
    return h * hd, kv * hd


def qkv_projection(
    tokens: Any,
    d_model: Any,
    heads: Any = None,
    kv_heads: Any = None,
    head_dim: Any = None,
    fused: bool = True,
    dtype: Any = "bf16",
) -> Workload:
    """Q, K, V = x @ W_q, x @ W_k, x @ W_v for x [T, d].

    N = q + 2*kv columns (see ``qkv_widths``). FLOPs 2*T*d*N either way.
    fused: one GEMM x [T,d] @ W [d,N] -> [T,N]; bytes (T*d + d*N)*e_in + T*N*e_out.
    unfused: three GEMMs, each reads x: bytes (3*T*d + d*N)*e_in + T*N*e_out.
    e_out is the matmul output precision (e_in, except fp8 -> bf16 and int8 -> int32).
    """
    dt = dtype_of(dtype)
    t = dim("tokens", tokens)
    d = dim("d_model", d_model)
    q, kv = qkv_widths(d, heads, kv_heads, head_dim)  # d is already float64: its check there is a no-op pass
    broadcast(tokens=t, d_model=d, q_width=q, kv_width=kv)
    if flag("fused", fused):
        # x [T,d] @ w_qkv [d, q+2kv] -> qkv [T, q+2kv]
        return Workload("qkv_projection (fused)", (gemm_kernel("qkv", t, q + 2 * kv, d, dtype=dt),))
    kernels = (
        gemm_kernel("q_proj", t, q, d, dtype=dt),  # x [T,d] @ w_q [d,q] -> q [T,q]
        gemm_kernel("k_proj", t, kv, d, dtype=dt),  # x [T,d] @ w_k [d,kv] -> k [T,kv]
        gemm_kernel("v_proj", t, kv, d, dtype=dt),  # x [T,d] @ w_v [d,kv] -> v [T,kv]
    )
    return Workload("qkv_projection (unfused)", kernels)
