#!/usr/bin/env python3
"""Score several measure_triton.py draws of one GPU, each and pooled, and the run-to-run ceiling of a repeated draw.

    python benchmarks/tune/pooled.py --gpu h100 data/h100_tune_test_seed327[012].json
    python benchmarks/tune/pooled.py --repeat data/h100_tune_test_seed3270.json data/h100_tune_repeat_seed3270.json

Per kernel and model (solkit.tune with ``params_of(gpu)``, with the uncalibrated ``DEFAULT_PARAMS``, and Triton's
analytic GEMM model), as Markdown rows: shapes whose predicted best runs within 10% of the measured best, whose
predicted best quarter holds a config within 5% of it, the median Spearman over shapes (scoring.py's ``shape_scores``
on every shape of the files pooled: where predicted times tie, a count is the expected one over uniformly random
tie-breaks, with the fewest and most any tie-break gives; the Spearman takes average ranks). ``--repeat``: the same shapes and configs timed twice; the first run's best
config against the second run's best, per shape: how often a perfect predictor of the first run is "within 10%" of
the second (the ceiling that timing noise puts on the top-1 figure; a tie in the first run's best scored as above),
and the Spearman between the runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evaluate as ev  # noqa: E402
from scoring import TOP1_WITHIN, cells, count, counted, hit_chance, shape_scores, spearman  # noqa: E402

from solkit.tune.limits import DEFAULT_PARAMS, limits_of, params_of  # noqa: E402


def per_shape(files: list[dict[str, Any]], gpu: str) -> dict[tuple[str, str], list[dict[str, float]]]:
    """Each shape's scores by (kernel, model), over every set of every file."""
    lim = limits_of(gpu)
    models = {"solkit.tune": params_of(gpu), "solkit.tune, uncalibrated defaults": DEFAULT_PARAMS}
    out: dict[tuple[str, str], list[dict[str, float]]] = {}
    for data in files:
        dev = ev.triton_device(data)
        for s in data["sets"]:
            for kernel, row, table, meas in ev.cases(data, s):
                for name, params in models.items():
                    out.setdefault((kernel, name), []).append(shape_scores(ev.predicted(kernel, row, table, params,
                                                                                           lim), meas))
                if kernel == "matmul":
                    tp = ev.triton_predicted(dev, row, data["sets"][s]["matmul"]["configs"])
                    out.setdefault((kernel, "Triton's model"), []).append(
                        shape_scores(np.where(np.isnan(meas), np.nan, tp), meas))
    return out


def repeat(first: dict[str, Any], second: dict[str, Any]) -> None:
    """The run-to-run ceiling of the top-1 figure, per kernel."""
    for kernel in first["sets"]["test"]:
        a, b = first["sets"]["test"][kernel], second["sets"]["test"][kernel]
        assert a["configs"] == b["configs"] and [r.get("m", r.get("rows", r.get("seq"))) for r in a["shapes"]] == \
            [r.get("m", r.get("rows", r.get("seq"))) for r in b["shapes"]], "not the same draw"
        within, rho, spread = [], [], []
        for ra, rb in zip(a["shapes"], b["shapes"]):
            ta = np.array([np.nan if s is None else s for s in ra["seconds"]], float)
            tb = np.array([np.nan if s is None else s for s in rb["seconds"]], float)
            ok = np.isfinite(ta) & np.isfinite(tb)
            ta, tb = ta[ok], tb[ok]
            chance, worst, best = hit_chance(ta, tb / tb.min() <= TOP1_WITHIN, 1)
            within.append({"top1": chance, "top1_worst": worst, "top1_best": best})
            rho.append(spearman(ta, tb))
            spread.extend(np.abs(np.log(tb / ta)))
        print(f"| {kernel} | {counted(*count(within, 'top1'), len(within))} | {np.median(rho):.3f} | "
              f"{np.expm1(np.median(spread)):.1%} / {np.expm1(np.quantile(spread, 0.9)):.1%} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--gpu", default="h200", help="the GPU whose limits and params_of rank the configs")
    ap.add_argument("--repeat", action="store_true", help="two files: a draw and its repeat")
    args = ap.parse_args()
    files = ev.load_draws(args.files)
    if args.repeat:
        if len(files) != 2:
            ap.error("--repeat takes two files: a draw and its repeat")
        print("| kernel | first run's best within 10% of the second's | median Spearman between runs | "
              "per config: median / p90 change |\n|---|---|---|---|")
        repeat(*files)
        return 0
    print("| draw | kernel | model | best within 10% | quarter within 5% | median Spearman |\n|---|---|---|---|---|---|")
    names = [os.path.basename(p) for p in args.files]
    pooled: dict[tuple[str, str], list[dict[str, float]]] = {}
    for name, data in zip(names, files):
        for key, scores in per_shape([data], args.gpu).items():
            print(f"| {name} | {key[0]} | {key[1]} | {cells(scores)} |")
            pooled.setdefault(key, []).extend(scores)
    if len(files) > 1:
        for key, scores in pooled.items():
            print(f"| **all {len(files)}** | {key[0]} | {key[1]} | {cells(scores)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
