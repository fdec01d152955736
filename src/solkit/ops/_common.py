"""Counting helpers shared by the operator modules (validated arguments in, kernels out)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._num import floor
from .._validate import first_bad
from ..errors import ShapeError
from ..precision import DEFAULT_OUT, PRECISIONS
from ..workload import Kernel, Workload

__all__ = ["element_bytes", "out_precision", "single", "memory_bound_backward", "at_most", "divisible", "extent",
           "check_fits", "check_window"]


def element_bytes(precision: str) -> float:
    """Storage bytes of one element of a canonical precision."""
    return PRECISIONS[precision]


def out_precision(dtype: str, out_dtype: Any = None) -> str:
    """A matmul's output precision: ``out_dtype``, else the input's (fp8 -> bf16, int8 -> int32)."""
    return out_dtype if out_dtype is not None else DEFAULT_OUT.get(dtype, dtype)


def single(name: str, kernel: Kernel) -> Workload:
    """A workload of one kernel."""
    return Workload.of(name, ((kernel, 1),))


def memory_bound_backward(label: str, forward: Workload) -> Workload:
    """The backward of memory-bound kernels, each from its own forward counts, in reverse order.

    Each reads what its forward read plus the gradient of what it wrote, writes a gradient
    of each input, and executes twice its forward's FLOPs (counted as model FLOPs, so a
    step's model FLOPs are 3x the forward's). NB: a convention; for an add, whose gradient
    autograd passes through without a kernel, it is an upper bound.
    """
    kernels = []
    for k, count in reversed(forward.counted):
        name = f"{label} backward" if len(forward.counted) == 1 else f"{label} {k.name} backward"
        back = Kernel(name, k.kind, k.precision, matrix_flops=2.0 * k.matrix_flops, vector_flops=2.0 * k.vector_flops,
                      bytes_read=k.bytes_read + k.bytes_written, bytes_written=k.bytes_read,
                      model_flops=2.0 * k.model_flops, vector_precision=k.vector_precision, op=k.op)
        kernels.append((back, count))
    return Workload.of(f"{label} backward", tuple(kernels))


def at_most(name: str, value: Any, limit_name: str, limit: Any) -> None:
    """Raise unless ``value`` <= ``limit`` everywhere (arrays report the first bad index)."""
    if type(value) is float and type(limit) is float:  # pragma: no mutate (the array path gives the same)
        if value > limit:
            raise ShapeError(f"{name} must be at most {limit_name}, got {value:g}")
        return
    value, limit = np.broadcast_arrays(value, limit)
    first_bad(name, value, value > limit, f"at most {limit_name}")


def divisible(name: str, value: Any, by_name: str, by: Any) -> None:
    """Raise unless ``value`` is a multiple of ``by`` everywhere (arrays report the first bad index)."""
    if type(value) is float and type(by) is float:  # pragma: no mutate (the array path gives the same)
        if value % by:
            raise ShapeError(f"{name} must be a multiple of {by_name}, got {name}={value:g} and {by_name}={by:g}")
        return
    value, by = np.broadcast_arrays(value, by)
    bad = np.mod(value, by) != 0
    if bad.any():
        i = tuple(int(j) for j in np.argwhere(bad)[0])
        raise ShapeError(
            f"{name} must be a multiple of {by_name}, got {name}={value[i]:g} and {by_name}={by[i]:g} at index "
            f"{i[0] if len(i) == 1 else i}"
        )


def times(count: Any, x: Any) -> Any:
    """count * x, kept a scalar 0.0 when count is the scalar 0 (a sweep then carries no array of zeros)."""
    return 0.0 if not isinstance(count, np.ndarray) and count == 0 else count * x  # pragma: no mutate (0 * x is 0)


def extent(size_: Any, kernel: Any, stride: Any, padding: Any, dilation: Any) -> Any:
    """Output extent along one axis, from validated values."""
    return floor((size_ + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1


def check_fits(axis: str, size_: Any, kernel: Any, padding: Any, dilation: Any) -> None:
    """The dilated kernel must fit the padded input along ``axis``."""
    span = dilation * (kernel - 1) + 1
    padded = size_ + 2 * padding
    bad = padded < span
    if type(bad) is bool:  # pragma: no mutate (one shape; the array path gives the same)
        if bad:
            raise ShapeError(f"kernel (dilated extent {span:g}) must fit the padded input along {axis}: "
                             f"{axis} {size_:g} + 2*padding {padding:g} = {padded:g} < {span:g}")
        return
    span, padded, size_, padding, bad = np.broadcast_arrays(span, padded, size_, padding, bad)
    if bad.any():
        i = tuple(int(j) for j in np.argwhere(bad)[0])  # arrays here have at least one dimension
        raise ShapeError(f"kernel (dilated extent {span[i]:g}) must fit the padded input along {axis}: "
                         f"{axis} {size_[i]:g} + 2*padding {padding[i]:g} = {padded[i]:g} < {span[i]:g} "
                         f"at index {i[0] if len(i) == 1 else i}")


def check_window(args: dict[str, Any]) -> None:
    """The kernel fits the padded input along both axes."""
    (r, s), (ph, pw), (dh, dw) = args["kernel"], args["padding"], args["dilation"]
    check_fits("height", args["height"], r, ph, dh)
    check_fits("width", args["width"], s, pw, dw)
