"""A measured program joined to its speed of light: ``load_profile`` and ``Profile``.

Each GPU kernel of a trace is attributed to the op call that launched it (``chrome.read_chrome``);
each op call is mapped to a registered operator's workload (``aten.map_records``); the kernels of
one call share that workload, and every aggregate counts a call once. Times:

- ``kernel_seconds``: the sum of the kernels' durations (memcpy/memset excluded);
- ``span_seconds``: first kernel start to last kernel end; ``idle_seconds``: the span minus the
  union of busy intervals over all streams;
- ``modeled_seconds``: the measured time of the mapped kernels; ``coverage`` = modeled / kernel seconds;
- ``sol_seconds``: the sum of T_SOL over the mapped calls; ``predicted_seconds``: the calibrated
  prediction of their kernel bodies (a trace times kernels on the GPU, so the launch floor and the
  gaps between launches, which ``sk.predict`` adds to an isolated measurement, are left out);
- ``mfu``: the mapped calls' model FLOPs / (dense matrix peak of their main precision x span).

A call measured below its T_SOL is labelled "faster than DRAM SOL (likely L2-resident)" instead of
given a SOL fraction above 1: a trace does not flush the L2 between kernels, so a small kernel can
read data its predecessor left there, which the DRAM bound does not allow for.
"""

from __future__ import annotations

import math
from functools import cached_property
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Optional

from .._typing import GPUOnly
from .._validate import checked_call
from ..errors import ArgumentTypeError, MeasurementError
from ..hardware import as_gpu
from ..precision import rate_class
from ..prediction import predict
from ..sol import roofline
from ..workload import Workload, chain
from . import timeline
from .calls import L2_RESIDENT, ProfiledCall, ProfileKernel
from ._read import KernelRecord, detect_format, read_text
from ..ops.aten import Mapped, Unmapped, map_records
from .chrome import read_chrome
from .ncu import read_ncu

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU

__all__ = ["load_profile", "Profile", "ProfileKernel", "ProfiledCall", "L2_RESIDENT", "read_records"]

def read_records(paths: Any) -> tuple[tuple[str, str, tuple[KernelRecord, ...]], ...]:
    """(path, format, records) of each profile file (a path, or a list/tuple of paths)."""
    if isinstance(paths, (list, tuple)):
        if not paths:
            raise ArgumentTypeError("path must be a profile file or a non-empty list of them, got an empty list")
        items = list(paths)
    else:
        items = [paths]
    out = []
    for p in items:
        text, path = read_text(p)
        fmt = detect_format(text, path)
        records = read_chrome(text, path) if fmt == "chrome" else read_ncu(text, path)
        if not any(r.kind == "kernel" for r in records):
            raise MeasurementError(f"profile {path!r} holds no GPU kernels (recorded without CUDA activity?)")
        out.append((path, fmt, records))
    return tuple(out)


def _main_precision(calls: Iterable[ProfiledCall]) -> str:
    """The rate class holding most matrix FLOPs of the mapped calls (bf16 when there are none)."""
    share: dict[str, float] = {}
    for c in calls:
        if c.workload is None:
            continue
        for k, count in c.workload.counted:
            if float(k.matrix_flops) > 0:
                cls = rate_class(k.precision)
                share[cls] = share.get(cls, 0.0) + float(k.matrix_flops) * count
    return max(share, key=share.__getitem__) if share else "bf16"


@dataclass(frozen=True)
class Profile:
    """A measured program on one GPU (or, with ``ranks``, the slowest of several): kernels, calls, aggregates."""

    path: str
    format: str  # "chrome" or "ncu"
    gpu: "GPU"
    kernels: tuple[ProfileKernel, ...]
    calls: tuple[ProfiledCall, ...]
    records: tuple[KernelRecord, ...] = field(repr=False)
    ranks: tuple["Profile", ...] = ()

    # ---- aggregates (computed once: a Profile never changes) ------------------------------------
    @cached_property
    def kernel_seconds(self) -> float:
        """Sum of the kernels' durations (s)."""
        return timeline.kernel_seconds(self.records)

    @cached_property
    def span_seconds(self) -> float:
        """First kernel start to last kernel end (s)."""
        return timeline.span_seconds(self.records)

    @cached_property
    def busy_seconds(self) -> float:
        """The union of the kernels' busy intervals over all streams (s)."""
        return timeline.busy_seconds(self.records)

    @cached_property
    def idle_seconds(self) -> float:
        """Span minus busy time: the GPU ran no kernel (s)."""
        return timeline.idle_seconds(self.records)

    @cached_property
    def launch_gaps(self) -> timeline.LaunchGaps:
        """The idle gaps between consecutive busy intervals, largest first."""
        return timeline.launch_gaps(self.records)

    @cached_property
    def modeled_seconds(self) -> float:
        """Measured time of the kernels whose op call maps to a solkit workload (s)."""
        return math.fsum(c.seconds for c in self.calls if c.workload is not None)

    @property
    def coverage(self) -> float:
        """modeled_seconds / kernel_seconds (0.0 when the kernels took no measurable time)."""
        total = self.kernel_seconds
        return self.modeled_seconds / total if total > 0 else 0.0

    @cached_property
    def sol_seconds(self) -> float:
        """Sum of T_SOL over the mapped calls (s)."""
        return math.fsum(c.t_sol for c in self.calls if c.t_sol is not None)

    @cached_property
    def predicted_seconds(self) -> float:
        """Calibrated prediction of the mapped calls' kernel bodies (s)."""
        return math.fsum(c.predicted for c in self.calls if c.predicted is not None)

    @cached_property
    def workload(self) -> Workload:
        """A Workload of every mapped call, each once: ``sk.roofline``, ``sk.predict`` and ``sk.mfu`` apply."""
        parts = [c.workload for c in self.calls if c.workload is not None]
        if not parts:
            raise MeasurementError(f"profile {self.path!r}: no kernel maps to a solkit operator, so there is no workload")
        return chain(f"profile {self.path}", *parts)

    @cached_property
    def flops(self) -> float:
        """Model FLOPs of the mapped calls."""
        return math.fsum(float(c.workload.flops) for c in self.calls if c.workload is not None)

    @cached_property
    def mfu_precision(self) -> str:
        """The precision whose dense peak ``mfu`` divides by: the one holding most matrix FLOPs."""
        return _main_precision(self.calls)

    @property
    def mfu(self) -> float:
        """Model FLOPs of the mapped calls / (dense matrix peak of ``mfu_precision`` x span); 0.0 for an empty span."""
        span = self.span_seconds
        return self.flops / (self.gpu.peak_flops(self.mfu_precision, "matrix") * span) if span > 0 else 0.0

    # ---- the report ----------------------------------------------------------------------------
    def groups(self) -> list[dict[str, Any]]:
        """One row per op group (operator, backward, or unmodeled ATen op), largest measured time first."""
        from .report import group_rows

        return group_rows(self)

    def opportunities(self, top: int = 10) -> list[dict[str, Any]]:
        """The call shapes with the most time above their calibrated prediction, largest first."""
        from .report import opportunity_rows

        return opportunity_rows(self, top)

    def to_dict(self, top: int = 10) -> dict[str, Any]:
        """Plain dict for JSON: aggregates (seconds), groups, opportunities, launch gaps."""
        from .report import profile_dict

        return profile_dict(self, top)

    def to_frame(self) -> Any:
        """The op groups as a pandas DataFrame (needs pandas)."""
        from .report import groups_frame

        return groups_frame(self)

    def report(self, top: int = 10) -> str:
        """The text report ``print(profile)`` shows."""
        from .report import text_report

        return text_report(self, top)

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        return (f"Profile({self.path!r} on {self.gpu.name}: {len(self.kernels)} kernels, "
                f"{self.kernel_seconds * 1e3:.3f} ms of kernels in a {self.span_seconds * 1e3:.3f} ms span, "
                f"coverage {self.coverage:.1%})")

    def _repr_html_(self) -> str:
        from .report import html_report

        return html_report(self)


def _nvtx_results(records: list[KernelRecord], nvtx: dict[str, Workload]) -> tuple[list[Any], list[Any]]:
    """(results, call keys) of ncu rows: a row whose innermost NVTX range is a key of ``nvtx`` maps to its workload;
    consecutive rows under the same range occurrence are one call."""
    results: list[Any] = []
    keys: list[Any] = []
    occurrence = 0
    for i, r in enumerate(records):
        name = r.nvtx[-1] if r.nvtx else None
        if i and (not r.nvtx or r.nvtx != records[i - 1].nvtx):
            occurrence += 1
        w = nvtx.get(name) if name is not None else None
        if w is None:
            results.append(Unmapped(f"NVTX range {name!r} is not in nvtx=" if name else "an ncu row names no op; "
                                    "pass nvtx={range name: workload}"))
            keys.append(("kernel", i))
        else:
            results.append(Mapped(w.call.op if w.call is not None else w.name, {}, w, False))
            keys.append(("nvtx", occurrence))
    return results, keys


def _check_nvtx(nvtx: Any) -> dict[str, Workload]:
    if nvtx is None:
        return {}
    if not isinstance(nvtx, dict) or not all(isinstance(k, str) and isinstance(v, Workload) for k, v in nvtx.items()):
        raise ArgumentTypeError(f"nvtx must be a dict of NVTX range name -> Workload, got {nvtx!r:.120}")
    return nvtx


def _build(path: str, fmt: str, records: tuple[KernelRecord, ...], g: "GPU", nvtx: dict[str, Workload]) -> Profile:
    """Join one file's kernel records to workloads, bounds and predictions."""
    kernel_records = [r for r in records if r.kind == "kernel"]
    if fmt == "ncu":  # rows name no ATen op: NVTX ranges are the only handle
        results, keys = _nvtx_results(kernel_records, nvtx)
    else:
        results = map_records(kernel_records)
        # the kernels one host op launched (its External id); kernels with no op are their own call
        keys = [("op", r.op_id) if r.op_id is not None else ("kernel", i) for i, r in enumerate(kernel_records)]
    order: dict[Any, list[int]] = {}
    for i, key in enumerate(keys):
        order.setdefault(key, []).append(i)
    bounds: dict[int, tuple[float, float]] = {}  # id(workload) -> (t_sol, predicted bodies)
    calls: list[ProfiledCall] = []
    call_of = [0] * len(kernel_records)
    for indices in order.values():
        first = kernel_records[indices[0]]
        res = results[indices[0]]
        seconds = math.fsum(kernel_records[i].seconds for i in indices)
        dram = [kernel_records[i].measured_bytes for i in indices]
        measured_bytes = math.fsum(dram) if all(b is not None for b in dram) else None  # type: ignore[arg-type]
        if isinstance(res, Mapped):
            w = res.workload
            cached = bounds.get(id(w))
            if cached is None:
                p = predict(w, g, warn=False)
                bodies = math.fsum(float(k.seconds) * k.count for k in p.kernels)
                cached = bounds[id(w)] = (float(roofline(w, g).t_sol), bodies)
            t_sol, predicted = cached
            call = ProfiledCall(first.op or first.name, res.operator, res.backward, first.shapes, first.dtypes,
                                tuple(indices), seconds, w, res.operator, t_sol, predicted, res.notes, measured_bytes)
        else:
            call = ProfiledCall(first.op or first.name, None, first.backward, first.shapes, first.dtypes,
                                tuple(indices), seconds, None, res.reason, None, None, (), measured_bytes)
        for i in indices:
            call_of[i] = len(calls)
        calls.append(call)
    kernels = tuple(
        ProfileKernel(r.name, r.start, r.seconds, r.stream, r.op, r.shapes, r.dtypes, calls[call_of[i]].workload,
                      calls[call_of[i]].reason, r.measured_bytes, call_of[i], calls[call_of[i]].backward)
        for i, r in enumerate(kernel_records)
    )
    return Profile(path, fmt, g, kernels, tuple(calls), tuple(kernel_records))


@checked_call
def load_profile(path: Any, gpu: GPUOnly, nvtx: Optional[dict[str, Workload]] = None) -> Profile:
    """A profile (torch.profiler Chrome trace or ``ncu --csv --page raw``, plain or gzip) joined to SOL on ``gpu``.

    ``path``: a file, or a list of files (one per rank of a distributed job): the result is then
    the slowest rank (largest span), with every rank in ``ranks``. ``nvtx``: for Nsight Compute
    files, which name no ATen op, the workload of each NVTX range (its innermost range names the
    rows it holds); the measured DRAM bytes of every row are kept either way (``measured_bytes``).
    """
    g = as_gpu(gpu)
    ranges = _check_nvtx(nvtx)
    files = read_records(path)
    profiles = tuple(_build(p, fmt, records, g, ranges) for p, fmt, records in files)
    if len(profiles) == 1:
        return profiles[0]
    slowest = max(profiles, key=lambda p: p.span_seconds)
    return Profile(slowest.path, slowest.format, g, slowest.kernels, slowest.calls, slowest.records, profiles)

