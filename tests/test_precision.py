"""Precision names, aliases and storage bytes."""

from __future__ import annotations

import pytest

from solkit.errors import UnknownPrecisionError
from solkit.precision import default_out_precision, normalize, rate_class, storage_bytes


@pytest.mark.parametrize(
    "name, nbytes",
    [("fp64", 8), ("fp32", 4), ("tf32", 4), ("bf16", 2), ("fp16", 2), ("fp8_e4m3", 1), ("fp8_e5m2", 1), ("int8", 1), ("fp4", 0.5)],
)
def test_storage_bytes(name, nbytes):
    """DESIGN.md storage bytes."""
    assert storage_bytes(name) == nbytes


@pytest.mark.parametrize(
    "alias, canonical",
    [("bfloat16", "bf16"), ("BF16", "bf16"), ("half", "fp16"), ("float32", "fp32"), ("fp8", "fp8_e4m3"),
     ("e5m2", "fp8_e5m2"), ("float8_e4m3fn", "fp8_e4m3"), ("torch.bfloat16", "bf16"), ("double", "fp64")],
)
def test_aliases(alias, canonical):
    """Common spellings map to the canonical name."""
    assert normalize(alias) == canonical


def test_numpy_dtype_is_accepted():
    """numpy dtypes name their precision."""
    import numpy as np

    assert normalize(np.dtype("float16")) == "fp16"


def test_out_precision_rules():
    """fp8 -> bf16, int8 -> int32, otherwise unchanged."""
    assert default_out_precision("fp8") == "bf16"
    assert default_out_precision("int8") == "int32"
    assert default_out_precision("tf32") == "tf32"


def test_rate_class_and_errors():
    """Both fp8 formats share the fp8 rate; unknown names are errors naming the argument."""
    assert rate_class("e5m2") == rate_class("e4m3") == "fp8"
    with pytest.raises(UnknownPrecisionError, match="dtype must be one of .* got 'fp12'"):
        normalize("fp12")
    with pytest.raises(UnknownPrecisionError, match="storage format only"):
        rate_class("int32")
    with pytest.raises(ValueError):
        storage_bytes("float128")
