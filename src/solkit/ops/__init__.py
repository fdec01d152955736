"""Operator cost models: each function maps shapes (ints or numpy arrays) to a ``Workload``."""

from __future__ import annotations

from .matmul import matmul

__all__ = ["matmul"]
