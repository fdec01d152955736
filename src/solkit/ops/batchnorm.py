"""Batch normalization over x [N, C, H, W]: per-channel statistics (training) or running ones (eval).

Vector FLOPs per element (a stated convention): training 6 (sum 1, sum of squares 2, then
y = (x - mean) * (invstd * gamma) + beta: a subtract and a multiply-add, 3), eval 2 (y = x * a + b,
a and b folded per channel). Per-channel vectors are in ``param_dtype`` (fp32 under autocast).
"""

from __future__ import annotations

from typing import Any

from ..workload import Kernel, Workload
from ._common import element_bytes, single
from .registry import boolean, operator, precision, size

__all__ = ["batchnorm", "BATCHNORM_FLOPS"]

#: vector FLOPs per element of x: training (statistics, normalize, affine) and eval (one multiply-add)
BATCHNORM_FLOPS = {True: 6, False: 2}


def _sizes(batch: Any, channels: Any, height: Any, width: Any, dtype: str, param_dtype: Any) -> tuple[Any, Any, Any]:
    """(elements of x, bytes of x, bytes of one per-channel vector)."""
    x = batch * channels * height * width  # x [N,C,H,W], also y
    return x, x * element_bytes(dtype), channels * element_bytes(param_dtype or dtype)


def _batchnorm_backward(label: str, batch: Any, channels: Any, height: Any, width: Any, training: bool, dtype: str,
                        param_dtype: Any) -> Workload:
    """dx, dgamma and dbeta from dy and x: reads dy and x (2*N*C*H*W*e) and gamma, the saved mean and
    inverse std (3*C*e_p); writes dx (N*C*H*W*e), dgamma and dbeta (2*C*e_p). FLOPs: twice the forward's
    (vector, counted as model FLOPs). NB: ATen makes two passes (reduce dy and dy*xhat per channel, then
    dx); the second read of dy and x is not compulsory and not counted. Eval mode is counted the same.
    """
    x, x_bytes, vec = _sizes(batch, channels, height, width, dtype, param_dtype)
    kernel = Kernel(f"{label} backward", "reduction", dtype, vector_flops=2.0 * BATCHNORM_FLOPS[training] * x,
                    bytes_read=2.0 * x_bytes + 3.0 * vec, bytes_written=x_bytes + 2.0 * vec, op="batchnorm",
                    launches=2.0)  # ATen: backward_reduce, then backward_elemt
    return single(f"{label} backward", kernel)


@operator(
    "batchnorm",
    params=dict(
        batch=size("images (N)"),
        channels=size("channels (C): one mean and variance each"),
        height=size("height (H)"),
        width=size("width (W)"),
        training=boolean("batch statistics (and running-stat updates) rather than the running ones"),
        dtype=precision("precision of x and y"),
        param_dtype=precision("precision of gamma, beta and the statistics (default: dtype)", optional=True),
    ),
    kinds=("reduction",),
    aten=("aten::native_batch_norm", "aten::_native_batch_norm_legit", "aten::_native_batch_norm_legit_no_training",
          "aten::cudnn_batch_norm"),
    aten_backward=("aten::native_batch_norm_backward", "aten::cudnn_batch_norm_backward"),
    backward=_batchnorm_backward,
    example=dict(batch=32, channels=64, height=112, width=112),
)
def batchnorm(
    batch: Any,
    channels: Any,
    height: Any,
    width: Any,
    training: Any = True,
    dtype: Any = "bf16",
    param_dtype: Any = None,
) -> Workload:
    """y = (x - mean) / sqrt(var + eps) * gamma + beta per channel of x [N, C, H, W], one kernel.

    Bytes (compulsory: x read once, y written once): N*C*H*W*e read and written, plus per channel:
      eval: reads gamma, beta, running mean and variance (4*C*e_p);
      training: reads the same 4*C*e_p and writes the updated running mean and variance and the saved
      mean and inverse std (4*C*e_p).
    FLOPs: training 6*N*C*H*W, eval 2*N*C*H*W (vector).
    NB: training makes two passes over x (statistics, then normalize: cuDNN and ATen alike); the second
    read of x is not compulsory and not counted. ATen keeps the saved statistics in fp32 whatever
    param_dtype is; they are counted in param_dtype.
    """
    x, x_bytes, vec = _sizes(batch, channels, height, width, dtype, param_dtype)
    # x [N,C,H,W], gamma, beta, running mean, running var [C] -> y [N,C,H,W] (+ training: 4 x [C])
    kernel = Kernel("batchnorm", "reduction", dtype, vector_flops=BATCHNORM_FLOPS[training] * x,
                    bytes_read=x_bytes + 4.0 * vec, bytes_written=x_bytes + (4.0 * vec if training else 0.0),
                    op="batchnorm", launches=2.0)  # ATen: statistics (eval: scale and shift from the running ones), transform
    return single("batchnorm (training)" if training else "batchnorm (eval)", kernel)
