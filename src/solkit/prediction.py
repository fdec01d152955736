"""Calibrated expected time: what a workload will really take on a GPU, not just its bound.

The model, every parameter named once (``solkit.hardware.schema.PARAMETERS``) and measured or
fitted (``measured:`` in the spec):

    t = launch_floor + sum_k count_k * body_k + (launches - 1) * kernel_gap
    body_k = kernel_latency[key] + waves_k * wave_latency[key]
             + max(softmax_p(t_compute_k / compute_efficiency[key], t_memory_k / memory_efficiency[key]),
                   waves_k * block_bytes_k / block_bandwidth[key],  (row-wise kernels, GEMMs, convs)
                   waves_k * k_steps_k * kstep_latency[key])         (GEMMs and convs)

  where [key] is the kernel's calibration key: its operator (``Kernel.op``) or, where one applies,
  the operator's implementation variant ("skinny", "legacy", "misaligned", "odd", "splitkv", "depthwise",
  "unaligned", "wide", "causal", "fewindex", "upcast", "downcast": ``{op}_{variant}``), else its kind; softmax_p(a, b) = (a**p + b**p)**(1/p)
  with the fitted ``overlap_exponent`` p (p = inf is max). A key without an entry falls back.

- ``launch_floor``: the measured time of an empty kernel under the same timer; ``kernel_gap``:
  what each further launch adds; ``kernel_latency``: a kernel's fixed cost beyond its work.
- Work items come in waves over the SMs: a GEMM's or conv's largest output tiles, flash
  attention's query tiles (and key splits), a row-wise kernel's rows (``ROW_BLOCKS_PER_SM``
  blocks per SM); each wave pays ``wave_latency`` (pipeline fill, epilogue, a row's reduction).
  Latency-bound work: a GEMM tile's k loop takes at least ``kstep_latency`` per ``K_STEP``
  elements (cuBLAS splits k beyond ``SERIAL_K``); one thread block streams its bytes (a row, a
  GEMM tile's share) at most at ``block_bandwidth``, so a few blocks cannot use the whole GPU.
- ``t_memory`` = compulsory bytes / measured copy bandwidth.
- ``t_compute`` of a GEMM or implicit-GEMM conv: the tile/wave model at the measured
  large-GEMM rate of its precision. For each candidate output tile (TM x TN) the grid has
  ceil(m/TM) * ceil(n/TN) * batch tiles; when that is below the SM count, split-K spreads k
  over idle SMs (GEMMs; cuDNN's convs do not split); each SM runs ceil(tiles / SMs) waves of a
  full tile's work. The fastest candidate is taken (NB: the library's heuristic is not
  modelled). A conv's channels are padded per filter tap to ``CONV_K_TILE_BYTES``. Flash
  attention: PyTorch's split-KV heuristic (``flash_splits``) over (query tile, head) items,
  queries padded to the tile (query heads packed per KV head only for one query, as
  flash_api.cpp does); a causal kernel also waits ``CAUSAL_TAIL`` of its longest query tile.
  Vector work: the CUDA-core peak.
- Implementation variants, as the libraries choose them: cuBLAS runs tf32/fp32/fp64/int8 with
  Ampere-era kernels ("legacy"), GEMMs with k or n not a multiple of 16 bytes with narrow-load
  kernels ("misaligned", with a ``PerformanceWarning``), m or n <= ``SKINNY`` with GEMV-like
  kernels ("skinny"); cuDNN pads unaligned channels ("unaligned", in helper kernels:
  ``CUDNN_PAD``'s launches and bytes) and runs depthwise convs on CUDA cores ("depthwise");
  PyTorch's norms take a two-kernel path for widths not a multiple of 4 ("unaligned"), its
  softmax a block of up to 1,024 threads per row beyond 2,048 elements or 8 KiB ("wide"; a warp
  per row below), its index_select a serial walk over at most 16 ids ("fewindex", waves = ids)
  and a non-vectorized gather for rows not a multiple of 16 bytes ("unaligned"); a causal flash
  kernel has its own entries ("causal").

A GPU with no ``measured:`` section takes ``REFERENCE_GPU``'s measured shares of the datasheet
as its ceilings (matmul rate per precision, copy bandwidth) and that calibration's launch floor,
latencies and efficiencies, and says so in ``Prediction.notes``. Cost: one pass over the
workload's distinct kernels; plain Python for one shape, numpy for a sweep.
"""

from __future__ import annotations

import html
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Optional

from pathlib import Path

import numpy as np

from ._display import fmt_seconds, html_table, plain
from ._num import Num, any_, broadcast_to, ceil, floor, maximum, minimum, not_, product, result, shape_of, where
from ._validate import flag, positive
from .errors import ArgumentTypeError, OptionError, PerformanceWarning, SpecError
from .hardware import as_gpu, load_spec_file, shipped_dir
from .hardware.parameters import PARAMETERS, Calibration, ReadOnlyTable
from .neighbours import load_neighbours
from .ops.registry import calibration_keys
from .precision import PRECISIONS, rate_class
from .sol import link_seconds, roofline
from ._timeline import IDENTITY, Join, Map, clocks, compose, join, launch, power
from .workload import FSDP_GROUP_OP, Kernel, Pipeline, Workload, as_workload, issued_launches

if TYPE_CHECKING:  # pragma: no cover
    from .hardware.schema import GPU, Measured

__all__ = [
    "Calibration",
    "KernelTerms",
    "KernelPrediction",
    "Prediction",
    "calibration",
    "kernel_terms",
    "kernel_seconds",
    "combine",
    "gemm_compute_time",
    "soft_max",
    "predict",
    "REFERENCE_GPU",
    "TILES",
    "CHUNK_ALIGNMENT",
    "MISALIGNED_FROM",
    "misaligned_chunk",
]

#: candidate output tiles (TM, TN) of a tensor-core GEMM kernel
TILES: tuple[tuple[int, int], ...] = ((128, 256), (256, 128), (128, 128), (64, 256), (64, 128), (64, 64))
#: flash attention's query tile per work item (unsplit), and the split-KV kernel's
ATTENTION_QUERY_TILE = 128
SPLITKV_QUERY_TILE = 64
#: the share of its longest query tile a causal flash kernel runs past its balanced time (between 0, perfect
#: balance, and 1, Graham's list-scheduling bound: the longest tile starts last)
CAUSAL_TAIL = 0.5
#: thread blocks of a row-wise kernel resident on one SM (2048 threads / 128-thread blocks)
ROW_BLOCKS_PER_SM = 16
#: ops whose row-wise kernel changes implementation with the row width: their variant is "wide"; other
#: row-wise ops' is "unaligned". PyTorch's softmax (SoftMax.cu, host_softmax) runs a warp per row while the
#: row has at most WIDE_ROW elements and WIDE_ROW_BYTES bytes, else one block of min(cols, 1024) threads
#: (rounded up to a warp) per row: at most 2 such blocks fit an SM's 2,048 threads
WIDE_ROW_OPS = frozenset({"softmax"})
WIDE_ROW = 2048
WIDE_ROW_BYTES = 8192
WIDE_ROW_THREADS = 1024
#: the narrow softmax's warps take two rows each up to this many elements (WARP_BATCH in persistent_softmax.cuh)
WARP_BATCH_ROW = 128
WARP = 32.0
#: threads one SM holds (Hopper, Ampere): sets how many blocks of a row-wise kernel are resident at once
SM_THREADS = 2048
#: PyTorch's index_select (hence embedding) walks the ids serially in every thread when there are at most
#: this many (Indexing.cu, indexSelectSmallIndex): each id is one step of a dependent chain
FEW_INDICES = 16
FEW_INDEX_OPS = frozenset({"embedding"})
#: elements a row's width must be a multiple of for the vectorized kernel (PyTorch's layer/RMS norm load 4
#: elements at a time whatever the dtype); other row-wise ops need 16 bytes; the rest take a slower path
ROW_VECTOR = {"layernorm": 4, "rmsnorm": 4}
#: split-K never cuts k below this many elements per split
MIN_SPLIT_K = 256
#: an implicit-GEMM conv loads each filter tap's channels in k-tiles of this many bytes (C = 8 bf16 channels
#: of a 7x7 filter compute as 32)
CONV_K_TILE_BYTES = 64
#: a GEMM or conv tile's k loop advances this many elements of k per step
K_STEP = 64
#: cuBLAS splits k beyond about this many elements when the tiles leave SMs idle: a tile's serial k loop
#: runs at most SERIAL_K / K_STEP steps (measured: nvjet kernels named _splitK from k = 2,688 on)
SERIAL_K = 2048.0
#: GEMM precisions cuBLAS runs with Ampere-era kernels on Hopper (the "legacy" variant)
LEGACY_PRECISIONS = frozenset({"tf32", "fp32", "fp64", "int8"})
#: GEMM precisions whose kernels take rows of any alignment at full speed
UNALIGNED_OK = frozenset({"fp32", "fp64"})
#: a GEMM whose m or n is at most this runs cuBLAS's GEMV-like kernels (the "skinny" variant)
SKINNY = 16
#: leading dimensions and conv channels should be multiples of this many bytes
ALIGN_BYTES = 16
#: ``Gemm.layout`` of a weight gradient X^T @ dY (its reduction runs over the rows of both stored operands)
WGRAD = "wgrad"
#: (launches, helper bytes per byte the conv reads) cuDNN adds to pad a forward conv's unaligned channels, per layout.
#: Seen on an H200 in the sampled convs with unaligned channels of at least 16 bytes and filters larger than 1x1:
#: NHWC, two memsets and two or three nhwcAddPaddingKernel copies (x, w) in 11 of 12; NCHW, a memset and a
#: tensorTransformGeneric (w) beside the layout transforms (whose x transform pads x; w's few bytes are not counted)
CUDNN_PAD = {"nhwc": (4.0, 3.0), "nchw": (2.0, 0.0)}
#: architectures on which PyTorch's SDPA prefers cuDNN's fused attention in fp16/bf16 (sdp_utils.cpp,
#: check_prefer_cudnn_attention: cuDNN > 9.15 on compute capability 9.0, 10.0 or 10.3); flash elsewhere
CUDNN_SDPA_ARCHITECTURES = frozenset({"hopper", "blackwell"})
#: a collective on a GPU whose spec measured none: the link's full per-direction bandwidth, no latency
DEFAULT_LINK_EFFICIENCY = 1.0
DEFAULT_LINK_LATENCY = 0.0
#: bytes a GPU's chunk of a collective must be a multiple of for NCCL's 16-byte copies (``link_misaligned`` otherwise),
#: from a buffer of ``MISALIGNED_FROM`` bytes: on 2 H200s, all-gathers of 16 MiB and more whose chunk was a multiple of
#: 8 bytes but not 16 took 1.4-1.7x the aligned time, all-to-alls 1.7-2.4x, reduce-scatters 1.2-1.3x in bf16 and
#: 1.0-1.1x in fp32; all-reduces none; below 16 MiB 0.9-1.2x (data/h200x2_collectives_misaligned.json)
CHUNK_ALIGNMENT = 16
MISALIGNED_FROM = 1 << 24
#: the measured GPU whose calibration an uncalibrated GPU borrows (read from the shipped specs)
REFERENCE_GPU = "h200-sxm"


# ---- the calibration of a GPU -----------------------------------------------------------------


def calibration(gpu: Any) -> Calibration:
    """The predictor's parameters for ``gpu`` in SI units: its ``measured:`` section, else the reference's shares.

    Computed once per loaded spec. The per-key tables' keys must be kernel kinds or calibration
    keys of registered operators (``solkit.ops.calibration_keys()``); anything else is a
    ``SpecError`` naming the file and the field.
    """
    g = as_gpu(gpu)
    memo = g.memo
    cal = memo.get("calibration")
    if cal is None:
        cal = memo["calibration"] = _borrowed(g) if g.measured is None else _measured(g, g.measured)
    return cal


def _measured(g: "GPU", measured: "Measured") -> Calibration:
    from .comm import COLLECTIVES

    keys = set(calibration_keys())
    for p in PARAMETERS:
        if p.name.startswith("link_") and p.keyed:
            unknown = [k for k in getattr(measured, p.file_key) if k not in COLLECTIVES]
            if unknown:
                raise SpecError(f"{g.path or g.name}: field 'measured.{p.file_key}': {unknown[0]!r} is not a collective; "
                                f"known: {', '.join(COLLECTIVES)}")
        elif p.keyed and p.name != "matmul_rate":
            unknown = [k for k in getattr(measured, p.file_key) if k not in keys]
            if unknown:
                raise SpecError(f"{g.path or g.name}: field 'measured.{p.file_key}': {unknown[0]!r} is neither a kernel "
                                f"kind nor a registered operator's calibration key; known: {', '.join(sorted(keys))}")
    cal = measured.calibration(g.name)
    if measured.neighbours is None:
        return cal
    # beside the spec, else (a copied spec) in the shipped folder
    beside = Path(g.path).parent / measured.neighbours if g.path else None
    path = beside if beside is not None and beside.exists() else shipped_dir() / measured.neighbours
    if not path.exists() and beside is not None:
        path = beside  # the error names the place the spec points to
    return cal.replace(neighbours=load_neighbours(path, g.name))


def _borrowed(g: "GPU") -> Calibration:
    """An uncalibrated GPU: ceilings at the reference's measured shares of its own datasheet, the rest borrowed."""
    ref_gpu = load_spec_file(shipped_dir() / f"{REFERENCE_GPU}.yaml")
    ref = calibration(ref_gpu)
    bf16_share = ref.matmul_rate["bf16"] / ref_gpu.peak_flops("bf16")
    rates = {}
    for cls in g.precisions:
        try:
            peak = g.peak_flops(cls, "matrix")
        except LookupError:
            continue
        share = ref.matmul_rate[cls] / ref_gpu.peak_flops(cls) if cls in ref.matmul_rate else bf16_share
        rates[cls] = share * peak
    bw_share = ref.copy_bandwidth / ref_gpu.memory_bandwidth
    source = (f"{g.name} has no measured section: uncalibrated, at {REFERENCE_GPU}'s measured shares of the datasheet "
              f"(matmul {bf16_share:.0%} of the dense bf16 peak, copy {bw_share:.0%} of the bandwidth), its launch "
              f"floor ({ref.launch_floor * 1e6:g} us) and its kernel efficiencies and latencies")
    return ref.replace(gpu=g.name, calibrated=False, source=source, matmul_rate=ReadOnlyTable(rates),
                       copy_bandwidth=bw_share * g.memory_bandwidth, read_bandwidth=None, neighbours=None)


def matmul_rate(cal: Calibration, gpu: "GPU", precision: str) -> float:
    """Achievable dense matmul FLOP/s of ``precision``: measured, else the bf16 measured share of its peak."""
    cls = rate_class(precision)
    rate = cal.matmul_rate.get(cls)
    if rate is None:
        share = cal.matmul_rate["bf16"] / gpu.peak_flops("bf16") if "bf16" in cal.matmul_rate else 1.0
        rate = share * gpu.peak_flops(precision, "matrix")
    return rate


# ---- per-kernel terms -------------------------------------------------------------------------


def gemm_compute_time(m: Any, n: Any, k: Any, batch: Any, rate: float, sms: int, split_k: bool = True) -> tuple[Num, Num]:
    """(seconds, wave efficiency) of the best tile for a [batch, m, k] @ [k, n] GEMM at ``rate`` FLOP/s (``_gemm_time``)."""
    seconds, efficiency, _ = _gemm_time(m, n, k, batch, rate, sms, split_k)
    return seconds, efficiency


def _gemm_time(m: Any, n: Any, k: Any, batch: Any, rate: float, sms: int, split_k: bool = True) -> tuple[Num, Num, Num]:
    """(seconds, wave efficiency, largest tiles) of the best tile for a [batch, m, k] @ [k, n] GEMM at ``rate`` FLOP/s.

    Largest tiles: the output tiles of 128x256 or 256x128, the fewer (what ``tile_waves`` counts).

    For each tile TM x TN: tiles = ceil(m/TM) * ceil(n/TN) * batch; split = clip(floor(SMs / tiles),
    1, max(1, floor(k / MIN_SPLIT_K))); seconds = ceil(tiles * split / SMs) waves of
    2*TM*TN*ceil(k / split) FLOPs at rate / SMs each. Wave efficiency = useful FLOPs / FLOPs the
    waves occupy (1.0: no tile or wave loss).

    ``split_k=False`` (cuDNN's implicit-GEMM convs): split = 1 always.

    A sweep computes the same numbers in two regimes: a grid of at least SMs tiles splits
    nothing (split = 1: ceil(tiles / SMs) waves of the whole k); a smaller one fits one wave
    (tiles * split <= SMs) of ceil(k / split), computed on those elements only.
    """
    if type(m) is float and type(n) is float and type(k) is float and type(batch) is float:  # pragma: no mutate
        return _gemm_compute_time_one(m, n, k, batch, rate, sms, split_k)
    shape = np.broadcast_shapes(np.shape(m), np.shape(n), np.shape(k), np.shape(batch))
    if not shape:  # numpy scalars
        return _gemm_compute_time_one(float(m), float(n), float(k), float(batch), rate, sms, split_k)
    per_sm = rate / sms
    max_split = np.maximum(1.0, np.floor_divide(k, MIN_SPLIT_K)) if split_k else np.ones(np.shape(k))
    k_arr, max_split = np.broadcast_to(k, shape), np.broadcast_to(max_split, shape)
    rows = {tm: _ceil_div(m, tm) for tm in (64, 128, 256)}
    cols = {tn: product(_ceil_div(n, tn), batch) for tn in (64, 128, 256)}
    k_scalar = np.ndim(k) == 0
    tiles, t = np.empty(shape), np.empty(shape)
    best: Any = None
    largest: Any = None
    for tm, tn in TILES:
        np.multiply(rows[tm], cols[tn], out=tiles)
        if tm * tn == 128 * 256:
            largest = tiles.copy() if largest is None else np.minimum(largest, tiles, out=largest)
        per_wave = 2.0 * tm * tn / per_sm  # seconds of one tile's multiply-adds per element of k
        np.divide(tiles, sms, out=t)
        np.ceil(t, out=t)
        np.multiply(t, per_wave * (float(k) if k_scalar else k), out=t)  # split = 1: ceil(tiles / SMs) waves of all of k
        small = np.flatnonzero(tiles < sms)
        if small.size:  # one wave; split-K spreads k over the idle SMs
            few = tiles.reshape(-1)[small]
            split = np.clip(np.floor_divide(sms, few), 1.0, max_split.reshape(-1)[small])
            t.reshape(-1)[small] = per_wave * np.ceil(k_arr.reshape(-1)[small] / split)
        if best is None:
            best, t = t, np.empty(shape)
        else:
            np.minimum(best, t, out=best)
    useful = product(2.0 / rate, m, n, k, batch)  # seconds at the rate, no tile or wave loss
    efficiency = np.divide(useful, best, out=useful if type(useful) is np.ndarray and useful.shape == best.shape else None)
    return best, efficiency, largest


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
    """``_gemm_time`` of one shape, in plain Python (a test checks that both agree)."""
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


class KernelTerms(NamedTuple):
    """A kernel's raw times at the calibrated ceilings (efficiency 1), and its flags."""

    kind: str
    op: str
    variants: tuple[tuple[str, Any], ...]  # (name, where it applies): e.g. "splitkv", "depthwise", "skinny"; last wins
    launches: Num
    present: Any  # False where a sweep gives the kernel no work (e.g. no NCHW transform)
    t_compute: Num
    t_memory: Num
    wave_efficiency: Num
    misaligned: Any
    small_channels: Any
    waves: Num = 0.0  # waves of work items over the SMs: output tiles (GEMM, conv, attention) or rows
    block_bytes: Num = 0.0  # bytes per thread block: a row-wise kernel's row, a GEMM's or conv's largest tile's share
    k_steps: Num = 0.0  # a GEMM or conv tile's serial k-loop steps (K_STEP elements of k each)
    helper_bytes: Num = 0.0  # bytes moved by helper kernels the library launches around it (cuDNN's channel padding)
    neighbour: Num = 0.0  # the log factor of the neighbour correction (solkit.neighbours; 0: none)


def _attention_compute_time(m: Any, n: Any, d: Any, batch: Any, t_flat: Any, sms: int) -> tuple[Any, Any, Any, Any]:
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
    split_kv = np.vectorize(lambda i, b: flash_splits(float(i), float(b), sms), otypes=[float])(items, blocks)
    tiles = np.where(split_kv > 1, SPLITKV_QUERY_TILE, ATTENTION_QUERY_TILE)
    work_items = np.ceil(m / tiles) * batch * split_kv
    efficiency = work_items / (np.ceil(work_items / sms) * sms)
    padding = np.ceil(m / tiles) * tiles / m
    return t_flat * padding / efficiency, efficiency, split_kv > 1, np.ceil(work_items / sms)


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


def sdpa_backend(gpu: "GPU") -> str:
    """The fused attention kernel F.scaled_dot_product_attention runs in fp16/bf16 on ``gpu`` (PyTorch 2.11)."""
    return "cudnn_attention" if gpu.architecture in CUDNN_SDPA_ARCHITECTURES else "flash_attention"


def kernel_terms(kernel: Kernel, gpu: "GPU", cal: Calibration) -> KernelTerms:
    """Raw compute and memory times of one kernel and the flags the efficiencies act on."""
    op = sdpa_backend(gpu) if kernel.op == "sdpa_attention" else kernel.op
    per = ALIGN_BYTES / PRECISIONS[kernel.precision]  # elements in 16 bytes
    nbytes = kernel.bytes_read + kernel.bytes_written
    t_memory = nbytes / cal.copy_bandwidth
    vf, mf = kernel.vector_flops, kernel.matrix_flops
    t_compute: Any = vf / gpu.peak_flops(kernel.vector_precision, "vector") if any_(vf > 0) else 0.0
    t_mat: Any
    wave: Any = 1.0
    misaligned: Any = False
    small: Any = False
    variants: list[tuple[str, Any]] = []
    launches: Any = kernel.launches
    helper_bytes: Any = 0.0
    waves: Any = 0.0
    block_bytes: Any = 0.0
    k_steps: Any = 0.0
    g = kernel.gemm
    if any_(mf > 0):
        rate = matmul_rate(cal, gpu, kernel.precision)
        if g is not None and kernel.kind == "gemm":
            t_mat, wave, tiles = _gemm_time(g.m, g.n, g.k, g.batch, rate, gpu.sm_count)
            waves, block_bytes = tile_waves(tiles, gpu.sm_count, nbytes)
            k_steps = ceil(minimum(g.k, SERIAL_K) / K_STEP)
            # tensor-core kernels need 16-byte aligned rows; fp32 and fp64 (CUDA-core SIMT/DMMA kernels) take any.
            # The rows are the stored operands' leading dimensions: k and n, except a weight gradient's
            # (dW [k,n] = X^T [k,m] @ dY [m,n] reads X [m,k] and dY [m,n]: k and n again, m only counts rows)
            lead = g.m if g.layout == WGRAD else g.k
            misaligned = ((lead % per != 0) | (g.n % per != 0)) if kernel.precision not in UNALIGNED_OK else False
            # a GEMV-like product (m or n at most SKINNY): cuBLAS's small-tile or GEMV kernels, memory-bound
            variants.append(("skinny", minimum(g.m, g.n) <= SKINNY))
            # tf32, fp32, fp64 and int8 run cuBLAS's Ampere-era (cutlass sm80) kernels; misaligned bf16/fp16 Turing-era
            # kernels with narrow loads (cutlass_75 ... align2)
            variants.append(("legacy", kernel.precision in LEGACY_PRECISIONS))
            variants.append(("misaligned", misaligned))
            # an odd row of 2-byte elements leaves cuBLAS only its align1 kernels (2-byte loads), slower than align2/4
            if PRECISIONS[kernel.precision] == 2:
                variants.append(("odd", misaligned & ((lead % 2 != 0) | (g.n % 2 != 0))))
        elif g is not None and kernel.kind == "conv" and g.channels is not None:
            c = g.channels
            depthwise = (g.batch > 1) & (c < per) & (g.n < per)
            small = (c < per) & not_(depthwise)
            # each filter tap's channels padded to the k-tile: k = ceil(c / tile) * tile * R*S; no split-K
            tile = CONV_K_TILE_BYTES / PRECISIONS[kernel.precision]
            t_tc, wave_tc, tiles = _gemm_time(g.m, g.n, ceil(c / tile) * tile * (g.k / c), g.batch, rate, gpu.sm_count,
                                              split_k=False)
            t_mat = where(depthwise, mf / gpu.peak_flops("fp32", "vector"), t_tc)
            waves, block_bytes = tile_waves(tiles, gpu.sm_count, nbytes)
            k_steps = where(depthwise, 0.0, ceil(ceil(c / tile) * tile * (g.k / c) / K_STEP))
            wave = where(depthwise, 1.0, wave_tc)
            unaligned = ((c % per != 0) | (g.n % per != 0)) & not_(depthwise)
            # cuDNN pads unaligned channels to a multiple of 16 bytes first: its own kernels and traffic
            variants += [("depthwise", depthwise), ("unaligned", unaligned)]
            # ... in helper kernels around a forward conv (not for few channels, which run direct, nor a 1x1 filter, a
            # GEMM): NHWC, memsets of the padded x and w, then x and w copied in (3 x (x + w) bytes); NCHW, whose
            # transform to NHWC pads x, a memset and a copy of w
            if g.layout in CUDNN_PAD:
                extra, per_byte = CUDNN_PAD[g.layout]
                padded = unaligned & not_(small) & (g.k != c)
                helper_bytes = where(padded, per_byte * kernel.bytes_read, 0.0)
                launches = kernel.launches + where(padded, extra, 0.0)
        elif g is not None and kernel.kind == "attention":
            t_mat, wave, split, waves = _attention_compute_time(g.m, g.n, g.k, g.batch, mf / rate, gpu.sm_count)
            # causal: fewer FLOPs than the 4*m*n*d pairs of a full mask (the diagonal tiles are masked element by element
            # and the query tiles do unequal work)
            causal = mf < 4.0 * product(g.m, g.n, g.k, g.batch) * (1.0 - 1e-9)
            variants += [("splitkv", split), ("causal", causal)]
            if any_(causal & not_(split)):
                # causal query tiles do unequal work (tile i sees i+1 key blocks): the SMs finish unevenly and the longest
                # tile (all n keys) ends last, on average CAUSAL_TAIL of it after the balanced time
                longest = 4.0 * minimum(g.m, float(ATTENTION_QUERY_TILE)) * g.n * g.k / (rate / gpu.sm_count)
                t_mat = where(causal & not_(split), t_mat + CAUSAL_TAIL * longest, t_mat)
        else:
            t_mat = mf / rate
        t_compute = t_mat if type(t_compute) is float and t_compute == 0.0 else maximum(t_compute, t_mat)
    r = kernel.rows
    if r is not None:
        waves = ceil(r.number / (gpu.sm_count * ROW_BLOCKS_PER_SM))
        block_bytes = nbytes / maximum(r.number, 1.0)
        if kernel.op in WIDE_ROW_OPS:
            wide = (r.width > WIDE_ROW) | (r.width * PRECISIONS[kernel.precision] > WIDE_ROW_BYTES)
            variants.append(("wide", wide))
            # narrow: a warp per row (two rows per warp up to WARP_BATCH_ROW elements), SM_THREADS / 32 warps per SM;
            # wide: a block per row of min(width, 1024) threads rounded up to a warp, SM_THREADS // threads per SM
            warp_rows = where(r.width <= WARP_BATCH_ROW, 2.0, 1.0) * (SM_THREADS / WARP)
            threads = ceil(minimum(r.width, WIDE_ROW_THREADS) / WARP) * WARP
            per_sm = where(wide, floor(SM_THREADS / threads), warp_rows)
            waves = ceil(r.number / (gpu.sm_count * per_sm))
        else:
            vector = ROW_VECTOR.get(kernel.op, ALIGN_BYTES / PRECISIONS[kernel.precision])
            variants.append(("unaligned", r.width % vector != 0))
        if kernel.op in FEW_INDEX_OPS:
            few = r.number <= FEW_INDICES
            variants.append(("fewindex", few))
            waves = where(few, r.number, waves)  # each id a serial step of every thread
    if op == "copy" and kernel.gemm is None and kernel.rows is None:
        # a cast between precisions: ATen's dedicated fp32 -> 16-bit kernel (vectorized) narrows, the generic
        # direct_copy kernel (unrolled, not vectorized) widens; a cast reads n*e_in and writes n*e_out
        read, written = kernel.bytes_read, kernel.bytes_written
        variants.append(("downcast", written < read))
        variants.append(("upcast", written > read))
    present: Any = True if isinstance(nbytes, np.ndarray) and nbytes.min() > 0 else (nbytes > 0) | (vf + mf > 0)
    neighbour: Any = 0.0
    if cal.neighbours is not None and kernel.link is None:
        neighbour = cal.neighbours.of_kernel(op, kernel, variants)
    return KernelTerms(kernel.kind, op, tuple(variants), launches, present, t_compute, t_memory,
                       wave, misaligned, small, waves, block_bytes, k_steps, helper_bytes, neighbour)


def _lookup(table: Mapping[str, float], terms: KernelTerms, default: float) -> Any:
    """A per-kernel parameter: the kernel's key's entry, else its kind's, else ``default``; a variant's entry where it applies.

    Variants apply in order, so where two apply the later one's entry wins; a variant without an
    entry keeps what came before.
    """
    value = table.get(terms.op, table.get(terms.kind, default))
    for name, mask in terms.variants:
        if mask is False:  # the common scalar case, decided without a lookup
            continue
        key = terms.op + "_" + name
        if key in table and (mask is True or any_(mask)):
            value = table[key] if mask is True else where(mask, table[key], value)
    return value


def misaligned_slowdown(cal: Calibration, op: str = "matmul") -> float:
    """How much longer a misaligned GEMM computes than an aligned one: the penalty over the variant's efficiency."""
    eff = cal.compute_efficiency
    aligned = eff.get(op, eff.get("gemm", 1.0))
    return cal.misaligned_gemm_penalty * aligned / eff.get(f"{op}_misaligned", aligned)


def soft_max(a: Any, b: Any, p: float) -> Any:
    """(a**p + b**p)**(1/p): max(a, b) at p = inf, a + b at p = 1 (compute and memory only partly overlap)."""
    if not math.isfinite(p):
        return maximum(a, b)
    if p == 2.0:
        return math.hypot(a, b) if type(a) is float and type(b) is float else np.hypot(a, b)
    if type(a) is float and type(b) is float:
        top = max(a, b, 1e-300)
        return top * ((a / top) ** p + (b / top) ** p) ** (1.0 / p)
    top = np.maximum(np.maximum(a, b), 1e-300)
    return top * ((a / top) ** p + (b / top) ** p) ** (1.0 / p)


def wave_seconds(terms: KernelTerms, cal: Calibration) -> tuple[Num, Num]:
    """(wave latency, latency-bound work) seconds of a kernel's waves of work items.

    wave latency = waves x ``wave_latency``; latency-bound work = waves x bytes per row / one
    block's ``block_bandwidth`` (a row-wise kernel) or waves x k steps x ``kstep_latency`` (a GEMM
    or conv tile's k loop cannot step faster than its load latency allows, however small the tile).

    Each wave of work items pays the wave latency once: a GEMM tile's pipeline fill and epilogue,
    a row's load, reduction across the block and write. A row-wise kernel's block streams its row
    at most at ``block_bandwidth``, so few long rows cannot use the whole GPU's bandwidth.
    """
    latency = _lookup(cal.wave_latency, terms, 0.0)
    bandwidth = _lookup(cal.block_bandwidth, terms, math.inf) if any_(terms.block_bytes) else math.inf
    step = _lookup(cal.kstep_latency, terms, 0.0) if any_(terms.k_steps) else 0.0
    per_wave: Any = 0.0  # the latency-bound seconds of one wave (skipped where a parameter is absent: a sweep is long)
    if not (type(bandwidth) is float and bandwidth == math.inf):
        per_wave = terms.block_bytes / bandwidth
    if not (type(step) is float and step == 0.0):
        k_loop = terms.k_steps * step
        per_wave = k_loop if type(per_wave) is float and per_wave == 0.0 else maximum(per_wave, k_loop)
    stream = 0.0 if type(per_wave) is float and per_wave == 0.0 else terms.waves * per_wave
    waiting = 0.0 if type(latency) is float and latency == 0.0 else terms.waves * latency
    return waiting, stream


def kernel_seconds(terms: KernelTerms, cal: Calibration) -> tuple[Num, Num, Num]:
    """(body seconds, compute seconds, memory seconds) of one launch under ``cal``'s efficiencies."""
    compute = terms.t_compute / _lookup(cal.compute_efficiency, terms, 1.0)
    if any_(terms.misaligned):
        compute = where(terms.misaligned, compute * cal.misaligned_gemm_penalty, compute)
    if any_(terms.small_channels):
        compute = where(terms.small_channels, compute * cal.small_channel_penalty, compute)
    memory = terms.t_memory / _lookup(cal.memory_efficiency, terms, 1.0)
    body = soft_max(compute, memory, cal.overlap_exponent)
    if any_(terms.waves):
        waiting, stream = wave_seconds(terms, cal)
        if not (type(stream) is float and stream == 0.0):
            body = maximum(body, stream)
        if not (type(waiting) is float and waiting == 0.0):
            body = body + waiting
    latency = _lookup(cal.kernel_latency, terms, 0.0)
    if type(latency) is not float or latency:
        body = body + latency
    if any_(terms.helper_bytes):  # the helper kernels run before it, at the kernel's memory efficiency
        body = body + terms.helper_bytes / (cal.copy_bandwidth * _lookup(cal.memory_efficiency, terms, 1.0))
    c = terms.neighbour
    if type(c) is not float or c:  # how its measured neighbours missed (solkit.neighbours)
        body = body * (math.exp(c) if type(c) is float else np.exp(c))
    return (body if terms.present is True else where(terms.present, body, 0.0)), compute, memory


def combine(terms: Any, cal: Calibration) -> Num:
    """Workload seconds from (terms, count) pairs: launch floor + kernel bodies + a gap per further launch."""
    return _combined(terms, [kernel_seconds(t, cal)[0] for t, _ in terms], cal)


def _combined(terms: Any, bodies: Any, cal: Calibration) -> Num:
    """``combine`` from the kernels' bodies already computed."""
    total: Any = cal.launch_floor
    launches: Any = 0.0
    for (t, count), body in zip(terms, bodies):
        total = total + (body if count == 1 else body * count)
        n = where(t.present, t.launches, 0.0)
        launches = launches + (n if count == 1 else n * count)
    return total + cal.kernel_gap * maximum(launches - 1.0, 0.0)


# ---- the prediction ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelPrediction:
    """One kernel's expected time per launch (its body, without the workload's launch floor), its count and limiter."""

    name: str
    kind: str
    count: int
    seconds: Any
    t_compute: Any
    t_memory: Any
    t_sol: Any
    wave_efficiency: Any
    limiter: Any
    misaligned: Any
    neighbour: Any = 1.0  # the factor the neighbour correction put on its body (1.0: none; solkit.neighbours)


def _limiter(terms: KernelTerms, cal: Calibration, compute: Num, memory: Num) -> Any:
    """What bounds the kernel: compute, memory, wave quantization, small channels, misaligned, few blocks, launch/latency or absent.

    "few blocks": the latency-bound work of its waves (a k loop, rows streamed by single blocks)
    outlasts both roofline terms.
    """
    waiting, stream = wave_seconds(terms, cal) if any_(terms.waves) else (0.0, 0.0)
    overhead = _lookup(cal.kernel_latency, terms, 0.0) + cal.kernel_gap + waiting
    names = np.where(np.asarray(compute) >= memory, "compute", "memory")
    compute_bound = np.asarray(compute) >= memory
    names = np.where(compute_bound & (np.asarray(terms.wave_efficiency) < 0.75), "wave quantization", names)
    names = np.where(compute_bound & terms.small_channels, "small channels", names)
    names = np.where(compute_bound & terms.misaligned, "misaligned", names)
    names = np.where(np.asarray(stream) > np.maximum(compute, memory), "few blocks", names)
    names = np.where(overhead > np.maximum(np.maximum(compute, memory), stream), "launch/latency", names)
    return result(np.where(terms.present, names, "absent"))


class Prediction:
    """Expected time of a workload on one GPU, per kernel (``kernels``, built on demand), with the calibration it used."""

    __slots__ = ("workload", "gpu", "seconds", "t_sol", "calibrated", "launch_floor", "notes", "kernel_seconds",
                 "host_seconds", "_rows")
    _FIELDS = ("workload", "gpu", "seconds", "t_sol", "calibrated", "launch_floor", "notes", "kernel_seconds", "host_seconds")

    workload: str
    gpu: str
    seconds: Any
    t_sol: Any
    calibrated: bool
    launch_floor: float
    notes: tuple[str, ...]
    kernel_seconds: Any  # the kernel bodies summed (GPU busy time)
    host_seconds: Any  # the CPU's time to issue an eager program's launches (0: not an eager program)
    _rows: Any  # () -> the per-kernel rows

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Prediction is immutable: cannot set {name!r}")

    @property
    def kernels(self) -> tuple[KernelPrediction, ...]:
        """Per-kernel breakdown, one row per distinct kernel (times per launch)."""
        return self._rows()

    @property
    def sol_fraction(self) -> Any:
        """T_SOL / predicted time: the fraction of the speed of light this prediction reaches."""
        return result(np.asarray(self.t_sol) / np.asarray(self.seconds))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON; times in seconds."""
        out = {k: plain(getattr(self, k)) for k in self._FIELDS}
        out["kernels"] = [{k: plain(v) for k, v in kp.__dict__.items()} for kp in self.kernels]
        return out

    def __repr__(self) -> str:
        if np.ndim(self.seconds):
            return f"Prediction({self.workload!r} on {self.gpu}: sweep of shape {np.shape(self.seconds)})"
        limits = ", ".join(f"{k.name}: {k.limiter}" for k in self.kernels)
        cal = "calibrated" if self.calibrated else "UNCALIBRATED defaults"
        return (f"Prediction({self.workload!r} on {self.gpu}: {fmt_seconds(self.seconds)} ({cal}), "
                f"T_SOL {fmt_seconds(self.t_sol)}, SOL fraction {self.sol_fraction:.2f}; {limits})")

    def _repr_html_(self) -> str:
        if np.ndim(self.seconds):
            return f"<p>{repr(self)}</p>"
        rows: list[tuple[Any, ...]] = [(k.name, k.count, k.kind, k.seconds * 1e6, k.t_compute * 1e6, k.t_memory * 1e6, k.t_sol * 1e6,
                 k.wave_efficiency, k.limiter) for k in self.kernels]
        rows.append(("launch floor", "", "", self.launch_floor * 1e6, "", "", "", "", ""))
        rows.append(("total", "", "", self.seconds * 1e6, "", "", self.t_sol * 1e6, "", ""))
        header = ("kernel", "count", "kind", "predicted us (each)", "compute us", "memory us", "t_sol us", "wave eff.",
                  "limiter")
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return html_table(header, rows, f"Prediction of {self.workload} on {self.gpu}") + notes


def predict(workload: Workload, gpu: Any, warn: bool = True, neighbours: bool = True,
            host_probe_us: Any = None) -> Prediction:
    """Calibrated expected time of ``workload`` on ``gpu`` (a GPU, or a ``System`` for collectives), per kernel, with limiters.

    Never below T_SOL, the workload's or any kernel's: the spec loader keeps efficiencies at most 1
    and measured ceilings at most the datasheet, and the result is floored at the bound regardless.
    Collectives take ``collective_seconds``; an eager program's CPU issue time and collectives
    overlapped on NCCL's streams run through the four-clock timeline of ``solkit._timeline``.
    ``neighbours=False``: the physical model alone, without the GPU's neighbour correction (``solkit.neighbours``).
    ``host_probe_us``: your machine's launch probe (``solkit.profile.host_probe()``, µs per small launch): an eager
    program's host time scales by it over the probe of the machine the host parameters were fitted on (NB:
    ``host_fsdp_group`` too, though it was fitted on steps that recorded no probe).
    """
    w = as_workload(workload)
    flag("warn", warn)
    flag("neighbours", neighbours)
    probe = _host_probe(host_probe_us)
    bound = roofline(w, gpu)
    g = bound._g
    cal = calibration(g)
    if not neighbours and cal.neighbours is not None:
        cal = cal.replace(neighbours=None)
    fit_probe = cal.host_probe
    if probe is not None:
        cal = host_scaled(cal, probe, g.name)
    counted = w.counted
    terms = [(kernel_terms(k, g, cal), count) for k, count in counted]
    notes: list[str] = [] if cal.calibrated else [cal.source]
    if cal.neighbours is not None:
        moved = [(k.name, t.neighbour) for (k, _), (t, _) in zip(counted, terms)
                 if (t.neighbour != 0.0 if type(t.neighbour) is float else cal.neighbours.moves(t.neighbour))]
        if moved:
            notes.append(cal.neighbours.note(moved, g.name))
    if any(k.op == "sdpa_attention" for k, _ in counted):
        notes.append(f"attention impl='sdpa' runs {sdpa_backend(g).split('_')[0]}'s fused kernel on {g.architecture} "
                     f"(PyTorch 2.11's choice in fp16/bf16)")
    bad = [k.name for (k, _), (t, _) in zip(counted, terms) if any_(t.misaligned)]
    if bad:
        message = (
            f"{w.name}: GEMM leading dimension (k or n) not a multiple of {ALIGN_BYTES} bytes in {', '.join(bad)}; "
            f"expect about {misaligned_slowdown(cal):.2g}x the aligned compute time (pad e.g. a vocab to a multiple of 64)"
        )
        notes.append(message)
        if warn:
            warnings.warn(message, PerformanceWarning, stacklevel=2)
    bodies = [kernel_seconds(t, cal)[0] if k.link is None else collective_seconds(k, bound._sys, cal)
              for (k, _), (t, _) in zip(counted, terms)]
    if bound._sys is not None and any(k.link is not None for k, _ in counted):
        notes.append(_link_note(bound._sys, cal))

    def rows() -> tuple[KernelPrediction, ...]:
        out = []
        for (k, count), (t, _), kr, body in zip(counted, terms, bound.kernels, bodies):
            _, compute, memory = kernel_seconds(t, cal)
            limiter = "link" if k.link is not None else _limiter(t, cal, compute, memory)
            # never below the kernel's bound, whatever the calibration says
            factor = 1.0 if type(t.neighbour) is float and t.neighbour == 0.0 else result(np.exp(t.neighbour))
            out.append(KernelPrediction(k.name, k.kind, count, result(maximum(body, kr.t_sol)), result(compute),
                                        result(memory), kr.t_sol, result(t.wave_efficiency), limiter,
                                        result(t.misaligned), factor))
        return tuple(out)

    busy: Any = sum(body if count == 1 else body * count for body, (k, count) in zip(bodies, counted)
                    if not _overlapped(k))  # the compute stream's busy time
    single = w.origin is None and len(counted) == 1 and counted[0][0].link is None  # one plain kernel: no schedule
    seconds = _combined(terms, bodies, cal) if single or not _scheduled(w) else None
    host: Any = 0.0
    issued = issued_launches(w)
    per_launch = program_host_overhead(w, cal, issued)
    if per_launch or seconds is None:
        by_kernel = {id(k): maximum(body, kr.t_sol) for (k, _), body, kr in zip(counted, bodies, bound.kernels)}
        extra = {FSDP_GROUP_OP: cal.host_fsdp_group} if cal.host_fsdp_group else None
        gap: Any = cal.kernel_gap
        if any(t.present is not True for t, _ in terms):  # a sweep's absent kernels take no gap (as in _combined)
            gap = {id(k): where(t.present, cal.kernel_gap, 0.0) for (k, _), (t, _) in zip(counted, terms)}
        host, *streams = clocks(program_map(w, by_kernel, per_launch, gap, extra))
        end = maximum(maximum(streams[0], streams[1]), streams[2])
        # without host time, as _combined: the launch floor, then a gap per launch after the first
        seconds = end if per_launch else end + cal.launch_floor - cal.kernel_gap
    if per_launch:
        if probe is not None:
            notes.append(f"host time scaled by your launch probe over the fit machine's: {probe * 1e6:.3g} / "
                         f"{fit_probe * 1e6:.3g} us")
        share = np.max(host) / max(float(np.max(seconds)), 1e-300)
        notes.append(f"eager program: the CPU issues {issued:,.0f} launches in {fmt_seconds(np.max(host))} "
                     f"({per_launch * 1e6:.3g} us each) against {fmt_seconds(np.max(busy))} of kernels: "
                     f"{'CPU-bound (the GPU waits for launches)' if share > 0.9 else 'GPU-bound'}")
    p = object.__new__(Prediction)
    s = object.__setattr__
    s(p, "workload", w.name)
    s(p, "gpu", g.name)
    s(p, "seconds", broadcast_to(maximum(seconds, bound.t_sol), w.shape))  # never below T_SOL
    s(p, "t_sol", bound.t_sol)
    s(p, "calibrated", cal.calibrated)
    s(p, "launch_floor", cal.launch_floor)
    s(p, "notes", tuple(notes))
    s(p, "kernel_seconds", result(busy))
    s(p, "host_seconds", result(host))
    s(p, "_rows", rows)
    return p


def _overlapped(k: Kernel) -> bool:
    return k.link is not None and bool(k.link.overlap)


def _scheduled(w: Workload) -> bool:
    """Whether ``w`` holds overlapped collectives or a pipeline (then the timeline, not a plain sum, gives its time)."""
    if isinstance(w.origin, (Join, Pipeline)):
        return True
    return any(_overlapped(node) if isinstance(node, Kernel) else _scheduled(node) for node, _ in w.parts)


def _link_note(system: Any, cal: Calibration) -> str:
    """Where the collectives' figures come from."""
    where = (f"collectives on {system.name} x {system.nodes}: {system.link_bandwidth / 1e9:g} GB/s per GPU per direction "
             f"inside a node")
    if system.network is not None and system.nodes > 1:
        where += f", {system.network_bandwidth / 1e9:g} GB/s per GPU across nodes (network level not calibrated)"
    if not cal.link_efficiency:
        where += "; no collectives measured on this GPU: latency and efficiency defaults"
    return where


def misaligned_chunk(nbytes: Any, n_gpus: Any) -> Any:
    """Whether a collective of ``nbytes`` over ``n_gpus`` pays ``link_misaligned``: its buffer of ``MISALIGNED_FROM`` bytes
    or more, a GPU's chunk (nbytes / n_gpus) not a multiple of ``CHUNK_ALIGNMENT``."""
    chunk = np.asarray(nbytes) / np.asarray(n_gpus)
    return (np.mod(chunk, CHUNK_ALIGNMENT) != 0) & (np.asarray(nbytes) >= MISALIGNED_FROM)


def collective_seconds(k: Kernel, system: Any, cal: Calibration) -> Any:
    """latency + hops beyond a 2-GPU ring's x hop latency + max(level bytes / (efficiency x level bandwidth)).

    The latency and efficiency are measured per collective on 2 GPUs of one node (``link_latency``,
    ``link_efficiency``; the efficiency times ``link_misaligned`` where ``misaligned_chunk``); each further step costs ``link_hop``, and each step that crosses between nodes
    (``Link.network_hops``) ``network_hop`` instead (NB: NCCL's own figures; 2 GPUs cannot fit them, ``link_hop`` is
    fitted once 4- or 8-GPU collectives are measured, ``calibration.collectives.fit_hops``). The network level
    uses the collective's link efficiency (NB: no multi-node measurement here).
    """
    from .comm import steps_at_two

    link = k.link
    assert link is not None  # callers pass collectives only
    eff: Any = cal.link_efficiency.get(link.collective, DEFAULT_LINK_EFFICIENCY)
    misaligned = cal.link_misaligned.get(link.collective, 1.0)
    if misaligned != 1.0:  # a GPU's chunk off 16-byte alignment: NCCL's copies lose their 16-byte vectors
        eff = np.where(misaligned_chunk(link.nbytes, link.n_gpus), eff * misaligned, eff)
        eff = float(eff) if np.ndim(eff) == 0 else eff
    latency = cal.link_latency.get(link.collective, DEFAULT_LINK_LATENCY)
    t = link_seconds(k, system, eff)
    g = system.gpus_per_node
    crossing = link.network_hops(g)
    inside = np.maximum(link.hops(g) - steps_at_two(link.collective) - crossing, 0.0)
    body = latency + inside * cal.link_hop + crossing * cal.network_hop + t
    body = np.where(np.asarray(link.n_gpus) > 1, body, 0.0)  # one GPU: nothing to move
    return result(body)


def program_map(w: Workload, body: dict[int, Any], host: float, gap: Any,
                extra: Optional[Mapping[str, float]] = None) -> Map:
    """The timeline map of ``w`` (``solkit._timeline``): each launch issued after ``host`` seconds (plus ``extra[op]`` for a
    kernel of that calibration key: the host work a framework's hooks do there), running its body + ``gap`` per
    launch (a float, or per kernel by ``id``: a sweep's absent kernels take none).

    Collectives with ``Link.overlap`` run on that NCCL stream; a sub-workload whose origin is a ``Join``
    makes the compute stream wait for the streams it names at its start or end; one whose origin is a
    ``Pipeline`` runs its part ``count + bubble`` times in time (the 1F1B schedule's fill and drain),
    its kernels still counted ``count`` times.
    """
    origin = w.origin
    m: Map = IDENTITY
    if type(origin) is Join and origin.at == "start":
        m = join(origin.streams)
    bubble = origin.bubble if type(origin) is Pipeline else 0
    for node, count in w.parts:
        if isinstance(node, Workload):
            part = program_map(node, body, host, gap, extra)
        else:
            launches = node.launches
            issue = host * launches
            if extra and node.op in extra:
                issue = issue + extra[node.op]
            run = body[id(node)] + (gap if type(gap) is float else gap[id(node)]) * launches
            part = launch(issue, run, node.link.overlap if _overlapped(node) else "compute")  # type: ignore[union-attr]
        count += bubble
        m = compose(m, power(part, count) if count != 1 else part)
    if type(origin) is Join and origin.at == "end":
        m = compose(m, join(origin.streams))
    return m


def _host_probe(value: Any) -> Optional[float]:
    """A validated launch probe in seconds (given in µs: one positive number, solkit.profile.host_probe()), or None."""
    if value is None:
        return None
    probe = positive("host_probe_us", value, OptionError)
    if type(probe) is not float:
        raise ArgumentTypeError(f"host_probe_us must be one number of microseconds, got an array of shape {np.shape(probe)}")
    return probe * 1e-6


#: the host-time parameters a launch probe scales: every host_* parameter of the spec but the probe itself
HOST_TIME_PARAMETERS = tuple(p.name for p in PARAMETERS if p.name.startswith("host_") and p.name != "host_probe")


def host_scaled(cal: Calibration, probe: float, gpu: str = "this GPU") -> Calibration:
    """``cal`` with its host parameters scaled by ``probe`` (seconds per probe launch) over the fit machine's probe."""
    if not cal.host_probe:
        raise OptionError(f"host_probe_us: {gpu}'s spec records no launch probe (measured.host_probe_us) to scale the host "
                          "time against; leave host_probe_us unset")
    f = probe / cal.host_probe
    return cal.replace(**{name: getattr(cal, name) * f for name in HOST_TIME_PARAMETERS}, host_probe=probe)


def program_host_overhead(w: Workload, cal: Calibration, issued: Optional[float] = None) -> Any:
    """Host seconds per launch when ``w`` is an eager program built by ``solkit.models`` (0 otherwise).

    The CPU's time to issue an eager program: ``host_program`` (a Hugging Face model's preamble:
    masks, position ids, the cache) + ``host_layer`` per layer (its modules' Python) +
    ``host_launch`` (training: ``host_launch_training``) per launch (ATen dispatch, the autograd
    engine), spread evenly over the launches.
    """
    origin = w.origin
    if origin is None or getattr(origin, "kernels", None) != "eager":
        return 0.0
    per_launch = cal.host_launch_training if getattr(origin, "training", False) else cal.host_launch
    if not (per_launch or cal.host_layer or cal.host_program):
        return 0.0
    layers = getattr(origin, "layers", 0)
    preamble = cal.host_program if getattr(origin, "preamble", False) else 0.0
    launches = issued_launches(w) if issued is None else issued
    return per_launch + (preamble + cal.host_layer * layers) / max(launches, 1.0)
