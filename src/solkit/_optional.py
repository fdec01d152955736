"""The optional dependencies (pandas, matplotlib, torch), imported on first use with an install hint if absent."""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import OptionalDependencyError, PlotDependencyError

__all__ = ["require_pandas", "require_matplotlib", "require_torch", "require_transformers", "PLOT_INSTALL_HINT"]

#: how to install what ``solkit.plot`` needs
PLOT_INSTALL_HINT = "pip install 'solkit[plot]'"


def require_pandas(what: str = "to_frame()") -> ModuleType:
    """pandas, or an ``OptionalDependencyError`` saying that ``what`` needs it and how to install it."""
    try:
        return importlib.import_module("pandas")
    except ImportError as exc:  # pragma: no cover - exercised only without pandas
        raise OptionalDependencyError(f"{what} needs pandas: pip install 'solkit[pandas]'") from exc


def require_matplotlib() -> ModuleType:
    """matplotlib (with its Figure class loaded), or ``PlotDependencyError`` with the install hint."""
    try:
        module = importlib.import_module("matplotlib")
        importlib.import_module("matplotlib.figure")
    except ImportError as exc:
        raise PlotDependencyError(
            f"solkit.plot needs matplotlib, which is not installed ({exc}); install it with: {PLOT_INSTALL_HINT}"
        ) from exc
    return module


def require_transformers(what: str = "capturing a Hugging Face config") -> ModuleType:
    """transformers, or an ``OptionalDependencyError`` saying that ``what`` needs it and how to install it."""
    try:
        return importlib.import_module("transformers")
    except ImportError as exc:
        raise OptionalDependencyError(f"{what} needs transformers: pip install 'solkit[capture]'") from exc


def require_torch(what: str = "solkit.measure") -> ModuleType:
    """torch, or an ``OptionalDependencyError`` saying that ``what`` needs PyTorch and how to install it (capture runs
    on the CPU: its extra, and a CPU build of torch, suffice; measuring needs a CUDA build)."""
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        hint = ("pip install 'solkit[capture]' (torch and transformers; a CPU build of torch is enough)"
                if what == "capture" else "pip install 'solkit[torch]' (or a CUDA build of torch)")
        raise OptionalDependencyError(f"{what} needs PyTorch: {hint}") from exc
