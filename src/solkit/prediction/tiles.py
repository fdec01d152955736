"""Work items in waves over the SMs: a GEMM's or conv's output tiles (with split-K), flash attention's query tiles
(split-KV), the memory-efficient attention's blocks and their serial walk over the key blocks.

For each candidate output tile (TM x TN) the grid has ceil(m/TM) * ceil(n/TN) * batch tiles; when that is below
the SM count, split-K spreads k over idle SMs (GEMMs; cuDNN's convs do not split); each SM runs
ceil(tiles / SMs) waves of a full tile's work. The fastest candidate is taken (NB: the library's heuristic is
not modelled). Flash attention: PyTorch's split-KV heuristic (``flash_splits``) over (query tile, head) items.

Ragged work (``Gemm.groups``: a varlen attention's sequences, a grouped GEMM's experts): the tiles are counted per
group and summed, the waves are ceil(tiles / SMs) over the actual tiles, and each wave costs the mean tile's work
(``ragged_attention_compute_time``, ``ragged_gemm_time``); with equal groups both are the padded formulas exactly.
``ragged_waves`` is the wave-by-wave view of unequal items in a given order (each wave as long as its longest).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .._num import Num, ceil, product
from ..stacks.torch211 import (ATTENTION_QUERY_TILE, EFFICIENT_KERNELS, EFFICIENT_WARPS_PER_SM, MIN_SPLIT_K,
                               SPLITKV_QUERY_TILE)
from .._validate import checked_call

__all__ = ["TILES", "gemm_compute_time", "gemm_time", "tile_waves", "attention_compute_time", "flash_splits", "decode_items",
           "efficient_kernel_class", "efficient_attention_loop", "ragged_efficient_attention_loop",
           "ragged_attention_compute_time", "ragged_gemm_time", "ragged_waves"]

#: candidate output tiles (TM, TN) of a tensor-core GEMM kernel
TILES: tuple[tuple[int, int], ...] = ((128, 256), (256, 128), (128, 128), (64, 256), (64, 128), (64, 64))


@checked_call
def gemm_compute_time(m: Any, n: Any, k: Any, batch: Any, rate: float, sms: int, split_k: bool = True) -> tuple[Num, Num]:
    """(seconds, wave efficiency) of the best tile for a [batch, m, k] @ [k, n] GEMM at ``rate`` FLOP/s (``gemm_time``)."""
    seconds, efficiency, _ = gemm_time(m, n, k, batch, rate, sms, split_k)
    return seconds, efficiency


def gemm_time(m: Any, n: Any, k: Any, batch: Any, rate: float, sms: int, split_k: bool = True) -> tuple[Num, Num, Num]:
    """(seconds, wave efficiency, largest tiles) of the best tile for a [batch, m, k] @ [k, n] GEMM at ``rate`` FLOP/s.

    Largest tiles: the output tiles of 128x256 or 256x128, the fewer (what ``tile_waves`` counts).

    For each tile TM x TN: tiles = ceil(m/TM) * ceil(n/TN) * batch; split = clip(floor(SMs / tiles),
    1, max(1, floor(k / MIN_SPLIT_K))); seconds = ceil(tiles * split / SMs) waves of
    2*TM*TN*ceil(k / split) FLOPs at rate / SMs each. Wave efficiency = useful FLOPs / FLOPs the
    waves occupy (1.0: no tile or wave loss).

    ``split_k=False`` (cuDNN's implicit-GEMM convs): split = 1 always.

    A sweep computes the same numbers in two regimes: where every tile's grid has at least SMs tiles
    nothing splits, and the seconds are the fewest units (ceil(tiles / SMs) x TM*TN / 64^2) times
    2*64*64*ceil(k) / (rate / SMs), multiplied once (bit for bit each tile's own product, the best taken);
    the elements whose largest tiles leave SMs idle take every tile in both regimes (``_gemm_sweep``).
    The fewest units are the 64x64 tile's: a tile of a = TM*TN / 64^2 needs T_a >= T_64 / a tiles
    (2 ceil(m/128) >= ceil(m/64), ...), so a * ceil(T_a / SMs) >= ceil(a T_a / SMs) >= ceil(T_64 / SMs), exactly
    wherever the tile counts are exact integers (below 2^53; a test holds it to every tile's minimum).
    """
    if type(m) is float and type(n) is float and type(k) is float and type(batch) is float:  # pragma: no mutate
        return _gemm_compute_time_one(m, n, k, batch, rate, sms, split_k)
    shape = np.broadcast_shapes(np.shape(m), np.shape(n), np.shape(k), np.shape(batch))
    if not shape:  # numpy scalars
        return _gemm_compute_time_one(float(m), float(n), float(k), float(batch), rate, sms, split_k)
    narrow = _narrow_units(m, n, batch, sms, shape)
    if narrow is not None:
        if narrow[0] is None:  # mostly small grids
            return _full(m, n, k, batch, rate, sms, split_k, shape, narrow[1])
        return _finish(narrow[0], narrow[1], m, n, k, batch, rate, sms, split_k, shape)
    rows = {tm: _ceil_div(m, tm) for tm in (64, 128, 256)}
    one = type(batch) is float and batch == 1.0  # x * 1.0 is x: the product's pass is skipped
    cols = {tn: _ceil_div(n, tn) if one else product(_ceil_div(n, tn), batch) for tn in (64, 128, 256)}
    largest = np.minimum(rows[128] * cols[256], rows[256] * cols[128])
    if type(largest) is not np.ndarray or largest.shape != shape:  # k alone swept, or m and n across each other
        largest = np.broadcast_to(largest, shape).astype(float)
    if 2 * int(np.count_nonzero(largest < sms)) > int(np.prod(shape)):  # mostly small grids: every element the full way
        return _full(m, n, k, batch, rate, sms, split_k, shape, largest)
    tiles = rows[64] * cols[64]
    if np.size(tiles) and float(np.max(tiles)) >= 2.0 ** 53:  # (not every count exact: each tile's, the fewest taken)
        units = _units_of_every_tile(rows, cols, sms, shape)
    else:  # split = 1: the 64x64 tile's units are the fewest (the docstring)
        units = np.broadcast_to(tiles, shape).astype(float) if np.shape(tiles) != shape else tiles
        np.divide(units, sms, out=units)
        np.ceil(units, out=units)
    return _finish(units, largest, m, n, k, batch, rate, sms, split_k, shape)


def _units_of_every_tile(rows: dict[int, Any], cols: dict[int, Any], sms: int, shape: tuple[int, ...]) -> np.ndarray:
    """The fewest units (ceil(tiles / SMs) x TM*TN / 64^2) over every tile, in float64 (tile counts beyond 2^53)."""
    units: Any = None
    for tm, tn in TILES:
        waves = np.broadcast_to(rows[tm] * cols[tn], shape) / sms
        np.ceil(waves, out=waves)
        if tm * tn != 64 * 64:
            np.multiply(waves, float(tm * tn // (64 * 64)), out=waves)
        units = waves if units is None else np.minimum(units, waves, out=units)
    return units


#: a sweep's tile counts are held in float32 where every one stays below this (exact, and so is ceil(tiles / SMs))
NARROW_TILES = float(1 << 22)


def _narrow_units(m: Any, n: Any, batch: Any, sms: int, shape: tuple[int, ...]) -> Optional[tuple[Any, np.ndarray]]:
    """(fewest units, largest tiles) of ``gemm_time``'s tile loop in float32 (units None where most of the sweep's
    largest tiles leave SMs idle: every element takes the full way), where m and n are sweeps of the whole shape,
    batch an integer and every tile count below ``NARROW_TILES`` (integers below 2^24 are float32's exactly, and
    T / SMs, at least 1/SMs from an integer unless one, rounds to float32 on the integer's side: its ceiling is
    exact); None otherwise (the float64 loop, the same numbers)."""
    if not (type(m) is np.ndarray and type(n) is np.ndarray and m.shape == shape and n.shape == shape
            and m.dtype == np.float64 and n.dtype == np.float64 and type(batch) is float and batch.is_integer()
            and batch >= 1.0 and m.size):  # (an empty sweep: the float64 loop, which takes it)
        return None
    top_m, top_n = float(m.max()), float(n.max())
    if not (top_m < NARROW_TILES * 64 and top_n < NARROW_TILES * 64):  # (NaN or infinite too: the float64 loop)
        return None
    if not (math.ceil(top_m / 64) * math.ceil(top_n / 64) * batch < NARROW_TILES and min(float(m.min()), float(n.min())) > 0):
        return None
    tmp = np.empty(shape)

    def counted(x: np.ndarray) -> np.ndarray:  # ceil(x / 64) in float32: an integer below 2^22, exact
        np.multiply(x, 1.0 / 64, out=tmp)  # x / 64 exactly (a power of two)
        return np.ceil(tmp, out=np.empty(shape, dtype=np.float32))

    def halved(x: np.ndarray, out: np.ndarray) -> np.ndarray:  # ceil(x / 2t) = ceil(ceil(x / t) / 2), exactly
        np.multiply(x, np.float32(0.5), out=out)
        return np.ceil(out, out=out)

    # four float32 buffers, each reused once its counts are spent; every product an integer below 2^22 (exact in
    # any order: the batch multiplies the rows' and columns' product)
    rows, cols = counted(m), counted(n)  # the 64-row and 64-column tile counts
    units = np.multiply(rows, cols)  # the 64x64 tile's, times the batch below
    halved(rows, rows)  # 128 rows
    halved(cols, cols)  # 128 columns
    largest = halved(cols, np.empty(shape, dtype=np.float32))  # 256 columns
    _times(np.multiply(largest, rows, out=largest), batch)  # 128 x 256
    halved(rows, rows)  # 256 rows
    np.minimum(largest, _times(np.multiply(rows, cols, out=rows), batch), out=largest)  # 256 x 128
    np.copyto(tmp, largest)  # the largest tiles in float64 (exact), in the scaled sizes' buffer
    if 2 * int(np.count_nonzero(largest < sms)) > largest.size:  # mostly small grids: no units
        return None, tmp
    _times(units, batch)  # the 64x64 tile's units, the fewest (gemm_time)
    np.divide(units, np.float32(sms), out=units)
    np.ceil(units, out=units)
    return units, tmp


def _times(x: np.ndarray, batch: float) -> np.ndarray:
    """``x`` times a whole batch, in place (float32 tile counts; a batch of 1 leaves them)."""
    if batch != 1.0:
        np.multiply(x, np.float32(batch), out=x)
    return x


def _full(m: Any, n: Any, k: Any, batch: Any, rate: float, sms: int, split_k: bool, shape: tuple[int, ...],
          largest: Any) -> tuple[Num, Num, Num]:
    """``gemm_time``'s figures with every element the full way (``_gemm_sweep``: most of the sweep splits k)."""
    fm, fn, fb = (float(x) if np.ndim(x) == 0 else np.broadcast_to(x, shape).reshape(-1) for x in (m, n, batch))
    best = _gemm_sweep(fm, fn, np.broadcast_to(k, shape).reshape(-1), fb, rate, sms, split_k).reshape(shape)
    useful = product(2.0 / rate, m, n, k, batch)
    return best, np.divide(useful, best, out=useful if type(useful) is np.ndarray and useful.shape == shape
                           else None), largest


def _finish(units: Any, largest: Any, m: Any, n: Any, k: Any, batch: Any, rate: float, sms: int, split_k: bool,
            shape: tuple[int, ...]) -> tuple[Num, Num, Num]:
    """``gemm_time``'s figures from the fewest units and the largest tiles: seconds (split-K where some grid leaves SMs
    idle), wave efficiency, largest tiles."""
    base = 2.0 * 64 * 64 / (rate / sms)
    whole: Any = float(np.ceil(k)) if np.ndim(k) == 0 else np.ceil(k)  # split = 1: ceil(k / 1), as one shape's
    whole *= base
    if units.dtype == np.float64:
        best = np.multiply(units, whole, out=units)
    else:  # float32 units (``_narrow_units``): widened exactly by the float64 product, into ceil(k)'s buffer if it can
        best = np.multiply(units, whole, dtype=np.float64,
                           out=whole if type(whole) is np.ndarray and whole.shape == shape and whole.dtype == np.float64
                           else None)
    # a grid of fewer tiles than SMs for some tile (the largest tiles, the fewest): split-K there, on those elements
    small = np.flatnonzero(largest < sms)
    if small.size:
        pm, pn, pk, pb = (_at(x, shape, small) for x in (m, n, k, batch))
        # NB: .flat, not reshape(-1): best may take a Fortran-ordered k's buffer, whose reshape is a copy
        best.flat[small] = _gemm_sweep(pm, pn, pk, pb, rate, sms, split_k)
    useful = product(2.0 / rate, m, n, k, batch)  # seconds at the rate, no tile or wave loss
    efficiency = np.divide(useful, best, out=useful if type(useful) is np.ndarray and useful.shape == best.shape else None)
    return best, efficiency, largest


def _at(x: Any, shape: tuple[int, ...], flat: np.ndarray) -> np.ndarray:
    """A figure's elements at the flat positions ``flat`` of the sweep's ``shape`` (a scalar's: filled)."""
    if np.ndim(x) == 0:
        return np.full(flat.size, float(x))
    return (x if np.shape(x) == shape else np.broadcast_to(x, shape)).reshape(-1)[flat]


def _gemm_sweep(m: Any, n: Any, k: np.ndarray, batch: Any, rate: float, sms: int, split_k: bool = True) -> np.ndarray:
    """``gemm_time``'s seconds of a sweep (k a 1-D array, the others of its length or scalars), every tile in both
    regimes.

    A grid of at least SMs tiles splits nothing (split = 1: ceil(tiles / SMs) waves of the whole k); a smaller
    one fits one wave (tiles * split <= SMs) of ceil(k / split). ``gemm_time`` takes it where some tile's grid
    is smaller than the SMs (a test holds both to ``_gemm_compute_time_one``).
    """
    per_sm = rate / sms
    max_split = np.maximum(1.0, np.floor_divide(k, MIN_SPLIT_K)) if split_k else np.ones(k.shape)
    rows = {tm: _ceil_div(m, tm) for tm in (64, 128, 256)}
    cols = {tn: product(_ceil_div(n, tn), batch) for tn in (64, 128, 256)}
    tiles, t = np.empty(k.shape), np.empty(k.shape)
    whole = np.ceil(k)  # split = 1: ceil(k / 1), as one shape's
    best: Any = None
    for tm, tn in TILES:
        np.multiply(rows[tm], cols[tn], out=tiles)
        per_wave = 2.0 * tm * tn / per_sm  # seconds of one tile's multiply-adds per element of k
        np.divide(tiles, sms, out=t)
        np.ceil(t, out=t)
        np.multiply(t, per_wave * whole, out=t)  # split = 1: ceil(tiles / SMs) waves of all of k
        few = np.flatnonzero(tiles < sms)
        if few.size:  # one wave; split-K spreads k over the idle SMs
            split = np.clip(np.floor_divide(sms, tiles[few]), 1.0, max_split[few])
            t[few] = per_wave * np.ceil(k[few] / split)
        if best is None:
            best, t = t, np.empty(k.shape)
        else:
            np.minimum(best, t, out=best)
    return best


def tile_waves(tiles: Any, sms: int, nbytes: Any) -> tuple[Any, Any]:
    """(waves, bytes per tile) of ``tiles`` output tiles over the SMs."""
    return ceil(tiles / sms), nbytes / tiles


def _ceil_div(x: Any, d: int) -> Any:
    """ceil(x / d) (one buffer for an array)."""
    if type(x) is float:
        return float(math.ceil(x / d))
    out = np.divide(x, d)
    return np.ceil(out, out=out)


def _gemm_compute_time_one(m: float, n: float, k: float, batch: float, rate: float, sms: int,
                           split_k: bool = True) -> tuple[float, float, float]:
    """``gemm_time`` of one shape, in plain Python (a test checks that both agree)."""
    r64, r128, r256, c64, c128, c256 = (math.ceil(m / 64), math.ceil(m / 128), math.ceil(m / 256), math.ceil(n / 64),
                                        math.ceil(n / 128), math.ceil(n / 256))
    largest = min(r128 * c256 * batch, r256 * c128 * batch)
    if largest >= sms:  # every tile's grid fills the SMs: no split, the fewest units of 64x64 tile-waves (gemm_time)
        tiles = r64 * c64 * batch
        units = math.ceil(tiles / sms) if tiles < 2.0 ** 53 else min(  # the 64x64 tile's, the fewest (gemm_time)
            math.ceil(r128 * c256 * batch / sms) * 8, math.ceil(r256 * c128 * batch / sms) * 8,
            math.ceil(r128 * c128 * batch / sms) * 4, math.ceil(r64 * c256 * batch / sms) * 4,
            math.ceil(r64 * c128 * batch / sms) * 2, math.ceil(tiles / sms))
        best = units * (2.0 * 64 * 64 / (rate / sms) * math.ceil(k))
        return best, 2.0 * m * n * k * batch / rate / best, float(largest)
    per_sm = rate / sms
    max_split = max(1.0, k // MIN_SPLIT_K) if split_k else 1.0
    best = largest = math.inf
    for tm, tn in TILES:
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
        if tm * tn == 128 * 256:
            largest = min(largest, tiles)
        split = min(max(float(sms // tiles), 1.0), max_split)
        best = min(best, math.ceil(tiles * split / sms) * (2.0 * tm * tn / per_sm * math.ceil(k / split)))
    return best, 2.0 * m * n * k * batch / rate / best, float(largest)


def attention_compute_time(m: Any, n: Any, d: Any, batch: Any, t_flat: Any, sms: int) -> tuple[Any, Any, Any, Any]:
    """(seconds, wave efficiency, split-KV?, waves) of a flash attention kernel whose FLOPs take ``t_flat`` at full rate.

    m = query rows per work item's head group, n = keys, d = head dim, batch = batch x KV heads
    (``solkit.ops.attention`` packs GQA query heads into m). As PyTorch's flash_api.cpp decides:
    work items = ceil(m / 64) * batch; when they fill less than 80% of the SMs, the keys are split
    into ``flash_splits`` parts (blocks of 256 keys for d <= 64, else 128), each its own item, and
    a combine kernel follows. Unsplit, a work item is 128 queries. Seconds = t_flat over the wave
    efficiency, times the padding of m to the query tile (a 64-row tile computes 64 rows).
    """
    if type(m) is float and type(n) is float and type(d) is float and type(batch) is float:  # pragma: no mutate
        items = math.ceil(m / SPLITKV_QUERY_TILE) * batch
        splits = flash_splits(items, math.ceil(n / (256 if d <= 64 else 128)), sms)
        tile = SPLITKV_QUERY_TILE if splits > 1 else ATTENTION_QUERY_TILE
        work = math.ceil(m / tile) * batch * splits
        wave = work / (math.ceil(work / sms) * sms)
        pad = math.ceil(m / tile) * tile / m
        return t_flat * pad / wave, wave, splits > 1, float(math.ceil(work / sms))
    shape = np.broadcast_shapes(np.shape(m), np.shape(n), np.shape(d), np.shape(batch))
    m, n, d, batch = (np.broadcast_to(np.asarray(x, dtype=float), shape) for x in (m, n, d, batch))
    items = np.ceil(m / SPLITKV_QUERY_TILE) * batch
    blocks = np.ceil(n / np.where(d <= 64, 256.0, 128.0))
    split_kv = _splits(items, blocks, sms)
    tiles = np.where(split_kv > 1, SPLITKV_QUERY_TILE, ATTENTION_QUERY_TILE)
    work_items = np.ceil(m / tiles) * batch * split_kv
    efficiency = work_items / (np.ceil(work_items / sms) * sms)
    padding = np.ceil(m / tiles) * tiles / m
    return t_flat * padding / efficiency, efficiency, split_kv > 1, np.ceil(work_items / sms)


def _splits(items: np.ndarray, blocks: np.ndarray, sms: int) -> np.ndarray:
    """``flash_splits`` over a sweep: 1 where the items fill 80% of the SMs, else once per distinct (items, blocks)."""
    out = np.ones(items.shape)
    few = np.flatnonzero(items < 0.8 * sms)
    if few.size:
        pairs, inverse = np.unique(np.stack([items.reshape(-1)[few], blocks.reshape(-1)[few]]), axis=1,
                                   return_inverse=True)
        picked = np.array([flash_splits(float(i), float(b), sms) for i, b in pairs.T], dtype=float)
        out.reshape(-1)[few] = picked[inverse.reshape(-1)]
    return out


@checked_call
def flash_splits(items: float, key_blocks: float, sms: int, max_splits: int = 128) -> int:
    """The split-KV count flash attention's ``num_splits_heuristic`` picks (1: no split).

    Among eligible splits s (s = 1, or ceil(blocks/s) != ceil(blocks/(s-1))) up to min(128, SMs,
    key blocks), the smallest whose wave efficiency (items*s/SMs over its ceiling) is at least
    0.85 x the best; 1 when the items already fill 80% of the SMs.
    """
    if items >= 0.8 * sms:
        return 1
    top = int(min(max_splits, sms, key_blocks))
    eff = [0.0] * (top + 1)
    for s in range(1, top + 1):
        if s == 1 or math.ceil(key_blocks / s) != math.ceil(key_blocks / (s - 1)):
            waves = items * s / sms
            eff[s] = waves / math.ceil(waves)
    best = max(eff)
    return next((s for s in range(1, top + 1) if eff[s] and eff[s] >= 0.85 * best), 1)



def _efficient_tile(d: float) -> tuple[float, float, float]:
    """(tile width, queries per block, keys per block) of the memory-efficient kernel for one head dim ``d``: the
    first of ``EFFICIENT_KERNELS`` whose kMaxK holds d; the width is that kMaxK for the register-resident kernels
    (64, 128), d itself for the gmem one."""
    (k1, q1, b1), (k2, q2, b2), (_, q3, b3) = EFFICIENT_KERNELS
    return (k1, q1, b1) if d <= k1 else (k2, q2, b2) if d <= k2 else (d, q3, b3)


def efficient_kernel_class(d: Any) -> tuple[Any, Any]:
    """(the 64 x 128 kernel's?, the 32 x 128 gmem one's?) of head dims ``d``: the first of ``EFFICIENT_KERNELS`` whose
    kMaxK holds d (neither: the 64 x 64 kernel's); Python bools for a float, boolean arrays for an array."""
    (k1, _, _), (k2, _, _), _ = EFFICIENT_KERNELS
    return (d > k1) & (d <= k2), d > k2


def efficient_attention_loop(m: Any, n: Any, d: Any, batch: Any, share: Any, precision: str,
                             sms: int) -> tuple[Any, Any, Any, Any, Any]:
    """(tile FLOPs, waves, key blocks a wave walks, the 64 x 128 kernel?, the 32 x 128 one?) of the memory-efficient
    attention forward (``stacks.torch211.EFFICIENT_KERNELS``).

    m = queries per head, n = keys, d = head dim, batch = batch x heads, share = the unmasked share of the m x n pairs
    (1 without a mask). The first kernel whose kMaxK holds d: QB queries x KB keys a block, warps = QB/32 x KB/32;
    blocks = ceil(m / QB) x batch, each walking its ceil(n / KB) key blocks serially (a causal block stops at its
    last query's keys: share x that on average), ``EFFICIENT_WARPS_PER_SM // warps`` resident on an SM.
    waves = ceil(blocks / (SMs x resident)); a wave walks max(longest / waves, mean) key blocks, so waves x that is
    the longest block's walk or the waves' mean walks, whichever is longer. Tile FLOPs: 4 QB KB W a block's key
    block (QK^T and PV over whole tiles; W the class's kMaxK, 64 or 128, for the register-resident kernels, d for the
    gmem one), summed over the blocks' mean walks. NB: the kernel's QK^T steps over d in 32s and its PV over a key
    block's width, and fp32 runs 3xTF32 MMAs, timed at the fp32 rate: the fitted efficiencies absorb both; a causal
    block's walk is share x the longest (the kernel's is ceil(min((i+1) QB, n) / KB) for block i: about half a key
    block more).
    """
    budget = EFFICIENT_WARPS_PER_SM[precision]  # ops.attention refuses other precisions for this kernel
    (k1, q1, b1), (k2, q2, b2), (_, q3, b3) = EFFICIENT_KERNELS
    qb: Any
    kb: Any
    resident: Any
    width: Any
    if type(m) is float and type(n) is float and type(d) is float and type(batch) is float and type(share) is float:
        width, qb, kb = _efficient_tile(d)
        resident = float(budget // int(qb * kb / 1024.0))
        blocks = math.ceil(m / qb) * batch
        longest = float(math.ceil(n / kb))
        mean = longest * share
        waves = float(math.ceil(blocks / (sms * resident)))
        return (4.0 * qb * kb * width * blocks * mean, waves, max(longest / waves, mean), *efficient_kernel_class(d))
    shape = np.broadcast_shapes(np.shape(m), np.shape(n), np.shape(d), np.shape(batch), np.shape(share))
    m, n, d, batch, share = (np.broadcast_to(np.asarray(x, dtype=float), shape) for x in (m, n, d, batch, share))
    wide, gmem = efficient_kernel_class(d)
    qb = np.where(gmem, q3, np.where(wide, q2, q1))
    kb = np.where(gmem, b3, np.where(wide, b2, b1))
    resident = np.floor(budget / np.floor(qb * kb / 1024.0))
    blocks = np.ceil(m / qb) * batch
    longest = np.ceil(n / kb)
    mean = longest * share
    waves = np.ceil(blocks / (sms * resident))
    width = np.where(gmem, d, np.where(wide, k2, k1))
    return 4.0 * qb * kb * width * blocks * mean, waves, np.maximum(longest / waves, mean), wide, gmem


def ragged_efficient_attention_loop(groups: Any, heads: float, share: float, precision: str,
                                    sms: int) -> tuple[float, float, float, bool, bool]:
    """``efficient_attention_loop`` of a varlen batch (``groups``: (queries, keys, head dim) per sequence, ``heads``
    blocks per query block): blocks = sum ceil(q_i / QB) x heads, each walking its own sequence's ceil(k_i / KB) key
    blocks (x ``share``, the batch's unmasked share: NB one share for every sequence); the longest walk is the longest
    sequence's. With equal sequences this is ``efficient_attention_loop`` of the padded call."""
    m, n, d = _columns(groups)
    head = float(d[0])
    width, qb, kb = _efficient_tile(head)  # the class of the padded call's head dim, its blocks scaled to each sequence
    resident = float(EFFICIENT_WARPS_PER_SM[precision] // int(qb * kb / 1024.0))
    blocks = np.ceil(m / qb) * heads
    walks = np.ceil(n / kb)
    total = float(blocks.sum())
    mean = float(np.sum(blocks * walks)) * share / total
    waves = float(math.ceil(total / (sms * resident)))
    flops = 4.0 * qb * kb * width * total * mean
    return (flops, waves, max(float(walks.max()) / waves, mean), *efficient_kernel_class(head))


def decode_items(items: Any, keys: Any, d: Any, sms: int, split_items: int, split_keys: int) -> tuple[Any, Any]:
    """(splits, work items) of a decode kernel of ``items`` (sequence, KV head) pairs over ``keys`` keys each.

    Split (flash-decoding) only where at most ``split_items`` items have more than ``split_keys`` keys each, into
    ``flash_splits`` parts (blocks of 256 keys for d <= 64, else 128); work items = items x splits.
    """
    shape = np.broadcast_shapes(np.shape(items), np.shape(keys), np.shape(d))
    items_, keys_, d_ = (np.broadcast_to(np.asarray(x, dtype=float), shape) for x in (items, keys, d))
    blocks = np.ceil(keys_ / np.where(d_ <= 64, 256.0, 128.0))
    split = np.vectorize(lambda i, b: flash_splits(float(i), float(b), sms), otypes=[float])(items_, blocks)
    splits = np.where((items_ <= split_items) & (keys_ > split_keys), split, 1.0)
    if not shape:
        return float(splits), float(items_ * splits)
    return splits, items_ * splits


def _columns(groups: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (m, n, k) of each group as three float64 arrays."""
    table = np.asarray(groups, dtype=float).reshape(-1, 3)
    return table[:, 0], table[:, 1], table[:, 2]


def ragged_attention_compute_time(groups: Any, per_group: Any, t_flat: Any, sms: int,
                                  split: bool = True) -> tuple[float, float, bool, float]:
    """(seconds, wave efficiency, split-KV?, waves) of a varlen flash attention kernel: ``attention_compute_time``
    over each sequence's own tiles.

    groups: (m_i, n_i, d) per sequence (queries, keys, head dim); per_group: work items per query tile (heads).
    ``split``: whether the kernel may split the keys; PyTorch's ``mha_varlen_fwd`` (flash_api.cpp) splits only a
    paged KV cache or a decode whose query heads it packs as rows (``seqlenq_ngroups_swapped``: one query, fewer KV
    heads than query heads, no dropout); else one split and 128-query tiles. Where it may, items = sum ceil(m_i /
    64) * per_group decide the split-KV count (``flash_splits``, key blocks of the longest sequence); work = sum ceil(m_i / tile) * per_group * splits over the SMs; wave efficiency = work / (ceil(work /
    SMs) * SMs); padding = sum ceil(m_i / tile) * tile * n_i / sum m_i * n_i (the queries padded to the tile,
    weighted by each sequence's keys). Seconds = t_flat * padding / wave efficiency: every wave costs the mean tile
    (NB: unequal tiles finish unevenly; ``prediction.kernel`` adds the longest tile's tail times the keys' spread; causal, all of it).
    With equal sequences this is ``attention_compute_time`` of the padded call.
    """
    m, n, d = _columns(groups)
    items = float(np.sum(np.ceil(m / SPLITKV_QUERY_TILE))) * per_group
    splits = flash_splits(items, math.ceil(float(n.max()) / (256 if d[0] <= 64 else 128)), sms) if split else 1
    tile = SPLITKV_QUERY_TILE if splits > 1 else ATTENTION_QUERY_TILE
    tiles = np.ceil(m / tile)
    work = float(tiles.sum()) * per_group * splits
    waves = math.ceil(work / sms)
    wave = work / (waves * sms)
    pad = float(np.sum(tiles * tile * n) / np.sum(m * n))
    return float(t_flat * pad / wave), wave, splits > 1, float(waves)


def ragged_gemm_time(groups: Any, per_group: Any, rate: float, sms: int) -> tuple[Any, Any, Any]:
    """(seconds, wave efficiency, largest tiles) of a grouped GEMM: ``gemm_time`` with the tiles summed over groups.

    For each tile TM x TN: tiles_i = ceil(m_i/TM) * ceil(n_i/TN) * per_group, each 2*TM*TN*k_i FLOPs at rate / SMs;
    seconds = ceil(sum tiles_i / SMs) waves, each the mean tile's time (sum tiles_i * t_i / sum tiles_i); the
    fastest tile is taken. A group of no rows has no tiles. NB: no split-K (``Gemm.split`` False), so
    with equal groups this is ``gemm_time`` of the batched GEMM wherever that splits nothing (tiles >= SMs).
    Wave efficiency = useful FLOPs (2 * sum m_i*n_i*k_i * per_group) at the rate / the seconds. A group's sizes may
    be arrays (a sweep of n or k): the figures then have their broadcast shape.
    """
    per_sm = rate / sms
    best: Any = math.inf
    largest: Any = math.inf
    for tm, tn in TILES:
        total: Any = 0.0
        work: Any = 0.0  # seconds of all the tiles at one SM's rate
        for m, n, k in groups:
            tiles = _ceil_div(m, tm) * _ceil_div(n, tn) * per_group
            total, work = total + tiles, work + tiles * (2.0 * tm * tn / per_sm) * k
        if tm * tn == 128 * 256:
            largest = np.minimum(largest, total)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(total > 0, np.ceil(total / sms) * work / np.maximum(total, 1.0), math.inf)
        best = np.minimum(best, t)
    useful = sum(2.0 * m * n * k for m, n, k in groups) * per_group / rate
    return _plain(best), _plain(useful / best), _plain(largest)


def _plain(x: Any) -> Any:
    """A 0-d figure as a float; an array as it is."""
    return float(x) if np.ndim(x) == 0 else x


@checked_call
def ragged_waves(seconds: Any, sms: int) -> tuple[float, float]:
    """(seconds, waves) of work items of unequal ``seconds`` run in the order given, ``sms`` at a time, wave by wave:
    each wave lasts as long as its longest item. NB: a real block scheduler starts the next item when one ends, so
    this is the wave-synchronous view; the same items in another order (longest first) can take fewer seconds."""
    t = np.asarray(seconds, dtype=float).reshape(-1)
    waves = math.ceil(t.size / sms)
    padded = np.zeros(waves * sms)
    padded[:t.size] = t
    return float(padded.reshape(waves, sms).max(axis=1).sum()), float(waves)
