"""Capture: any PyTorch program as a solkit Workload, run on fake tensors (no GPU, no weights, nothing allocated).

``capture(fn, *args, **kwargs)`` runs ``fn`` once on fake tensors under CUDA's semantics and maps every ATen call it
makes through the registry's ATen adapters (``solkit.ops.aten``, the table profiles read), as eager PyTorch launches
them; repeated layers are held once; what no operator models stays as an unmodeled kernel, counted in the
coverage. The result's ``recipe`` (``CapturedProgram``) says what ``predict`` needs (eager, training, layers,
preamble, params) and carries the coverage, the memory peak (``CaptureMemory``) and the syncs. ``hf_model(config)``
builds a Hugging Face model from its config on the meta device and captures its programs, with the methods of
``models.Transformer``.

torch (and transformers for configs) are optional and imported on first use; ``import solkit.capture`` imports
neither. The module itself is callable: ``solkit.capture(fn, ...)`` is ``solkit.capture.capture(fn, ...)``, so a
package attribute ``solkit.capture`` works whether it names this module or the function.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from .._dir import public_dir
from ..errors import CaptureError

if TYPE_CHECKING:  # the real names, for type checkers (at run time they load on first use: torch is imported then)
    from .hf import CapturedModel, hf_model
    from .program import SOURCE, CaptureMemory, CapturedProgram, Coverage
    from .record import setup
    from .run import SYNCS, calls, capture, capture_call

#: loaded on first use: name -> its module (these import torch)
_LAZY = {"capture": "run", "capture_call": "run", "calls": "run", "SYNCS": "run", "setup": "record", "hf_model": "hf", "CapturedModel": "hf",
         "CapturedProgram": "program", "CaptureMemory": "program", "Coverage": "program", "SOURCE": "program"}

__all__ = ["CaptureError", "CaptureMemory", "CapturedModel", "CapturedProgram", "Coverage", "SOURCE", "SYNCS", "capture", "setup",
           "calls", "capture_call", "hf_model"]


if not TYPE_CHECKING:  # hidden from type checkers, which would take any attribute of a module with a __getattr__
    def __getattr__(name: str) -> Any:
        """The capture functions and result types, imported on first use."""
        if name in _LAZY:
            return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """``__all__`` (lazy names included), the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)


class _CallableModule(types.ModuleType):
    """This package, callable as its ``capture`` function."""

    def __call__(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        from .run import capture

        return capture(fn, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
