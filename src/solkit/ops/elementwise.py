"""Elementwise and row-wise kernels: ``elementwise``, ``add``, ``gelu``, ``silu``, ``copy``, ``softmax``.

Broadcasting and mixed-precision pointwise ATen ops (aten::add, aten::mul, ...) map to ``ops.pointwise``.

Vector FLOPs per element (a stated convention; on any GPU these kernels are memory-bound):
add 1, relu 1, silu 4 (exp, add, divide, multiply), gelu 8 (tanh form), copy 0,
softmax 5 (max, subtract, exp, sum, divide). Backward: ``memory_bound_backward``.
"""

from __future__ import annotations

from typing import Any, Optional


from ..workload import Kernel, Rows, Workload
from ._common import times, element_bytes, single
from .registry import MEMORY_BOUND, operator, precision, size, text

__all__ = ["elementwise", "add", "gelu", "silu", "copy", "softmax", "FLOPS_PER_ELEMENT", "pointwise"]

FLOPS_PER_ELEMENT = {"add": 1, "relu": 1, "silu": 4, "gelu": 8, "copy": 0, "softmax": 5}

_ELEMENTS = size("output elements")


def pointwise(name: str, elements: Any, inputs: Any, outputs: Any, flops_per_element: Any, dtype: str,
              kind: str = "elementwise", op: str = "elementwise", rows: Optional[Rows] = None) -> Kernel:
    """One elementwise kernel: reads ``inputs`` and writes ``outputs`` tensors of ``elements`` each.

    Bytes (inputs + outputs)*elements*e; FLOPs flops_per_element*elements (vector).
    """
    e = element_bytes(dtype)
    return Kernel(name, kind, dtype, vector_flops=times(flops_per_element, elements),
                  bytes_read=times(inputs, elements * e), bytes_written=outputs * elements * e, op=op, rows=rows)


@operator(
    "elementwise",
    params=dict(elements=_ELEMENTS, inputs=size("tensors read", minimum=0), outputs=size("tensors written"),
                flops_per_element=size("vector FLOPs per output element", minimum=0), dtype=precision(),
                name=text("the kernel's name")),
    kinds=("elementwise",),
    backward=MEMORY_BOUND,
    example=dict(elements=1 << 20, inputs=2, outputs=1, flops_per_element=1),
)
def elementwise(
    elements: Any,
    inputs: Any = 1,
    outputs: Any = 1,
    flops_per_element: Any = 1,
    dtype: Any = "bf16",
    name: Any = "elementwise",
) -> Workload:
    """A general elementwise kernel over ``elements`` output elements.

    Bytes: (inputs + outputs) * elements * e. FLOPs: flops_per_element * elements (vector).
    """
    return single(name, pointwise(name, elements, inputs, outputs, flops_per_element, dtype))


@operator("add", params=dict(elements=_ELEMENTS, dtype=precision()), kinds=("elementwise",), backward=MEMORY_BOUND,
          example=dict(elements=1 << 20))
def add(elements: Any, dtype: Any = "bf16") -> Workload:
    """z = x + y: reads 2 tensors, writes 1. Bytes 3*elements*e; FLOPs 1 per element."""
    return single("add", pointwise("add", elements, 2.0, 1.0, FLOPS_PER_ELEMENT["add"], dtype, op="add"))


@operator("gelu", params=dict(elements=_ELEMENTS, dtype=precision()), kinds=("elementwise",),
          aten=("aten::gelu",), aten_backward=("aten::gelu_backward",), backward=MEMORY_BOUND,
          example=dict(elements=1 << 20))
def gelu(elements: Any, dtype: Any = "bf16") -> Workload:
    """y = gelu(x): bytes 2*elements*e; FLOPs 8 per element (tanh form)."""
    return single("gelu", pointwise("gelu", elements, 1.0, 1.0, FLOPS_PER_ELEMENT["gelu"], dtype, op="gelu"))


@operator("silu", params=dict(elements=_ELEMENTS, dtype=precision()), kinds=("elementwise",),
          aten=("aten::silu", "aten::silu_"), aten_backward=("aten::silu_backward",), backward=MEMORY_BOUND,
          example=dict(elements=1 << 20))
def silu(elements: Any, dtype: Any = "bf16") -> Workload:
    """y = x * sigmoid(x): bytes 2*elements*e; FLOPs 4 per element."""
    return single("silu", pointwise("silu", elements, 1.0, 1.0, FLOPS_PER_ELEMENT["silu"], dtype, op="silu"))


def _copy_backward(label: str, elements: Any, dtype: str, out_dtype: Any) -> Workload:
    """dx = dy cast back to the source's precision (autograd's ToCopyBackward): reads elements*e_out, writes elements*e.

    No FLOPs (twice the forward's 0). A plain copy (no cast) reads and writes elements*e.
    """
    kernel = Kernel(f"{label} backward", "copy", out_dtype or dtype,
                    bytes_read=elements * element_bytes(out_dtype or dtype), bytes_written=elements * element_bytes(dtype),
                    op="copy")
    return single(f"{label} backward", kernel)


@operator("copy", params=dict(elements=_ELEMENTS, dtype=precision("precision of the source"),
                             out_dtype=precision("precision of the destination (a cast; default: dtype)", optional=True)),
          kinds=("copy",), keys=("copy", "copy_upcast", "copy_downcast"),
          aten=("aten::copy_", "aten::clone", "aten::_to_copy"), backward=_copy_backward, example=dict(elements=1 << 20))
def copy(elements: Any, dtype: Any = "bf16", out_dtype: Any = None) -> Workload:
    """y = x (a device-to-device copy, or a cast to ``out_dtype``): bytes elements*(e + e_out); no FLOPs.

    Backward: dy cast back, elements*(e_out + e) (autograd's ToCopyBackward reads only dy).
    """
    if out_dtype is None or out_dtype == dtype:
        return single("copy", pointwise("copy", elements, 1.0, 1.0, 0, dtype, kind="copy", op="copy"))
    # x [elements] in dtype -> y [elements] in out_dtype
    kernel = Kernel("cast", "copy", dtype, bytes_read=elements * element_bytes(dtype),
                    bytes_written=elements * element_bytes(out_dtype), op="copy")
    return single("copy (cast)", kernel)


@operator(
    "softmax",
    params=dict(rows=size("rows (softmax runs along each row)"), cols=size("elements per row"), dtype=precision()),
    keys=("softmax", "softmax_wide"),
    kinds=("reduction",),
    aten=("aten::_softmax", "aten::softmax", "aten::_log_softmax", "aten::log_softmax"),
    aten_backward=("aten::_softmax_backward_data", "aten::_log_softmax_backward_data"),
    backward=MEMORY_BOUND,
    example=dict(rows=32768, cols=4096),
)
def softmax(rows: Any, cols: Any, dtype: Any = "bf16") -> Workload:
    """Softmax over the last dim of a [rows, cols] tensor, one kernel.

    Bytes: 2*rows*cols*e (x in, y out). FLOPs: 5*rows*cols (vector).
    A log-softmax (aten::_log_softmax: max, subtract, exp, sum, subtract the log) counts the same.
    """
    elements = rows * cols  # x [rows, cols] -> y [rows, cols]
    return single("softmax", pointwise("softmax", elements, 1.0, 1.0, FLOPS_PER_ELEMENT["softmax"], dtype,
                                       kind="reduction", op="softmax", rows=Rows(rows, cols)))
