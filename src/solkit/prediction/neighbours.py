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
entry is not corrected, nor is any GPU whose spec has no bank (an uncalibrated GPU borrows none).
Nothing here can take a prediction below T_SOL: ``predict`` floors every kernel and the workload there.

Lookups are memoized per loaded bank. A sweep is quantized by buckets of its sizes' bits (a log2 per
bucket, not per element), each distinct cell is looked up once, in the order the cells of each key
were always looked up in (so that a sweep's numbers stay bit for bit what they were).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np


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

    ``banks`` gives the features quantized (integers, 1/STEP octave); they are kept in octaves, converted once.
    Memos of its corrections and notes live here.
    """

    __slots__ = ("source", "gpu", "_banks", "_memo", "_blocks", "_size")

    def __init__(self, source: str, banks: Mapping[str, tuple[np.ndarray, np.ndarray]], gpu: str = "") -> None:
        self.source = source
        self.gpu = gpu
        self._banks = {key: (np.asarray(points, dtype=float) / STEP, np.asarray(residuals, dtype=float))
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
        flags = [np.asarray(m, dtype=bool) for _, m in variants if np.ndim(m)]
        rows, counts, slots, index, size = (_grid(swept, flags, shape, raw) or
                                            _unique([_log2(v) if raw else v for v in swept], flags, shape))
        code: Any = sum(1 << bit for bit, (_, m) in enumerate(variants) if not np.ndim(m) and m)
        for i, bit in enumerate(bit for bit, (_, m) in enumerate(variants) if np.ndim(m)):
            code = code | rows[:, len(swept) + i] << bit
        fixed = [None if np.ndim(v) else int(round(float(_log2(v) if raw else v) * STEP)) for v in values]
        found = np.zeros(len(rows))
        for c in np.unique(code):
            full = variant_key(key, [name for bit, (name, _) in enumerate(variants) if c >> bit & 1])
            bank = self._banks.get(full)
            if bank is not None:
                mine = np.flatnonzero(code == c) if np.ndim(code) else np.arange(len(rows))
                points = _points(fixed, rows[mine, :len(swept)])
                order = _order(rows[mine, :len(swept)], int(counts[mine].sum()))
                found[mine[order]] = (self._block(full, bank, points[order]) if len(order) > 1 else
                                      self._one(full, bank, tuple(points[0].tolist())))
        table = found if slots is None else np.zeros(size)
        if slots is not None:
            table[slots] = found
        return table[index.ravel()].reshape(shape)


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


def _bucketed(x: np.ndarray) -> Optional[tuple[np.ndarray, int, int]]:
    """``_quantized`` of log2 max(x, 1) (``_log2``) of a float64 sweep of sizes, a log2 per bucket, not per element.

    A bucket (a size's exponent and top BUCKET_BITS mantissa bits) far from every rounding boundary
    takes the quantized log2 of its lower edge; the sizes in the few others are quantized one by one.
    """
    if x.dtype != np.float64:
        return None
    least, most = float(x.min()), float(x.max())
    if not (least == least and most < 2.0 ** 64):  # NaN, infinite or huge: not this way
        return None
    shift = 52 - BUCKET_BITS
    first, last = (int(np.float64(max(v, 1.0)).view(np.int64)) >> shift for v in (least, most))
    if last - first + 2 > x.size:  # more buckets than sizes
        return None
    edges = STEP * np.log2((np.arange(first, last + 2, dtype=np.int64) << shift).view(np.float64))
    below, above = np.floor(edges[:-1] - _MARGIN + 0.5), np.floor(edges[1:] + _MARGIN + 0.5)
    low = int(below[0])
    table = np.where(below == above, below - low, -1).astype(np.intp)
    keys = x.view(np.int64) >> shift
    keys -= first
    if least < 1.0:
        np.maximum(keys, 0, out=keys)
    u = np.take(table, keys)
    near = np.flatnonzero(u < 0)
    if near.size:
        u.flat[near] = np.rint(np.multiply(_log2(x.flat[near]), STEP)).astype(np.intp) - low
    return u, low, int(above[-1]) - low + 1


def _part(v: np.ndarray, raw: bool) -> Optional[tuple[np.ndarray, int, int]]:
    """A swept feature on the grid (``raw``: from its sizes): its quantized values less a lower bound, it, their span."""
    part = _bucketed(v) if raw else None
    return part or _quantized(_log2(v) if raw else v)


def _grid(swept: list[np.ndarray], flags: list[np.ndarray], shape: tuple[int, ...], raw: bool) -> Optional[tuple[Any, ...]]:
    """``_unique``'s answer by counting cells on a small grid (slots: the cells' places on it, in its order).

    An element's cell is its quantized features and flags in mixed radix, the first feature fastest;
    None where the grid is not small for the sweep's elements (or the features are not float64 octaves).
    """
    parts = [part for part in (_part(v, raw) for v in swept) if part is not None]
    if len(parts) < len(swept):
        return None
    spans = [span for _, _, span in parts] + [2] * len(flags)
    total = int(min(np.prod(np.array(spans, dtype=float)), 1 << 62))
    if total > min(1 << 24, 4 * int(np.prod(shape)) + 4096):
        return None
    cell: Optional[np.ndarray] = None
    stride = 1
    for u, _, span in parts:
        if stride > 1:
            u *= stride
        cell = _added(cell, u, shape)
        stride *= span
    cell = np.zeros(shape, dtype=np.intp) if cell is None else cell
    for flag in flags:
        np.add(cell, stride, out=cell, where=flag)
        stride *= 2
    index = cell if cell.dtype == np.intp else cell.astype(np.intp)
    counts = np.bincount(index.ravel(), minlength=total)
    slots = np.flatnonzero(counts)
    lows = [low for _, low, _ in parts] + [0] * len(flags)
    columns = [low + slots // step % span for low, step, span in zip(lows, np.cumprod([1] + spans[:-1]), spans)]
    rows = np.stack(columns, axis=1) if columns else np.zeros((len(slots), 0), dtype=np.int64)
    return rows.astype(np.int64), counts[slots], slots, index, total


def _added(cell: Optional[np.ndarray], u: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``cell + u`` over the sweep's ``shape`` (in place where it can; ``cell`` None: ``u``)."""
    if cell is None:
        return u if u.shape == shape else np.broadcast_to(u, shape).copy()
    if cell.dtype == u.dtype or cell.dtype == np.float64:
        cell += u
        return cell
    return cell + u


def _unique(swept: list[np.ndarray], flags: list[np.ndarray], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """(distinct cells as rows: quantized features then flags, elements per cell, None, each element's cell, cells).

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
        rows, index, counts = np.unique(np.stack(columns), axis=1, return_inverse=True, return_counts=True)
        return rows.T, counts, None, index.reshape(shape), len(counts)
    code = columns[0] - lows[0]
    for c, low, span in zip(columns[1:], lows[1:], spans[1:]):
        code = code * span + (c - low)
    codes, index, counts = np.unique(code, return_inverse=True, return_counts=True)
    rows = np.empty((len(codes), len(columns)), dtype=np.int64)
    rest = codes
    for j in range(len(columns) - 1, -1, -1):
        rest, digit = np.divmod(rest, spans[j])
        rows[:, j] = digit + lows[j]
    return rows, counts, None, index.reshape(shape), len(counts)


def _points(fixed: list[Optional[int]], swept: np.ndarray) -> np.ndarray:
    """Query rows: the fixed quantized features, the swept ones from the columns of ``swept`` in order."""
    points = np.empty((len(swept), len(fixed)), dtype=np.int64)
    columns = iter(swept.T)
    for j, q in enumerate(fixed):
        points[:, j] = next(columns) if q is None else q
    return points


def _order(swept: np.ndarray, elements: int) -> np.ndarray:
    """The order a key's distinct points are looked up in: the last swept feature first where they lie on a small grid
    for their ``elements``, else the first (the order fixes how the bank's sums round)."""
    if swept.shape[1] == 0 or len(swept) == 1:
        return np.arange(len(swept))
    span = swept.max(axis=0) - swept.min(axis=0) + 1
    if int(min(np.prod(span.astype(float)), 1 << 62)) <= min(1 << 24, 4 * elements + 4096):
        return np.lexsort(swept.T)
    return np.lexsort(swept.T[::-1])


def _nearest(bank: tuple[np.ndarray, np.ndarray], q: np.ndarray) -> np.ndarray:
    """c of each quantized query row of ``q`` (m x d integers) against one key's bank (features in octaves).

    The K nearest are every banked kernel at most as far as the K-th nearest: kernels tied at that
    distance all count (features are quantized, so ties are common), so the bank's row order never matters.
    """
    x, residuals = bank
    out = np.empty(len(q))
    rows = max(1, BLOCK // max(len(x), 1))
    k = min(K, len(x))
    for start in range(0, len(q), rows):
        d = np.sqrt(_squared(q[start:start + rows].astype(float) / STEP, x))
        kth = np.partition(d, k - 1, axis=1)[:, k - 1:k]
        w = np.where(d <= kth, 1.0 / np.square(d + SOFTEN), 0.0)
        c = (w @ residuals) / (w.sum(axis=1) + PRIOR)
        nearest = d.min(axis=1)
        out[start:start + rows] = c * np.minimum(1.0, REACH / np.maximum(nearest, 1e-12))
    return out


def _squared(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances (m x n) between the rows of ``a`` and of ``x``, summed feature by feature in order."""
    total = np.square(a[:, :1] - x[:, 0])
    for j in range(1, a.shape[1]):
        step = a[:, j:j + 1] - x[:, j]
        total += np.square(step, out=step)
    return total
