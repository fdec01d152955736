"""Speed paths: the physical model's sweep paths give each element's own scalar answer; what ``import solkit`` loads."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from solkit._num import off, off_each
from solkit.prediction import tiles


def test_split_kv_over_a_sweep_is_each_elements_heuristic():
    """Flash attention's split-KV count over a sweep (once per distinct items and key blocks) is flash_splits of each
    element called alone: 1 where the items fill 80% of the 132 SMs (105.6), the heuristic below."""
    rng = np.random.default_rng(31)
    items = rng.integers(1, 300, 20_000).astype(float)
    blocks = rng.integers(1, 600, 20_000).astype(float)
    got = tiles._splits(items, blocks, 132)
    want = [tiles.flash_splits(float(i), float(b), 132) for i, b in zip(items, blocks)]
    assert np.array_equal(got, want)
    assert np.all(got[items >= 105.6] == 1.0) and np.any(got > 1.0)
    assert tiles._splits(np.array([200.0]), np.array([64.0]), 132).tolist() == [1.0]  # 200 items >= 105.6: no split


def test_a_prediction_loads_neither_the_models_nor_the_charts():
    """``import solkit`` and a scalar predict load no solkit.models or solkit.plot (they load on first use: import time)."""
    code = ("import sys, solkit as sk; from solkit import ops; sk.predict(ops.matmul(64, 64, 64), 'h200').seconds; "
            "loaded = [m for m in sys.modules if m.startswith(('solkit.models', 'solkit.plot'))]; "
            "assert not loaded, loaded; assert sk.models.resnet50 and sk.plot.roofline; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("d", [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 0.5, 3.0, 2.0 ** 40])
def test_off_is_the_remainders_test(d):
    """_num.off(x, d) is numpy's own x % d != 0 (the outside oracle) on integers, fractions, negatives, huge and tiny
    values, infinities and NaN, for powers of two (its fast path: finite values, whole sweeps and those of values at
    least 1) and others."""
    rng = np.random.default_rng(int(d * 7) % 1000)
    x = np.concatenate([rng.integers(1, 1 << 40, 20_000).astype(float), rng.uniform(-1e6, 1e6, 20_000),
                        [0.0, -0.0, -8.0, 2.0 ** 53, 2.0 ** 60 + 2048, 1e308, -1e308, 5e-324, 2.0 ** -1070, 1.0, 1.5]])
    with np.errstate(invalid="ignore"):
        assert np.array_equal(off(x, d), x % d != 0)
        assert np.array_equal(off(x[x >= 1.0], d), x[x >= 1.0] % d != 0)
        for odd in ([np.inf, 8.0], [np.nan, 16.0]):
            assert np.array_equal(off(np.array(odd), d), np.array(odd) % d != 0)
    assert off(24.0, 8.0) is False and off(20.0, 8.0) is True  # a scalar: Python's own %


@pytest.mark.parametrize("draw", ["random_3d", "batched", "conv_like", "small", "k_alone", "crossed", "huge",
                                  "fractional_k", "fractional_small", "small_batched"])
def test_gemm_time_sweep_is_each_elements_scalar_answer(draw):
    """The tile search over a sweep (fewest units of 64x64 tile-waves, in float32 where the tile counts allow,
    multiplied once; split-K on the elements whose largest tiles leave SMs idle) gives each element's seconds and
    largest-tile count of the one-shape path exactly, on random 3-D shapes (m, n, k uniform in 1..65535) and on
    batched, conv-like (no split-K), small (mostly split-K; with a swept batch, the float64 loop's), k-only, crossed
    and huge (float64) sweeps, and with k off the integers (each tile's waves of ceil(k / split), as one shape's)."""
    rng = np.random.default_rng(len(draw))
    size = 4000

    def sizes(high: int) -> np.ndarray:
        return rng.integers(1, high + 1, size).astype(float)

    m, n, k = sizes(65535), sizes(65535), sizes(65535)
    batch: object = 1.0
    split_k = True
    if draw == "batched":
        batch = sizes(16)
    elif draw == "conv_like":
        k, batch, split_k = np.ceil(sizes(1024) / 32) * 32 * 9, 3.0, False  # channels padded to a 32-wide k tile, 3x3
    elif draw == "small":
        m, n = sizes(300), sizes(300)
    elif draw == "small_batched":  # mostly split-K with a swept batch: the float64 loop's full way
        m, n, batch = sizes(300), sizes(300), sizes(3)
    elif draw == "k_alone":
        m, n = 4096.0, 1000.0  # type: ignore[assignment]
    elif draw == "huge":  # 64x64 tile counts past 2^22 (float32's exact range for the tile loop): the float64 loop
        m, n = sizes(1 << 20), sizes(1 << 20)
    elif draw.startswith("fractional"):  # k off the integers (the public gemm_compute_time takes it): ceil(k) per tile
        k = k - rng.uniform(0.0, 1.0, size)
        if draw == "fractional_small":
            m, n = sizes(300), sizes(300)
    elif draw == "crossed":
        m, n, k = m[:60, None], n[None, :70], 4096.0  # type: ignore[assignment]
    rate, sms = 989.4e12, 132
    seconds, efficiency, largest = tiles.gemm_time(m, n, k, batch, rate, sms, split_k)
    shape = np.broadcast_shapes(*(np.shape(x) for x in (m, n, k, batch)))
    assert seconds.shape == efficiency.shape == largest.shape == shape
    flat = [np.broadcast_to(x, shape).reshape(-1) for x in (m, n, k, batch)]
    for i, (mi, ni, ki, bi) in enumerate(zip(*flat)):
        want = tiles._gemm_compute_time_one(float(mi), float(ni), float(ki), float(bi), rate, sms, split_k)
        assert seconds.flat[i] == want[0] and largest.flat[i] == want[2]
        assert efficiency.flat[i] == pytest.approx(want[1], rel=1e-12)
    if draw.startswith("small"):  # the split-K regime was exercised: some element's best tile split k
        assert np.any(largest < sms)




def test_the_tile_shortcuts_hold_only_for_these_tiles():
    """The fewest-units shortcut is exact only for tiles a power of two times 64x64 in area (128x256: 8, 128x128: 4,
    64x128: 2, ...), and the float32 loop halves 64-row counts into 128 and 256 ones, the one-shape path spells the six
    tiles out: a tile added to TILES must change them too (this fails first)."""
    assert tiles.TILES == ((128, 256), (256, 128), (128, 128), (64, 256), (64, 128), (64, 64))
    for tm, tn in tiles.TILES:
        units = tm * tn // (64 * 64)
        assert units * 64 * 64 == tm * tn and units & (units - 1) == 0  # 8, 8, 4, 4, 2, 1

def test_gemm_time_of_an_empty_sweep_is_empty():
    """An empty sweep (m and n of no shapes, alone or across 4 n's) gives empty figures of its broadcast shape, (0,) and
    (0, 4), as the tile loop always did (the float32 loop's max over no sizes raised numpy's reduction error)."""
    none = np.array([], dtype=float)
    for m, n, want in ((none, none, (0,)), (none, 5.0, (0,)), (none[:, None], np.ones((1, 4)), (0, 4))):
        figures = tiles.gemm_time(m, n, 100.0, 1.0, 989.4e12, 132)
        assert [f.shape for f in figures] == [want] * 3
    assert [f.shape for f in tiles.gemm_compute_time(none, none, 100.0, 1.0, 989.4e12, 132)] == [(0,), (0,)]

def test_a_sweeps_variant_entries_are_the_where_chain():
    """lookup over a sweep (one pass of a small table where several variants apply) is the chain of wheres, each
    element taking the last applying variant's entry: by hand, element 0 none (the op's 0.5), 1 a (0.25), 2 b (0.125),
    3 a and c (c: 0.0625), 4 all (c); a scalar True variant overrides what came before it; an all-False one is skipped;
    the same with the variants packed once for all of a kernel's lookups (``_pick``)."""
    from solkit.prediction.kernel import KernelTerms, _pick, _selector, lookup

    a = np.array([False, True, False, True, True])
    b = np.array([False, False, True, False, True])
    c = np.array([False, False, False, True, True])
    table = {"matmul": 0.5, "matmul_a": 0.25, "matmul_b": 0.125, "matmul_c": 0.0625, "matmul_t": 2.0}

    def terms(*variants: tuple[str, object]) -> KernelTerms:
        return KernelTerms("gemm", "matmul", tuple(variants), 1.0, True, 1.0, 1.0, 1.0, False, False)

    for pick in (lookup, lambda table, t, default: _pick(table, t, default, _selector(t))):  # alone, and packed once
        got = pick(table, terms(("a", a), ("x", False), ("b", b), ("c", c)), 1.0)
        assert got.tolist() == [0.5, 0.25, 0.125, 0.0625, 0.0625]
        assert pick(table, terms(("a", a), ("t", True), ("b", b)), 1.0).tolist() == [2.0, 2.0, 0.125, 2.0, 0.125]
        assert pick(table, terms(("a", np.zeros(5, dtype=bool)), ("t", True)), 1.0) == 2.0
        assert pick(table, terms(("b", b), ("t", True)), 1.0) == 2.0  # True after a sweep's variant: its entry alone
        assert pick({"matmul": 0.5}, terms(("a", a), ("b", b)), 1.0) == 0.5  # no entries: the op's own
    assert lookup(table, terms(("a", a[:, None]), ("b", b[None, :3])), 1.0).shape == (5, 3)  # masks broadcast



def test_a_sweeps_variant_entries_past_eight_and_from_non_boolean_masks_are_the_where_chain():
    """lookup over a sweep with more variants applying than a uint8 code holds (ten: element i has variant i alone,
    entry i + 2) gives each element its own variant's entry, 2, 3, ..., 11; a 0/2 integer mask applies where it is
    nonzero, as numpy's where reads it (element 0 takes v0's 2, element 1 v1's 3, elements 2 and 3 the op's 1)."""
    from solkit.prediction.kernel import KernelTerms, lookup

    table = {"matmul": 1.0, **{f"matmul_v{i}": float(i + 2) for i in range(10)}}

    def terms(*variants: tuple[str, object]) -> KernelTerms:
        return KernelTerms("gemm", "matmul", tuple(variants), 1.0, True, 1.0, 1.0, 1.0, False, False)

    ten = terms(*((f"v{i}", np.arange(10) == i) for i in range(10)))
    assert lookup(table, ten, 1.0).tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]
    ints = terms(("v0", np.array([2, 0, 0, 0])), ("v1", np.array([0, 2, 0, 0])))
    assert lookup(table, ints, 1.0).tolist() == [2.0, 3.0, 1.0, 1.0]

def _tile_search(m: float, n: float, k: float, batch: float, rate: float, sms: int, split_k: bool) -> tuple[float, float]:
    """gemm_time's docstring formula, tile by tile (the reference): tiles = ceil(m/TM) * ceil(n/TN) * batch, split =
    clip(floor(SMs / tiles), 1, max(1, floor(k / 256))), seconds = ceil(tiles * split / SMs) * 2*TM*TN*ceil(k / split)
    / (rate / SMs); the fastest tile, and the fewer of the 128x256 and 256x128 tiles."""
    import math

    best = largest = math.inf
    for tm, tn in tiles.TILES:
        count = math.ceil(m / tm) * math.ceil(n / tn) * batch
        if tm * tn == 128 * 256:
            largest = min(largest, count)
        split = min(max(float(sms // count), 1.0), max(1.0, k // 256) if split_k else 1.0)
        best = min(best, math.ceil(count * split / sms) * (2.0 * tm * tn / (rate / sms) * math.ceil(k / split)))
    return best, float(largest)


def test_gemm_time_of_one_shape_is_the_tile_by_tile_search():
    """The one-shape tile search (the fewest tile-wave units where every grid fills the SMs) is the tile-by-tile
    formula exactly, on random integer shapes (large, mid and small: split-K) and fractional ones."""
    rng = np.random.default_rng(144)
    rate, sms = 989.4e12, 132
    shapes = [tuple(float(x) for x in rng.integers(1, high + 1, 3)) for high in (65535, 2000, 300) for _ in range(3000)]
    shapes += [tuple(rng.uniform(1.0, 70000.0, 3)) for _ in range(3000)]
    split_seen = False
    for i, (m, n, k) in enumerate(shapes):
        batch = float(1 + i % 3) if i % 5 else 1.0
        split_k = i % 7 != 0
        got = tiles._gemm_compute_time_one(m, n, k, batch, rate, sms, split_k)
        want = _tile_search(m, n, k, batch, rate, sms, split_k)
        assert (got[0], got[2]) == want, (m, n, k, batch, split_k)
        assert got[1] == 2.0 * m * n * k * batch / rate / want[0]
        split_seen |= want[1] < sms
    assert split_seen


@pytest.mark.parametrize("dtype", ["bf16", "tf32", "fp8_e4m3", "int8", "fp32"])
def test_a_random_3d_sweep_predicts_each_shapes_own_time(dtype):
    """A random 3-D matmul sweep (m, n, k uniform in 1..65535, the issue's draw) predicts each shape's scalar
    prediction (the plain-Python path, an outside reference for the sweep's numpy): the physical model bit for bit;
    with the neighbour correction within 4e-16 relative (its factor exp(c) is numpy's exp over a sweep, the math
    module's for one shape: they may differ in the last bit)."""
    import solkit as sk
    from solkit import ops

    h200 = sk.load_gpu("h200")
    rng = np.random.default_rng(3100 + len(dtype))
    m, n, k = (rng.integers(1, 65536, 600).astype(float) for _ in range(3))
    for corrected in (False, True):
        sweep = sk.predict(ops.matmul(m, n, k, dtype=dtype), h200, warn=False, neighbours=corrected).seconds
        alone = np.array([sk.predict(ops.matmul(float(a), float(b), float(c), dtype=dtype), h200, warn=False,
                                     neighbours=corrected).seconds for a, b, c in zip(m, n, k)])
        if corrected:
            assert np.abs(sweep / alone - 1.0).max() <= 4e-16
        else:
            assert np.array_equal(sweep, alone)


@pytest.mark.parametrize("batch", [1.0, 3.0])
def test_the_float64_sweep_path_is_the_tile_by_tile_search(batch):
    """A sweep of m across n (the float64 path: neither is the whole shape, so not the float32 one) takes the 64x64
    tile's units where every grid fills the SMs, and gives each element the tile-by-tile reference's seconds and
    largest tiles exactly (random m in 1..65535 against random n, split-K elements among them)."""
    rng = np.random.default_rng(7)
    rate, sms = 989.4e12, 132
    m = rng.integers(1, 65536, 60).astype(float)[:, None]
    n = rng.integers(1, 65536, 50).astype(float)[None, :]
    n[0, :5] = [1.0, 7.0, 64.0, 100.0, 300.0]  # small grids: split-K
    k = 4096.0
    seconds, _, largest = tiles.gemm_time(m, n, k, batch, rate, sms)
    want = [[_tile_search(float(a), float(b), k, batch, rate, sms, True) for b in n[0]] for a in m[:, 0]]
    assert np.array_equal(seconds, np.array([[w[0] for w in row] for row in want]))
    assert np.array_equal(largest, np.array([[w[1] for w in row] for row in want]))
    assert np.any(largest < sms) and np.any(largest >= sms)


def test_a_replaced_calibration_looks_its_own_parameters_up():
    """A scalar prediction memoizes its kernel's parameters in the calibration; ``replace`` starts a fresh memo, so a
    changed efficiency moves the body: compute = t_compute / efficiency (efficiency 0.5: twice the time)."""
    import solkit as sk
    from solkit import ops
    from solkit.prediction import calibration, kernel_seconds, kernel_terms

    gpu = sk.load_gpu("h200")
    cal = calibration(gpu).replace(neighbours=None)
    t = kernel_terms(ops.matmul(4096, 4096, 4096).kernels[0], gpu, cal)
    _, compute, _ = kernel_seconds(t, cal)  # the memo filled
    assert cal.memo
    halved = cal.replace(compute_efficiency={**cal.compute_efficiency, "gemm": 0.5, "matmul": 0.5})
    assert not halved.memo
    _, slower, _ = kernel_seconds(kernel_terms(ops.matmul(4096, 4096, 4096).kernels[0], gpu, halved), halved)
    assert slower == t.t_compute / 0.5 and compute == t.t_compute / cal.compute_efficiency.get("matmul", 1.0)


def test_swept_seconds_is_kernel_seconds_general_path(monkeypatch):
    """A sweep's in-place kernel_seconds (``_swept_seconds``) gives the general path's body, compute and memory bit
    for bit, for GEMMs (all variants swept), convs, attention and row kernels."""
    import solkit as sk
    from solkit import ops
    from solkit.prediction import kernel
    from solkit.prediction.expected import calibration

    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    rng = np.random.default_rng(5)
    a, b, c = (rng.integers(1, 9000, 3000).astype(float) for _ in range(3))
    small = rng.integers(1, 64, 3000).astype(float)
    workloads = [ops.matmul(a, b, c), ops.matmul(a, b, c, dtype="fp32"), ops.matmul(a, b, c, dtype="fp16", batch=3),
                 ops.conv2d(small, np.floor(b / 10) + 1, small + 6, small + 6, np.floor(c / 10) + 1, kernel=3, padding=1, layout="nhwc"),
                 ops.attention(small, small, a, b, 128), ops.layernorm(a, b), ops.softmax(a, b)]
    real = kernel._one_shape
    for w in workloads:
        for k, _ in w.counted:
            terms = kernel.kernel_terms(k, gpu, cal)
            monkeypatch.setattr(kernel, "_one_shape", real)
            fast = kernel.kernel_seconds(terms, cal)
            monkeypatch.setattr(kernel, "_one_shape", lambda *args: False)
            general = kernel.kernel_seconds(terms, cal)
            for x, y in zip(fast, general):
                assert np.shape(x) == np.shape(y) and np.array_equal(x, y)
    monkeypatch.setattr(kernel, "_one_shape", real)
    terms = kernel.kernel_terms(ops.matmul(a, b, c).counted[0][0], gpu, cal)
    assert kernel._selector(terms) is not None and kernel._one_shape(terms, a.shape)  # the path is taken


@pytest.mark.parametrize("layout", ["fortran", "transposed"])
def test_a_sweep_whose_k_is_in_fortran_order_is_each_elements_tile_search(layout):
    """A 2-D sweep whose k is a Fortran-ordered array or a transposed view gives each element the one-shape tile
    search's seconds, split-K elements among them (their seconds are written into the buffer ceil(k) lends the sweep,
    whatever its memory order), and predict gives the C-ordered sweep's seconds bit for bit."""
    import solkit as sk
    from solkit import ops

    rng = np.random.default_rng(0)
    rate, sms = 989.4e12, 132
    m, n, k = (rng.integers(1000, 9000, (40, 40)).astype(float) for _ in range(3))
    m[:5], n[:5] = 64.0, 64.0  # 64 x 64: one tile, a grid that leaves SMs idle (split-K)
    fk = np.asfortranarray(k) if layout == "fortran" else np.ascontiguousarray(k.T).T
    assert not fk.flags.c_contiguous and np.array_equal(fk, k)
    seconds, _, largest = tiles.gemm_time(m, n, fk, 1.0, rate, sms)
    want = np.array([[tiles._gemm_compute_time_one(m[i, j], n[i, j], k[i, j], 1.0, rate, sms, True)[0]
                      for j in range(40)] for i in range(40)])
    assert np.any(largest < sms) and np.array_equal(seconds, want)
    h200 = sk.load_gpu("h200")
    c_order = sk.predict(ops.matmul(m, n, k), h200, warn=False).seconds
    assert np.array_equal(sk.predict(ops.matmul(m, n, fk), h200, warn=False).seconds, c_order)


@pytest.mark.parametrize("ds", [(8.0, 2.0), (8.0,), (4.0, 16.0, 1.0), (8.0, 3.0)])
def test_off_each_is_the_remainders_test_for_each(ds):
    """_num.off_each(x, ds) is numpy's own x % d != 0 for each d (one finiteness test and one buffer on its fast path:
    powers of two, finite float64 sweeps; else off for each), on integers, fractions, negatives and non-finite values,
    and a scalar's Python booleans."""
    rng = np.random.default_rng(len(ds))
    x = np.concatenate([rng.integers(1, 1 << 20, 20_000).astype(float), rng.uniform(-1e4, 1e4, 5_000),
                        [0.0, -0.0, -8.0, 2.0 ** 53, 1.0, 1.5]])
    with np.errstate(invalid="ignore"):
        for sweep in (x, np.append(x, np.inf), np.append(x, np.nan), x.reshape(-1, 2).T):
            got = off_each(sweep, ds)
            assert len(got) == len(ds)
            for d, mask in zip(ds, got):
                assert np.array_equal(mask, sweep % d != 0)
    assert off_each(24.0, ds) == [24.0 % d != 0 for d in ds] and all(type(b) is bool for b in off_each(20.0, ds))


def test_dim_of_a_float64_sweep_is_its_float64_copy():
    """``_validate.dim`` of integral float64 arrays returns a copy equal to ``astype(float64)`` bit for bit (the floor it
    takes is the copy: -0.0 stays -0.0), never the argument itself, in any layout; fractions still refused."""
    from solkit._validate import dim
    from solkit.errors import ShapeError
    rng = np.random.default_rng(9)
    a = rng.integers(1, 1 << 40, (300, 7)).astype(float)
    for value in (a, np.asfortranarray(a), a[::3, 1:5], a.T, np.array([-0.0, 0.0, 3.0])):
        got = dim("m", value, minimum=0)
        want = value.astype(np.float64)
        assert got is not value and not np.shares_memory(got, value)
        assert got.dtype == np.float64 and got.shape == want.shape
        assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert dim("m", np.array(7.0)) == 7.0 and type(dim("m", np.array(7.0))) is float
    with pytest.raises(ShapeError):
        dim("m", np.array([1.0, 2.5]))


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32", "tf32", "fp8", "int8"])
def test_one_gemms_terms_are_the_general_paths(monkeypatch, dtype):
    """``kernel_terms`` of one shape's plain GEMM (``_one_gemm_terms``, plain Python) equals the general path's, field by
    field and type by type: aligned, misaligned, odd, skinny, weight-gradient, batched, biased and epilogue GEMMs."""
    import solkit as sk
    from solkit import ops
    from solkit.prediction import kernel as pk
    from solkit.prediction.gpu import calibration
    from solkit.workload import Gemm

    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    shapes = [(4096, 4096, 4096, 1), (7, 4096, 11008, 1), (1000, 1001, 999, 1), (128, 64, 4096, 12), (16, 17, 3000, 1),
              (65535, 3, 65533, 2), (1, 1, 1, 1), (4097, 8191, 2050, 3)]
    kernels = []
    for m, n, k, b in shapes:
        kernels.append(ops.matmul(m, n, k, dtype=dtype, batch=b).counted[0][0])
        kernels.append(ops.matmul(m, n, k, dtype=dtype, batch=b, bias=True, epilogue="gelu").counted[0][0])
    kernels.append(kernels[2]._replace(gemm=Gemm(1000.0, 1001.0, 999.0, 1.0, layout="wgrad")))
    for physical in (cal, cal.replace(neighbours=None)):
        for kernel in kernels:
            assert pk._one_gemm_kernel(kernel)
            fast = pk.kernel_terms(kernel, gpu, physical)
            with monkeypatch.context() as patch:
                patch.setattr(pk, "_one_gemm_kernel", lambda _: False)
                general = pk.kernel_terms(kernel, gpu, physical)
            assert fast == general and [type(x) for x in fast] == [type(x) for x in general]
            assert [type(m) for _, m in fast.variants] == [type(m) for _, m in general.variants]
