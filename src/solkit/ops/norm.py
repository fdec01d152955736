"""Normalization: ``layernorm``, ``rmsnorm`` and ``layernorm_residual`` (fused or not).

x is [T, d]. Vector FLOPs per element (a stated convention): layernorm 8 (mean 1, variance 3,
normalize 2, affine 2), rmsnorm 4 (square-sum 2, scale 1, gamma 1).
"""

from __future__ import annotations

from typing import Any

from .._validate import broadcast, dim
from ..precision import storage_bytes
from ..workload import Kernel, Workload
from ._common import dtype_of, flag
from .elementwise import add

__all__ = ["layernorm", "rmsnorm", "layernorm_residual", "LAYERNORM_FLOPS", "RMSNORM_FLOPS"]

LAYERNORM_FLOPS = 8
RMSNORM_FLOPS = 4


def _norm_kernel(
    name: str, t: Any, d: Any, dt: str, params: int, flops: int, extra_in: int = 0, extra_out: int = 0, op: str = ""
) -> Kernel:
    e = storage_bytes(dt)
    return Kernel(
        name=name,
        kind="reduction",
        precision=dt,
        vector_flops=flops * t * d,
        bytes_read=((1 + extra_in) * t * d + params * d) * e,
        bytes_written=(1 + extra_out) * t * d * e,
        op=op,
    )


def layernorm(tokens: Any, d_model: Any, dtype: Any = "bf16") -> Workload:
    """y = LayerNorm(x) * gamma + beta over d_model, one kernel.

    Bytes: (2*T*d + 2*d)*e (x in, y out, gamma and beta). FLOPs: 8*T*d (vector).
    """
    dt = dtype_of(dtype)
    t, d = dim("tokens", tokens), dim("d_model", d_model)
    broadcast(tokens=t, d_model=d)
    return Workload("layernorm", (_norm_kernel("layernorm", t, d, dt, params=2, flops=LAYERNORM_FLOPS),))


def rmsnorm(tokens: Any, d_model: Any, dtype: Any = "bf16") -> Workload:
    """y = x / rms(x) * gamma, one kernel.

    Bytes: (2*T*d + d)*e (x in, y out, gamma). FLOPs: 4*T*d (vector).
    """
    dt = dtype_of(dtype)
    t, d = dim("tokens", tokens), dim("d_model", d_model)
    broadcast(tokens=t, d_model=d)
    return Workload("rmsnorm", (_norm_kernel("rmsnorm", t, d, dt, params=1, flops=RMSNORM_FLOPS),))


def layernorm_residual(tokens: Any, d_model: Any, fused: bool = True, dtype: Any = "bf16") -> Workload:
    """h = x + residual; y = LayerNorm(h): the pre-norm transformer's residual step.

    fused: one kernel reads x, residual, gamma, beta and writes h and y:
      bytes (4*T*d + 2*d)*e; FLOPs (1 + 8)*T*d.
    unfused: an add kernel (3*T*d*e) then a layernorm that reads h back ((2*T*d + 2*d)*e):
      bytes (5*T*d + 2*d)*e, two kernels, same FLOPs.
    """
    dt = dtype_of(dtype)
    t, d = dim("tokens", tokens), dim("d_model", d_model)
    broadcast(tokens=t, d_model=d)
    if flag("fused", fused):
        kernel = _norm_kernel(
            "add+layernorm", t, d, dt, params=2, flops=1 + LAYERNORM_FLOPS, extra_in=1, extra_out=1,
            op="layernorm_residual",
        )
        return Workload("layernorm_residual (fused)", (kernel,))
    # h [T,d] = x [T,d] + residual [T,d] ; y [T,d] = layernorm(h)
    kernels = add(t * d, dt).kernels + layernorm(t, d, dt).kernels
    return Workload("layernorm_residual (unfused)", kernels)
