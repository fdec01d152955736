"""Shared fixtures."""

from __future__ import annotations

import pytest

import solkit as sk


@pytest.fixture(scope="session")
def h200() -> sk.GPU:
    """The H200 SXM spec (datasheet: 989.4 TFLOP/s dense bf16, 4.8 TB/s)."""
    return sk.load_gpu("h200")
