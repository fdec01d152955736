"""Plain-text tables of roofline results."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from .hardware import as_gpu
from .roofline import Roofline, roofline
from .workload import Workload

__all__ = ["roofline_rows", "format_table", "roofline_table"]

COLUMNS = ("op", "gpu", "kernels", "GFLOP", "MB", "FLOP/B", "t_compute us", "t_memory us", "t_sol us", "bound")


def _row(label: str, r: Roofline, n_kernels: int) -> tuple[str, ...]:
    if np.ndim(r.t_sol):
        raise ValueError(f"{label}: a table row needs scalar shapes; use roofline() directly for sweeps")
    return (
        label,
        r.gpu,
        str(n_kernels),
        f"{r.executed_flops / 1e9:,.2f}",
        f"{r.bytes / 1e6:,.2f}",
        f"{r.intensity:,.1f}",
        f"{r.t_compute * 1e6:,.2f}",
        f"{r.t_memory * 1e6:,.2f}",
        f"{r.t_sol * 1e6:,.2f}",
        r.bound,
    )


def roofline_rows(workloads: dict[str, Workload], gpus: Iterable[Any]) -> list[tuple[str, ...]]:
    """One row per (workload, GPU), GPUs varying fastest."""
    specs = [as_gpu(g) for g in gpus]
    return [_row(label, roofline(w, g), len(w.kernels)) for label, w in workloads.items() for g in specs]


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str] = COLUMNS) -> str:
    """Align columns: text left, numbers right."""
    table = [tuple(header), *map(tuple, rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    numeric = [all(_is_number(r[i]) for r in table[1:]) for i in range(len(header))]
    lines = []
    for j, r in enumerate(table):
        cells = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def roofline_table(workloads: dict[str, Workload], gpus: Iterable[Any]) -> str:
    """A text table of each workload's roofline on each GPU."""
    return format_table(roofline_rows(workloads, gpus))
