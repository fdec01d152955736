"""One entry to the tile models: a kernel's shape arguments, checked, and its predicted seconds per config."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from .._validate import dim, flag, suggest
from ..errors import ArgumentTypeError, ShapeError
from ..precision import default_out_precision, normalize, storage_bytes
from . import attention, matmul, rows
from .limits import Limits, Params

__all__ = ["SHAPES", "shape_names", "shape_of", "predict"]


def _matmul_shape(m: Any, n: Any, k: Any) -> dict[str, Any]:
    return {"m": m, "n": n, "k": k}


def _row_shape(rows: Any, cols: Any) -> dict[str, Any]:
    return {"rows": rows, "cols": cols}


def _attention_shape(batch: Any, heads: Any, seq_q: Any, seq_kv: Any = None, head_dim: Any = 128,
                     causal: Any = False) -> dict[str, Any]:
    return {"batch": batch, "heads": heads, "seq_q": seq_q, "seq_kv": seq_q if seq_kv is None else seq_kv,
            "head_dim": head_dim, "causal": causal}


#: each kernel's shape arguments, as a signature (the defaults are the ones rank() applies)
SHAPES: Mapping[str, Callable[..., dict[str, Any]]] = {
    "triton_matmul": _matmul_shape, "triton_softmax": _row_shape, "triton_layernorm": _row_shape,
    "triton_flash_attention": _attention_shape,
}


def shape_names(kernel: str, given: Iterable[str], also: tuple[str, ...] = ("gpu", "dtype")) -> tuple[str, ...]:
    """The kernel's shape argument names; an unknown one among ``given`` is ``ArgumentTypeError`` with a did-you-mean
    (among the shape's names and the caller's other keywords, ``also``)."""
    names = tuple(inspect.signature(SHAPES[kernel]).parameters)
    for key in given:
        if key not in names:
            near = suggest(key, (*names, *also))
            hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
            raise ArgumentTypeError(f"{kernel} takes the shape {', '.join(names)} (and {', '.join(also)}), got the "
                                    f"keyword {key!r}{hint}")
    return names


def shape_of(kernel: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The kernel's shape from keyword arguments: unknown or missing names are ``ArgumentTypeError`` (with a
    did-you-mean), a dimension that is not one positive integer is ``ShapeError``."""
    build = SHAPES[kernel]
    names = shape_names(kernel, given)
    try:
        inspect.signature(build).bind(**given)
    except TypeError as exc:
        raise ArgumentTypeError(f"{kernel}: {exc}; it takes the shape {', '.join(names)}") from None
    shape = build(**given)
    for key, value in shape.items():
        if key == "causal":
            shape[key] = flag("causal", value)
            continue
        number = dim(key, value)
        if np.ndim(number):
            raise ShapeError(f"{key} must be one positive integer (a ranking is for one shape), got an array of shape "
                             f"{np.shape(number)}")
        shape[key] = number
    return shape


def predict(kernel: str, table: Mapping[str, np.ndarray], shape: Mapping[str, Any], lim: Limits, p: Params,
            dtype: str) -> tuple[dict[str, Any], list[str | None]]:
    """The model's parts (``seconds`` among them) per config, and why each config cannot launch (None: it can)."""
    e = storage_bytes(dtype)
    if kernel == "triton_matmul":
        e_out = storage_bytes(default_out_precision(dtype))
        parts = matmul.model(table, shape["m"], shape["n"], shape["k"], lim, p, e, e_out)
        why = matmul.reasons(table, parts, lim)
    elif kernel == "triton_flash_attention":
        parts = attention.model(table, shape["batch"], shape["heads"], shape["seq_q"], shape["seq_kv"],
                                shape["head_dim"], shape["causal"], lim, p, e)
        why = attention.reasons(table, parts, lim, shape["head_dim"])
    else:
        r, c = shape["rows"], shape["cols"]
        # ops' counts: layernorm (2*T*d + 2*d)*e (x, y, gamma, beta); softmax 2*rows*cols*e
        dram = (2 * r * c + 2 * c) * e if kernel == "triton_layernorm" else 2 * r * c * e
        parts = rows.model(kernel, table, r, c, lim, p, e, dram)
        why = rows.reasons(kernel, table, parts, lim, c)
    parts["seconds"] = np.where([w is None for w in why], parts["seconds"], np.nan)
    parts["dtype"] = normalize(dtype)
    return parts, why
