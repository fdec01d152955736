"""Whole steps of families solkit has no hand-built program for, predicted from their captured programs (issue 28).

A captured-steps file (``benchmarks/programs/steps.py --space capture``: Qwen2, Qwen3, Mistral, Gemma, a Mixtral-shaped
MoE, BERT-large, GPT-2 medium) lists steps measured on the GPU with the config each ran (``hf_config``). Each is
rebuilt from that config by ``capture.hf_model`` (transformers' own modeling code on the meta device) and predicted
with the case's launch probe (``predict(host_probe_us=)``: ``StepCase.timed_probe_us``, the median of the probe's
repeats before each step of the block it reports where it recorded them, else the probe before that block where it
recorded one per block); the captured program's live-bytes peak stands beside the
measured ``max_memory_allocated``. Nothing is fitted on these files: the manifest gives each its role (a validation
draw that shaped capture, a frozen test measured after capture was frozen).
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from ..errors import OptionError, SpecError
from ..workload import Workload
from .manifest import manifest
from .metrics import apart, log_error, median_p90
from .._validate import choice
from .programs import PROBE_READINGS, StepCase, StepSet, load_steps, paired, repeatability
from ..workload import issued_launches

if TYPE_CHECKING:  # pragma: no cover
    from .captured_host import HostCounts

__all__ = ["CapturedStep", "Repeat", "captured_workload", "captured_steps", "captured_readings", "captured_summary", "timing_repeat",
           "captured_repeat", "captured_report", "captured_files", "host_counts", "MODES"]

#: the modes a captured-steps file measures, and the captured program of each
MODES = ("train", "infer", "infer_amp", "prefill", "decode")


@dataclass(frozen=True)
class CapturedStep:
    """One measured step beside its captured program's prediction and memory peak."""

    id: str
    family: str
    mode: str
    measured: float  # seconds (the quietest block's median)
    predicted: float  # seconds, with the case's launch probe
    launches: float  # the captured program's issued launches
    profiled_kernels: Optional[int]  # the profiler's kernel count of one step (the profile pass), where run
    memory_measured: Optional[int]  # bytes, max_memory_allocated over the first timed step
    memory_captured: int  # bytes, the captured program's peak of live tensors

    @property
    def error(self) -> float:
        """exp(|log(predicted / measured)|) - 1, as every report gives it."""
        return float(np.expm1(log_error(self.predicted, self.measured)))

    @property
    def memory_error(self) -> Optional[float]:
        """|captured - measured| / measured peak, where the step recorded one."""
        if not self.memory_measured:
            return None
        return abs(self.memory_captured - self.memory_measured) / self.memory_measured


def captured_workload(case: StepCase, model: Any = None) -> Workload:
    """The program ``case`` ran, captured from its config (``model``: its ``CapturedModel``, built once per config)."""
    from ..capture.hf import hf_model

    if case.hf_config is None:
        raise OptionError(f"case {case.id}: a captured step needs its hf_config")
    m = hf_model(case.hf_config, case.family) if model is None else model
    if case.mode == "train":
        return m.training_step(batch=case.batch, seq=case.seq)
    if case.mode in ("infer", "infer_amp"):
        return m.forward(batch=case.batch, seq=case.seq, amp=case.mode == "infer_amp")
    if case.mode == "prefill":
        return m.prefill(batch=case.batch, seq=case.seq)
    if case.mode == "decode":
        return m.decode(batch=case.batch, context=case.context)
    raise OptionError(f"case {case.id}: mode must be one of {', '.join(MODES)}, got {case.mode!r}")


def captured_steps(steps: StepSet, gpu: Any = "h200", only: Optional[Sequence[str]] = None,
                   reading: Optional[str] = None) -> list[CapturedStep]:
    """Each measured case of ``steps`` (``only``: these ids) predicted from its captured program, with its memory, at
    its launch probe (``StepCase.timed_probe_us``; ``reading``: another reading of it, ``StepCase.probe_at``)."""
    return captured_readings(steps, gpu, (reading,), only)[reading]


def captured_readings(steps: StepSet, gpu: Any = "h200", readings: Sequence[Optional[str]] = (None,),
                      only: Optional[Sequence[str]] = None) -> dict[Optional[str], list[CapturedStep]]:
    """``captured_steps`` at each of ``readings`` of the launch probe (None: ``timed_probe_us``), each case captured
    once."""
    from ..prediction import predict

    for reading in readings:
        if reading is not None:
            choice("reading", reading, PROBE_READINGS)
    models: dict[str, Any] = {}
    out: dict[Optional[str], list[CapturedStep]] = {r: [] for r in readings}
    for case in steps.cases:
        if not case.ok or (only is not None and case.id not in only):
            continue
        w = captured_workload(case, _model_of(case, models))
        recipe: Any = w.recipe
        for reading in readings:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a misaligned vocabulary's PerformanceWarning: the note says it
                probe = case.timed_probe_us if reading is None else case.probe_at(reading)
                p = predict(w, gpu, warn=False, host_probe_us=probe)
            out[reading].append(CapturedStep(case.id, case.family, case.mode,
                                             float(case.wall_ms) * 1e-3,  # type: ignore[arg-type]
                                             float(p.seconds), float(issued_launches(w)),
                                             case.profile.kernels if case.profile else None, case.peak_memory_bytes,
                                             int(recipe.memory.peak)))
    return out


@dataclass(frozen=True)
class Repeat:
    """Two timings of the same programs: how far they agree with each other (and, from ``captured_repeat``, the
    prediction with each). Figures are (median, p90) over the cases timed in both."""

    steps: int  # cases measured in both timings
    wall: tuple[float, float]  # their step times apart: exp(|log(a / b)|) - 1
    cpu_bound: int  # of them, CPU-bound in both (``StepCase.cpu_bound``)
    host: tuple[float, float]  # those cases' host times apart (``programs.repeatability``'s)
    probed: int  # of those, the ones with a launch probe in both timings (``timed_probe_us``)
    host_per_probe: tuple[float, float]  # their host times apart once each is divided by its own timing's probe
    #: a time midway between the two (their geometric mean) is exp(|log(a / b)| / 2) - 1 from each, and any one time
    #: at least that far from one of them: of the step times, and of the probed host times over their probes
    midway: tuple[float, float]
    midway_per_probe: tuple[float, float]
    model: Optional[tuple[tuple[float, float], tuple[float, float]]] = None  # the prediction against each timing


def timing_repeat(first: StepSet, second: StepSet) -> Repeat:
    """How far ``second`` (the same cases timed again) agrees with ``first``: step times, and CPU-bound host times
    as measured and over each timing's own launch probe."""
    pairs = paired(first, second)
    if not pairs:
        raise SpecError(f"{second.path or 'the second timing'} times none of the cases of {first.path or 'the first'}")
    host = repeatability(first, second)["CPU-bound host"]
    probed = [(a.host_ms / a.timed_probe_us, b.host_ms / b.timed_probe_us) for a, b in pairs  # type: ignore[operator]
              if a.cpu_bound and b.cpu_bound and a.timed_probe_us and b.timed_probe_us]
    walls = [(float(a.wall_ms), float(b.wall_ms)) for a, b in pairs]  # type: ignore[arg-type]
    return Repeat(steps=len(pairs), wall=median_p90([apart(a, b) for a, b in walls]), cpu_bound=host[0],
                  host=(host[1], host[2]), probed=len(probed),
                  host_per_probe=median_p90([apart(a, b) for a, b in probed]),
                  midway=median_p90([_midway(a, b) for a, b in walls]),
                  midway_per_probe=median_p90([_midway(a, b) for a, b in probed]))


def _midway(a: float, b: float) -> float:
    """How far the geometric mean of ``a`` and ``b`` is from each: exp(|log(a / b)| / 2) - 1."""
    return float(np.expm1(log_error(a, b) / 2))


def captured_repeat(first: StepSet, second: StepSet, gpu: Any = "h200",
                    rows: Optional[tuple[Sequence[CapturedStep], Sequence[CapturedStep]]] = None) -> Repeat:
    """``timing_repeat`` of two timings of captured steps, with the prediction's error on each over the same cases
    (``rows``: each timing's ``captured_steps`` where already predicted)."""
    r = timing_repeat(first, second)
    ids = {a.id for a, _ in paired(first, second)}
    both = rows or tuple(captured_steps(s, gpu, only=sorted(ids)) for s in (first, second))
    model = tuple(median_p90([row.error for row in rs if row.id in ids]) for rs in both)
    return dataclasses.replace(r, model=(model[0], model[1]))


def _repeat_paragraph(first: str, second: str, r: Repeat, fitted: bool = False) -> list[str]:
    """The report's lines on two timings of the same programs (``r`` from ``captured_repeat``; ``fitted``: today's host
    rule was fitted on both timings, so the prediction's misses are in-sample)."""
    model = r.model or ((math.nan, math.nan), (math.nan, math.nan))
    which = "today's rule, fitted on both timings: in-sample" if fitted else "a rule fitted on neither"
    return [f"Two timings of the same {r.steps} captured programs ({first} and {second}, the same timing protocol on "
            f"two machine starts): their step times differ by a median of {_pct(r.wall[0])} (p90 {_pct(r.wall[1])}); "
            f"the host times of the {r.cpu_bound} CPU-bound in both by {_pct(r.host[0])} (p90 {_pct(r.host[1])}), and "
            f"by {_pct(r.host_per_probe[0])} (p90 {_pct(r.host_per_probe[1])}) once each is divided by its own timing's "
            f"launch probe. A time midway between the two timings (their geometric mean) is {_pct(r.midway[0])} (p90 "
            f"{_pct(r.midway[1])}) from each, so a prediction that reads no probe is at least that far from one of them, "
            "step by step; read at each timing's probe, the CPU-bound host times' midway is "
            f"{_pct(r.midway_per_probe[0])} (p90 {_pct(r.midway_per_probe[1])}). The prediction (at each timing's "
            f"probe; {which}) misses the first timing by {_pct(model[0][0])} (p90 {_pct(model[0][1])}) and the second by "
            f"{_pct(model[1][0])} (p90 {_pct(model[1][1])}).", ""]


def _model_of(case: StepCase, models: dict[str, Any]) -> Any:
    """The ``CapturedModel`` of ``case``'s config, built once per distinct config (``models``: the ones built)."""
    key = json.dumps(case.hf_config, sort_keys=True)
    if key not in models:
        from ..capture.hf import hf_model

        models[key] = hf_model(case.hf_config, case.family)
    return models[key]


def host_counts(names: Sequence[str]) -> "HostCounts":
    """What the capture of every measured case of the captured-steps files ``names`` counted of its host work
    (``captured_host``: the counts file the host fit reads)."""
    import torch
    import transformers

    from .captured_host import HostCount, HostCounts

    rows = []
    for name in names:
        steps = load_steps(name)
        models: dict[str, Any] = {}
        for case in steps.cases:
            if not case.ok or case.host_ms is None or case.wall_ms is None:
                continue
            w = captured_workload(case, _model_of(case, models))
            recipe: Any = w.recipe
            counted = recipe.host_calls
            rows.append(HostCount(file=name, id=case.id, family=case.family, mode=case.mode, training=recipe.training,
                                  preamble=recipe.preamble, launches=float(issued_launches(w)), silent=counted.silent,
                                  modules=counted.modules, syncs=recipe.syncs, host_ops=dict(counted.ops),
                                  backward_launches=counted.backward_launches, after_launches=counted.after_launches,
                                  backward_silent=counted.backward_silent, after_silent=counted.after_silent,
                                  host_ms=case.host_ms,
                                  wall_ms=case.wall_ms, timed_probe_us=case.timed_probe_us, cpu_bound=case.cpu_bound))
    return HostCounts(schema_version=4, captured_with={"torch": torch.__version__, "transformers": transformers.__version__},
                      command="python -m solkit.calibration captured --counts", rows=tuple(rows))


def captured_summary(rows: Sequence[CapturedStep]) -> dict[str, tuple[int, float, float, Optional[float]]]:
    """Per family, then "all": (steps, median error, p90 error, median memory error)."""
    def one(group: Sequence[CapturedStep]) -> tuple[int, float, float, Optional[float]]:
        err = [r.error for r in group]
        mem = [r.memory_error for r in group if r.memory_error is not None]
        return len(group), float(np.median(err)), float(np.percentile(err, 90)), (float(np.median(mem)) if mem
                                                                                  else None)

    families = sorted({r.family for r in rows})
    out = {f: one([r for r in rows if r.family == f]) for f in families}
    if rows:
        out["all"] = one(rows)
    return out


def captured_files(role: str) -> tuple[str, ...]:
    """The captured-steps files of ``role`` (fit, validation, test, spent, repeat) in manifest order."""
    return manifest().files(role=role, measures="captured_steps")


def counted_files() -> tuple[str, ...]:
    """The captured-steps files whose programs' host counts the counts file holds (``captured --counts``): every one
    but the frozen tests (fit, spent and repeat), in manifest order; the host fit reads its fit files' rows."""
    return tuple(e.file for e in manifest().entries if e.measures == "captured_steps" and e.role in ("fit", "spent",
                                                                                                       "repeat"))


def captured_report(gpu: Any = "h200") -> str:
    """The captured programs' accuracy report (markdown): per file, time per family and mode, memory."""
    lines = ["# Captured programs on the H200: predicted against measured steps", "",
             "Written by `python -m solkit.calibration captured` from the captured-steps files (`benchmarks/programs/"
             "steps.py --space capture`). Each step is rebuilt from the config it ran by `solkit.capture.hf_model` and "
             "predicted with its launch probe. Error = exp(|log(predicted / measured)|) - 1 of the median step time "
             "(CUDA events); memory: |captured peak - measured max_memory_allocated| / measured.", ""]
    from .captured_host import fit_files

    predicted: dict[str, list[CapturedStep]] = {}
    for role in ("test", "validation", "spent", "fit", "repeat"):
        for name in captured_files(role):
            entry = manifest().entry(name)
            steps = load_steps(name)
            within = bool(steps.cases) and all(c.probe_us_within_blocks for c in steps.cases if c.ok)
            both = captured_readings(steps, gpu, (None, "before") if within else (None,))
            rows = predicted[name] = both[None]
            lines += [f"## {name}: {role} ({entry.describe()})", "", _versions(steps), ""]
            if role == "repeat":
                first = _timed_first(name)
                r = captured_repeat(load_steps(first), steps, gpu, rows=(predicted[first], rows))
                lines += _repeat_paragraph(first, name, r, fitted=name in fit_files())
            lines += ["| family | mode | steps | median | p90 | memory (median) |", "|---|---|---:|---:|---:|---:|"]
            for family in sorted({r.family for r in rows}):
                for mode in [m for m in MODES if any(r.family == family and r.mode == m for r in rows)]:
                    group = [r for r in rows if r.family == family and r.mode == mode]
                    n, med, p90, mem = captured_summary(group)["all"]
                    lines.append(f"| {family} | {mode} | {n} | {med:.1%} | {p90:.1%} | {_pct(mem)} |")
            for family, (n, med, p90, mem) in captured_summary(rows).items():
                lines.append(f"| **{family}** | all | {n} | {med:.1%} | {p90:.1%} | {_pct(mem)} |")
            lines.append("")
            if within:
                _, med, p90, _ = captured_summary(both["before"])["all"]
                lines += [f"Read at the probe just before each reported block instead (the reading before seed 2060's "
                          f"validation chose the within-block one): median {med:.1%}, p90 {p90:.1%}.", ""]
    return "\n".join(lines)


def _timed_first(name: str) -> str:
    """The captured-steps file whose cases the repeat ``name`` timed again: the one other file of its seed."""
    seed = manifest().entry(name).seed
    firsts = [e.file for e in manifest().entries if e.measures == "captured_steps" and e.seed == seed and e.role != "repeat"]
    if len(firsts) != 1:
        raise SpecError(f"the repeat {name} (seed {seed}) needs exactly one other captured-steps file of its seed, "
                          f"found {len(firsts)}: {', '.join(firsts) or 'none'}")
    return firsts[0]


def _pct(x: Optional[float]) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.1%}"


def _versions(steps: StepSet) -> str:
    """The measured and the capturing software, side by side (capture reads the installed transformers' code)."""
    import torch
    import transformers

    measured = ", ".join(f"{k} {steps.env[k]}" for k in ("torch", "transformers") if steps.env.get(k)) or "not recorded"
    return (f"Measured with {measured}; captured with torch {torch.__version__}, transformers {transformers.__version__} "
            "(a program that differs between the two versions is predicted as the capturing one runs it).")
