"""A program's summary, the way a profile report reads: op groups with T_SOL, prediction and share, the top kernels.

``program_summary(w, gpu)`` predicts a whole program (a model's step, a captured program) and groups its kernels by
the operator that emitted them (``Kernel.op``, the calibration key; backward kernels apart, as the profile report
keeps them; an unmodeled ATen op of a captured program by its own name). Launches are what the CPU issues
(``workload.issued_launches``); distinct kernels are the shapes a prediction computes once. With ``measured`` (a
step time in seconds): MFU against it, the SOL fraction and the prediction's error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ._display import fmt_seconds
from ._validate import positive
from .errors import OptionError
from .capture.program import CapturedProgram
from .hardware import as_gpu
from .prediction import predict
from .prediction.groups import GroupRow, KernelRow, group_of, program_rows, text_table
from .sol import mfu
from .workload import as_workload, issued_launches

__all__ = ["GroupRow", "KernelRow", "ProgramSummary", "program_summary", "group_of"]


@dataclass(frozen=True)
class ProgramSummary:
    """A program's prediction in the profile report's shape (module docstring)."""

    program: str
    gpu: str
    seconds: float  # predicted, the host's issue time included where the program is eager
    kernel_seconds: float
    host_seconds: float
    t_sol: float
    flops: float
    launches: float
    distinct: int
    groups: tuple[GroupRow, ...]
    top: tuple[KernelRow, ...]
    notes: tuple[str, ...]
    coverage: Optional[str] = None  # a captured program's coverage line
    memory: Optional[str] = None  # the memory footprint, where the caller gave one
    measured: Optional[float] = None
    precision: str = "bf16"  # the program's main precision: MFU is against its dense matrix peak

    @property
    def mfu(self) -> float:
        """MFU at the measured time where one was given, else at the prediction (dense peak of the main precision)."""
        return self._mfu(self.measured if self.measured is not None else self.seconds)

    def _mfu(self, seconds: float) -> float:
        return float(mfu(self.flops, seconds, self.gpu, dtype=self.precision))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (seconds, FLOPs, shares)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in ("program", "gpu", "seconds", "kernel_seconds", "host_seconds",
                                                              "t_sol", "flops", "launches", "distinct", "notes",
                                                              "coverage", "memory", "measured", "precision")}
        out["mfu"] = self.mfu
        out["groups"] = [g.__dict__ for g in self.groups]
        out["top_kernels"] = [k.__dict__ for k in self.top]
        if self.measured is not None:
            out["prediction_error"] = self.seconds / self.measured - 1.0
            out["sol_fraction"] = self.t_sol / self.measured
        return out

    def text(self) -> str:
        """What ``solkit model`` prints."""
        head = [f"{self.program} on {self.gpu}: {self.launches:,.0f} launches of {self.distinct} distinct kernels",
                f"predicted {fmt_seconds(self.seconds)} (kernels {fmt_seconds(self.kernel_seconds)}, the CPU's issue "
                f"{fmt_seconds(self.host_seconds)}); T_SOL {fmt_seconds(self.t_sol)}",
                f"model FLOPs {self.flops:.4g}; MFU {self._mfu(self.seconds):.1%} at the prediction"]
        if self.measured is not None:
            head.append(f"measured {fmt_seconds(self.measured)}: MFU {self._mfu(self.measured):.1%}, SOL fraction "
                        f"{self.t_sol / self.measured:.2f}, prediction {self.seconds / self.measured - 1.0:+.1%}")
        if self.coverage:
            head.append(self.coverage)
        if self.memory:
            head.append(self.memory)
        rows = [(g.group, f"{g.launches:,.0f}", str(g.kernels), f"{g.t_sol * 1e6:,.1f}", f"{g.predicted * 1e6:,.1f}",
                 f"{g.share:.0%}") for g in self.groups]
        top = [(k.name, str(k.count), f"{k.predicted_each * 1e6:,.2f}", f"{k.predicted * 1e6:,.1f}",
                f"{k.t_sol * 1e6:,.1f}", k.limiter) for k in self.top]
        parts = ["\n".join(head),
                 text_table(("op group", "launches", "kernels", "T_SOL us", "predicted us", "share"), rows),
                 f"top {len(top)} kernels by predicted time:",
                 text_table(("kernel", "runs", "us each", "us in all", "T_SOL us", "limiter"), top)]
        if self.notes:
            parts.append("\n".join(f"note: {n}" for n in self.notes))
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.text()


def program_summary(workload: Any, gpu: Any, measured: Any = None, top: int = 10, memory: Optional[str] = None,
                    host_probe_us: Any = None) -> ProgramSummary:
    """The summary of ``workload`` on ``gpu`` (module docstring); ``top`` kernels by predicted time; ``memory``: a line
    saying what the program holds (the caller's: a closed form's or a captured program's)."""
    w = as_workload(workload)
    if w.shape:
        raise OptionError(f"{w.name}: a program summary needs one shape, got a sweep of shape {w.shape}")
    if type(top) is not int or top < 1:
        raise OptionError(f"top must be a positive integer, got {top!r}")
    seconds = None if measured is None else float(positive("measured", measured))
    g = as_gpu(gpu)
    p = predict(w, g, warn=False, host_probe_us=host_probe_us)
    group_rows, rows = program_rows(w.counted, p.kernels)
    coverage = w.recipe.coverage if isinstance(w.recipe, CapturedProgram) else None
    summary = ProgramSummary(w.name, g.name, float(p.seconds), float(p.kernel_seconds), float(p.host_seconds),
                             float(p.t_sol), float(w.flops), float(issued_launches(w)), len(w.counted),
                             group_rows, rows[:top], p.notes, None if coverage is None else str(coverage),
                             memory, seconds, w.precision)
    return summary
