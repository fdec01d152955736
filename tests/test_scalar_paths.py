"""Scalar fast paths (issue 31's speed): each gives what the general path gives, on ordinary and edge shapes."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

import solkit as sk
from solkit import ops
from solkit._validate import unchecked
from solkit.errors import ArgumentTypeError, PerformanceWarning, ShapeError
from solkit.ops.registry import _NO_DEFAULT, REGISTRY
from solkit.prediction import kernel as physics
from solkit.workload import Kernel

matmul_module = importlib.import_module("solkit.ops.matmul")

#: (m, n, k, batch): square, skinny, odd, batched, ones, past float32's integers, near float64's end
SHAPES = [(4096.0, 4096.0, 4096.0, 1.0), (7.0, 4096.0, 11008.0, 1.0), (1000.0, 1001.0, 999.0, 3.0), (1.0, 1.0, 1.0, 1.0),
          (128.0, 64.0, 4096.0, 12.0), (2.0 ** 25 + 1, 3.0, 2.0 ** 24 + 3, 5.0), (1e100, 1e100, 1e100, 1e5)]


@pytest.mark.parametrize("m, n, k, batch", SHAPES)
@pytest.mark.parametrize("dtype, out_dtype, weight_dtype", [("bf16", None, None), ("fp8_e4m3", None, None),
                                                            ("fp32", "bf16", None), ("bf16", None, "int4")])
@pytest.mark.parametrize("bias, epilogue", [(False, "none"), (True, "gelu"), (False, "silu")])
def test_one_gemm_is_the_swept_gemm(m, n, k, batch, dtype, out_dtype, weight_dtype, bias, epilogue):
    """``gemm`` of one shape (plain Python) gives each figure of the same shape swept alone, bit for bit (product's order)."""
    one = matmul_module.gemm("g", m, n, k, dtype, batch, out_dtype, bias, epilogue, weight_dtype)
    swept = matmul_module.gemm("g", np.array([m]), n, k, dtype, batch, out_dtype, bias, epilogue, weight_dtype)
    for field in ("matrix_flops", "vector_flops", "bytes_read", "bytes_written", "model_flops"):
        got, want = getattr(one, field), getattr(swept, field)
        assert type(got) is float and float(np.broadcast_to(want, (1,))[0]) == got, field
    assert one.gemm == (m, n, k, batch, None, None, None, True) and one.op == "matmul"


def test_one_gemm_beyond_float64_is_refused_by_the_kernel():
    """A product past float64 is inf on the one-shape path too: the Kernel refuses it, the operator names its dimensions
    (1e120^3 * 2 FLOPs: inf)."""
    with pytest.raises(ShapeError, match=r"m=1e\+120, n=1e\+120, k=1e\+120, batch=1 is too large: matmul: matrix_flops "
                                         r"must be a finite number >= 0, got inf"):
        ops.matmul(1e120, 1e120, 1e120, bias=True, epilogue="gelu")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_a_checked_default_is_the_check_of_the_default(name):
    """Each operator's defaults are checked once (an argument left at its default takes that): each is its check's
    answer, of the same type, and the signature's own default object."""
    op = REGISTRY[name]
    signature = inspect.signature(op.count).parameters
    for param, check, default, checked in op.validators:
        if default is _NO_DEFAULT:
            continue
        assert default is signature[param].default
        fresh = check(default)
        assert fresh == checked and type(fresh) is type(checked), (name, param)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_defaults_given_or_left_out_build_the_same_call(name):
    """An operator's example with every default spelt out records the same validated arguments as one leaving them out."""
    op = REGISTRY[name]
    spelt = {p: d for p, d in op.defaults.items() if p not in op.example}
    left, given = op.function(**op.example), op.function(**op.example, **spelt)
    assert dict(left.call.args) == dict(given.call.args)
    assert {k: type(v) for k, v in left.call.args.items()} == {k: type(v) for k, v in given.call.args.items()}


@pytest.mark.parametrize("m, n, k", [(4096, 4096, 4096), (8192, 8, 8192), (1, 1, 1), (65535, 17, 3)])
def test_a_scalar_roofline_bound_is_the_sweeps(m, n, k):
    """The bound of one shape (its compute share, computed when first read) is the sweep's bound of that shape."""
    gpu = sk.load_gpu("h200")
    one = sk.roofline(ops.matmul(m, n, k), gpu)
    swept = sk.roofline(ops.matmul(np.array([float(m)]), n, k), gpu)
    assert type(one.t_sol) is float and one.bound == swept.bound[0]
    two = sk.roofline(sk.chain("two", ops.matmul(m, n, k), ops.softmax(m, n)), gpu)
    assert two.bound == sk.roofline(sk.chain("two", ops.matmul(np.array([float(m)]), n, k), ops.softmax(m, n)),
                                    gpu).bound[0]


def test_unchecked_is_the_body_and_the_public_call_still_checks():
    """``unchecked`` gives a checked function's body (a plain function stays itself); the public one still turns a bad
    call into an ArgumentTypeError."""
    assert unchecked(physics.kernel_terms) is physics.kernel_terms.__wrapped__
    assert unchecked(physics.combined) is physics.combined
    with pytest.raises(ArgumentTypeError, match="kernel_terms"):
        physics.kernel_terms(1, 2)


def test_a_scalar_prediction_keeps_its_notes_in_order():
    """The one-pass glue keeps the notes' order: the neighbour correction's, SDPA's backend, then the misaligned GEMM's."""
    gpu = sk.load_gpu("h200")
    w = sk.chain("both", ops.attention(1, 32, 2048, 2048, 128), ops.matmul(4096, 4096, 4095))
    w = sk.chain("three", w, Kernel("sdpa", "attention", "bf16", matrix_flops=1e9, bytes_read=1e6, op="sdpa_attention"))
    with pytest.warns(PerformanceWarning):
        notes = sk.predict(w, gpu).notes
    keys = ("neighbour correction", "impl='sdpa'", "not a multiple")
    order = [i for i, n in enumerate(notes) for key in keys if key in n]
    assert len(order) == 3 and order == sorted(order), notes
    assert [key for i in order for key in keys if key in notes[i]] == list(keys)


def _kernels() -> list:
    """One-shape kernels of every physics branch: GEMMs (skinny, misaligned, fp32, batched), rows, convs (with cuDNN's
    padding helpers, depthwise), attention (causal, decode) and a cast."""
    ws = [ops.matmul(4096, 4096, 4096), ops.matmul(7, 4096, 11008), ops.matmul(1000, 1001, 999),
          ops.matmul(128, 64, 4096, dtype="fp32", batch=12), ops.layernorm(8192, 4096), ops.rmsnorm(3, 4095),
          ops.softmax(64, 100_000), ops.conv2d(32, 64, 56, 56, 64, kernel=3, padding=1),
          ops.conv2d(8, 3, 224, 224, 64, kernel=7, stride=2, padding=3), ops.conv2d(8, 6, 56, 56, 12, kernel=3),
          ops.conv2d(8, 12, 56, 56, 20, kernel=3),
          ops.conv2d(4, 32, 56, 56, 32, kernel=3, groups=32), ops.attention(1, 32, 2048, 2048, 128, causal=True),
          ops.attention(8, 32, 1, 8192, 128, kv_heads=8), ops.attention(2, 8, 512, 512, 64, impl="naive")]
    return [k for w in ws for k, _ in w.counted]


@pytest.mark.parametrize("neighbours", [True, False])
def test_float_seconds_is_kernel_seconds_general_path(monkeypatch, neighbours):
    """``kernel_seconds`` of one shape whose figures are floats (written in place) is its general one-shape path, bit for
    bit, on every physics branch, with and without the neighbour correction."""
    from solkit.prediction.gpu import calibration

    gpu = sk.load_gpu("h200")
    cal = calibration(gpu) if neighbours else calibration(gpu).replace(neighbours=None)
    terms = [physics.kernel_terms(k, gpu, cal) for k in _kernels()]
    assert sum(physics._all_floats(t) for t in terms) >= len(terms) - 2  # the fast path is the one taken
    assert any(t.helper_bytes for t in terms) and any(t.neighbour for t in terms) is neighbours
    fast = [physics.kernel_seconds(t, cal) for t in terms]
    monkeypatch.setattr(physics, "_all_floats", lambda terms: False)
    general = [physics.kernel_seconds(t, cal) for t in terms]
    assert fast == general and all(type(x) is type(y) for f, g in zip(fast, general) for x, y in zip(f, g))


def test_kernel_terms_fills_every_field():
    """kernel_terms builds its KernelTerms with tuple.__new__ (no __new__ frame): every field must be given, so a
    field added later with a default cannot leave the tuple short (a short one would fail only on that field's read)."""
    import solkit as sk
    from solkit.prediction.kernel import KernelTerms, kernel_terms
    from solkit.prediction import calibration
    from solkit.hardware import load_gpu

    gpu = load_gpu("h200")
    cal = calibration(gpu)
    for w in (sk.ops.matmul(4096, 4096, 4096), sk.ops.softmax(8, 4096), sk.ops.conv2d(8, 64, 56, 56, 64, 3)):
        for k in w.kernels:
            terms = kernel_terms(k, gpu, cal)
            assert type(terms) is KernelTerms and len(terms) == len(KernelTerms._fields), k.name
