"""A training step: the forward kernels, then each kernel's backward, in reverse order.

Backward rules (model FLOPs of a step = 3 x forward for GEMMs and convs, the usual MFU convention):

- GEMM C[m,n] = A[m,k] @ B[k,n]: dgrad dA = dC @ B^T, an (m, k, n) GEMM, and wgrad
  dB = A^T @ dC, a (k, n, m) GEMM; both in the forward's precision.
- Convolution: a data-gradient and a weight-gradient conv, each with the forward's FLOPs and
  compulsory bytes (NB: their reads and writes are the forward's, swapped in meaning).
- Flash attention: one kernel recomputing S and P; 2.5 x the forward's executed matrix FLOPs
  (five products instead of two), 2 x its model FLOPs; reads Q, K, V, O and dO, writes dQ,
  dK and dV.
- Memory-bound kernels: read what the forward read plus the output gradient, write a gradient
  for each input; 2 x the forward's vector FLOPs (NB: an upper bound for adds, about right for
  norms).
"""

from __future__ import annotations

from dataclasses import replace

from ..ops.matmul import gemm_kernel
from ..workload import Kernel, Workload, as_workload

__all__ = ["training_step", "backward_kernels"]

#: flash attention backward executes five matrix products for the forward's two
ATTENTION_BACKWARD_EXECUTED = 2.5


def backward_kernels(kernel: Kernel) -> tuple[Kernel, ...]:
    """The kernels of one forward kernel's backward pass."""
    g = kernel.gemm
    if kernel.kind == "gemm" and g is not None:
        dgrad = gemm_kernel(f"{kernel.name} dgrad", g.m, g.k, g.n, g.batch, kernel.precision)  # dC [m,n] @ B^T [n,k]
        wgrad = gemm_kernel(f"{kernel.name} wgrad", g.k, g.n, g.m, g.batch, kernel.precision)  # A^T [k,m] @ dC [m,n]
        return dgrad, wgrad
    if kernel.kind == "conv":
        return (
            replace(kernel, name=f"{kernel.name} dgrad"),
            replace(kernel, name=f"{kernel.name} wgrad"),
        )
    if kernel.kind == "attention":
        return (
            replace(
                kernel,
                name=f"{kernel.name} backward",
                matrix_flops=ATTENTION_BACKWARD_EXECUTED * kernel.matrix_flops,
                model_flops=2.0 * kernel.model_flops,
                bytes_read=kernel.bytes_read + 2.0 * kernel.bytes_written,  # Q, K, V and O, dO
                bytes_written=kernel.bytes_read,  # dQ, dK, dV
            ),
        )
    return (
        replace(
            kernel,
            name=f"{kernel.name} backward",
            matrix_flops=2.0 * kernel.matrix_flops,
            vector_flops=2.0 * kernel.vector_flops,
            model_flops=2.0 * kernel.model_flops,
            bytes_read=kernel.bytes_read + kernel.bytes_written,
            bytes_written=kernel.bytes_read,
        ),
    )


def training_step(forward: Workload) -> Workload:
    """Forward then backward (kernels in reverse order); model FLOPs are 3 x the forward's for GEMMs."""
    w = as_workload(forward, "forward")
    backward = tuple(k for kernel in reversed(w.kernels) for k in backward_kernels(kernel))
    return Workload(f"{w.name} + backward", w.kernels + backward)
