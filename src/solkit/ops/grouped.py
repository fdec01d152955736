"""Grouped GEMMs with uneven groups: a mixture of experts' expert GEMMs over the tokens routed to each expert.

Group i multiplies its g_i rows of A by its own B_i: A [sum g, k] @ B [E, k, n] -> C [sum g, n] (PyTorch's
``torch._grouped_mm`` with ``offs`` the running sums of g). One kernel; its tiles are counted per group
(``Gemm.groups``), so the prediction is wave-quantized over the actual tiles, summed over the groups.
"""

from __future__ import annotations

from typing import Any

from ..errors import ShapeError
from ..workload import Gemm, Kernel, Workload
from ._common import element_bytes, out_precision, single
from .registry import lengths, operator, precision, size

__all__ = ["grouped_matmul"]


def _check_groups(args: dict[str, Any]) -> None:
    """At least one group has rows."""
    if not any(g > 0 for g in args["group_sizes"]):
        raise ShapeError(f"group_sizes must give at least one group a row, got {len(args['group_sizes'])} groups of 0")


def _grouped(name: str, groups: tuple[tuple[Any, Any, Any], ...], big: tuple[Any, Any, Any], dtype: str, read: Any,
             written: Any, model: Any, layout: Any = None) -> Kernel:
    """One grouped-GEMM kernel over ``groups`` (m_i, n_i, k_i), ``big`` the largest (m, n, k); its bytes and model FLOPs."""
    flops = sum(2.0 * m * n * k for m, n, k in groups)
    return Kernel(name, "gemm", dtype, matrix_flops=flops, bytes_read=read, bytes_written=written, model_flops=model,
                  gemm=Gemm(big[0], big[1], big[2], float(len(groups)), layout=layout, groups=groups, split=False),
                  op="matmul")


def _grouped_backward(label: str, group_sizes: tuple[float, ...], n: Any, k: Any, dtype: str,
                      out_dtype: Any) -> Workload:
    """dgrad and wgrad, both grouped GEMMs over the same groups, in the forward's precision.

    dgrad: dA [sum g, k] = dC [sum g, n] @ B_i^T [n, k] per group (groups (g_i, k, n)); reads dC and the B_i of the
    groups with rows, writes dA. wgrad: dB_i [k, n] = A_i^T [k, g_i] @ dC_i [g_i, n] (groups (k, n, g_i): the
    reduction is ragged); reads A and dC, writes all E gradients (a group of no rows gets zeros). 4*sum(g)*n*k FLOPs.
    """
    e = element_bytes(dtype)
    rows, active, experts = sum(group_sizes), sum(1 for g in group_sizes if g > 0), len(group_sizes)
    most = max(group_sizes)
    half = 2.0 * rows * n * k
    dgrad = _grouped(f"{label} dgrad", tuple((g, k, n) for g in group_sizes), (most, k, n), dtype,
                     (rows * n + active * n * k) * e, rows * k * e, half)
    wgrad = _grouped(f"{label} wgrad", tuple((k, n, g) for g in group_sizes), (k, n, most), dtype,
                     (rows * k + rows * n) * e, experts * k * n * e, half, layout="wgrad")
    return Workload.of(f"{label} backward", ((dgrad, 1), (wgrad, 1)))


@operator(
    "grouped_matmul",
    params=dict(
        group_sizes=lengths("rows of each group (the tokens routed to each expert), >= 0 each", minimum=0,
                            optional=False),
        n=size("columns of each B_i and of C"),
        k=size("the reduction dimension (columns of A, rows of each B_i)"),
        dtype=precision("precision of A and B"),
        out_dtype=precision("precision of C (default: the input's; fp8 -> bf16)", optional=True),
    ),
    keys=("matmul", "matmul_grouped"),
    kinds=("gemm",),
    aten=("aten::_grouped_mm",),
    backward=_grouped_backward,
    check=_check_groups,
    example=dict(group_sizes=[512, 96, 1024, 0, 300, 2048, 64, 52], n=14336, k=4096),
)
def grouped_matmul(group_sizes: Any, n: Any, k: Any, dtype: Any = "bf16", out_dtype: Any = None) -> Workload:
    """C_i = A_i @ B_i over groups of g_i rows, one kernel (a mixture of experts' expert GEMM).

    A [sum g, k] @ B [E, k, n] -> C [sum g, n], E = len(group_sizes).
    Bytes: sum(g)*k*e_in (A) + E_active*k*n*e_in (the B_i of the groups with rows; NB: a group of no rows has no
    tiles and reads nothing) + sum(g)*n*e_out (C). FLOPs: 2*sum(g)*n*k on matrix units.
    Equal groups count as ``matmul(g, n, k, batch=E)``.
    """
    e_in, e_out = element_bytes(dtype), element_bytes(out_precision(dtype, out_dtype))
    rows, active = sum(group_sizes), sum(1 for g in group_sizes if g > 0)
    # a [sum g, k] @ b [E, k, n] -> c [sum g, n]
    kernel = _grouped("grouped matmul", tuple((g, n, k) for g in group_sizes), (max(group_sizes), n, k), dtype,
                      (rows * k + active * k * n) * e_in, rows * n * e_out, 2.0 * rows * n * k)
    return single("grouped matmul", kernel)
