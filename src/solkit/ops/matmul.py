"""Matrix multiplication: ``matmul`` (batched, with a bias and a fused epilogue), and the GEMM counting helpers."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._num import product
from ..workload import Gemm, Kernel, Workload
from ._common import element_bytes, out_precision, single
from .registry import boolean, operator, option, precision, size

__all__ = ["matmul", "gemm", "gemm_backward", "EPILOGUES", "EPILOGUE_FLOPS"]

#: vector FLOPs per output element of a fused epilogue (GELU, tanh form, about 8)
EPILOGUE_FLOPS = {"none": 0, "relu": 1, "gelu": 8, "silu": 4}
EPILOGUES = tuple(EPILOGUE_FLOPS)


def gemm(
    name: str,
    m: Any,
    n: Any,
    k: Any,
    dtype: str,
    batch: Any = 1.0,
    out_dtype: Any = None,
    bias: bool = False,
    epilogue: str = "none",
    weight_dtype: Any = None,
) -> Kernel:
    """One GEMM kernel: [batch, m, k] @ [batch, k, n] -> [batch, m, n], from validated dimensions.

    Bytes: A (b*m*k) read in ``dtype``, B (b*k*n) in ``weight_dtype`` (default ``dtype``),
    C (b*m*n) written in the output precision, a bias of n elements read in it.
    FLOPs: 2*b*m*n*k on matrix units; the bias add (1 per output) and the epilogue on vector units.
    """
    e_in, e_out = element_bytes(dtype), element_bytes(out_precision(dtype, out_dtype))
    e_w = element_bytes(weight_dtype) if weight_dtype is not None else e_in
    if type(m) is float and type(n) is float and type(k) is float and type(batch) is float:
        return _one_gemm(name, m, n, k, dtype, batch, e_in, e_out, e_w, bias, epilogue)
    c = product(batch, m, n)  # output elements
    # A [b,m,k] and B [b,k,n] read, C [b,m,n] written
    read = _plus(product(batch, m, k, e_in), product(batch, k, n, e_w))
    if bias:
        read = _plus(read, product(n, e_out))
    per_output = EPILOGUE_FLOPS[epilogue] + (1 if bias else 0)
    vector = product(c, per_output) if per_output else 0.0  # pragma: no mutate (0.0 or an array of zeros: the same)
    written = product(c, e_out)
    return Kernel(name, "gemm", dtype, matrix_flops=product(2.0, c, k, out=c), vector_flops=vector,  # (c spent)
                  bytes_read=read, bytes_written=written, gemm=Gemm(m, n, k, batch), op="matmul")


def _one_gemm(name: str, m: float, n: float, k: float, dtype: str, batch: float, e_in: float, e_out: float, e_w: float,
              bias: bool, epilogue: str) -> Kernel:
    """``gemm`` of one shape, in plain Python: ``product``'s multiplications in its order (1.0 times the factors left to
    right; a test holds the two paths equal)."""
    c = batch * m * n  # output elements
    # A [b,m,k] and B [b,k,n] read, C [b,m,n] written
    read = batch * m * k * e_in + batch * k * n * e_w
    if bias:
        read = read + n * e_out
    per_output = EPILOGUE_FLOPS[epilogue] + (1 if bias else 0)
    vector = float(c * per_output) if per_output else 0.0  # pragma: no mutate (as gemm)
    return Kernel(name, "gemm", dtype, matrix_flops=2.0 * c * k, vector_flops=vector, bytes_read=read,
                  bytes_written=c * e_out, gemm=Gemm(m, n, k, batch), op="matmul")


def _plus(a: Any, b: Any) -> Any:
    """a + b, into ``a`` where it is a fresh array of the sum's shape (a product's)."""
    if type(a) is np.ndarray and a.dtype == np.float64 and np.shape(b) in (a.shape, ()):
        return np.add(a, b, out=a)
    return a + b


def gemm_backward(label: str, m: Any, n: Any, k: Any, dtype: str, batch: Any = 1.0) -> tuple[Kernel, Kernel]:
    """dgrad and wgrad of C = A @ B, both GEMMs in the forward's precision (4*b*m*n*k FLOPs in all).

    dgrad: dA [b,m,k] = dC [b,m,n] @ B^T [b,n,k], an (m, k, n) GEMM;
    wgrad: dB [b,k,n] = A^T [b,k,m] @ dC [b,m,n], a (k, n, m) GEMM.
    """
    dgrad = gemm(f"{label} dgrad", m, k, n, dtype, batch)  # dC [b,m,n] @ B^T [b,n,k] -> dA [b,m,k]
    wgrad = gemm(f"{label} wgrad", k, n, m, dtype, batch)  # A^T [b,k,m] @ dC [b,m,n] -> dB [b,k,n]
    # the wgrad reads A [m,k] and dC [m,n] as stored: its rows are k and n long, whatever m is
    return dgrad, wgrad._replace(gemm=Gemm(k, n, m, batch, layout="wgrad"))


def _matmul_backward(label: str, m: Any, n: Any, k: Any, dtype: str, batch: Any, out_dtype: Any, bias: bool,
                     epilogue: str, weight_dtype: Any = None) -> Workload:
    """The epilogue's gradient, the bias gradient, dgrad and wgrad.

    Epilogue: reads dY and the pre-activation Z, writes dZ (b*m*n each, output precision).
    Bias: db [n] = the sum of dZ over b*m rows: reads b*m*n, writes n elements.
    Memory-bound kernels execute twice their forward's vector FLOPs (the convention of
    ``memory_bound_backward``), so the step's model FLOPs are 3x the forward's.
    """
    e_out = element_bytes(out_precision(dtype, out_dtype))
    c = batch * m * n
    parts: list[tuple[Kernel, int]] = []
    if epilogue != "none":
        flops = 2.0 * EPILOGUE_FLOPS[epilogue] * c
        parts.append((Kernel(f"{label} {epilogue} backward", "elementwise", dtype, vector_flops=flops,
                             bytes_read=2.0 * c * e_out, bytes_written=c * e_out, op="elementwise"), 1))
    if bias:
        parts.append((Kernel(f"{label} bias grad", "reduction", dtype, vector_flops=2.0 * c, bytes_read=c * e_out,
                             bytes_written=n * e_out, op="reduction"), 1))
    parts += [(kernel, 1) for kernel in gemm_backward(label, m, n, k, dtype, batch)]
    return Workload.of(f"{label} backward", tuple(parts))


@operator(
    "matmul",
    params=dict(
        m=size("rows of A and C"),
        n=size("columns of B and C"),
        k=size("the reduction dimension (columns of A, rows of B)"),
        dtype=precision("precision of A and B"),
        batch=size("independent products (a batched matmul)"),
        out_dtype=precision("precision of C (default: the input's; fp8 -> bf16, int8 -> int32)", optional=True),
        bias=boolean("add a bias of n elements to C"),
        epilogue=option("activation applied to C in the same kernel", *EPILOGUES),
        weight_dtype=precision("precision B is stored in, dequantized in the kernel (int4: W4A16; default: dtype)",
                               optional=True),
    ),
    keys=("matmul", "matmul_skinny", "matmul_legacy", "matmul_misaligned", "matmul_odd"),
    kinds=("gemm",),
    aten=("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear", "aten::_scaled_mm",
          "aten::_int_mm", "aten::_addmm_activation"),
    backward=_matmul_backward,
    example=dict(m=4096, n=4096, k=4096),
)
def matmul(
    m: Any,
    n: Any,
    k: Any,
    dtype: Any = "bf16",
    batch: Any = 1,
    out_dtype: Any = None,
    bias: Any = False,
    epilogue: Any = "none",
    weight_dtype: Any = None,
) -> Workload:
    """C = A @ B (+ bias, then ``epilogue``), ``batch`` independent products, one kernel.

    A [b, m, k] @ B [b, k, n] -> C [b, m, n].
    Bytes: (b*m*k + b*k*n)*e_in + b*m*n*e_out (+ n*e_out for a bias).
    FLOPs: 2*b*m*n*k on matrix units (a multiply-add is 2); a bias adds b*m*n vector FLOPs and
    an epilogue its per-element cost (relu 1, silu 4, gelu 8) on vector units.
    Output precision defaults to the input's, except fp8 -> bf16 and int8 -> int32.
    ``weight_dtype``: B stored in another precision and dequantized to ``dtype`` inside the kernel
    (weight-only quantization, e.g. int4 weights with bf16 activations: B read at 0.5 bytes an element);
    the arithmetic stays ``dtype``'s. NB: the dequantization's own work is not counted.
    """
    # a [b,m,k] @ b [b,k,n] -> c [b,m,n]
    return single("matmul", gemm("matmul", m, n, k, dtype, batch, out_dtype, bias, epilogue, weight_dtype))
