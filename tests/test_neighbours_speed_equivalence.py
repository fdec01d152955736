"""The neighbour correction's fast paths (memos, bucketed sweeps, the lattice search) give the brute force's neighbours
exactly and its numbers within TOLERANCE; a point's number is bit for bit the same alone or in any sweep."""

from __future__ import annotations

import copy
import math
import pickle

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


#: how far (in c, the log factor: relative in the predicted time) the lattice search may sit from the brute force;
#: the neighbours and distances are the same exactly, only the two sums run in another order (a few ulp of c)
TOLERANCE = 1e-13


def brute(bank: tuple[np.ndarray, np.ndarray], q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The correction as first written (every distance in float octaves, numpy's partition, BLAS's sums): (c, the
    neighbours as a boolean matrix, queries x banked kernels). An outside reference for the lattice search."""
    points, residuals = bank
    x = points.astype(float) / STEP
    a = q.astype(float) / STEP
    total = np.square(a[:, :1] - x[:, 0])
    for j in range(1, a.shape[1]):
        total += np.square(a[:, j:j + 1] - x[:, j])
    d = np.sqrt(total)
    k = min(nb.K, len(x))
    kth = np.partition(d, k - 1, axis=1)[:, k - 1:k]
    w = np.where(d <= kth, 1.0 / np.square(d + nb.SOFTEN), 0.0)
    c = (w @ residuals) / (w.sum(axis=1) + nb.PRIOR)
    return c * np.minimum(1.0, nb.REACH / np.maximum(d.min(axis=1), 1e-12)), d <= kth


def plain(bank: Neighbours, key: str, variants, feats) -> np.ndarray:
    """The correction of each element by brute force: its quantized point against its variant's bank (``brute``)."""
    shape = np.broadcast_shapes(*(np.shape(f) for f in feats), *(np.shape(m) for _, m in variants))
    size = int(np.prod(shape))
    q = np.stack([np.broadcast_to(np.rint(np.multiply(f, STEP)).astype(np.int64), shape).ravel() for f in feats],
                 axis=1).reshape(size, len(feats))
    code = sum(np.broadcast_to(np.asarray(m, dtype=bool), shape).ravel().astype(np.int64) << bit
               for bit, (_, m) in enumerate(variants))
    code = np.broadcast_to(np.asarray(code), (size,))
    out = np.zeros(size)
    for c in np.unique(code):
        rows = bank._banks.get(variant_key(key, [name for bit, (name, _) in enumerate(variants) if c >> bit & 1]))
        if rows is not None:
            where = np.flatnonzero(code == c)
            cells, inverse = np.unique(q[where], axis=0, return_inverse=True)
            out[where] = brute(rows, cells)[0][inverse.ravel()]
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


def test_a_sweep_gives_the_brute_force_numbers(h200):
    """Through of_kernel (sizes bucketed) and through correction (log2 features): the brute force's numbers within
    TOLERANCE, the two paths bit for bit alike, and each of a sample of points bit for bit its own scalar lookup."""
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
            assert np.array_equal(fast, slow) and np.abs(fast - want).max() <= TOLERANCE, k.name
            assert np.array_equal(np.broadcast_to(corrected[i].neighbour, want.shape), np.exp(fast))  # predict's factor
            shape = want.shape
            for flat in np.random.default_rng(i).integers(0, want.size, 40):
                at = np.unravel_index(flat, shape)
                one = [float(np.broadcast_to(f, shape)[at]) for f in feats]
                flags = [(name, bool(np.broadcast_to(m, shape)[at])) for name, m in t.variants]
                assert Neighbours.correction(copy.copy(bank), key, flags, one) == fast[at], (k.name, at)
            checked += int(np.any(want != 0))
    assert checked >= 6


@pytest.mark.parametrize("grids", [1, 2])
def test_the_grid_and_the_sort_agree(h200, monkeypatch, grids):
    """A sweep's cells marked on a grid and found by sorting (np.unique) give the same numbers, the brute force's:
    on one grid (cells and flags), and on two (three swept features and three flags: the cells ranked first)."""
    _, bank = h200
    key = "matmul|gemm|bf16||gemm"
    rng = np.random.default_rng(7)
    feats = [np.log2(rng.integers(1, 1 << 16, 5000).astype(float)), 12.0, np.log2(rng.integers(1, 1 << 14, 5000)), 0.0]
    variants = [("skinny", feats[0] <= 4.0)]
    if grids == 2:  # enough elements that a grid of 2^21 places is small for them
        size = 80_000
        feats = [np.log2(rng.integers(1 << 8, 1 << 16, size).astype(float)) for _ in range(3)] + [0.0]  # 65^3 cells
        variants = [("skinny", feats[0] <= 4.0), ("misaligned", rng.random(size) < 0.9), ("odd", rng.random(size) < 0.7)]
        columns, bits, index, at, total = nb._grid([np.asarray(f) for f in feats[:3]], [m for _, m in variants], (size,),
                                                   False)
        assert total == len(np.unique(np.asarray(at) >> 3)) * 8  # the (rank, flags) grid
        assert len(at) == len(bits) == len(columns[0]) and np.array_equal(bits, np.asarray(at) & 7)
    on_grid = bank.correction(key, variants, feats)
    monkeypatch.setattr(nb, "_grid", lambda *args: None)
    assert np.array_equal(bank.correction(key, variants, feats), on_grid)
    assert np.abs(on_grid - plain(bank, key, variants, feats)).max() <= TOLERANCE


@pytest.mark.parametrize("layout", ["fortran", "transposed"])
def test_a_sweep_in_fortran_order_reads_its_cells_back_in_place(h200, layout):
    """A 2-D sweep of sizes whose m is Fortran-ordered or a transposed view, its flags likewise: the grid's places and
    the c read back at them follow the sweep's shape, bit for bit the C-ordered sweep's and each element's own lookup."""
    _, bank = h200
    key = "matmul|gemm|bf16||gemm"
    rng = np.random.default_rng(11)
    m, n, k = (rng.integers(1 << 8, 1 << 16, (300, 300)).astype(float) for _ in range(3))
    odd, skinny = rng.random((300, 300)) < 0.7, rng.random((300, 300)) < 0.1
    flip = np.asfortranarray if layout == "fortran" else (lambda a: np.ascontiguousarray(a.T).T)
    fm, fodd = flip(m), flip(odd)
    assert not fm.flags.c_contiguous and not fodd.flags.c_contiguous
    grid = nb._grid([np.log2(fm), np.log2(n), np.log2(k)], [skinny, fodd, odd], m.shape, False)
    assert grid is not None and grid[2].shape == m.shape  # the grid path: two grids (65^3 cells x 8 flags > ONE_GRID)
    assert grid[4] == len(np.unique(grid[3] >> 3)) * 8
    got = bank.correction(key, [("skinny", skinny), ("misaligned", fodd), ("odd", odd)],
                          [np.log2(fm), np.log2(n), np.log2(k), 0.0])
    want = bank.correction(key, [("skinny", skinny), ("misaligned", odd), ("odd", odd)],
                           [np.log2(m), np.log2(n), np.log2(k), 0.0])
    assert got.shape == m.shape and np.array_equal(got, want) and np.any(got != 0)
    for i, j in rng.integers(0, 300, (40, 2)):
        one = [float(np.log2(m[i, j])), float(np.log2(n[i, j])), float(np.log2(k[i, j])), 0.0]
        flags = [("skinny", bool(skinny[i, j])), ("misaligned", bool(odd[i, j])), ("odd", bool(odd[i, j]))]
        assert Neighbours.correction(copy.copy(bank), key, flags, one) == got[i, j]


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
    """A scalar kernel's correction, first and memoized, is the brute force's (within TOLERANCE); so is its predict."""
    gpu, bank = h200
    cal = calibration(gpu).replace(neighbours=None)
    for w in (ops.matmul(4096, 4096, 4096), ops.matmul(17, 4095, 333, dtype="fp16"), ops.layernorm(8192, 4096)):
        k = w.kernels[0]
        t = kernel_terms(k, gpu, cal)
        tag, layout, feats = features(k)
        want = float(plain(bank, bank_key(k.op, k.kind, k.precision, layout, tag), t.variants, feats))
        first = bank.of_kernel(k.op, k, t.variants)
        assert first == bank.of_kernel(k.op, k, t.variants) and abs(first - want) <= TOLERANCE and want != 0.0
        assert sk.predict(w, gpu, warn=False).kernels[0].neighbour == pytest.approx(math.exp(want), rel=1e-12)


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
    np.unique(axis=1) of the rows: the same rows in the same order and inverse (an outside oracle); cells that
    do not pack in 62 bits (4 columns of 2^40) take numpy's path itself."""
    from solkit.prediction.neighbours import STEP, _unique

    rng = np.random.default_rng(seed)
    feats = [rng.integers(-spread, spread, size).astype(np.float64) / STEP for _ in range(columns)]
    rows, index = _unique(feats, [], (size,))
    stacked = np.stack([np.rint(f * STEP).astype(np.int64) for f in feats])
    want, want_index = np.unique(stacked, axis=1, return_inverse=True)
    assert np.array_equal(rows, want.T) and np.array_equal(index.ravel(), want_index.ravel())


def random_sweeps(seed: int, size: int) -> list:
    """Random sweeps as users draw them: 3-D matmuls (m, n, k each uniform in 1..65535), convs and attention."""
    rng = np.random.default_rng(seed)

    def u(low: int, high: int) -> np.ndarray:
        return rng.integers(low, high + 1, size).astype(float)

    return [ops.matmul(u(1, 65535), u(1, 65535), u(1, 65535)),
            ops.matmul(u(1, 65535), u(1, 65535), u(1, 65535), dtype="fp32"),
            ops.conv2d(u(1, 64), u(1, 512), u(7, 112), u(7, 112), u(1, 512), kernel=3, padding=1, layout="nhwc"),
            ops.attention(u(1, 16), u(1, 32), u(1, 8192), u(1, 8192), 128, causal=False)]


@pytest.mark.parametrize("seed", [1, 2])
def test_random_sweeps_match_the_brute_force(h200, seed):
    """On random 3-D matmul, conv and attention sweeps, the lattice search finds each point's neighbours (the K
    nearest, ties included) exactly as the brute force does, and its c lies within TOLERANCE of the brute force's."""
    gpu, bank = h200
    cal = calibration(gpu).replace(neighbours=None)
    seen = 0
    for w in random_sweeps(seed, 20_000):
        for k, _ in w.counted:
            t = kernel_terms(k, gpu, cal)
            op = sdpa_backend(gpu) if k.op == "sdpa_attention" else k.op
            tag, layout, feats = features(k)
            key = bank_key(op, k.kind, k.precision, layout, tag)
            fast = bank.of_kernel(op, k, t.variants)
            assert np.abs(fast - plain(bank, key, t.variants, feats)).max() <= TOLERANCE, k.name
            seen += int(np.count_nonzero(fast))
    assert seen > 10_000


@pytest.mark.parametrize("dims, n, spread", [(2, 40, 30), (3, 600, 128), (4, 700, 130), (6, 500, 90), (1, 7, 4),
                                             (3, 300, 40_000)])
def test_the_search_finds_the_brute_forces_neighbours(dims, n, spread):
    """Random banks with many ties (integer lattices, few values): each query's neighbours are the brute force's set,
    their squared distances the integers summed by hand, and c within TOLERANCE; alone or in a sweep, bit for bit.
    The last bank is so wide that its distances pass 2^29: summed in float64, not int32."""
    rng = np.random.default_rng(dims * 1000 + n)
    x = rng.integers(0, spread, (n, dims))
    bank = (x, rng.normal(0, 0.5, n))
    q = np.unique(np.concatenate([rng.integers(-8, spread + 8, (5_000, dims)), x[:50]]), axis=0)
    _, members = brute(bank, q)
    got_c = nb._nearest(bank, q)
    k = min(nb.K, n)
    seen = np.zeros(len(q), dtype=bool)
    for where, dist, member, _ in nb._search(x, q, k):
        for row, d, mem in zip(where[:200], dist[:200], member[:200]):
            used = mem < n
            assert np.array_equal(np.flatnonzero(members[row]), mem[used])  # the same neighbours, in bank order
            assert np.array_equal(d[used], ((q[row] - x[mem[used]]) ** 2).sum(axis=1))  # integer squared distances
        assert np.array_equal(members[where].sum(axis=1), (member < n).sum(axis=1))
        seen[where] = True
    assert seen.all()
    assert np.abs(got_c - brute(bank, q)[0]).max() <= TOLERANCE
    sample = rng.integers(0, len(q), 50)
    assert all(nb._nearest(bank, q[i:i + 1])[0] == got_c[i] for i in sample)


@pytest.mark.parametrize("dims, n, spread", [(3, 131, 60), (4, 556, 130), (2, 9, 5)])
def test_the_sweeps_c_is_the_formula_summed_by_hand_in_bank_order(dims, n, spread):
    """Each point's c from the lattice search (``_blended``: weights, sums and the nearest distance in one pass) is
    bit for bit the formula in plain Python floats over the brute force's neighbours in bank order, summed left to
    right (the order the module docstring promises), ties at the K-th included."""
    rng = np.random.default_rng(dims * 31 + n)
    x = rng.integers(0, spread, (n, dims))
    residuals = rng.normal(0, 0.5, n)
    q = np.unique(rng.integers(-6, spread + 6, (4_000, dims)), axis=0)
    got = nb._nearest((x, residuals), q)
    k = min(nb.K, n)
    for i in rng.integers(0, len(q), 300):
        dist = [int(((q[i] - row) ** 2).sum()) for row in x]
        kth = sorted(dist)[k - 1]
        num = den = 0.0
        for j in range(n):  # bank order, members only
            if dist[j] <= kth:
                t = math.sqrt(float(dist[j])) / STEP + nb.SOFTEN
                w = 1.0 / (t * t)
                num, den = num + w * residuals[j], den + w
        nearest = math.sqrt(float(min(dist))) / STEP
        want = num / (den + nb.PRIOR) * min(1.0, nb.REACH / max(nearest, 1e-12))
        assert got[i] == want, (i, got[i], want)


@pytest.mark.parametrize("points, spread", [(1, 8), (2, 8), (500, 8), (300, 400)])
def test_blended_is_the_formula_by_hand_for_any_group(points, spread):
    """``_blended`` on a group of points (ties at the K-th included): each point's c bit for bit the formula in plain
    Python floats over its members in candidate order; a group of one point (whose transposed distances are already
    contiguous) included, and distances beyond the weight table (each weight by the formula)."""
    rng = np.random.default_rng(points + spread)
    n, width, k = 40, 12, nb.K
    x = rng.integers(0, spread, (n, 2))
    xt = np.hstack([x.T, np.zeros((2, 1), dtype=x.dtype)]).astype(np.int32)  # the unused place n at the corner
    base = np.append(np.zeros(n, dtype=np.int32), nb._FAR).astype(np.int32)
    boxes = np.sort(np.stack([rng.choice(n, width, replace=False) for _ in range(3)]), axis=1)
    of = rng.integers(0, 3, points)
    q = rng.integers(0, spread, (points, 2)).astype(np.int32)
    residuals = np.append(rng.normal(0, 0.5, n), 0.0)
    where, got = nb._blended(np.arange(points), q, boxes, of, xt, base, k, residuals)
    assert np.array_equal(where, np.arange(points))
    kths = []
    for i in range(points):
        column = [int(((q[i] - x[j]) ** 2).sum()) for j in boxes[of[i]]]
        kth = sorted(column)[k - 1]
        kths.append(kth)
        num = den = 0.0
        for j, d in zip(boxes[of[i]], column):  # candidate order, members only
            if d <= kth:
                t = math.sqrt(float(d)) / STEP + nb.SOFTEN
                w = 1.0 / (t * t)
                num, den = num + w * residuals[j], den + w
        nearest = math.sqrt(float(min(column))) / STEP
        assert got[i] == num / (den + nb.PRIOR) * min(1.0, nb.REACH / max(nearest, 1e-12)), i
    assert (max(kths) >= nb.TABLE) == (spread > 100)  # the wide bank's weights by the formula, the others' looked up


def test_repeated_query_rows_take_the_brute_forces_neighbours():
    """Queries that repeat a row (boxes of more than one point at the finest level) get the brute force's c, and
    each repeat the same bits as the row alone."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 40, (90, 3))
    bank = (x, rng.normal(0, 0.5, 90))
    q = rng.integers(-4, 44, (300, 3))
    q = q[rng.integers(0, len(q), 3_000)]  # each row about ten times
    got = nb._nearest(bank, q)
    assert np.abs(got - brute(bank, q)[0]).max() <= TOLERANCE
    assert all(nb._nearest(bank, q[i:i + 1])[0] == got[i] for i in range(0, len(q), 97))


@pytest.mark.parametrize("width", [10, 62])
def test_sorted_codes_are_a_stable_argsort(width):
    """``_sorted_codes``: the codes sorted and the order that sorts them, as numpy's stable argsort gives them (the
    packed sort where codes and positions fit in 63 bits, the argsort beyond)."""
    z = np.random.default_rng(width).integers(0, 1 << width, 5_000)
    z[::7] = z[0]  # ties: the stable order
    got, order = nb._sorted_codes(z, width)
    want = np.argsort(z, kind="stable")
    assert np.array_equal(order, want) and np.array_equal(got, z[want])


@pytest.mark.parametrize("label, bank_points, queries", [
    # a 1-D span of 40,000 steps: the largest distance 40,000^2 = 1.6e9, past 2^29 (5.4e8) but below 2^31
    ("span", lambda rng: np.stack([rng.integers(0, 40_001, 400), np.zeros(400, int)], 1),
     lambda rng: np.stack([rng.integers(0, 40_001, 3_000), np.zeros(3_000, int)], 1)),
    # a feature the whole bank shares, 30,000 steps from every query's: its 30,000^2 = 9e8 is in every distance (the
    # search's base term), so the distances pass 2^29 however close the other features are
    ("shared", lambda rng: np.stack([rng.integers(0, 200, 600), rng.integers(0, 50, 600), np.full(600, 30_000)], 1),
     lambda rng: np.stack([rng.integers(0, 200, 5_000), rng.integers(0, 50, 5_000), np.zeros(5_000, int)], 1)),
])
def test_distances_past_two_to_the_29_are_summed_in_float64_and_exact(label, bank_points, queries):
    """Banks whose squared distances (integers, in 1/STEP octave) pass 2^29, the int32 path's bound: the search takes
    the float64 path (the dtype its distances are summed in, as _search's finish sees it) and every query's c is
    the brute force's."""
    rng = np.random.default_rng(len(label))
    x = bank_points(rng)
    q = np.unique(queries(rng), axis=0)
    residuals = rng.normal(0, 0.5, len(x))
    kinds = {str(dtype) for dtype in nb._search(x, q, nb.K, residuals, finish=lambda w, qq, b, o, xt, base, k, r: xt.dtype)}
    assert kinds == {"float64"}, label
    assert np.abs(nb._nearest((x, residuals), q[:400]) - brute((x, residuals), q[:400])[0]).max() <= TOLERANCE


def test_a_non_finite_feature_is_refused_alone_and_in_a_sweep():
    """A NaN or an infinity among a correction's features is a ShapeError (a ValueError) naming the key, never a c:
    in a sweep one NaN would move the lattice corner every other cell's search is relative to."""
    from solkit.errors import ShapeError

    rng = np.random.default_rng(7)
    n = nb.Neighbours("test", {"k|": (rng.integers(0, 100, (50, 3)), rng.normal(0, 0.5, 50))})
    m = rng.uniform(0, 12, 1000)
    m[3] = np.nan
    with pytest.raises(ShapeError, match="'k'.*finite"):
        n.correction("k", [], [m, 4.0, 5.0])
    with pytest.raises(ShapeError, match="'k'.*finite"):
        n.correction("k", [], [float("inf"), 4.0, 5.0])
    assert np.all(np.isfinite(n.correction("k", [], [np.nan_to_num(m, nan=1.0), 4.0, 5.0])))


@pytest.mark.parametrize("kind, spread, runs", [(np.int32, 16, 40), (np.int32, 300, 3), (np.float64, 9, 25),
                                                (np.int32, 8, 1), (np.int32, 300, 40)])
def test_point_distances_by_run_tables_are_the_squared_gaps_summed_by_hand(kind, spread, runs):
    """``_point_distances`` of points that come box by box (``_search``'s groups: each run's features' squared gaps
    from a table over the run's span, where the tables are smaller than the points; else gathered per point) and of
    points in any order: each point's squared distance to each of its box's candidates, summed by hand in Python
    integers, and the base distance of the shared features added; int32 and float64 (wide banks') lattices, and runs
    too sparse for tables (the last: 40 runs over 300 values, more table rows than points)."""
    rng = np.random.default_rng(spread + runs)
    n, width, dims = 30, 10, 3
    x = rng.integers(0, spread, (n, dims))
    xt = np.hstack([x.T, np.zeros((dims, 1), dtype=x.dtype)]).astype(kind)  # the unused place n at the corner
    extra = rng.integers(0, 50, n)  # a base distance per banked kernel (its shared features')
    base = np.append(extra, nb._FAR).astype(kind)
    boxes = np.sort(np.stack([rng.choice(n + 1, width, replace=False) for _ in range(runs)]), axis=1)
    of = np.sort(rng.integers(0, runs, 2_000))  # box by box
    q = rng.integers(0, spread, (len(of), dims)).astype(kind)
    for order in (np.arange(len(of)), rng.permutation(len(of))):  # by runs, then in any order (per point)
        got = nb._point_distances(q[order], boxes, of[order], xt, base)
        assert got.dtype == kind and got.shape == (len(of), width)
        for i in rng.integers(0, len(of), 300):
            p, box = q[order][i], boxes[of[order][i]]
            want = [(int(base[j]) + sum((int(p[d]) - int(xt[d][j])) ** 2 for d in range(dims))) for j in box]
            assert got[i].tolist() == want, i


def test_bucketed_with_known_bounds_is_bucketed():
    """``_bucketed`` given the sizes' least and most (``_sweep`` has them from its finiteness test) is itself."""
    x = np.random.default_rng(8).integers(1, 65536, 50_000).astype(float)
    u, low, span = nb._bucketed(x)
    v, low2, span2 = nb._bucketed(x, (float(x.min()), float(x.max())))
    assert np.array_equal(u, v) and (low, span) == (low2, span2)


def _edge_shapes(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """m, n, k of ``n`` random matmul shapes (each uniform in 1..65535) with edge cases among them: 1, 2, the largest,
    and sizes either side of a 1/STEP-octave cell boundary (2^((j + 0.5) / STEP) rounded down and up)."""
    edges = np.array([1.0, 2.0, 65535.0] + [float(f(2.0 ** ((j + 0.5) / STEP))) for j in range(0, 128, 9)
                                             for f in (math.floor, math.ceil)])
    sizes = [rng.integers(1, 65536, n).astype(np.float64) for _ in range(3)]
    for i, s in enumerate(sizes):
        s[i * len(edges):(i + 1) * len(edges)] = edges
        s[-len(edges):] = rng.permutation(edges)
    return sizes


@pytest.mark.parametrize("finish_points", [1, 7, 1000])
def test_the_search_in_runs_of_boxes_is_the_search_level_by_level(h200, monkeypatch, finish_points):
    """``_search`` finishes every level's stopped boxes together (``_merged``) in runs of whole boxes of about
    FINISH_POINTS points: each point's c is bit for bit the one of a run per level and width group (the search as it
    was), on a random 3-D matmul sweep with edge sizes (1, 65535, either side of a cell boundary)."""
    gpu, bank = h200
    m, n, k = _edge_shapes(np.random.default_rng(3131), 60_000)
    kernel = ops.matmul(m, n, k).kernels[0]
    variants = kernel_terms(kernel, gpu, calibration(gpu)).variants
    monkeypatch.setattr(nb, "FINISH_POINTS", finish_points)
    got = Neighbours(bank.source, {key: bank._banks[key] for key in bank.keys}).of_kernel("matmul", kernel, variants)
    monkeypatch.setattr(nb, "FINISH_POINTS", 1 << 40)
    monkeypatch.setattr(nb, "_merged", lambda stopped, n: stopped)
    want = Neighbours(bank.source, {key: bank._banks[key] for key in bank.keys}).of_kernel("matmul", kernel, variants)
    assert np.count_nonzero(want) > 50_000 and np.array_equal(got, want)


def test_runs_of_whole_boxes_by_hand():
    """``_runs`` cuts boxes of 3, 5, 1, 4 and 2 points (ends 3, 8, 9, 13, 15) after the last box that ends at or before
    each multiple of 4 (4, 8, 12: after the 1st, 2nd and 3rd box); a limit above the total is one run, a limit of 1 a
    run per box."""
    sizes = np.array([3, 5, 1, 4, 2])
    assert nb._runs(sizes, 4) == [(0, 1, 0, 3), (1, 2, 3, 8), (2, 3, 8, 9), (3, 5, 9, 15)]
    assert nb._runs(sizes, 100) == [(0, 5, 0, 15)]
    assert nb._runs(sizes, 1) == [(i, i + 1, int(a), int(b)) for i, (a, b) in enumerate(zip([0, 3, 8, 9, 13],
                                                                                             [3, 8, 9, 13, 15]))]
