"""A prediction's kernels the way a profile report reads them: op groups with T_SOL, prediction and share, top kernels.

A group is the operator that emitted a kernel (``Kernel.op``, the calibration key), its backward kernels apart (as the
profile report keeps them), an unmodeled ATen op of a captured program by its own name. Launches are what the CPU
issues (a kernel's ``launches`` times its count); distinct kernels are the shapes a prediction computes once. Both
``Prediction``'s summary and ``solkit.summary.program_summary`` (``solkit model``) read these rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Protocol, Sequence

import numpy as np

from ..kernel import Kernel


class Predicted(Protocol):
    """What the rows read of one kernel's prediction (``result.KernelPrediction`` is one)."""

    @property
    def seconds(self) -> Any: ...
    @property
    def t_sol(self) -> Any: ...
    @property
    def limiter(self) -> Any: ...

__all__ = ["GroupRow", "KernelRow", "group_of", "program_rows", "text_table"]

#: the ends of a backward kernel's name (registered gradients: "dgrad", "wgrad", "x backward"; captured: "op backward
#: (module)")
_BACKWARD = (" backward", " dgrad", " wgrad")


def group_of(k: Kernel) -> str:
    """The report's group of a kernel: its operator (``op``), "backward" apart; an unmodeled one by its ATen name."""
    name = k.name
    backward = any(tag in name for tag in _BACKWARD)
    if k.op == "unmodeled":
        return f"{name.split(' ', 1)[0]} (unmodeled)"
    return f"{k.op} backward" if backward else k.op


@dataclass(frozen=True)
class GroupRow:
    """One op group: its launches and distinct kernels, T_SOL and predicted kernel seconds, share of the kernel time
    (None where the program has no kernel time to share)."""

    group: str
    launches: float
    kernels: int
    t_sol: float
    predicted: float
    share: Optional[float]


@dataclass(frozen=True)
class KernelRow:
    """One distinct kernel: how often it runs, its predicted seconds per run and in all, T_SOL in all, its limiter."""

    name: str
    count: int
    predicted_each: float
    predicted: float
    t_sol: float
    limiter: str


def program_rows(counted: Sequence[tuple[Kernel, int]],
                 predicted: Sequence[Predicted]) -> tuple[tuple[GroupRow, ...], tuple[KernelRow, ...]]:
    """The op groups and the distinct kernels of one shape, each sorted by predicted seconds in all (largest first).

    ``counted``: the workload's (kernel, count) pairs; ``predicted``: its ``Prediction.kernels``, in the same order.
    A group's share is of the kernel bodies summed (None where they sum to 0: nothing to share).
    """
    groups: dict[str, list[tuple[float, float, float]]] = {}  # group -> (launches, predicted, T_SOL) per kernel
    rows = []
    for (k, count), kp in zip(counted, predicted):
        total = float(kp.seconds) * count
        t_sol = float(kp.t_sol) * count
        groups.setdefault(group_of(k), []).append((float(np.max(k.launches)) * count, total, t_sol))
        rows.append(KernelRow(k.name, count, float(kp.seconds), total, t_sol, str(kp.limiter)))
    busy = math.fsum(r.predicted for r in rows)
    group_rows = []
    for name, items in groups.items():
        predicted_s = math.fsum(t for _, t, _ in items)
        group_rows.append(GroupRow(name, math.fsum(n for n, _, _ in items), len(items),
                                   math.fsum(s for _, _, s in items), predicted_s,
                                   predicted_s / busy if busy > 0.0 else None))
    group_rows.sort(key=lambda r: -r.predicted)
    rows.sort(key=lambda r: -r.predicted)
    return tuple(group_rows), tuple(rows)


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns aligned under a rule: the first left, the rest right."""
    table = [tuple(header), *(tuple(r) for r in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
