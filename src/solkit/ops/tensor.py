"""Tensor kernels a real program runs between the big ones: ``pointwise`` (n-ary, broadcasting, mixed
precision), ``reduce`` (sum/mean/max over dims), ``fill`` (write only), ``concat`` and ``gather`` (indexing).

Each is one memory-bound kernel; bytes are its compulsory DRAM traffic: every input read once at
its own (stored) size, every output written once. A broadcast input ([1, S, D] against [B, H, S, D])
is read at its own size, not the output's. Vector FLOPs are a stated count per element.
"""

from __future__ import annotations

from typing import Any

from ..workload import Kernel, Workload
from ._common import times, at_most, element_bytes, single
from .embedding import INDEX_BYTES
from .registry import MEMORY_BOUND, operator, precision, size, text

__all__ = ["pointwise", "reduce", "fill", "concat", "gather"]


@operator(
    "pointwise",
    params=dict(
        out_elements=size("elements of the (broadcast) output"),
        in_elements=size("elements read in dtype: each input at its own size, summed", minimum=0),
        dtype=precision("precision of the inputs counted in in_elements"),
        out_dtype=precision("precision of the output (default: dtype)", optional=True),
        flops_per_element=size("vector FLOPs per output element", minimum=0),
        name=text("the kernel's name"),
        other_elements=size("elements read in other_dtype (inputs of a second precision)", minimum=0),
        other_dtype=precision("precision of the inputs counted in other_elements (default: dtype)", optional=True),
    ),
    kinds=("elementwise",),
    aten=("aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_", "aten::div", "aten::div_",
          "aten::neg", "aten::rsqrt", "aten::sqrt", "aten::exp", "aten::pow", "aten::cos", "aten::sin", "aten::tanh",
          "aten::sigmoid", "aten::relu", "aten::relu_", "aten::clamp_min", "aten::clamp_min_",
          "aten::threshold_backward", "aten::where", "aten::masked_fill_"),
    backward=MEMORY_BOUND,
    example=dict(out_elements=32 * 2048 * 128, in_elements=32 * 2048 * 128 + 2048 * 128),
)
def pointwise(
    out_elements: Any,
    in_elements: Any,
    dtype: Any = "bf16",
    out_dtype: Any = None,
    flops_per_element: Any = 1,
    name: Any = "pointwise",
    other_elements: Any = 0,
    other_dtype: Any = None,
) -> Workload:
    """One elementwise kernel over broadcast inputs, each read at its own size, in up to two precisions.

    Bytes: in_elements*e + other_elements*e_other read, out_elements*e_out written.
    FLOPs: flops_per_element*out_elements (vector; model FLOPs the same).
    A cast is flops_per_element=0 with out_dtype set (fp32 [N] -> bf16 [N]: N*4 + N*2 bytes); a rotary
    multiply q [B,H,S,D] * cos [1,1,S,D] reads B*H*S*D + S*D elements and writes B*H*S*D.
    """
    e, e_out = element_bytes(dtype), element_bytes(out_dtype or dtype)
    e_other = element_bytes(other_dtype or dtype)
    # inputs, each at its own size ([1,1,S,D] and [B,H,S,D]) -> out [broadcast shape]
    kernel = Kernel(name, "elementwise", dtype, vector_flops=times(flops_per_element, out_elements),
                    bytes_read=in_elements * e + times(other_elements, e_other), bytes_written=out_elements * e_out,
                    op="pointwise")
    return single(name, kernel)


def _check_reduce(args: dict[str, Any]) -> None:
    """A reduction writes at most as many elements as it reads."""
    at_most("out_elements", args["out_elements"], "in_elements", args["in_elements"])


@operator(
    "reduce",
    params=dict(in_elements=size("elements reduced (the input)"), out_elements=size("elements of the reduced output"),
                dtype=precision("precision of the input"),
                out_dtype=precision("precision of the output (default: dtype)", optional=True)),
    kinds=("reduction",),
    aten=("aten::sum", "aten::mean", "aten::amax", "aten::amin"),
    backward=MEMORY_BOUND,
    check=_check_reduce,
    example=dict(in_elements=4096 * 768, out_elements=768),
)
def reduce(in_elements: Any, out_elements: Any, dtype: Any = "bf16", out_dtype: Any = None) -> Workload:
    """A sum (mean, max) over some dims, one kernel: x [.., n, ..] -> y [.., 1, ..].

    Bytes: in_elements*e read, out_elements*e_out written. FLOPs: in_elements (one add or compare
    per input element, vector). NB: a mean's one divide per output is not counted.
    """
    e, e_out = element_bytes(dtype), element_bytes(out_dtype or dtype)
    # x [in_elements] -> y [out_elements]
    kernel = Kernel("reduce", "reduction", dtype, vector_flops=in_elements, bytes_read=in_elements * e,
                    bytes_written=out_elements * e_out, op="reduce")
    return single("reduce", kernel)


@operator(
    "fill",
    params=dict(elements=size("elements written"), dtype=precision()),
    kinds=("copy",),
    aten=("aten::fill_", "aten::zero_", "aten::arange"),
    backward=MEMORY_BOUND,
    example=dict(elements=30522 * 768, dtype="fp32"),
)
def fill(elements: Any, dtype: Any = "bf16") -> Workload:
    """y = a constant (zeros, a gradient seed) or an index ramp (arange): write only, one kernel.

    Bytes: elements*e written, nothing read. FLOPs: none (zeroing carries no model FLOPs).
    NB: its backward is the convention of ``memory_bound_backward`` (reads the gradient of what it wrote); a fill
    has no input to differentiate.
    """
    # y [elements] = value
    return single("fill", Kernel("fill", "copy", dtype, bytes_written=elements * element_bytes(dtype), op="fill"))


@operator(
    "concat",
    params=dict(elements=size("elements of the output (the inputs' elements summed)"), dtype=precision()),
    kinds=("copy",),
    aten=("aten::cat", "aten::concat"),
    backward=MEMORY_BOUND,
    example=dict(elements=8 * 2049 * 128),
)
def concat(elements: Any, dtype: Any = "bf16") -> Workload:
    """y = cat(x_1, ..., x_n) along one dim, one kernel: each input read once, the output written once.

    Bytes: 2*elements*e (the inputs sum to the output). FLOPs: none.
    A KV cache of [1,8,2048,128] grown by [1,8,1,128] moves the whole cache: 2*8*2049*128*e.
    """
    # x_1 [.., n_1, ..], ..., x_k [.., n_k, ..] -> y [.., n_1 + ... + n_k, ..]
    moved = elements * element_bytes(dtype)
    return single("concat", Kernel("concat", "copy", dtype, bytes_read=moved, bytes_written=moved, op="concat"))


def _gather_backward(label: str, elements: Any, index_elements: Any, dtype: str) -> Workload:
    """Scatter-add: reads the indices, dy and the rows it adds into, writes them back.

    Bytes: index_elements*8 + 2*elements*e read, elements*e written; elements adds (vector; no model
    FLOPs: the gather has none). NB: zeroing the source's gradient first is its own fill kernel (ATen
    launches it as aten::zero_), of a size the gather does not know; an element hit twice is counted twice.
    """
    e = element_bytes(dtype)
    index = elements if index_elements is None else index_elements
    kernel = Kernel(f"{label} backward", "gather", dtype, vector_flops=elements,
                    bytes_read=index * INDEX_BYTES + 2.0 * elements * e, bytes_written=elements * e, model_flops=0.0,
                    op="gather")
    return single(f"{label} backward", kernel)


@operator(
    "gather",
    params=dict(elements=size("elements gathered (the output)"),
                index_elements=size("int64 indices read (default: one per output element)", optional=True),
                dtype=precision("precision of the source")),
    kinds=("gather",),
    aten=("aten::gather", "aten::index_select", "aten::index"),
    backward=_gather_backward,
    example=dict(elements=2048 * 4096, index_elements=2048),
)
def gather(elements: Any, index_elements: Any = None, dtype: Any = "bf16") -> Workload:
    """y = x[idx]: gather ``elements`` elements of x through int64 indices, one kernel.

    Bytes: index_elements*8 (default one index per element) + elements*e read, elements*e written;
    no FLOPs. A row gather (index_select of T rows of a [V, d] table) reads T indices and T*d elements:
    T*8 + 2*T*d*e, as ``embedding``. NB: an element read twice is counted twice (it may hit in L2).
    """
    e = element_bytes(dtype)
    index = elements if index_elements is None else index_elements
    # idx [index_elements] (int64), x [...] -> y [elements]
    kernel = Kernel("gather", "gather", dtype, bytes_read=index * INDEX_BYTES + elements * e,
                    bytes_written=elements * e, op="gather")
    return single("gather", kernel)
