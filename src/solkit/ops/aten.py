"""One ATen op call of a trace (name, input shapes, dtypes, strides, concrete inputs) to a solkit workload.

The one mapping profiles (``solkit.profile``) and capture (``solkit.capture``) share: pure functions of
shapes, dtypes, strides and concrete values as text, no torch import.

``map_call`` asks the registry which operator claims the ATen name (``solkit.ops.by_aten``), then the
argument adapter registered for that name (``ADAPTERS``, one small function per name or family, as
``torch.utils.flop_counter``'s ``register_flop_formula``) turns the call's inputs into the operator's
arguments. A forward name gives the operator's workload; a backward name (``aten_backward``) gives the
operator's gradient (``Operator.gradient``), trimmed where ATen launches part of it as its own op.
Anything a trace may hold that an adapter cannot read is an ``Unmapped`` with the reason, never an error.

Reading the trace's fields (torch 2.x ``record_shapes=True``):

- dtypes are C++ names: "c10::BFloat16" bf16, "c10::Half" fp16, "float" fp32, "double" fp64,
  "c10::Float8_e4m3fn" fp8_e4m3, "c10::Float8_e5m2" fp8_e5m2, "int" int32, "signed char" int8.
  solkit has no int64, bool, uint8 or int16 precision; their tensors are counted by storage size with a
  stand-in: "long int" (int64) as fp64 (8 B), "bool" and "unsigned char" as int8 (1 B), "short int" as fp16
  (2 B); the mapping's notes say so. Other dtypes (complex) are Unmapped.
- A dtype of "Scalar", "ScalarList" or "" is not a tensor; a ScalarType argument (a cast's dtype) is its
  enum number in the concrete inputs ("15" is bfloat16). "TensorList" inputs carry neither shapes nor dtypes
  for optimizer lists (``_fused_adamw_``, ``_foreach_*``): those map only with ``list_elements=`` (and
  ``list_dtype=``, else fp32); ``aten::cat`` has its shapes but needs ``list_dtype=``, which
  ``list_dtype_of_kernel`` reads from the kernel's name (``CatArrayBatchedCopy<OpaqueType<2u>, ...>``).
- A broadcast input (stride 0 on a dim) is read at its stored size: the product of its dims of nonzero stride.
- A 0-dim input of a pointwise op is a scalar (PyTorch passes Python numbers as 0-dim tensors): not counted
  as a read, unless every input is 0-dim.

Pointwise FLOPs (``ops.pointwise``): 1 vector FLOP per output element for each ATen pointwise op
(transcendentals such as rsqrt, cos and pow count as one), 2 for add/sub with alpha != 1.
Foreach ops (``ops.foreach``, optimizer arithmetic: executed FLOPs only): add, sub, mul, div and sqrt 1 per
element (add/sub of two lists with alpha != 1: 2), addcmul, addcdiv and lerp 3; every tensor list is read
except by ``zero_`` (none) and ``copy_`` (one), and one list is written.

Shape rules: batch norm of an N-D input [N, C, d2, d3, ...] counts H = d2 x d4 x ..., W = d3 (a 3-D [N, C, L]
is H = L, W = 1); ``arange`` counts its out tensor when the range is empty; ``fill_`` of a 0-dim tensor writes
one element.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple, Optional, Union

from ..errors import SolkitError
from ..precision import PRECISIONS, normalize
from ..workload import Workload
from .registry import Operator, by_aten
from .registry import get as get_operator
from .tensor import reduce

__all__ = [
    "Mapped", "Unmapped", "map_call", "map_records", "ADAPTERS", "adapter", "precision_of", "list_dtype_of_kernel",
    "TORCH_DTYPES", "SCALAR_TYPES",
]


@dataclass(frozen=True)
class Mapped:
    """An op call mapped to a registered operator: its name, the arguments it was called with, the workload.

    ``backward``: the ATen name is the operator's backward, or the call ran under the autograd engine.
    ``notes``: what the counts leave out or assume (a stand-in precision, cuDNN counted as flash, ...).
    """

    operator: str
    arguments: dict[str, Any]
    workload: Workload
    backward: bool
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unmapped:
    """An op call no operator models, or whose inputs the adapter could not read, and why."""

    reason: str


Result = Union[Mapped, Unmapped]

#: C++ dtype names of a trace's "Input type" -> solkit precision (a stand-in of the same storage size for the
#: types solkit has no precision for: int64 as fp64, bool and uint8 as int8, int16 as fp16)
TORCH_DTYPES: dict[str, str] = {
    "c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64",
    "c10::Float8_e4m3fn": "fp8_e4m3", "c10::Float8_e5m2": "fp8_e5m2", "c10::Float8_e4m3fnuz": "fp8_e4m3",
    "c10::Float8_e5m2fnuz": "fp8_e5m2", "int": "int32", "signed char": "int8",
    "long int": "fp64", "long": "fp64", "int64_t": "fp64", "bool": "int8", "unsigned char": "int8",
    "short int": "fp16", "short": "fp16",
}
#: which of those are storage stand-ins, and what they stand for
_STAND_INS = {"long int": "int64", "long": "int64", "int64_t": "int64", "bool": "bool", "unsigned char": "uint8",
              "short int": "int16", "short": "int16"}
#: c10::ScalarType enum numbers (a cast's or a reduction's dtype argument) -> C++ dtype name
SCALAR_TYPES: dict[int, str] = {0: "unsigned char", 1: "signed char", 2: "short int", 3: "int", 4: "long int",
                                5: "c10::Half", 6: "float", 7: "double", 11: "bool", 15: "c10::BFloat16",
                                23: "c10::Float8_e5m2", 24: "c10::Float8_e4m3fn", 25: "c10::Float8_e5m2fnuz",
                                26: "c10::Float8_e4m3fnuz"}
#: "Input type" entries that are not tensors
_NOT_TENSOR = frozenset({"", "Scalar", "ScalarList", "TensorList", "GenericList", "None", "Device", "Layout",
                         "ScalarType", "MemoryFormat", "str", "string"})
#: type-promotion rank: (category, rank): bool < integers < floating; fp64 > fp32 > the 16-bit and 8-bit floats
_PROMOTION = {"bool": (0, 0), "unsigned char": (1, 1), "signed char": (1, 1), "short int": (1, 2), "short": (1, 2),
              "int": (1, 3), "long int": (1, 4), "long": (1, 4), "int64_t": (1, 4),
              "c10::Float8_e4m3fn": (2, 0), "c10::Float8_e5m2": (2, 0), "c10::Float8_e4m3fnuz": (2, 0),
              "c10::Float8_e5m2fnuz": (2, 0), "c10::Half": (2, 1), "c10::BFloat16": (2, 1), "float": (2, 3),
              "double": (2, 4)}


class _Missing(Exception):
    """The call lacks what the adapter needs (the message says what)."""


class Call:
    """One op call's inputs, as the adapters read them; ``notes`` collects what the mapping assumes."""

    __slots__ = ("op", "shapes", "dtypes", "concrete", "strides", "list_elements", "list_dtype", "notes")

    def __init__(self, op: str, shapes: tuple[Any, ...], dtypes: tuple[Any, ...], concrete: tuple[Any, ...],
                 strides: tuple[Any, ...], list_elements: Any, list_dtype: Any) -> None:
        self.op, self.shapes, self.dtypes, self.concrete, self.strides = op, shapes, dtypes, concrete, strides
        self.list_elements, self.list_dtype = list_elements, list_dtype
        self.notes: list[str] = []

    @property
    def short(self) -> str:
        """The op's name without the namespace and the in-place underscore: "aten::add_" -> "add"."""
        return self.op.split("::")[-1].rstrip("_") or self.op

    def note(self, text: str) -> None:
        """Record what the mapping assumes (once)."""
        if text not in self.notes:
            self.notes.append(text)

    def dtype_name(self, i: int) -> str:
        """Input ``i``'s "Input type" entry ("" when absent)."""
        return self.dtypes[i] if i < len(self.dtypes) and isinstance(self.dtypes[i], str) else ""

    def is_tensor(self, i: int) -> bool:
        """Whether input ``i`` is a tensor with readable dims (not a scalar, a list or an absent optional)."""
        return self.dtype_name(i) not in _NOT_TENSOR and _shape_or_none(self.shapes[i] if i < len(self.shapes) else None) \
            is not None

    def shape(self, i: int, what: str = "") -> tuple[int, ...]:
        """Input ``i``'s shape (a tensor's dims)."""
        value = _shape_or_none(self.shapes[i]) if i < len(self.shapes) else None
        if value is None or not self.is_tensor(i):
            raise _Missing(f"input {i}{' (' + what + ')' if what else ''} is not a tensor with known dims "
                           f"(type {self.dtype_name(i)!r}, dims {self.shapes[i] if i < len(self.shapes) else None!r})")
        return value

    def stride(self, i: int) -> Optional[tuple[int, ...]]:
        """Input ``i``'s strides, or None when the trace has none."""
        return _shape_or_none(self.strides[i], negative=True) if i < len(self.strides) else None

    def precision(self, i: int) -> str:
        """Input ``i``'s solkit precision (a stand-in of the same size for int64, bool, uint8 and int16)."""
        return self.precision_named(self.dtype_name(i), f"input {i}")

    def precision_named(self, name: str, where: str) -> str:
        """The solkit precision of a C++ dtype name, noting a stand-in; ``where`` names it in the error."""
        p = TORCH_DTYPES.get(name)
        if p is None:
            raise _Missing(f"{where} has dtype {name!r}, which solkit has no precision for")
        if name in _STAND_INS:
            self.note(f"{_STAND_INS[name]} tensors counted by storage size as {p} ({PRECISIONS[p]:g} B per element)")
        return p

    def scalar_type(self, i: int) -> Optional[str]:
        """The precision a ScalarType argument (its enum number) names, or None when absent."""
        text = self.text(i)
        if not text or not text.lstrip("-").isdigit():
            return None
        name = SCALAR_TYPES.get(int(text))
        if name is None:
            raise _Missing(f"input {i} is ScalarType {text}, which solkit has no precision for")
        return self.precision_named(name, f"input {i}")

    def text(self, i: int) -> str:
        """Input ``i``'s concrete value as text ("" for a tensor or when absent)."""
        value = self.concrete[i] if i < len(self.concrete) else ""
        return value.strip() if isinstance(value, str) else ""

    def ints(self, i: int, what: str) -> tuple[int, ...]:
        """A concrete int list ("[3, 3]") or int ("2") as a tuple."""
        text = self.text(i)
        if not _INT_LIST.fullmatch(text):
            raise _Missing(f"input {i} ({what}) is {text!r}, expected integers")
        return tuple(int(x) for x in _INT.findall(text))

    def integer(self, i: int, what: str, default: Optional[int] = None) -> int:
        """A concrete int (``default`` when empty)."""
        text = self.text(i)
        if not text and default is not None:
            return default
        try:
            return int(text)
        except ValueError:
            raise _Missing(f"input {i} ({what}) is {text!r}, expected an integer") from None

    def flag(self, i: int, what: str, default: Optional[bool] = None) -> bool:
        """A concrete bool ("True"/"False"; ``default`` when empty)."""
        text = self.text(i)
        if text in ("True", "true", "1"):
            return True
        if text in ("False", "false", "0"):
            return False
        if default is not None and not text:
            return default
        raise _Missing(f"input {i} ({what}) is {text!r}, expected True or False")

    def number(self, i: int, default: Optional[float] = None) -> Optional[float]:
        """A concrete number, or ``default`` when it is not one."""
        try:
            return float(self.text(i))
        except ValueError:
            return default


_INT = re.compile(r"-?\d+")
_INT_LIST = re.compile(r"\[?\s*(-?\d+\s*(,\s*-?\d+\s*)*)?\]?")


def _shape_or_none(value: Any, negative: bool = False) -> Optional[tuple[int, ...]]:
    """A tuple of ints >= 0 (strides: any int), else None."""
    if not isinstance(value, (tuple, list)):
        return None
    for v in value:
        if type(v) is not int or (v < 0 and not negative):
            return None
    return tuple(value)


def _numel(shape: Iterable[int]) -> int:
    """Elements of a shape."""
    return math.prod(shape)


def _stored(call: Call, i: int) -> int:
    """Elements input ``i`` holds in memory: its dims of nonzero stride (a broadcast dim is stored once)."""
    shape = call.shape(i)
    strides = call.stride(i)
    if strides is None or len(strides) != len(shape):
        return _numel(shape)
    return math.prod(n for n, s in zip(shape, strides) if s != 0)


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """numpy's broadcast of shapes; ``_Missing`` if they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for k, n in enumerate(s, start=ndim - len(s)):
            if out[k] == 1:
                out[k] = n
            elif n not in (1, out[k]):
                raise _Missing(f"input shapes {shapes} do not broadcast")
    return tuple(out)


def _promote(names: list[str]) -> str:
    """PyTorch's result dtype of tensors of these C++ dtypes (two different 16-bit floats give float)."""
    best = names[0]
    for name in names[1:]:
        a, b = _PROMOTION.get(best, (2, 3)), _PROMOTION.get(name, (2, 3))
        if b > a:
            best = name
        elif a == b and name != best:
            best = "float" if a[0] == 2 else best
    return best


# ---- the adapter table ---------------------------------------------------------------------------------------


class Adapted(NamedTuple):
    """An adapter's answer: the operator's keyword arguments and, optionally, a change of the built workload."""

    kwargs: dict[str, Any]
    adjust: Optional[Callable[[Workload], Workload]] = None


Adapter = Callable[[Call], Adapted]
#: ATen op name -> the adapter reading its inputs into its operator's arguments
ADAPTERS: dict[str, Adapter] = {}


def adapter(*names: str) -> Callable[[Adapter], Adapter]:
    """Register the decorated function as the argument adapter of these ATen ops (each at most once)."""

    def register(fn: Adapter) -> Adapter:
        for name in names:
            if name in ADAPTERS:
                raise ValueError(f"an argument adapter for {name!r} is registered twice")
            ADAPTERS[name] = fn
        return fn

    return register


def precision_of(torch_dtype: str) -> Optional[str]:
    """The solkit precision of a trace's dtype name ("c10::BFloat16" -> "bf16"), of a solkit name, or None."""
    if torch_dtype in TORCH_DTYPES:
        return TORCH_DTYPES[torch_dtype]
    try:
        return normalize(torch_dtype)
    except (SolkitError, TypeError, ValueError):
        return None


_OPAQUE = re.compile(r"OpaqueType<(\d+)u?>")
_FUNCTOR = re.compile(r"Functor<(float|double|c10::BFloat16|c10::Half)\b")
_BY_SIZE = {1: "int8", 2: "bf16", 4: "fp32", 8: "fp64"}


def list_dtype_of_kernel(kernel_name: str) -> Optional[str]:
    """The element precision a tensor-list kernel's name shows, or None.

    ``CatArrayBatchedCopy<OpaqueType<2u>, ...>`` moves 2-byte elements ("bf16": fp16 and bf16 store alike);
    ``multi_tensor_apply_kernel<..., FusedAdamMathFunctor<float, ...>`` works on fp32.
    """
    if not isinstance(kernel_name, str):
        return None
    m = _OPAQUE.search(kernel_name)
    if m:
        return _BY_SIZE.get(int(m.group(1)))
    m = _FUNCTOR.search(kernel_name)
    return TORCH_DTYPES[m.group(1)] if m else None


# ---- pointwise ---------------------------------------------------------------------------------------------

def _category(name: str) -> int:
    """0 bool, 1 integer, 2 floating point."""
    return _PROMOTION.get(name, (2, 3))[0]


def _pointwise(call: Call, skip_promotion: tuple[int, ...] = ()) -> Adapted:
    """ops.pointwise of the call's tensor inputs: each read at its stored size, the output at the broadcast shape."""
    tensors = [i for i in range(len(call.shapes)) if call.is_tensor(i)]
    if not tensors:
        raise _Missing("no tensor input")
    shapes = {i: call.shape(i) for i in tensors}
    inplace = call.op.endswith("_")
    out_shape = shapes[tensors[0]] if inplace else _broadcast(list(shapes.values()))
    if inplace:
        out_name = call.dtype_name(tensors[0])  # self is the output
    else:
        promoted = [i for i in tensors if i not in skip_promotion] or tensors
        with_dims = [call.dtype_name(i) for i in promoted if shapes[i]]
        zero_dim = [call.dtype_name(i) for i in promoted if not shapes[i]]
        out_name = _promote(with_dims or zero_dim)
        if with_dims and zero_dim and _category(_promote(zero_dim)) > _category(out_name):
            out_name = "float"  # an integer tensor and a Python float: the default dtype
        if call.short == "div" and _category(out_name) < 2:
            out_name = "float"  # true division of integers
    groups: dict[str, int] = {}
    for i in [i for i in tensors if shapes[i]] or tensors:  # 0-dim inputs are scalars, unless every input is
        p = call.precision(i)
        groups[p] = groups.get(p, 0) + _stored(call, i)
    if len(groups) > 2:
        raise _Missing(f"inputs in {len(groups)} precisions ({', '.join(groups)}); ops.pointwise takes two")
    (dtype, read), *rest = groups.items()
    flops = 1
    alpha = call.number(2, 1.0) if call.short in ("add", "sub") and call.dtype_name(2) == "Scalar" else 1.0
    if alpha != 1.0:
        flops = 2  # self + alpha * other: a multiply-add
    kwargs: dict[str, Any] = dict(out_elements=_numel(out_shape), in_elements=read, dtype=dtype,
                                  out_dtype=call.precision_named(out_name, "the output"), flops_per_element=flops,
                                  name=call.short)
    if rest:
        kwargs.update(other_elements=rest[0][1], other_dtype=rest[0][0])
    return Adapted(kwargs)


@adapter(*(n for n in get_operator("pointwise").aten if n != "aten::where"))
def _elementwise(call: Call) -> Adapted:
    """add/sub/mul/div (self, other, alpha), unary math and relu, threshold_backward (grad, self, threshold),
    masked_fill_ (self, mask, value): every tensor input read at its own size, the broadcast output written."""
    return _pointwise(call)


@adapter("aten::where")
def _where(call: Call) -> Adapted:
    """where(condition, self, other): the bool condition is read but takes no part in the result's dtype."""
    return _pointwise(call, skip_promotion=(0,))


# ---- copies, fills, reductions -----------------------------------------------------------------------------


@adapter("aten::copy_")
def _copy_(call: Call) -> Adapted:
    """copy_(self, src): src read, self written (a cast when their dtypes differ)."""
    dst = call.shape(0, "self")
    call.shape(1, "src")
    if _stored(call, 1) < _numel(dst):
        call.note("the source is broadcast (stride 0): counted at the destination's size")
    src, out = call.precision(1), call.precision(0)
    return Adapted(dict(elements=_numel(dst), dtype=src, out_dtype=None if out == src else out))


@adapter("aten::clone")
def _clone(call: Call) -> Adapted:
    """clone(self, memory_format): a copy of self."""
    return Adapted(dict(elements=_numel(call.shape(0, "self")), dtype=call.precision(0)))


@adapter("aten::_to_copy")
def _to_copy(call: Call) -> Adapted:
    """_to_copy(self, dtype, layout, device, ...): a cast when dtype is given."""
    src = call.precision(0)
    out = call.scalar_type(1) or src
    return Adapted(dict(elements=_numel(call.shape(0, "self")), dtype=src, out_dtype=None if out == src else out))


@adapter("aten::fill_", "aten::zero_")
def _fill(call: Call) -> Adapted:
    """fill_(self, value) / zero_(self): self written (a 0-dim self is one element)."""
    return Adapted(dict(elements=max(1, _numel(call.shape(0, "self"))), dtype=call.precision(0)))


@adapter("aten::arange")
def _arange(call: Call) -> Adapted:
    """arange(start, end, step, out): ceil((end - start) / step) elements of the out tensor's dtype."""
    numbers = [x for i in range(len(call.concrete)) if call.dtype_name(i) == "Scalar"
               and (x := call.number(i)) is not None]
    tensors = [i for i in range(len(call.shapes)) if call.is_tensor(i)]
    if not tensors:
        raise _Missing("no out tensor (its dtype is unknown)")
    if len(numbers) == 1:
        start, end, step = 0.0, numbers[0], 1.0
    elif len(numbers) == 2:
        start, end, step = numbers[0], numbers[1], 1.0
    elif len(numbers) >= 3:
        start, end, step = numbers[0], numbers[1], numbers[2]
    else:
        start, end, step = 0.0, 0.0, 1.0
    count = math.ceil((end - start) / step) if step else 0
    if count < 1:  # no range given: the out tensor's own size
        count = _numel(call.shape(tensors[-1]))
    if count < 1:
        raise _Missing(f"start {start:g}, end {end:g}, step {step:g} give no elements")
    return Adapted(dict(elements=count, dtype=call.precision(tensors[-1])))


@adapter("aten::sum", "aten::mean", "aten::amax", "aten::amin")
def _reduce(call: Call) -> Adapted:
    """sum/mean/amax/amin(self, dim, keepdim, dtype): the input read, the reduced output written."""
    shape = call.shape(0, "self")
    n = _numel(shape)
    kept = 1  # no dims given: every dim is reduced
    if shape and call.dtype_name(1) == "ScalarList" and call.text(1) not in ("", "[]"):
        dims = {d % len(shape) for d in call.ints(1, "dim")}
        kept = math.prod(size for k, size in enumerate(shape) if k not in dims)
    if n < 1:
        raise _Missing(f"an empty input {shape}")
    dtype = call.precision(0)
    out = call.scalar_type(3) if call.short in ("sum", "mean") else None
    return Adapted(dict(in_elements=n, out_elements=max(1, kept), dtype=dtype,
                        out_dtype=None if out in (None, dtype) else out))


# ---- concatenation and indexing ----------------------------------------------------------------------------


def _list_dtype(call: Call, i: int) -> str:
    """The precision of a TensorList input: the ``list_dtype`` hint (the trace records none), required."""
    if call.dtype_name(i) != "TensorList":
        return call.precision(i)
    if call.list_dtype is None:
        raise _Missing("the trace records no dtype for a TensorList; pass list_dtype= (list_dtype_of_kernel(name) "
                       "reads it from the kernel's name)")
    return _list_precision(call)


@adapter("aten::cat", "aten::concat")
def _cat(call: Call) -> Adapted:
    """cat(tensors, dim): every input read, the output (their sum) written."""
    shapes = call.shapes[0] if call.shapes else None
    if not isinstance(shapes, (tuple, list)) or not shapes or not all(_shape_or_none(s) is not None for s in shapes):
        raise _Missing(f"input 0 (tensors) has no list of shapes, got {shapes!r}")
    elements = sum(_numel(s) for s in shapes)
    if elements < 1:
        raise _Missing("every input is empty")
    return Adapted(dict(elements=elements, dtype=_list_dtype(call, 0)))


@adapter("aten::gather")
def _gather(call: Call) -> Adapted:
    """gather(self, dim, index): one element per index; an index broadcast along a dim (stride 0) is read once."""
    index = call.shape(2, "index")
    return Adapted(dict(elements=_numel(index), index_elements=_stored(call, 2), dtype=call.precision(0)))


@adapter("aten::index_select")
def _index_select(call: Call) -> Adapted:
    """index_select(self, dim, index): len(index) slices of self along dim."""
    shape, index = call.shape(0, "self"), call.shape(2, "index")
    dim = call.integer(1, "dim", 0) % max(1, len(shape))
    per = _numel(shape) // shape[dim] if shape and shape[dim] else 1
    return Adapted(dict(elements=per * _numel(index), index_elements=_numel(index), dtype=call.precision(0)))


@adapter("aten::index")
def _index(call: Call) -> Adapted:
    """index(self, indices): int64 index tensors on the leading dims (a bool mask cannot be sized: Unmapped)."""
    shape = call.shape(0, "self")
    lists = call.shapes[1] if len(call.shapes) > 1 else None
    if not isinstance(lists, (tuple, list)) or not lists:
        raise _Missing("input 1 (indices) has no list of shapes")
    given = [_shape_or_none(s) for s in lists]
    if any(s is None for s in given) or len(given) > len(shape):
        raise _Missing(f"input 1 (indices) has shapes {lists!r}")
    if call.list_dtype is not None and precision_of(call.list_dtype) == "int8":
        raise _Missing("a boolean mask index selects a data-dependent number of elements")
    call.note("indices assumed int64, one tensor per leading dim")
    picked = _numel(_broadcast([s for s in given if s is not None]))
    elements = picked * _numel(shape[len(given):])
    if elements < 1:
        raise _Missing("selects no element")
    return Adapted(dict(elements=elements, index_elements=sum(_numel(s) for s in given if s is not None),
                        dtype=call.precision(0)))


# ---- matmul ------------------------------------------------------------------------------------------------


def _mm(call: Call, a: int, b: int) -> dict[str, Any]:
    """(m, n, k, dtype) of input a [m, k] @ input b [k, n]."""
    sa, sb = call.shape(a, "mat1"), call.shape(b, "mat2")
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0]:
        raise _Missing(f"mm of {sa} and {sb}: expected [m, k] @ [k, n]")
    return dict(m=sa[0], n=sb[1], k=sa[1], dtype=call.precision(a))


def _transposed(call: Call, i: int) -> bool:
    """Whether 2-D input ``i`` is stored column by column (a transposed view: strides (1, rows)), so that its stored
    rows are its m elements long, as a weight gradient's X^T or dY^T is."""
    shape, stride = call.shape(i), call.stride(i)
    return stride is not None and len(stride) == 2 and shape[1] > 1 and stride[0] == 1 and stride[1] >= shape[0]


def _wgrad_layout(call: Call, a: int) -> Optional[Callable[[Workload], Workload]]:
    """An adjustment for a product whose first operand is a transposed view (autograd's weight gradient,
    ``grad.t() @ x``): its GEMM's rows are m long as stored, so its alignment is m's and n's (``Gemm.layout``
    "wgrad", as ``ops.matmul``'s own gradient marks it), not k's."""
    if not _transposed(call, a):
        return None

    def adjust(w: Workload) -> Workload:
        parts = tuple((k._replace(gemm=k.gemm._replace(layout="wgrad")) if k.kind == "gemm" and k.gemm is not None
                       else k, n) for k, n in w.counted)
        return Workload.of(w.name, parts, w.call)

    return adjust


@adapter("aten::mm", "aten::_int_mm")
def _matmul_mm(call: Call) -> Adapted:
    """mm(a [m,k], b [k,n]); _int_mm the same on int8 (int32 out). A transposed a (strides (1, m)) is stored as rows
    of m: its GEMM is laid out as a weight gradient (``_wgrad_layout``)."""
    return Adapted(_mm(call, 0, 1), _wgrad_layout(call, 0))


def _bias(call: Call, i: int, n: int) -> bool:
    """Whether input i (an addmm's self) is a bias; one larger than [n] (a full C) is counted as [n] (noted)."""
    if not call.is_tensor(i):
        return False
    size = _numel(call.shape(i))
    if size > n:
        call.note(f"the added input of {size} elements is counted as a bias of n = {n}")
    return True


def _bmm(call: Call, a: int, b: int) -> dict[str, Any]:
    """(m, n, k, dtype, batch) of input a [b, m, k] @ input b [b, k, n]."""
    sa, sb = call.shape(a, "batch1"), call.shape(b, "batch2")
    if len(sa) != 3 or len(sb) != 3 or sa[0] != sb[0] or sa[2] != sb[1]:
        raise _Missing(f"bmm of {sa} and {sb}: expected [b, m, k] @ [b, k, n]")
    return dict(m=sa[1], n=sb[2], k=sa[2], dtype=call.precision(a), batch=sa[0])


@adapter("aten::bmm")
def _matmul_bmm(call: Call) -> Adapted:
    """bmm(a [b,m,k], b [b,k,n])."""
    return Adapted(_bmm(call, 0, 1))


@adapter("aten::addmm", "aten::baddbmm", "aten::_addmm_activation")
def _matmul_with_bias(call: Call) -> Adapted:
    """addmm(bias, mat1 [m,k], mat2 [k,n], beta, alpha), baddbmm(self, batch1 [b,m,k], batch2 [b,k,n], ...) and
    _addmm_activation(..., use_gelu): the added input counted as a bias of n (noted when larger); the activation
    a GELU or ReLU epilogue."""
    kw = (_bmm if call.op == "aten::baddbmm" else _mm)(call, 1, 2)
    kw["bias"] = _bias(call, 0, kw["n"])
    if call.op == "aten::_addmm_activation":
        kw["epilogue"] = "gelu" if call.flag(5, "use_gelu", False) else "relu"
    return Adapted(kw, None if call.op == "aten::baddbmm" else _wgrad_layout(call, 1))


@adapter("aten::matmul")
def _matmul_matmul(call: Call) -> Adapted:
    """matmul(a [..., m, k], b [k, n] or [..., k, n]): leading dims of a fold into m against a 2-D b, else batch."""
    sa, sb = call.shape(0, "self"), call.shape(1, "other")
    if not sa or not sb:
        raise _Missing("matmul of a 0-dim tensor")
    a = sa if len(sa) > 1 else (1,) + sa
    b = sb if len(sb) > 1 else sb + (1,)
    if a[-1] != b[-2]:
        raise _Missing(f"matmul of {sa} and {sb}: the inner dims differ")
    if len(b) == 2:
        return Adapted(dict(m=_numel(a[:-1]), n=b[-1], k=a[-1], dtype=call.precision(0)))
    batch = _broadcast([a[:-2], b[:-2]])
    return Adapted(dict(m=a[-2], n=b[-1], k=a[-1], dtype=call.precision(0), batch=max(1, _numel(batch))))


@adapter("aten::linear")
def _matmul_linear(call: Call) -> Adapted:
    """linear(x [..., k], weight [n, k], bias [n])."""
    sx, sw = call.shape(0, "input"), call.shape(1, "weight")
    if not sx or len(sw) != 2 or sx[-1] != sw[1]:
        raise _Missing(f"linear of {sx} with weight {sw}: expected [..., k] and [n, k]")
    return Adapted(dict(m=_numel(sx[:-1]), n=sw[0], k=sw[1], dtype=call.precision(0), bias=call.is_tensor(2)))


@adapter("aten::_scaled_mm")
def _matmul_scaled_mm(call: Call) -> Adapted:
    """_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum): fp8 in; out_dtype, else a's."""
    kw = _mm(call, 0, 1)
    out = call.scalar_type(6)
    kw.update(out_dtype=out or kw["dtype"], bias=call.is_tensor(4))
    call.note("the per-tensor or per-row scales are not counted")
    return Adapted(kw)


#: the note a grouped GEMM's mapping carries where its groups' sizes are not in the trace
BALANCED_GROUPS = ("grouped GEMM: the group offsets (offs) are tensor values, not in the trace: each group counted with "
                   "an equal share of the grouped rows (balanced top-k routing)")


@adapter("aten::_grouped_mm")
def _grouped_mm(call: Call) -> Adapted:
    """_grouped_mm(a, b, offs, bias, out_dtype): a [E, m, k] @ b [E, k, n], equal groups (exact); a [S, k] @ b [E, k, n]
    with offs [E], rows grouped: the S rows split evenly over the E groups (``BALANCED_GROUPS``); a [m, S] @ b [S, n]
    with offs [E], the reduction grouped (a weight gradient, -> [E, m, n]): the grouped GEMM's wgrad kernel over
    groups of S / E, balanced too. Grouped columns (a [E, m, k] @ b [k, S]) are Unmapped."""
    a, b = call.shape(0, "self"), call.shape(1, "mat2")
    offs = call.shape(2, "offs")[0] if call.is_tensor(2) and len(call.shape(2)) == 1 else None
    adjust: Optional[Callable[[Workload], Workload]] = None
    if len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        sizes, n, k = [a[1]] * a[0], b[2], a[2]
    elif len(a) == 2 and len(b) == 3 and a[1] == b[1]:
        groups = b[0] if offs is None else offs
        if groups != b[0] or groups < 1:
            raise _Missing(f"offs of {groups} groups for {b[0]} expert matrices")
        sizes, n, k = _split(a[0], groups), b[2], a[1]
        call.note(BALANCED_GROUPS)
    elif len(a) == 2 and len(b) == 2 and a[1] == b[0] and offs is not None and offs >= 1:
        # dB_i [m, n] = A_i [m, g_i] @ B_i [g_i, n]: the wgrad of grouped_matmul(g, n, k=m), its only kernel
        sizes, n, k = _split(a[1], offs), b[1], a[0]
        call.note(BALANCED_GROUPS)

        def adjust(w: Workload) -> Workload:
            assert w.call is not None  # noqa: S101 - the registry records every call
            back = get_operator("grouped_matmul").gradient(w.call, "grouped matmul")
            wgrad = next(kernel for kernel, _ in back.counted if kernel.name.endswith("wgrad"))
            return Workload.of("grouped matmul (grouped reduction)", ((wgrad, 1),))
    else:
        raise _Missing(f"grouped GEMM of {a} and {b}: solkit models [E, m, k] @ [E, k, n], rows grouped ([S, k] @ "
                       f"[E, k, n]) and the reduction grouped ([m, S] @ [S, n] with offs); grouped columns are not")
    if call.is_tensor(3):
        call.note("the bias read is not counted")
    out = call.scalar_type(4)
    kw: dict[str, Any] = dict(group_sizes=sizes, n=n, k=k, dtype=call.precision(0))
    if out is not None:
        kw["out_dtype"] = out
    return Adapted(kw, adjust)


# ---- convolution -------------------------------------------------------------------------------------------


def _pair(call: Call, i: int, what: str, default: Optional[tuple[int, int]] = None) -> tuple[int, int]:
    """A concrete (h, w) pair from "[2, 2]" or "2" (``default`` when empty)."""
    if default is not None and call.text(i) in ("", "[]"):
        return default
    values = call.ints(i, what)
    if len(values) == 1:
        return values[0], values[0]
    if len(values) != 2:
        raise _Missing(f"input {i} ({what}) is {call.text(i)!r}, expected one or two integers (a 2-D op)")
    return values[0], values[1]


def _conv(call: Call, x: int, w: int, stride: int, padding: int, dilation: int, groups: Optional[int]) -> dict[str, Any]:
    """conv2d arguments from input x [N,C,H,W] (or [C,H,W]), weight [K,C/g,R,S] and the concrete lists."""
    sx, sw = call.shape(x, "input"), call.shape(w, "weight")
    if len(sx) == 3:
        sx = (1,) + sx
    if len(sx) != 4 or len(sw) != 4:
        raise _Missing(f"convolution of {call.shape(x)} with weight {sw}: only 2-D convolutions are modeled")
    n, c, h, wd = sx
    strides = call.stride(x)
    channels_last = c == 1 or (strides is not None and len(strides) == 4 and strides[1] == 1)
    g = call.integer(groups, "groups", 1) if groups is not None else 1
    return dict(batch=n, in_channels=c, height=h, width=wd, out_channels=sw[0], kernel=(sw[2], sw[3]),
                stride=_pair(call, stride, "stride"), padding=_pair(call, padding, "padding"),
                dilation=_pair(call, dilation, "dilation"), groups=g, layout="nhwc" if channels_last else "nchw",
                dtype=call.precision(x))


def _not_transposed(call: Call, i: int) -> None:
    """Refuse a transposed convolution (input ``i`` is its flag)."""
    if call.flag(i, "transposed", False):
        raise _Missing("a transposed convolution: no solkit operator models it")


@adapter("aten::cudnn_convolution")
def _conv_cudnn(call: Call) -> Adapted:
    """cudnn_convolution(input, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)."""
    return Adapted(_conv(call, 0, 1, stride=3, padding=2, dilation=4, groups=5))


@adapter("aten::convolution", "aten::_convolution")
def _conv_convolution(call: Call) -> Adapted:
    """convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)."""
    _not_transposed(call, 6)
    if call.is_tensor(2):
        call.note("the bias add is not counted")
    return Adapted(_conv(call, 0, 1, stride=3, padding=4, dilation=5, groups=8))


@adapter("aten::conv2d")
def _conv_conv2d(call: Call) -> Adapted:
    """conv2d(input, weight, bias, stride, padding, dilation, groups)."""
    if call.is_tensor(2):
        call.note("the bias add is not counted")
    return Adapted(_conv(call, 0, 1, stride=3, padding=4, dilation=5, groups=6))


@adapter("aten::convolution_backward")
def _conv_backward(call: Call) -> Adapted:
    """convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    output_padding, groups, output_mask): the gradients output_mask asks for (dgrad, wgrad; the bias gradient
    as a reduce of dy over N*Ho*Wo)."""
    _not_transposed(call, 7)
    kw = _conv(call, 1, 2, stride=4, padding=5, dilation=6, groups=9)
    text = call.text(10)
    mask = [t == "True" for t in re.findall(r"True|False", text)] if text else [True, True, False]
    if len(mask) != 3:
        raise _Missing(f"input 10 (output_mask) is {text!r}, expected three flags")
    if not any(mask):
        raise _Missing("output_mask asks for no gradient")
    dy = call.shape(0, "grad_output")
    e_dtype = kw["dtype"]

    def keep(w: Workload) -> Workload:
        parts = [(k, c) for k, c in w.counted
                 if (mask[0] or not (k.name.endswith("dgrad") or "dx " in k.name))
                 and (mask[1] or not k.name.endswith("wgrad"))]
        if mask[2]:
            # db [K] = the sum of dy [N,K,Ho,Wo] over N, Ho, Wo
            bias = reduce(_numel(dy), dy[1] if len(dy) > 1 else 1, e_dtype).counted[0][0]
            parts.append((bias._replace(name=f"{w.name.removesuffix(' backward')} bias grad"), 1))
        if not parts:
            raise _Missing("output_mask asks only for gradients this layout does not launch")
        return Workload.of(w.name, tuple(parts))

    return Adapted(kw, keep)


# ---- attention ---------------------------------------------------------------------------------------------

#: ATen attention op -> (index of query, of is_causal (or the custom mask type), of dropout_p, of the mask or
#: bias (-1: none), query layout, backend)
_ATTENTION: dict[str, tuple[int, int, int, int, str, str]] = {
    "aten::scaled_dot_product_attention": (0, 5, 4, 3, "bhsd", "sdpa"),
    "aten::_scaled_dot_product_flash_attention": (0, 4, 3, -1, "bhsd", "flash"),
    "aten::_scaled_dot_product_efficient_attention": (0, 6, 5, 3, "bhsd", "efficient"),
    "aten::_scaled_dot_product_cudnn_attention": (0, 6, 5, 3, "bhsd", "cudnn"),
    "aten::_cudnn_attention_forward": (0, 10, 9, 3, "bhsd", "cudnn"),
    "aten::_flash_attention_forward": (0, 8, 7, -1, "bshd", "flash"),
    "aten::_efficient_attention_forward": (0, 9, 8, 3, "bshd", "efficient"),
    "aten::_scaled_dot_product_flash_attention_backward": (1, 11, 10, -1, "bhsd", "flash"),
    "aten::_scaled_dot_product_efficient_attention_backward": (1, 11, 9, 4, "bhsd", "efficient"),
    "aten::_scaled_dot_product_cudnn_attention_backward": (1, 14, 13, 8, "bhsd", "cudnn"),
    "aten::_cudnn_attention_backward": (1, 14, 13, 8, "bhsd", "cudnn"),
    "aten::_flash_attention_backward": (1, 11, 10, -1, "bshd", "flash"),
    "aten::_efficient_attention_backward": (1, 14, 11, 4, "bshd", "efficient"),
}
#: the ops whose causal input is xformers' custom_mask_type (0 none, 1 causal from the top left, 2 from the bottom right)
_MASK_TYPE = ("aten::_efficient_attention_forward", "aten::_efficient_attention_backward")
#: the kernels' own ops that take packed sequences (varlen) -> (index of cum_seq_q, of max_seqlen_q); cum_seq_k and
#: max_seqlen_k follow each
_VARLEN: dict[str, tuple[int, int]] = {
    "aten::_flash_attention_forward": (3, 5), "aten::_efficient_attention_forward": (4, 6),
    "aten::_flash_attention_backward": (6, 8), "aten::_efficient_attention_backward": (6, 8),
}
#: the note a varlen attention's mapping carries
BALANCED_SEQUENCES = ("varlen: the sequence offsets (cum_seq_q, cum_seq_k) are tensor values, not in the trace: each "
                      "sequence counted with an equal share of the packed queries and keys (balanced)")


def _split(total: int, groups: int) -> list[int]:
    """``total`` over ``groups`` as evenly as whole numbers go, the larger shares first (the sum is exact)."""
    base, extra = divmod(total, groups)
    return [base + 1] * extra + [base] * (groups - extra)


def _varlen(call: Call, qi: int, q: tuple[int, ...], k: tuple[int, ...]) -> Optional[dict[str, Any]]:
    """The arguments of a varlen call (packed q [total_q, h, d] or [1, total_q, h, d], cum_seq_q a tensor of b + 1
    offsets), or None when the call is padded. Lengths balanced (``BALANCED_SEQUENCES``); seq_q, seq_kv the
    max_seqlen inputs where the trace has them, else the longest balanced share."""
    ci, mi = _VARLEN.get(call.op, (-1, -1))
    if ci < 0 or not call.is_tensor(ci):
        return None
    offsets = call.shape(ci, "cum_seq_q")
    if len(offsets) != 1 or offsets[0] < 2:
        raise _Missing(f"cum_seq_q of shape {offsets}: expected b + 1 offsets for b >= 1 sequences")
    b = offsets[0] - 1
    if len(q) == 4 and len(k) == 4 and q[0] == 1 and k[0] == 1:  # the efficient kernel's [1, total, h, d]
        q, k = q[1:], k[1:]
    if len(q) != 3 or len(k) != 3:
        raise _Missing(f"varlen query {q} and key {k}: expected packed [total, heads, head_dim]")
    (total_q, h, d), (total_k, kv) = q, k[:2]
    if k[2] != d or kv < 1 or h % kv or total_q < b or total_k < b:
        raise _Missing(f"varlen query {q} and key {k} do not fit one attention over {b} sequences")
    lens_q, lens_k = _split(total_q, b), _split(total_k, b)
    max_q, max_k = call.integer(mi, "max_seqlen_q", lens_q[0]), call.integer(mi + 1, "max_seqlen_k", lens_k[0])
    if max_q < lens_q[0] or max_k < lens_k[0]:
        raise _Missing(f"max_seqlen_q {max_q} and max_seqlen_k {max_k} are shorter than the mean sequence of "
                       f"{total_q} queries and {total_k} keys over {b}")
    call.note(BALANCED_SEQUENCES)
    return dict(batch=b, heads=h, seq_q=max_q, seq_kv=max_k, head_dim=d, kv_heads=None if kv == h else kv,
                seq_lens=lens_q, seq_lens_kv=lens_k, dtype=call.precision(qi))


@adapter(*_ATTENTION)
def _attention(call: Call) -> Adapted:
    """q [b,h,sq,d], k [b,kv,skv,d] (the _flash/_efficient kernels' own ops: [b,s,h,d]); is_causal from the
    concrete inputs; impl the backend when ops.attention has it, else "flash" (one fused kernel) and a note."""
    qi, ci, di, bi, layout, backend = _ATTENTION[call.op]
    q, k = call.shape(qi, "query"), call.shape(qi + 1, "key")
    v = call.shape(qi + 2, "value")
    varlen = _varlen(call, qi, q, k)
    if varlen is not None:
        causal = (call.integer(ci, "custom_mask_type", 0) != 0) if call.op in _MASK_TYPE else call.flag(ci, "is_causal")
        if causal and call.op in _MASK_TYPE and call.integer(ci, "custom_mask_type", 0) == 1:
            call.note("top-left causal mask counted bottom-right aligned")
        if (call.number(di, 0.0) or 0.0) > 0.0:
            call.note("dropout inside the attention kernel is not counted")
        return Adapted(dict(varlen, causal=causal, impl=backend))
    if len(q) != 4 or len(k) != 4:
        raise _Missing(f"query {q} and key {k}: expected 4-D [batch, heads, seq, head_dim]")
    if layout == "bshd":
        q, k, v = (q[0], q[2], q[1], q[3]), (k[0], k[2], k[1], k[3]), (v[0], v[2], v[1], v[3])
    b, h, sq, d = q
    kv, skv = k[1], k[2]
    if k[0] != b or k[3] != d or kv < 1 or h % kv:
        raise _Missing(f"query {q} and key {k} do not fit one attention (batch, head_dim, or heads a multiple of kv heads)")
    if len(v) == 4 and v[-1] != d:
        call.note(f"value head_dim {v[-1]} != query head_dim {d}: counted as {d}")
    if call.op in _MASK_TYPE:
        mask_type = call.integer(ci, "custom_mask_type", 0)
        causal = mask_type != 0
        if mask_type == 1 and sq != skv:
            call.note("top-left causal mask counted bottom-right aligned")
    else:
        causal = call.flag(ci, "is_causal")
        if causal and sq != skv:
            call.note("PyTorch's is_causal is top-left aligned; solkit counts bottom-right (equal when seq_q == seq_kv)")
    impls = get_operator("attention").param("impl").choices
    impl = backend if backend in impls else "flash"
    if impl != backend:
        call.note(f"{backend} attention counted as ops.attention impl='flash' (one fused kernel; no {backend!r} impl)")
    if (call.number(di, 0.0) or 0.0) > 0.0:
        call.note("dropout inside the attention kernel is not counted")
    if bi >= 0 and call.is_tensor(bi) and call.shape(bi):
        call.note("the attention mask or bias read is not counted")
    return Adapted(dict(batch=b, heads=h, seq_q=sq, seq_kv=skv, head_dim=d, kv_heads=None if kv == h else kv,
                        causal=causal, impl=impl, dtype=call.precision(qi)))


# ---- norms, softmax, activations ---------------------------------------------------------------------------


def _rows(call: Call, x: int, normalized: int, weight: Optional[int]) -> dict[str, Any]:
    """(tokens, d_model, dtype) of a norm over the trailing normalized_shape of input x."""
    shape = call.shape(x, "input")
    if call.text(normalized) not in ("", "[]"):
        norm = call.ints(normalized, "normalized_shape")
    elif weight is not None and call.is_tensor(weight):
        norm = call.shape(weight)
    else:
        norm = shape[-1:]
    d = _numel(norm)
    if not shape or not d or _numel(shape) % d:
        raise _Missing(f"normalized_shape {norm} does not divide input {shape}")
    return dict(tokens=max(1, _numel(shape) // d), d_model=d, dtype=call.precision(x))


@adapter("aten::native_layer_norm", "aten::layer_norm", "aten::rms_norm", "aten::_fused_rms_norm")
def _norm(call: Call) -> Adapted:
    """(native_)layer_norm / rms_norm (input, normalized_shape, weight, ...)."""
    return Adapted(_rows(call, 0, 1, 2))


@adapter("aten::native_layer_norm_backward", "aten::_fused_rms_norm_backward")
def _norm_backward(call: Call) -> Adapted:
    """native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask);
    _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, output_mask)."""
    return Adapted(_rows(call, 1, 2, 5 if call.op == "aten::native_layer_norm_backward" else 4))


def _softmax_rows(call: Call, x: int, dim: int) -> dict[str, Any]:
    """(rows, cols, dtype) of a softmax of input x along dim."""
    shape = call.shape(x, "input")
    if not shape:
        return dict(rows=1, cols=1, dtype=call.precision(x))
    axis = call.integer(dim, "dim", -1) % len(shape)
    cols = shape[axis]
    if cols < 1:
        raise _Missing(f"softmax over an empty dim of {shape}")
    return dict(rows=max(1, _numel(shape) // cols), cols=cols, dtype=call.precision(x))


@adapter("aten::_softmax", "aten::softmax", "aten::_log_softmax", "aten::log_softmax")
def _softmax(call: Call) -> Adapted:
    """(_log)_softmax(self, dim, half_to_float or dtype)."""
    if call.op.startswith("aten::_") and call.flag(2, "half_to_float", False):
        call.note("half_to_float: the fp32 output is counted in the input's precision")
    return Adapted(_softmax_rows(call, 0, 1))


@adapter("aten::_softmax_backward_data", "aten::_log_softmax_backward_data")
def _softmax_backward(call: Call) -> Adapted:
    """(_log)_softmax_backward_data(grad_output, output, dim, input_dtype): reads dy and y, writes dx."""
    return Adapted(_softmax_rows(call, 0, 2))


@adapter("aten::gelu", "aten::gelu_backward", "aten::silu", "aten::silu_", "aten::silu_backward")
def _activation(call: Call) -> Adapted:
    """gelu(self) / silu(self); their backward (grad_output, self): the elements of the first input."""
    return Adapted(dict(elements=_numel(call.shape(0, "input")), dtype=call.precision(0)))


# ---- embedding ---------------------------------------------------------------------------------------------


@adapter("aten::embedding")
def _embedding(call: Call) -> Adapted:
    """embedding(weight [vocab, d], indices [...])."""
    table, ids = call.shape(0, "weight"), call.shape(1, "indices")
    if len(table) != 2:
        raise _Missing(f"embedding table {table}: expected [vocab, d]")
    return Adapted(dict(tokens=max(1, _numel(ids)), vocab=table[0], d_model=table[1], dtype=call.precision(0)))


@adapter("aten::embedding_dense_backward")
def _embedding_backward(call: Call) -> Adapted:
    """embedding_dense_backward(grad [..., d], indices, num_weights, padding_idx, scale_grad_by_freq): the
    scatter-add only; zeroing the table's gradient is ATen's own aten::zero_ (a ``fill``) op."""
    grad, ids = call.shape(0, "grad_output"), call.shape(1, "indices")
    vocab = call.integer(2, "num_weights")
    if not grad or vocab < 1:
        raise _Missing(f"grad {grad}, num_weights {vocab}")

    def scatter_only(w: Workload) -> Workload:
        return Workload.of(w.name, tuple((k, c) for k, c in w.counted if not k.name.endswith("grad zero")))

    return Adapted(dict(tokens=max(1, _numel(ids)), vocab=vocab, d_model=grad[-1], dtype=call.precision(0)),
                   scatter_only)


# ---- pooling and im2col ------------------------------------------------------------------------------------


def _image(call: Call, i: int) -> tuple[int, int, int, int]:
    """(N, C, H, W) of input ``i`` ([C, H, W] is one image)."""
    shape = call.shape(i, "input")
    if len(shape) == 3:
        shape = (1,) + shape
    if len(shape) != 4:
        raise _Missing(f"input {shape}: expected [N, C, H, W]")
    return shape[0], shape[1], shape[2], shape[3]


def _pool(call: Call, x: int, kernel: int, stride: int, padding: int, dilation: Optional[int], ceil: int,
          mode: str, indices: bool) -> dict[str, Any]:
    """pool2d arguments from the input and the concrete window lists (stride defaults to the window)."""
    n, c, h, w = _image(call, x)
    window = _pair(call, kernel, "kernel_size")
    if dilation is not None and _pair(call, dilation, "dilation", (1, 1)) != (1, 1):
        raise _Missing("a dilated pooling window: ops.pool2d has no dilation")
    if call.flag(ceil, "ceil_mode", False):
        call.note("ceil_mode: the output size is counted with floor")
    kw = dict(batch=n, channels=c, height=h, width=w, kernel=window, stride=_pair(call, stride, "stride", window),
              padding=_pair(call, padding, "padding", (0, 0)), mode=mode, dtype=call.precision(x))
    if indices:
        kw["indices"] = True
    return kw


@adapter("aten::max_pool2d_with_indices", "aten::max_pool2d")
def _maxpool(call: Call) -> Adapted:
    """max_pool2d[_with_indices](self, kernel_size, stride, padding, dilation, ceil_mode): y, and with indices its
    int64 argmax."""
    return Adapted(_pool(call, 0, 1, 2, 3, 4, 5, "max", call.op.endswith("_with_indices")))


@adapter("aten::avg_pool2d")
def _avgpool(call: Call) -> Adapted:
    """avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)."""
    return Adapted(_pool(call, 0, 1, 2, 3, None, 4, "avg", False))


@adapter("aten::max_pool2d_with_indices_backward")
def _maxpool_backward(call: Call) -> Adapted:
    """max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices)."""
    return Adapted(_pool(call, 1, 2, 3, 4, 5, 6, "max", True))


@adapter("aten::avg_pool2d_backward")
def _avgpool_backward(call: Call) -> Adapted:
    """avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, ...)."""
    return Adapted(_pool(call, 1, 2, 3, 4, None, 5, "avg", False))


def _adaptive(call: Call, x: int, out: tuple[int, int]) -> Adapted:
    """Adaptive average pooling to ``out`` as a pool2d of equal windows."""
    n, c, h, w = _image(call, x)
    oh, ow = out
    if oh < 1 or ow < 1 or h % oh or w % ow:
        raise _Missing(f"adaptive pooling of {h}x{w} to {oh}x{ow}: windows of unequal size")
    window = (h // oh, w // ow)
    return Adapted(dict(batch=n, channels=c, height=h, width=w, kernel=window, stride=window, padding=(0, 0),
                        mode="avg", dtype=call.precision(x)))


@adapter("aten::adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d")
def _adaptive_avgpool(call: Call) -> Adapted:
    """adaptive_avg_pool2d(self, output_size): equal windows only."""
    return _adaptive(call, 0, _pair(call, 1, "output_size"))


@adapter("aten::_adaptive_avg_pool2d_backward")
def _adaptive_avgpool_backward(call: Call) -> Adapted:
    """_adaptive_avg_pool2d_backward(grad_output, self): the output size is grad_output's."""
    dy = call.shape(0, "grad_output")
    if len(dy) < 2:
        raise _Missing(f"grad_output {dy}")
    return _adaptive(call, 1, (dy[-2], dy[-1]))


@adapter("aten::im2col")
def _im2col(call: Call) -> Adapted:
    """im2col(self, kernel_size, dilation, padding, stride)."""
    n, c, h, w = _image(call, 0)
    return Adapted(dict(batch=n, in_channels=c, height=h, width=w, kernel=_pair(call, 1, "kernel_size"),
                        dilation=_pair(call, 2, "dilation"), padding=_pair(call, 3, "padding"),
                        stride=_pair(call, 4, "stride"), dtype=call.precision(0)))


@adapter("aten::col2im")
def _col2im(call: Call) -> Adapted:
    """col2im(self [N, C*R*S, L], output_size, kernel_size, dilation, padding, stride): im2col's gradient."""
    cols = call.shape(0, "input")
    if len(cols) == 2:
        cols = (1,) + cols
    r, s = _pair(call, 2, "kernel_size")
    if len(cols) != 3 or cols[1] % (r * s):
        raise _Missing(f"columns {cols} with a {r}x{s} kernel")
    h, w = _pair(call, 1, "output_size")
    return Adapted(dict(batch=cols[0], in_channels=cols[1] // (r * s), height=h, width=w, kernel=(r, s),
                        dilation=_pair(call, 3, "dilation"), padding=_pair(call, 4, "padding"),
                        stride=_pair(call, 5, "stride"), dtype=call.precision(0)))


# ---- batch norm, dropout, loss -----------------------------------------------------------------------------


def _batchnorm(call: Call, x: int, weight: int, stats: int, training: bool) -> dict[str, Any]:
    """batchnorm arguments from x [N, C, ...] (trailing dims folded into H x W) and the weight's or stats' dtype."""
    shape = call.shape(x, "input")
    if len(shape) < 2:
        raise _Missing(f"batch norm of {shape}: expected [N, C, ...]")
    n, c, rest = shape[0], shape[1], shape[2:]
    h, w = (rest[0] * _numel(rest[2:]), rest[1]) if len(rest) >= 2 else (rest[0], 1) if rest else (1, 1)
    param = next((call.precision(i) for i in (weight, stats) if call.is_tensor(i)), None)
    dtype = call.precision(x)
    kw = dict(batch=n, channels=c, height=h, width=w, training=training, dtype=dtype)
    if param is not None and param != dtype:
        kw["param_dtype"] = param
    return kw


@adapter("aten::native_batch_norm", "aten::cudnn_batch_norm", "aten::_native_batch_norm_legit")
def _bn(call: Call) -> Adapted:
    """native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps) (and the
    _legit variant without running stats: training is input 3)."""
    at = 5 if call.text(5) in ("True", "False") else 3
    return Adapted(_batchnorm(call, 0, 1, 3, call.flag(at, "training")))


@adapter("aten::_native_batch_norm_legit_no_training")
def _bn_eval(call: Call) -> Adapted:
    """_native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum, eps)."""
    return Adapted(_batchnorm(call, 0, 1, 3, False))


@adapter("aten::native_batch_norm_backward")
def _bn_backward(call: Call) -> Adapted:
    """native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
    train, eps, output_mask)."""
    return Adapted(_batchnorm(call, 1, 2, 5, call.flag(7, "train", True)))


@adapter("aten::cudnn_batch_norm_backward")
def _bn_backward_cudnn(call: Call) -> Adapted:
    """cudnn_batch_norm_backward(input, grad_output, weight, running_mean, running_var, save_mean, save_var, ...)."""
    return Adapted(_batchnorm(call, 0, 2, 5, True))


@adapter("aten::native_dropout")
def _dropout(call: Call) -> Adapted:
    """native_dropout(input, p, train)."""
    if not call.flag(2, "train", True):
        call.note("train=False: counted as a training dropout")
    return Adapted(dict(elements=_numel(call.shape(0, "input")), dtype=call.precision(0)))


@adapter("aten::native_dropout_backward")
def _dropout_backward(call: Call) -> Adapted:
    """native_dropout_backward(grad_output, mask, scale)."""
    return Adapted(dict(elements=_numel(call.shape(0, "grad_output")), dtype=call.precision(0)))


_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _nll(call: Call, x: int, target: int, weight: int, reduction: int) -> dict[str, Any]:
    """nll_loss arguments from the log-probabilities [N, C] (or [C]) and the reduction's enum (0 none, 1 mean, 2 sum)."""
    shape = call.shape(x, "input")
    call.shape(target, "target")
    rows, classes = (shape[0], shape[1]) if len(shape) == 2 else (1, shape[0]) if len(shape) == 1 else (0, 0)
    if rows < 1 or classes < 1:
        raise _Missing(f"input {shape}: expected [rows, classes]")
    if call.is_tensor(weight):
        call.note("class weights are not counted")
    mode = _REDUCTION.get(call.integer(reduction, "reduction", 1))
    if mode is None:
        raise _Missing(f"reduction {call.text(reduction)!r}")
    return dict(rows=rows, classes=classes, reduction=mode, dtype=call.precision(x))


@adapter("aten::nll_loss_forward")
def _nll_forward(call: Call) -> Adapted:
    """nll_loss_forward(self [N, C], target [N], weight, reduction, ignore_index)."""
    return Adapted(_nll(call, 0, 1, 2, 3))


@adapter("aten::nll_loss_backward")
def _nll_backward(call: Call) -> Adapted:
    """nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight): one write per
    row; zeroing grad_input is ATen's own aten::zero_ (a ``fill``) op."""
    return Adapted(_nll(call, 1, 2, 3, 4))


# ---- optimizers over tensor lists --------------------------------------------------------------------------


def _list_elements(call: Call) -> int:
    """The ``list_elements`` hint (the trace records no shapes for optimizer tensor lists)."""
    if call.list_elements is None:
        raise _Missing("its TensorList inputs carry no shapes in a torch.profiler trace (Input Dims []); "
                       "pass list_elements= (the elements of one list)")
    if type(call.list_elements) is not int or call.list_elements < 1:
        raise _Missing(f"list_elements must be a positive int, got {call.list_elements!r}")
    return call.list_elements


def _list_precision(call: Call) -> str:
    """The ``list_dtype`` hint, else fp32 (noted)."""
    if call.list_dtype is None:
        call.note("tensor lists assumed fp32 (pass list_dtype=)")
        return "fp32"
    p = precision_of(call.list_dtype)
    if p is None:
        raise _Missing(f"list_dtype {call.list_dtype!r} is not a precision")
    return p


@adapter("aten::_fused_adamw_", "aten::_fused_adam_")
def _fused_adam(call: Call) -> Adapted:
    """_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
    weight_decay, eps, amsgrad, maximize, grad_scale, found_inf)."""
    elements = _list_elements(call)
    if call.flag(11, "amsgrad", False):
        call.note("amsgrad's max_exp_avg_sq is not counted")
    return Adapted(dict(elements=elements, dtype=_list_precision(call)))


#: foreach op -> vector FLOPs per element (add/sub with alpha != 1: 2)
_FOREACH_FLOPS = {"add": 1, "sub": 1, "mul": 1, "div": 1, "addcmul": 3, "addcdiv": 3, "lerp": 3, "sqrt": 1,
                  "zero": 0, "copy": 0}


@adapter(*get_operator("foreach").aten)
def _foreach(call: Call) -> Adapted:
    """_foreach_<op>(lists..., scalars): every tensor list read (zero_ reads none), one list written."""
    name = call.op.removeprefix("aten::_foreach_").rstrip("_")
    lists = sum(1 for i in range(len(call.dtypes)) if call.dtype_name(i) == "TensorList")
    if lists < 1:
        raise _Missing("no TensorList input")
    flops = _FOREACH_FLOPS[name]
    if name in ("add", "sub") and lists == 2 and (alpha := call.number(2, 1.0)) is not None and alpha != 1.0:
        flops = 2  # self + alpha * other: a multiply-add
    reads = {"zero": 0, "copy": 1}.get(name, lists)
    return Adapted(dict(elements=_list_elements(call), inputs=reads, outputs=1, flops_per_element=flops,
                        dtype=_list_precision(call), name=f"foreach_{name}"))


# ---- the entry points --------------------------------------------------------------------------------------


def _tuple(value: Any) -> tuple[Any, ...]:
    """A trace field as a tuple (anything else as empty)."""
    return tuple(value) if isinstance(value, (tuple, list)) else ()


def map_call(
    op: str,
    shapes: Any,
    dtypes: Any = (),
    concrete: Any = (),
    strides: Any = (),
    backward_context: bool = False,
    *,
    list_elements: Optional[int] = None,
    list_dtype: Optional[str] = None,
) -> Result:
    """The solkit workload of one ATen op call, or why there is none.

    ``shapes``, ``dtypes``, ``concrete`` and ``strides`` are the op's "Input Dims", "Input type",
    "Concrete Inputs" and "Input Strides" (``KernelRecord`` fields). ``backward_context``: the call ran under
    the autograd engine (``Mapped.backward`` is then True, as for a backward ATen name). ``list_elements`` and
    ``list_dtype`` size the tensor lists a trace records without shapes or dtypes (optimizer steps, cat).
    Never raises for odd trace content: an ``Unmapped`` names what was missing.
    """
    if not isinstance(op, str) or not op:
        return Unmapped(f"no ATen op name (got {op!r})")
    try:
        operator, is_backward = by_aten(op)
    except LookupError:
        return Unmapped(f"no solkit operator claims {op}")
    fn = ADAPTERS.get(op)
    if fn is None:
        return Unmapped(f"{op} is claimed by solkit operator {operator.name!r} but has no argument adapter")
    call = Call(op, _tuple(shapes), _tuple(dtypes), _tuple(concrete), _tuple(strides), list_elements, list_dtype)
    try:
        adapted = fn(call)
        workload = _build(operator, adapted.kwargs, is_backward)
        if adapted.adjust is not None:
            workload = adapted.adjust(workload)
    except _Missing as missing:
        return Unmapped(f"{op}: {missing}")
    except Exception as exc:  # noqa: BLE001 - odd trace content must not stop a profile; the reason says what
        return Unmapped(f"{op}: cannot build {operator.name} from its inputs ({type(exc).__name__}: {exc})")
    return Mapped(operator.name, dict(adapted.kwargs), workload, is_backward or bool(backward_context),
                  tuple(call.notes))


def _build(operator: Operator, kwargs: dict[str, Any], backward: bool) -> Workload:
    """The operator's workload for these arguments, or its gradient's."""
    forward = operator.function(**kwargs)
    if not backward:
        return forward
    assert forward.call is not None  # noqa: S101 - the registry records every call
    return operator.gradient(forward.call)


def map_records(records: Iterable[Any]) -> list[Result]:
    """``map_call`` of each record (``KernelRecord``-like: op, shapes, dtypes, concrete, strides, backward, name),
    identical calls mapped once (a local cache); a cat's list dtype is read from its kernel's name."""
    cache: dict[tuple[Any, ...], Result] = {}
    out: list[Result] = []
    for r in records:
        dtypes = r.dtypes
        hint = list_dtype_of_kernel(r.name) if "TensorList" in dtypes else None
        key = (r.op, r.shapes, dtypes, r.concrete, r.strides, r.backward, hint)
        result = cache.get(key)
        if result is None:
            result = cache[key] = map_call(r.op, r.shapes, dtypes, r.concrete, r.strides, r.backward, list_dtype=hint)
        out.append(result)
    return out

