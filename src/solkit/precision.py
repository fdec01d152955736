"""Precision names, their aliases and storage bytes.

Canonical names: fp64, fp32, tf32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, int32, fp4, int4.
Storage bytes: fp64 8, fp32 and tf32 4, bf16 and fp16 2, fp8 and int8 1, int32 4, fp4 and int4 0.5.
The rate class of a precision is the key its peak is listed under in a spec: both fp8
formats share the ``fp8`` rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validate import checked_call, did_you_mean, shown
from .errors import ArgumentTypeError, UnknownPrecisionError

__all__ = [
    "PRECISIONS",
    "RATE_CLASSES",
    "normalize",
    "storage_bytes",
    "rate_class",
    "default_out_precision",
    "DEFAULT_OUT",
]

#: canonical precision -> storage bytes per element
PRECISIONS: dict[str, float] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "int8": 1.0,
    "int32": 4.0,
    "fp4": 0.5,
    "int4": 0.5,  # storage only (weight-only quantization, W4A16): no matrix-unit rate of its own
}

#: the peak-rate keys a spec file may list
RATE_CLASSES: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

_ALIASES: dict[str, str] = {
    "float64": "fp64",
    "double": "fp64",
    "f64": "fp64",
    "float32": "fp32",
    "float": "fp32",
    "f32": "fp32",
    "tensorfloat32": "tf32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "fp8": "fp8_e4m3",
    "e4m3": "fp8_e4m3",
    "fp8e4m3": "fp8_e4m3",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e4m3": "fp8_e4m3",
    "e5m2": "fp8_e5m2",
    "fp8e5m2": "fp8_e5m2",
    "float8_e5m2": "fp8_e5m2",
    "int8": "int8",
    "i8": "int8",
    "int32": "int32",
    "i32": "int32",
    "i4": "int4",
    "uint4": "int4",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "fp4_e2m1": "fp4",
    "e2m1": "fp4",
}

_RATE_CLASS: dict[str, str | None] = {
    "fp64": "fp64",
    "fp32": "fp32",
    "tf32": "tf32",
    "bf16": "bf16",
    "fp16": "fp16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "int8": "int8",
    "int32": None,
    "fp4": "fp4",
    "int4": None,
}

#: matmul output precision where it differs from the input's
DEFAULT_OUT: dict[str, str] = {"fp8_e4m3": "bf16", "fp8_e5m2": "bf16", "int8": "int32", "fp4": "bf16"}


def normalize(precision: Any, argument: str = "dtype") -> str:
    """Canonical name of a precision given by name, alias, numpy or torch dtype."""
    if type(precision) is str and precision in PRECISIONS:
        return precision
    if not isinstance(precision, str):
        # numpy dtypes and scalar types, torch dtypes: "float16", "torch.bfloat16"
        is_dtype = type(precision).__name__ in ("dtype",) or type(precision).__module__.startswith("numpy") or (
            isinstance(precision, type) and issubclass(precision, np.generic))
        if not is_dtype:
            raise ArgumentTypeError(
                f"{argument} must be a precision name such as 'bf16' (or a numpy/torch dtype), got {precision!r}"
            )
        text = np.dtype(precision).name if isinstance(precision, type) else str(precision)
        precision = text.rsplit(".", 1)[-1]
    key = precision.strip().lower().replace("-", "_")
    for prefix in ("torch.", "numpy.", "np."):
        key = key.removeprefix(prefix)
    if key in PRECISIONS:
        return key
    if key in _ALIASES:
        return _ALIASES[key]
    known = ", ".join(sorted(PRECISIONS))
    raise UnknownPrecisionError(f"{argument} must be one of {known} (or an alias such as 'bfloat16', 'fp8'), got "
                                f"{shown(precision)}{did_you_mean(key, [*PRECISIONS, *_ALIASES])}")


@checked_call
def storage_bytes(precision: Any, argument: str = "dtype") -> float:
    """Bytes one element occupies in memory."""
    return PRECISIONS[normalize(precision, argument)]


def rate_class(precision: Any, argument: str = "dtype") -> str:
    """The key under which a spec lists the peak rate of this precision."""
    name = normalize(precision, argument)
    cls = _RATE_CLASS[name]
    if cls is None:
        raise UnknownPrecisionError(f"{argument}={name!r} is a storage format only; it has no arithmetic peak")
    return cls


def default_out_precision(precision: Any, argument: str = "dtype") -> str:
    """Matmul output precision: the input's, except fp8 -> bf16, int8 -> int32, fp4 -> bf16."""
    name = normalize(precision, argument)
    return DEFAULT_OUT.get(name, name)
