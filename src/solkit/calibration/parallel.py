"""Parameters of split training steps fitted on measured ones: FSDP2's host time per layer and pass.

``data/h200_parallel_steps_world1_unprofiled.json`` (``benchmarks/comm/parallel_steps.py`` on one H200, world size 1,
timed before any profiler session; ``data/h200_parallel_steps_world1.json`` is the older run timed after one, its host
times about 1.5x slower) holds the same steps plain, under DDP and under FSDP2. Where both the plain and the FSDP step are CPU-bound
(``prediction.cpu_bound``: the step's time below 1.1 x the host time), the difference is the CPU time FSDP2's hooks add:
``host_fsdp_group`` = the median over those cases of (FSDP step - plain step) / (2 x layers), a forward and
a backward pass per layer (the root group's share included).
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any, Sequence

import numpy as np

from ..errors import SpecError
from ..prediction import cpu_bound
from .manifest import data_path, manifest
from .rounding import rounded

__all__ = ["PARALLEL_FIT_DATA", "PARALLEL_X2_SETS", "parallel_fit_file", "parallel_x2_sets", "parallel_report_lines",
           "fit_fsdp_host", "parallel_parameters", "LAYERS", "MODES", "PRESETS", "step_workload", "step_errors"]

_TITLES = {"validation": "grid, 2 GPUs", "test": "frozen test", "spent": "spent test"}
# the files by their old names, read from the manifest on use (``__getattr__``: importing this module reads no data)
PARALLEL_FIT_DATA: str
PARALLEL_X2_SETS: tuple[tuple[str, str], ...]


def parallel_fit_file() -> str:
    """The world-size-1 steps ``host_fsdp_group`` is fitted on (``data/manifest.yaml`` says what each file is)."""
    return manifest().first(role="fit", fits="fsdp_host").file


def parallel_x2_sets() -> tuple[tuple[str, str], ...]:
    """The same scripts on 2 H200s, (title, file): the grid (measured with the collectives' fit), the frozen test and
    the spent draws."""
    return tuple((f"{_TITLES[e.role]} ({e.describe()})", e.file)
                 for e in manifest().select(measures="parallel_steps", gpus=2) if e.role in _TITLES)


def __getattr__(name: str) -> Any:
    """``PARALLEL_FIT_DATA`` and ``PARALLEL_X2_SETS``, read from the manifest when asked for."""
    if name == "PARALLEL_FIT_DATA":
        return parallel_fit_file()
    if name == "PARALLEL_X2_SETS":
        return parallel_x2_sets()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the modes of benchmarks/comm/parallel_steps.py: the plain step, DDP, FSDP2
MODES = ("single", "ddp", "fsdp")
#: layers of the measured models (their configs: tests/data/hf_configs)
LAYERS = {"bert-base": 12, "llama-1b": 16}


def fit_fsdp_host(path: Any = None) -> tuple[float, int]:
    """(host_fsdp_group in seconds, cases it is the median of) from a world-size-1 parallel-steps file."""
    file = data_path(path if path is not None else parallel_fit_file())
    cases = [c for c in json.loads(file.read_text(encoding="utf-8"))["cases"] if c.get("status") == "ok"]
    by_key = {(c["model"], c["seq"], c["batch"], c["mode"]): c for c in cases}
    per_layer = []
    for (model, seq, batch, mode), c in by_key.items():
        plain = by_key.get((model, seq, batch, "single"))
        if mode != "fsdp" or plain is None or model not in LAYERS:
            continue
        if not (bool(cpu_bound(c["seconds"], c["host_seconds"])) and bool(cpu_bound(plain["seconds"], plain["host_seconds"]))):
            continue
        per_layer.append((c["seconds"] - plain["seconds"]) / (2 * LAYERS[model]))
    if not per_layer:
        raise SpecError(f"{file}: no CPU-bound pair of plain and FSDP steps to fit host_fsdp_group on")
    return rounded(max(statistics.median(per_layer), 0.0), "host_fsdp_group"), len(per_layer)


def parallel_parameters() -> dict[str, float]:
    """The split-step parameters for the spec's ``measured:`` section (``fit --write``)."""
    return {"host_fsdp_group": fit_fsdp_host()[0]}


#: the measuring script's model names -> solkit presets (the same configs: tests/data/hf_configs)
PRESETS = {"bert-base": "bert-base", "llama-1b": "llama3.2-1b"}


def step_workload(case: dict[str, Any]) -> Any:
    """The ``training_step`` a measured parallel-steps case ran: plain, DDP (dp = world size) or FSDP2 (zero=3)."""
    from ..models import preset, training_step

    fwd = preset(PRESETS[case["model"]]).forward(batch=case["batch"], seq=case["seq"])
    world = int(case.get("world_size", 1))
    if case["mode"] == "single" or world == 1:
        return training_step(fwd)
    return training_step(fwd, dp=world, zero=3 if case["mode"] == "fsdp" else 0)


def step_errors(path: Any, gpu: Any = "h200", modes: Sequence[str] = MODES, probe: bool = False) -> list[tuple[dict, float, float]]:
    """(case, predicted seconds, error exp(|log(pred / meas)|) - 1) of every measured case of ``modes``; ``probe``: each
    given the launch probe it recorded (``predict(host_probe_us=)``; ``parallel_steps.py`` records one since 2026-12-01;
    cases without one are left out)."""
    import warnings

    from ..prediction import predict

    file = data_path(path)
    cases = [c for c in json.loads(file.read_text(encoding="utf-8"))["cases"] if c.get("status") == "ok"]
    out = []
    for c in cases:
        world = int(c.get("world_size", 1))
        if c["mode"] not in modes or (c["mode"] != "single" and world == 1):
            continue  # a wrapper over one GPU is no split: solkit has no such step
        if probe and not c.get("probe_us"):
            continue  # with probes, as programs.step_errors: a case that recorded none is left out
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = float(predict(step_workload(c), gpu, host_probe_us=c.get("probe_us") if probe else None).seconds)
        out.append((c, p, math.expm1(abs(math.log(p / c["seconds"])))))
    return out


def parallel_report_lines(gpu: Any = "h200") -> list[str]:
    """Markdown lines: per 2-GPU steps file and mode, the cases, median and p90 error, and the median measured / predicted
    (above 1: the model is fast), with how many steps were CPU-bound (``prediction.cpu_bound``)."""
    lines = ["# Data-parallel training steps on 2 H200s: predicted against measured", "",
             "Error = exp(|log(predicted / measured)|) - 1 of the median step (the max over ranks). Goal (issue 14): 10%.", ""]
    for title, name in parallel_x2_sets():
        rows = step_errors(name, gpu)
        lines += [f"## {title} (`data/{name}`)", "", "| mode | cases | CPU-bound | median | p90 | measured / predicted |",
                  "|---|---:|---:|---:|---:|---:|"]
        for mode in MODES:
            mine = [(c, p, e) for c, p, e in rows if c["mode"] == mode]
            if not mine:
                continue
            bound = sum(bool(cpu_bound(c["seconds"], c["host_seconds"])) for c, _, _ in mine)
            errors = [e for _, _, e in mine]
            ratio = statistics.median(c["seconds"] / p for c, p, _ in mine)
            lines.append(f"| {mode} | {len(mine)} | {bound} | {statistics.median(errors):.1%} | "
                         f"{float(np.percentile(errors, 90)):.1%} | {ratio:.2f} |")
        lines.append("")
    return lines
