"""The result objects of ``predict``: a workload's expected time (``Prediction``) and each kernel's (``KernelPrediction``)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._display import fmt_seconds, html_table, plain
from .._num import result

__all__ = ["KernelPrediction", "Prediction"]


@dataclass(frozen=True)
class KernelPrediction:
    """One kernel's expected time per launch (its body, without the workload's launch floor), its count and limiter."""

    name: str
    kind: str
    count: int
    seconds: Any
    t_compute: Any
    t_memory: Any
    t_sol: Any
    wave_efficiency: Any
    limiter: Any
    misaligned: Any
    neighbour: Any = 1.0  # the factor the neighbour correction put on its body (1.0: none; prediction.neighbours)


class Prediction:
    """Expected time of a workload on one GPU, per kernel (``kernels``, built on demand), with the calibration it used."""

    __slots__ = ("workload", "gpu", "seconds", "t_sol", "calibrated", "launch_floor", "notes", "kernel_seconds",
                 "host_seconds", "host_syncs", "_rows")
    _FIELDS = ("workload", "gpu", "seconds", "t_sol", "calibrated", "launch_floor", "notes", "kernel_seconds", "host_seconds",
               "host_syncs")

    workload: str
    gpu: str
    seconds: Any
    t_sol: Any
    calibrated: bool
    launch_floor: float
    notes: tuple[str, ...]
    kernel_seconds: Any  # the kernel bodies summed (GPU busy time)
    host_seconds: Any  # the CPU's time to issue an eager program's launches (0: not an eager program)
    host_syncs: int  # the times the host waits for the GPU (device-to-host reads: ``workload.Sync``)
    _rows: Any  # () -> the per-kernel rows

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Prediction is immutable: cannot set {name!r}")

    @property
    def kernels(self) -> tuple[KernelPrediction, ...]:
        """Per-kernel breakdown, one row per distinct kernel (times per launch)."""
        return self._rows()

    @property
    def sol_fraction(self) -> Any:
        """T_SOL / predicted time: the fraction of the speed of light this prediction reaches."""
        return result(np.asarray(self.t_sol) / np.asarray(self.seconds))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON; times in seconds."""
        out = {k: plain(getattr(self, k)) for k in self._FIELDS}
        out["kernels"] = [{k: plain(v) for k, v in kp.__dict__.items()} for kp in self.kernels]
        return out

    def __repr__(self) -> str:
        if np.ndim(self.seconds):
            return f"Prediction({self.workload!r} on {self.gpu}: sweep of shape {np.shape(self.seconds)})"
        limits = ", ".join(f"{k.name}: {k.limiter}" for k in self.kernels)
        cal = "calibrated" if self.calibrated else "UNCALIBRATED defaults"
        return (f"Prediction({self.workload!r} on {self.gpu}: {fmt_seconds(self.seconds)} ({cal}), "
                f"T_SOL {fmt_seconds(self.t_sol)}, SOL fraction {self.sol_fraction:.2f}; {limits})")

    def _repr_html_(self) -> str:
        if np.ndim(self.seconds):
            return f"<p>{repr(self)}</p>"
        rows: list[tuple[Any, ...]] = [(k.name, k.count, k.kind, k.seconds * 1e6, k.t_compute * 1e6, k.t_memory * 1e6, k.t_sol * 1e6,
                 k.wave_efficiency, k.limiter) for k in self.kernels]
        rows.append(("launch floor", "", "", self.launch_floor * 1e6, "", "", "", "", ""))
        rows.append(("total", "", "", self.seconds * 1e6, "", "", self.t_sol * 1e6, "", ""))
        header = ("kernel", "count", "kind", "predicted us (each)", "compute us", "memory us", "t_sol us", "wave eff.",
                  "limiter")
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return html_table(header, rows, f"Prediction of {self.workload} on {self.gpu}") + notes

