"""A torch call's arguments in the form a torch.profiler trace records them, so ``solkit.ops.aten.map_call`` reads a
captured call exactly as it reads a profiled one.

Per schema argument (positional, then keyword-only, defaults filled in as the profiler records them): a tensor is its
dims, its dtype's C++ name ("c10::BFloat16", "float", "long int"), its strides and "" as concrete value; a number or
bool is type "Scalar" with its text as the profiler prints it ("1", "0.10000000000000001", "1.", "True"); a dtype, layout or memory format its enum number as a
"Scalar"; an int or bool list is a "ScalarList" ("[1, 1]"); a tensor list a "TensorList" with each tensor's dims and
strides; None, a device and a string are empty (the profiler records none of them).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from ..ops.aten import SCALAR_TYPES

__all__ = ["TraceArgs", "encode", "cpp_dtype", "DTYPE_NAMES", "SCALAR_NUMBERS"]

#: torch dtype -> the C++ name a trace's "Input type" gives it
DTYPE_NAMES: dict[Any, str] = {
    torch.bfloat16: "c10::BFloat16", torch.float16: "c10::Half", torch.float32: "float", torch.float64: "double",
    torch.int64: "long int", torch.int32: "int", torch.int16: "short int", torch.int8: "signed char",
    torch.uint8: "unsigned char", torch.bool: "bool", torch.float8_e4m3fn: "c10::Float8_e4m3fn",
    torch.float8_e5m2: "c10::Float8_e5m2", torch.float8_e4m3fnuz: "c10::Float8_e4m3fnuz",
    torch.float8_e5m2fnuz: "c10::Float8_e5m2fnuz", torch.complex64: "c10::complex<float>",
    torch.complex128: "c10::complex<double>",
}
#: C++ dtype name -> c10::ScalarType number (a dtype argument's concrete text)
#: a C++ dtype name -> its c10::ScalarType number (what a trace's "Concrete Inputs" records for a dtype)
SCALAR_NUMBERS = {name: number for number, name in SCALAR_TYPES.items()}
_LAYOUTS = {torch.strided: 0, torch.sparse_coo: 1}
_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1, torch.channels_last: 2, torch.channels_last_3d: 3}
_EMPTY = ((), "", "", ())  # dims, type, concrete, strides of an absent or unrecorded argument


class TraceArgs(NamedTuple):
    """One call's "Input Dims", "Input type", "Concrete Inputs" and "Input Strides", as tuples."""

    shapes: tuple[Any, ...]
    dtypes: tuple[str, ...]
    concrete: tuple[str, ...]
    strides: tuple[Any, ...]


def cpp_dtype(dtype: Any) -> str:
    """The C++ name of a torch dtype ("torch.bfloat16" -> "c10::BFloat16"; unknown ones by their torch name)."""
    return DTYPE_NAMES.get(dtype, str(dtype))


def _number(x: float) -> str:
    """A float as the profiler writes it: 17 significant digits, a point kept on a whole number ("1.", "0.1000...1")."""
    text = "%.17g" % x
    return text if any(c in text for c in ".enia") else text + "."


def _one(value: Any) -> tuple[Any, str, str, Any]:
    """(dims, type, concrete, strides) of one argument."""
    if isinstance(value, torch.Tensor):
        return tuple(value.shape), cpp_dtype(value.dtype), "", tuple(value.stride())
    if value is None or isinstance(value, (str, torch.device)):
        return _EMPTY
    if isinstance(value, bool):
        return (), "Scalar", str(value), ()
    if isinstance(value, (int, float, torch.SymInt, torch.SymFloat)):
        return (), "Scalar", _number(value) if isinstance(value, float) else str(value), ()
    if isinstance(value, torch.dtype):
        return (), "Scalar", str(SCALAR_NUMBERS.get(cpp_dtype(value), -1)), ()
    if isinstance(value, torch.layout):
        return (), "Scalar", str(_LAYOUTS.get(value, 0)), ()
    if isinstance(value, torch.memory_format):
        return (), "Scalar", str(_FORMATS.get(value, 0)), ()
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, torch.Tensor) for v in value):
            return (tuple(tuple(v.shape) for v in value), "TensorList", "",
                    tuple(tuple(v.stride()) for v in value))
        if any(isinstance(v, torch.Tensor) for v in value):  # an optional-tensor list (index's indices)
            return (tuple(tuple(v.shape) if isinstance(v, torch.Tensor) else None for v in value), "GenericList", "",
                    tuple(tuple(v.stride()) if isinstance(v, torch.Tensor) else None for v in value))
        return (), "ScalarList", "[" + ", ".join(str(v) for v in value) + "]", ()
    return _EMPTY


def encode(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TraceArgs:
    """The trace form of an OpOverload call: every schema argument in order, defaults filled in."""
    shapes, dtypes, concrete, strides = [], [], [], []
    for i, arg in enumerate(func._schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            value = args[i]
        elif arg.name in kwargs:
            value = kwargs[arg.name]
        elif arg.has_default_value():
            value = arg.default_value
        else:
            value = None
        d, t, c, s = _one(value)
        shapes.append(d)
        dtypes.append(t)
        concrete.append(c)
        strides.append(s)
    return TraceArgs(tuple(shapes), tuple(dtypes), tuple(concrete), tuple(strides))
