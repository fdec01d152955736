"""``dir()`` of a public module: its ``__all__`` (lazy names included, for completion), its dunders and the public
submodules it names, never the helpers it imports for itself (``np``, ``Any``, ``dataclass``)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["public_dir"]


def public_dir(namespace: Mapping[str, Any], names: Iterable[str], submodules: Iterable[str] = ()) -> list[str]:
    """The sorted ``names``, the dunders of ``namespace`` and those of ``submodules`` that are loaded in it."""
    loaded = [n for n in submodules if n in namespace]
    return sorted({*names, *(n for n in namespace if n.startswith("__")), *loaded})
