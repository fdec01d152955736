"""2-D pooling: max or average over a window, one kernel."""

from __future__ import annotations

from typing import Any

from ..workload import Kernel, Workload
from ._common import element_bytes, single
from .conv import _check_window, _extent
from .registry import MEMORY_BOUND, operator, option, pair, precision, size

__all__ = ["pool2d", "POOL_MODES"]

POOL_MODES = ("max", "avg")


@operator(
    "pool2d",
    params=dict(batch=size("images (N)"), channels=size("channels (C)"), height=size("input height (H)"),
                width=size("input width (W)"), kernel=pair("window R,S"), stride=pair("stride"),
                padding=pair("padding on each side", minimum=0), mode=option("max or average", *POOL_MODES),
                dtype=precision()),
    kinds=("reduction",),
    aten=("aten::max_pool2d_with_indices", "aten::max_pool2d", "aten::avg_pool2d", "aten::adaptive_avg_pool2d"),
    aten_backward=("aten::max_pool2d_with_indices_backward", "aten::avg_pool2d_backward"),
    backward=MEMORY_BOUND,
    check=lambda args: _check_window({**args, "dilation": (1.0, 1.0)}),  # the window fits the padded input
    example=dict(batch=32, channels=64, height=112, width=112, kernel=3, stride=2, padding=1),
)
def pool2d(
    batch: Any,
    channels: Any,
    height: Any,
    width: Any,
    kernel: Any = 2,
    stride: Any = 2,
    padding: Any = 0,
    mode: Any = "max",
    dtype: Any = "bf16",
) -> Workload:
    """y [N,C,Ho,Wo] = the max (or mean) of each R x S window of x [N,C,H,W].

    Ho = (H + 2*pad - R) // stride + 1 (likewise Wo). Bytes N*C*H*W*e read, N*C*Ho*Wo*e
    written. FLOPs: R*S per output element (compares or adds; vector).
    """
    (r, s), (sh, sw), (ph, pw) = kernel, stride, padding
    ho, wo = _extent(height, r, sh, ph, 1.0), _extent(width, s, sw, pw, 1.0)
    e = element_bytes(dtype)
    outputs = batch * channels * ho * wo  # y [N,C,Ho,Wo]
    kernel_ = Kernel(f"{mode}pool", "reduction", dtype, vector_flops=r * s * outputs,
                     bytes_read=batch * channels * height * width * e, bytes_written=outputs * e, op="pool2d")
    return single(f"pool2d ({mode})", kernel_)
