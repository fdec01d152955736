"""Embedding lookup: gather ``tokens`` rows of a [vocab, d] table."""

from __future__ import annotations

from typing import Any

from .._validate import broadcast, dim
from ..precision import storage_bytes
from ..workload import Kernel, Workload
from ._common import dtype_of

__all__ = ["embedding", "INDEX_BYTES"]

#: bytes of one token id (int64, as torch.nn.Embedding takes)
INDEX_BYTES = 8


def embedding(tokens: Any, vocab: Any, d_model: Any, dtype: Any = "bf16") -> Workload:
    """y [T, d] = table [vocab, d][ids [T]], one gather kernel.

    Bytes: T*8 (int64 ids) + T*d*e (rows read) + T*d*e (y written); no FLOPs.
    NB: a row read twice is counted twice (repeated ids may hit in L2); the table size
    (vocab) does not change the compulsory traffic.
    """
    dt = dtype_of(dtype)
    t, v, d = dim("tokens", tokens), dim("vocab", vocab), dim("d_model", d_model)
    broadcast(tokens=t, vocab=v, d_model=d)
    e = storage_bytes(dt)
    kernel = Kernel(
        name="embedding",
        kind="gather",
        precision=dt,
        bytes_read=t * INDEX_BYTES + t * d * e,
        bytes_written=t * d * e,
    )
    return Workload("embedding", (kernel,))
