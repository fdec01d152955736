#!/usr/bin/env python3
"""Fit solkit.tune's parameters on the fit set, and score rankings on any set beside Triton's analytic GEMM model.

    python benchmarks/tune/evaluate.py fit data/h200_tune_fit_seed3201.json data/h200_tune_validation_seed3202.json
    python benchmarks/tune/evaluate.py score data/h200_tune_validation_seed3202.json     # with the spec's measured.tune
    python benchmarks/tune/evaluate.py score --gpu h100 [--defaults] data/h100_tune_test_seed3270.json  # another GPU's
                                                         # limits, with its params_of (or the uncalibrated defaults)

Scores per kernel and shape (a shape's configs that ran; a config that could not launch is left out of the measured
side and must be NaN on the predicted side), by scoring.py, which states how ties count: top1 = the predicted best
runs within 10% of the measured best (the goal: on >= 90% of shapes); quarter = the predicted best quarter (ceil(n / 4)
configs, as Ranking.prune keeps them) holds a config within 5% of the measured best (goal: >= 95% of shapes); where
predicted times tie, a shape scores the chance over a uniformly random tie-break, and the summary gives the expected
share with the range over tie-breaks; Spearman's rank correlation of predicted and measured times per shape, with
average ranks for ties (goal: median >= 0.8); saved = the share of the autotuning time (the sum of the measured times
of every config, each benchmarked the same way) that timing only the predicted quarter saves. Triton's analytic model
(a port: triton_perf_model.py) is scored the same way on the GEMM, and its own early_config_prune's choice beside it.
Until the scorer made ties explicit the Spearman took ordinal ranks and a tie took the first config in the list.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import replace
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_perf_model as tpm  # noqa: E402
from scoring import shape_scores  # noqa: E402

from solkit.tune.configs import config_table  # noqa: E402
from solkit.tune.limits import DEFAULT_PARAMS, Params, limits_of, params_of  # noqa: E402
from solkit.tune.models import predict  # noqa: E402

KERNEL = {"matmul": "triton_matmul", "layernorm": "triton_layernorm", "attention": "triton_flash_attention",
          "softmax": "triton_softmax"}
#: the fitted parameters and the bounds of the search (SI units)
FITTED = ("wgmma_efficiency", "mma_sync_efficiency", "l2_bandwidth", "load_latency", "program", "row_latency",
          "softmax_cycles", "scalar_loads", "row_cycles", "kstep", "thread_cycles")
BOUNDS = {"wgmma_efficiency": (0.2, 1.0), "mma_sync_efficiency": (0.05, 1.0), "l2_bandwidth": (2e12, 40e12),
          "load_latency": (1e-7, 5e-6), "program": (0.0, 5e-6), "row_latency": (1e-8, 5e-6),
          "softmax_cycles": (0.01, 1.0), "scalar_loads": (2.0, 256.0),
          "row_cycles": (0.001, 1.0), "kstep": (0.0, 2e-6),
          "thread_cycles": (0.5, 500.0)}


def full_config(kernel: str, c: dict[str, int]) -> dict[str, int]:
    if kernel == "matmul":
        return {"SPLIT_K": 1, **c}
    if kernel in ("layernorm", "softmax"):
        return {"num_stages": 3, **c}
    return dict(c)


def shape_args(kernel: str, row: dict[str, Any]) -> dict[str, Any]:
    if kernel == "matmul":
        return {"m": float(row["m"]), "n": float(row["n"]), "k": float(row["k"])}
    if kernel in ("layernorm", "softmax"):
        return {"rows": float(row["rows"]), "cols": float(row["cols"])}
    return {"batch": float(row["batch"]), "heads": float(row["heads"]), "seq_q": float(row["seq"]),
            "seq_kv": float(row["seq"]), "head_dim": float(row["head_dim"]), "causal": bool(row["causal"])}


def cases(data: dict[str, Any], set_name: str) -> list[tuple[str, dict[str, Any], dict[str, np.ndarray], np.ndarray]]:
    """(kernel, shape, config table, measured seconds with NaN where it could not run) per measured shape."""
    out = []
    for kernel, block in data["sets"][set_name].items():
        configs = [full_config(kernel, c) for c in block["configs"]]
        table = config_table(KERNEL[kernel], configs)
        for row in block["shapes"]:
            measured = np.array([np.nan if s is None else s for s in row["seconds"]], float)
            out.append((kernel, row, table, measured))
    return out


def predicted(kernel: str, row: dict[str, Any], table: dict[str, np.ndarray], params: Params, lim: Any) -> np.ndarray:
    parts, _ = predict(KERNEL[kernel], table, shape_args(kernel, row), lim, params, "bf16")
    return np.asarray(parts["seconds"], float)


def triton_device(data: dict[str, Any]) -> tpm.Device:
    env = data["environment"]
    props = env["triton_device_properties"]
    clock_mhz = float(env["nvidia_smi"].split(",")[2].split()[0])  # clocks.max.sm
    major, minor = (int(x) for x in env["compute_capability"].split("."))
    return tpm.Device(props["multiprocessor_count"], clock_mhz * 1e3, props["mem_clock_rate"], props["mem_bus_width"],
                      (major, minor), props["max_shared_mem"])


def triton_predicted(dev: tpm.Device, row: dict[str, Any], configs: list[dict[str, int]]) -> np.ndarray:
    return np.array([tpm.estimate_matmul_time(dev, c["num_warps"], c["num_stages"], row["m"], row["n"], row["k"],
                                              c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c.get("SPLIT_K", 1)) * 1e-3
                     for c in configs])


def score(data: dict[str, Any], set_name: str, params: Params, gpu: str = "h200") -> dict[str, Any]:
    lim = limits_of(gpu)
    dev = triton_device(data)
    per: dict[str, dict[str, list[float]]] = {}
    launch = {"agree": 0, "total": 0}
    for kernel, row, table, meas in cases(data, set_name):
        pred = predicted(kernel, row, table, params, lim)
        launch["total"] += len(meas)
        launch["agree"] += int(np.sum(np.isnan(pred) == np.isnan(meas)))
        for k, v in shape_scores(pred, meas).items():
            per.setdefault(kernel, {}).setdefault(k, []).append(v)
        if kernel == "matmul":
            configs = data["sets"][set_name]["matmul"]["configs"]
            tp = triton_predicted(dev, row, configs)
            tp = np.where(np.isnan(meas), np.nan, tp)  # NB: Triton's model has no launch check of its own here
            for k, v in shape_scores(tp, meas).items():
                per.setdefault("matmul (Triton's model)", {}).setdefault(k, []).append(v)
            kept = tpm.early_config_prune(dev, configs)
            ok = [i for i in kept if np.isfinite(meas[i])]
            per.setdefault("matmul (Triton's early_config_prune)", {}).setdefault("kept", []).append(len(kept))
            if ok:
                best = np.nanmin(meas)
                per["matmul (Triton's early_config_prune)"].setdefault("best_kept", []).append(
                    float(np.min(meas[ok]) / best))
    summary: dict[str, Any] = {"launch_agreement": launch}
    for kernel, s in per.items():
        if "top1" not in s:
            summary[kernel] = {"shapes": len(s["kept"]), "kept_mean": float(np.mean(s["kept"])),
                               "best_kept_within_5pct": float(np.mean(np.array(s.get("best_kept", [])) <= 1.05))}
            continue
        summary[kernel] = {
            "shapes": len(s["top1"]),
            "top1_within_10pct": float(np.mean(s["top1"])),
            "top1_within_10pct_range": [float(np.mean(s["top1_worst"])), float(np.mean(s["top1_best"]))],
            "quarter_within_5pct": float(np.mean(s["quarter"])),
            "quarter_within_5pct_range": [float(np.mean(s["quarter_worst"])), float(np.mean(s["quarter_best"]))],
            "shapes_tied_best": int(np.sum(np.array(s["tied_best"]) > 1)),
            "median_spearman": float(np.nanmedian(s["spearman"])),
            "median_top1": float(np.median(s["top1_ratio"])), "worst_top1": float(np.max(s["top1_worst_ratio"])),
            "autotune_time_saved": float(np.mean(s["saved"])),
            "mean_log_err": float(np.mean(s["log_err"])),
        }
    return summary


def _fit_cases(data: dict[str, Any] | list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, np.ndarray],
                                                                          np.ndarray]]:
    """The cases of the files fitted on: every set of each (a fit set, or a spent test draw fitted on)."""
    files = data if isinstance(data, list) else [data]
    return [c for d in files for s in d["sets"] for c in cases(d, s)]


def loss(data: dict[str, Any] | list[dict[str, Any]], params: Params, lim: Any,
         kernels: tuple[str, ...]) -> float:  # noqa: D417
    """Mean over the fitted files' shapes of: the mean |log(pred / measured) - its median over the shape's configs| (the ranking's
    error), a quarter of |that median| (the level's), and the log of the top-1 ratio."""
    total, count = 0.0, 0
    for kernel, row, table, meas in _fit_cases(data):
        if kernel not in kernels:
            continue
        pred = predicted(kernel, row, table, params, lim)
        ok = np.isfinite(meas) & np.isfinite(pred)
        r = np.log(pred[ok] / meas[ok])
        e = np.abs(r - np.median(r))  # the error of the ranking: a shape's common factor taken out
        order = np.argsort(pred[ok])
        total += float(e.mean()) + 0.25 * float(np.abs(np.median(r))) + float(np.log(meas[ok][order[0]] / meas[ok].min()))
        count += 1
    return total / max(count, 1)


def fit(data: dict[str, Any] | list[dict[str, Any]], rounds: int = 14) -> Params:
    """Coordinate descent in log space within BOUNDS from two starts (the lower loss wins): each parameter tried
    times and over a step that shrinks each round; a change is kept only where the loss falls."""
    lim = limits_of("h200")
    kernels = ("matmul", "layernorm", "attention")
    starts = [replace(params_of("h200"), calibrated=True, source="fit"),
              replace(params_of("h200"), calibrated=True, source="fit", load_latency=1e-6, kstep=5e-8, program=1e-6,
                      row_latency=1e-6, scalar_loads=32.0)]
    scored = [(loss(data, p, lim, kernels), i) for i, p in enumerate(starts)]
    results = [_descend(data, starts[i], rounds, lim, kernels) for _, i in sorted(scored)]
    return min(results, key=lambda r: r[1])[0]


def _descend(data: dict[str, Any] | list[dict[str, Any]], best: Params, rounds: int, lim: Any, kernels: tuple[str, ...]) -> tuple[Params, float]:
    best_loss = loss(data, best, lim, kernels)
    print(f"start loss {best_loss:.4f}", file=sys.stderr)
    step = math.log(4.0)
    for r in range(rounds):
        for name in FITTED:
            lo, hi = BOUNDS[name]
            for direction in (1.0, -1.0):
                value = getattr(best, name)
                trial = min(max(value * math.exp(direction * step), lo), hi) if value > 0 else hi * 1e-3
                cand = replace(best, **{name: trial})
                cand_loss = loss(data, cand, lim, kernels)
                if cand_loss < best_loss - 1e-6:
                    best, best_loss = cand, cand_loss
                    break
        step /= 1.6
        print(f"round {r}: loss {best_loss:.4f}", file=sys.stderr)
    return best, best_loss


def load_draws(paths: list[str]) -> list[dict[str, Any]]:
    """measure_triton.py files, read in order."""
    draws = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            draws.append(json.load(f))
    return draws


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("verb", choices=("fit", "score"))
    ap.add_argument("data", nargs="+", help="measure_triton.py files (fit: the first --fit-on of them are fitted on)")
    ap.add_argument("--fit-on", type=int, default=1, help="fit: how many of the files, from the first, to fit on")
    ap.add_argument("--gpu", default="h200", help="score: the GPU whose limits and params_of rank the configs")
    ap.add_argument("--defaults", action="store_true", help="score: with the uncalibrated DEFAULT_PARAMS instead")
    args = ap.parse_args()
    files = load_draws(args.data)
    if args.verb == "fit":
        p = fit(files[: args.fit_on])
        print(json.dumps({n: getattr(p, n) for n in FITTED}, indent=1))
        for data in files:
            for s in data["sets"]:
                print(s, json.dumps(score(data, s, p), indent=1))
        return 0
    p = DEFAULT_PARAMS if args.defaults else params_of(args.gpu)
    print(f"scored on {args.gpu}'s limits with {p.source}", file=sys.stderr)
    for data in files:
        for s in data["sets"]:
            print(s, json.dumps(score(data, s, p, args.gpu), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
