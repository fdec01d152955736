"""Whole programs measured on the GPU: the step files, their workloads, the host-time fit and the accuracy report.

A step file (``benchmarks/programs/steps.py`` writes it on the GPU) lists cases: a model (a Hugging
Face config, or torchvision's resnet50), a mode (``train``, ``infer``, ``prefill``, ``decode``), the
shapes, the median wall time of one step (CUDA events), the median host time to issue it, the peak
memory and a profile summary (kernel count and time). ``workload_of_step`` builds the same program
with ``solkit.models``; ``fit_host`` fits the predictor's host-time parameters
(``host_program``, ``host_layer``, ``host_launch``, ``host_launch_training``) on the cases whose
step is bound by the CPU (wall time below ``prediction.CPU_BOUND`` x the host time: the predictor's one definition,
``prediction.cpu_bound``): least squares of the
host time on (1, layers, issued launches) for inference, then the training launch cost as the median of
what is left per launch, each case's host time first brought to the fit's median launch probe
(``host_probe``; ``predict(host_probe_us=)`` scales back to another machine). Only the fit files shape the
parameters; the test files are reported, with and without each case's probe.
"""

from __future__ import annotations

import math
import os
from typing import Any, Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .._files import read_json
from .._validate import choice
from ..errors import OptionError, SpecError
from ..hardware.records import Figure
from ..prediction import cpu_bound
from ..workload import Workload, issued_launches
from .data import MAX_DATA_BYTES
from .manifest import data_dir, data_path, manifest
from .metrics import apart, log_error, median_p90
from .rounding import rounded

__all__ = ["ARCHITECTURES", "PROBE_READINGS", "StepCase", "StepSet", "load_steps", "workload_of_step", "predicted_memory", "fit_host", "HostFit", "nonnegative_least_squares", "step_errors",
           "step_files", "STEP_ROLES", "STEP_FIT_DATA", "STEP_TEST_DATA", "STEP_SPENT_DATA", "STEP_REPEAT_DATA", "STEP_PROFILED_DATA",
           "repeatability", "programs_report", "data_dir"]

#: the roles of step files (``data/manifest.yaml`` says what each file is and when it was measured): the files the host
#: parameters are fitted on; the frozen test draws, then the spent ones; the fit's cases timed again; and the files
#: timed after a profiler session in the process, which shape no parameter
STEP_ROLES = ("fit", "test", "spent", "repeat", "profiled")
_STEP_LISTS = {f"STEP_{role.upper()}_DATA": role for role in STEP_ROLES}
# the lists by their old names, read from the manifest on use (``__getattr__``: importing this module reads no data)
STEP_FIT_DATA: tuple[str, ...]
STEP_TEST_DATA: tuple[str, ...]
STEP_SPENT_DATA: tuple[str, ...]
STEP_REPEAT_DATA: tuple[str, ...]
STEP_PROFILED_DATA: tuple[str, ...]


def step_files(role: str) -> tuple[str, ...]:
    """The step files of ``role`` (one of ``STEP_ROLES``) in manifest order; ``fit``: those ``fit_host`` is fitted on."""
    if role not in STEP_ROLES:
        raise OptionError(f"role must be one of {', '.join(STEP_ROLES)}, got {role!r}")
    return manifest().files(role="fit", fits="host") if role == "fit" else manifest().files(role=role, measures="steps")


def __getattr__(name: str) -> tuple[str, ...]:
    """``STEP_FIT_DATA`` and the other lists of ``_STEP_LISTS``, read from the manifest when asked for."""
    if name in _STEP_LISTS:
        return step_files(_STEP_LISTS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: a step file's transformers model class -> the config's ``architectures`` that builds it (the head solkit models)
ARCHITECTURES = {"transformers.BertForMaskedLM": "BertForMaskedLM", "transformers.GPT2LMHeadModel": "GPT2LMHeadModel",
                  "transformers.LlamaForCausalLM": "LlamaForCausalLM"}


#: the readings of a case's launch probe for its reported block (``StepCase.probe_at``)
PROBE_READINGS = ("before", "within", "bracket")


class StepProfile(BaseModel):
    """The profiled step's summary."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    kernels: int
    kernel_us: float


class StepCase(BaseModel):
    """One measured whole step."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    id: str
    family: str
    mode: str
    batch: int
    seq: Optional[int] = None
    context: Optional[int] = None
    image: Optional[int] = None
    status: str
    model_class: Optional[str] = None
    hf_config: Optional[dict[str, Any]] = None
    optimizer: Optional[dict[str, Any]] = None
    wall_ms: Optional[float] = None
    host_ms: Optional[float] = None
    probe_us: Optional[float] = None  # the host's launch probe before the case (steps.py), when recorded
    wall_ms_blocks: Optional[tuple[Figure, ...]] = None  # each block's median step time (steps.py's blocks), if recorded
    probe_us_blocks: Optional[tuple[Figure, ...]] = None  # the launch probe just before each block, in block order
    #: per block, the median of one repeat of the probe timed before each of its steps (steps.py since 2026-12-03)
    probe_us_within_blocks: Optional[tuple[Figure, ...]] = None
    probe_us_after_blocks: Optional[tuple[Figure, ...]] = None  # the launch probe just after each block
    reported_block: Optional[int] = None  # the index of the block wall_ms reports (steps.py since 2026-12-03)
    peak_memory_bytes: Optional[int] = None
    memory_before_bytes: Optional[int] = None
    profile: Optional[StepProfile] = None

    @model_validator(mode="after")
    def _blocks_pair(self) -> "StepCase":
        """One probe before each block, and a reported block that is one of them."""
        blocks = len(self.wall_ms_blocks or ())
        for name in ("probe_us_blocks", "probe_us_within_blocks", "probe_us_after_blocks"):
            probes = getattr(self, name)
            if probes is not None and len(probes) != blocks:
                raise ValueError(f"case {self.id!r}: {name} holds {len(probes)} probes for {blocks} blocks of "
                                 f"wall_ms_blocks: one probe for each block")
        if self.reported_block is not None and not 0 <= self.reported_block < blocks:
            raise ValueError(f"case {self.id!r}: reported_block must index one of its {blocks} blocks, got "
                             f"{self.reported_block}")
        return self

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.wall_ms is not None

    @property
    def timed_probe_us(self) -> Optional[float]:
        """The launch probe read nearest to the steps whose time is reported: where the case recorded the probe's
        repeats before each step of a block, their median in the block steps.py reports (``probe_at("within")``);
        else, where it recorded a probe per block, the one before that block (``reported_block``; in a file before it,
        the block of least median wall time, steps.py's rule); else the one before the case. (A shared host's speed
        drifts between blocks and within one; the within-block reading was chosen on the seed-2060 validation draw by
        the criterion ``benchmarks/programs/probe_readings.py`` declared first: p90 of its 70 steps 22.9% -> 16.0%.)"""
        if self.probe_us_within_blocks and self.wall_ms_blocks:
            return self.probe_us_within_blocks[self._block]
        if self.probe_us_blocks and self.wall_ms_blocks:
            # NB: a file before reported_block is read by the least rounded median: steps.py's choice (unrounded) but
            # where two blocks' medians round alike (none in the committed files)
            return self.probe_us_blocks[self._block]
        return self.probe_us

    @property
    def _block(self) -> int:
        """The index of the block ``wall_ms`` reports (``reported_block``; before it, the least median)."""
        return self.reported_block if self.reported_block is not None else int(np.argmin(self.wall_ms_blocks or ()))

    def probe_at(self, reading: str) -> Optional[float]:
        """The launch probe of the reported block by ``reading`` (``PROBE_READINGS``): ``"before"``, the probe just
        before it (or, without blocks, the probe before the case); ``"within"``, the median of the probe's repeats
        timed before each of its steps; ``"bracket"``, the geometric mean of the probes just before and just after
        it. A reading the case did not record is refused (a file measured before steps.py recorded it)."""
        reading = choice("reading", reading, PROBE_READINGS)
        if reading == "before":
            return self.probe_us_blocks[self._block] if self.probe_us_blocks and self.wall_ms_blocks else self.probe_us
        needs = ("probe_us_within_blocks",) if reading == "within" else ("probe_us_blocks", "probe_us_after_blocks")
        missing = [name for name in needs if not getattr(self, name)]
        if missing:
            raise OptionError(f"case {self.id!r}: the {reading!r} probe reading needs {' and '.join(needs)}; it did not "
                              f"record {' or '.join(missing)}")
        if reading == "within":
            return float(self.probe_us_within_blocks[self._block])  # type: ignore[index]
        return math.sqrt(self.probe_us_blocks[self._block] * self.probe_us_after_blocks[self._block])  # type: ignore[index]

    @property
    def cpu_bound(self) -> bool:
        """The CPU bounds the step: its wall time is below ``prediction.CPU_BOUND`` x its host time (``prediction.cpu_bound``,
        the one definition: the predictor's note on a predicted program uses it too)."""
        return self.wall_ms is not None and self.host_ms is not None and self.ok and bool(cpu_bound(self.wall_ms, self.host_ms))


class StepSet(BaseModel):
    """A step file: its environment and cases."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    created_utc: str
    env: dict[str, Any]
    cases: tuple[StepCase, ...]
    path: str = ""


def load_steps(path: Any) -> StepSet:
    """A step file by path, or by name in the data folder."""
    p = data_path(path)
    if not os.path.lexists(p):
        raise SpecError(f"step file {str(path)!r} not found (looked in {data_dir()})")
    raw, where = read_json(p, "step file", MAX_DATA_BYTES, SpecError)  # a regular UTF-8 file, capped, not too deep
    if not isinstance(raw, dict):
        raise SpecError(f"step file {where!r} must hold a JSON object, got a {type(raw).__name__}")
    try:
        return StepSet(**{**raw, "path": where})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise SpecError(f"step file {where!r}: field '{'.'.join(str(x) for x in first['loc'])}': {first['msg']}") \
            from None


def _transformer(case: StepCase) -> Any:
    """The case's model as a ``Transformer`` (its Hugging Face config, its class's head)."""
    from .. import models

    config = dict(case.hf_config or {})
    config["architectures"] = [ARCHITECTURES[case.model_class or ""]]
    return models.from_hf_config(config, name=case.family)


def predicted_memory(case: StepCase) -> Optional[float]:
    """``Transformer.memory`` of the case (training: AMP + AdamW; serving: the prefill, or one decode step against
    its cache), or None for a model without a memory model (ResNet-50)."""
    if case.family == "resnet50":
        return None
    m = _transformer(case)
    if case.mode == "train":
        return float(m.memory(case.batch, case.seq, training=True).total)
    if case.mode == "decode":
        return float(m.memory(case.batch, 1, context=(case.context or 0) + 1).total)
    return float(m.memory(case.batch, case.seq).total)


def workload_of_step(case: StepCase) -> Workload:
    """The program ``case`` ran, built by ``solkit.models`` (eager kernels, the case's optimizer)."""
    from .. import models

    if case.family == "resnet50":
        forward = models.resnet50(case.batch, image=case.image or 224, kernels="eager", training=case.mode == "train",
                                  dtype="bf16")
        return models.training_step(forward, optimizer="sgd") if case.mode == "train" else forward
    m = _transformer(case)
    if case.mode == "train":
        return models.training_step(m.forward(batch=case.batch, seq=case.seq))
    if case.mode == "infer":
        return m.forward(batch=case.batch, seq=case.seq)
    if case.mode == "prefill":
        return m.prefill(batch=case.batch, seq=case.seq)
    return m.decode(batch=case.batch, context=case.context)


class HostFit(BaseModel):
    """The fitted host-time parameters (seconds) and what they were fitted on."""

    model_config = ConfigDict(frozen=True)
    host_program: float
    host_layer: float
    host_launch: float
    host_launch_training: float
    host_probe: float  # the median launch probe of the fitted cases (0: none recorded)
    inference_cases: int
    training_cases: int


def _layers(w: Workload) -> int:
    return w.recipe.layers if w.recipe is not None else 0


def fit_host(sets: Sequence[StepSet]) -> HostFit:
    """Least squares of the host time of CPU-bound inference steps on (preamble, layers, launches); training's launches.

    Each case's host time is first brought to the fit's median launch probe (host x median probe / its probe, where
    the case recorded one): the parameters are those of a machine at ``host_probe``, and ``predict(host_probe_us=)``
    scales them to another.
    """
    infer: list[tuple[float, float, float, float]] = []
    train: list[tuple[float, float, float, float]] = []
    probes = [c.timed_probe_us for s in sets for c in s.cases if c.ok and c.timed_probe_us]
    reference = float(np.median(probes)) if probes else None
    for s in sets:
        for case in s.cases:
            if not case.cpu_bound:
                continue
            w = workload_of_step(case)
            preamble = float(w.recipe is not None and w.recipe.preamble)
            speed = reference / case.timed_probe_us if reference and case.timed_probe_us else 1.0
            row = (preamble, float(_layers(w)), float(issued_launches(w)), case.host_ms * 1e-3 * speed)  # type: ignore[operator]
            (train if case.mode == "train" else infer).append(row)
    if len(infer) < 3 or not train:
        raise SpecError(f"fit_host needs at least 3 CPU-bound inference steps and 1 training step, got {len(infer)} "
                        f"and {len(train)}")
    x = np.array([[preamble, layers, launches] for preamble, layers, launches, _ in infer])
    y = np.array([host for *_, host in infer])
    program, layer, launch = nonnegative_least_squares(x, y)
    training = float(np.median([(host - program * preamble - layer * layers) / launches
                                for preamble, layers, launches, host in train]))
    return HostFit(host_program=rounded(program, "host_program"), host_layer=rounded(layer, "host_layer"),
                   host_launch=rounded(launch, "host_launch"),
                   host_launch_training=rounded(max(training, 0.0), "host_launch_training"),
                   host_probe=rounded(reference * 1e-6, "host_probe") if reference else 0.0,
                   inference_cases=len(infer),
                   training_cases=len(train))


def nonnegative_least_squares(x: np.ndarray, y: np.ndarray) -> tuple[float, ...]:
    """argmin |x b - y| over b >= 0, by least squares on every subset of the columns (three columns: 7 subsets, five: 31)."""
    best: tuple[float, np.ndarray] = (math.inf, np.zeros(x.shape[1]))
    for mask in range(1, 2 ** x.shape[1]):
        cols = [j for j in range(x.shape[1]) if mask >> j & 1]
        coef, *_ = np.linalg.lstsq(x[:, cols], y, rcond=None)
        if np.all(coef >= 0):
            b = np.zeros(x.shape[1])
            b[cols] = coef
            residual = float(np.sum((x @ b - y) ** 2))
            if residual < best[0]:
                best = (residual, b)
    return tuple(float(v) for v in best[1])


def step_errors(s: StepSet, gpu: Any, probe: bool = False) -> list[tuple[StepCase, float, float]]:
    """(case, predicted seconds, measured seconds) of every measured case; ``probe``: each given its launch probe
    (``predict(host_probe_us=)``; cases without one are left out)."""
    from ..prediction import predict

    out = []
    for case in s.cases:
        if case.ok and (case.timed_probe_us or not probe):
            p = predict(workload_of_step(case), gpu, warn=False, host_probe_us=case.timed_probe_us if probe else None)
            out.append((case, float(p.seconds), case.wall_ms * 1e-3))  # type: ignore[operator]
    return out


def _summary(rows: Sequence[tuple[StepCase, float, float]]) -> tuple[int, float, float, float]:
    """(cases, median, p90, max) of the error exp(|log(predicted / measured)|) - 1, as every report gives it."""
    err = np.expm1(log_error([p for _, p, _ in rows], [m for _, _, m in rows]))
    return len(rows), float(np.median(err)), float(np.percentile(err, 90)), float(np.max(err))


def programs_report(gpu: Any = "h200") -> str:
    """The whole-program accuracy report (markdown): time per set, family and mode; memory against the measured peak."""
    lines = ["# Whole programs on the H200: predicted against measured steps", "",
             "Written by `python -m solkit.calibration programs` from the step files (`benchmarks/programs/steps.py`). "
             "Error = exp(|log(predicted / measured)|) - 1 of the median step time (CUDA events); memory: `Transformer.memory` "
             "against `torch.cuda.max_memory_allocated()` of one step.", ""]
    def described(names: Sequence[str]) -> str:
        return " / ".join(manifest().entry(name).describe() for name in names)

    fit, tests, spent, repeat, profiled = (step_files(role) for role in STEP_ROLES)
    for title, files in (("fit (the host parameters were fitted on these)", fit),
                         (f"frozen tests ({described(tests)})", tests),
                         (f"spent tests ({described(spent)})", spent),
                         ("the fit's cases timed again (a fresh process, another machine)", repeat),
                         ("timed after a profiler session (host times about 1.5x a never-profiled program's; they "
                          "shape nothing)", profiled)):
        present = [f for f in files if (data_dir() / f).exists()]
        if not present:
            continue
        sets = [load_steps(f) for f in present]
        lines += [f"## {title}: {', '.join(present)}", ""]
        for name, st in zip(present, sets):
            lines += [f"Step time, {name} ({st.env.get('gpu', 'GPU')}, {st.created_utc[:16].replace('T', ' ')} UTC):", "",
                      "| group | cases | median error | p90 | max |", "|---|---|---|---|---|"]
            lines += _table(step_errors(st, gpu))
            lines.append("")
            probes = [c.timed_probe_us for c in st.cases if c.ok and c.timed_probe_us]
            if probes:
                lines += [f"Each case's launch probe as `StepCase.timed_probe_us` reads it (the median of its repeats "
                          f"within the reported block, else the probe before that block, else the probe before the "
                          f"case; µs per small `torch.add` launch): median "
                          f"{np.median(probes):.2f}, p10 {np.percentile(probes, 10):.2f}, p90 {np.percentile(probes, 90):.2f}. "
                          "Each case predicted with its probe (`predict(host_probe_us=)`):", "",
                          "| group | cases | median error | p90 | max |", "|---|---|---|---|---|"]
                lines += _table(step_errors(st, gpu, probe=True)) + [""]
        memory = [(c, m, float(c.peak_memory_bytes)) for st in sets for c in st.cases
                  if c.ok and c.peak_memory_bytes and c.mode != "infer" and (m := predicted_memory(c)) is not None]
        lines += ["Peak memory (training, and serving: prefill and decode; ResNet-50 has no memory model, and a forward "
                  "keeping every token's logits is not what `memory` models):", "",
                  "| group | cases | median error | p90 | max |", "|---|---|---|---|---|"]
        lines += _table(memory, by_bound=False)
        lines.append("")
        fit_present = bool(fit) and (data_dir() / fit[0]).exists()
        if files == repeat and fit_present:
            lines += _repeat_lines(load_steps(fit[0]), sets[0])
        if files == profiled and len(sets) > 1:
            lines += _spread(sets[0], sets[1], "the CPUs differ: no prediction of a host-bound step can beat that spread")
            if fit_present:
                lines += _spread(sets[0], load_steps(fit[0]), "the second was never profiled")
    return "\n".join(lines) + "\n"


def paired(a: StepSet, b: StepSet) -> list[tuple[StepCase, StepCase]]:
    """The cases measured in both timings, as (``a``'s, ``b``'s), in ``a``'s order."""
    other = {c.id: c for c in b.cases if c.ok}
    return [(c, other[c.id]) for c in a.cases if c.ok and c.id in other]


def repeatability(a: StepSet, b: StepSet) -> dict[str, tuple[int, float, float]]:
    """How far two timings agree: (cases, median, p90) of exp(|log(a / b)|) - 1 of the host time of the cases CPU-bound in
    both, and of the wall time of those GPU-bound in both ((0, nan, nan) where there are none)."""
    pairs = paired(a, b)
    out = {}
    for name, sel, field in (("CPU-bound host", [p for p in pairs if p[0].cpu_bound and p[1].cpu_bound], "host_ms"),
                             ("GPU-bound wall", [p for p in pairs if not p[0].cpu_bound and not p[1].cpu_bound], "wall_ms")):
        if not sel:
            out[name] = (0, math.nan, math.nan)
            continue
        out[name] = (len(sel), *median_p90([apart(getattr(x, field), getattr(y, field)) for x, y in sel]))
    return out


def _repeat_lines(a: StepSet, b: StepSet) -> list[str]:
    """The repeatability of two timings of the same cases, as report lines."""
    r = repeatability(a, b)
    return [f"Two timings of the same programs ({a.path.rsplit('/', 1)[-1]} and {b.path.rsplit('/', 1)[-1]}, the same "
            "protocol, neither profiled): the host time of the "
            f"{r['CPU-bound host'][0]} steps CPU-bound in both differs by a median of {r['CPU-bound host'][1]:.1%} "
            f"(p90 {r['CPU-bound host'][2]:.1%}); the wall time of the {r['GPU-bound wall'][0]} GPU-bound in both by "
            f"{r['GPU-bound wall'][1]:.1%} (p90 {r['GPU-bound wall'][2]:.1%}). A prediction of a CPU-bound step cannot "
            "agree with one timing better than two timings agree with each other.", ""]


def _spread(a: StepSet, b: StepSet, why: str = "the CPUs differ") -> list[str]:
    """The run-to-run spread of the same cases on two machines: wall time and host time."""
    pairs = paired(a, b)
    wall = np.expm1(log_error([x.wall_ms for x, _ in pairs], [y.wall_ms for _, y in pairs]))
    host = np.array([math.log(x.host_ms / y.host_ms) for x, y in pairs])  # type: ignore[operator]
    return [f"Run to run ({a.path.rsplit('/', 1)[-1]} against {b.path.rsplit('/', 1)[-1]}, {len(pairs)} cases, two "
            f"H200 machines): wall time differs by a median of {np.median(wall):.1%} (p90 {np.percentile(wall, 90):.1%}); "
            f"host time by a median of {np.expm1(np.median(np.abs(host))):.1%}, typically {np.expm1(np.median(host)):+.1%} ({why}).", ""]


def _table(rows: Sequence[tuple[StepCase, float, float]], by_bound: bool = True) -> list[str]:
    """Rows of all cases, GPU- and CPU-bound ones (``by_bound``), then per (family, mode)."""
    out = []
    groups = sorted({(c.family, c.mode) for c, _, _ in rows})
    bound = [("GPU-bound", [r for r in rows if not r[0].cpu_bound]), ("CPU-bound", [r for r in rows if r[0].cpu_bound])]
    bound = bound if by_bound else []
    for name, sel in [("all", list(rows))] + [b for b in bound if b[1]] + [
            (f"{f} {m}", [r for r in rows if (r[0].family, r[0].mode) == (f, m)]) for f, m in groups]:
        n, med, p90, worst = _summary(sel)
        out.append(f"| {name} | {n} | {med:.1%} | {p90:.1%} | {worst:.0%} |")
    return out
