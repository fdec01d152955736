"""GPU specs: the schema of ``hardware_specs/*.yaml``, the loader, and consistency checks.

``load_gpu`` and ``list_gpus`` are cheap to import; the pydantic schema (``GPU`` and the
models of its sections) is imported on first use, so ``import solkit`` stays light.
"""

from __future__ import annotations

from typing import Any

from .._dir import public_dir
from .loader import (
    MAX_SPEC_BYTES,
    MAX_SPEC_NODES,
    SPEC_PATH_ENV,
    SpecFolderWarning,
    as_gpu,
    clear_cache,
    list_gpus,
    load_gpu,
    load_spec_file,
    shipped_dir,
    spec_dirs,
)

__all__ = [
    "GPU", "Peak", "Memory", "Chip", "Interconnect", "Source", "Measured", "Calibration", "PARAMETERS", "Parameter",
    "load_gpu", "list_gpus", "as_gpu", "load_spec_file", "spec_dirs", "shipped_dir", "clear_cache", "SPEC_PATH_ENV",
    "consistency_issues", "SpecFolderWarning", "MAX_SPEC_BYTES", "MAX_SPEC_NODES", "RANGES", "PEAK_RANGES",
]

from .parameters import PARAMETERS, Calibration, Parameter

_SCHEMA_NAMES = frozenset(["GPU", "Peak", "Memory", "Chip", "Interconnect", "Source", "Measured"])


def __getattr__(name: str) -> Any:
    """The schema's names, imported on first use."""
    if name in _SCHEMA_NAMES:
        from . import schema

        return getattr(schema, name)
    if name in ("RANGES", "PEAK_RANGES"):
        from . import plausibility

        return getattr(plausibility, name)
    if name == "consistency_issues":
        from .consistency import consistency_issues

        return consistency_issues
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """``__all__`` (lazy names included), the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
