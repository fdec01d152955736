"""The neighbour correction: a kernel's calibrated time scaled by how far the measured kernels nearest to it missed.

The physical model of ``solkit.prediction`` cannot know every choice a library makes (cuBLAS's and
cuDNN's kernel heuristics, split-K, fallback kernels, a batched GEMM that walks k serially). Where a
GPU's spec ships a bank of measured kernels (``measured.neighbours``: a JSON file beside the spec,
written by ``python -m solkit.calibration fit --write``), each kernel's body is multiplied by exp(c):

    c = min(1, REACH / d_1) * sum_i w_i r_i / (PRIOR + sum_i w_i)   over the K nearest banked kernels of its key
    w_i = 1 / (d_i + SOFTEN),  d_i = Euclidean distance between log2 features (d_1 the nearest)
    r_i = log(measured / modelled) of banked kernel i: its case's whole miss put on its case's main kernel
          (the kernel with the longest modelled body), log(max(measured - rest, body / 4) / body)

A kernel's key: its calibration key, kind, precision (fp16 shares bf16's kernels), a conv's layout,
and the implementation variants that apply to it (``skinny``, ``misaligned``, ``depthwise``, ...).
Its features, log2 of each (at least 1) quantized to 1/STEP octave: a GEMM's m, n, k and batch; a
conv's m, n, k, groups, channels per group and bytes read; attention's queries, keys, head dim and
batch; a row-wise kernel's rows, width and bytes; any other its bytes and FLOPs. A key with no bank
entry is not corrected, nor is any GPU whose spec has no bank (an uncalibrated GPU borrows none).
Nothing here can take a prediction below T_SOL: ``predict`` floors every kernel and the workload there.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .errors import SpecError

__all__ = ["K", "SOFTEN", "REACH", "PRIOR", "STEP", "SHARED_PRECISIONS", "Neighbours", "load_neighbours", "bank_key",
           "variant_key", "features", "residual"]

#: neighbours averaged per kernel
K = 5
#: octaves added to each distance before it is inverted into a weight (an exact match is not trusted alone)
SOFTEN = 0.5
#: octaves of distance beyond which the correction fades (as REACH / distance to the nearest banked kernel)
REACH = 2.0
#: the weight of the physical model's own answer (c = 0) beside the neighbours' (few or far neighbours move it less)
PRIOR = 0.5
#: features are quantized to 1/STEP octave (so that a sweep's shapes share their lookups)
STEP = 8
#: precisions that run the same kernels as another's (their bank is shared)
SHARED_PRECISIONS: Mapping[str, str] = {"fp16": "bf16"}
#: how many features each tag of ``features`` has (a bank key's last field before its variants)
WIDTHS: Mapping[str, int] = {"conv": 6, "gemm": 4, "rows": 3, "flat": 2}
#: the largest |residual| a bank may hold (e^10: 22,026 times off; the builder's are at least log 1/4)
MAX_RESIDUAL = 10.0
#: a memo of corrections per loaded bank is cleared when it reaches this many entries
MEMO_LIMIT = 1 << 16
#: a sweep's distinct shapes are compared with the bank in blocks of at most this many distances
BLOCK = 1 << 22


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


def features(kernel: Any) -> tuple[str, Optional[str], list[Any]]:
    """(tag, layout, log2 features) of a ``Kernel``: what the bank compares it by."""
    g = kernel.gemm
    if g is not None and kernel.kind == "conv" and g.channels is not None:
        return "conv", g.layout, [_log2(v) for v in (g.m, g.n, g.k, g.batch, g.channels, kernel.bytes_read)]
    if g is not None:
        return "gemm", g.layout, [_log2(v) for v in (g.m, g.n, g.k, g.batch)]
    nbytes = kernel.bytes_read + kernel.bytes_written
    if kernel.rows is not None:
        return "rows", None, [_log2(v) for v in (kernel.rows.number, kernel.rows.width, nbytes)]
    return "flat", None, [_log2(v) for v in (nbytes, kernel.vector_flops + kernel.matrix_flops)]


def residual(measured: float, body: float, rest: float) -> float:
    """log(measured / modelled) of a case's main kernel: the case's whole miss put on it (at least body / 4)."""
    return math.log(max(measured - rest, 0.25 * body) / body)


class Neighbours:
    """A loaded bank: per key, the features (n x d, in octaves) and residuals of its measured kernels.

    ``banks`` gives the features quantized (integers, 1/STEP octave); they are kept in octaves, converted once.
    """

    __slots__ = ("source", "gpu", "_banks", "_memo", "_size")

    def __init__(self, source: str, banks: Mapping[str, tuple[np.ndarray, np.ndarray]], gpu: str = "") -> None:
        self.source = source
        self.gpu = gpu
        self._banks = {key: (np.asarray(points, dtype=float) / STEP, np.asarray(residuals, dtype=float))
                       for key, (points, residuals) in banks.items()}
        self._memo: dict[Any, float] = {}
        self._size = sum(len(r) for _, r in self._banks.values())

    def __len__(self) -> int:
        return self._size

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

    def correction(self, key: str, variants: Sequence[tuple[str, Any]], feats: Sequence[Any]) -> Any:
        """The log factor c of a kernel (``bank_key``, its variants as (name, applies), its log2 features); 0 where unbanked."""
        if all(type(m) is bool or isinstance(m, np.bool_) for _, m in variants) and not any(
                type(f) is not float and isinstance(f, np.ndarray) for f in feats):
            full = variant_key(key, [name for name, m in variants if m])
            bank = self._banks.get(full)
            if bank is None:
                return 0.0
            q = tuple(int(round(f * STEP)) for f in feats)
            memo = self._memo.get((full, q))
            if memo is None:
                if len(self._memo) >= MEMO_LIMIT:
                    self._memo.clear()
                memo = self._memo[(full, q)] = float(_nearest(bank, np.array([q], dtype=np.int64))[0])
            return memo
        return self._sweep(key, variants, feats)

    def _sweep(self, key: str, variants: Sequence[tuple[str, Any]], feats: Sequence[Any]) -> np.ndarray:
        shape = np.broadcast_shapes(*(np.shape(f) for f in feats), *(np.shape(m) for _, m in variants))
        # only the features and variants that vary are spread over the sweep; the rest stay one value
        q: list[Any] = [np.rint(np.multiply(f, STEP)).astype(np.int64).ravel() if np.ndim(f) else int(round(float(f) * STEP))
             for f in (np.broadcast_to(f, shape) if np.ndim(f) and np.shape(f) != shape else f for f in feats)]
        code: Any = 0
        for bit, (_, m) in enumerate(variants):
            if np.ndim(m):
                code = code | (np.broadcast_to(m, shape).ravel().astype(bool).astype(np.int64) << bit)
            elif m:
                code = code | 1 << bit
        out = np.zeros(int(np.prod(shape)))
        for c in (np.flatnonzero(np.bincount(code)) if np.ndim(code) else (code,)):
            full = variant_key(key, [name for bit, (name, _) in enumerate(variants) if c >> bit & 1])
            bank = self._banks.get(full)
            if bank is None:
                continue
            where = np.flatnonzero(code == c) if np.ndim(code) and code.min() != code.max() else None
            varying = [j for j, v in enumerate(q) if np.ndim(v)]
            if not varying:
                out[slice(None) if where is None else where] = _nearest(bank, np.array([q], dtype=np.int64))[0]
                continue
            cells, inverse = _distinct(np.stack([q[j] if where is None else q[j][where] for j in varying]))
            points = np.empty((cells.shape[1], len(q)), dtype=np.int64)
            for j, v in enumerate(q):
                points[:, j] = v if not np.ndim(v) else cells[varying.index(j)]
            values = _nearest(bank, points)[inverse]
            if where is None:
                out = values
            else:
                out[where] = values
        return out.reshape(shape)


def _distinct(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct columns of the d x n integer array ``q``, the index of each column's among them)."""
    low = q.min(axis=1)
    span = q.max(axis=1) - low + 1
    cells_total = int(min(np.prod(span.astype(float)), 1 << 62))
    if cells_total <= min(1 << 24, 4 * q.shape[1] + 4096):  # a small grid for its points: counting, not sorting
        strides = np.cumprod(np.concatenate(([1], span[:-1])))
        cell = q[0] - low[0] if len(q) == 1 else (q - low[:, None]).T @ strides
        present = np.flatnonzero(np.bincount(cell, minlength=cells_total))
        lookup = np.empty(cells_total, dtype=np.int64)
        lookup[present] = np.arange(present.size)
        cells = low[:, None] + (present[None, :] // strides[:, None]) % span[:, None]
        return cells, lookup[cell]
    cells, inverse = np.unique(q, axis=1, return_inverse=True)
    return cells, inverse.ravel()


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
        block = q[start:start + rows].astype(float) / STEP
        d = np.sqrt(((block[:, None, :] - x[None, :, :]) ** 2).sum(axis=2))
        kth = np.partition(d, k - 1, axis=1)[:, k - 1:k]
        w = np.where(d <= kth, 1.0 / (d + SOFTEN), 0.0)
        c = (w @ residuals) / (w.sum(axis=1) + PRIOR)
        nearest = d.min(axis=1)
        out[start:start + rows] = c * np.minimum(1.0, REACH / np.maximum(nearest, 1e-12))
    return out


def load_neighbours(path: Any, gpu: Optional[str] = None) -> Neighbours:
    """Load and check a bank file (``measured.neighbours``) of ``gpu``; problems raise ``SpecError`` naming the file.

    Checked: JSON text; ``gpu`` (the spec name it was measured for, equal to ``gpu`` when given), ``source``
    and ``keys``; under each key as many integer feature rows, each as wide as its tag says (``WIDTHS``),
    as residuals, each finite and at most ``MAX_RESIDUAL`` in size.
    """
    from pydantic import ValidationError

    from .hardware.schema import NeighbourBank  # the spec schema module (pydantic): not imported with the predictor

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{p}: no such neighbour bank (measured.neighbours names it)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: not a readable neighbour bank: {exc}") from None
    try:
        doc = NeighbourBank.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(the file)"
        came = f"; got {first['input']!r}"[:120] if first.get("type") != "json_invalid" else ""
        raise SpecError(f"{p}: field '{where}': {first['msg']}{came}") from None
    if gpu is not None and doc.gpu != gpu:
        raise SpecError(f"{p}: field 'gpu': this bank was measured on {doc.gpu!r}, not on {gpu!r}; give the spec its "
                        f"own bank or drop its measured.neighbours")
    banks = {}
    for key, entry in doc.keys.items():
        tag = key.split("|")[4] if key.count("|") == 5 else ""
        width = WIDTHS.get(tag)
        if width is None:
            raise SpecError(f"{p}: field 'keys.{key}': a key is op|kind|precision|layout|tag|variants with tag one of "
                            f"{', '.join(WIDTHS)}; got {key!r}")
        rows = entry.features
        if not rows or any(len(row) != width for row in rows) or len(entry.residuals) != len(rows):
            raise SpecError(f"{p}: field 'keys.{key}': expected n >= 1 rows of {width} features (tag {tag!r}) and n "
                            f"residuals; got {len(entry.features)} rows of widths "
                            f"{sorted({len(r) for r in entry.features})} and {len(entry.residuals)} residuals")
        banks[key] = (np.array(rows, dtype=np.int64), np.array(entry.residuals, dtype=float))
    return Neighbours(doc.source, banks, doc.gpu)
