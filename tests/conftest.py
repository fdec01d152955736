"""Shared fixtures."""

from __future__ import annotations

import os

import pytest

import solkit as sk


@pytest.fixture(autouse=os.environ.get("MUTANT_UNDER_TEST") is not None)
def _fresh_derivations():
    """Under mutation testing (benchmarks/mutation.py), every test derives peaks and calibrations afresh (no cache)."""
    sk.hardware.clear_cache()


@pytest.fixture(scope="session")
def h200() -> sk.GPU:
    """The H200 SXM spec (datasheet: 989.4 TFLOP/s dense bf16, 4.8 TB/s)."""
    return sk.load_gpu("h200")
