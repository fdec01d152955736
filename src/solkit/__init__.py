"""solkit: speed-of-light (SOL) and MFU performance modeling of GPU operators."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._dir import public_dir
from . import comm, errors, ops

if TYPE_CHECKING:  # to a type checker ``sk.capture`` is the function (the package is callable as it at run time)
    from .capture.run import capture as capture
else:
    from . import capture
if TYPE_CHECKING:  # the names loaded on first use (``_LAZY``, ``_SUBMODULES``), as a type checker sees them
    from . import models as models
    from . import planning as planning
    from . import plot as plot
    from .hardware.schema import GPU as GPU
    from .hardware.system import System as System
    from .hardware.system import list_systems as list_systems
    from .hardware.system import load_system as load_system
    from .profile import Profile as Profile
    from .profile import host_probe as host_probe
    from .profile import load_profile as load_profile
    from .profile import measure as measure
from .errors import SolkitError
from .fusion import Comparison, compare
from .hardware import clear_cache, list_gpus, load_gpu
from .precision import storage_bytes
from .prediction import Prediction, predict
from .report import sweep
from .sol import Roofline, achieved_bandwidth, achieved_flops, hfu, mfu, roofline, sol_fraction
from .workload import Kernel, Workload, chain

__version__ = "0.3.0"


#: imported on first use: the pydantic schema (GPUs and systems), and the profile readers (json, csv, gzip, decimal)
_LAZY = {"GPU": "hardware.schema", "load_profile": "profile", "measure": "profile", "host_probe": "profile", "Profile": "profile",
         "load_system": "hardware.system", "list_systems": "hardware.system", "System": "hardware.system"}

#: submodules imported on first use (``sk.models``, ``sk.plot``, ``sk.planning``): a roofline or a prediction needs none
_SUBMODULES = ("models", "planning", "plot")


if not TYPE_CHECKING:  # hidden from type checkers, which would take any attribute of a module with a __getattr__
    def __getattr__(name: str) -> Any:
        """``GPU``, the systems, ``load_profile``, ``measure``, ``host_probe``, ``Profile`` and ``_SUBMODULES`` are imported
        on first use."""
        if name in _LAZY:
            import importlib

            return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        if name in _SUBMODULES:
            import importlib

            return importlib.import_module(f".{name}", __name__)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """``__all__`` (lazy names included), the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)


__all__ = [
    "GPU",
    "Kernel",
    "Roofline",
    "SolkitError",
    "System",
    "Workload",
    "achieved_bandwidth",
    "achieved_flops",
    "capture",
    "chain",
    "clear_cache",
    "comm",
    "compare",
    "Comparison",
    "errors",
    "hfu",
    "host_probe",
    "list_gpus",
    "list_systems",
    "load_gpu",
    "load_profile",
    "load_system",
    "measure",
    "mfu",
    "models",
    "ops",
    "planning",
    "plot",
    "predict",
    "Prediction",
    "Profile",
    "roofline",
    "sol_fraction",
    "storage_bytes",
    "sweep",
]
