"""One kernel's physics: its raw compute and memory times at the calibrated ceilings, its variants, and its body.

    body = kernel_latency[key] + waves * wave_latency[key]
           + max(softmax_p(t_compute / compute_efficiency[key], t_memory / memory_efficiency[key]),
                 waves * block_bytes / block_bandwidth[key],  (row-wise kernels, GEMMs, convs)
                 waves * k_steps * kstep_latency[key])         (GEMMs, convs, the memory-efficient attention)

``[key]`` is the kernel's calibration key: its operator (``Kernel.op``) or, where one applies, the operator's
implementation variant (``{op}_{variant}``), else its kind; softmax_p(a, b) = (a**p + b**p)**(1/p) with the
fitted ``overlap_exponent`` p (p = inf is max). A key without an entry falls back. The variants are the
libraries' choices (``solkit.stacks.torch211`` says where each was read): cuBLAS's Ampere-era kernels for
tf32/fp32/fp64/int8 ("legacy"), narrow-load kernels for rows not a multiple of 16 bytes ("misaligned", "odd"),
GEMV-like kernels for m or n <= ``SKINNY`` ("skinny"); cuDNN's channel padding ("unaligned", with its helper
kernels' launches and bytes) and CUDA-core depthwise convs ("depthwise"); PyTorch's two-kernel norms for widths
not a multiple of 4 ("unaligned"), its block-per-row softmax ("wide"), its serial index_select ("fewindex"),
flash attention's split-KV and causal kernels ("splitkv", "causal"), the memory-efficient attention's kernel
classes by head dim and precision ("keys128", "gmem"; "half", "halfkeys128", "halfgmem"), casts that narrow or widen
("downcast", "upcast").
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Optional

import numpy as np

from .._num import Num, any_, ceil, floor, maximum, minimum, not_, off, off_each, product, result, where
from ..hardware.parameters import Calibration
from ..precision import PRECISIONS
from ..stacks.torch211 import (ATTENTION_QUERY_TILE, CONV_K_TILE_BYTES, CUDNN_DECODE_ROWS, CUDNN_DECODE_WIDE,
                               CUDNN_GROUPED_PAD_BACK, CUDNN_PAD,
                               CUDNN_SDPA_ARCHITECTURES, CUDNN_SPLIT_ITEMS, CUDNN_SPLIT_KEYS, DEPTHWISE_OUTPUT_MACS,
                               FEW_INDEX_OPS, FEW_INDICES,
                               LEGACY_PRECISIONS, ROW_VECTOR, SERIAL_K, SKINNY, UNALIGNED_OK, WARP_BATCH_ROW, WIDE_ROW,
                               WIDE_ROW_BYTES, WIDE_ROW_OPS, WIDE_ROW_THREADS)
from ..workload import Kernel
from .gpu import matmul_rate
from .tiles import (attention_compute_time, decode_items, efficient_attention_loop, efficient_kernel_class, gemm_time,
                    ragged_attention_compute_time, ragged_efficient_attention_loop, ragged_gemm_time, tile_waves)
from .._validate import checked_call, unchecked

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU

__all__ = ["KernelTerms", "kernel_terms", "kernel_seconds", "wave_seconds", "combine", "combined", "soft_max", "lookup",
           "limiter", "sdpa_backend", "misaligned_slowdown", "CAUSAL_TAIL", "ROW_BLOCKS_PER_SM", "SM_THREADS", "WARP",
           "K_STEP", "ALIGN_BYTES", "WGRAD"]

#: the share of its longest query tile a causal flash kernel runs past its balanced time (between 0, perfect
#: balance, and 1, Graham's list-scheduling bound: the longest tile starts last)
CAUSAL_TAIL = 0.5
#: thread blocks of a row-wise kernel resident on one SM (2048 threads / 128-thread blocks)
ROW_BLOCKS_PER_SM = 16
WARP = 32.0
#: threads one SM holds (Hopper, Ampere): sets how many blocks of a row-wise kernel are resident at once
SM_THREADS = 2048
#: a GEMM or conv tile's k loop advances this many elements of k per step
K_STEP = 64
#: leading dimensions and conv channels should be multiples of this many bytes
ALIGN_BYTES = 16
#: ``Gemm.layout`` of a weight gradient X^T @ dY (its reduction runs over the rows of both stored operands)
WGRAD = "wgrad"


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
    neighbour: Num = 0.0  # the log factor of the neighbour correction (prediction.neighbours; 0: none)


@checked_call
def sdpa_backend(gpu: "GPU") -> str:
    """The fused attention kernel F.scaled_dot_product_attention runs in fp16/bf16 on ``gpu`` (PyTorch 2.11)."""
    return "cudnn_attention" if gpu.architecture in CUDNN_SDPA_ARCHITECTURES else "flash_attention"


@checked_call
def kernel_terms(kernel: Kernel, gpu: "GPU", cal: Calibration) -> KernelTerms:
    """Raw compute and memory times of one kernel and the flags the efficiencies act on."""
    if _one_gemm_kernel(kernel):
        return _one_gemm_terms(kernel, gpu, cal)
    op = sdpa_backend(gpu) if kernel.op == "sdpa_attention" else kernel.op
    per = ALIGN_BYTES / PRECISIONS[kernel.precision]  # elements in 16 bytes
    nbytes = kernel.bytes_read + kernel.bytes_written
    t_memory = nbytes / cal.copy_bandwidth
    vf, mf = kernel.vector_flops, kernel.matrix_flops
    sms = gpu.sm_count
    t_compute: Any = (vf / gpu.peak_flops(kernel.vector_precision, "vector")
                      if (vf > 0 if type(vf) is float else any_(vf > 0)) else 0.0)  # pragma: no mutate (any_ of a float)
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
    if mf > 0 if type(mf) is float else any_(mf > 0):  # pragma: no mutate (any_ of a float)
        rate = _matmul_rate(cal, gpu, kernel.precision)
        if g is not None and kernel.kind == "gemm":
            if g.groups is not None:  # a grouped GEMM: tiles summed over its groups, no split-K
                t_mat, wave, tiles = ragged_gemm_time(g.groups, g.batch / len(g.groups), rate, sms)
                # its own variant: torch's grouped kernel is not cuBLAS's batched GEMM, so it borrows no batched GEMM's
                # neighbour correction (nothing grouped is banked: c = 0 until measured)
                variants.append(("grouped", True))
            else:
                t_mat, wave, tiles = gemm_time(g.m, g.n, g.k, g.batch, rate, sms)
            waves, block_bytes = tile_waves(tiles, sms, nbytes)
            k_steps = minimum(g.k, SERIAL_K)  # a sweep's: a fresh array, divided and rounded up in place
            k_steps = (np.ceil(np.divide(k_steps, K_STEP, out=k_steps), out=k_steps) if type(k_steps) is np.ndarray
                       else ceil(k_steps / K_STEP))
            # tensor-core kernels need 16-byte aligned rows; fp32 and fp64 (CUDA-core SIMT/DMMA kernels) take any.
            # The rows are the stored operands' leading dimensions: k and n, except a weight gradient's
            # (dW [k,n] = X^T [k,m] @ dY [m,n] reads X [m,k] and dY [m,n]: k and n again, m only counts rows)
            lead = g.m if g.layout == WGRAD else g.k
            two = PRECISIONS[kernel.precision] == 2
            offs = None  # (lead's, n's) off by per (and by 2 for 2-byte elements: ``odd``)
            if kernel.precision not in UNALIGNED_OK:
                offs = (off_each(lead, (per, 2.0) if two else (per,)), off_each(g.n, (per, 2.0) if two else (per,)))
            misaligned = (offs[0][0] | offs[1][0]) if offs is not None else False
            # a GEMV-like product (m or n at most SKINNY): cuBLAS's small-tile or GEMV kernels, memory-bound
            variants.append(("skinny", _skinny(g.m, g.n)))
            # tf32, fp32, fp64 and int8 run cuBLAS's Ampere-era (cutlass sm80) kernels; misaligned bf16/fp16 Turing-era
            # kernels with narrow loads (cutlass_75 ... align2)
            variants.append(("legacy", kernel.precision in LEGACY_PRECISIONS))
            variants.append(("misaligned", misaligned))
            # an odd row of 2-byte elements leaves cuBLAS only its align1 kernels (2-byte loads), slower than align2/4
            if two:
                variants.append(("odd", misaligned & ((offs[0][1] | offs[1][1]) if offs is not None else
                                                      (off(lead, 2.0) | off(g.n, 2.0)))))
        elif g is not None and kernel.kind == "conv" and g.channels is not None:
            c = g.channels
            depthwise = (g.batch > 1) & (c < per) & (g.n < per)
            small = (c < per) & not_(depthwise)
            # each filter tap's channels padded to the k-tile: k = ceil(c / tile) * tile * R*S; no split-K
            tile = CONV_K_TILE_BYTES / PRECISIONS[kernel.precision]
            t_tc, wave_tc, tiles = gemm_time(g.m, g.n, ceil(c / tile) * tile * (g.k / c), g.batch, rate, sms,
                                              split_k=False)
            # a depthwise conv runs on CUDA cores; PyTorch's native NCHW kernel (a thread per output) also pays its
            # index arithmetic and loads per output: DEPTHWISE_OUTPUT_MACS multiply-adds' time on each of the m*n*g outputs
            native = depthwise & (g.layout == "nchw") if g.layout is not None else False
            outputs = product(g.m, g.n, g.batch)
            t_dw = (mf + where(native, 2.0 * DEPTHWISE_OUTPUT_MACS * outputs, 0.0)) / gpu.peak_flops("fp32", "vector")
            t_mat = where(depthwise, t_dw, t_tc)
            waves, block_bytes = tile_waves(tiles, sms, nbytes)
            k_steps = where(depthwise, 0.0, ceil(ceil(c / tile) * tile * (g.k / c) / K_STEP))
            wave = where(depthwise, 1.0, wave_tc)
            unaligned = (off(c, per) | off(g.n, per)) & not_(depthwise)
            # cuDNN pads unaligned channels to a multiple of 16 bytes first: its own kernels and traffic
            # grouped (1 < groups, more than a few channels per group): cuDNN's grouped kernels (or one launch per group)
            grouped = (g.batch > 1) & not_(depthwise)
            variants += [("depthwise", depthwise), ("nativedw", native), ("unaligned", unaligned), ("grouped", grouped)]
            # ... in helper kernels around a forward conv (not for few channels, which run direct, nor a 1x1 filter, a
            # GEMM, unless grouped in NHWC): NHWC, memsets of the padded x and w, then x and w copied in (3 x (x + w)
            # bytes); NCHW, whose transform to NHWC pads x, a memset and a copy of w. A grouped NHWC conv, 1x1 filters
            # included, also writes y padded and copies it back (CUDNN_GROUPED_PAD_BACK: 2 x y bytes, one more launch)
            if g.layout is not None and g.layout in CUDNN_PAD:
                extra, per_byte = CUDNN_PAD[g.layout]
                regrouped = g.layout in CUDNN_GROUPED_PAD_BACK
                padded = unaligned & not_(small) & (((g.k != c) | grouped) if regrouped else (g.k != c))
                helper_bytes = where(padded, per_byte * kernel.bytes_read, 0.0)
                launches = kernel.launches + where(padded, extra, 0.0)
                if regrouped:
                    back = padded & grouped
                    helper_bytes = helper_bytes + where(back, 2.0 * kernel.bytes_written, 0.0)
                    launches = launches + where(back, 1.0, 0.0)
        elif g is not None and kernel.kind == "attention":
            spread: Any = 0.0  # how unequal a varlen batch's keys are: 1 - shortest / longest (0: all alike)
            # the memory-efficient forward walks its key blocks serially; its backward (cutlassB, not measured) is
            # timed by flash's tile model at the forward class's entries (looked up as the forward, "backward" last)
            backward = op == "efficient_attention_backward"
            if backward:
                op = "efficient_attention"
            walked = op == "efficient_attention" and not backward
            if g.groups is not None:  # varlen: a sequence's work items per query tile, the batch's full-mask FLOPs
                heads: Any = g.batch / len(g.groups)
                full = 4.0 * heads * sum(m * n * d for m, n, d in g.groups)
            if g.groups is not None and walked:  # varlen: each sequence's own blocks and walk
                tile_flops, waves, k_steps, _, _ = ragged_efficient_attention_loop(
                    g.groups, heads, mf / full, kernel.precision, sms)
                t_mat, split = tile_flops / rate, False
            elif g.groups is not None:  # varlen: each sequence's own tiles (g.m, g.n: the longest queries and keys)
                t_mat, wave, split, waves = ragged_attention_compute_time(g.groups, heads, mf / rate, sms,
                                                                          g.split)
                keys = [n for _, n, _ in g.groups]  # tiles of sequences with more keys take longer
                spread = 1.0 - min(keys) / max(keys)
            elif walked:
                # the memory-efficient kernel: no split over the keys; each block walks its keys serially, a
                # kstep_latency per key block, and runs its whole tiles' FLOPs (``efficient_attention_loop``)
                full = 4.0 * product(g.m, g.n, g.k, g.batch)
                tile_flops, waves, k_steps, _, _ = efficient_attention_loop(g.m, g.n, g.k, g.batch, mf / full,
                                                                                  kernel.precision, sms)
                t_mat, split = tile_flops / rate, False
            else:
                t_mat, wave, split, waves = attention_compute_time(g.m, g.n, g.k, g.batch, mf / rate, sms)
                full = 4.0 * product(g.m, g.n, g.k, g.batch)
            # causal: fewer FLOPs than the 4*m*n*d pairs of a full mask (the diagonal tiles are masked element by element
            # and the query tiles do unequal work)
            causal = mf < full * (1.0 - 1e-9)
            if walked or backward:  # its kernel classes by head dim (keys128: 64 x 128; gmem: 32 x 128), 16-bit apart
                half = PRECISIONS[kernel.precision] == 2  # plain MMAs where fp32 runs three (3xTF32)
                mid, top = efficient_kernel_class(g.k if g.groups is None else g.groups[0][2])  # 64x128, 32x128 gmem
                variants += [("causal", causal), ("keys128", mid & (not half)), ("gmem", top & (not half)),
                             ("half", half & not_(mid | top)), ("halfkeys128", mid & half),
                             ("halfgmem", top & half), ("backward", backward)]
            else:
                variants += [("splitkv", split), ("causal", causal)]
            if op == "cudnn_attention":
                # cuDNN's decode kernel (a work item's queries fit one tile): each item streams its KV head's K and V
                # from DRAM, split over the keys where few items have many keys (a reduction kernel follows).
                # NB: a varlen batch's items all take its longest sequence's keys here (the split, the waves)
                decode = (g.m <= CUDNN_DECODE_ROWS) & not_(causal)
                if any_(decode):
                    splits, items = decode_items(g.batch, g.n, g.k, sms, CUDNN_SPLIT_ITEMS, CUDNN_SPLIT_KEYS)
                    split_d = decode & (splits > 1)
                    t_mat = where(decode, mf / rate, t_mat)
                    wave = where(decode, 1.0, wave)
                    waves = where(decode, ceil(items / sms), waves)
                    block_bytes = where(decode, nbytes / items, 0.0)
                    launches = kernel.launches + where(split_d, 1.0, 0.0)
                    variants += [("decode", decode), ("decodesplit", split_d), ("decodewide", decode & (g.k > CUDNN_DECODE_WIDE))]
            # (the efficient kernel's longest block is in its key-block walk already)
            tailed = (causal | (spread > 0.0)) & not_(split) & (not walked)
            if any_(tailed):
                # causal query tiles do unequal work (tile i sees i+1 key blocks), as do a varlen batch's tiles of unequal
                # sequences: the SMs finish unevenly and the longest tile (all n keys) ends last, on average CAUSAL_TAIL
                # of it after the balanced time (a varlen batch without a causal mask: that share of it times the
                # spread, so that one key fewer in one sequence moves the time by as little)
                longest = 4.0 * minimum(g.m, float(ATTENTION_QUERY_TILE)) * g.n * g.k / (rate / sms)
                t_mat = where(tailed, t_mat + CAUSAL_TAIL * where(causal, 1.0, spread) * longest, t_mat)
        else:
            t_mat = mf / rate
        t_compute = t_mat if type(t_compute) is float and t_compute == 0.0 else maximum(t_compute, t_mat)
    r = kernel.rows
    if r is not None:
        waves = ceil(r.number / (sms * ROW_BLOCKS_PER_SM))
        block_bytes = nbytes / maximum(r.number, 1.0)
        if kernel.op in WIDE_ROW_OPS:
            wide = (r.width > WIDE_ROW) | (r.width * PRECISIONS[kernel.precision] > WIDE_ROW_BYTES)
            variants.append(("wide", wide))
            # narrow: a warp per row (two rows per warp up to WARP_BATCH_ROW elements), SM_THREADS / 32 warps per SM;
            # wide: a block per row of min(width, 1024) threads rounded up to a warp, SM_THREADS // threads per SM
            warp_rows = where(r.width <= WARP_BATCH_ROW, 2.0, 1.0) * (SM_THREADS / WARP)
            threads = ceil(minimum(r.width, WIDE_ROW_THREADS) / WARP) * WARP
            per_sm = where(wide, floor(SM_THREADS / threads), warp_rows)
            waves = ceil(r.number / (sms * per_sm))
        else:
            vector = ROW_VECTOR.get(kernel.op, ALIGN_BYTES / PRECISIONS[kernel.precision])
            variants.append(("unaligned", off(r.width, vector)))
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
    return tuple.__new__(KernelTerms, (kernel.kind, op, tuple(variants), launches, present, t_compute, t_memory,  # (every
                         wave, misaligned, small, waves, block_bytes, k_steps, helper_bytes, neighbour))  # field: no defaults)


def physical(cal: Calibration) -> Calibration:
    """``cal`` without its neighbour bank, the physical model alone (made once per calibration, kept in its memo; a
    borrowed calibration's note then says no bank)."""
    found = cal.memo.get("physical")
    if found is None:
        found = cal.memo["physical"] = cal.replace(neighbours=None, source=cal.memo.get("physical_source", cal.source))
    return found  # type: ignore[no-any-return]


#: a plain GEMM sweep of more than twice this many elements takes its terms and body this many elements at a time
#: (``terms_and_body``: a block's figures then stay in the core's cache between the two)
TERMS_BLOCK = 1 << 17


def terms_and_body(kernel: Kernel, gpu: "GPU", cal: Calibration) -> tuple[KernelTerms, Num]:
    """(``kernel_terms``, the body of ``kernel_seconds``) of one kernel: a large plain GEMM sweep (``_blockable``) a
    block of ``TERMS_BLOCK`` elements at a time, the neighbour correction once over the whole sweep, its terms
    without their ``HEAVY`` figures (None: ``whole_terms`` computes them where a prediction's rows are read; written
    out block by block they cost more than the blocks save)."""
    shape = None if type(kernel.bytes_read) is not np.ndarray else _blockable(kernel)  # (one shape: no call)
    if shape is None:
        terms = _kernel_terms(kernel, gpu, cal)
        return terms, _kernel_seconds(terms, cal)[0]
    size = math.prod(shape)
    alone = physical(cal) if cal.neighbours is not None else cal
    flat = {name: x.reshape(-1) for name, x in _arrays(kernel)}
    gemm = {name: x.reshape(-1) for name, x in _arrays(kernel.gemm)}
    body = np.empty(size)
    parts = []  # each block's terms (the physical model's)
    for start in range(0, size, TERMS_BLOCK):
        part = slice(start, start + TERMS_BLOCK)
        block = kernel._replace(gemm=kernel.gemm._replace(**{name: x[part] for name, x in gemm.items()}),  # type: ignore[union-attr]
                                **{name: x[part] for name, x in flat.items()})
        terms = _kernel_terms(block, gpu, alone)
        body[part] = _kernel_seconds(terms, alone)[0]
        parts.append(terms)
    terms = _joined(parts, size, shape)
    if terms is None:  # the blocks took different branches (a block with no matrix FLOPs): the whole sweep at once
        terms = _kernel_terms(kernel, gpu, cal)
        return terms, _kernel_seconds(terms, cal)[0]
    body = body.reshape(shape)
    if cal.neighbours is not None:  # as kernel_terms and kernel_seconds: c of the whole sweep, exp(c) the body's last factor
        c = cal.neighbours.of_kernel(terms.op, kernel, terms.variants)
        terms = terms._replace(neighbour=c)
        if type(c) is not float or c:  # (where present is an array, 0 x exp(c) is the 0 the whole sweep writes there)
            body *= math.exp(c) if type(c) is float else np.exp(c)
    return terms, body


def _arrays(fields: Any) -> list[tuple[str, np.ndarray]]:
    """(name, value) of a named tuple's fields that are arrays."""
    return [(name, x) for name, x in zip(fields._fields, fields) if type(x) is np.ndarray]


def _blockable(kernel: Kernel) -> Optional[tuple[int, ...]]:
    """The sweep's shape where ``kernel`` is a plain GEMM (no groups, rows or link) whose figures are Python floats or
    C-contiguous float64 arrays of that one shape, more than twice ``TERMS_BLOCK`` elements (``terms_and_body``);
    else None."""
    g = kernel.gemm
    if type(kernel.bytes_read) is not np.ndarray:  # one shape (a GEMM sweep's bytes read are swept: the quick test)
        return None
    if (g is None or kernel.kind != "gemm" or g.groups is not None or g.channels is not None or kernel.rows is not None
            or kernel.link is not None or kernel.op == "sdpa_attention"):
        return None
    shape = None
    for fields in (kernel, g):
        for x in fields:
            if type(x) is np.ndarray:
                if x.dtype != np.float64 or not x.flags.c_contiguous or (shape is not None and x.shape != shape):
                    return None
                shape = x.shape
            elif not (x is None or type(x) in (float, str, bool) or isinstance(x, tuple)):
                return None
    return shape if shape is not None and math.prod(shape) > 2 * TERMS_BLOCK else None


#: the fields of ``KernelTerms`` a blocked sweep leaves out (``terms_and_body``): the figures only a prediction's rows read
HEAVY = ("t_compute", "t_memory", "wave_efficiency", "waves", "block_bytes", "k_steps")


def _joined(parts: list[KernelTerms], size: int, shape: tuple[int, ...]) -> Optional[KernelTerms]:
    """The blocks' terms as one sweep's, its ``HEAVY`` figures None (``whole_terms`` gives them): a field every block
    gives as the same Python scalar stays one (the whole sweep's is too: each such field is the sweep's constant or
    its test over every element), any other is written block by block into an array of ``shape``. None where the
    blocks' kernels differ (their kind, op or variant names: a user's GEMM kernel whose matrix FLOPs are 0 throughout
    one block takes ``kernel_terms``' branch without the GEMM's variants there)."""
    first = parts[0]
    if any(t.kind != first.kind or t.op != first.op or [n for n, _ in t.variants] != [n for n, _ in first.variants]
           for t in parts):
        return None

    def joined(values: list[Any]) -> Any:
        if all(type(v) is not np.ndarray and type(v) is type(values[0]) and v == values[0] for v in values):
            return values[0]
        out = np.empty(size, dtype=np.result_type(*(np.asarray(v).dtype for v in values)))
        for start, v in zip(range(0, size, TERMS_BLOCK), values):
            out[start:start + TERMS_BLOCK] = v
        return out.reshape(shape)

    fields = {name: None if name in HEAVY else joined([t[i] for t in parts])
              for i, name in enumerate(KernelTerms._fields) if i >= 3}
    variants = tuple((name, joined([t.variants[j][1] for t in parts])) for j, (name, _) in enumerate(first.variants))
    return KernelTerms(first.kind, first.op, variants, **fields)


def whole_terms(terms: KernelTerms, kernel: Kernel, gpu: "GPU", cal: Calibration) -> KernelTerms:
    """``terms`` with every field: a blocked sweep's (``terms_and_body``, its ``HEAVY`` figures None) computed again
    over the whole sweep by the physical model, its neighbour correction kept."""
    if terms.t_compute is not None:
        return terms
    return _kernel_terms(kernel, gpu, physical(cal))._replace(neighbour=terms.neighbour)


def _one_gemm_kernel(kernel: Kernel) -> bool:
    """Whether ``kernel`` is one shape's plain GEMM (``_one_gemm_terms``): every figure a Python float, FLOPs on the
    matrix units, no groups, rows or link."""
    g = kernel.gemm
    return (g is not None and kernel.kind == "gemm" and g.groups is None and type(g.m) is float and type(g.n) is float
            and type(g.k) is float and type(g.batch) is float and type(kernel.matrix_flops) is float
            and kernel.matrix_flops > 0 and type(kernel.vector_flops) is float and type(kernel.bytes_read) is float
            and type(kernel.bytes_written) is float and kernel.rows is None and kernel.link is None
            and kernel.op != "sdpa_attention")


def _one_gemm_terms(kernel: Kernel, gpu: "GPU", cal: Calibration) -> KernelTerms:
    """``kernel_terms`` of one shape's plain GEMM (``_one_gemm_kernel``), in plain Python: the general path's
    operations in its order, its helpers' float branches written in place (a test holds both equal)."""
    op, g, precision = kernel.op, kernel.gemm, kernel.precision
    per = ALIGN_BYTES / PRECISIONS[precision]
    nbytes = kernel.bytes_read + kernel.bytes_written
    t_memory = nbytes / cal.copy_bandwidth
    vf, sms = kernel.vector_flops, gpu.sm_count
    t_vector = vf / gpu.peak_flops(kernel.vector_precision, "vector") if vf > 0 else 0.0
    t_mat, wave, tiles = gemm_time(g.m, g.n, g.k, g.batch, _matmul_rate(cal, gpu, precision), sms)
    waves, block_bytes = float(math.ceil(tiles / sms)), nbytes / tiles  # as tile_waves
    k_steps = float(math.ceil((g.k if g.k <= SERIAL_K else SERIAL_K) / K_STEP))
    lead = g.m if g.layout == WGRAD else g.k
    two = PRECISIONS[precision] == 2
    aligned = precision in UNALIGNED_OK
    misaligned = False if aligned else (lead % per != 0) | (g.n % per != 0)
    variants: list[tuple[str, Any]] = [("skinny", (g.m if g.m <= g.n else g.n) <= SKINNY),
                                       ("legacy", precision in LEGACY_PRECISIONS), ("misaligned", misaligned)]
    if two:
        variants.append(("odd", misaligned & ((lead % 2.0 != 0) | (g.n % 2.0 != 0))))
    t_compute = t_mat if t_vector == 0.0 else (t_vector if t_vector >= t_mat else t_mat)
    present = (nbytes > 0) | (vf + kernel.matrix_flops > 0)
    neighbour: Any = 0.0
    if cal.neighbours is not None:
        neighbour = cal.neighbours.of_kernel(op, kernel, variants)
    return tuple.__new__(KernelTerms, (kernel.kind, op, tuple(variants), kernel.launches, present, t_compute, t_memory,
                         wave, misaligned, False, waves, block_bytes, k_steps, 0.0, neighbour))


def _skinny(m: Any, n: Any) -> Any:
    """min(m, n) <= SKINNY; for two sweeps of one shape, (m <= SKINNY) | (n <= SKINNY), the same test without a float64
    temporary (the sizes are finite)."""
    if type(m) is np.ndarray and type(n) is np.ndarray and m.shape == n.shape:
        skinny = np.less_equal(m, SKINNY)
        return np.logical_or(skinny, np.less_equal(n, SKINNY), out=skinny)
    return minimum(m, n) <= SKINNY


def lookup(table: Mapping[str, float], terms: KernelTerms, default: float) -> Any:
    """A per-kernel parameter: the kernel's key's entry, else its kind's, else ``default``; a variant's entry where it applies.

    Variants apply in order, so where two apply the later one's entry wins; a variant without an
    entry keeps what came before.
    """
    value = table.get(terms.op, table.get(terms.kind, default))
    swept: list[tuple[Any, float]] = []  # (mask, entry) of a sweep's variants that apply somewhere, in order
    for name, mask in terms.variants:
        if mask is False:  # the common scalar case, decided without a lookup
            continue
        key = terms.op + "_" + name
        if key in table and (mask is True or any_(mask)):
            # packed as bits of a uint8 code (``_chosen``): boolean masks, at most 8 of them; the rest chain on
            if type(mask) is np.ndarray and mask.ndim and mask.dtype == np.bool_ and len(swept) < 8 and type(value) is float:
                swept.append((mask, table[key]))
                continue
            if swept:
                value, swept = _chosen(value, swept), []
            value = table[key] if mask is True else where(mask, table[key], value)
    return _chosen(value, swept) if swept else value


def _chosen(value: float, swept: list[tuple[np.ndarray, float]]) -> Any:
    """``where(mask_n, entry_n, ... where(mask_1, entry_1, value))``: one pass of a small table's entries, indexed by
    the masks' bits (each element takes the last entry whose mask holds, else ``value``; faster than a where)."""
    code: Any = swept[0][0].astype(np.uint8)
    for bit, (mask, _) in enumerate(swept[1:], start=1):
        code = code | np.multiply(mask.view(np.uint8), np.uint8(1 << bit))  # (a bit: numpy's uint8 shift is slow)
    choices = np.full(1 << len(swept), float(value))  # a float table, whatever the base entry's type
    for c in range(1, len(choices)):
        choices[c] = swept[c.bit_length() - 1][1]  # the highest bit set: the last mask that holds
    return np.take(choices, code.astype(np.intp))  # (an intp index: numpy converts a uint8 one more slowly)


#: a sweep's variants, shared by its lookups: (the applying variants' bits per element as an intp code, the variants
#: those bits stand for, in order)
Selector = Optional[tuple[np.ndarray, tuple[int, ...]]]


def _selector(terms: KernelTerms) -> Selector:
    """The bits of a sweep's variant masks that apply somewhere, packed once for all of a kernel's lookups (``_pick``);
    None for one shape, or where the masks are not all arrays of one shape (``lookup`` takes each table alone)."""
    swept = []
    shape = None
    for i, (_, mask) in enumerate(terms.variants):
        if type(mask) is np.ndarray and mask.ndim:
            if mask.dtype != np.bool_ or (shape is not None and mask.shape != shape):
                return None
            shape = mask.shape
            if mask.any():
                swept.append(i)
        elif type(mask) is not bool:
            return None
    if not swept or len(swept) > 8:
        return None
    code: Any = terms.variants[swept[0]][1].view(np.uint8).copy()
    for bit, i in enumerate(swept[1:], start=1):
        code |= np.multiply(terms.variants[i][1].view(np.uint8), np.uint8(1 << bit))  # (numpy's uint8 shift: slow)
    return code.astype(np.intp), tuple(swept)


def _pick(table: Mapping[str, float], terms: KernelTerms, default: float, selector: Selector,
          out: Optional[np.ndarray] = None) -> Any:
    """``lookup`` with the sweep's variants packed once (``_selector``): the table's entry for each combination of
    them, chained as ``lookup`` chains them (the last applying entry wins), then one take (into ``out`` if given)."""
    if selector is None:
        return lookup(table, terms, default)
    return _taken(_choices(table, terms, default, selector), selector[0], out)


def _choices(table: Mapping[str, float], terms: KernelTerms, default: float, selector: Any) -> Any:
    """``_pick``'s entry for each combination of the swept variants (a float table indexed by their packed code), or
    the one entry (a float) where none of them has an entry of its own."""
    _, swept = selector
    value = table.get(terms.op, table.get(terms.kind, default))
    steps: list[tuple[int, float]] = []  # (bit, entry) of the swept variants with an entry, after the last True one
    for i, (name, mask) in enumerate(terms.variants):
        key = terms.op + "_" + name
        if mask is False or key not in table:
            continue
        if mask is True:
            value, steps = table[key], []
        elif i in swept:
            steps.append((swept.index(i), table[key]))
    if not steps:
        return value
    choices = np.full(1 << len(swept), float(value))  # a float table, whatever the base entry's type
    for c in range(1, len(choices)):
        for bit, entry in steps:
            if c >> bit & 1:
                choices[c] = entry
    return choices


def _taken(choice: Any, code: np.ndarray, out: Optional[np.ndarray] = None) -> Any:
    """A ``_choices`` entry for each element of ``code`` (a float stays one)."""
    if type(choice) is not np.ndarray:
        return choice
    # (every code indexes the table: "wrap" changes none, takes into out unbuffered and is numpy's fastest take)
    return np.take(choice, code, out=out, mode="wrap")


def misaligned_slowdown(cal: Calibration, op: str = "matmul") -> float:
    """How much longer a misaligned GEMM computes than an aligned one: the aligned over the variant's efficiency."""
    eff = cal.compute_efficiency
    aligned = eff.get(op, eff.get("gemm", 1.0))
    return aligned / eff.get(f"{op}_misaligned", aligned)


@checked_call
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


_soft_max, _matmul_rate = unchecked(soft_max), unchecked(matmul_rate)  # (their arguments built here: no wrapper)
_kernel_terms = unchecked(kernel_terms)


@checked_call
def wave_seconds(terms: KernelTerms, cal: Calibration) -> tuple[Num, Num]:
    """(wave latency, latency-bound work) seconds of a kernel's waves of work items.

    wave latency = waves x ``wave_latency``; latency-bound work = waves x bytes per row / one
    block's ``block_bandwidth`` (a row-wise kernel) or waves x k steps x ``kstep_latency`` (a GEMM
    or conv tile's k loop cannot step faster than its load latency allows, however small the tile).

    Each wave of work items pays the wave latency once: a GEMM tile's pipeline fill and epilogue,
    a row's load, reduction across the block and write. A row-wise kernel's block streams its row
    at most at ``block_bandwidth``, so few long rows cannot use the whole GPU's bandwidth.
    """
    return _wave_seconds(terms, cal, _selector(terms))


#: the per-key tables of ``kernel_seconds`` and ``_wave_seconds``, with their defaults (``_parameters``)
_TABLES = (("compute_efficiency", 1.0), ("memory_efficiency", 1.0), ("kernel_latency", 0.0), ("wave_latency", 0.0),
           ("block_bandwidth", math.inf), ("kstep_latency", 0.0))


def _parameters(terms: KernelTerms, cal: Calibration) -> Optional[tuple[Any, ...]]:
    """``lookup`` of each of ``_TABLES`` for one shape's kernel (its variants Python bools), memoized in ``cal.memo`` by
    (op, kind, variants); None for a sweep's."""
    for _, mask in terms.variants:
        if type(mask) is not bool:  # (a sweep's mask beside a scalar figure)
            return None
    key = (terms.op, terms.kind, terms.variants)
    found = cal.memo.get(key)
    if found is None:
        found = cal.memo[key] = tuple(lookup(getattr(cal, name), terms, default) for name, default in _TABLES)
    return found  # type: ignore[no-any-return]


def _wave_seconds(terms: KernelTerms, cal: Calibration, selector: Selector,
                  known: Optional[tuple[Any, ...]] = None) -> tuple[Num, Num]:
    """``wave_seconds`` with the sweep's variants packed (``_selector``), or one shape's parameters ``known``
    (``_parameters``)."""
    if known is not None:
        latency = known[3]
        bandwidth = known[4] if any_(terms.block_bytes) else math.inf
        step = known[5] if any_(terms.k_steps) else 0.0
    else:
        latency = _pick(cal.wave_latency, terms, 0.0, selector)
        bandwidth = _pick(cal.block_bandwidth, terms, math.inf, selector) if any_(terms.block_bytes) else math.inf
        step = _pick(cal.kstep_latency, terms, 0.0, selector) if any_(terms.k_steps) else 0.0
    per_wave: Any = 0.0  # the latency-bound seconds of one wave (skipped where a parameter is absent: a sweep is long)
    if not (type(bandwidth) is float and bandwidth == math.inf):
        per_wave = terms.block_bytes / bandwidth
    if not (type(step) is float and step == 0.0):
        k_loop = terms.k_steps * step
        per_wave = k_loop if type(per_wave) is float and per_wave == 0.0 else maximum(per_wave, k_loop)
    stream = 0.0 if type(per_wave) is float and per_wave == 0.0 else terms.waves * per_wave
    waiting = 0.0 if type(latency) is float and latency == 0.0 else terms.waves * latency
    return waiting, stream


@checked_call
def kernel_seconds(terms: KernelTerms, cal: Calibration) -> tuple[Num, Num, Num]:
    """(body seconds, compute seconds, memory seconds) of one launch under ``cal``'s efficiencies."""
    selector = _selector(terms) if type(terms.t_compute) is not float else None
    if selector is not None and _one_shape(terms, selector[0].shape):
        return _swept_seconds(terms, cal, selector)
    known = _parameters(terms, cal) if selector is None and type(terms.t_compute) is float else None
    if known is not None and _all_floats(terms):
        return _float_seconds(terms, cal, known)
    if known is not None:  # one shape: its parameters memoized by key and variants
        compute = terms.t_compute / known[0]
        memory = terms.t_memory / known[1]
    else:
        compute = terms.t_compute / _pick(cal.compute_efficiency, terms, 1.0, selector)
        memory = terms.t_memory / _pick(cal.memory_efficiency, terms, 1.0, selector)
    body = _soft_max(compute, memory, cal.overlap_exponent)
    if any_(terms.waves):
        waiting, stream = _wave_seconds(terms, cal, selector, known)
        if not (type(stream) is float and stream == 0.0):
            body = maximum(body, stream)
        if not (type(waiting) is float and waiting == 0.0):
            body = body + waiting
    latency = known[2] if known is not None else _pick(cal.kernel_latency, terms, 0.0, selector)
    if type(latency) is not float or latency:
        body = body + latency
    if any_(terms.helper_bytes):  # the helper kernels run before it, at the kernel's memory efficiency
        body = body + terms.helper_bytes / (cal.copy_bandwidth * _pick(cal.memory_efficiency, terms, 1.0, selector))
    c = terms.neighbour
    if type(c) is not float or c:  # how its measured neighbours missed (prediction.neighbours)
        body = body * (math.exp(c) if type(c) is float else np.exp(c))
    return (body if terms.present is True else where(terms.present, body, 0.0)), compute, memory


_kernel_seconds = unchecked(kernel_seconds)


def _all_floats(terms: KernelTerms) -> bool:
    """Whether every figure of one shape's kernel is a Python float and the kernel is present (``_float_seconds``)."""
    return (type(terms.t_memory) is float and type(terms.waves) is float and type(terms.block_bytes) is float
            and type(terms.k_steps) is float and type(terms.helper_bytes) is float and type(terms.neighbour) is float
            and terms.present is True)


def _float_seconds(terms: KernelTerms, cal: Calibration, known: tuple[Any, ...]) -> tuple[Num, Num, Num]:
    """``kernel_seconds`` of one shape whose figures are Python floats (``_all_floats``; ``known``: its ``_parameters``):
    the same operations in the same order, the helpers' float branches written in place (a test holds both equal)."""
    compute = terms.t_compute / known[0]
    memory = terms.t_memory / known[1]
    body = _soft_max(compute, memory, cal.overlap_exponent)
    waves = terms.waves
    if waves:  # as _wave_seconds
        bandwidth = known[4] if terms.block_bytes else math.inf
        step = known[5] if terms.k_steps else 0.0
        per_wave: Any = 0.0
        if not (type(bandwidth) is float and bandwidth == math.inf):
            per_wave = terms.block_bytes / bandwidth
        if not (type(step) is float and step == 0.0):
            k_loop = terms.k_steps * step
            per_wave = k_loop if type(per_wave) is float and per_wave == 0.0 else maximum(per_wave, k_loop)
        latency = known[3]
        stream = 0.0 if type(per_wave) is float and per_wave == 0.0 else waves * per_wave
        waiting = 0.0 if type(latency) is float and latency == 0.0 else waves * latency
        if not (type(stream) is float and stream == 0.0):
            body = maximum(body, stream)
        if not (type(waiting) is float and waiting == 0.0):
            body = body + waiting
    latency = known[2]
    if type(latency) is not float or latency:
        body = body + latency
    if terms.helper_bytes:
        body = body + terms.helper_bytes / (cal.copy_bandwidth * lookup(cal.memory_efficiency, terms, 1.0))
    c = terms.neighbour
    if c:
        body = body * math.exp(c)
    return body, compute, memory


def _one_shape(terms: KernelTerms, shape: tuple[int, ...]) -> bool:
    """Whether a sweep's figures are float64 arrays of ``shape`` (its t_compute one of them) or Python floats."""
    if type(terms.t_compute) is not np.ndarray:
        return False
    for x in (terms.t_compute, terms.t_memory, terms.waves, terms.block_bytes, terms.k_steps, terms.helper_bytes,
              terms.neighbour):
        if type(x) is not float and not (type(x) is np.ndarray and x.shape == shape and x.dtype == np.float64):
            return False
    return True


#: ``_swept_seconds`` takes a sweep this many elements at a time (its scratch figures then stay in the core's cache)
SWEPT_BLOCK = 1 << 14


def _swept_seconds(terms: KernelTerms, cal: Calibration, selector: Any) -> tuple[Num, Num, Num]:
    """``kernel_seconds`` of a sweep whose figures share one shape (``_one_shape``): the same operations in the same
    order, element by element, a block of ``SWEPT_BLOCK`` elements at a time: each block's lookups, wave terms and
    body in scratch buffers of a block (a pass over a million float64 from memory costs about twice one from cache),
    written into the three results. The branches (which terms apply) are decided once, over the whole sweep."""
    code, shape = selector[0], selector[0].shape
    flat = [x if type(x) is float else x.reshape(-1) for x in (terms.t_compute, terms.t_memory, terms.waves,
                                                               terms.block_bytes, terms.k_steps, terms.helper_bytes,
                                                               terms.neighbour)]
    code = code.reshape(-1)
    compute_eff, memory_eff = (_choices(t, terms, 1.0, selector) for t in (cal.compute_efficiency, cal.memory_efficiency))
    waved, streamed = any_(terms.waves), any_(terms.block_bytes)
    bandwidth = _choices(cal.block_bandwidth, terms, math.inf, selector) if waved and streamed else math.inf
    step = _choices(cal.kstep_latency, terms, 0.0, selector) if waved and any_(terms.k_steps) else 0.0
    wave_latency = _choices(cal.wave_latency, terms, 0.0, selector) if waved else 0.0
    latency = _choices(cal.kernel_latency, terms, 0.0, selector)
    helped, c = any_(terms.helper_bytes), terms.neighbour
    moved = type(c) is not float or c
    outs = compute, memory, body = np.empty(shape), np.empty(shape), np.empty(shape)
    compute_flat, memory_flat, body_flat = (x.reshape(-1) for x in outs)
    scratch, spare = np.empty(min(SWEPT_BLOCK, code.size)), np.empty(min(SWEPT_BLOCK, code.size))
    for start in range(0, code.size, SWEPT_BLOCK):
        part = slice(start, start + SWEPT_BLOCK)
        t_compute, t_memory, waves, block_bytes, k_steps, helper_bytes, neighbour = (
            x if type(x) is float else x[part] for x in flat)
        mine = code[part]
        scratch, spare = scratch[:len(mine)], spare[:len(mine)]
        block_compute = np.divide(t_compute, _taken(compute_eff, mine, scratch), out=compute_flat[part])
        block_memory = np.divide(t_memory, _taken(memory_eff, mine, scratch), out=memory_flat[part])
        block = _soft_max(block_compute, block_memory, cal.overlap_exponent)  # a fresh block, updated in place below
        if waved:
            per_wave: Any = 0.0  # as _wave_seconds: the latency-bound seconds of one wave
            if streamed and not (type(bandwidth) is float and bandwidth == math.inf):
                per_wave = _divided(block_bytes, _taken(bandwidth, mine, scratch), scratch)
            if not (type(step) is float and step == 0.0):
                k_loop = _multiplied(k_steps, _taken(step, mine, spare), spare)
                if type(per_wave) is float and per_wave == 0.0:
                    per_wave = k_loop
                elif type(per_wave) is np.ndarray:
                    per_wave = np.maximum(per_wave, k_loop, out=per_wave)
                else:
                    per_wave = np.maximum(per_wave, k_loop, out=spare)
            if not (type(per_wave) is float and per_wave == 0.0):
                stream = _multiplied(waves, per_wave, per_wave if type(per_wave) is np.ndarray else scratch)
                if not (type(stream) is float and stream == 0.0):
                    block = np.maximum(block, stream, out=block)
            if not (type(wave_latency) is float and wave_latency == 0.0):
                block += _multiplied(waves, _taken(wave_latency, mine, scratch), scratch)
        if type(latency) is not float or latency:
            block += _taken(latency, mine, scratch)
        if helped:  # the helper kernels run before it, at the kernel's memory efficiency
            block += helper_bytes / (cal.copy_bandwidth * _taken(memory_eff, mine))
        if moved:  # how its measured neighbours missed (prediction.neighbours)
            block *= math.exp(neighbour) if type(neighbour) is float else np.exp(neighbour, out=scratch)
        body_flat[part] = block
    return (body if terms.present is True else where(terms.present, body, 0.0)), compute, memory


def _divided(a: Any, b: Any, out: np.ndarray) -> Any:
    """a / b, into ``out`` where either is an array (of its shape)."""
    return a / b if type(a) is float and type(b) is float else np.divide(a, b, out=out)


def _multiplied(a: Any, b: Any, out: np.ndarray) -> Any:
    """a * b, into ``out`` where either is an array (of its shape)."""
    return a * b if type(a) is float and type(b) is float else np.multiply(a, b, out=out)


@checked_call
def combine(terms: Any, cal: Calibration) -> Num:
    """Workload seconds from (terms, count) pairs: launch floor + kernel bodies + a gap per further launch."""
    return combined(terms, [kernel_seconds(t, cal)[0] for t, _ in terms], cal)


def combined(terms: Any, bodies: Any, cal: Calibration) -> Num:
    """``combine`` from the kernels' bodies already computed."""
    total: Any = cal.launch_floor
    launches: Any = 0.0
    for (t, count), body in zip(terms, bodies):
        total = total + (body if count == 1 else body * count)
        n = where(t.present, t.launches, 0.0)
        launches = launches + (n if count == 1 else n * count)
    return total + cal.kernel_gap * maximum(launches - 1.0, 0.0)


def limiter(terms: KernelTerms, cal: Calibration, compute: Num, memory: Num) -> Any:
    """What bounds the kernel: compute, memory, wave quantization, small channels, misaligned, few blocks, launch/latency or absent.

    "few blocks": the latency-bound work of its waves (a k loop, rows streamed by single blocks)
    outlasts both roofline terms.
    """
    waiting, stream = wave_seconds(terms, cal) if any_(terms.waves) else (0.0, 0.0)
    overhead = lookup(cal.kernel_latency, terms, 0.0) + cal.kernel_gap + waiting
    names = np.where(np.asarray(compute) >= memory, "compute", "memory")
    compute_bound = np.asarray(compute) >= memory
    names = np.where(compute_bound & (np.asarray(terms.wave_efficiency) < 0.75), "wave quantization", names)
    names = np.where(compute_bound & terms.small_channels, "small channels", names)
    names = np.where(compute_bound & terms.misaligned, "misaligned", names)
    names = np.where(np.asarray(stream) > np.maximum(compute, memory), "few blocks", names)
    names = np.where(overhead > np.maximum(np.maximum(compute, memory), stream), "launch/latency", names)
    return result(np.where(terms.present, names, "absent"))

