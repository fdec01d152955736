"""Programs' host time and schedule: the CPU's time to issue an eager program, and its launches on the streams.

An eager program (a recipe whose ``kernels`` is "eager": ``workload.Program``) costs the CPU
``host_program`` (its preamble) + ``host_layer`` per layer + ``host_launch`` (training:
``host_launch_training``) per issued launch; ``program_map`` lays its launches on the four clocks of
``prediction.timeline`` (the host, the compute stream, NCCL's gradient and prefetch streams).
A program is CPU-bound when the host's issue time sets its pace: its time is within ``CPU_BOUND`` of
the host time (the one definition: the calibration classifies measured steps by it, ``predict``'s note
predicted ones; a program whose host takes longer than its kernels but ends in a GPU tail after its last
launch, a training step's optimizer, is "partly CPU-bound" in the note).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from .._num import maximum
from .._validate import checked_call, positive
from ..errors import ArgumentTypeError, OptionError
from ..hardware.parameters import PARAMETERS, Calibration
from ..workload import HostCalls, Join, Kernel, Pipeline, Sync, Workload, issued_launches
from .timeline import IDENTITY, Map, compose, join, launch, power, wait

__all__ = ["CPU_BOUND", "cpu_bound", "HOST_TIME_PARAMETERS", "PROBE_RANGE_US", "host_probe_seconds", "host_scaled",
           "program_host_overhead", "captured_host_overhead", "weighted_extra", "program_map", "overlapped", "scheduled"]

#: a program is CPU-bound (the GPU waits for launches) when its time is within 10% of its host (issue) time
CPU_BOUND = 1.1


@checked_call
def cpu_bound(seconds: Any, host: Any) -> Any:
    """Whether a program of ``seconds`` whose CPU issues it in ``host`` seconds is CPU-bound: seconds < CPU_BOUND x host."""
    return np.asarray(seconds) < CPU_BOUND * np.asarray(host)


def overlapped(k: Kernel) -> bool:
    """Whether ``k`` is a collective on an NCCL stream of its own (``Link.overlap``), beside the compute stream."""
    return k.link is not None and bool(k.link.overlap)


def scheduled(w: Workload) -> bool:
    """Whether ``w`` holds overlapped collectives, a join, a pipeline or a host sync (then the timeline, not a plain sum,
    gives its time)."""
    if w.schedule is not None:
        return True
    return any(overlapped(node) if isinstance(node, Kernel) else scheduled(node) for node, _ in w.parts)


@checked_call
def program_map(w: Workload, body: dict[int, Any], host: float, gap: Any,
                extra: Optional[Mapping[str, float]] = None) -> Map:
    """The timeline map of ``w`` (``prediction.timeline``): each launch issued after ``host`` seconds (plus ``extra[op]`` for a
    kernel of that calibration key: the host work a framework's hooks do there), running its body + ``gap`` per
    launch (a float, or per kernel by ``id``: a sweep's absent kernels take none).

    Collectives with ``Link.overlap`` run on that NCCL stream; a sub-workload whose ``schedule`` is a ``Join``
    makes the compute stream wait for the streams it names at its start or end; one whose ``schedule`` is a ``Sync``
    makes the host wait for the stream it names (a device-to-host read) before its parts; one whose ``schedule`` is a
    ``Pipeline`` runs its part ``count + bubble`` times in time (the 1F1B schedule's fill and drain),
    its kernels still counted ``count`` times.
    """
    schedule = w.schedule
    m: Map = IDENTITY
    if type(schedule) is Sync:
        m = wait(schedule.stream)
    if type(schedule) is Join and schedule.at == "start":
        m = join(schedule.streams)
    bubble = schedule.bubble if type(schedule) is Pipeline else 0
    for node, count in w.parts:
        if isinstance(node, Workload):
            part = program_map(node, body, host, gap, extra)
        else:
            launches = node.launches
            issue = host * launches
            if extra and node.op in extra:
                issue = issue + extra[node.op]
            run = body[id(node)] + (gap if type(gap) is float else gap[id(node)]) * launches
            part = launch(issue, run, node.link.overlap if overlapped(node) else "compute")  # type: ignore[union-attr]
        count += bubble
        m = compose(m, power(part, count) if count != 1 else part)
    if type(schedule) is Join and schedule.at == "end":
        m = compose(m, join(schedule.streams))
    return m


#: the plausible launch probe, µs: a small torch launch costs about 2-20 µs of CPU on any machine that drives a GPU;
#: below 0.5 is seconds or milliseconds typed where µs belong (8.1e-06, 0.0081), above 1000 nanoseconds (8100)
PROBE_RANGE_US = (0.5, 1000.0)
#: the probes of CPUs that drive GPUs (1 to 50 us): a number another unit puts here is the slip a refusal names
PROBE_USUAL_US = (1.0, 50.0)


def host_probe_seconds(value: Any) -> Optional[float]:
    """A validated launch probe in seconds (given in µs: one number in ``PROBE_RANGE_US``, solkit.profile.host_probe()),
    or None."""
    if value is None:
        return None
    probe = positive("host_probe_us", value, OptionError)
    if type(probe) is not float:
        raise ArgumentTypeError(f"host_probe_us must be one number of microseconds, got an array of shape {np.shape(probe)}")
    low, high = PROBE_RANGE_US
    if not low <= probe <= high:
        # the likely slip: the unit that would put the number in range, if one does (else none is guessed)
        units = (("seconds", 1e6, "s"), ("milliseconds", 1e3, "ms"), ("nanoseconds", 1e-3, "ns"))
        slips = [f"{unit} typed where microseconds belong? {probe:g} {short} would be {probe * scale:g} us"
                 for unit, scale, short in units if PROBE_USUAL_US[0] <= probe * scale <= PROBE_USUAL_US[1]]
        slip = slips[0] if slips else "no other unit makes it a usual probe either"
        raise OptionError(f"host_probe_us must be a launch probe in microseconds (us) between {low:g} and {high:g} "
                          f"(solkit.profile.host_probe() measures about 5 us on a current CPU), got {probe:g}: {slip}")
    return probe * 1e-6


#: the host-time parameters a launch probe scales: every host_* parameter of the spec but the probe itself
HOST_TIME_PARAMETERS = tuple(p.name for p in PARAMETERS if p.name.startswith("host_") and p.name != "host_probe")


@checked_call
def host_scaled(cal: Calibration, probe: float, gpu: str = "this GPU") -> Calibration:
    """``cal`` with its host parameters scaled by ``probe`` (seconds per probe launch) over the fit machine's probe."""
    if not cal.host_probe:
        raise OptionError(f"host_probe_us: {gpu}'s spec records no launch probe (measured.host_probe_us) to scale the host "
                          "time against; leave host_probe_us unset")
    f = probe / cal.host_probe
    return cal.replace(**{name: getattr(cal, name) * f for name in HOST_TIME_PARAMETERS}, host_probe=probe)


@checked_call
def program_host_overhead(w: Workload, cal: Calibration, issued: Any = None) -> Any:
    """Host seconds per launch when ``w`` is an eager program (its ``recipe``'s kernels "eager"; 0 otherwise).

    The CPU's time to issue an eager program: ``host_program`` (a Hugging Face model's preamble:
    masks, position ids, the cache) + ``host_layer`` per layer (its modules' Python) +
    ``host_launch`` (training: ``host_launch_training``) per launch (ATen dispatch, the autograd
    engine), spread evenly over the launches. A captured program, which counted its host work
    (``recipe.host_calls``), takes ``captured_host_overhead`` where the spec fitted it.
    """
    recipe = w.recipe
    if recipe is None or recipe.kernels != "eager":
        return 0.0
    counted = recipe.host_calls
    if counted is not None and cal.host_captured_launch:
        return captured_host_overhead(w, cal, counted, issued)
    per_launch = cal.host_launch_training if recipe.training else cal.host_launch
    if not (per_launch or cal.host_layer or cal.host_program):
        return 0.0
    layers = recipe.layers
    preamble = cal.host_program if recipe.preamble else 0.0
    launches = issued_launches(w) if issued is None else issued
    return per_launch + (preamble + cal.host_layer * layers) / maximum(launches, 1.0)  # per point of a sweep


@checked_call
def captured_host_overhead(w: Workload, cal: Calibration, counted: HostCalls, issued: Any = None) -> Any:
    """Host seconds per launch of a captured eager program, from what its capture counted.

    ``host_captured_program`` (a Hugging Face model's preamble) + ``host_captured_launch`` (training:
    ``host_captured_launch_training``) per launch + ``host_captured_call`` per ATen call that launched
    nothing (views, metadata: dispatched all the same) + ``host_captured_module`` per module forward
    (its Python), spread evenly over the launches; a launching call whose host key the spec weighs
    (``op_host_weight``: a sort, a topk, a grouped GEMM) adds its weight less one launch on top of its counted
    kernels' launches (NB: the weight is the whole call's; ``calibration.captured_host`` says why it is charged so).
    NB: one cost per kind of call elsewhere, whatever the op.
    """
    recipe = w.recipe
    if recipe is None:
        return 0.0
    per_launch = cal.host_captured_launch_training if recipe.training else cal.host_captured_launch
    preamble = cal.host_captured_program if recipe.preamble else 0.0
    rest = preamble + cal.host_captured_call * counted.silent + cal.host_captured_module * counted.modules
    launches = maximum(issued_launches(w) if issued is None else issued, 1.0)
    return per_launch * (1.0 + weighted_extra(counted.ops, cal.op_host_weight) / launches) + rest / launches


def weighted_extra(ops: Any, weights: Mapping[str, float]) -> float:
    """The launches' worth of host time that ``ops`` ((host key, calls) pairs) cost beyond one launch per call, by
    ``weights`` (launches per call, per host key; 1 where absent)."""
    return float(sum(calls * (weights[key] - 1.0) for key, calls in ops if key in weights))
