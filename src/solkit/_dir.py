"""``dir()`` of a public module: its ``__all__`` (lazy names included, for completion), its dunders and its submodules
that are loaded (each importable by its name), never the helpers it imports for itself (``np``, ``Any``, ``dataclass``)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["public_dir"]


def public_dir(namespace: Mapping[str, Any], names: Iterable[str]) -> list[str]:
    """The sorted ``names``, the dunders of ``namespace`` and the package's submodules loaded in it (a value whose
    ``__name__`` is the package's name and its own)."""
    package = namespace.get("__name__", "")
    loaded = [n for n, v in namespace.items() if not n.startswith("_") and getattr(v, "__name__", None) == f"{package}.{n}"]
    return sorted({*names, *(n for n in namespace if n.startswith("__")), *loaded})
