"""solkit: speed-of-light (SOL) and MFU performance modeling of GPU operators."""

from __future__ import annotations

from . import errors, models, ops, plot
from .errors import SolkitError
from .fusion import Comparison, compare
from .hardware import clear_cache, list_gpus, load_gpu
from .precision import storage_bytes
from .prediction import Prediction, predict
from .report import sweep
from .sol import Roofline, achieved_bandwidth, achieved_flops, hfu, mfu, roofline, sol_fraction
from .workload import Kernel, Workload, chain

__version__ = "0.1.0"


def __getattr__(name: str):
    """``GPU`` (the pydantic schema) is imported on first use."""
    if name == "GPU":
        from .hardware.schema import GPU

        return GPU
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "GPU",
    "Kernel",
    "Roofline",
    "SolkitError",
    "Workload",
    "achieved_bandwidth",
    "achieved_flops",
    "chain",
    "clear_cache",
    "compare",
    "Comparison",
    "errors",
    "hfu",
    "list_gpus",
    "load_gpu",
    "mfu",
    "models",
    "ops",
    "plot",
    "predict",
    "Prediction",
    "roofline",
    "sol_fraction",
    "storage_bytes",
    "sweep",
]
