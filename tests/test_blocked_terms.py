"""A large plain GEMM sweep's terms and body a block at a time (``prediction.kernel.terms_and_body``) are the whole
sweep's, bit for bit: its body, every field of its terms (``whole_terms``), and ``predict``'s seconds and rows."""

from __future__ import annotations


import numpy as np
import pytest

import solkit as sk
from solkit import ops
from solkit.prediction import calibration
from solkit.prediction import kernel as pk
from test_neighbours_speed_equivalence import _edge_shapes  # the same edge-sized shapes

#: elements of each sweep: a ragged last block of BLOCK
SIZE, BLOCK = 10_007, 1_000


def _sizes(seed: int, size: int = SIZE) -> list[np.ndarray]:
    """m, n, k of ``size`` random shapes (each uniform in 1..65535), with edge sizes among them: 1, 2, the largest, and
    sizes either side of a 1/STEP-octave cell boundary (the neighbour search's test shapes)."""
    return _edge_shapes(np.random.default_rng(seed), size)


def _same(a, b) -> bool:
    """Equal bit for bit, and of the same kind (a Python scalar stays one, an array one)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and a.shape == b.shape and np.array_equal(a, b)
    return type(a) is type(b) and a == b


SWEEPS = {
    "bf16": lambda m, n, k: ops.matmul(m, n, k),
    "fp32": lambda m, n, k: ops.matmul(m, n, k, dtype="fp32"),
    "fp8 batched": lambda m, n, k: ops.matmul(m % 4096 + 1, n % 4096 + 1, k, dtype="fp8", batch=3),
    "fp16 small": lambda m, n, k: ops.matmul(m % 300 + 1, n % 200 + 1, k % 500 + 1, dtype="fp16"),
    "2-D": lambda m, n, k: ops.matmul(m.reshape(-1, 1)[:3000].reshape(60, 50), n[:3000].reshape(60, 50),
                                      k[:3000].reshape(60, 50)),
}


@pytest.mark.parametrize("gpu_name", ["h200", "h100"])
@pytest.mark.parametrize("sweep", list(SWEEPS))
def test_blocked_terms_and_body_are_the_whole_sweeps(monkeypatch, gpu_name, sweep):
    """Blocks of 1,000 (the last ragged): the body and each field of the terms (the HEAVY ones by ``whole_terms``) are
    those of ``kernel_terms`` and ``kernel_seconds`` over the whole sweep, with and without the neighbour bank."""
    monkeypatch.setattr(pk, "TERMS_BLOCK", 1 if sweep == "2-D" else BLOCK)  # (the 2-D sweep: 3,000 blocks of 1)
    gpu = sk.load_gpu(gpu_name)
    kernel = SWEEPS[sweep](*_sizes(31)).kernels[0]
    assert pk._blockable(kernel) is not None
    for cal in (calibration(gpu), pk.physical(calibration(gpu))):
        terms, body = pk.terms_and_body(kernel, gpu, cal)
        want = pk.kernel_terms(kernel, gpu, cal)
        assert _same(body, pk.kernel_seconds(want, cal)[0])
        assert all(getattr(terms, name) is None for name in pk.HEAVY)
        # the blocked terms' own flags, launches, presence and variants (what predict reads before its rows)
        for name in pk.KernelTerms._fields:
            if name not in pk.HEAVY and name != "variants":
                assert _same(getattr(terms, name), getattr(want, name)), name
        assert [n for n, _ in terms.variants] == [n for n, _ in want.variants]
        assert all(_same(a, b) for (_, a), (_, b) in zip(terms.variants, want.variants))
        full = pk.whole_terms(terms, kernel, gpu, cal)
        for name in pk.KernelTerms._fields:
            if name != "variants":
                assert _same(getattr(full, name), getattr(want, name)), name
        assert [n for n, _ in full.variants] == [n for n, _ in want.variants]
        assert all(_same(a, b) for (_, a), (_, b) in zip(full.variants, want.variants))


def test_predict_of_a_blocked_sweep_is_the_whole_sweeps(monkeypatch):
    """``predict`` of a sweep taken in blocks gives the seconds, notes and per-kernel rows of the whole sweep's."""
    gpu = sk.load_gpu("h200")
    w = ops.matmul(*_sizes(7), bias=True)
    monkeypatch.setattr(pk, "TERMS_BLOCK", 1 << 40)  # no sweep blocked
    whole = sk.predict(w, gpu, warn=False)
    monkeypatch.setattr(pk, "TERMS_BLOCK", BLOCK)
    blocked = sk.predict(w, gpu, warn=False)
    assert np.array_equal(blocked.seconds, whole.seconds) and blocked.notes == whole.notes
    fields = ("name", "kind", "count", "seconds", "t_compute", "t_memory", "t_sol", "wave_efficiency", "limiter",
              "misaligned", "neighbour")
    for a, b in zip(blocked.kernels, whole.kernels):
        for name in fields:
            x, y = getattr(a, name), getattr(b, name)
            assert (_same(x, y) if isinstance(x, (np.ndarray, float)) else np.array_equal(x, y)), name


def test_a_block_without_matrix_flops_takes_the_whole_sweep(monkeypatch):
    """A user's GEMM kernel whose matrix FLOPs are 0 throughout its first block (that block takes kernel_terms' branch
    without the GEMM's variants) is predicted as the whole sweep is, not refused."""
    from solkit.workload import Gemm, Kernel, Workload

    gpu = sk.load_gpu("h200")
    m, n, k = _sizes(5)
    flops = 2.0 * m * n * k
    flops[:BLOCK] = 0.0  # the first block: no matrix FLOPs
    kernel = Kernel("g", "gemm", "bf16", matrix_flops=flops, bytes_read=(m * k + k * n) * 2.0,
                    bytes_written=m * n * 2.0, gemm=Gemm(m, n, k), op="matmul")
    w = Workload("user gemm", [kernel])
    monkeypatch.setattr(pk, "TERMS_BLOCK", 1 << 40)  # no sweep blocked
    whole = sk.predict(w, gpu, warn=False)
    monkeypatch.setattr(pk, "TERMS_BLOCK", BLOCK)
    assert pk._blockable(kernel) is not None
    blocked = sk.predict(w, gpu, warn=False)
    assert np.array_equal(blocked.seconds, whole.seconds) and blocked.notes == whole.notes
    assert np.array_equal(blocked.kernels[0].wave_efficiency, whole.kernels[0].wave_efficiency)


def test_only_large_plain_gemm_sweeps_are_blocked():
    """A sweep of more than 2 x TERMS_BLOCK elements is blocked; one shape, a smaller sweep, broadcast figures and a conv
    keep the whole way."""
    m = np.arange(1.0, 2 * pk.TERMS_BLOCK + 2)
    assert pk._blockable(ops.matmul(m, 64, 64).kernels[0]) == m.shape  # (scalar figures beside the sweep's)
    assert pk._blockable(ops.matmul(m, m, m).kernels[0]) == m.shape
    assert pk._blockable(ops.matmul(m[:2 * pk.TERMS_BLOCK], m[:2 * pk.TERMS_BLOCK], 64).kernels[0]) is None
    assert pk._blockable(ops.matmul(4096, 4096, 4096).kernels[0]) is None
    assert pk._blockable(ops.matmul(m[:, None][:600], m[:700], 64).kernels[0]) is None  # broadcast: not one shape
    conv = ops.conv2d(m[:600_000] % 64 + 1, 64, 56, 56, 64, kernel=3, padding=1).kernels[-1]
    assert pk._blockable(conv) is None
