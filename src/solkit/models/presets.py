"""``preset(name)``: published architectures as ``Transformer`` records, read from the shipped ``presets.yaml``."""

from __future__ import annotations

import functools
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterator, Mapping

from .._validate import checked_call, did_you_mean, shown
from ..errors import ArgumentTypeError, OptionError
from .architecture import Transformer

__all__ = ["preset", "PRESETS", "preset_names"]

_FILE = Path(__file__).with_name("presets.yaml")


@functools.lru_cache(maxsize=1)
def _presets() -> Mapping[str, Transformer]:
    """Every preset, loaded once (the YAML is read on first use, not at import)."""
    import yaml

    raw = yaml.safe_load(_FILE.read_text())
    return MappingProxyType({name: Transformer(name=name, **fields) for name, fields in raw.items()})


class _Presets(Mapping[str, Transformer]):
    """The presets by name (read-only; loaded on first use)."""

    def __getitem__(self, name: str) -> Transformer:
        return _presets()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_presets())

    def __len__(self) -> int:
        return len(_presets())

    def __repr__(self) -> str:
        return f"PRESETS({', '.join(self)})"


#: name -> Transformer, for every shipped preset
PRESETS: Mapping[str, Transformer] = _Presets()


@checked_call
def preset_names() -> tuple[str, ...]:
    """The preset names, in file order."""
    return tuple(_presets())


@checked_call
def preset(name: str, *args: Any, **kwargs: Any) -> Transformer:
    """The published architecture ``name`` (``preset_names()``) as a ``Transformer``; its methods build workloads.

    Changed in 0.2: ``preset`` returns a ``Transformer`` instead of a forward Workload; the old call
    ``preset(name, batch=, seq=)`` is ``preset(name).forward(batch=, seq=)``.
    """
    if args or kwargs:
        given = ", ".join([*(shown(a) for a in args), *(f"{k}={shown(v)}" for k, v in kwargs.items())])
        call = ", ".join(f"{k}={shown(v)}" for k, v in kwargs.items() if k in ("batch", "seq")) or "batch=..., seq=..."
        raise ArgumentTypeError(f"preset(name) takes only the name and returns a Transformer (changed in solkit 0.2), got "
                                f"preset({shown(name)}, {given}); write models.preset({shown(name)}).forward({call}) for "
                                f"the forward pass, or models.preset({shown(name)}).with_(...) to change the architecture")
    if not isinstance(name, str):
        raise ArgumentTypeError(f"preset name must be one of {', '.join(map(repr, preset_names()))}, got {shown(name)}")
    key = name.strip().lower()
    if key not in _presets():
        raise OptionError(f"preset name must be one of {', '.join(map(repr, preset_names()))}, got {shown(name)}"
                          f"{did_you_mean(name, preset_names())}")
    return _presets()[key]
