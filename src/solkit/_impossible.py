"""Impossible numbers: a measured time below its speed-of-light bound, a utilization above 1.

The contract (DESIGN, "Impossible measurements"): each time such a number is computed, an
``ImpossibleMeasurementWarning`` names the argument, the number and the bound, and the number is
still returned; with ``strict=True`` an ``ImpossibleMeasurementError`` is raised instead. A
measured time counts as below its bound only beyond float rounding: measured < bound x (1 - RTOL).
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable, Union

import numpy as np

from ._display import fmt_seconds
from .errors import ImpossibleMeasurementError, ImpossibleMeasurementWarning

__all__ = ["RTOL", "below_bound", "above_one"]

#: relative slack for float rounding: a time equal to T_SOL (sol_fraction 1.0) is possible
RTOL = 1e-9

CAUSES = ("usual causes: timing without torch.cuda.synchronize(), inputs left in L2 between repeats, "
          "or a workload that does less than the kernel timed")


def _where(mask: np.ndarray) -> tuple[tuple[int, ...], str]:
    """(first index, ' at index i (n of N elements)') of the first True of ``mask``; () and '' for a scalar."""
    if mask.ndim == 0:
        return (), ""
    index = tuple(int(i) for i in np.argwhere(mask)[0])
    shown = index[0] if len(index) == 1 else index
    return index, f" at index {shown} ({int(mask.sum())} of {mask.size} elements)"


#: what the bound is of: a text, or a function that makes it (only called when something is flagged)
What = Union[str, Callable[[], str]]


#: the folder of solkit's own modules: a warning points at the first frame outside it (the user's line)
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _text(what: What) -> str:
    return what if isinstance(what, str) else what()


def _emit(message: str, strict: bool, stacklevel: int) -> None:
    """Raise (strict) or warn; ``stacklevel`` as the flagging function's caller would pass it to warnings.warn.

    The warning is shown every time, not once per line as Python's default filter would: it goes
    through ``warn_explicit`` with a fresh registry (a filter set to "ignore" or "error" still applies).
    """
    if strict:
        raise ImpossibleMeasurementError(message + " (strict=True)")
    try:
        frame = sys._getframe(stacklevel + 1)  # 0 is _emit, 1 the flagging function, 2 its caller, ...
    except ValueError:  # pragma: no cover - called from the top of the stack
        frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):  # past solkit's wrappers
        frame = frame.f_back
    where = (frame.f_code.co_filename, frame.f_lineno)
    name = frame.f_globals.get("__name__", "<unknown>")
    try:
        warnings.warn_explicit(message + "; strict=True raises", ImpossibleMeasurementWarning, *where, module=name,
                               registry=None, module_globals=frame.f_globals)
    except ImportError:  # `python -c`: its __main__'s loader has no source to give the line cache; warn without it
        warnings.warn_explicit(message + "; strict=True raises", ImpossibleMeasurementWarning, *where, module=name,
                               registry=None)


def below_bound(name: str, measured: Any, bound: Any, what: What, strict: bool, stacklevel: int = 2) -> bool:
    """Flag where ``measured`` seconds fall below ``bound`` seconds (T_SOL of ``what``); True if flagged.

    ``stacklevel`` is what the caller would pass to ``warnings.warn`` (2: the caller's caller).
    """
    if type(measured) is float and type(bound) is float:  # pragma: no mutate (a fast path: the array path agrees)
        if measured >= bound * (1.0 - RTOL):
            return False
    m, b = np.broadcast_arrays(np.asarray(measured, dtype=np.float64), np.asarray(bound, dtype=np.float64))
    mask = m < b * (1.0 - RTOL)
    if not mask.any():
        return False
    index, where = _where(mask)
    mi, bi = float(m[index]), float(b[index])
    _emit(f"{name} = {fmt_seconds(mi)}{where} is below T_SOL = {fmt_seconds(bi)} of {_text(what)}: faster than the speed "
          f"of light by {bi / mi:.3g}x, which no run can be; a measurement or model error ({CAUSES})", strict,
          stacklevel)
    return True


def above_one(name: str, value: Any, what: What, strict: bool, stacklevel: int = 2) -> bool:
    """Flag where a utilization ``value`` (MFU, HFU) exceeds 1; True if flagged."""
    if type(value) is float and value <= 1.0 + RTOL:  # pragma: no mutate (a fast path: the array path agrees)
        return False
    v = np.asarray(value, dtype=np.float64)
    mask = v > 1.0 + RTOL
    if not mask.any():
        return False
    index, where = _where(mask)
    _emit(f"{name} = {float(v[index]):.4g}{where} is above 1 ({_text(what)}): more FLOPs than the peak can execute in that "
          f"time, which no run can do; check seconds, n_gpus, dtype and sparse ({CAUSES})", strict, stacklevel)
    return True
