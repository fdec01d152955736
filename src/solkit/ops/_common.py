"""Helpers shared by the operator modules."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validate import first_bad, flag
from ..errors import ShapeError
from ..precision import normalize

__all__ = ["flag", "divisible", "dtype_of", "at_most"]


def at_most(name: str, value: np.ndarray, limit_name: str, limit: np.ndarray) -> None:
    """Raise unless ``value`` <= ``limit`` everywhere (arrays report the first bad index)."""
    value, limit = np.broadcast_arrays(value, limit)
    first_bad(name, value, value > limit, f"at most {limit_name}")


def divisible(name: str, value: np.ndarray, by_name: str, by: np.ndarray) -> None:
    """Raise unless ``value`` is a multiple of ``by`` everywhere (arrays report the first bad index)."""
    value, by = np.broadcast_arrays(value, by)
    bad = np.mod(value, by) != 0
    if bad.any():
        if bad.ndim == 0:
            raise ShapeError(f"{name} must be a multiple of {by_name}, got {name}={value.item():g} and {by_name}={by.item():g}")
        i = tuple(int(j) for j in np.argwhere(bad)[0])
        raise ShapeError(
            f"{name} must be a multiple of {by_name}, got {name}={value[i]:g} and {by_name}={by[i]:g} at index {i[0] if len(i) == 1 else i}"
        )


def dtype_of(dtype: Any) -> str:
    """Canonical precision of a ``dtype`` argument."""
    return normalize(dtype, "dtype")
