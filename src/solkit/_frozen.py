"""Pickling of solkit's immutable slotted results (``Workload``, ``Roofline``, ``Prediction``): their slots as state,
set back past their ``__setattr__``, which refuses every assignment."""

from __future__ import annotations

from typing import Any

__all__ = ["slots_state", "restored"]


def slots_state(obj: Any, **replaced: Any) -> dict[str, Any]:
    """Every slot of ``obj`` that holds a value (``replaced``: others in place of some)."""
    return {name: replaced.get(name, getattr(obj, name)) for name in type(obj).__slots__ if hasattr(obj, name)}


def restored(cls: type, state: dict[str, Any]) -> Any:
    """A ``cls`` with ``state`` in its slots, made without its ``__init__`` (what ``slots_state`` took)."""
    obj: Any = object.__new__(cls)
    for name, value in state.items():
        object.__setattr__(obj, name, value)
    return obj
