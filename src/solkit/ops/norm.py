"""Normalization: ``layernorm``, ``rmsnorm`` and ``layernorm_residual`` (fused or not).

x is [T, d]. Vector FLOPs per element (a stated convention): layernorm 8 (mean 1, variance 3,
normalize 2, affine 2), rmsnorm 4 (square-sum 2, scale 1, gamma 1). Backward: ``memory_bound_backward``.
"""

from __future__ import annotations

from typing import Any

from ..workload import Kernel, Rows, Workload
from ._common import element_bytes, single
from .elementwise import FLOPS_PER_ELEMENT, pointwise
from .registry import MEMORY_BOUND, boolean, operator, precision, size

__all__ = ["layernorm", "rmsnorm", "layernorm_residual", "LAYERNORM_FLOPS", "RMSNORM_FLOPS", "norm_kernel"]

LAYERNORM_FLOPS = 8
RMSNORM_FLOPS = 4

_TOKENS = size("rows of x (batch x sequence)")
_D_MODEL = size("width normalized over")


def norm_kernel(name: str, tokens: Any, d_model: Any, dtype: str, params: int, flops: int, tensors_in: int = 1,
                tensors_out: int = 1, op: str = "") -> Kernel:
    """A row-normalization kernel: reads ``tensors_in`` [T,d] tensors and ``params`` [d] vectors, writes ``tensors_out``."""
    e = element_bytes(dtype)
    return Kernel(name, "reduction", dtype, vector_flops=flops * tokens * d_model,
                  bytes_read=(tensors_in * tokens * d_model + params * d_model) * e,
                  bytes_written=tensors_out * tokens * d_model * e, op=op or name, rows=Rows(tokens, d_model))


@operator(
    "layernorm",
    params=dict(tokens=_TOKENS, d_model=_D_MODEL, dtype=precision()),
    keys=("layernorm", "layernorm_unaligned"),
    kinds=("reduction",),
    aten=("aten::native_layer_norm", "aten::layer_norm"),
    aten_backward=("aten::native_layer_norm_backward",),
    backward=MEMORY_BOUND,
    example=dict(tokens=8192, d_model=4096),
)
def layernorm(tokens: Any, d_model: Any, dtype: Any = "bf16") -> Workload:
    """y = LayerNorm(x) * gamma + beta over d_model, one kernel.

    Bytes: (2*T*d + 2*d)*e (x in, y out, gamma and beta). FLOPs: 8*T*d (vector).
    """
    # x [T,d], gamma [d], beta [d] -> y [T,d]
    return single("layernorm", norm_kernel("layernorm", tokens, d_model, dtype, params=2, flops=LAYERNORM_FLOPS))


@operator(
    "rmsnorm",
    params=dict(tokens=_TOKENS, d_model=_D_MODEL, dtype=precision()),
    keys=("rmsnorm", "rmsnorm_unaligned"),
    kinds=("reduction",),
    aten=("aten::rms_norm", "aten::_fused_rms_norm"),
    aten_backward=("aten::_fused_rms_norm_backward",),
    backward=MEMORY_BOUND,
    example=dict(tokens=8192, d_model=4096),
)
def rmsnorm(tokens: Any, d_model: Any, dtype: Any = "bf16") -> Workload:
    """y = x / rms(x) * gamma, one kernel.

    Bytes: (2*T*d + d)*e (x in, y out, gamma). FLOPs: 4*T*d (vector).
    """
    # x [T,d], gamma [d] -> y [T,d]
    return single("rmsnorm", norm_kernel("rmsnorm", tokens, d_model, dtype, params=1, flops=RMSNORM_FLOPS))


@operator(
    "layernorm_residual",
    params=dict(tokens=_TOKENS, d_model=_D_MODEL, fused=boolean("the add and the LayerNorm in one kernel"),
                dtype=precision()),
    keys=("layernorm_residual", "layernorm_residual_unaligned", "layernorm", "layernorm_unaligned"),
    kinds=("reduction", "elementwise"),
    backward=MEMORY_BOUND,
    example=dict(tokens=8192, d_model=4096),
)
def layernorm_residual(tokens: Any, d_model: Any, fused: Any = True, dtype: Any = "bf16") -> Workload:
    """h = x + residual; y = LayerNorm(h): the pre-norm transformer's residual step.

    fused: one kernel reads x, residual, gamma, beta and writes h and y:
      bytes (4*T*d + 2*d)*e; FLOPs (1 + 8)*T*d.
    unfused: an add kernel (3*T*d*e) then a layernorm that reads h back ((2*T*d + 2*d)*e):
      bytes (5*T*d + 2*d)*e, two kernels, same FLOPs.
    """
    t, d = tokens, d_model
    if fused:
        # x [T,d], residual [T,d], gamma, beta -> h [T,d], y [T,d]
        kernel = norm_kernel("add+layernorm", t, d, dtype, params=2, flops=FLOPS_PER_ELEMENT["add"] + LAYERNORM_FLOPS,
                             tensors_in=2, tensors_out=2, op="layernorm_residual")
        return single("layernorm_residual (fused)", kernel)
    # h [T,d] = x [T,d] + residual [T,d] ; y [T,d] = layernorm(h)
    return Workload.of("layernorm_residual (unfused)", (
        (pointwise("add", t * d, 2.0, 1.0, FLOPS_PER_ELEMENT["add"], dtype, op="add"), 1),
        (norm_kernel("layernorm", t, d, dtype, params=2, flops=LAYERNORM_FLOPS), 1),
    ))
