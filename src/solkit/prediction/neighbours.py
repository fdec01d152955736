"""The neighbour correction: a kernel's calibrated time scaled by how far the measured kernels nearest to it missed.

The physical model (``prediction.kernel``) cannot know every choice a library makes (cuBLAS's and
cuDNN's kernel heuristics, split-K, fallback kernels, a batched GEMM that walks k serially). Where a
GPU's spec ships a bank of measured kernels (``measured.neighbours``: a JSON file beside the spec,
written by ``python -m solkit.calibration fit --write``), each kernel's body is multiplied by exp(c):

    c = min(1, REACH / d_1) * sum_i w_i r_i / (PRIOR + sum_i w_i)   over the K nearest banked kernels of its key
    w_i = 1 / (d_i + SOFTEN)^2,  d_i = Euclidean distance between log2 features (d_1 the nearest)
    r_i = log(measured / modelled) of banked kernel i: its case's whole miss put on its case's main kernel
          (the kernel with the longest modelled body), log(max(measured - rest, body / 4) / body)

A kernel's key: its calibration key, kind, precision (fp16 shares bf16's kernels), a conv's layout,
and the implementation variants that apply to it (``skinny``, ``misaligned``, ``depthwise``, ...).
Its features, log2 of each (at least 1) quantized to 1/STEP octave: a GEMM's m, n, k and batch; a
conv's m, n, k, groups, channels per group and bytes read; attention's queries, keys, head dim and
batch; a row-wise kernel's rows, width and bytes; any other its bytes and FLOPs. A key with no bank
entry is not corrected, nor is any GPU whose spec has no bank (an uncalibrated GPU borrows the reference's only where
it is the reference's chip: ``prediction.gpu.same_chip``).
Nothing here can take a prediction below T_SOL: ``predict`` floors every kernel and the workload there.

Lookups are memoized per loaded bank. A sweep is quantized by buckets of its sizes' bits (a log2 per
bucket, not per element, each bucket's table holding its digit's place on the grid); its elements' cells
(quantized features and variant flags) are marked on a grid
(``_grid``, where the grid's places are few enough; else ``np.unique`` finds them), each distinct cell is looked up
once, and its c is written at its place on the grid (or taken by each element's index of its cell), where every
element reads it back. A NaN or an infinity among a sweep's features is refused (a ``ShapeError``). The search (``_search``) is exact on the lattice: distances are integers in 1/STEP octave
(summed in int32 where every one is below 2^29, else in float64), so the neighbours (ties included) and their
distances are the brute force's exactly. A sweep's points (where its points times the bank's kernels exceed
``SMALL``, the bank holds more than ``LEAF`` kernels and the points' bits fit one packed code; else every point
against the whole bank) are sorted along a Z-order curve and split into boxes
(each feature halved per level); a box keeps, of its parent's candidates, only the banked kernels no farther from
it than the K-th smallest of the kernels' farthest distances to it, and stops splitting at ``LEAF`` candidates or
one point. Each point's K-th distance is the K-th of its box's candidates' distances, sorted; every candidate
farther than it weighs 0. ``_blend`` (the formula above, on each point's neighbours in bank order; in a sweep
``_blended``, the same operations on each box's candidates in bank order, each weight looked up, where the distances are int32 and the
box's largest K-th distance is below ``TABLE``, in a table of the formula's values at the integers 0 .. that
distance, else computed by the formula: the same operations on the same integers, the same bits; a row per point, each
row's places added in order, a block of rows at a time: ``_row_sums``) sums column by column, so a point's c is bit for bit the same alone or in any sweep; against the brute
force's BLAS sums it differs by a few ulp (the tests hold it within 1e-13 in c: a relative 1e-13 in the predicted
time).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..errors import ShapeError, SpecError


__all__ = ["K", "SOFTEN", "REACH", "PRIOR", "STEP", "SHARED_PRECISIONS", "Neighbours", "bank_key", "variant_key",
           "features", "residual"]

#: neighbours averaged per kernel
K = 8
#: octaves added to each distance before its square is inverted into a weight (an exact match weighs 16, one 1.4 octaves
#: away 0.37: near matches are trusted most, and an exact match is not trusted alone)
SOFTEN = 0.25
#: octaves of distance beyond which the correction fades (as REACH / distance to the nearest banked kernel)
REACH = 2.0
#: the weight of the physical model's own answer (c = 0) beside the neighbours' (few or far neighbours move it less)
PRIOR = 0.5
#: features are quantized to 1/STEP octave (so that a sweep's shapes share their lookups)
STEP = 8
#: precisions that run the same kernels as another's (their bank is shared)
SHARED_PRECISIONS: Mapping[str, str] = {"fp16": "bf16"}
#: a memo of corrections per loaded bank is cleared when it reaches this many entries
MEMO_LIMIT = 1 << 16
#: a sweep's distinct shapes are compared with the bank in blocks of at most this many distances
BLOCK = 1 << 22
#: a sweep's cells are marked on a grid (its quantized features and flags in mixed radix) of at most this many places
GRID_LIMIT = 1 << 26
#: a sweep's cells and flags are marked on one grid where it has at most this many places, else the cells first
ONE_GRID = 1 << 21
#: a sweep's distinct points of one key are memoized (per loaded bank) where at most this many, in at most this many memos
BLOCK_MEMO_ROWS = 512
BLOCK_MEMO_LIMIT = 128


def bank_key(op: str, kind: str, precision: str, layout: Optional[str], tag: str) -> str:
    """The bank key of a kernel without its variants: ``op|kind|precision|layout|tag``."""
    return f"{op}|{kind}|{SHARED_PRECISIONS.get(precision, precision)}|{layout or ''}|{tag}"


def variant_key(key: str, names: Any) -> str:
    """A ``bank_key`` joined with the names of the variants that apply: ``op|kind|precision|layout|tag|v1+v2``."""
    return key + "|" + "+".join(names)


def _log2(x: Any) -> Any:
    if type(x) is float:
        return math.log2(x) if x > 1.0 else 0.0
    if isinstance(x, (int, np.floating, np.integer)):
        return math.log2(max(float(x), 1.0))
    return np.log2(np.maximum(x, 1.0))


def _sizes(kernel: Any) -> tuple[str, Optional[str], tuple[Any, ...]]:
    """(tag, layout, the sizes ``features`` takes log2 of) of a ``Kernel``."""
    g = kernel.gemm
    if g is not None and kernel.kind == "conv" and g.channels is not None:
        return "conv", g.layout, (g.m, g.n, g.k, g.batch, g.channels, kernel.bytes_read)
    if g is not None:
        return "gemm", g.layout, (g.m, g.n, g.k, g.batch)
    nbytes = kernel.bytes_read + kernel.bytes_written
    if kernel.rows is not None:
        return "rows", None, (kernel.rows.number, kernel.rows.width, nbytes)
    return "flat", None, (nbytes, kernel.vector_flops + kernel.matrix_flops)


def features(kernel: Any) -> tuple[str, Optional[str], list[Any]]:
    """(tag, layout, log2 features) of a ``Kernel``: what the bank compares it by."""
    tag, layout, sizes = _sizes(kernel)
    return tag, layout, [_log2(v) for v in sizes]


def residual(measured: float, body: float, rest: float) -> float:
    """log(measured / modelled) of a case's main kernel: the case's whole miss put on it (at least body / 4)."""
    return math.log(max(measured - rest, 0.25 * body) / body)


class Neighbours:
    """A loaded bank: per key, the features (n x d, in octaves) and residuals of its measured kernels.

    ``banks`` gives the features quantized (integers, 1/STEP octave), kept so (distances on the lattice are exact).
    Memos of its corrections and notes live here.
    """

    __slots__ = ("source", "gpu", "_banks", "_memo", "_blocks", "_size")

    def __init__(self, source: str, banks: Mapping[str, tuple[np.ndarray, np.ndarray]], gpu: str = "") -> None:
        self.source = source
        self.gpu = gpu
        for key, (points, residuals) in banks.items():
            p, r = np.asarray(points, dtype=float), np.asarray(residuals, dtype=float)
            if r.ndim != 1 or p.ndim != 2 or len(p) != len(r):
                raise SpecError(f"neighbour bank {source!r}: key {key!r} needs one residual per point (n x d features, "
                                f"n residuals), got features of shape {p.shape} and residuals of shape {r.shape}")
            if not (np.all(np.isfinite(r)) and np.all(np.isfinite(p))):  # a sweep blends every candidate of a box
                raise SpecError(f"neighbour bank {source!r}: key {key!r} holds a feature or residual that is not a "
                                "finite number")
        self._banks = {key: (_lattice(key, points), np.asarray(residuals, dtype=float))
                       for key, (points, residuals) in banks.items()}
        self._memo: dict[Any, Any] = {}  # corrections and notes, by what they depend on
        self._blocks: dict[tuple[str, bytes], np.ndarray] = {}  # corrections of a sweep's distinct points, by them
        self._size = sum(len(r) for _, r in self._banks.values())

    def __len__(self) -> int:
        return self._size

    def __getstate__(self) -> dict[str, Any]:
        """What pickles and copies keep: the bank, not its memos."""
        return {"source": self.source, "gpu": self.gpu, "_banks": self._banks, "_size": self._size}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._memo, self._blocks = {}, {}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Neighbours):
            return NotImplemented
        return self.source == other.source and self._banks.keys() == other._banks.keys() and all(
            np.array_equal(a, c) and np.array_equal(b, d)
            for (a, b), (c, d) in zip(self._banks.values(), (other._banks[k] for k in self._banks)))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Neighbours({len(self):,} measured kernels under {len(self._banks)} keys)"

    @property
    def keys(self) -> tuple[str, ...]:
        """The banked keys."""
        return tuple(self._banks)

    def of_kernel(self, op: str, kernel: Any, variants: Sequence[tuple[str, Any]]) -> Any:
        """``correction`` of a ``Kernel`` run as ``op`` with its variants (memoized by them where all are scalars)."""
        probe: Any = (op, kernel, tuple(variants))  # a Kernel is a tuple of its fields
        try:
            c = self._memo.get(probe)
        except TypeError:  # arrays: a sweep
            c, probe = None, None
        if c is not None:
            return c
        tag, layout, sizes = _sizes(kernel)
        key = bank_key(op, kernel.kind, kernel.precision, layout, tag)
        if any(np.ndim(size) for size in sizes):  # its features are arrays: correction's sweep, from the sizes
            return self._sweep(key, variants, sizes, raw=True)
        c = self.correction(key, variants, [_log2(size) for size in sizes])
        if probe is not None and type(c) is float:
            self._remember(probe, c)
        return c

    def correction(self, key: str, variants: Sequence[tuple[str, Any]], feats: Sequence[Any]) -> Any:
        """The log factor c of a kernel (``bank_key``, its variants as (name, applies), its log2 features); 0 where unbanked."""
        if all(type(m) is bool or isinstance(m, np.bool_) for _, m in variants) and not any(
                type(f) is not float and isinstance(f, np.ndarray) for f in feats):
            full = variant_key(key, [name for name, m in variants if m])
            bank = self._banks.get(full)
            if bank is None:
                return 0.0
            if not all(math.isfinite(f) for f in feats):
                raise ShapeError(f"neighbour correction of {key!r}: features must be finite (log2 of sizes), got "
                                 f"{list(feats)}")
            return self._one(full, bank, tuple(int(round(f * STEP)) for f in feats))
        return self._sweep(key, variants, feats)

    def moves(self, c: Any) -> bool:
        """Whether a correction moves its kernel at all (somewhere in a sweep)."""
        return bool(np.any(c != 0.0)) if type(c) is not float else c != 0.0

    def note(self, moved: list[tuple[str, Any]], gpu: str) -> str:
        """What the correction did on ``gpu``: the kernels it moved most (``moved``: name, c), by what factor."""
        probe: Any = ("note", tuple(moved), gpu)
        try:
            text = self._memo.get(probe)
        except TypeError:  # a sweep: arrays are not hashable
            text, probe = None, None
        if text is None:
            text = _note([(name, c, *self._range(c)) for name, c in moved], len(self), gpu)
            if probe is not None:
                self._remember(probe, text)
        return text

    def _range(self, c: Any) -> tuple[Any, Any]:
        """(least, most) of a correction (a float's: itself)."""
        return (c, c) if type(c) is float else (np.min(c), np.max(c))

    def _remember(self, probe: Any, value: Any) -> None:
        if len(self._memo) >= MEMO_LIMIT:
            self._memo.clear()
        self._memo[probe] = value

    def _one(self, full: str, bank: tuple[np.ndarray, np.ndarray], q: tuple[int, ...]) -> float:
        """c of one quantized point of the banked key ``full`` (memoized)."""
        c = self._memo.get((full, q))
        if c is None:
            c = float(_nearest(bank, np.array([q], dtype=np.int64))[0])
            self._remember((full, q), c)
        return c

    def _block(self, full: str, bank: tuple[np.ndarray, np.ndarray], points: np.ndarray) -> np.ndarray:
        """c of quantized points (rows) of the banked key ``full``, looked up together (memoized where few)."""
        if len(points) > BLOCK_MEMO_ROWS:
            return _nearest(bank, points)
        probe = (full, points.tobytes())
        c = self._blocks.get(probe)
        if c is None:
            if len(self._blocks) >= BLOCK_MEMO_LIMIT:
                self._blocks.clear()
            c = self._blocks[probe] = _nearest(bank, points)
        return c

    def _sweep(self, key: str, variants: Sequence[tuple[str, Any]], values: Sequence[Any], raw: bool = False) -> Any:
        """``correction`` over a sweep, each distinct cell (quantized features and variants) looked up once.

        ``raw``: ``values`` are a kernel's sizes, not their log2 (``features``).
        """
        shape = np.broadcast_shapes(*(np.shape(v) for v in values), *(np.shape(m) for _, m in variants))
        if 0 in shape:
            return np.zeros(shape)
        swept = [np.asarray(v) for v in values if np.ndim(v)]
        bounds: list[Optional[tuple[float, float]]] = []  # each swept float feature's least and most (for the grid)
        for i, v in enumerate(values):  # NB: one NaN would move every cell's lattice corner (the search works from it)
            if np.ndim(v):
                a = np.asarray(v)
                bound = (float(np.min(a)), float(np.max(a))) if a.dtype.kind == "f" else None
                bounds.append(bound)
                if bound is not None and not (math.isfinite(bound[0]) and math.isfinite(bound[1])):
                    bad = a.ravel()[np.flatnonzero(~np.isfinite(a.ravel()))[0]]
                    raise ShapeError(f"neighbour correction of {key!r}: feature {i} must be finite (log2 of a size), "
                                     f"got {bad} in its sweep")
            elif not math.isfinite(v):
                raise ShapeError(f"neighbour correction of {key!r}: feature {i} must be finite (log2 of a size), got {v}")
        flags = [np.asarray(m, dtype=bool) for _, m in variants if np.ndim(m)]
        grid = _grid(swept, flags, shape, raw, bounds)
        if grid is None:
            rows, index = _unique([_log2(v) if raw else v for v in swept], flags, shape)
            columns, at, total = list(rows[:, :len(swept)].T), None, 0
            bits = sum(rows[:, len(swept) + i] << i for i in range(len(flags))) if flags else None
        else:
            columns, bits, index, at, total = grid
        count = len(rows) if grid is None else len(at)  # the distinct cells
        code, distinct = _variant_codes(variants, bits)
        fixed = [None if np.ndim(v) else int(round(float(_log2(v) if raw else v) * STEP)) for v in values]
        found = np.zeros(count)
        cells = _points(fixed, columns, count)  # every cell's quantized features
        for c in distinct:
            full = variant_key(key, [name for bit, (name, _) in enumerate(variants) if c >> bit & 1])
            bank = self._banks.get(full)
            if bank is not None:
                mine = np.flatnonzero(code == c) if np.ndim(code) else np.arange(count)
                points = np.take(cells, mine, axis=0) if len(mine) < count else cells
                found[mine] = (self._block(full, bank, points) if len(mine) > 1 else
                               self._one(full, bank, tuple(points[0].tolist())))
        if at is None:
            return np.take(found, index.astype(np.intp, copy=False))  # an intp index (numpy converts an int32 one slowly)
        table = np.empty(total)  # each cell's c at its place on the grid, read back at every element's place
        table[at] = found
        return np.take(table, index, mode="wrap")  # (every place is on the grid: "wrap" changes none, and is faster)


def _lattice(key: str, points: Any) -> np.ndarray:
    """A key's banked features as int64 rows (they are integers: quantized to 1/STEP octave)."""
    x = np.asarray(points)
    if x.dtype.kind not in "iu":
        x = np.asarray(points, dtype=float)
        if not np.array_equal(x, np.rint(x)):
            raise SpecError(f"neighbour bank key {key!r}: features must be integers (1/{STEP} octave), got {x.ravel()[:4]}")
    return x.astype(np.int64)


def _note(moved: list[tuple[str, Any, Any, Any]], banked: int, gpu: str) -> str:
    """``Neighbours.note`` written out (``moved``: name, c and its least and most): the three kernels moved most."""
    if len(moved) > 1:
        moved = sorted(moved, key=lambda m: -(abs(m[1]) if type(m[1]) is float else float(max(abs(m[2]), abs(m[3])))))
    shown = []
    for name, c, least, most in moved[:3]:
        low, high = (math.exp(c),) * 2 if type(c) is float else (float(np.exp(least)), float(np.exp(most)))
        shown.append(f"{name} x{low:.2f}" if low == high else f"{name} x{low:.2f}-{high:.2f}")
    more = f" and {len(moved) - 3} more" if len(moved) > 3 else ""
    return (f"neighbour correction from {banked:,} measured kernels on {gpu}: {', '.join(shown)}{more} "
            f"(predict(..., neighbours=False) gives the physical model alone)")


#: 2^52: a float64 x in [0, 2^51) plus this rounds to x's nearest integer (ties to even, as np.rint), plus this
_ROUND = float(1 << 52)
#: a sweep of sizes is quantized by buckets of 2^BUCKET_BITS an octave (the top bits of each size's mantissa)
BUCKET_BITS = 10
#: a bucket is quantized as a whole where no rounding boundary lies within this much (1/STEP octaves) of it
_MARGIN = 1e-6


def _quantized(f: np.ndarray) -> Optional[tuple[np.ndarray, int, int]]:
    """(rint(STEP f) less their least, their least, their span) of a float64 sweep of features; None where not so."""
    if f.dtype != np.float64:
        return None
    u = np.multiply(f, float(STEP))
    u += _ROUND
    low, high = float(u.min()), float(u.max())
    if not (low >= _ROUND and high < 2 * _ROUND):  # negative, not finite or too large: not this way
        return None
    u -= low
    return u, int(low - _ROUND), int(high - low) + 1


def _bucketed(x: np.ndarray, bound: Optional[tuple[float, float]] = None,
              scale: int = 1) -> Optional[tuple[np.ndarray, int, int]]:
    """``_quantized`` of log2 max(x, 1) (``_log2``) of a float64 sweep of sizes, a log2 per bucket, not per element.

    A bucket (a size's exponent and top BUCKET_BITS mantissa bits) far from every rounding boundary
    takes the quantized log2 of its lower edge; the sizes in the few others are quantized one by one.
    ``bound``: the sizes' least and most, where known; ``scale``: the quantized values (less their least) come
    multiplied by it (the table's entries are: no pass of its own).
    """
    if x.dtype != np.float64:
        return None
    least, most = bound if bound is not None else (float(x.min()), float(x.max()))
    if not (least == least and most < 2.0 ** 64):  # NaN, infinite or huge: not this way
        return None
    shift = 52 - BUCKET_BITS
    first, last = (int(np.float64(max(v, 1.0)).view(np.int64)) >> shift for v in (least, most))
    if last - first + 2 > x.size:  # more buckets than sizes
        return None
    edges = STEP * np.log2((np.arange(first, last + 2, dtype=np.int64) << shift).view(np.float64))
    below, above = np.floor(edges[:-1] - _MARGIN + 0.5), np.floor(edges[1:] + _MARGIN + 0.5)
    low = int(below[0])
    table = np.where(below == above, (below - low) * scale, -1).astype(np.intp)
    keys = x.view(np.int64) >> shift
    keys -= first
    # in place, unbuffered; "clip" takes a size below 1 as 1 ("wrap", numpy's fastest take, where there is none)
    u = np.take(table, keys, out=keys, mode="wrap" if least >= 1.0 else "clip")
    near = np.flatnonzero(u < 0)
    if near.size:
        u.flat[near] = (np.rint(np.multiply(_log2(x.flat[near]), STEP)).astype(np.intp) - low) * scale
    return u, low, int(above[-1]) - low + 1


def _part(v: np.ndarray, raw: bool, bound: Optional[tuple[float, float]] = None,
          scale: int = 1) -> Optional[tuple[np.ndarray, int, int]]:
    """A swept feature on the grid (``raw``: from its sizes; ``bound``: their least and most, where known): its
    quantized values less a lower bound (times ``scale``, its digit's place on the grid), it, their span."""
    part = _bucketed(v, bound, scale) if raw else None
    if part is None:
        part = _quantized(_log2(v) if raw else v)
        if part is not None and scale > 1:
            np.multiply(part[0], scale, out=part[0])
    return part


def _grid(swept: list[np.ndarray], flags: list[np.ndarray], shape: tuple[int, ...], raw: bool,
          bounds: Optional[Sequence[Optional[tuple[float, float]]]] = None) -> Optional[tuple[Any, ...]]:
    """(the distinct cells' quantized features, a column per swept feature; their flags' bits (flag i at bit i; None
    without flags); each element's place on a small grid; each cell's place; the grid's size) by marking the elements'
    places on the grid (the cells in the order of their places).

    An element's place on the grid is its quantized features in mixed radix, the first feature fastest, and its
    flags the highest digit; where that grid is large (more than ``ONE_GRID``), the places of the features alone are
    ranked first, and each rank with the element's flags (its low bits) is a place on a second grid of the pairs
    present (the flags no longer multiply the large grid). None where the grids are not small for the sweep's
    elements (or the features are not float64 octaves).
    """
    limit = min(GRID_LIMIT, 32 * int(np.prod(shape)) + 4096) >> len(flags)  # the features' places at most
    parts = []  # each feature's (least, span)
    cell: Optional[np.ndarray] = None
    stride = 1  # the places of the features so far
    for i, v in enumerate(swept):  # each feature's digit, the first fastest
        part = _part(v, raw, bounds[i] if bounds else None, stride)
        if part is None or stride * part[2] > limit:
            return None
        u, low, span = part
        cell = _added(cell, u, shape)
        stride *= span
        parts.append((low, span))
    cell = np.zeros(shape, dtype=np.intp) if cell is None else cell
    place = cell if cell.dtype == np.intp else cell.astype(np.intp)
    code: Any = None
    if flags:  # the flags' bits, packed
        kind: Any = np.uint8 if len(flags) <= 8 else np.intp
        code = np.zeros(shape, dtype=kind)
        for bit, flag in enumerate(flags):
            code |= np.multiply(np.broadcast_to(flag, shape).view(np.uint8), kind(1 << bit), dtype=kind)  # (not a shift: slow)
    if code is None or stride << len(flags) <= ONE_GRID:  # one grid: the flags its highest digit
        if code is not None:
            high = code.astype(np.intp)
            high *= stride
            place += high
        total = stride << len(flags)
        slots = _present(place, total)
        index, cells, bits = place, slots % stride, slots // stride
    else:  # the feature cells present ranked on a grid of the features alone, then the (rank, flags) pairs present
        rank, present = _ranked(place, stride)
        pair = np.left_shift(rank, len(flags), out=np.empty(shape, dtype=np.intp))  # (widened in the same pass)
        pair += code
        total = len(present) << len(flags)
        index = pair
        slots = pairs = _present(pair, total)
        cells, bits = present[pairs >> len(flags)], pairs & ((1 << len(flags)) - 1)
    columns = []
    rest = cells.astype(np.int64, copy=False)
    for j, (low, span) in enumerate(parts):  # the features' digits, the first fastest (the last: what is left)
        rest, digit = np.divmod(rest, span) if j < len(parts) - 1 else (None, rest)  # (a fresh array)
        digit += low
        columns.append(digit)
    return columns, (bits if flags else None), index, slots, total


def _present(place: np.ndarray, total: int) -> np.ndarray:
    """The distinct places present, in increasing order, of places in 0..total-1 (marked on a grid of ``total``)."""
    seen = np.zeros(total, dtype=bool)
    seen[place] = True
    return np.flatnonzero(seen)


def _ranked(place: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """(each element's rank among the distinct places present, those places in increasing order) of places in
    0..total-1, marked on a grid of ``total``."""
    slots = _present(place, total)
    rank = np.empty(total, dtype=np.int32)  # read only where written: at the places present (GRID_LIMIT < 2^31)
    rank[slots] = np.arange(len(slots), dtype=np.int32)
    return np.take(rank, place, mode="wrap"), slots  # (every place is on the grid: "wrap", numpy's fastest take)


def _added(cell: Optional[np.ndarray], u: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``cell + u`` over the sweep's ``shape`` (in place where it can; ``cell`` None: ``u``)."""
    if cell is None:
        return u if u.shape == shape else np.broadcast_to(u, shape).copy()
    if cell.dtype == u.dtype or cell.dtype == np.float64:
        cell += u
        return cell
    return cell + u


def _unique(swept: list[np.ndarray], flags: list[np.ndarray], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """(distinct cells as rows: quantized features then flags, each element's row: an array of the sweep's shape).

    The rows are sorted as ``np.unique(axis=1)`` sorts them (the first column most significant): each element's cell
    packed into one integer, its columns' offsets from their least in mixed radix (the first column the highest
    digit), so a 1-D ``np.unique`` finds them in the same order (a million random cells: ~20x faster than uniting
    rows); cells too many to pack in 62 bits take ``np.unique(axis=1)`` itself.
    """
    columns = [np.rint(np.multiply(np.broadcast_to(f, shape), STEP)).astype(np.int64).ravel() for f in swept]
    columns += [np.broadcast_to(flag, shape).ravel().astype(np.int64) for flag in flags]
    lows = [int(c.min()) for c in columns]
    spans = [int(c.max()) - low + 1 for c, low in zip(columns, lows)]
    if math.prod(spans) >= 1 << 62:
        rows, index = np.unique(np.stack(columns), axis=1, return_inverse=True)
        return rows.T, index.reshape(shape)
    code = columns[0] - lows[0]
    for c, low, span in zip(columns[1:], lows[1:], spans[1:]):
        code = code * span + (c - low)
    codes, index = np.unique(code, return_inverse=True)
    rows = np.empty((len(codes), len(columns)), dtype=np.int64)
    rest = codes
    for j in range(len(columns) - 1, -1, -1):
        rest, digit = np.divmod(rest, spans[j])
        rows[:, j] = digit + lows[j]
    return rows, index.reshape(shape)


def _points(fixed: list[Optional[int]], swept: Sequence[np.ndarray], count: int) -> np.ndarray:
    """``count`` query rows: the fixed quantized features, the swept ones from the columns ``swept`` in order."""
    points = np.empty((count, len(fixed)), dtype=np.int64)
    columns = iter(swept)
    for j, q in enumerate(fixed):
        points[:, j] = next(columns) if q is None else q
    return points


def _variant_codes(variants: Sequence[tuple[str, Any]], bits: Optional[np.ndarray]) -> tuple[Any, Any]:
    """(each cell's variants as bits, variant i at bit i (an int where none is swept); the distinct codes, increasing)
    from its swept flags' ``bits`` (swept flag i at bit i): one take from a table of every combination of the flags,
    the combinations present marked on it (no sort of the cells' codes)."""
    code = sum(1 << bit for bit, (_, m) in enumerate(variants) if not np.ndim(m) and m)
    places = [bit for bit, (_, m) in enumerate(variants) if np.ndim(m)]
    if bits is None or not places:
        return code, [code]
    if len(places) > 16:  # (a table too large: bit by bit)
        codes = code | sum(((bits >> i) & 1) << bit for i, bit in enumerate(places))
        return codes, np.unique(codes)
    table = np.array([code | sum(((b >> i) & 1) << bit for i, bit in enumerate(places)) for b in range(1 << len(places))],
                     dtype=np.int64)
    bits = bits.astype(np.intp, copy=False)
    seen = np.zeros(len(table), dtype=bool)
    seen[bits] = True
    # (NB: a bincount of the codes here left glibc's heap so that later sweeps paid far more page faults)
    return np.take(table, bits), np.unique(table[seen])


def _nearest(bank: tuple[np.ndarray, np.ndarray], q: np.ndarray) -> np.ndarray:
    """c of each quantized query row of ``q`` (m x d integers) against one key's bank (quantized features, residuals).

    The K nearest are every banked kernel at most as far as the K-th nearest: kernels tied at that
    distance all count (features are quantized, so ties are common), so the bank's row order never matters.
    ``_search`` finds them exactly (integer distances on the lattice); ``_blend`` turns them into c.
    """
    x, residuals = bank
    if len(q) == 1:  # one point (a scalar's lookup): the same neighbours and sums, without the sweep's machinery
        step = x - q[0]
        dist = np.einsum("ij,ij->i", step, step)  # integers
        k = min(K, len(x))
        member = np.flatnonzero(dist <= np.partition(dist, k - 1)[k - 1])
        return _blend(np.sqrt(dist[member].astype(np.float64))[None, :] / STEP, residuals[member][None, :])
    out = np.empty(len(q))
    for rows, c in _search(x, q, min(K, len(x)), residuals, _blended):
        out[rows] = c
    return out


def _blend(d: np.ndarray, r: np.ndarray) -> np.ndarray:
    """c of each row: ``d`` the distances (octaves) of its K nearest banked kernels (ties included) in bank order,
    ``r`` their residuals; a row's unused places hold d = inf and r = 0 (they weigh nothing).

    c = min(1, REACH / d_1) * sum_i w_i r_i / (PRIOR + sum_i w_i), w_i = 1 / (d_i + SOFTEN)^2, d_1 the nearest.
    The sums run column by column, so a row's c never depends on how many unused places follow it.
    """
    w = 1.0 / np.square(d + SOFTEN)
    nearest = d[:, 0].copy()
    for j in range(1, d.shape[1]):
        np.minimum(nearest, d[:, j], out=nearest)
    return _faded(w.T, r.T, nearest)


def _faded(w: np.ndarray, r: np.ndarray, nearest: np.ndarray) -> np.ndarray:
    """c from the weights ``w`` and residuals ``r`` of each point's candidates, a row per candidate place (summed
    row by row), and the nearest distance (octaves): sum w r / (PRIOR + sum w) x min(1, REACH / nearest)."""
    return _summed(w * r, w, nearest)


def _summed(wr: np.ndarray, w: np.ndarray, nearest: np.ndarray) -> np.ndarray:
    """``_faded`` from the products w r (a row per candidate place, as ``w``): the rows summed in order."""
    num, den = wr[0].copy(), w[0].copy()
    for j in range(1, len(w)):
        num += wr[j]
        den += w[j]
    return _from_sums(num, den, nearest)


def _from_sums(num: np.ndarray, den: np.ndarray, nearest: np.ndarray) -> np.ndarray:
    """c from each point's sums of w r and of w, and its nearest distance (octaves)."""
    c = num / (den + PRIOR)
    return c * np.minimum(1.0, REACH / np.maximum(nearest, 1e-12))


#: a box of a sweep's points is split (halved in every feature) while more than this many banked kernels may be
#: among the K nearest of some point in it; the points of a box with at most this many are compared with them alone
LEAF = 16
#: the final comparisons group a sweep's points by their candidates' count: at most 6, 8, 10, 12, 16, more
WIDTH_GROUPS = (6, 8, 10, 12, 16)
#: a sweep of at most this many (points x banked kernels) distances is compared with the whole bank at once
SMALL = 1 << 15
#: squared distances (1/STEP octave units) below this take their weights from a table of the formula's values
TABLE = 1 << 16
#: the unused candidate place's base distance in int32 (every real distance is below 2^29: it is the farthest; with
#: a real distance added it stays below 2^30 + 2^29 < 2^31, so no int32 sum overflows)
_FAR = 1 << 30


def _search(x: np.ndarray, q: np.ndarray, k: int, residuals: Optional[np.ndarray] = None, finish: Any = None) -> list[Any]:
    """The K nearest rows of ``x`` (n x d integers) to each row of ``q`` (m x d integers), ties at the K-th included.

    Groups of (query rows, squared distances m' x W, bank rows m' x W in increasing order, their ``residuals``
    (zeros where None)); places of candidates that are not among the K nearest hold inf, n and 0 (``_members``).
    ``finish``: another function of ``_members``' arguments for each group (``_blended``: its points' c). Exact:
    distances are integers (1/STEP octave units, from the sweep's least corner), summed in int32 where all stay below
    2^29, else in float64 (exact below 2^53).
    A sweep's points are sorted along a Z-order curve and split into boxes (every feature halved per level), each
    box keeping only the banked kernels that may be among the K nearest of a point in it: those no farther from
    the box than the K-th smallest of the kernels' farthest distances to it. A box left with at most ``LEAF``
    candidates (or holding one point) stops splitting; its points are compared with its candidates alone.
    """
    finish = finish or _members
    n = len(x)
    m = len(q)
    low = _columns(q, np.min) if m else np.zeros(x.shape[1], dtype=np.int64)
    high = _columns(q, np.max) if m else low
    varies: np.ndarray = low != high
    # the features every query shares add the same to each of a banked kernel's distances: summed once ("base")
    shared = (x[:, ~varies] - low[~varies]).astype(np.float64)
    base = np.square(shared).sum(axis=1)
    # int32 where every distance these points and kernels can have is below 2^29 (exact, half the bytes, a fast sort),
    # else float64 (exact below 2^53); the unused place n sits at the least corner, far by its base distance
    xv = x[:, varies]
    lows, highs = np.minimum(low[varies], _columns(xv, np.min)), np.maximum(high[varies], _columns(xv, np.max))
    reach = float(np.square((highs - lows).astype(np.float64)).sum()) + float(base.max())
    kind: Any = np.int32 if reach < 1 << 29 else np.float64
    corner = low[varies]
    xt = np.hstack([(xv - corner).astype(kind).T, np.zeros((len(corner), 1), dtype=kind)])
    base = np.append(base, _FAR if kind is np.int32 else math.inf).astype(kind)
    padded = np.append(np.zeros(n) if residuals is None else residuals, 0.0)  # a residual of 0 at the unused place n
    qf = (q[:, varies] - corner).astype(kind)
    dims = qf.shape[1]
    u = qf  # (int32, or float64 integers below 2^53 where the distances pass 2^29: the Z-order takes int64 ones)
    if kind is not np.int32:
        u = u.astype(np.int64)
    bits = int(u.max()).bit_length() if m and dims else 0
    if m * n <= SMALL or n <= LEAF or bits * dims > 62:  # few, or a small bank: every point against all (in blocks)
        rows = max(1, BLOCK // max(n, 1))
        return [finish(np.arange(s, min(s + rows, m)), qf[s:s + rows], np.arange(n)[None, :],
                         np.zeros(min(rows, m - s), dtype=np.intp), xt, base, k, padded) for s in range(0, m, rows)]
    z, order = _sorted_codes(_morton(u, bits), bits * dims)
    qs = np.take(qf, order, axis=0)
    # every level's boxes, bottom-up: a box is a run of the sorted points whose codes share a prefix (the level's
    # bits of every feature dropped); its first point, its bounds (a level's from the boxes below: min of their mins)
    first = np.flatnonzero(np.concatenate([[True], z[1:] != z[:-1]]))
    if len(first) == m:  # distinct points (a sweep's cells): each finest box is one point, its own bounds
        tree = [(first, qs, qs)]
    else:
        tree = [(first, np.minimum.reduceat(qs, first, axis=0), np.maximum.reduceat(qs, first, axis=0))]
    for level in range(1, bits + 1):
        starts, lo, hi = tree[-1]
        prefix = z[starts] >> (level * dims)
        up = np.flatnonzero(np.concatenate([[True], prefix[1:] != prefix[:-1]]))
        tree.append((starts[up], np.minimum.reduceat(lo, up, axis=0), np.maximum.reduceat(hi, up, axis=0)))
    stopped: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # boxes that stopped: (sorted positions of their
    # points, box by box; each box's candidates; its points)
    cand = np.arange(n)[None, :]  # the active boxes' parents' candidates, padded with n
    boxes = np.zeros(1, dtype=np.intp)  # the active boxes (at the level: the one box of every point)
    parent = np.zeros(1, dtype=np.intp)  # each active box's row of cand
    for level in range(bits, -1, -1):
        starts, lo, hi = tree[level]
        begin, sizes = starts[boxes], np.append(starts[1:], m)[boxes] - starts[boxes]
        kept = _prune(np.take(lo, boxes, axis=0), np.take(hi, boxes, axis=0), np.take(cand, parent, axis=0), xt, base, k)
        stop = (_counts(kept < n) <= LEAF) | (sizes == 1) | (level == 0)
        if stop.any():
            stopped.append((_ranges(begin[stop], sizes[stop]), _compact(np.compress(stop, kept, axis=0), n), sizes[stop]))
        if stop.all():
            break
        go = np.flatnonzero(~stop)
        cand = _compact(np.take(kept, go, axis=0), n)
        below = tree[level - 1][0]  # the boxes one level down inside each box that goes on: a run of them
        low, high = np.searchsorted(below, begin[go]), np.searchsorted(below, begin[go] + sizes[go])
        parent = np.repeat(np.arange(len(go)), high - low)
        boxes = _ranges(low, high - low)
    found = []
    # the points in groups of similar candidate counts, each padded to its widest, finished in runs of whole boxes
    for where, boxes, sizes in _merged(stopped, n):
        counts = _counts(boxes < n)
        group = np.searchsorted(WIDTH_GROUPS, counts)  # each box's
        of = np.repeat(np.arange(len(boxes)), sizes)  # each point's box
        grouped = group[of]
        for g in np.flatnonzero(np.bincount(group, minlength=1)):  # the groups present, in order
            part, mine = np.flatnonzero(grouped == g), np.flatnonzero(group == g)  # (the points box by box)
            width = int(counts[mine].max())
            for first, last, low, high in _runs(np.take(sizes, mine), FINISH_POINTS):
                at, run = np.take(where, part[low:high]), mine[first:last]
                found.append(finish(np.take(order, at), np.take(qs, at, axis=0), np.take(boxes[:, :width], run, axis=0),
                                    np.repeat(np.arange(len(run)), np.take(sizes, run)), xt, base, k, padded))
    return found


#: ``_search`` finishes its points in runs of whole boxes of about this many points (their figures then stay in cache)
FINISH_POINTS = 8192


def _merged(stopped: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int) -> list[tuple[np.ndarray, np.ndarray,
                                                                                              np.ndarray]]:
    """The stopped boxes of every level as one list (their points' sorted positions, their candidates padded with n to
    the widest, their sizes): ``_search`` then groups them by width once, not level by level (fewer calls; each point's
    candidates, in their order, and so its figures, are the same)."""
    if len(stopped) < 2:
        return stopped
    width = max(boxes.shape[1] for _, boxes, _ in stopped)
    boxes = np.full((sum(len(b) for _, b, _ in stopped), width), n, dtype=np.intp)
    row = 0
    for _, part, _ in stopped:
        boxes[row:row + len(part), :part.shape[1]] = part
        row += len(part)
    return [(np.concatenate([w for w, _, _ in stopped]), boxes, np.concatenate([s for _, _, s in stopped]))]


def _runs(sizes: np.ndarray, limit: int) -> list[tuple[int, int, int, int]]:
    """Consecutive runs of whole boxes of about ``limit`` points, cut after the last box that ends at or before each
    multiple of ``limit`` (a run may pass it by its last box), from the boxes' sizes: (its first box, its last box + 1,
    its first point, its last point + 1) of each."""
    ends = np.cumsum(sizes)  # each box's last point + 1
    cuts = np.searchsorted(ends, np.arange(limit, int(ends[-1]), limit), side="right").tolist()
    bounds = sorted(set([0] + cuts + [len(sizes)]))
    return [(first, last, int(ends[first - 1]) if first else 0, int(ends[last - 1]))
            for first, last in zip(bounds[:-1], bounds[1:])]


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The runs starts[i] .. starts[i] + sizes[i] - 1, one after another."""
    return np.arange(int(sizes.sum())) + np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)


def _columns(a: np.ndarray, reduce: Any) -> np.ndarray:
    """``reduce`` (np.min, np.max) of each column of a 2-D array, column by column (numpy's axis-0 reduction of a few
    wide columns walks them row by row, 3-4x slower)."""
    return np.array([reduce(a[:, j]) for j in range(a.shape[1])], dtype=a.dtype)


def _sorted_codes(z: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(``z`` sorted, the order that sorts it) of non-negative codes below 2^width: one sort of each code with its
    position in its low bits where both fit in 63 bits (faster than ``argsort``; distinct keys, the same order),
    else a stable ``argsort``."""
    places = max(len(z) - 1, 0).bit_length()
    if width + places > 63:
        order = np.argsort(z, kind="stable")
        return z[order], order
    packed = z << places
    packed |= np.arange(len(z))
    packed.sort()
    order = packed & ((1 << places) - 1)
    packed >>= places
    return packed, order


def _morton(u: np.ndarray, bits: int) -> np.ndarray:
    """Z-order codes of non-negative integer rows (each feature's bits interleaved, the first feature lowest)."""
    dims = u.shape[1]
    spread = np.zeros(256, dtype=np.int64)
    for b in range(8):
        spread |= ((np.arange(256, dtype=np.int64) >> b) & 1) << (b * dims)
    z = np.zeros(len(u), dtype=np.int64)
    for chunk in range(0, bits, 8):
        for j in range(dims):
            z |= spread[(u[:, j] >> chunk) & 255] << (chunk * dims + j)
    return z


def _prune(lo: np.ndarray, hi: np.ndarray, cand: np.ndarray, xt: np.ndarray, base: np.ndarray, k: int) -> np.ndarray:
    """Each box's candidates (rows of ``cand``, n where unused) that may be among the K nearest of a point in the
    box [lo, hi]: those no farther than the K-th smallest farthest distance; compacted in order, padded with n."""
    near = np.take(base, cand)
    far = near.copy()
    for j in range(lo.shape[1]):
        c = np.take(xt[j], cand)
        below, above = lo[:, j:j + 1] - c, c - hi[:, j:j + 1]  # how far below the box's least, above its most
        gap = np.maximum(below, above)
        np.maximum(gap, 0, out=gap)  # the distance from the box along the feature, 0 inside it
        top = np.minimum(below, above, out=below)  # minus the farthest: max(c - least, most - c)
        np.multiply(gap, gap, out=gap)
        np.multiply(top, top, out=top)
        near += gap
        far += top
    kth = np.partition(far, k - 1, axis=1)[:, k - 1:k]
    return _compact(np.where(near <= kth, cand, len(base) - 1), len(base) - 1)


def _counts(mask: np.ndarray) -> np.ndarray:
    """Each row's true elements of a 2-D boolean mask (``mask.sum(axis=1)``, without numpy's per-row reduction)."""
    return np.einsum("ij->i", mask.view(np.uint8), dtype=np.intp)


def _kept(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(flat positions of a 2-D mask's true elements in row order, their rows, their places in their rows once the
    false ones are dropped, each row's count): ``np.nonzero`` and its compaction, from one flat pass."""
    flat = np.flatnonzero(mask)
    counts = _counts(mask)
    rows = np.repeat(np.arange(len(mask)), counts)
    places = np.arange(len(flat)) - (np.cumsum(counts) - counts)[rows]
    return flat, rows, places, counts


def _compact(cand: np.ndarray, n: int) -> np.ndarray:
    """Rows of candidates with the unused places (n) moved to the end, the others kept in order; as wide as needed."""
    flat, rows, places, counts = _kept(cand != n)
    width = int(counts.max()) if len(cand) else 0
    out = np.full((len(cand), width), n, dtype=np.intp)
    out.reshape(-1)[rows * width + places] = cand.reshape(-1)[flat]
    return out


def _candidate_distances(q: np.ndarray, boxes: np.ndarray, of: np.ndarray, xt: np.ndarray,
                         base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the boxes' candidates, column-major (W, boxes); each query row's squared distance to its box's candidates,
    (W, m')): each figure gathered per box, a row per candidate place, then copied to its points."""
    columns = boxes.T  # (W, boxes)
    dist = np.take(np.take(base, columns), of, axis=1)  # (W, m')
    for j in range(q.shape[1]):
        step = np.take(np.take(xt[j], columns), of, axis=1)
        np.subtract(q[:, j], step, out=step)
        np.multiply(step, step, out=step)
        dist += step
    return columns, dist


def _members(where: np.ndarray, q: np.ndarray, boxes: np.ndarray, of: np.ndarray, xt: np.ndarray, base: np.ndarray,
             k: int, residuals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(where, squared distances, bank rows, residuals) of the K nearest with ties of each query row among its
    candidates (those of its box: row ``of[i]`` of ``boxes``, at least K of them used, n where unused), in the
    candidates' order; a non-member keeps its place, holding inf, n and 0 (not compacted: ``_blend``'s sums add
    exactly nothing there). Column-major (``_blend`` sums them column by column): each figure is gathered per box,
    a row per candidate place, then copied to its points (``take`` along the rows, far cheaper than a gather of
    every point's candidates from the bank)."""
    columns, dist = _candidate_distances(q, boxes, of, xt, base)
    kth = _sorted_rows(dist)[:, k - 1]
    far = dist > kth
    d = np.where(far, np.inf, dist.astype(np.float64, copy=False))
    member = np.take(columns, of, axis=1)
    np.copyto(member, len(base) - 1, where=far)
    r = np.take(np.take(residuals, columns), of, axis=1)
    np.copyto(r, 0.0, where=far)
    return where, d.T, member.T, r.T


def _blended(where: np.ndarray, q: np.ndarray, boxes: np.ndarray, of: np.ndarray, xt: np.ndarray, base: np.ndarray,
             k: int, residuals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where, c): ``_members`` and ``_blend`` in one, on the same figures in the same order (bit for bit): a
    non-member's weight is 0 (``_blend``'s 1 / (inf + SOFTEN)^2), its residual left as it is (0 x r adds exactly
    nothing), and the nearest distance is the smallest candidate's (the nearest is a member). A row per point (its
    candidates in their order: ``_point_distances``), the weights, residuals and products w r too (gathers into
    contiguous rows: a transposed gather or copy costs 2-3x more), each row summed place by place (``_row_sums``)
    as ``_faded`` sums its columns."""
    dist = _point_distances(q, boxes, of, xt, base)
    ranked = dist.copy()
    ranked.sort(axis=1)  # each point's distances sorted (a sort of a few contiguous ones: faster than a partition)
    kth = ranked[:, k - 1:k]
    top = int(kth.max()) if len(kth) else 0
    if dist.dtype == np.int32 and top < TABLE:  # each weight looked up: the formula's values at 0 .. top
        # a non-member's place top + 1 (weight 0); intp places (numpy's take converts int32 ones slowly)
        places = np.where(dist > kth, np.intp(top + 1), dist)
        w = np.take(_weights(np.arange(top + 2, dtype=np.float64), top + 1), places, mode="wrap")
    else:
        w = _weights(dist.astype(np.float64), None)
        np.copyto(w, 0.0, where=dist > kth)
    # each point's candidates' residuals (a row gathered per point), then each candidate's w r
    wr = np.take(np.take(residuals, boxes), of, axis=0)
    wr *= w  # (r w is w r: multiplication commutes, bit for bit)
    return where, _from_sums(_row_sums(wr), _row_sums(w), np.sqrt(ranked[:, 0], dtype=np.float64) / STEP)


#: ``_row_sums`` adds the columns of this many rows at a time (their strided columns then stay in cache)
ROW_BLOCK = 4096


def _row_sums(a: np.ndarray) -> np.ndarray:
    """Each row's sum, its places added in order (as ``_summed`` adds rows: not numpy's pairwise row sum), a block of
    ``ROW_BLOCK`` rows at a time."""
    out = np.empty(len(a), dtype=a.dtype)
    for s in range(0, len(a), ROW_BLOCK):
        block, total = a[s:s + ROW_BLOCK], out[s:s + ROW_BLOCK]
        np.copyto(total, block[:, 0])
        for j in range(1, a.shape[1]):
            total += block[:, j]
    return out


def _point_distances(q: np.ndarray, boxes: np.ndarray, of: np.ndarray, xt: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Each query row's squared distances to its box's candidates (row ``of[i]`` of ``boxes``), a row per point
    (m' x W) in the candidates' order: integers, summed feature by feature (exact in any order).

    Where the points come box by box (``of`` never decreasing: ``_search``'s groups), each run of one box's points
    takes a feature's squared gaps from a table of them over the values the run spans in it (a row per value, one
    row gathered per point: far cheaper than gathering each candidate's feature for each point), where the tables'
    rows are fewer than the points; else the gaps are computed from each point's candidates' features gathered for it.
    """
    m, dims = q.shape
    runs = m > 1 and dims and not (of[1:] < of[:-1]).any()
    if runs:
        change = of[1:] != of[:-1]
        starts = np.flatnonzero(np.concatenate([[True], change]))
        run = np.zeros(m, dtype=np.intp)  # each point's run
        np.cumsum(change, out=run[1:])
        owner = of[starts]  # each run's box
    dist = np.take(np.take(base, boxes), of, axis=0)
    for j in range(dims):
        column = q[:, j]
        if runs:
            whole = column.astype(np.intp)  # (int32, or float64 integers)
            low = np.minimum.reduceat(whole, starts)
            span = np.maximum.reduceat(whole, starts) - low + 1
            if int(span.sum()) <= m:
                first = np.cumsum(span) - span  # each run's first row in the table
                gaps = np.take(np.take(xt[j], boxes), np.repeat(owner, span), axis=0)
                np.subtract(_ranges(low, span).astype(gaps.dtype)[:, None], gaps, out=gaps)
                np.multiply(gaps, gaps, out=gaps)
                place = np.take(first - low, run)
                place += whole  # each point's row: its run's first + its value - the run's least
                dist += np.take(gaps, place, axis=0)
                continue
        step = np.take(np.take(xt[j], boxes), of, axis=0)
        np.subtract(column[:, None], step, out=step)
        np.multiply(step, step, out=step)
        dist += step
    return dist


def _sorted_rows(dist: np.ndarray) -> np.ndarray:
    """Each point's squared distances (the columns of ``dist``, W x m') sorted, a row per point (the K-th smallest of
    a few candidates: a sort of contiguous rows is faster than numpy's partition, the same value)."""
    rows = dist.T.copy()  # C order (a copy even where the transpose is contiguous: one point)
    rows.sort(axis=1)
    return rows


def _weights(d: np.ndarray, unused: Optional[int]) -> np.ndarray:
    """1 / (sqrt(d) / STEP + SOFTEN)^2 of float64 squared distances ``d`` (in place, ``_blended``'s operations in its
    order); 0 at place ``unused``."""
    w = np.sqrt(d, out=d)
    w /= STEP
    w += SOFTEN
    np.square(w, out=w)
    np.divide(1.0, w, out=w)
    if unused is not None:
        w[unused] = 0.0
    return w
