"""2-D convolution in NHWC (implicit GEMM), NCHW (with layout transforms) or explicit im2col, and its parts.

x [N, C, H, W], w [K, C/groups, R, S], y [N, K, Ho, Wo] with
Ho = (H + 2*pad_h - dil_h*(R - 1) - 1) // stride_h + 1 (likewise Wo).
FLOPs: 2*N*K*Ho*Wo*(C/groups)*R*S on matrix units, whatever the layout.
"""

from __future__ import annotations

from typing import Any, Optional


from .._num import all_, minimum, where
from .._validate import checked_call, broadcast, dim
from ..workload import Gemm, Kernel, Rows, Workload
from ..stacks.torch211 import FEW_CHANNEL_BYTES
from ._common import check_fits, check_window, divisible, element_bytes, extent, single
from .matmul import gemm, gemm_backward
from .registry import MEMORY_BOUND, operator, option, pair, precision, size

__all__ = ["conv2d", "conv_output_size", "im2col", "layout_transform", "LAYOUTS"]

LAYOUTS = ("nhwc", "nchw", "im2col")


def _check_conv(args: dict[str, Any]) -> None:
    """groups divides both channel counts; the kernel fits the padded input."""
    divisible("in_channels", args["in_channels"], "groups", args["groups"])
    divisible("out_channels", args["out_channels"], "groups", args["groups"])
    check_window(args)


@checked_call
def conv_output_size(size: Any, kernel: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1, axis: str = "height") -> Any:
    """Output extent along one axis: (size + 2*padding - dilation*(kernel - 1) - 1) // stride + 1."""
    size_, kernel, stride = dim(axis, size), dim("kernel", kernel), dim("stride", stride)
    padding, dilation = dim("padding", padding, 0), dim("dilation", dilation)
    broadcast(**{axis: size_, "kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation})
    check_fits(axis, size_, kernel, padding, dilation)
    return extent(size_, kernel, stride, padding, dilation)


class _Shape:
    """The extents and operand sizes (elements) of a validated convolution."""

    def __init__(self, a: dict[str, Any]) -> None:
        self.n, self.c, self.h, self.w, self.k, self.g = (a["batch"], a["in_channels"], a["height"], a["width"],
                                                          a["out_channels"], a["groups"])
        (self.r, self.s), (sh, sw), (ph, pw), (dh, dw) = a["kernel"], a["stride"], a["padding"], a["dilation"]
        self.ho = extent(self.h, self.r, sh, ph, dh)
        self.wo = extent(self.w, self.s, sw, pw, dw)
        self.direct_1x1 = (self.r == 1) & (self.s == 1) & (sh == 1) & (sw == 1) & (ph == 0) & (pw == 0)
        # PyTorch runs a depthwise conv (C = groups) directly on NCHW: no layout transforms
        self.direct_nchw = self.direct_1x1 | ((self.g == self.c) & (self.g > 1))
        self.x = self.n * self.c * self.h * self.w  # x [N,C,H,W]
        # the pixels some window touches: a window reads R of the rows (S of the columns), so a stride beyond the
        # filter (a 1x1 conv of stride 2) skips the rest: min(H, Ho*R) x min(W, Wo*S) (padding rows count as read)
        self.x_read = self.n * self.c * minimum(self.h, self.ho * self.r) * minimum(self.w, self.wo * self.s)
        self.weights = self.k * (self.c / self.g) * self.r * self.s  # w [K,C/g,R,S]
        self.y = self.n * self.k * self.ho * self.wo  # y [N,K,Ho,Wo]
        self.cols = self.n * self.ho * self.wo * self.c * self.r * self.s  # im2col's [N*Ho*Wo, C*R*S]
        # implicit GEMM per group: [N*Ho*Wo, (C/g)*R*S] @ [(C/g)*R*S, K/g] -> [N*Ho*Wo, K/g]
        self.gemm = Gemm(self.n * self.ho * self.wo, self.k / self.g, (self.c / self.g) * self.r * self.s, self.g,
                         self.c / self.g)

    @property
    def flops(self) -> Any:
        """2*N*K*Ho*Wo*(C/g)*R*S."""
        g = self.gemm
        return 2.0 * g.batch * g.m * g.n * g.k


def _conv_kernel(name: str, cs: _Shape, dtype: str, read: Any, written: Any, layout: Optional[str] = None) -> Kernel:
    gemm = cs.gemm if layout is None else cs.gemm._replace(layout=layout)
    return Kernel(name, "conv", dtype, matrix_flops=cs.flops, bytes_read=read, bytes_written=written, gemm=gemm,
                  op="conv2d")


def _transform(name: str, elements: Any, dtype: str, present: Any = 1.0, channels: Any = None) -> Kernel:
    """An NCHW <-> NHWC transform: reads and writes ``elements`` (times ``present``: 0 where a sweep needs none).

    ``channels``: the channel count of the tensor it transposes; its rows (``Rows``: one per pixel, ``channels``
    wide) are what the NHWC side reads or writes contiguously (the predictor reads their width; counts unchanged).
    """
    moved = elements * element_bytes(dtype) * present
    rows = None if channels is None else Rows(elements / channels, channels)
    return Kernel(name, "layout", dtype, bytes_read=moved, bytes_written=moved, op="layout_transform", rows=rows)


def _unfold(name: str, cs: _Shape, dtype: str) -> Kernel:
    """im2col: reads x, writes the column matrix; one launch per image, as F.unfold and Caffe run it."""
    e = element_bytes(dtype)
    return Kernel(name, "im2col", dtype, bytes_read=cs.x_read * e, bytes_written=cs.cols * e, launches=cs.n, op="im2col")


def _col2im(name: str, cs: _Shape, dtype: str) -> Kernel:
    """col2im: folds the columns' gradient into dx: reads the columns, writes x, one add per column element
    (autograd's bookkeeping: no model FLOPs, as the unfold has none)."""
    e = element_bytes(dtype)
    return Kernel(name, "im2col", dtype, vector_flops=cs.cols, bytes_read=cs.cols * e, bytes_written=cs.x * e,
                  model_flops=0.0, launches=cs.n, op="im2col")


def _conv2d_backward(label: str, **a: Any) -> Workload:
    """Data and weight gradients, each with the forward's FLOPs, around the layout's own transforms.

    nhwc (and a direct 1x1 NCHW conv): dgrad reads dy and w, writes dx; wgrad reads x and dy, writes dw.
    nchw (not direct): dy is first transformed to NHWC (read, write y) and dx back (read, write x); NB: wgrad
      reads the forward's NHWC copy of x, as if kept.
    im2col: dcols = dy @ w^T and dw = cols^T @ dy (the GEMM's gradients), and ``_col2im`` folds dcols into dx.
    """
    cs = _Shape(a)
    dtype, layout = a["dtype"], a["layout"]
    e = element_bytes(dtype)
    if layout == "im2col":
        g = cs.gemm
        dcols, wgrad = gemm_backward(label, g.m, g.n, g.k, dtype, g.batch)
        return Workload.of(f"{label} backward", ((dcols, 1), (_col2im(f"{label} col2im", cs, dtype), 1), (wgrad, 1)))
    dgrad = _conv_kernel(f"{label} dgrad", cs, dtype, (cs.y + cs.weights) * e, cs.x * e)
    wgrad = _conv_kernel(f"{label} wgrad", cs, dtype, (cs.x_read + cs.y) * e, cs.weights * e)
    if layout == "nhwc" or all_(cs.direct_nchw):
        return Workload.of(f"{label} backward", ((dgrad, 1), (wgrad, 1)))
    present = where(cs.direct_nchw, 0.0, 1.0)
    return Workload.of(f"{label} backward", (
        (_transform(f"{label} dy nchw->nhwc", cs.y, dtype, present, cs.k), 1), (dgrad, 1), (wgrad, 1),
        (_transform(f"{label} dx nhwc->nchw", cs.x, dtype, present, cs.c), 1),
    ))


_CONV_PARAMS = dict(
    batch=size("images (N)"),
    in_channels=size("input channels (C)"),
    height=size("input height (H)"),
    width=size("input width (W)"),
    out_channels=size("output channels (K)"),
    kernel=pair("filter size R,S"),
    stride=pair("stride"),
    padding=pair("zero padding on each side", minimum=0),
    groups=size("groups (C and K must be multiples; C = K = groups is depthwise)"),
    layout=option("nhwc: implicit GEMM; nchw: with layout transforms; im2col: explicit unfold + GEMM", *LAYOUTS),
    dtype=precision(),
    dilation=pair("dilation"),
)


@operator(
    "conv2d",
    params=_CONV_PARAMS,
    kinds=("conv", "layout", "im2col", "gemm"),
    keys=("conv2d", "conv2d_grouped", "conv2d_depthwise", "conv2d_nativedw", "conv2d_unaligned",
          "conv2d_transformed"),
    aten=("aten::convolution", "aten::_convolution", "aten::conv2d", "aten::cudnn_convolution"),
    aten_backward=("aten::convolution_backward",),
    backward=_conv2d_backward,
    check=_check_conv,
    example=dict(batch=32, in_channels=64, height=56, width=56, out_channels=64, kernel=3, padding=1),
)
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
    layout: Any = "nhwc",
    dtype: Any = "bf16",
    dilation: Any = 1,
) -> Workload:
    """A 2-D convolution. ``kernel``, ``stride``, ``padding``, ``dilation``: an int or a pair (h, w).

    x read counts the pixels some window touches, N*C*H'*W' with H' = min(H, Ho*R), W' = min(W, Wo*S)
    (a stride beyond the filter skips the rest: a 1x1 conv of stride 2 reads a quarter of x); below,
    "N*C*H*W" read is N*C*H'*W'.
    nhwc: one implicit-GEMM kernel; bytes x + w + y = (N*C*H*W + K*(C/g)*R*S + N*K*Ho*Wo)*e.
    nchw: a 1x1, stride-1, unpadded conv is a direct GEMM, and a depthwise conv (C = groups) and a
      conv of fewer than 16 bytes of input channels (C*e < 16, groups = 1: an RGB stem) a direct
      kernel, as PyTorch and cuDNN run them (bytes as nhwc); any other conv adds
      a transform of x to NHWC before (read x, write x) and of y back after (read y, write y):
      bytes (3*N*C*H*W + K*(C/g)*R*S + 3*N*K*Ho*Wo)*e, three kernels.
    im2col: one kernel reads x and writes the column matrix [N*Ho*Wo, C*R*S] (classic
      implementations launch it once per image: ``launches`` = N), then a GEMM reads it and w
      and writes y: bytes (N*C*H*W + 2*N*Ho*Wo*C*R*S + K*(C/g)*R*S + N*K*Ho*Wo)*e.
    FLOPs: 2*N*K*Ho*Wo*(C/g)*R*S. Grouped convs are ``groups`` GEMMs of K/g columns.
    """
    cs = _Shape(dict(batch=batch, in_channels=in_channels, height=height, width=width, out_channels=out_channels,
                     kernel=kernel, stride=stride, padding=padding, groups=groups, dilation=dilation))
    e = element_bytes(dtype)
    conv = _conv_kernel("conv (implicit gemm)", cs, dtype, (cs.x_read + cs.weights) * e, cs.y * e, layout)
    if layout == "nhwc":
        return single("conv2d (nhwc)", conv)
    if layout == "nchw":
        if all_(cs.direct_1x1):
            return single("conv2d (nchw, direct 1x1)", conv.renamed("conv (nchw 1x1 gemm)"))
        if all_(cs.direct_nchw):
            return single("conv2d (nchw, depthwise)", conv.renamed("conv (nchw depthwise)"))
        # fewer than 16 bytes of input channels (an RGB stem): cuDNN convolves NCHW directly (implicit_convolve_sgemm)
        few = (cs.g == 1) & (cs.c * e < FEW_CHANNEL_BYTES)
        if all_(few):
            return single("conv2d (nchw, few channels)", conv.renamed("conv (nchw direct, few channels)"))
        present = where(cs.direct_nchw | few, 0.0, 1.0)  # a sweep: transforms only where needed
        return Workload.of("conv2d (nchw)", (
            (_transform("nchw->nhwc (x)", cs.x_read, dtype, present, cs.c), 1),
            (conv, 1),
            (_transform("nhwc->nchw (y)", cs.y, dtype, present, cs.k), 1),
        ))
    g = cs.gemm
    # cols [N*Ho*Wo, C*R*S]; per group cols [N*Ho*Wo, (C/g)*R*S] @ w [(C/g)*R*S, K/g] -> y [N*Ho*Wo, K/g]
    return Workload.of("conv2d (im2col)", ((_unfold("im2col", cs, dtype), 1),
                                           (gemm("gemm (cols @ w)", g.m, g.n, g.k, dtype, g.batch), 1)))


@operator(
    "im2col",
    params={k: _CONV_PARAMS[k] for k in ("batch", "in_channels", "height", "width", "kernel", "stride", "padding",
                                          "dilation", "dtype")},
    kinds=("im2col",),
    aten=("aten::im2col",),
    aten_backward=("aten::col2im",),
    backward=lambda label, **a: _im2col_backward(label, a),
    check=check_window,
    example=dict(batch=32, in_channels=64, height=56, width=56, kernel=3, padding=1),
)
def im2col(
    batch: Any,
    in_channels: Any,
    height: Any,
    width: Any,
    kernel: Any = 3,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    dtype: Any = "bf16",
) -> Workload:
    """Unfold x [N,C,H,W] into the column matrix [N*Ho*Wo, C*R*S] (``F.unfold``), one launch per image.

    Bytes: N*C*H*W*e read, N*Ho*Wo*C*R*S*e written; no FLOPs.
    """
    cs = _im2col_shape(dict(batch=batch, in_channels=in_channels, height=height, width=width, kernel=kernel,
                            stride=stride, padding=padding, dilation=dilation))
    return single("im2col", _unfold("im2col", cs, dtype))


def _im2col_backward(label: str, a: dict[str, Any]) -> Workload:
    """col2im of the columns' gradient."""
    return single(f"{label} backward", _col2im(f"{label} backward", _im2col_shape(a), a["dtype"]))


def _im2col_shape(a: dict[str, Any]) -> _Shape:
    """An unfold's extents: a conv's with one group and as many outputs as inputs (no weights involved)."""
    return _Shape({**a, "out_channels": a["in_channels"], "groups": 1.0})


@operator(
    "layout_transform",
    params=dict(elements=size("elements of the tensor"), dtype=precision()),
    kinds=("layout",),
    backward=MEMORY_BOUND,
    example=dict(elements=32 * 64 * 56 * 56),
)
def layout_transform(elements: Any, dtype: Any = "bf16") -> Workload:
    """An NCHW <-> NHWC transform (a strided copy): reads and writes ``elements``. Bytes 2*elements*e; no FLOPs."""
    return single("layout_transform", _transform("layout_transform", elements, dtype))
