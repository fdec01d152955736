"""Argument checks shared by every layer: shapes, options, measured times."""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import os
import re
import sys
from typing import Any, Callable, Iterable, Optional, TypeVar

import numpy as np

from .errors import ArgumentTypeError, MeasurementError, OptionError, ShapeError, SolkitError

__all__ = ["dim", "whole", "choice", "positive", "as_result", "flag", "first_bad", "finite_result", "broadcast", "checked_call",
           "unchecked", "name_text", "shown", "suggest", "did_you_mean", "user_stacklevel", "digits"]

F = TypeVar("F", bound=Callable[..., Any])


def _as_array(name: str, value: Any) -> np.ndarray:
    """A float64 array of a numeric argument; bools, strings and objects are type errors, ints beyond float64 shape errors."""
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be a number, got the bool {value!r}")
    if isinstance(value, (str, bytes)):
        raise ArgumentTypeError(f"{name} must be a number, got the string {shown(value)}")
    if value is None:
        raise ArgumentTypeError(f"{name} must be a number, got None")
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a real number, got {value!r}")
    try:
        arr = np.asarray(value)
    except OverflowError:
        raise _too_large(name) from None
    except Exception as exc:  # ragged lists and the like
        raise ArgumentTypeError(f"{name} must be a number or an array of numbers, got {shown(value)}") from exc
    if arr.dtype == object and arr.size and all(_is_real(x) for x in arr.reshape(-1)):
        try:  # Python ints beyond int64 (2**64 and up), or mixed with floats: float64, never wrapped
            arr = arr.astype(np.float64)
        except OverflowError:
            raise _too_large(name) from None
    if arr.dtype == np.bool_:
        raise ArgumentTypeError(f"{name} must hold numbers, got an array of bools")
    if isinstance(value, (list, tuple)) and _holds_bool(value):  # numpy reads [True, 2] as [1, 2]: a bool is not 1
        raise ArgumentTypeError(f"{name} must hold numbers, got a bool in {shown(value)}")
    if arr.dtype.kind not in "iuf":
        raise ArgumentTypeError(f"{name} must be a number or an array of numbers, got {shown(value)} (dtype {arr.dtype})")
    return arr


def _holds_bool(values: Any) -> bool:
    """Whether a (nested) list or tuple holds a bool, a numpy bool or an array of bools anywhere (one C-level pass over
    the element types per level: a list of a million ints costs what numpy's own read of it does)."""
    kinds = set(map(type, values))
    if bool in kinds or np.bool_ in kinds:
        return True
    if np.ndarray in kinds and any(x.dtype == np.bool_ for x in values if type(x) is np.ndarray):
        return True
    if kinds.isdisjoint((list, tuple)):
        return False
    return any(_holds_bool(x) for x in values if type(x) is list or type(x) is tuple)


def _is_real(x: Any) -> bool:
    """A real number that is not a bool (an element of an object array)."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _too_large(name: str) -> ShapeError:
    return ShapeError(f"{name} must hold numbers that float64 can hold (below 1.8e308), got an integer beyond that")


def digits(n: int) -> str:
    """How many digits an integer has, in words (exact below Python's 4300-digit limit on printing one, else about)."""
    if abs(n).bit_length() < 14000:  # 14000 bits: about 4214 digits
        return f"{len(str(abs(n)))} digits"
    return f"about {int(math.log10(abs(n))) + 1} digits"


def shown(value: Any) -> str:
    """``value`` for an error message: its repr, cut to 60 characters (an int too long to print: its digit count)."""
    if isinstance(value, int) and abs(value).bit_length() >= 14000:
        return f"an integer of {digits(value)}"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the error being reported
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def first_bad(name: str, arr: np.ndarray, bad: np.ndarray, expected: str, error: type[Exception] = ShapeError) -> None:
    """Raise ``error`` naming the first element of ``arr`` where ``bad`` holds (none: return)."""
    arr, bad = np.broadcast_arrays(np.asarray(arr), np.asarray(bad))
    try:
        _first_bad(name, arr, bad, expected)
    except ShapeError as exc:
        raise error(str(exc)) from None


def _first_bad(name: str, arr: np.ndarray, bad: np.ndarray, expected: str) -> None:
    if not bad.any():
        return
    if arr.ndim == 0:
        raise ShapeError(f"{name} must be {expected}, got {_fmt(arr[()])}")
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = index[0] if len(index) == 1 else index
    raise ShapeError(f"{name} must be {expected}, got {_fmt(arr[index])} at index {where}")


def _fmt(x: Any) -> str:
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return repr(int(x))
    return repr(x)


def dim(name: str, value: Any, minimum: int = 1) -> Any:
    """Validate an integer dimension (scalar or array) >= ``minimum``: a float for a scalar, a float64 array for an array.

    Float64 holds every product of dimensions exactly up to 2**53 and never wraps around,
    unlike int64 (2*m*n*k for m = n = k = 2**21 is 2**64).
    """
    kind = type(value)
    if kind is int or kind is float:  # the fast path of a scalar call
        if value >= minimum and (kind is int or value.is_integer()):
            try:
                return float(value)
            except OverflowError:
                raise ShapeError(f"{name} must be {_integer(minimum)} that float64 can hold (below 1.8e308), "
                                 f"got an integer of {digits(value)}") from None
    arr = _as_array(name, value)
    if arr.size:
        low, high = arr.min(), arr.max()  # reductions: no temporary arrays when the values are fine
        if low >= minimum and np.isfinite(high):
            if arr.dtype == np.float64:  # the floor is the copy where it equals every value (one fresh array, not two)
                out = np.floor(arr)
                if not (out != arr).any():
                    return float(out) if out.ndim == 0 else out
            elif arr.dtype.kind != "f" or not (np.floor(arr) != arr).any():
                out = arr.astype(np.float64)
                return float(out) if out.ndim == 0 else out
    expected = _integer(minimum)
    if not arr.size:
        raise ShapeError(f"{name} must hold at least one value, got an empty array of shape {arr.shape}")
    if arr.dtype.kind == "f":
        _first_bad(name, arr, ~np.isfinite(arr), expected)
        _first_bad(name, arr, arr != np.floor(arr), expected)
    _first_bad(name, arr, arr < minimum, expected)
    out = arr.astype(np.float64)
    return float(out) if out.ndim == 0 else out


def whole(name: str, value: Any, error: type[Exception] = OptionError) -> int:
    """One positive integer (a count: GPUs, nodes, microbatches); an array is ``error``, naming ``name``."""
    n = dim(name, value)
    if type(n) is not float:
        raise error(f"{name} must be one positive integer, got an array of shape {np.shape(n)}")
    return int(n)


def _integer(minimum: int) -> str:
    return "a positive integer" if minimum == 1 else f"an integer >= {minimum}"


def positive(name: str, value: Any, error: type[Exception] = MeasurementError) -> Any:
    """Validate a positive finite real (seconds, FLOPs): a float for a scalar, a float64 array for an array."""
    kind = type(value)
    if (kind is float or kind is int) and 0 < value < math.inf:
        try:
            return float(value)
        except OverflowError:  # an int beyond float64
            raise error(f"{name} must be a positive finite number that float64 can hold (below 1.8e308), got an "
                        f"integer of {digits(value)}") from None
    try:
        arr = _as_array(name, value).astype(np.float64)
    except ShapeError as exc:  # a number beyond float64 in a list: this argument's error
        raise error(str(exc)) from None
    if not arr.size:
        raise error(f"{name} must hold at least one value, got an empty array of shape {arr.shape}")
    bad = ~np.isfinite(arr) | (arr <= 0)
    try:
        _first_bad(name, arr, bad, "a positive finite number")
    except ShapeError as exc:
        raise error(str(exc)) from None
    return float(arr) if arr.ndim == 0 else arr


def choice(name: str, value: Any, allowed: Iterable[str]) -> str:
    """Validate a string option against its allowed values (case-insensitive); a near miss gets a did-you-mean."""
    allowed = tuple(allowed)
    if type(value) is str and value in allowed:
        return value
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {shown(value)}")
    key = value.strip().lower()
    if key not in allowed:
        raise OptionError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {shown(value)}"
                          f"{did_you_mean(value, allowed)}")
    return key


#: how near a name must be to an allowed one to be suggested (difflib's ratio)
NEAR = 0.6
_PARTS = re.compile(r"[\s_.:/-]+")


def suggest(value: Any, allowed: Iterable[str], n: int = 3) -> list[str]:
    """The allowed names nearest ``value`` (at most ``n``, nearest first); none for a non-string.

    The same name spelt with other separators (``layer_norm`` for ``layernorm``) alone, if there is one; else
    difflib's close matches (ratio >= ``NEAR``, case-insensitive), then the names holding ``value`` as one of
    their words (``flops`` in ``model_flops``) and the names that are one of its words (``zero`` in ``zero_stage``).
    """
    if not isinstance(value, str):
        return []
    key = value.strip().lower()
    if not key or len(key) > 200:  # nothing to match, or no name's near miss (and difflib's time grows with it)
        return []
    names = list(dict.fromkeys(a for a in allowed if isinstance(a, str)))
    lowered: dict[str, str] = {}
    for a in names:
        lowered.setdefault(a.lower(), a)
    squeezed = _PARTS.sub("", key)
    found = [a for a in names if _PARTS.sub("", a.lower()) == squeezed and a.lower() != key]
    if found:  # the same name but for its separators: nothing else is as near
        return found[:n]
    import difflib  # only for a mistake's message: not at import

    found += [lowered[m] for m in difflib.get_close_matches(key, list(lowered), n=n, cutoff=NEAR)]
    if len(squeezed) >= 3:  # a word of a name: flops in model_flops
        found += [a for a in names if squeezed in _PARTS.split(a.lower())]
    words = set(_PARTS.split(key))  # a name that is a word of it: zero in zero_stage, dp in dp_size
    found += [a for a in names if len(a) >= 2 and a.lower() in words]
    return [a for a in dict.fromkeys(found) if a.lower() != key][:n]


def did_you_mean(value: Any, allowed: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` naming the nearest allowed names (``suggest``), or ``""`` when none is near."""
    near = suggest(value, allowed)
    return f"; did you mean {' or '.join(map(repr, near))}?" if near else ""


def as_result(x: Any) -> Any:
    """A 0-d array as a Python float (or str); any other array unchanged."""
    arr = np.asarray(x)
    if arr.ndim == 0:
        return arr.item()
    return arr


def flag(name: str, value: Any) -> bool:
    """A True/False option; anything else (1, 'no', None) is a type error."""
    if value is True or value is False:
        return value
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def finite_result(name: str, value: Any, cause: str) -> Any:
    """``value`` if every element is finite, else a MeasurementError blaming ``name`` (e.g. seconds too small)."""
    if type(value) is float and value - value == 0.0:
        return value
    arr = np.asarray(value)
    if not np.all(np.isfinite(arr)):
        raise MeasurementError(f"{name} gives a non-finite result: {cause}")
    return value


def broadcast(**named: Any) -> tuple[int, ...]:
    """The broadcast shape of named array arguments; a ShapeError naming each shape if they do not broadcast."""
    try:
        return np.broadcast_shapes(*(np.shape(v) for v in named.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in named.items() if np.ndim(v))
        raise ShapeError(f"the array arguments do not broadcast together: {shapes}") from None


def checked_call(function: F, label: Optional[str] = None) -> F:
    """``function`` whose call mistakes (an unknown keyword, a missing or extra argument) are ArgumentTypeErrors naming them.

    Python's own ``TypeError`` for a bad call is turned into the solkit error: the function is
    called as is (no cost on a good call) and the arguments are bound to its signature only
    when it raised a ``TypeError``; a ``TypeError`` from inside the function passes unchanged.
    An unknown keyword's message lists the keywords the function takes and, for a near miss,
    a did-you-mean (``suggest``). ``label``: the name the messages give the call (default
    ``name()``; e.g. ``Kernel()`` for a class's ``__new__``).
    """
    label = label or f"{function.__name__}()"

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except SolkitError:
            raise
        except TypeError:
            signature, keywords, any_keyword, takes = _call_facts(function)
            unknown = [k for k in kwargs if k not in keywords] if not any_keyword else []
            if unknown:  # named first: a misspelt keyword also leaves the right one missing
                what = (f"an unexpected keyword argument {unknown[0]!r}" if len(unknown) == 1 else
                        f"unexpected keyword arguments {', '.join(map(repr, unknown))}")
                near = [f"{n!r} for {k!r}" if len(unknown) > 1 else repr(n)
                        for k in unknown for n in suggest(k, keywords)[:1 if len(unknown) > 1 else 3]]
                hint = f"; did you mean {' or '.join(near)}?" if near else ""
                raise ArgumentTypeError(f"{label}: got {what}; it takes: {takes}{hint}") from None
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise ArgumentTypeError(f"{label}: {exc}; it takes: {takes}") from None
            raise
    return call  # type: ignore[return-value]  # the same signature (functools.wraps)


def unchecked(function: F) -> F:
    """The body of a ``checked_call`` function, for a caller whose call is right by construction (solkit's own hot
    paths: the wrapper only rewords a bad call's ``TypeError``, so skipping it changes nothing but ~0.13 us a call)."""
    return getattr(function, "__wrapped__", function)  # type: ignore[no-any-return]


def _call_facts(function: Callable[..., Any]) -> tuple[inspect.Signature, tuple[str, ...], bool, str]:
    """(signature, the keywords it takes, whether it takes any keyword, its parameters as a message lists them) of a
    ``checked_call`` function: read when a call went wrong, not at import (a signature costs ~40 us a function)."""
    signature = inspect.signature(function)
    names = tuple(signature.parameters)
    listed = names[1:] if names and names[0] in ("self", "cls") else names  # the bound instance is no argument
    keywords = tuple(n for n in listed if signature.parameters[n].kind not in (
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD))
    any_keyword = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    stars: dict[Any, str] = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    takes = ", ".join(stars.get(signature.parameters[n].kind, "") + n for n in listed) or "no arguments"
    return signature, keywords, any_keyword, takes


#: the folder of solkit's own modules (a warning points at the first frame outside it)
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes the calling function's ``warnings.warn`` point at the first frame outside solkit
    (the user's line, whatever wrappers such as ``checked_call`` lie between)."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def name_text(argument: str, value: Any) -> str:
    """A workload or kernel name: a string, else an ArgumentTypeError naming ``argument``."""
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str(value)
    raise ArgumentTypeError(f"{argument} must be a string, got {shown(value)}")
