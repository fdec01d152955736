"""Matrix multiplication: ``matmul`` and ``linear`` (matmul with bias and an optional epilogue)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._validate import broadcast, choice, dim, flag
from ..precision import default_out_precision, normalize, storage_bytes
from ..workload import GemmDims, Kernel, Workload

__all__ = ["matmul", "gemm_kernel", "EPILOGUES", "EPILOGUE_FLOPS"]

#: vector FLOPs per output element of a fused epilogue (an add is 1; GELU (tanh form) about 8)
EPILOGUE_FLOPS = {"none": 0, "relu": 1, "gelu": 8, "silu": 4}
EPILOGUES = tuple(EPILOGUE_FLOPS)


def gemm_kernel(
    name: str,
    m: np.ndarray,
    n: np.ndarray,
    k: np.ndarray,
    batch: Any = 1.0,
    dtype: str = "bf16",
    out_dtype: Optional[str] = None,
    read_a: bool = True,
    read_b: bool = True,
    b_batched: bool = True,
    bias: bool = False,
    epilogue: str = "none",
    kind: str = "gemm",
) -> Kernel:
    """One GEMM kernel from validated float64 dims: [batch, m, k] @ [batch?, k, n] -> [batch, m, n].

    Bytes: A (b*m*k) and B (b*k*n, or k*n if ``b_batched`` is false) in ``dtype``, C (b*m*n) in
    ``out_dtype``, a bias of n elements in ``out_dtype`` if asked. FLOPs: 2*b*m*n*k on matrix
    units, plus the bias add (1 per output) and the epilogue on vector units.
    """
    e_in = storage_bytes(dtype)
    out = default_out_precision(dtype) if out_dtype is None else normalize(out_dtype, "out_dtype")
    e_out = storage_bytes(out)
    b = np.asarray(batch, dtype=np.float64)
    reads = (b * m * k * e_in if read_a else 0.0) + ((b if b_batched else 1.0) * k * n * e_in if read_b else 0.0)
    if bias:
        reads = reads + n * e_out
    epi = choice("epilogue", epilogue, EPILOGUES)
    vector = b * m * n * (EPILOGUE_FLOPS[epi] + (1 if bias else 0))
    return Kernel(
        name=name,
        kind=kind,
        precision=dtype,
        matrix_flops=2.0 * b * m * n * k,
        vector_flops=vector,
        bytes_read=reads,
        bytes_written=b * m * n * e_out,
        gemm=GemmDims(m=m, n=n, k=k, batch=b),
        op="matmul",
    )


def matmul(
    m: Any,
    n: Any,
    k: Any,
    dtype: Any = "bf16",
    batch: Any = 1,
    out_dtype: Any = None,
    bias: bool = False,
    epilogue: str = "none",
) -> Workload:
    """C = A @ B (+ bias, then ``epilogue``), ``batch`` independent products, one kernel.

    A [b, m, k] @ B [b, k, n] -> C [b, m, n].
    Bytes: (b*m*k + b*k*n)*e_in + b*m*n*e_out (+ n*e_out for a bias).
    FLOPs: 2*b*m*n*k on matrix units (a multiply-add is 2); a bias adds b*m*n vector FLOPs and
    an epilogue its per-element cost (relu 1, silu 4, gelu 8) on vector units.
    Output precision defaults to the input's, except fp8 -> bf16 and int8 -> int32.
    """
    dt = normalize(dtype)
    mm, nn, kk, bb = dim("m", m), dim("n", n), dim("k", k), dim("batch", batch)
    broadcast(m=mm, n=nn, k=kk, batch=bb)
    flag("bias", bias)
    # a [b,m,k] @ b [b,k,n] -> c [b,m,n]
    kernel = gemm_kernel("matmul", mm, nn, kk, bb, dt, out_dtype, bias=bool(bias), epilogue=epilogue)
    return Workload("matmul", (kernel,))
