"""``predict``: a workload's calibrated expected time on a GPU (or a System), per kernel, never below T_SOL.

    t = launch_floor + sum_k count_k * body_k + (launches - 1) * kernel_gap

for a plain workload (``kernel.kernel_seconds`` gives each body); an eager program's CPU issue time and
collectives overlapped on NCCL's streams run through the four-clock timeline (``host.program_map``).
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

import numpy as np

from .._typing import GPULike
from .._display import fmt_seconds
from .._num import any_, broadcast_to, maximum, result, where
from .._validate import checked_call, flag, unchecked, user_stacklevel
from ..errors import PerformanceWarning
from ..sol import roofline
from ..workload import FSDP_GROUP_OP, Kernel, Workload, as_workload, host_syncs, issued_launches
from .collectives import collective_seconds, link_note
from .gpu import calibration, stack_note
from .host import (cpu_bound, host_probe_seconds, host_scaled, overlapped, program_host_overhead, program_map,
                   scheduled)
from .kernel import (ALIGN_BYTES, combined, kernel_seconds, kernel_terms, limiter, misaligned_slowdown, physical,
                     sdpa_backend, terms_and_body, whole_terms)
from .result import KernelPrediction, Prediction
from .timeline import clocks

__all__ = ["predict"]

# the bodies of the checked functions predict calls with arguments it built (unchecked: the same figures, no wrapper)
_roofline = unchecked(roofline)
_calibration = unchecked(calibration)
_kernel_terms = unchecked(kernel_terms)
_kernel_seconds = unchecked(kernel_seconds)

@checked_call
def predict(workload: Workload, gpu: GPULike, warn: bool = True, neighbours: bool = True,
            host_probe_us: float | None = None) -> Prediction:
    """Calibrated expected time of ``workload`` on ``gpu`` (a GPU, or a ``System`` for collectives), per kernel, with limiters.

    Never below T_SOL, the workload's or any kernel's: the spec loader keeps efficiencies at most 1
    and measured ceilings at most the datasheet, and the result is floored at the bound regardless.
    Collectives take ``collective_seconds``; an eager program's CPU issue time and collectives
    overlapped on NCCL's streams run through the four-clock timeline of ``prediction.timeline``.
    ``neighbours=False``: the physical model alone, without the GPU's neighbour correction (``prediction.neighbours``).
    ``host_probe_us``: your machine's launch probe (``solkit.profile.host_probe()``, µs per small launch): an eager
    program's host time scales by it over the probe of the machine the host parameters were fitted on (NB:
    ``host_fsdp_group`` too, though it was fitted on steps that recorded no probe).
    """
    return predicted(workload, gpu, warn, neighbours, host_probe_us)


def predicted(workload: Workload, gpu: GPULike, warn: bool = True, neighbours: bool = True,
              host_probe_us: float | None = None, host_parameters: Mapping[str, float] | None = None) -> Prediction:
    """``predict``, with ``host_parameters`` (seconds by name, e.g. ``{"host_program": 0.0}``; after the probe's
    scaling) in place of the spec's: an engine that runs a program's host work its own way (``planning``'s generate)."""
    w = workload if type(workload) is Workload else as_workload(workload)
    if warn is not True:  # pragma: no mutate (True needs no check)
        flag("warn", warn)
    if neighbours is not True:  # pragma: no mutate
        flag("neighbours", neighbours)
    probe = None if host_probe_us is None else host_probe_seconds(host_probe_us)
    bound = _roofline(w, gpu)
    g = bound.gpu_spec
    cal = _calibration(g)
    if not neighbours and cal.neighbours is not None:
        cal = physical(cal)
    fit_probe = cal.host_probe
    if probe is not None:
        cal = host_scaled(cal, probe, g.name)
    if host_parameters is not None:
        cal = cal.replace(**host_parameters)
    counted = w.counted
    # each kernel's terms, and a sweep's body (else None: one shape's and a collective's are timed below)
    made = [(_kernel_terms(k, g, cal), None) if k.link is not None or type(k.bytes_read) is float
            else terms_and_body(k, g, cal) for k, _ in counted]
    terms = [(t, count) for (t, _), (_, count) in zip(made, counted)]
    notes: list[str] = [] if cal.calibrated else [cal.source]
    software = stack_note(g)
    if software is not None and cal.calibrated:  # an uncalibrated GPU's source already names the reference it borrows
        notes.append(software)
    bank = cal.neighbours
    moved: list[tuple[str, Any]] = []  # (name, c) of the kernels the neighbour correction moves
    sdpa = False
    bad: list[str] = []  # the misaligned GEMMs
    for (k, _), (t, _) in zip(counted, terms):  # one pass for the three (a scalar call's glue is most of its time)
        c = t.neighbour
        if bank is not None and (c != 0.0 if type(c) is float else bank.moves(c)):
            moved.append((k.name, c))
        if k.op == "sdpa_attention":
            sdpa = True
        if t.misaligned is True or (t.misaligned is not False and any_(t.misaligned)):
            bad.append(k.name)
    if moved:
        notes.append(bank.note(moved, bank.gpu or g.name))  # type: ignore[union-attr]  # moved: a bank (on its GPU)
    if sdpa:
        notes.append(f"attention impl='sdpa' runs {sdpa_backend(g).split('_')[0]}'s fused kernel on {g.architecture} "
                     f"(PyTorch 2.11's choice in fp16/bf16)")
    if bad:
        message = (
            f"{w.name}: GEMM leading dimension (k or n) not a multiple of {ALIGN_BYTES} bytes in {', '.join(bad)}; "
            f"expect about {misaligned_slowdown(cal):.2g}x the aligned compute time (pad e.g. a vocab to a multiple of 64)"
        )
        notes.append(message)
        if warn:
            warnings.warn(message, PerformanceWarning, stacklevel=user_stacklevel())
    bodies = [collective_seconds(k, bound.system_spec, cal) if k.link is not None else
              _kernel_seconds(t, cal)[0] if body is None else body for (k, _), (t, body) in zip(counted, made)]
    if bound.system_spec is not None and any(k.link is not None for k, _ in counted):
        notes.append(link_note(bound.system_spec, cal))

    def rows() -> tuple[KernelPrediction, ...]:
        out = []
        for (k, count), (t, _), kr, body in zip(counted, terms, bound.kernels, bodies):
            t = whole_terms(t, k, g, cal)
            _, compute, memory = _kernel_seconds(t, cal)
            limited = "link" if k.link is not None else limiter(t, cal, compute, memory)
            # never below the kernel's bound, whatever the calibration says
            factor = 1.0 if type(t.neighbour) is float and t.neighbour == 0.0 else result(np.exp(t.neighbour))
            out.append(KernelPrediction(k.name, k.kind, count, result(maximum(body, kr.t_sol)), result(compute),
                                        result(memory), kr.t_sol, result(t.wave_efficiency), limited,
                                        result(t.misaligned), factor))
        return tuple(out)

    plain = w.recipe is None and w.autograd is None and w.schedule is None
    single = plain and len(counted) == 1 and counted[0][0].link is None  # one plain kernel: no schedule
    host: Any = 0.0
    if single and type(w.parts[0][0]) is Kernel:  # one kernel, no program: no host time, no syncs, nothing overlapped
        count = counted[0][1]
        busy: Any = bodies[0] if count == 1 else bodies[0] * count
        return _prediction(w, g, bound, cal, notes, combined(terms, bodies, cal), busy, host, 0, rows)
    busy = sum(body if count == 1 else body * count for body, (k, count) in zip(bodies, counted)
               if not overlapped(k))  # the compute stream's busy time
    seconds = combined(terms, bodies, cal) if single or not scheduled(w) else None
    issued = issued_launches(w) if w.recipe is not None else 0.0  # a program's only (no recipe: no host time)
    per_launch = program_host_overhead(w, cal, issued)
    hosted = any_(per_launch)  # an eager program's host time (per point of a sweep)
    if hosted or seconds is None:
        by_kernel = {id(k): maximum(body, kr.t_sol) for (k, _), body, kr in zip(counted, bodies, bound.kernels)}
        extra = {FSDP_GROUP_OP: cal.host_fsdp_group} if cal.host_fsdp_group else None
        gap: Any = cal.kernel_gap
        if any(t.present is not True for t, _ in terms):  # a sweep's absent kernels take no gap (as in combined)
            gap = {id(k): where(t.present, cal.kernel_gap, 0.0) for (k, _), (t, _) in zip(counted, terms)}
        host, *streams = clocks(program_map(w, by_kernel, per_launch, gap, extra))
        end = maximum(maximum(streams[0], streams[1]), streams[2])
        # without host time, as combined: the launch floor, then a gap per launch after the first
        seconds = end if hosted else end + cal.launch_floor - cal.kernel_gap
    if hosted:
        if probe is not None:
            notes.append(f"host time scaled by your launch probe over the fit machine's: {probe * 1e6:.3g} / "
                         f"{fit_probe * 1e6:.3g} us")
        longest, issue, kernels = float(np.max(seconds)), float(np.max(host)), float(np.max(busy))  # a sweep: its longest
        if bool(cpu_bound(longest, issue)):
            pace = "CPU-bound (the GPU waits for launches)"
        elif issue > kernels:  # the host sets the pace until its last launch; the GPU's tail runs after it
            pace = f"partly CPU-bound (the GPU busy {kernels / longest:.0%} of the time: it waits for launches)"
        else:
            pace = "GPU-bound"
        notes.append(f"eager program: the CPU issues {float(np.max(issued)):,.0f} launches in {fmt_seconds(issue)} "
                     f"({float(np.max(per_launch)) * 1e6:.3g} us each) against {fmt_seconds(kernels)} of kernels: {pace}")
    syncs = host_syncs(w)
    if syncs:
        notes.append(f"the host waits for the GPU {syncs:,} time(s) (device-to-host reads)"
                     + (": the GPU idles while the launches after each are issued" if hosted else
                        "; no host time is modelled for this program, so they cost nothing here"))
    return _prediction(w, g, bound, cal, notes, seconds, busy, host, syncs, rows)


def _prediction(w: Workload, g: Any, bound: Any, cal: Any, notes: list[str], seconds: Any, busy: Any, host: Any,
                syncs: int, rows: Any) -> Prediction:
    """The ``Prediction`` of ``predict``'s figures (seconds floored at T_SOL)."""
    p = object.__new__(Prediction)
    s = object.__setattr__
    s(p, "workload", w.name)
    s(p, "gpu", g.name)
    t_sol = bound.t_sol
    if type(seconds) is float and type(t_sol) is float and not w.shape:  # pragma: no mutate (as the line below gives)
        s(p, "seconds", seconds if seconds >= t_sol else t_sol)  # never below T_SOL
    else:
        s(p, "seconds", broadcast_to(maximum(seconds, t_sol), w.shape))
    s(p, "t_sol", t_sol)
    s(p, "calibrated", cal.calibrated)
    s(p, "launch_floor", cal.launch_floor)
    s(p, "notes", tuple(notes))
    s(p, "kernel_seconds", busy if type(busy) is float else result(busy))  # pragma: no mutate (result keeps a float)
    s(p, "host_seconds", host if type(host) is float else result(host))  # pragma: no mutate
    s(p, "host_syncs", syncs)
    s(p, "_rows", rows)
    s(p, "_program", w)
    return p

