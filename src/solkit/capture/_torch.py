"""torch (and transformers), imported on first use: ``import solkit`` never imports them."""

from __future__ import annotations

from types import ModuleType

from ..errors import OptionalDependencyError

__all__ = ["torch", "transformers"]

#: the CPU build that lies on local disk on the project's machines (a bare ``torch`` downloads a CUDA build)
INSTALL = "pip install torch==2.13.0"


def torch() -> ModuleType:
    """The torch module, or an OptionalDependencyError naming the install."""
    try:
        import torch as module
    except ImportError:
        raise OptionalDependencyError(f"capture needs PyTorch: {INSTALL}") from None
    return module


def transformers() -> ModuleType:
    """The transformers module, or an OptionalDependencyError naming the install."""
    try:
        import transformers as module
    except ImportError:
        raise OptionalDependencyError("capturing a Hugging Face config needs transformers: pip install transformers") from None
    return module
