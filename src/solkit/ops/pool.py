"""2-D pooling: max or average over a window, one kernel."""

from __future__ import annotations

from typing import Any

from ..workload import Kernel, Workload
from ._common import check_window, element_bytes, extent, memory_bound_backward, single
from .embedding import INDEX_BYTES
from .registry import boolean, operator, option, pair, precision, size

__all__ = ["pool2d", "POOL_MODES"]

POOL_MODES = ("max", "avg")


@operator(
    "pool2d",
    params=dict(batch=size("images (N)"), channels=size("channels (C)"), height=size("input height (H)"),
                width=size("input width (W)"), kernel=pair("window R,S"), stride=pair("stride"),
                padding=pair("padding on each side", minimum=0), mode=option("max or average", *POOL_MODES),
                dtype=precision(),
                indices=boolean("also write the argmax of each window as int64 (max_pool2d_with_indices)")),
    kinds=("reduction",),
    aten=("aten::max_pool2d_with_indices", "aten::max_pool2d", "aten::avg_pool2d", "aten::adaptive_avg_pool2d",
          "aten::_adaptive_avg_pool2d"),
    aten_backward=("aten::max_pool2d_with_indices_backward", "aten::avg_pool2d_backward",
                   "aten::_adaptive_avg_pool2d_backward"),
    backward=lambda label, **a: _pool2d_backward(label, a),
    check=lambda args: check_window({**args, "dilation": (1.0, 1.0)}),  # the window fits the padded input
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
    indices: Any = False,
) -> Workload:
    """y [N,C,Ho,Wo] = the max (or mean) of each R x S window of x [N,C,H,W].

    Ho = (H + 2*pad - R) // stride + 1 (likewise Wo). Bytes N*C*H*W*e read, N*C*Ho*Wo*e
    written (+ N*C*Ho*Wo*8 with ``indices``: the int64 argmax that max_pool2d_with_indices keeps for
    its backward). FLOPs: R*S per output element (compares or adds; vector).
    """
    outputs = _outputs(batch, channels, height, width, kernel, stride, padding)  # y [N,C,Ho,Wo]
    e = element_bytes(dtype)
    r, s = kernel
    written = outputs * (e + INDEX_BYTES) if indices else outputs * e
    kernel_ = Kernel(f"{mode}pool", "reduction", dtype, vector_flops=r * s * outputs,
                     bytes_read=batch * channels * height * width * e, bytes_written=written, op="pool2d")
    return single(f"pool2d ({mode})", kernel_)


def _outputs(batch: Any, channels: Any, height: Any, width: Any, kernel: Any, stride: Any, padding: Any) -> Any:
    """Elements of y [N,C,Ho,Wo] from validated arguments."""
    (r, s), (sh, sw), (ph, pw) = kernel, stride, padding
    return batch * channels * extent(height, r, sh, ph, 1.0) * extent(width, s, sw, pw, 1.0)


def _pool2d_backward(label: str, a: dict[str, Any]) -> Workload:
    """Without indices, ``memory_bound_backward`` of the forward. With them (max_pool2d_with_indices_backward):
    reads dy and the indices (N*C*Ho*Wo*(e + 8)), writes dx (N*C*H*W*e); twice the forward's FLOPs."""
    forward = pool2d.__wrapped__(**a)  # type: ignore[attr-defined]  # the count function: a is validated
    if not a["indices"]:
        return memory_bound_backward(label, forward)
    k = forward.counted[0][0]
    outputs = _outputs(a["batch"], a["channels"], a["height"], a["width"], a["kernel"], a["stride"], a["padding"])
    back = k._replace(name=f"{label} backward", vector_flops=2.0 * k.vector_flops, model_flops=2.0 * k.model_flops,
                      bytes_read=outputs * (element_bytes(a["dtype"]) + INDEX_BYTES), bytes_written=k.bytes_read)
    return single(f"{label} backward", back)
