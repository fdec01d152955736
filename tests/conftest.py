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


def pytest_collection_modifyitems(config, items):
    """Where CI requires capture (SOLKIT_REQUIRE_CAPTURE=1, set by .ci/run after it installs torch and transformers), a
    capture test that would skip for want of them fails instead: CI checks that they ran."""
    if not os.environ.get("SOLKIT_REQUIRE_CAPTURE"):
        return
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:  # pragma: no cover - CI's install step failed
        raise pytest.UsageError(f"SOLKIT_REQUIRE_CAPTURE is set but capture's extras do not import: {exc}") from exc
    captured = [item for item in items if item.nodeid.startswith(("tests/test_capture", "tests/test_captured"))]
    whole_suite = not config.invocation_params.args  # `python -m pytest`, the README's command
    if whole_suite and not captured:  # pragma: no cover - the capture test files were not collected (a module skip)
        raise pytest.UsageError("SOLKIT_REQUIRE_CAPTURE is set but no capture test was collected")
