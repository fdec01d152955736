"""What eager PyTorch launches for a recorded call, as the ATen calls a profiler would show inside it.

A fake tensor runs an op whole, so the recorder sees ``aten::zeros`` where a CUDA trace shows the ``aten::fill_``
that launches, and ``aten::nll_loss_backward`` without the ``aten::zero_`` of its gradient. ``launched`` turns a
recorded call into the calls that launch (each then mapped by ``solkit.ops.aten.map_call``, as a profile's are), each
with the kernels it launches (``Launch.kernels``, read off the H200 profiles: ``solkit.stacks.torch211``):

- factories that fill (zeros, ones, full and their ``_like`` and ``new_`` forms): a ``fill_`` of the output;
- ``nll_loss_backward``: a ``zero_`` of the gradient, then the op;
- ``embedding`` with indices that are not contiguous (BERT's token types, a broadcast buffer): the ``copy_`` of the
  indices that ``reshape`` makes, then the op; ``embedding_dense_backward``: that copy, the ``zero_`` of the
  gradient and one kernel for at most 3,072 indices, else the sorting path: an ``arange`` of the indices, the zero,
  and its 19 launches (Embedding.cu);
- ``slice_backward``, ``select_backward``, ``constant_pad_nd``: a ``fill_`` of the output, then a ``copy_`` of the
  smaller tensor into it; ``masked_fill`` (out of place): a ``clone`` then ``masked_fill_``; ``repeat``: a ``copy_``;
- a copy between tensors of one dtype, shape and dense layout (``copy_``, ``clone``, ``_to_copy``, the copies above,
  ``pow`` by 1, ``all``/``any`` of one element) is a device-to-device ``cudaMemcpyAsync``, no kernel (Copy.cu:
  ``memcpy_eligible``). NB: its bytes are not counted, as a profile's kernels do not count them;
- ``cumsum`` and ``cumprod`` of another dtype than their result: the cast ``_to_copy`` first; the scan of a tensor
  of one row is cub's (2 launches), any other one kernel; ``diff`` (whole under inference mode): the ``cat`` of its
  prepend and append, then a ``sub`` of neighbours per order;
- SDPA in 16 bits (cuDNN's on an H200): the forward with dropout 2 launches, the backward 3 (5 with fewer key and
  value heads than query heads); ``native_layer_norm_backward`` with the weight's or bias's gradient 2
  (NB: read off Hopper's kernels, applied on every GPU, as the closed form does);
- ``type_as`` (whole under inference mode): the cast ``_to_copy`` it makes;
- ``arange`` (its factory form, which has no out tensor to read the dtype of): as ``arange.start_out`` with the
  output as out;
- a mixture of experts' routing (read off the H200 traces of a Mixtral-shaped MoE): ``sort`` of a slice of at most
  4,096 elements an ``arange`` of one slice's indices (copied into each slice where there are several), then the
  sort (its values' copy a memcpy); of one longer slice cub's
  radix sort (3 launches and one pass per byte of the key); ``topk`` of sorted values (k > 1) over slices shorter than
  400 elements (a router's experts) 2 launches (the selection, then the k sorted); ``histc`` with its range given the
  histogram's zero-fill, then the op;
- ``_grouped_mm`` (a mixture of experts' expert GEMMs) in bfloat16: one grouped kernel (``ops.grouped_matmul``, or its
  weight gradient's kernel for a grouped reduction, through the ATen adapter), launched after a kernel that prepares
  the groups' pointers (2 launches); each expert takes an equal share of the
  grouped dimension (NB: balanced top-k routing, as solkit's closed form assumes; the rows left over by an uneven split
  go to the first experts, so the totals are exact). Off bfloat16, ATen's fallback: a batched GEMM of equal groups,
  one GEMM launch per expert.

Every other call launches as itself, one kernel.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

from ..stacks.torch211 import (CUB_SCAN_LAUNCHES, EMBEDDING_BACKWARD_DIRECT, EMBEDDING_BACKWARD_SORT_LAUNCHES,
                               GROUPED_MM_LAUNCHES, LAYERNORM_BACKWARD_LAUNCHES, SDPA_BACKWARD_LAUNCHES,
                               SDPA_DROPOUT_LAUNCHES, SDPA_GQA_BACKWARD_LAUNCHES, SMALL_SORT, SORT_CUB_LAUNCHES,
                               TOPK_SINGLE_BLOCK, TOPK_SORTED_LAUNCHES)
from .encode import DTYPE_NAMES, SCALAR_NUMBERS, TraceArgs
from .record import Event, Output

#: C++ dtype name -> c10::ScalarType number

__all__ = ["Launch", "launched", "FILLS", "BALANCED", "SDPA_BACKWARD"]

#: factories whose output eager PyTorch fills with one kernel
FILLS = frozenset({"aten::zeros", "aten::ones", "aten::full", "aten::zeros_like", "aten::ones_like", "aten::full_like",
                   "aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::scalar_tensor"})
#: the op name of SDPA's recorded backward (not an ATen op: the registry's gradient of the forward call)
SDPA_BACKWARD = "solkit::scaled_dot_product_attention_backward"
#: the note a grouped GEMM's mapping carries
BALANCED = "grouped GEMM rows split evenly over the experts (balanced top-k routing)"


class Launch(NamedTuple):
    """A call that launches: its ATen name and trace-form arguments; ``note``: what its mapping assumes;
    ``per_group``: a batched GEMM launched once per group (ATen's grouped-GEMM fallback off bfloat16); ``kernels``:
    the kernels it launches (None: one); ``lists``: (elements, dtype) of its tensor list where the recorded call had
    none (None: the call's)."""

    op: str
    trace: TraceArgs
    note: Optional[str] = None
    per_group: bool = False
    kernels: Optional[float] = None
    lists: Optional[tuple[int, str]] = None


def _fill(out: Output) -> Launch:
    """fill_(out, 0)."""
    return Launch("aten::fill_", TraceArgs((out.shape, ()), (out.dtype, "Scalar"), ("", "0"), (out.stride, ())))


def _copy(dst: tuple[int, ...], dtype: str, src: tuple[int, ...], src_dtype: str,
          dst_strides: Optional[tuple[int, ...]] = None, src_strides: Optional[tuple[int, ...]] = None) -> list[Launch]:
    """copy_(dst, src, non_blocking=False) (strides: contiguous unless given); none where it is a memcpy."""
    dst_strides = _contiguous(dst) if dst_strides is None else dst_strides
    src_strides = _contiguous(src) if src_strides is None else src_strides
    if _memcpy(dst, dst_strides, dtype, src, src_strides, src_dtype):
        return []
    return [Launch("aten::copy_", TraceArgs((dst, src, ()), (dtype, src_dtype, "Scalar"), ("", "", "False"),
                                            (dst_strides, src_strides, ())))]


def _memcpy(dst: tuple[int, ...], dst_strides: tuple[int, ...], dtype: str, src: tuple[int, ...],
            src_strides: tuple[int, ...], src_dtype: str) -> bool:
    """Whether a copy is a device-to-device memcpy: one dtype, one shape, the same dense layout (Copy.cu)."""
    if dtype != src_dtype or tuple(dst) != tuple(src) or len(dst_strides) != len(dst) or len(src_strides) != len(src):
        return False
    kept = [(a, b, n) for a, b, n in zip(dst_strides, src_strides, dst) if n != 1]
    if any(a != b for a, b, _ in kept):
        return False
    expected = 1
    for stride, _, size in sorted(kept):
        if stride != expected:
            return False
        expected *= size
    return True


def _copy_of(e: Event) -> bool:
    """Whether recorded copy ``e`` (``copy_``, ``clone``, ``_to_copy``) is a memcpy."""
    t = e.trace
    if e.op == "aten::copy_":
        return len(t.shapes) > 1 and _memcpy(t.shapes[0], t.strides[0], t.dtypes[0], t.shapes[1], t.strides[1],
                                             t.dtypes[1])
    out = e.outputs[0]
    return _memcpy(out.shape, out.stride, out.dtype, t.shapes[0], t.strides[0], t.dtypes[0])


def _numel(shape: tuple[int, ...]) -> int:
    """Elements of a shape."""
    return math.prod(shape)


def _flags(text: str) -> list[bool]:
    """A bool list as a trace writes it ("[True, False, True]")."""
    return [part.strip() == "True" for part in text.strip("[]").split(",") if part.strip()]


def _cast(shape: tuple[int, ...], dtype: str, strides: tuple[int, ...], to: str) -> Launch:
    """_to_copy(self, dtype=to): a copy into another dtype."""
    number = str(SCALAR_NUMBERS.get(to, -1))
    return Launch("aten::_to_copy", TraceArgs((shape, (), (), (), (), (), ()), (dtype, "Scalar", "", "", "", "Scalar", ""),
                                              ("", number, "", "", "", "False", ""), (strides, (), (), (), (), (), ())))


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of ``shape``."""
    strides, n = [], 1
    for size in reversed(shape):
        strides.append(n)
        n *= max(size, 1)
    return tuple(reversed(strides))


def _bmm(batch: int, m: int, k: int, n: int, dtype: str, note: Optional[str]) -> Launch:
    """bmm([batch, m, k], [batch, k, n])."""
    return Launch("aten::bmm", TraceArgs(((batch, m, k), (batch, k, n)), (dtype, dtype), ("", ""),
                                         (_contiguous((batch, m, k)), _contiguous((batch, k, n)))), note)


def _grouped(e: Event) -> list[Launch]:
    """_grouped_mm(a, b, offs, bias, out_dtype): in bfloat16, itself (one grouped kernel, mapped by the ATen adapter);
    off bfloat16, ATen's fallback: one or two batched GEMMs of equal groups (module docstring), one GEMM launch per
    group (``Launch.per_group``)."""
    launches = _grouped_launches(e)
    if launches is None:
        return []
    fallback = e.trace.dtypes[0] != "c10::BFloat16"
    if not fallback:  # one grouped kernel (ops.grouped_matmul through the ATen adapter) after its pointers' kernel
        return [Launch(e.op, e.trace, kernels=float(GROUPED_MM_LAUNCHES))]
    return [x._replace(per_group=fallback) for x in launches]


def _grouped_launches(e: Event) -> Optional[list[Launch]]:
    """The batched GEMMs of a grouped GEMM, or None when its shapes are not modelled."""
    a, b = e.trace.shapes[0], e.trace.shapes[1]
    dtype = e.trace.dtypes[0]
    if len(a) == 3 and len(b) == 3:  # [E, m, k] @ [E, k, n]: a plain batched GEMM
        return [_bmm(a[0], a[1], a[2], b[2], dtype, None)]
    offs = e.trace.shapes[2]
    groups = offs[0] if offs else (b[0] if len(b) == 3 else a[0])
    if len(a) == 2 and len(b) == 3:  # rows grouped: [S, k] @ [E, k, n] -> [S, n]
        rows, k, n = a[0], a[1], b[2]
        shares = _split(rows, groups)
        return [_bmm(count, m, k, n, dtype, BALANCED) for m, count in shares]
    if len(a) == 2 and len(b) == 2:  # k grouped (a weight gradient): [m, S] @ [S, n] -> [E, m, n]
        m, total, n = a[0], a[1], b[1]
        return [_bmm(count, m, k, n, dtype, BALANCED) for k, count in _split(total, groups)]
    return None  # [E, m, k] @ [k, S] with groups of b's columns: left unmodeled


def _split(total: int, groups: int) -> list[tuple[int, int]]:
    """``total`` over ``groups`` as evenly as whole numbers go: [(size, how many groups)], sizes > 0 only."""
    base, extra = divmod(total, groups)
    out = [(base + 1, extra), (base, groups - extra)]
    return [(size, count) for size, count in out if size > 0 and count > 0]


#: 16-bit dtypes, whose SDPA is cuDNN's on an H200 (``solkit.stacks.torch211.SDPA_HALF``)
_HALF = ("c10::BFloat16", "c10::Half")
#: copies whose layout decides whether a kernel runs (``_copy_of``)
_COPIES = ("aten::copy_", "aten::clone", "aten::_to_copy")


def _embedding_backward(e: Event) -> list[Launch]:
    """embedding_dense_backward: the indices made contiguous, the gradient zeroed, then one kernel or the sort."""
    t = e.trace
    indices, strides, dtype = t.shapes[1], t.strides[1], t.dtypes[1]
    out: list[Launch] = []
    if not _memcpy(indices, _contiguous(indices), dtype, indices, strides, dtype):
        out += _copy(indices, dtype, indices, dtype, src_strides=strides)
    n = _numel(indices)
    zero = [_fill(e.outputs[0])] if e.outputs else []
    if n <= EMBEDDING_BACKWARD_DIRECT and t.concrete[4] != "True":
        return out + zero + [Launch(e.op, t)]
    arange = Launch("aten::arange", TraceArgs(((), (), (), (n,)), ("Scalar", "Scalar", "Scalar", dtype),
                                             ("0", str(n), "1", ""), ((), (), (), (1,))))
    return out + [arange] + zero + [Launch(e.op, t, kernels=float(EMBEDDING_BACKWARD_SORT_LAUNCHES))]


def _attention(e: Event) -> list[Launch]:
    """SDPA as cuDNN launches it (module docstring)."""
    t = e.trace
    if t.dtypes[0] not in _HALF:
        return [Launch("aten::scaled_dot_product_attention", t)]
    if e.op == SDPA_BACKWARD:
        fewer = t.shapes[1][1] < t.shapes[0][1]
        kernels = SDPA_GQA_BACKWARD_LAUNCHES if fewer else SDPA_BACKWARD_LAUNCHES
        return [Launch("aten::scaled_dot_product_attention", t, kernels=float(kernels))]
    dropout = float(t.concrete[4] or 0.0)
    return [Launch(e.op, t, kernels=float(SDPA_DROPOUT_LAUNCHES) if dropout > 0 else None)]


def _scan(e: Event) -> list[Launch]:
    """cumsum / cumprod: a cast to the result's dtype first where it differs; cub's two launches over one row."""
    t = e.trace
    shape, out = t.shapes[0], e.outputs[0]
    cast = [_cast(shape, t.dtypes[0], t.strides[0], out.dtype)] if t.dtypes[0] != out.dtype else []
    dim = int(t.concrete[1] or 0) % max(len(shape), 1) if shape else 0
    one_row = not shape or _numel(shape) == shape[dim]
    return cast + [Launch(e.op, t, kernels=float(CUB_SCAN_LAUNCHES) if one_row else None)]


def _diff(e: Event) -> list[Launch]:
    """diff(self, n, dim, prepend, append), whole under inference mode, as ATen runs it: a cat of prepend, self and
    append where either is given, then n subtractions of neighbours (a logical_xor for bool)."""
    t = e.trace
    shape, dtype = tuple(t.shapes[0]), t.dtypes[0]
    n = int(t.concrete[1] or 1)
    dim = int(t.concrete[2] or -1) % len(shape)
    out: list[Launch] = []
    if t.shapes[3] or t.shapes[4]:
        tensors = tuple(tuple(s) for s in (t.shapes[3], shape, t.shapes[4]) if s)
        out.append(Launch("aten::cat", TraceArgs((tensors, ()), ("TensorList", "Scalar"), ("", str(dim)),
                                                 (tuple(_contiguous(s) for s in tensors), ())),
                          lists=(sum(_numel(s) for s in tensors), dtype)))
        shape = shape[:dim] + (sum(s[dim] for s in tensors),) + shape[dim + 1:]
    op = "aten::logical_xor" if dtype == "bool" else "aten::sub"
    for _ in range(n):
        strides = _contiguous(shape)  # two narrowed views of it
        shape = shape[:dim] + (shape[dim] - 1,) + shape[dim + 1:]
        if op == "aten::sub":
            out.append(Launch(op, TraceArgs((shape, shape, ()), (dtype, dtype, "Scalar"), ("", "", "1"),
                                            (strides, strides, ()))))
        else:
            out.append(Launch(op, TraceArgs((shape, shape), (dtype, dtype), ("", ""), (strides, strides))))
    return out


#: C++ dtype name -> bytes per element
_ITEMSIZE = {name: dtype.itemsize for dtype, name in DTYPE_NAMES.items()}


def sort_slice(e: Event) -> Optional[tuple[tuple[int, ...], int]]:
    """(input shape, sorted dim) of a sort call, None where it sorts a scalar or returns fewer than values and
    indices. sort.stable (and its out form values_stable) put the optional bool ``stable`` before dim; sort and
    sort.values (whose out tensors follow descending) have dim second."""
    t = e.trace
    shape = tuple(t.shapes[0])
    if not shape or len(e.outputs) < 2:
        return None
    stable_first = t.concrete[1] in ("True", "False", "")
    return shape, int((t.concrete[2] if stable_first else t.concrete[1]) or -1) % len(shape)


def _sort(e: Event) -> list[Launch]:
    """sort(self, dim, descending) or sort.stable(self, stable, dim, descending) (or their out forms): a short slice
    sorted in place after an arange of its indices; one long slice by cub's radix sort; several long slices (a segmented
    sort) as one launch (NB: ATen's segmented paths launch more, SortStable.cu: a fill, cub's sorts, a post-process)."""
    t = e.trace
    found = sort_slice(e)
    if found is None:
        return [Launch(e.op, t)]
    shape, dim = found
    if shape[dim] <= SMALL_SORT:  # the indices: one slice's arange, copied into every slice (a memcpy for one)
        indices = e.outputs[1]
        arange = Launch("aten::arange", TraceArgs(((), (), (), (shape[dim],)), ("Scalar", "Scalar", "Scalar", indices.dtype),
                                                  ("0", str(shape[dim]), "1", ""), ((), (), (), (1,))))
        spread = tuple(1 if i == dim else 0 for i in range(len(shape)))  # the arange expanded over the slices
        fill = _copy(shape, indices.dtype, shape, indices.dtype, src_strides=spread) if _numel(shape) > shape[dim] else []
        return [arange, *fill, Launch(e.op, t)]
    if _numel(shape) == shape[dim] and t.dtypes[0] in _ITEMSIZE:
        return [Launch(e.op, t, kernels=float(SORT_CUB_LAUNCHES + _ITEMSIZE[t.dtypes[0]]))]
    return [Launch(e.op, t)]


def _topk(e: Event) -> list[Launch]:
    """topk(self, k, dim, largest, sorted): over short slices, the single-block selection, then the k sorted (k > 1)."""
    t = e.trace
    shape = tuple(t.shapes[0])
    k = int(t.concrete[1] or 1)
    dim = int(t.concrete[2] or -1) % len(shape) if shape else 0
    ordered = (t.concrete[4] or "True") == "True"
    if shape and ordered and k > 1 and shape[dim] < TOPK_SINGLE_BLOCK:
        return [Launch(e.op, t, kernels=float(TOPK_SORTED_LAUNCHES))]
    return [Launch(e.op, t)]


def _histc(e: Event) -> list[Launch]:
    """histc(self, bins, min, max) with min < max: the histogram zero-filled, then the op (ATen finds the range of an
    unset one first: left as the op alone)."""
    t = e.trace
    low, high = (float(t.concrete[i] or 0) for i in (2, 3))
    if e.outputs and low < high:
        return [_fill(e.outputs[0]), Launch(e.op, t)]
    return [Launch(e.op, t)]


def _backward_copy(e: Event) -> list[Launch]:
    """slice_backward, select_backward, constant_pad_nd: a zero-filled output, the smaller tensor copied into it."""
    t = e.trace
    src, out = t.shapes[0], e.outputs[0]
    full = _contiguous(out.shape)
    if e.op == "aten::slice_backward":
        dim = int(t.concrete[2]) % len(out.shape)
        step = int(t.concrete[5] or 1)
        strides = tuple(s * step if i == dim else s for i, s in enumerate(full))
    elif e.op == "aten::select_backward":
        dim = int(t.concrete[2]) % len(out.shape)
        strides = tuple(s for i, s in enumerate(full) if i != dim)
    else:  # constant_pad_nd: the input's place inside the padded output
        strides = full
    return [_fill(out), *_copy(src, out.dtype, src, t.dtypes[0], dst_strides=strides, src_strides=t.strides[0])]


def launched(e: Event) -> list[Launch]:
    """The calls that launch for recorded call ``e`` (module docstring); [] launches nothing."""
    op = e.op
    t = e.trace
    if op == SDPA_BACKWARD or op == "aten::scaled_dot_product_attention":
        return _attention(e)
    if op in FILLS:
        return [_fill(e.outputs[0])] if e.outputs and e.outputs[0].nbytes else []
    if op == "aten::nll_loss_backward":
        return [_fill(e.outputs[0]), Launch(op, t)] if e.outputs else [Launch(op, t)]
    if op == "aten::embedding_dense_backward" and len(t.shapes) > 4:
        return _embedding_backward(e)
    if op == "aten::embedding" and len(t.shapes) > 1:
        indices, strides, dtype = t.shapes[1], t.strides[1], t.dtypes[1]
        contiguous = _memcpy(indices, _contiguous(indices), dtype, indices, strides, dtype)
        return ([] if contiguous else _copy(indices, dtype, indices, dtype, src_strides=strides)) + [Launch(op, t)]
    if op in ("aten::slice_backward", "aten::select_backward", "aten::constant_pad_nd") and e.outputs:
        return _backward_copy(e)
    if op in _COPIES and e.outputs and _copy_of(e):
        return []
    if op in ("aten::all", "aten::any") and t.shapes and _numel(t.shapes[0]) == 1:
        # one element: its value copied (a memcpy) into the result, cast to bool first if it is not one
        return [] if t.dtypes[0] == "bool" else [_cast(t.shapes[0], t.dtypes[0], t.strides[0], "bool")]
    by_one = len(t.dtypes) > 1 and t.dtypes[1] == "Scalar" and t.concrete[1] in ("1", "1.")
    if op == "aten::pow" and e.outputs and by_one:
        out = e.outputs[0]  # pow by 1: the base copied into the result
        return _copy(out.shape, out.dtype, t.shapes[0], t.dtypes[0], out.stride, t.strides[0])
    if op in ("aten::cumsum", "aten::cumprod") and e.outputs:
        return _scan(e)
    if op == "aten::diff" and len(t.shapes) > 4 and t.shapes[0]:
        return _diff(e)
    if op == "aten::native_layer_norm_backward" and len(t.concrete) > 7:
        mask = _flags(t.concrete[7])
        both = len(mask) == 3 and (mask[1] or mask[2])
        return [Launch(op, t, kernels=float(LAYERNORM_BACKWARD_LAUNCHES) if both else None)]
    if op == "aten::masked_fill" and e.outputs:
        out = e.outputs[0]
        memcpy = _memcpy(out.shape, out.stride, out.dtype, t.shapes[0], t.strides[0], t.dtypes[0])
        clone = [] if memcpy else [Launch("aten::clone", TraceArgs((t.shapes[0], ()), (t.dtypes[0], ""), ("", ""),
                                                                    (t.strides[0], ())))]
        inplace = Launch("aten::masked_fill_", TraceArgs((out.shape,) + t.shapes[1:], (out.dtype,) + t.dtypes[1:],
                                                         t.concrete, (out.stride,) + t.strides[1:]))
        return [*clone, inplace]
    if op == "aten::repeat" and e.outputs:
        out = e.outputs[0]  # the input broadcast into the output (never a memcpy), counted as a copy of its size
        strides = _contiguous(out.shape)
        return [Launch("aten::copy_", TraceArgs((out.shape, out.shape, ()), (out.dtype, t.dtypes[0], "Scalar"),
                                                ("", "", "False"), (strides, strides, ())))]
    if op == "aten::arange" and e.outputs and e.outputs[0].nbytes:  # arange(end, ...): as arange.start_out's form
        out = e.outputs[0]
        n = out.shape[0] if out.shape else 1
        return [Launch(op, TraceArgs(((), (), (), out.shape), ("Scalar", "Scalar", "Scalar", out.dtype),
                                     ("0", str(n), "1", ""), ((), (), (), out.stride)))]
    if op == "aten::type_as" and e.outputs:  # to(other's dtype), whole under inference mode: a cast
        return [_cast(t.shapes[0], t.dtypes[0], t.strides[0], e.outputs[0].dtype)]
    if op == "aten::_grouped_mm":
        return _grouped(e) or [Launch(op, t)]
    if op == "aten::sort" and len(t.concrete) > 2:
        return _sort(e)
    if op == "aten::topk" and len(t.concrete) > 4:
        return _topk(e)
    if op == "aten::histc" and len(t.concrete) > 3:
        return _histc(e)
    return [Launch(op, t)]

