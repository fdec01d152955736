"""2-D convolution in NHWC (implicit GEMM), NCHW (with layout transforms) or explicit im2col.

x [N, C, H, W], w [K, C/groups, R, S], y [N, K, Ho, Wo] with
Ho = (H + 2*pad_h - dil_h*(R - 1) - 1) // stride_h + 1 (likewise Wo).
FLOPs: 2*N*K*Ho*Wo*(C/groups)*R*S on matrix units, whatever the layout.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .._validate import broadcast, choice, dim
from ..errors import ArgumentTypeError, ShapeError
from ..precision import storage_bytes
from ..workload import GemmDims, Kernel, Workload
from ._common import divisible, dtype_of
from .matmul import gemm_kernel

__all__ = ["conv2d", "conv_output_size", "LAYOUTS"]

LAYOUTS = ("nhwc", "nchw", "im2col")


def _pair(name: str, value: Any, minimum: int) -> tuple[np.ndarray, np.ndarray]:
    """An int (or array) used for both axes, or a pair (h, w)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ArgumentTypeError(f"{name} must be an int or a pair (h, w), got {value!r}")
        return dim(f"{name}[0]", value[0], minimum), dim(f"{name}[1]", value[1], minimum)
    v = dim(name, value, minimum)
    return v, v


def conv_output_size(size: Any, kernel: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1, axis: str = "height") -> np.ndarray:
    """Output extent along one axis: (size + 2*padding - dilation*(kernel - 1) - 1) // stride + 1."""
    size, kernel, stride = dim(axis, size), dim("kernel", kernel), dim("stride", stride)
    padding, dilation = dim("padding", padding, 0), dim("dilation", dilation)
    broadcast(**{axis: size, "kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation})
    size, kernel, stride, padding, dilation = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in
                                                                     (size, kernel, stride, padding, dilation)))
    span = dilation * (kernel - 1) + 1
    padded = size + 2 * padding
    bad = padded < span
    if np.any(bad):
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        where = "" if not i else f" at index {i[0] if len(i) == 1 else i}"
        raise ShapeError(
            f"kernel (dilated extent {span[i]:g}) must fit the padded input along {axis}: "
            f"{axis} {size[i]:g} + 2*padding {padding[i]:g} = {padded[i]:g} < {span[i]:g}{where}"
        )
    return np.floor((padded - span) / stride) + 1


def conv2d(
    batch: Any,
    in_channels: Any,
    height: Any,
    width: Any,
    out_channels: Any,
    kernel: Any = 3,
    stride: Any = 1,
    padding: Any = 0,
    groups: Any = 1,
    layout: str = "nhwc",
    dtype: Any = "bf16",
    dilation: Any = 1,
) -> Workload:
    """A 2-D convolution. ``kernel``, ``stride``, ``padding``, ``dilation``: an int or a pair (h, w).

    nhwc: one implicit-GEMM kernel; bytes x + w + y = (N*C*H*W + K*(C/g)*R*S + N*K*Ho*Wo)*e.
    nchw: a 1x1, stride-1, unpadded conv is a direct GEMM (bytes as nhwc); any other conv adds
      a transform of x to NHWC before (read x, write x) and of y back after (read y, write y):
      bytes (3*N*C*H*W + K*(C/g)*R*S + 3*N*K*Ho*Wo)*e, three kernels.
    im2col: one kernel reads x and writes the column matrix [N*Ho*Wo, C*R*S] (classic
      implementations launch it once per image: ``launches`` = N), then a GEMM reads it and w
      and writes y: bytes (N*C*H*W + 2*N*Ho*Wo*C*R*S + K*(C/g)*R*S + N*K*Ho*Wo)*e.
    FLOPs: 2*N*K*Ho*Wo*(C/g)*R*S. Grouped convs are ``groups`` GEMMs of K/g columns.
    """
    dt = dtype_of(dtype)
    lay = choice("layout", layout, LAYOUTS)
    n, c, h, w_ = dim("batch", batch), dim("in_channels", in_channels), dim("height", height), dim("width", width)
    k = dim("out_channels", out_channels)
    r, s = _pair("kernel", kernel, 1)
    sh, sw = _pair("stride", stride, 1)
    ph, pw = _pair("padding", padding, 0)
    dh, dw = _pair("dilation", dilation, 1)
    g = dim("groups", groups)
    broadcast(batch=n, in_channels=c, height=h, width=w_, out_channels=k, kernel_h=r, kernel_w=s, stride_h=sh,
              stride_w=sw, padding_h=ph, padding_w=pw, dilation_h=dh, dilation_w=dw, groups=g)
    divisible("in_channels", c, "groups", g)
    divisible("out_channels", k, "groups", g)
    ho = conv_output_size(h, r, sh, ph, dh, "height")
    wo = conv_output_size(w_, s, sw, pw, dw, "width")
    e = storage_bytes(dt)

    x_bytes = n * c * h * w_ * e
    w_bytes = k * (c / g) * r * s * e
    y_bytes = n * k * ho * wo * e
    # implicit GEMM per group: [N*Ho*Wo, (C/g)*R*S] @ [(C/g)*R*S, K/g] -> [N*Ho*Wo, K/g]
    m_, n_, k_ = n * ho * wo, k / g, (c / g) * r * s
    flops = 2.0 * g * m_ * n_ * k_
    gemm = GemmDims(m=m_, n=n_, k=k_, batch=g, channels=c / g)
    conv = Kernel(
        name="conv (implicit gemm)",
        kind="conv",
        precision=dt,
        matrix_flops=flops,
        bytes_read=x_bytes + w_bytes,
        bytes_written=y_bytes,
        gemm=gemm,
        op="conv2d",
    )
    if lay == "nhwc":
        return Workload("conv2d (nhwc)", (conv,))
    if lay == "nchw":
        direct = (r == 1) & (s == 1) & (sh == 1) & (sw == 1) & (ph == 0) & (pw == 0)
        if np.all(direct):
            return Workload("conv2d (nchw, direct 1x1)", (conv.renamed("conv (nchw 1x1 gemm)"),))
        extra = np.where(direct, 0.0, 1.0)  # broadcast sweeps: transforms only where needed
        to_nhwc = Kernel("nchw->nhwc (x)", "layout", dt, bytes_read=extra * x_bytes, bytes_written=extra * x_bytes, op="layout")
        to_nchw = Kernel("nhwc->nchw (y)", "layout", dt, bytes_read=extra * y_bytes, bytes_written=extra * y_bytes, op="layout")
        return Workload("conv2d (nchw)", (to_nhwc, conv, to_nchw))
    # im2col: cols [N*Ho*Wo, C*R*S]; per group cols [N*Ho*Wo, (C/g)*R*S] @ w [(C/g)*R*S, K/g]
    cols_bytes = n * ho * wo * c * r * s * e
    # classic im2col (Caffe, ATen's F.unfold) unfolds one image per launch
    unfold = Kernel("im2col", "im2col", dt, bytes_read=x_bytes, bytes_written=cols_bytes, launches=n)
    mm = gemm_kernel("gemm (cols @ w)", m_, n_, k_, batch=g, dtype=dt, b_batched=True)
    mm = replace(mm, bytes_read=cols_bytes + w_bytes, bytes_written=y_bytes)
    return Workload("conv2d (im2col)", (unfold, mm))
