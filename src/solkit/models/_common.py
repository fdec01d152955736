"""Helpers shared by the model builders: errors that name the model's own arguments."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ..errors import ShapeError
from ..workload import is_overflow, overflow

__all__ = ["naming_overflow", "count_text"]


def count_text(n: int) -> str:
    """A count, short: 1,000,000 up to 10**21, then 1e+24, or the digits of one beyond float64."""
    if n < 10**21:
        return f"{n:,}"
    return f"{n:.4g}" if n < 10**300 else f"an integer of {len(str(n))} digits"


def _shown(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return f"{float(value.max()):g} (largest)" if value.size else "[]"
    return f"{value:g}" if isinstance(value, float) else count_text(value) if isinstance(value, int) else repr(value)


@contextmanager
def naming_overflow(function: str, **dims: Any) -> Iterator[None]:
    """Re-raise a figure beyond float64 from an operator inside ``function`` naming ``function``'s own arguments."""
    try:
        yield
    except ShapeError as exc:
        if not is_overflow(exc):
            raise
        shown = ", ".join(f"{k}={_shown(v)}" for k, v in dims.items())
        raise overflow(ShapeError(f"{function}({shown}) is too large for float64: {exc}")) from None
