"""The operator registry: every operator solkit knows, registered once.

An operator is a pure count function (validated shapes -> a ``Workload`` of kernels, each with
matrix/vector FLOPs, model FLOPs and DRAM bytes read and written) registered with
``@operator(...)``, which records:

- ``params``: each argument's kind (dimension, (h, w) pair, option, flag, precision, text),
  meaning, minimum and choices: the validation, the CLI's options and its help are read from here;
- ``backward``: the kernels of its gradient, computed from the op's own arguments and counts;
- ``kinds`` and ``keys``: the kernel kinds and the calibration keys its kernels carry (the
  predictor's per-key efficiencies are looked up by them; every key list is read from here);
- ``aten`` and ``aten_backward``: the PyTorch ATen ops it corresponds to (for reading profiles);
- ``check``: constraints between arguments (kv_heads divides heads, a kernel fits its input);
- ``example``: a valid call, for the documentation, the CLI and the tests.

The decorator returns the public function: same signature as the count function, it validates
every argument (the count function never sees a bad one), runs the constraints, counts, and
records which operator built the workload (``Workload.call``) so ``training_step`` can ask for
its backward. Registering a name twice is an error.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Optional

import numpy as np

from .._validate import broadcast, checked_call, choice, did_you_mean, dim, flag, shown
from ..errors import ArgumentTypeError, OptionError, ShapeError
from ..precision import PRECISIONS, normalize
from ..workload import KERNEL_KINDS, OpCall, Workload, is_overflow, overflow
from ._common import memory_bound_backward

__all__ = [
    "Param", "Operator", "operator", "REGISTRY", "MEMORY_BOUND", "get", "by_aten", "calibration_keys", "size", "pair", "option",
    "boolean", "precision", "text", "lengths",
]

#: the largest int that float64 holds exactly (2**53): larger ones take the careful path
_EXACT_INT = 2**53


@dataclass(frozen=True)
class Param:
    """One argument of an operator: what it is, what it means, what values it takes."""

    kind: str  # dim, pair, option, flag, dtype, text or lengths
    help: str
    minimum: int = 1  # dims and pairs: the smallest valid value
    choices: tuple[str, ...] = ()  # options: the allowed values
    optional: bool = False  # None is allowed (the count function resolves it)
    name: str = ""  # filled from the signature

    def validate(self, value: Any) -> Any:
        """The validated value: dims as float (or float64 array), options lower case, precisions canonical."""
        return self.validator()(value)

    def validator(self) -> Callable[[Any], Any]:
        """A function validating one value of this parameter (its fast path first: a plain int, a known name)."""
        return functools.partial(_CHECKS[self.kind], self)

    @property
    def describe(self) -> str:
        """What the argument takes, in words (for help texts)."""
        if self.kind == "dim":
            what = "a positive integer" if self.minimum == 1 else f"an integer >= {self.minimum}"
        elif self.kind == "pair":
            what = f"an integer >= {self.minimum} or a pair h,w"
        elif self.kind == "option":
            what = "one of " + ", ".join(self.choices)
        elif self.kind == "flag":
            what = "true or false"
        elif self.kind == "dtype":
            what = "a precision (" + ", ".join(sorted(PRECISIONS)) + ")"
        elif self.kind == "lengths":
            what = "a list of integers >= " + str(self.minimum) + ", one per group"
        else:
            what = "text"
        return what + (" or none" if self.optional else "")


def _check_dim(p: Param, value: Any) -> Any:
    if type(value) is int and p.minimum <= value <= _EXACT_INT:
        return float(value)
    if value is None and p.optional:
        return None
    return dim(p.name, value, p.minimum)


def _check_dtype(p: Param, value: Any) -> Any:
    if type(value) is str and value in PRECISIONS:
        return value
    if value is None and p.optional:
        return None
    return normalize(value, p.name)


def _check_flag(p: Param, value: Any) -> Any:
    return value if value is True or value is False else flag(p.name, value)


def _check_option(p: Param, value: Any) -> Any:
    return value if type(value) is str and value in p.choices else choice(p.name, value, p.choices)


def _check_pair(p: Param, value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ArgumentTypeError(f"{p.name} must be an int or a pair (h, w), got {value!r}")
        return dim(f"{p.name}[0]", value[0], p.minimum), dim(f"{p.name}[1]", value[1], p.minimum)
    v = dim(p.name, value, p.minimum)
    return v, v


def _check_text(p: Param, value: Any) -> Any:
    if not isinstance(value, str) or not value:
        raise ArgumentTypeError(f"{p.name} must be a non-empty string, got {value!r}")
    return value


def _check_lengths(p: Param, value: Any) -> Any:
    """One length per group (a varlen batch's sequences, a grouped GEMM's experts): a tuple of floats, each an integer
    >= the minimum; a scalar, a string or a mapping is a type error, an empty list or a bad length a shape error."""
    if value is None and p.optional:
        return None
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise ArgumentTypeError(f"{p.name} must be a list of integers, one per group, got {shown(value)}")
    if len(value) == 0:
        raise ShapeError(f"{p.name} must hold at least one length, got an empty {type(value).__name__}")
    out = dim(p.name, value, p.minimum)
    if np.ndim(out) != 1:
        raise ShapeError(f"{p.name} must be a flat list of integers, one per group, got an array of shape {np.shape(out)}")
    return tuple(float(x) for x in out)


#: the check of each parameter kind: (param, value) -> the validated value
_CHECKS: dict[str, Callable[[Param, Any], Any]] = {"dim": _check_dim, "dtype": _check_dtype, "flag": _check_flag,
                                                   "option": _check_option, "pair": _check_pair, "text": _check_text,
                                                   "lengths": _check_lengths}


def size(help: str, minimum: int = 1, optional: bool = False) -> Param:
    """A dimension: an integer (or an array of them) >= ``minimum``."""
    return Param("dim", help, minimum=minimum, optional=optional)


def pair(help: str, minimum: int = 1) -> Param:
    """An integer for both axes or a pair (h, w) (a conv's kernel, stride, padding, dilation)."""
    return Param("pair", help, minimum=minimum)


def option(help: str, *choices: str) -> Param:
    """One of a few named choices."""
    return Param("option", help, choices=choices)


def boolean(help: str) -> Param:
    """True or False."""
    return Param("flag", help)


def precision(help: str = "storage precision of the operands", optional: bool = False) -> Param:
    """A precision name, alias or numpy/torch dtype."""
    return Param("dtype", help, optional=optional)


def text(help: str) -> Param:
    """A non-empty string (a label)."""
    return Param("text", help)


def lengths(help: str, minimum: int = 1, optional: bool = True) -> Param:
    """One integer >= ``minimum`` per group (a varlen batch's sequence lengths, a grouped GEMM's rows per group)."""
    return Param("lengths", help, minimum=minimum, optional=optional)


@dataclass(frozen=True)
class Operator:
    """A registered operator: its count and backward formulas and everything known about it."""

    name: str
    summary: str
    params: tuple[Param, ...]
    count: Callable[..., Workload]  # validated arguments -> Workload (pure)
    backward: Callable[..., Workload]  # validated arguments -> the gradient's Workload (pure)
    kinds: tuple[str, ...]
    keys: tuple[str, ...]
    aten: tuple[str, ...]
    aten_backward: tuple[str, ...]
    check: Optional[Callable[[dict[str, Any]], None]]
    example: Mapping[str, Any]
    function: Callable[..., Workload] = field(repr=False, compare=False, default=None)  # type: ignore[assignment]  # set at registration
    #: (name, its check, its default, the default checked): a call that leaves an argument at its default takes the
    #: checked default (a check is a pure function of an immutable value); ``_NO_DEFAULT`` where there is none
    validators: tuple[tuple[str, Callable[[Any], Any], Any, Any], ...] = field(repr=False, compare=False, default=())

    @property
    def defaults(self) -> Mapping[str, Any]:
        """Default values of the optional arguments."""
        sig = inspect.signature(self.count)
        return MappingProxyType({n: p.default for n, p in sig.parameters.items() if p.default is not p.empty})

    def param(self, name: str) -> Param:
        """The parameter called ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        names = [p.name for p in self.params]
        raise OptionError(f"{self.name} has no parameter {shown(name)}; it takes: {', '.join(names)}"
                          f"{did_you_mean(name, names)}")

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Every argument validated, broadcast-checked and constraint-checked (``args`` is updated and returned)."""
        self._validate(args)
        return args

    def _validate(self, args: dict[str, Any]) -> tuple[int, ...]:
        """``validate``, returning the arguments' broadcast shape (() for one shape)."""
        arrays = False
        for name, check, default, checked in self.validators:
            value = args[name]
            args[name] = value = checked if value is default else check(value)
            kind = type(value)
            if kind is np.ndarray or (kind is tuple and len(value) == 2  # a pair (lengths hold floats only)
                                      and (type(value[0]) is np.ndarray or type(value[1]) is np.ndarray)):
                arrays = True
        shape: tuple[int, ...] = ()
        if arrays:
            named: dict[str, Any] = {}
            for p in self.params:
                value = args[p.name]
                if p.kind == "pair":
                    named[f"{p.name}[0]"], named[f"{p.name}[1]"] = value
                elif p.kind == "dim" and value is not None:
                    named[p.name] = value
            shape = broadcast(**named)
        if self.check is not None:
            self.check(args)
        return shape

    def run(self, args: dict[str, Any]) -> Workload:
        """Validate ``args`` (all the op's arguments, by name), count, and record the call."""
        shape = self._validate(args)
        try:
            if shape:  # a sweep: a product beyond float64 is inf, which Kernel refuses; numpy need not warn of it too
                with np.errstate(over="ignore", invalid="ignore"):
                    w = self.count(**args)
            else:
                w = self.count(**args)
        except ShapeError as exc:
            if not is_overflow(exc):
                raise
            raise overflow(ShapeError(f"{self.name}: {self._shown(args)} is too large: {exc}")) from None
        # a count function returns a workload it just made (never a public op's result): nobody else holds it
        object.__setattr__(w, "call", tuple.__new__(OpCall, (self.name, args)))  # (OpCall(...) without its __new__'s frame)
        if shape:  # a swept argument no figure depends on (an embedding's vocab) still shapes the results
            object.__setattr__(w, "_shape", np.broadcast_shapes(shape, w.shape))
        return w

    def _shown(self, args: Mapping[str, Any]) -> str:
        """The dimension arguments of a call, as text (arrays by their largest value)."""
        shown = []
        for p in self.params:
            value = args[p.name]
            if p.kind in ("dim", "pair") and value is not None:
                values = value if p.kind == "pair" else (value,)
                text = ",".join(f"{float(np.max(v)):g}" if np.size(v) else "[]" for v in values)
                shown.append(f"{p.name}={text}")
        return ", ".join(shown)

    def gradient(self, call: OpCall, label: str = "") -> Workload:
        """The backward workload of a call of this operator; its kernels' names start with ``label``."""
        return self.backward(label or self.name, **call.args)


#: ``backward=MEMORY_BOUND``: the op's backward is ``memory_bound_backward`` of its own forward kernels
MEMORY_BOUND = "memory-bound"

_REGISTRY: dict[str, Operator] = {}
#: every registered operator by name (read-only)
REGISTRY: Mapping[str, Operator] = MappingProxyType(_REGISTRY)


def operator(
    name: str,
    *,
    params: Mapping[str, Param],
    kinds: Iterable[str],
    backward: Any,
    example: Mapping[str, Any],
    keys: Iterable[str] = (),
    aten: Iterable[str] = (),
    aten_backward: Iterable[str] = (),
    check: Optional[Callable[[dict[str, Any]], None]] = None,
    summary: str = "",
) -> Callable[[Callable[..., Workload]], Callable[..., Workload]]:
    """Register the decorated count function as operator ``name``; return its validating public function."""

    def register(count: Callable[..., Workload]) -> Callable[..., Workload]:
        if name in _REGISTRY:
            raise ValueError(f"operator {name!r} is registered twice")
        names = list(inspect.signature(count).parameters)
        if set(names) != set(params):
            raise ValueError(f"operator {name!r}: params {sorted(params)} do not match the signature {names}")
        bad = [k for k in kinds if k not in KERNEL_KINDS]
        if bad:
            raise ValueError(f"operator {name!r}: unknown kernel kinds {bad}")
        gradient = backward
        if backward == MEMORY_BOUND:
            def gradient(label: str, **args: Any) -> Workload:
                return memory_bound_backward(label, count(**args))
        op = Operator(
            name=name,
            summary=summary or (count.__doc__ or "").strip().splitlines()[0],
            params=tuple(Param(**{**params[n].__dict__, "name": n}) for n in names),
            count=count,
            backward=gradient,
            kinds=tuple(kinds),
            keys=tuple(keys) or (name,),
            aten=tuple(aten),
            aten_backward=tuple(aten_backward),
            check=check,
            example=MappingProxyType(dict(example)),
        )
        public = _public_function(op, count)
        object.__setattr__(op, "function", public)
        object.__setattr__(op, "validators", _validators(op.params, count))
        _REGISTRY[name] = op
        return public

    return register


#: the default of a parameter that has none (no argument is this object)
_NO_DEFAULT = object()


def _validators(params: tuple[Param, ...], count: Callable[..., Workload]) -> tuple[tuple[str, Any, Any, Any], ...]:
    """``Operator.validators``: each parameter's check, with its default checked once where it is immutable."""
    out = []
    signature = inspect.signature(count).parameters
    for p in params:
        check = p.validator()
        default = signature[p.name].default
        checked = None
        if default is inspect.Parameter.empty or type(default) not in (int, float, str, bool, type(None)):
            default = _NO_DEFAULT
        else:
            checked = check(default)
        out.append((p.name, check, default, checked))
    return tuple(out)


def _public_function(op: Operator, count: Callable[..., Workload]) -> Callable[..., Workload]:
    """A function with ``count``'s exact signature that validates, counts and records the call (built as source, like dataclasses do)."""
    sig = inspect.signature(count)
    namespace: dict[str, Any] = {"_run": op.run}
    arguments = []
    for i, p in enumerate(sig.parameters.values()):
        if p.default is p.empty:
            arguments.append(p.name)
        else:
            namespace[f"_default{i}"] = p.default
            arguments.append(f"{p.name}=_default{i}")
    body = ", ".join(f"{p!r}: {p}" for p in sig.parameters)
    exec(f"def {count.__name__}({', '.join(arguments)}):\n    return _run({{{body}}})\n", namespace)  # noqa: S102
    exact = namespace[count.__name__]
    functools.update_wrapper(exact, count)  # name, docstring, module; __wrapped__ is the pure count function
    public = checked_call(exact)  # an unknown keyword or a missing argument: an ArgumentTypeError naming it
    public.__wrapped__ = count  # type: ignore[attr-defined]  # inspect and the docs see the count function
    public.operator = op  # type: ignore[attr-defined]
    return public


@checked_call
def get(name: Any) -> Operator:
    """The registered operator called ``name`` (any case, dashes or underscores); a near miss gets a did-you-mean."""
    if not isinstance(name, str):
        raise ArgumentTypeError(f"op must be an operator name, one of {', '.join(sorted(_REGISTRY))}; got {shown(name)}")
    key = name.strip().lower().replace("-", "_")  # case-insensitive, as every option
    if key not in _REGISTRY:
        raise OptionError(f"op must be one of {', '.join(sorted(_REGISTRY))}; got {shown(name)}"
                          f"{did_you_mean(key, _REGISTRY)}")
    return _REGISTRY[key]


@checked_call
def by_aten(aten_name: str) -> tuple[Operator, bool]:
    """(operator, is_backward) of an ATen op name (``aten::mm``); ``LookupError`` if none claims it."""
    for op in _REGISTRY.values():
        if aten_name in op.aten:
            return op, False
        if aten_name in op.aten_backward:
            return op, True
    raise LookupError(f"no registered operator claims the ATen op {aten_name!r}")


@checked_call
def calibration_keys() -> tuple[str, ...]:
    """Every key a calibration table may use: the kernel kinds, then every operator's keys."""
    keys = list(KERNEL_KINDS)
    for op in _REGISTRY.values():
        keys += [k for k in op.keys if k not in keys]
    return tuple(keys)
