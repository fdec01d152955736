"""Arithmetic on figures that are either Python floats (one shape) or float64 arrays (a sweep).

Counting formulas and the predictor use ``+ - * /`` and comparisons, which work on both, and
these helpers for the rest: each takes a fast path of plain Python when every argument is a
float (a scalar call costs microseconds, not numpy's per-call overhead) and numpy otherwise
(a sweep of a million shapes is one pass per step). A fresh array of a million float64 costs
more than the pass that fills it (the page faults of 8 MB), so the helpers take ``out=``
where a formula can reuse a buffer (``work_buffer``).
"""

from __future__ import annotations

import math
from typing import Any, Union

import numpy as np

__all__ = ["Num", "is_array", "maximum", "minimum", "where", "mul", "div", "ceil", "floor", "clip", "product", "work_buffer", "any_",
           "all_", "not_", "shape_of", "broadcast_to", "result", "off", "off_each"]

#: a figure: a float for one shape, a float64 array for a sweep
Num = Union[float, np.ndarray]


def is_array(x: Any) -> bool:
    """Whether ``x`` is an array (a sweep), not a Python scalar."""
    return isinstance(x, np.ndarray)


def maximum(a: Any, b: Any, out: Any = None) -> Any:
    """Elementwise max (into ``out``, a float64 array of the broadcast shape, when given and not a scalar call)."""
    if type(a) is float and type(b) is float:
        return a if a >= b else b
    return np.maximum(a, b, out=out)


def minimum(a: Any, b: Any, out: Any = None) -> Any:
    """Elementwise min."""
    if type(a) is float and type(b) is float:
        return a if a <= b else b
    return np.minimum(a, b, out=out)


def where(condition: Any, a: Any, b: Any) -> Any:
    """``a`` where ``condition`` holds, else ``b``."""
    if type(condition) is bool:
        return a if condition else b
    return np.where(condition, a, b)


def mul(a: Any, b: Any, out: Any = None) -> Any:
    """a * b."""
    if type(a) is float and type(b) is float:
        return a * b
    return np.multiply(a, b, out=out)


def div(a: Any, b: Any, out: Any = None) -> Any:
    """a / b."""
    if type(a) is float and type(b) is float:
        return a / b
    return np.divide(a, b, out=out)


def ceil(x: Any, out: Any = None) -> Any:
    """Elementwise ceiling, as float."""
    if type(x) is float:
        return float(math.ceil(x))
    return np.ceil(x, out=out)


def floor(x: Any, out: Any = None) -> Any:
    """Elementwise floor, as float."""
    if type(x) is float:
        return float(math.floor(x))
    return np.floor(x, out=out)


def clip(x: Any, low: Any, high: Any, out: Any = None) -> Any:
    """``x`` limited to [low, high] (low wins if they cross, as numpy's clip)."""
    if type(x) is float and type(low) is float and type(high) is float:
        return max(low, min(x, high))
    return np.clip(x, low, high, out=out)


def product(*factors: Any, out: Any = None) -> Any:
    """The product of the factors, the scalars multiplied first (a sweep then takes one pass per array factor); into
    ``out`` (a float64 array the caller has spent, of the product's shape) when given and not a scalar call."""
    scalar = 1.0
    arrays = []
    for f in factors:
        if type(f) is float or type(f) is int:
            scalar *= f
        else:
            arrays.append(f)
    if not arrays:
        return float(scalar)
    if type(out) is np.ndarray and out.dtype == np.float64 and out.shape == np.broadcast_shapes(*(np.shape(a) for a in arrays)):
        out = np.multiply(arrays[0], scalar, out=out)
    elif scalar == 1.0 and len(arrays) > 1 and all(type(a) is np.ndarray and a.dtype == np.float64 for a in arrays[:2]):
        out = arrays[0] * arrays[1]  # x * 1.0 is x, bit for bit: its pass skipped
        arrays = arrays[1:]
    else:
        out = arrays[0] * scalar
    for a in arrays[1:]:
        out = np.multiply(out, a, out=out) if np.shape(a) == out.shape else out * a
    return out


def work_buffer(shape: tuple[int, ...]) -> Any:
    """A float64 array of ``shape`` for ``out=`` (None for one shape): a sweep's steps reuse it instead of allocating."""
    return np.empty(shape) if shape else None


def off(x: Any, d: float) -> Any:
    """``x % d != 0``: whether ``x`` is not a multiple of ``d`` (elementwise).

    A sweep of finite ``x`` against a power of two ``d`` >= 1 takes x != floor(x / d) * d, exact there (x / d and the
    product only shift the exponent; below d, floor(x / d) is 0) and far faster than numpy's float remainder, in one
    buffer (where every x is at least 1, floor(x / d) != x / d, the same test: ``_off_whole``); anything else takes
    ``%``.
    """
    if type(x) is float or type(x) is int or not isinstance(x, np.ndarray) or x.dtype != np.float64 or not x.size:
        return x % d != 0
    low = x.min()
    if not (d >= 1.0 and math.frexp(d)[0] == 0.5 and np.isfinite(low) and np.isfinite(x.max())):
        return x % d != 0
    return _off_whole(x, (d,))[0] if low >= 1.0 else _off_by(x, d, np.empty_like(x))


def off_each(x: Any, ds: tuple[float, ...]) -> list[Any]:
    """``[off(x, d) for d in ds]``: a sweep's finiteness checked once and its buffers shared by every ``d`` (powers of
    two >= 1: ``off``'s fast path, the same operations), else ``off`` for each."""
    if type(x) is float:  # one shape: off's own test, without its checks
        return [x % d != 0 for d in ds]
    if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.size
            and all(d >= 1.0 and math.frexp(d)[0] == 0.5 for d in ds)):
        return [off(x, d) for d in ds]
    low = x.min()
    if not (np.isfinite(low) and np.isfinite(x.max())):
        return [off(x, d) for d in ds]
    if low >= 1.0:
        return _off_whole(x, ds)
    y = np.empty_like(x)
    return [_off_by(x, d, y) for d in ds]


def _off_by(x: np.ndarray, d: float, y: np.ndarray) -> np.ndarray:
    """``off``'s fast path, in the buffer ``y`` (a second fresh 8 MB array of a million, its page faults, cost 4x
    the passes)."""
    np.multiply(x, 1.0 / d, out=y)
    np.floor(y, out=y)
    np.multiply(y, d, out=y)
    return y != x


#: ``_off_whole`` tests this many elements at a time (its scratch figures stay in cache)
OFF_BLOCK = 1 << 14


def _off_whole(x: np.ndarray, ds: tuple[float, ...]) -> list[np.ndarray]:
    """``off_each``'s fast path where every x is at least 1: x / d is exact (no subnormal) and its product by d exact
    and one-to-one, so floor(x / d) != x / d is ``_off_by``'s test with a pass fewer; in blocks of ``OFF_BLOCK``
    elements (two scratch figures of a block: no fresh 8 MB arrays but the masks)."""
    flat = x.reshape(-1)  # (a copy where x is not contiguous)
    masks = [np.empty(x.shape, dtype=bool) for _ in ds]
    outs = [mask.reshape(-1) for mask in masks]
    y, floored = np.empty(min(OFF_BLOCK, flat.size)), np.empty(min(OFF_BLOCK, flat.size))
    for start in range(0, flat.size, OFF_BLOCK):
        part = flat[start:start + OFF_BLOCK]
        y, floored = y[:len(part)], floored[:len(part)]
        for d, out in zip(ds, outs):
            np.multiply(part, 1.0 / d, out=y)
            np.floor(y, out=floored)
            np.not_equal(floored, y, out=out[start:start + OFF_BLOCK])
    return masks


def any_(x: Any) -> bool:
    """Whether any element is true (non-zero)."""
    return bool(x) if type(x) is bool or type(x) is float else bool(np.any(x))


def all_(x: Any) -> bool:
    """Whether every element is true."""
    return bool(x) if type(x) is bool else bool(np.all(x))


def not_(x: Any) -> Any:
    """Elementwise logical not (``~`` on a Python bool would give -2)."""
    return (not x) if type(x) is bool else np.logical_not(x)


def shape_of(*xs: Any) -> tuple[int, ...]:
    """The broadcast shape of figures (() when all are scalars)."""
    shapes = None
    for x in xs:
        if type(x) is np.ndarray:
            if shapes is None:
                shapes = [x.shape]
            else:
                shapes.append(x.shape)
    if shapes is None:
        return ()
    return shapes[0] if len(shapes) == 1 else np.broadcast_shapes(*shapes)


def broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    """``x`` as an array of ``shape`` (a read-only view when it must grow), or as a Python scalar when ``shape`` is ()."""
    if not shape:
        return result(x)
    if isinstance(x, np.ndarray) and x.shape == shape:
        return x
    return np.broadcast_to(x, shape)


def result(x: Any) -> Any:
    """A figure as the API hands it out: a Python float (or bool, str) for one shape, an array for a sweep."""
    if isinstance(x, np.ndarray):
        return x.item() if x.ndim == 0 else x
    if isinstance(x, np.generic):
        return x.item()
    return x
