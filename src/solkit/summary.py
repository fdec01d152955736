"""A program's summary, the way a profile report reads: op groups with T_SOL, prediction and share, the top kernels.

``program_summary(w, gpu)`` predicts a whole program (a model's step, a captured program); its text is the Prediction's
own summary (``Prediction.summary``: what it assumes, host and GPU time, op groups, top kernels, notes), its kernels
grouped by the operator that emitted them (``Kernel.op``, the calibration key; backward kernels apart, as the profile
report keeps them; an unmodeled ATen op of a captured program by its own name). Launches are what the CPU issues
(``workload.issued_launches``); distinct kernels are the shapes a prediction computes once. With ``measured`` (a
step time in seconds): MFU against it, the SOL fraction and the prediction's error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ._display import fmt_seconds
from ._validate import positive
from .errors import OptionError
from .capture.program import CapturedProgram
from .hardware import as_gpu
from .prediction import Prediction, predict
from .prediction.groups import GroupRow, KernelRow, group_of, program_rows
from .sol import mfu
from .workload import as_workload

__all__ = ["GroupRow", "KernelRow", "ProgramSummary", "program_summary", "group_of"]


@dataclass(frozen=True)
class ProgramSummary:
    """A program's prediction in the profile report's shape (module docstring): the Prediction's own summary, with the
    model's FLOPs and MFU, a captured program's coverage and the memory it holds."""

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
    assumptions: str = ""  # what the prediction assumes (``Prediction.assumptions``)
    prediction: Optional[Prediction] = field(default=None, repr=False, compare=False)  # what program_summary summarised

    @property
    def mfu(self) -> float:
        """MFU at the measured time where one was given, else at the prediction (dense peak of the main precision)."""
        return self._mfu(self.measured if self.measured is not None else self.seconds)

    def _mfu(self, seconds: float) -> float:
        return float(mfu(self.flops, seconds, self.gpu, dtype=self.precision))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON, in the CLI's naming scheme (times in seconds ending in ``_s``, ``model_flops``,
        ``n_kernels`` the distinct kernels, ``launches`` the launches)."""
        out: dict[str, Any] = {
            "program": self.program, "gpu": self.gpu, "assumptions": self.assumptions, "predicted_s": self.seconds,
            "kernel_s": self.kernel_seconds, "host_s": self.host_seconds, "t_sol_s": self.t_sol,
            "model_flops": self.flops, "launches": self.launches, "n_kernels": self.distinct, "notes": self.notes,
            "coverage": self.coverage, "memory": self.memory, "measured_s": self.measured, "precision": self.precision,
            "mfu": self.mfu,
        }
        out["groups"] = [{"group": g.group, "launches": g.launches, "n_kernels": g.kernels, "t_sol_s": g.t_sol,
                          "predicted_s": g.predicted, "share": g.share} for g in self.groups]
        out["top_kernels"] = [{"name": k.name, "count": k.count, "predicted_each_s": k.predicted_each,
                               "predicted_s": k.predicted, "t_sol_s": k.t_sol, "limiter": k.limiter} for k in self.top]
        if self.measured is not None:
            out["prediction_error"] = self.seconds / self.measured - 1.0
            out["sol_fraction"] = self.t_sol / self.measured
        return out

    def lines(self) -> tuple[str, ...]:
        """The lines ``solkit model`` adds to the Prediction's summary: FLOPs and MFU, the measured time's, a captured
        program's coverage, the memory."""
        out = [f"model FLOPs {self.flops:.4g}; MFU {self._mfu(self.seconds):.1%} at the prediction"]
        if self.measured is not None:
            out.append(f"measured {fmt_seconds(self.measured)}: MFU {self._mfu(self.measured):.1%}, SOL fraction "
                       f"{self.t_sol / self.measured:.2f}, prediction {self.seconds / self.measured - 1.0:+.1%}")
        return tuple(out + [line for line in (self.coverage, self.memory) if line])

    def text(self) -> str:
        """What ``solkit model`` prints: the Prediction's summary (``Prediction.summary``) with ``lines()`` after its
        pace, its ``top`` kernels and every note."""
        if self.prediction is None:
            raise OptionError(f"{self.program}: this ProgramSummary holds no prediction to print (program_summary "
                              "builds one that does)")
        return self.prediction.summary(top=max(len(self.top), 1), notes=None, extra=self.lines(), detail=False)

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
    return ProgramSummary(w.name, g.name, float(p.seconds), float(p.kernel_seconds), float(p.host_seconds),
                          float(p.t_sol), float(w.flops), float(p.launches), p.distinct_kernels, group_rows, rows[:top],
                          p.notes, None if coverage is None else str(coverage), memory, seconds, w.precision,
                          p.assumptions, p)
