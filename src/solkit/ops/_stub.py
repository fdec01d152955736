"""The type stub of ``solkit.ops`` (``ops/__init__.pyi``), generated from the registry: every operator's real signature.

The public op functions are built at registration (``registry._public_function``), so a type checker sees only
``Callable[..., Workload]``; the stub gives each its parameters, typed from its ``Param`` kinds (a dimension ``Dim``,
a pair ``Pair``, a precision ``DType``, a flag ``bool``, an option the ``Literal`` of its choices, text ``str``,
lengths ``Lengths``; an
optional one also takes None). ``python -m solkit.ops._stub`` rewrites the file; tests/test_typing.py regenerates it
and compares, so it cannot drift from the registry.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

from .registry import REGISTRY, Operator, Param

__all__ = ["render", "PATH"]

#: where the stub lies: beside the package's ``__init__.py``
PATH = Path(__file__).with_name("__init__.pyi")

_HEADER = '''\
# Generated from the operator registry by ``python -m solkit.ops._stub``: do not edit (tests/test_typing.py checks it).
"""Operator cost models: each registered operator maps shapes (ints or numpy arrays) to a ``Workload``."""

from typing import Literal

from .._typing import DType, Dim, Lengths, Pair
from ..workload import Workload
from .attention import attention_pairs as attention_pairs
from .conv import conv_output_size as conv_output_size
from .projection import qkv_widths as qkv_widths
from .registry import REGISTRY as REGISTRY
from .registry import Operator as Operator
from .registry import by_aten as by_aten
from .registry import calibration_keys as calibration_keys
from .registry import get as get

OPERATORS: tuple[str, ...]
HELPERS: tuple[str, ...]
'''

#: the annotation of each parameter kind
_TYPES = {"dim": "Dim", "pair": "Pair", "dtype": "DType", "flag": "bool", "text": "str", "lengths": "Lengths"}


def _annotation(p: Param) -> str:
    """The type of one parameter, as stub text."""
    text = f"Literal[{', '.join(map(repr, p.choices))}]" if p.kind == "option" else _TYPES[p.kind]
    return f"{text} | None" if p.optional else text


def _default(value: Any) -> str:
    """A default as stub text: a plain literal as itself, anything else as ``...``."""
    return repr(value) if value is None or type(value) in (bool, int, float, str) else "..."


def _function(op: Operator) -> str:
    """One operator's typed signature, with its summary as the docstring."""
    params = {p.name: p for p in op.params}
    parts = []
    for q in inspect.signature(op.count).parameters.values():
        default = "" if q.default is q.empty else f" = {_default(q.default)}"
        parts.append(f"    {q.name}: {_annotation(params[q.name])}{default},")
    summary = op.summary.replace("\\", "\\\\").replace('"""', "'''")
    return f"def {op.name}(\n" + "\n".join(parts) + f'\n) -> Workload:\n    """{summary}"""\n'


def render() -> str:
    """The stub's text: the fixed re-exports, then every registered operator in registration order, then ``__all__``."""
    names = ["OPERATORS", "HELPERS", "REGISTRY", "Operator", "get", "by_aten", "calibration_keys", *REGISTRY,
             "attention_pairs", "conv_output_size", "qkv_widths"]
    functions = "\n\n".join(_function(op) for op in REGISTRY.values())
    listed = "".join(f"    {name!r},\n" for name in names)
    return f"{_HEADER}\n\n{functions}\n\n__all__ = [\n{listed}]\n"


if __name__ == "__main__":  # pragma: no cover (run by hand after registering an operator)
    PATH.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {PATH}\n")
