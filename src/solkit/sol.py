"""Roofline bound, SOL fraction, MFU and HFU: pure functions of a workload and a GPU spec.

A kernel's time bound is max(matrix FLOPs / matrix peak of its precision, vector FLOPs /
vector peak, bytes / DRAM bandwidth). A workload's T_SOL is the sum over its kernels (they
run one after another). Peaks are dense datasheet figures unless ``sparse=True``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._display import fmt_seconds, html_table, plain
from ._validate import as_result, dim, finite_result, flag, positive
from .errors import MeasurementError, OptionalDependencyError, OptionError, ShapeError
from .hardware import as_gpu
from .precision import normalize, rate_class
from .workload import Kernel, Workload, as_workload
if TYPE_CHECKING:  # pragma: no cover
    from .hardware.schema import GPU

__all__ = [
    "KernelRoofline",
    "Roofline",
    "roofline",
    "sol_fraction",
    "mfu",
    "hfu",
    "achieved_flops",
    "achieved_bandwidth",
]


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - exercised only without pandas
        raise OptionalDependencyError("to_frame() needs pandas: pip install 'solkit[pandas]'") from exc
    return pd


def _ratio(flops: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """FLOP per byte; a kernel that moves no bytes (absent in a sweep) has intensity 0."""
    flops, nbytes = np.broadcast_arrays(np.asarray(flops, dtype=np.float64), np.asarray(nbytes, dtype=np.float64))
    return np.divide(flops, nbytes, out=np.zeros(flops.shape), where=nbytes > 0)


def _bound(t_compute: np.ndarray, t_memory: np.ndarray) -> Any:
    """'compute' where the compute time is at least the memory time, else 'memory'."""
    return as_result(np.where(t_compute >= t_memory, "compute", "memory"))


@dataclass(frozen=True)
class KernelRoofline:
    """One kernel's bound: times in seconds, the roof that binds it, its intensity."""

    name: str
    kind: str
    precision: str
    t_matrix: Any
    t_vector: Any
    t_compute: Any
    t_memory: Any
    t_sol: Any
    bound: Any
    flops: Any
    executed_flops: Any
    bytes: Any
    intensity: Any


@dataclass(frozen=True)
class Roofline:
    """A workload's speed-of-light bound on one GPU, with a per-kernel breakdown.

    ``t_compute`` and ``t_memory`` are per-kernel sums; ``t_sol`` is the sum of each kernel's
    max and so is at least max(t_compute, t_memory). ``bound`` names the roof behind the
    larger share of ``t_sol``.
    """

    workload: str
    gpu: str
    t_sol: Any
    t_compute: Any
    t_memory: Any
    bound: Any
    intensity: Any
    ridge_point: Any
    flops: Any
    executed_flops: Any
    bytes: Any
    kernels: tuple[KernelRoofline, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (arrays become lists) for JSON; times in seconds."""
        out = {k: plain(v) for k, v in self.__dict__.items() if k != "kernels"}
        out["kernels"] = [{k: plain(v) for k, v in kr.__dict__.items()} for kr in self.kernels]
        return out

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per configuration of a sweep (needs ``pip install 'solkit[pandas]'``)."""
        pd = _pandas()
        shape = np.shape(self.t_sol)
        columns = {
            "t_sol_s": self.t_sol,
            "t_compute_s": self.t_compute,
            "t_memory_s": self.t_memory,
            "bound": self.bound,
            "intensity_flop_per_byte": self.intensity,
            "model_flops": self.flops,
            "executed_flops": self.executed_flops,
            "bytes": self.bytes,
        }
        flat = {k: np.broadcast_to(np.asarray(v), shape).reshape(-1) for k, v in columns.items()}
        frame = pd.DataFrame(flat)
        frame.insert(0, "gpu", self.gpu)
        frame.insert(0, "workload", self.workload)
        return frame

    def __repr__(self) -> str:
        if np.ndim(self.t_sol):
            return f"Roofline({self.workload!r} on {self.gpu}: sweep of shape {np.shape(self.t_sol)})"
        return (
            f"Roofline({self.workload!r} on {self.gpu}: T_SOL {fmt_seconds(self.t_sol)}, {self.bound}-bound, "
            f"t_compute {fmt_seconds(self.t_compute)}, t_memory {fmt_seconds(self.t_memory)}, "
            f"intensity {self.intensity:.4g} FLOP/B (ridge {self.ridge_point:.4g}), {len(self.kernels)} kernel(s))"
        )

    def _repr_html_(self) -> str:
        if np.ndim(self.t_sol):
            return f"<p>{repr(self)}</p>"
        rows = [
            (k.name, k.kind, k.precision, k.executed_flops / 1e9, k.bytes / 1e6, k.intensity, k.t_compute * 1e6,
             k.t_memory * 1e6, k.t_sol * 1e6, k.bound)
            for k in self.kernels
        ]
        rows.append(("total", "", "", self.executed_flops / 1e9, self.bytes / 1e6, self.intensity, self.t_compute * 1e6,
                     self.t_memory * 1e6, self.t_sol * 1e6, self.bound))
        header = ("kernel", "kind", "precision", "GFLOP", "MB", "FLOP/B", "t_compute us", "t_memory us", "t_sol us", "bound")
        return html_table(header, rows, f"Roofline of {self.workload} on {self.gpu}")


def _kernel_times(kernel: Kernel, gpu: GPU, sparse: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_matrix, t_vector, t_memory) of one kernel in seconds."""
    t_matrix = np.zeros_like(kernel.matrix_flops)
    if np.any(kernel.matrix_flops > 0):
        t_matrix = kernel.matrix_flops / gpu.peak_flops(kernel.precision, "matrix", sparse=sparse)
    t_vector = np.zeros_like(kernel.vector_flops)
    if np.any(kernel.vector_flops > 0):
        t_vector = kernel.vector_flops / gpu.peak_flops(kernel.vector_precision, "vector")
    t_memory = kernel.bytes / gpu.memory_bandwidth
    return t_matrix, t_vector, t_memory


def roofline(workload: Workload, gpu: Any, sparse: bool = False) -> Roofline:
    """The speed-of-light bound of ``workload`` on ``gpu`` (a GPU, name, alias or path)."""
    w = as_workload(workload)
    g = as_gpu(gpu)
    flag("sparse", sparse)
    rows = []
    total_c = total_m = total_sol = compute_share = np.float64(0.0)
    for k in w.kernels:
        t_mat, t_vec, t_mem = _kernel_times(k, g, sparse)
        t_c = np.maximum(t_mat, t_vec)
        t_sol = np.maximum(t_c, t_mem)
        total_c = total_c + t_c
        total_m = total_m + t_mem
        total_sol = total_sol + t_sol
        compute_share = compute_share + np.where(t_c >= t_mem, t_sol, 0.0)
        rows.append(
            KernelRoofline(
                name=k.name,
                kind=k.kind,
                precision=k.precision,
                t_matrix=as_result(t_mat),
                t_vector=as_result(t_vec),
                t_compute=as_result(t_c),
                t_memory=as_result(t_mem),
                t_sol=as_result(t_sol),
                bound=_bound(t_c, t_mem),
                flops=as_result(k.model_flops),
                executed_flops=as_result(k.executed_flops),
                bytes=as_result(k.bytes),
                intensity=as_result(_ratio(k.executed_flops, k.bytes)),
            )
        )
    memory_share = total_sol - compute_share
    if any(np.any(k.matrix_flops > 0) for k in w.kernels):
        ridge = g.peak_flops(w.precision, "matrix", sparse=sparse) / g.memory_bandwidth
    else:
        ridge = g.ridge_point("fp32", "vector")
    shape = w.shape
    return Roofline(
        workload=w.name,
        gpu=g.name,
        t_sol=as_result(np.broadcast_to(total_sol, shape)),
        t_compute=as_result(np.broadcast_to(total_c, shape)),
        t_memory=as_result(np.broadcast_to(total_m, shape)),
        bound=_bound(np.broadcast_to(compute_share, shape), np.broadcast_to(memory_share, shape)),
        intensity=as_result(np.broadcast_to(_ratio(w.executed_flops, w.bytes), shape)),
        ridge_point=ridge,
        flops=as_result(np.broadcast_to(w.flops, shape)),
        executed_flops=as_result(np.broadcast_to(w.executed_flops, shape)),
        bytes=as_result(np.broadcast_to(w.bytes, shape)),
        kernels=tuple(rows),
    )


def sol_fraction(workload: Workload, gpu: Any, measured_seconds: Any, sparse: bool = False) -> Any:
    """T_SOL / measured time: 1.0 is the speed of light, 0.25 is four times slower than it."""
    seconds = positive("measured_seconds", measured_seconds)
    t_sol = np.asarray(roofline(workload, gpu, sparse=sparse).t_sol)
    try:
        result = t_sol / seconds
    except ValueError:
        raise ShapeError(
            f"measured_seconds of shape {np.shape(seconds)} does not broadcast with the workload's shape {np.shape(t_sol)}"
        ) from None
    return as_result(finite_result("measured_seconds", result, "it is too small to divide by"))


def _n_gpus(n_gpus: Any) -> np.ndarray:
    try:
        return dim("n_gpus", n_gpus)
    except ValueError as exc:
        raise MeasurementError(str(exc)) from None


def _utilization(flops: Any, seconds: Any, gpu: Any, dtype: Any, n_gpus: Any, sparse: bool, executed: bool) -> Any:
    """FLOPs / (matrix peak of ``dtype`` x seconds x n_gpus), shared by ``mfu`` and ``hfu``.

    A Workload whose matrix kernels all run in another precision than ``dtype`` is refused: an
    fp8 workload measured against the bf16 peak would read as MFU 2.0.
    """
    precision = normalize(dtype, "dtype")
    g = as_gpu(gpu)
    if isinstance(flops, Workload):
        f = flops.executed_flops if executed else flops.flops
        classes = {rate_class(k.precision) for k in flops.kernels if np.any(k.matrix_flops > 0)}
        if classes and rate_class(precision) not in classes:
            raise OptionError(
                f"dtype is {precision!r} but the workload's matrix kernels run in {', '.join(sorted(classes))}; "
                f"pass dtype= the precision whose peak the utilization should be measured against"
            )
    else:
        f = positive("flops", flops)
    s = positive("seconds", seconds)
    n = _n_gpus(n_gpus)
    peak = g.peak_flops(precision, "matrix", sparse=sparse)
    return as_result(finite_result("seconds", f / (peak * s * n), "it is too small to divide by"))


def mfu(flops: Any, seconds: Any, gpu: Any, dtype: Any = "bf16", n_gpus: Any = 1, sparse: bool = False) -> Any:
    """Model FLOPs utilization: model FLOPs / (dense matrix peak of ``dtype`` x seconds x n_gpus).

    ``flops`` is a number (or array) of model FLOPs, or a Workload (its ``flops``; its matrix
    kernels must include ``dtype``'s precision).
    """
    return _utilization(flops, seconds, gpu, dtype, n_gpus, sparse, executed=False)


def hfu(flops: Any, seconds: Any, gpu: Any, dtype: Any = "bf16", n_gpus: Any = 1, sparse: bool = False) -> Any:
    """Hardware FLOPs utilization: executed FLOPs (a Workload's ``executed_flops``) / (peak x seconds x n_gpus)."""
    return _utilization(flops, seconds, gpu, dtype, n_gpus, sparse, executed=True)


def achieved_flops(workload: Workload, seconds: Any) -> Any:
    """Executed FLOP/s reached by a run of ``workload`` that took ``seconds``."""
    rate = as_workload(workload).executed_flops / positive("seconds", seconds)
    return as_result(finite_result("seconds", rate, "it is too small to divide by"))


def achieved_bandwidth(workload: Workload, seconds: Any) -> Any:
    """DRAM bytes/s reached (compulsory bytes over the measured time)."""
    rate = as_workload(workload).bytes / positive("seconds", seconds)
    return as_result(finite_result("seconds", rate, "it is too small to divide by"))
