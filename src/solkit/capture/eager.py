"""What eager PyTorch launches for a recorded call, as the ATen calls a profiler would show inside it.

A fake tensor runs an op whole, so the recorder sees ``aten::zeros`` where a CUDA trace shows the ``aten::fill_``
that launches, and ``aten::nll_loss_backward`` without the ``aten::zero_`` of its gradient. ``launched`` turns a
recorded call into the calls that launch (each then mapped by ``solkit.ops.aten.map_call``, as a profile's are):

- factories that fill (zeros, ones, full and their ``_like`` and ``new_`` forms): a ``fill_`` of the output;
- ``nll_loss_backward`` and ``embedding_dense_backward``: a ``zero_`` of the gradient, then the op;
- ``slice_backward``, ``select_backward``, ``constant_pad_nd``: a ``fill_`` of the output, then a ``copy_`` of the
  smaller tensor into it; ``masked_fill`` (out of place): a ``clone`` then ``masked_fill_``; ``repeat``: a ``copy_``;
- ``type_as`` (whole under inference mode): the cast ``_to_copy`` it makes;
- ``arange`` (its factory form, which has no out tensor to read the dtype of): as ``arange.start_out`` with the
  output as out;
- ``_grouped_mm`` (a mixture of experts' expert GEMMs): a batched GEMM over the experts, each taking an equal share of
  the grouped dimension (NB: balanced top-k routing, as solkit's closed form assumes; the rows left over by an uneven
  split go to the first experts, so the totals are exact).

Every other call launches as itself.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from ..ops.aten import SCALAR_TYPES
from .encode import TraceArgs
from .record import Event, Output

#: C++ dtype name -> c10::ScalarType number
_ENUM = {name: number for number, name in SCALAR_TYPES.items()}

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
    ``per_group``: a batched GEMM launched once per group (ATen's grouped-GEMM fallback off bfloat16)."""

    op: str
    trace: TraceArgs
    note: Optional[str] = None
    per_group: bool = False


def _fill(out: Output) -> Launch:
    """fill_(out, 0)."""
    return Launch("aten::fill_", TraceArgs((out.shape, ()), (out.dtype, "Scalar"), ("", "0"), (out.stride, ())))


def _copy(dst: tuple[int, ...], dtype: str, src: tuple[int, ...], src_dtype: str) -> Launch:
    """copy_(dst, src, non_blocking=False)."""
    return Launch("aten::copy_", TraceArgs((dst, src, ()), (dtype, src_dtype, "Scalar"), ("", "", "False"),
                                           (_contiguous(dst), _contiguous(src), ())))


def _cast(shape: tuple[int, ...], dtype: str, strides: tuple[int, ...], to: str) -> Launch:
    """_to_copy(self, dtype=to): a copy into another dtype."""
    number = str(_ENUM.get(to, -1))
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
    """_grouped_mm(a, b, offs, bias, out_dtype) as one or two batched GEMMs of equal groups (module docstring); off
    bfloat16, ATen's fallback launches one GEMM per group (``Launch.per_group``)."""
    launches = _grouped_launches(e)
    if launches is None:
        return []
    fallback = e.trace.dtypes[0] != "c10::BFloat16"
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


def launched(e: Event) -> list[Launch]:
    """The calls that launch for recorded call ``e`` (module docstring); [] launches nothing."""
    op = e.op
    if op == SDPA_BACKWARD:
        return [Launch("aten::scaled_dot_product_attention", e.trace)]
    if op in FILLS:
        return [_fill(e.outputs[0])] if e.outputs and e.outputs[0].nbytes else []
    if op in ("aten::nll_loss_backward", "aten::embedding_dense_backward"):
        return [_fill(e.outputs[0]), Launch(op, e.trace)] if e.outputs else [Launch(op, e.trace)]
    if op in ("aten::slice_backward", "aten::select_backward", "aten::constant_pad_nd") and e.outputs:
        src = e.trace.shapes[0]
        out = e.outputs[0]
        return [_fill(out), _copy(src, out.dtype, src, e.trace.dtypes[0])]
    if op == "aten::masked_fill" and e.outputs:
        t = e.trace
        clone = Launch("aten::clone", TraceArgs((t.shapes[0], ()), (t.dtypes[0], ""), ("", ""), (t.strides[0], ())))
        inplace = Launch("aten::masked_fill_", TraceArgs((e.outputs[0].shape,) + t.shapes[1:], (e.outputs[0].dtype,)
                                                         + t.dtypes[1:], t.concrete, (e.outputs[0].stride,) + t.strides[1:]))
        return [clone, inplace]
    if op == "aten::repeat" and e.outputs:
        out = e.outputs[0]
        return [_copy(out.shape, out.dtype, out.shape, e.trace.dtypes[0])]
    if op == "aten::arange" and e.outputs and e.outputs[0].nbytes:  # arange(end, ...): as arange.start_out's form
        out = e.outputs[0]
        n = out.shape[0] if out.shape else 1
        return [Launch(op, TraceArgs(((), (), (), out.shape), ("Scalar", "Scalar", "Scalar", out.dtype),
                                     ("0", str(n), "1", ""), ((), (), (), out.stride)))]
    if op == "aten::type_as" and e.outputs:  # to(other's dtype), whole under inference mode: a cast
        return [_cast(e.trace.shapes[0], e.trace.dtypes[0], e.trace.strides[0], e.outputs[0].dtype)]
    if op == "aten::_grouped_mm":
        return _grouped(e) or [Launch(op, e.trace)]
    return [Launch(op, e.trace)]
