"""Attention input projections: ``qkv_projection`` (fused or three GEMMs; MHA, GQA, MQA)."""

from __future__ import annotations

from typing import Any

from .._validate import checked_call, broadcast, dim
from ..errors import ShapeError
from ..workload import Kernel, Workload
from ._common import at_most, divisible, element_bytes
from .matmul import gemm, gemm_backward
from .registry import boolean, operator, precision, size

__all__ = ["qkv_projection", "qkv_widths"]


def _widths(d: Any, heads: Any, kv_heads: Any, head_dim: Any) -> tuple[Any, Any]:
    """(q, kv) widths from validated arguments: q = heads*head_dim, kv = kv_heads*head_dim (no heads: q = kv = d)."""
    if heads is None:
        return d, d
    hd = d / heads if head_dim is None else head_dim
    return heads * hd, (heads if kv_heads is None else kv_heads) * hd


def _check_heads(args: dict[str, Any]) -> None:
    """kv_heads and head_dim need heads; kv_heads divides heads; without head_dim, heads divides d_model."""
    heads, kv, hd = args["heads"], args["kv_heads"], args["head_dim"]
    if heads is None:
        if kv is not None or hd is not None:
            raise ShapeError(f"kv_heads and head_dim need heads; got heads=None, kv_heads={kv!r}, head_dim={hd!r}")
        return
    if hd is None:
        divisible("d_model", args["d_model"], "heads", heads)
    if kv is not None:
        at_most("kv_heads", kv, "heads", heads)
        divisible("heads", heads, "kv_heads", kv)


@checked_call
def qkv_widths(d_model: Any, heads: Any = None, kv_heads: Any = None, head_dim: Any = None) -> tuple[Any, Any]:
    """(q, kv) output widths: q = heads*head_dim, kv = kv_heads*head_dim.

    Defaults: no ``heads`` -> q = kv = d_model; ``head_dim`` = d_model / heads;
    ``kv_heads`` = heads (multi-head). ``kv_heads`` must divide ``heads``.
    """
    args = dict(d_model=dim("d_model", d_model), heads=None if heads is None else dim("heads", heads),
                kv_heads=None if kv_heads is None else dim("kv_heads", kv_heads),
                head_dim=None if head_dim is None else dim("head_dim", head_dim))
    broadcast(**{k: v for k, v in args.items() if v is not None})
    _check_heads(args)
    return _widths(args["d_model"], args["heads"], args["kv_heads"], args["head_dim"])


def _qkv_backward(label: str, tokens: Any, d_model: Any, heads: Any, kv_heads: Any, head_dim: Any, fused: bool,
                  dtype: str) -> Workload:
    """Each projection's dgrad and wgrad; unfused, the three partial dx are summed by two adds (3*T*d*e bytes, T*d FLOPs each)."""
    t, d = tokens, d_model
    q, kv = _widths(d, heads, kv_heads, head_dim)
    if fused:
        return Workload.of(f"{label} backward", tuple((k, 1) for k in gemm_backward(label, t, q + 2 * kv, d, dtype)))
    parts: list[tuple[Kernel, int]] = []
    for name, width in (("v_proj", kv), ("k_proj", kv), ("q_proj", q)):
        parts += [(k, 1) for k in gemm_backward(f"{label} {name}", t, width, d, dtype)]
    e = element_bytes(dtype)
    # dx [T,d] = dx_q + dx_k + dx_v: two adds, autograd's bookkeeping (no model FLOPs)
    dx_sum = Kernel(f"{label} dx sum", "elementwise", dtype, vector_flops=t * d, bytes_read=2.0 * t * d * e,
                    bytes_written=t * d * e, model_flops=0.0, op="add")
    parts += [(dx_sum, 2)]
    return Workload.of(f"{label} backward", tuple(parts))


@operator(
    "qkv_projection",
    params=dict(
        tokens=size("rows of x (batch x sequence)"),
        d_model=size("width of x"),
        heads=size("query heads (default: q = kv = d_model)", optional=True),
        kv_heads=size("key/value heads (default: heads; fewer is GQA, 1 is MQA)", optional=True),
        head_dim=size("width of a head (default: d_model / heads)", optional=True),
        fused=boolean("one GEMM against the concatenated weight, else three GEMMs that each read x"),
        dtype=precision(),
    ),
    kinds=("gemm",),
    keys=("matmul",),
    backward=_qkv_backward,
    check=_check_heads,
    example=dict(tokens=4096, d_model=768, heads=12),
)
def qkv_projection(
    tokens: Any,
    d_model: Any,
    heads: Any = None,
    kv_heads: Any = None,
    head_dim: Any = None,
    fused: Any = True,
    dtype: Any = "bf16",
) -> Workload:
    """Q, K, V = x @ W_q, x @ W_k, x @ W_v for x [T, d].

    N = q + 2*kv columns (see ``qkv_widths``). FLOPs 2*T*d*N either way.
    fused: one GEMM x [T,d] @ W [d,N] -> [T,N]; bytes (T*d + d*N)*e_in + T*N*e_out.
    unfused: three GEMMs, each reads x: bytes (3*T*d + d*N)*e_in + T*N*e_out.
    e_out is the matmul output precision (e_in, except fp8 -> bf16 and int8 -> int32).
    """
    t, d = tokens, d_model
    q, kv = _widths(d, heads, kv_heads, head_dim)
    if fused:
        # x [T,d] @ w_qkv [d, q+2kv] -> qkv [T, q+2kv]
        return Workload.of("qkv_projection (fused)", ((gemm("qkv", t, q + 2 * kv, d, dtype), 1),))
    return Workload.of("qkv_projection (unfused)", (
        (gemm("q_proj", t, q, d, dtype), 1),  # x [T,d] @ w_q [d,q] -> q [T,q]
        (gemm("k_proj", t, kv, d, dtype), 1),  # x [T,d] @ w_k [d,kv] -> k [T,kv]
        (gemm("v_proj", t, kv, d, dtype), 1),  # x [T,d] @ w_v [d,kv] -> v [T,kv]
    ))
