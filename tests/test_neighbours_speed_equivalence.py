"""The neighbour correction's fast paths (memos, bucketed sweeps, per-cell factors) give the very numbers of the plain ones."""

from __future__ import annotations

import copy
import math
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit.prediction import neighbours as nb
from solkit import ops
from solkit.prediction.neighbours import STEP, Neighbours, bank_key, features, variant_key
from solkit.prediction import calibration, kernel_terms, sdpa_backend


@pytest.fixture(scope="module")
def h200():
    """The shipped H200 spec and its bank."""
    gpu = sk.load_gpu("h200")
    return gpu, calibration(gpu).neighbours


def plain(bank: Neighbours, key: str, variants, feats) -> np.ndarray:
    """The correction as it was first written: per variant code, its distinct points in the order it looked them up.

    Points on a small grid for their elements in mixed radix (the first feature fastest), else lexicographically (the
    first feature first), as np.unique does; one point on its own.
    """
    shape = np.broadcast_shapes(*(np.shape(f) for f in feats), *(np.shape(m) for _, m in variants))
    q: list[Any] = [np.broadcast_to(np.rint(np.multiply(f, STEP)).astype(np.int64), shape).ravel() if np.ndim(f)
         else int(round(float(f) * STEP)) for f in feats]
    code = sum(np.broadcast_to(np.asarray(m, dtype=bool), shape).ravel().astype(np.int64) << bit if np.ndim(m)
               else int(bool(m)) << bit for bit, (_, m) in enumerate(variants))
    code = np.broadcast_to(code, (int(np.prod(shape)),))
    out = np.zeros(code.size)
    for c in np.unique(code):
        rows = bank._banks.get(variant_key(key, [name for bit, (name, _) in enumerate(variants) if c >> bit & 1]))
        if rows is None:
            continue
        where = np.flatnonzero(code == c)
        swept = [v[where] for v in q if np.ndim(v)]
        if not swept:
            out[where] = nb._nearest(rows, np.array([q], dtype=np.int64))[0]
            continue
        cells, inverse = np.unique(np.stack(swept), axis=1, return_inverse=True)
        span = cells.max(axis=1) - cells.min(axis=1) + 1
        if np.prod(span.astype(float)) <= min(1 << 24, 4 * where.size + 4096):
            order = np.lexsort(cells)  # the last feature first: mixed radix, the first fastest
            cells, inverse = cells[:, order], np.argsort(order)[inverse.ravel()]
        points = np.empty((cells.shape[1], len(q)), dtype=np.int64)
        for j, v in enumerate(q):
            points[:, j] = cells[[i for i, w in enumerate(q) if np.ndim(w)].index(j)] if np.ndim(v) else v
        out[where] = nb._nearest(rows, points)[inverse.ravel()]
    return out.reshape(shape)


def sweeps() -> list:
    """Workloads swept over one size or a grid of two, over some variants."""
    m = np.arange(1, 200_001, dtype=float)
    grid = np.arange(1, 65, dtype=float)
    return [ops.matmul(m, 4096, 4096), ops.matmul(4096, m[::7], 1000 + m[::7] % 5000, dtype="fp16"),
            ops.matmul(grid[:, None] * 64, grid * 48, 4096, dtype="fp32"), ops.layernorm(m[::3], 4096),
            ops.softmax(8192, m[:40_000]), ops.attention(1, 8, m[:8192:3], 2048, 128, causal=True),
            ops.conv2d(np.arange(1, 33), np.arange(1, 65)[:, None], 56, 56, 64, layout="nchw"),
            ops.copy(m * 1000, dtype="fp32", out_dtype="bf16")]


def test_a_sweep_gives_the_plain_numbers_bit_for_bit(h200):
    """Through of_kernel (sizes bucketed) and through correction (log2 features): the plain per-code lookup's numbers."""
    gpu, bank = h200
    cal = calibration(gpu).replace(neighbours=None)
    checked = 0
    for w in sweeps():
        corrected = sk.predict(w, gpu, warn=False).kernels
        for i, (k, _) in enumerate(w.counted):
            t = kernel_terms(k, gpu, cal)
            op = sdpa_backend(gpu) if k.op == "sdpa_attention" else k.op
            tag, layout, feats = features(k)
            key = bank_key(op, k.kind, k.precision, layout, tag)
            want = plain(bank, key, t.variants, feats)
            fast, slow = bank.of_kernel(op, k, t.variants), bank.correction(key, t.variants, feats)
            assert fast.shape == slow.shape == want.shape
            assert np.array_equal(fast, want) and np.array_equal(slow, want), k.name
            assert np.array_equal(np.broadcast_to(corrected[i].neighbour, want.shape), np.exp(want))  # predict's factor
            checked += int(np.any(want != 0))
    assert checked >= 6


def test_the_grid_and_the_sort_agree(h200, monkeypatch):
    """A sweep counted on a grid and one sorted (np.unique) look the same points up in the same order."""
    _, bank = h200
    key = "matmul|gemm|bf16||gemm"
    rng = np.random.default_rng(7)
    feats = [np.log2(rng.integers(1, 1 << 16, 5000).astype(float)), 12.0, np.log2(rng.integers(1, 1 << 14, 5000)), 0.0]
    variants = [("skinny", feats[0] <= 4.0)]
    on_grid = bank.correction(key, variants, feats)
    monkeypatch.setattr(nb, "_grid", lambda *args: None)
    assert np.array_equal(bank.correction(key, variants, feats), on_grid)
    assert np.array_equal(on_grid, plain(bank, key, variants, feats))


@pytest.mark.parametrize("sizes", [
    np.arange(1, 300_001, dtype=float),
    np.exp(np.random.default_rng(3).uniform(0, 43, 200_000)),
    np.concatenate([np.random.default_rng(4).uniform(-3, 2, 70_000), [-0.0, 0.0, -np.inf, 1.0, 2.0 ** 62]]),
])
def test_buckets_quantize_as_log2_does(sizes):
    """Bucketed sizes quantize as rint(STEP log2 max(x, 1)) does, the sizes a float's rounding from a boundary too."""
    boundaries = 2.0 ** ((2 * np.arange(0, 36 * STEP) + 1) / (2 * STEP))  # where STEP log2 x is a half, to 2^36
    x = np.concatenate([sizes, boundaries, np.nextafter(boundaries, 0), np.nextafter(boundaries, np.inf)])
    assert nb._bucketed(x[:1000]) is None  # more buckets than sizes: log2 one by one
    u, low, span = nb._bucketed(x)
    assert np.array_equal(u + low, np.rint(np.log2(np.maximum(x, 1.0)) * STEP).astype(np.int64))
    assert u.min() >= 0 and u.max() < span


def test_scalars_are_memoized_as_computed(h200):
    """A scalar kernel's correction, first and memoized, is the plain lookup's; so is its predict."""
    gpu, bank = h200
    cal = calibration(gpu).replace(neighbours=None)
    for w in (ops.matmul(4096, 4096, 4096), ops.matmul(17, 4095, 333, dtype="fp16"), ops.layernorm(8192, 4096)):
        k = w.kernels[0]
        t = kernel_terms(k, gpu, cal)
        tag, layout, feats = features(k)
        want = float(plain(bank, bank_key(k.op, k.kind, k.precision, layout, tag), t.variants, feats))
        assert bank.of_kernel(k.op, k, t.variants) == want == bank.of_kernel(k.op, k, t.variants)
        assert sk.predict(w, gpu, warn=False).kernels[0].neighbour == pytest.approx(math.exp(want), rel=1e-15)


def test_a_sweeps_note_and_factor_come_from_its_correction(h200):
    """The note of a sweep reads its range; predict's factor is exp of the correction, element by element."""
    gpu, bank = h200
    m = np.arange(1, 100_001, dtype=float)
    t = kernel_terms(ops.matmul(m, 4096, 4096).kernels[0], gpu, calibration(gpu))
    low, high = float(np.exp(np.min(t.neighbour))), float(np.exp(np.max(t.neighbour)))
    assert low < 1.0 < high
    p = sk.predict(ops.matmul(m, 4096, 4096), gpu)
    assert any(f"matmul x{low:.2f}-{high:.2f} (" in n for n in p.notes) and bank.moves(t.neighbour)
    assert np.array_equal(p.kernels[0].neighbour, np.exp(t.neighbour))
    assert np.array_equal(sk.predict(ops.matmul(m, 4096, 4096), gpu).kernels[0].neighbour, np.exp(t.neighbour))  # memo


def test_a_bank_pickles_and_copies_without_its_memos(h200):
    """Memos do not travel: copies start with empty memos and answer alike."""
    gpu, bank = h200
    t = kernel_terms(ops.matmul(np.arange(1, 1000.0), 64, 64).kernels[0], gpu, calibration(gpu))
    for other in (pickle.loads(pickle.dumps(bank)), copy.deepcopy(bank)):
        assert other == bank and len(other) == len(bank)
        assert np.array_equal(other.correction("matmul|gemm|bf16||gemm", [], [np.log2(np.arange(1, 9.0)), 6, 6, 0]),
                              bank.correction("matmul|gemm|bf16||gemm", [], [np.log2(np.arange(1, 9.0)), 6, 6, 0]))
    assert pickle.loads(pickle.dumps(gpu)) == gpu
    assert t.neighbour.shape == (999,)


@settings(max_examples=40, deadline=None)
@given(columns=st.integers(1, 4), size=st.integers(1, 400), spread=st.sampled_from([3, 1000, 2**20, 2**40]),
       seed=st.integers(0, 2**31 - 1))
def test_packed_unique_equals_numpys_unique_of_rows(columns, size, spread, seed):
    """The neighbour lookup's distinct cells, found by packing each cell's columns into one integer, are numpy's own
    np.unique(axis=1) of the rows: the same rows in the same order, counts and inverse (an outside oracle); cells that
    do not pack in 62 bits (4 columns of 2^40) take numpy's path itself."""
    from solkit.prediction.neighbours import STEP, _unique

    rng = np.random.default_rng(seed)
    feats = [rng.integers(-spread, spread, size).astype(np.float64) / STEP for _ in range(columns)]
    rows, counts, _, index, cells = _unique(feats, [], (size,))
    stacked = np.stack([np.rint(f * STEP).astype(np.int64) for f in feats])
    want, want_index, want_counts = np.unique(stacked, axis=1, return_inverse=True, return_counts=True)
    assert np.array_equal(rows, want.T) and np.array_equal(counts, want_counts)
    assert np.array_equal(index.ravel(), want_index.ravel()) and cells == len(want_counts)
