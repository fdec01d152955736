"""Elementwise and row-wise kernels: ``elementwise``, ``add``, ``gelu``, ``silu``, ``copy``, ``softmax``.

Vector FLOPs per element (a stated convention; on any GPU these kernels are memory-bound):
add 1, relu 1, silu 4 (exp, add, divide, multiply), gelu 8 (tanh form), copy 0,
softmax 5 (max, subtract, exp, sum, divide).
"""

from __future__ import annotations

from typing import Any

from .._validate import broadcast, dim
from ..errors import ArgumentTypeError
from ..precision import storage_bytes
from ..workload import Kernel, Workload
from ._common import dtype_of

__all__ = ["elementwise", "add", "gelu", "silu", "copy", "softmax", "FLOPS_PER_ELEMENT"]

FLOPS_PER_ELEMENT = {"add": 1, "relu": 1, "silu": 4, "gelu": 8, "copy": 0, "softmax": 5}


def elementwise(
    elements: Any,
    inputs: Any = 1,
    outputs: Any = 1,
    flops_per_element: Any = 1,
    dtype: Any = "bf16",
    name: str = "elementwise",
) -> Workload:
    """A general elementwise kernel over ``elements`` output elements.

    Bytes: (inputs + outputs) * elements * e. FLOPs: flops_per_element * elements (vector).
    """
    dt = dtype_of(dtype)
    n = dim("elements", elements)
    i = dim("inputs", inputs, minimum=0)
    o = dim("outputs", outputs)
    f = dim("flops_per_element", flops_per_element, minimum=0)
    broadcast(elements=n, inputs=i, outputs=o, flops_per_element=f)
    if not isinstance(name, str) or not name:
        raise ArgumentTypeError(f"name must be a non-empty string, got {name!r}")
    e = storage_bytes(dt)
    kernel = Kernel(
        name=name,
        kind="copy" if name == "copy" else "elementwise",
        precision=dt,
        vector_flops=f * n,
        bytes_read=i * n * e,
        bytes_written=o * n * e,
    )
    return Workload(name, (kernel,))


def add(elements: Any, dtype: Any = "bf16") -> Workload:
    """z = x + y: reads 2 tensors, writes 1. Bytes 3*elements*e; FLOPs 1 per element."""
    return elementwise(elements, inputs=2, outputs=1, flops_per_element=FLOPS_PER_ELEMENT["add"], dtype=dtype, name="add")


def gelu(elements: Any, dtype: Any = "bf16") -> Workload:
    """y = gelu(x): bytes 2*elements*e; FLOPs 8 per element (tanh form)."""
    return elementwise(elements, 1, 1, FLOPS_PER_ELEMENT["gelu"], dtype, "gelu")


def silu(elements: Any, dtype: Any = "bf16") -> Workload:
    """y = x * sigmoid(x): bytes 2*elements*e; FLOPs 4 per element."""
    return elementwise(elements, 1, 1, FLOPS_PER_ELEMENT["silu"], dtype, "silu")


def copy(elements: Any, dtype: Any = "bf16") -> Workload:
    """y = x (a device-to-device copy): bytes 2*elements*e; no FLOPs."""
    return elementwise(elements, 1, 1, FLOPS_PER_ELEMENT["copy"], dtype, "copy")


def softmax(rows: Any, cols: Any, dtype: Any = "bf16") -> Workload:
    """Softmax over the last dim of a [rows, cols] tensor, one kernel.

    Bytes: 2*rows*cols*e (x in, y out). FLOPs: 5*rows*cols (vector).
    """
    dt = dtype_of(dtype)
    r, c = dim("rows", rows), dim("cols", cols)
    broadcast(rows=r, cols=c)
    e = storage_bytes(dt)
    kernel = Kernel(
        name="softmax",
        kind="reduction",
        precision=dt,
        vector_flops=FLOPS_PER_ELEMENT["softmax"] * r * c,
        bytes_read=r * c * e,
        bytes_written=r * c * e,
    )
    return Workload("softmax", (kernel,))
