#!/usr/bin/env python3
"""Leave-one-draw-out cross-validation of the captured programs' host rule, in variants of its per-call weights.

    python benchmarks/programs/captured_host_cv.py

For each variant, each fit draw of the committed counts (``data/h200_captured_host_counts.json``) is left out in turn:
the five ``host_captured_*`` are fitted on the others' rows (``captured_host.fit_rows``: CPU-bound, at most one read
of the device) and the left-out rows' host time predicted at their probe. Error = exp(|log(predicted / measured)|) - 1
of the host time per step; the median over every row and per family, and the p90. Variants:

- ``one cost per launch``: no weights (the rule before op_host_weight);
- ``op_host_weight``: the spec's weights (``op_host_weights()``), charged on top of each call's counted kernels;
- ``less counted kernels``: each weight less the kernels capture counts for the call beyond one (a sort 2, cub's sort
  of int64 ids 11, a top-k 2, a grouped GEMM 2, a histc 2, an int32 cumsum 3; ``stacks.torch211``);
- ``every GEMM weighed``: op_host_weight and mm's measured 2.62 launches on every linear, mm and addmm;
- ``probe before the case``: op_host_weight, each row read at the launch probe taken before its case's blocks (the
  reading before ``StepCase.timed_probe_us``: every other variant reads the probe taken just before the reported block,
  where the draw recorded one per block, seed 2048's rows).

Reads committed files only (no torch).
"""

from __future__ import annotations

import math
import os
import sys
from typing import Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "src"))

from solkit.calibration.captured_host import (HostCount, fit_captured_host, fit_rows, load_host_counts,  # noqa: E402
                                              op_host_weights, row_host_seconds)
from solkit.calibration.manifest import manifest  # noqa: E402
from solkit.calibration.programs import load_steps  # noqa: E402
from solkit.hardware import load_gpu  # noqa: E402
from solkit.prediction import calibration  # noqa: E402
from solkit.stacks import torch211  # noqa: E402

#: the kernels capture counts for one call of each weighed key (capture.eager's routing counts, stacks.torch211): a
#: short sort's arange and sort, cub's sort of int64 ids (8 one-sweep passes), a top-k's selection and sort, the
#: grouped GEMM's pointer kernel and its own, histc's zero-fill and histogram, an int32 cumsum's cast and cub's scan
COUNTED = {"sort": 2, "sort_cub": torch211.SORT_CUB_LAUNCHES + 8, "topk": torch211.TOPK_SORTED_LAUNCHES,
           "_grouped_mm": torch211.GROUPED_MM_LAUNCHES, "histc": 2, "cumsum": 1 + torch211.CUB_SCAN_LAUNCHES}


def timed(rows: list[HostCount]) -> list[HostCount]:
    """``rows`` as the counts file reads them: at the probe before each case's reported block."""
    return rows


def case_probes(rows: list[HostCount]) -> list[HostCount]:
    """``rows`` read at the probe taken before each case (``StepCase.probe_us``) instead of its reported block's."""
    probes = {(name, c.id): c.probe_us for name in sorted({r.file for r in rows}) for c in load_steps(name).cases}
    return [r.model_copy(update={"timed_probe_us": probes[(r.file, r.id)]}) for r in rows]


Reading = Callable[[list[HostCount]], list[HostCount]]


def variants() -> dict[str, tuple[dict[str, float], Reading]]:
    """Per variant: its per-call weights and its reading of the rows' probes."""
    w = op_host_weights()
    mm = 23.678 / 9.053  # data/h200_op_host.json: mm [1640, 1024] x [1024, 8] over add [1640, 1024]
    return {"one cost per launch": ({}, timed), "op_host_weight": (w, timed),
            "less counted kernels": ({k: v - (COUNTED.get(k, 1) - 1) for k, v in w.items()}, timed),
            "every GEMM weighed": ({**w, "linear": mm, "mm": mm, "addmm": mm}, timed),
            "probe before the case": (w, case_probes)}


def scores() -> dict[str, tuple[float, float, dict[str, float]]]:
    """Per variant: (median, p90, {family: median}) of the left-out rows' host-time error."""
    reference = calibration(load_gpu("h200")).host_probe
    fitted = fit_rows(load_host_counts())
    files = sorted({r.file for r in fitted})
    out = {}
    for name, (weights, reading) in variants().items():
        rows = reading(fitted)
        errors: list[float] = []
        family: dict[str, list[float]] = {}
        for left in files:
            p = fit_captured_host([r for r in rows if r.file != left], reference, weights)
            for r in (r for r in rows if r.file == left):
                e = math.expm1(abs(math.log(row_host_seconds(r, p, weights, reference) / (r.host_ms * 1e-3))))
                errors.append(e)
                family.setdefault(r.family, []).append(e)
        out[name] = (float(np.median(errors)), float(np.percentile(errors, 90)),
                     {k: float(np.median(v)) for k, v in sorted(family.items())})
    return out


def _spread(values: dict[tuple[str, str], list[float]]) -> tuple[int, float, float]:
    """(values, median, p90) of |x - its group's mean| over the groups of at least two."""
    out = [abs(x - float(np.mean(v))) for v in values.values() if len(v) >= 2 for x in v]
    return len(out), float(np.median(out)), float(np.percentile(out, 90))


def probe_spreads(name: str) -> tuple[int, tuple[int, float, float], tuple[int, float, float], tuple[float, float]]:
    """Of the CPU-bound cases (``StepCase.cpu_bound``) of the captured-steps file ``name`` with a probe per block:
    their number; the spread of log(host / probe) about its (family, mode) group's mean, read at the probe before the
    case and at the probe before the reported block (``_spread``: cases in groups of two or more, median, p90); and
    the median and p90 of each case's slowest block's wall time over its fastest's."""
    case: dict[tuple[str, str], list[float]] = {}
    block: dict[tuple[str, str], list[float]] = {}
    ratios = []
    for c in load_steps(name).cases:
        if not (c.cpu_bound and c.probe_us and c.probe_us_blocks and c.wall_ms_blocks):
            continue
        case.setdefault((c.family, c.mode), []).append(math.log(c.host_ms / c.probe_us))  # type: ignore[operator]
        block.setdefault((c.family, c.mode), []).append(math.log(c.host_ms / c.timed_probe_us))  # type: ignore[operator]
        ratios.append(max(c.wall_ms_blocks) / min(c.wall_ms_blocks))
    return (len(ratios), _spread(case), _spread(block),
            (float(np.median(ratios)), float(np.percentile(ratios, 90))))


def block_files() -> tuple[str, ...]:
    """The manifest's captured-steps draws (protocol steps_captured) whose cases recorded a probe per block, in order."""
    names = [e.file for e in manifest().entries if e.protocol == "steps_captured"]
    return tuple(n for n in names if any(c.probe_us_blocks for c in load_steps(n).cases))


def main() -> int:
    rows = fit_rows(load_host_counts())
    print(f"{len(rows)} CPU-bound rows of {len({r.file for r in rows})} fit draws, each left out in turn")
    for name, (median, p90, family) in scores().items():
        fams = ", ".join(f"{k} {v:.1%}" for k, v in family.items())
        print(f"{name:22s} median {median:.1%}  p90 {p90:.1%}  ({fams})")
    print("CPU-bound cases with a probe per block: |log(host / probe) - its family and mode's mean|, median / p90, at "
          "the probe before the case -> before the reported block; each case's slowest block over its fastest")
    for name in block_files():
        n, case, block, ratio = probe_spreads(name)
        print(f"{name}: {n} cases ({case[0]} in groups of two or more), {case[1]:.3f} / {case[2]:.3f} -> "
              f"{block[1]:.3f} / {block[2]:.3f}; blocks {ratio[0]:.3f} / {ratio[1]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
