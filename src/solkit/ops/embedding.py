"""Embedding lookup: gather ``tokens`` rows of a [vocab, d] table."""

from __future__ import annotations

from typing import Any

from .._num import minimum
from ..workload import Kernel, Rows, Workload
from ._common import element_bytes, single
from .registry import operator, precision, size

__all__ = ["embedding", "INDEX_BYTES"]

#: bytes of one token id (int64, as torch.nn.Embedding takes)
INDEX_BYTES = 8


def _embedding_backward(label: str, tokens: Any, vocab: Any, d_model: Any, dtype: str) -> Workload:
    """Zero the table's gradient, then add each token's output gradient into its row.

    zero: writes vocab*d*e. scatter-add: reads the ids (T*8), dy [T,d] and the T rows it adds
    into, writes those rows back: T*8 + 2*T*d*e read, T*d*e written, T*d adds (no model FLOPs:
    the forward has none). NB: a row hit twice is counted twice.
    """
    e = element_bytes(dtype)
    zero = Kernel(f"{label} grad zero", "copy", dtype, bytes_written=vocab * d_model * e, op="copy")
    scatter = Kernel(f"{label} backward", "gather", dtype, vector_flops=tokens * d_model,
                     bytes_read=tokens * INDEX_BYTES + 2.0 * tokens * d_model * e, bytes_written=tokens * d_model * e,
                     model_flops=0.0, op="embedding")
    return Workload.of(f"{label} backward", ((zero, 1), (scatter, 1)))


@operator(
    "embedding",
    params=dict(tokens=size("ids looked up"), vocab=size("rows of the table"), d_model=size("width of a row"),
                dtype=precision("precision of the table")),
    keys=("embedding", "embedding_unaligned", "embedding_fewindex"),
    kinds=("gather",),
    aten=("aten::embedding",),
    aten_backward=("aten::embedding_dense_backward",),
    backward=_embedding_backward,
    example=dict(tokens=8192, vocab=128256, d_model=4096),
)
def embedding(tokens: Any, vocab: Any, d_model: Any, dtype: Any = "bf16") -> Workload:
    """y [T, d] = table [vocab, d][ids [T]], one gather kernel.

    Bytes: T*8 (int64 ids) + min(T, vocab)*d*e (rows read) + T*d*e (y written); no FLOPs.
    The compulsory read is the distinct rows, at most min(T, vocab): a row asked for twice
    can come from L2 (measured: 13,885 tokens from a 1,569-row table gathered faster than
    T*d*e bytes allow).
    """
    e = element_bytes(dtype)
    t, d = tokens, d_model
    # ids [T] (int64), table [vocab, d] -> y [T, d]
    kernel = Kernel("embedding", "gather", dtype, bytes_read=t * INDEX_BYTES + minimum(t, vocab) * d * e,
                    bytes_written=t * d * e, rows=Rows(t, d))
    return single("embedding", kernel)
