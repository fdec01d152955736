"""A frozen test draw per family: the model with and without its neighbour correction, and each case's distance to the bank.

    python benchmarks/frozen_report.py data/h200_weak_test_seed2055.json data/h200_sample_test_seed2055.json ...
    python benchmarks/frozen_report.py --spec hardware_specs/h100-sxm.yaml data/h100_sample_test_seed2070.json ...

Groups: ``calibration.data.group_of``, split further where issue 31 names a family (decode SDPA; dense, depthwise and
grouped convs; causal flash; GEMMs by precision). Error = exp(|log(predicted / measured)|) - 1; "physical" is the
same spec without its bank; SOL fraction = T_SOL / measured (must stay <= 1). Distance: octaves (the bank's
features, ``prediction.neighbours.features``) from the case's main kernel to the nearest banked kernel of its key
(inf: its key has no bank entry); the bank is the shipped H200 one (fit, validation and spent draws, never a test draw).
``--spec`` predicts on another GPU (a name, alias or spec file; default the H200's); the distance is still to the H200's
bank.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from solkit.calibration.data import MeasuredCase, group_of, load_measurements, workload_of
from solkit.calibration.neighbours import bank_rows
from solkit.errors import SolkitError
from solkit.hardware import load_gpu
from solkit.prediction import predict
from solkit.prediction.bank import NeighbourBank
from solkit.prediction.gpu import calibration
from solkit.prediction.neighbours import STEP
from solkit.sol import roofline

ROOT = Path(__file__).resolve().parents[1]
SPEC = str(ROOT / "hardware_specs" / "h200-sxm.yaml")
BANK = str(ROOT / "hardware_specs" / "h200-sxm.neighbours.json")


def family(case: MeasuredCase) -> str:
    """The case's report group, with the families issue 31 names split out."""
    p, group = case.params, group_of(case)
    if case.family == "conv2d":
        g = p["groups"]
        kind = "depthwise" if g > 1 and g == p["in_channels"] == p["out_channels"] else "grouped" if g > 1 else "dense"
        return f"{group}/{kind}"
    if case.family in ("sdpa", "attention"):
        return f"{group}/" + ("decode" if p["seq_q"] == 1 else "causal" if p["causal"] else "full")
    if case.family in ("matmul", "bmm"):
        return f"{group}/{p['dtype']}"
    return group


def rows(path: str, gpu: Any) -> list[tuple[str, float, float, float, float, float]]:
    """(family, measured, predicted, physical, T_SOL, distance) of each measured case of a file."""
    mset = load_measurements(path)
    cal = calibration(gpu)
    with open(BANK, encoding="utf-8") as fh:
        bank = NeighbourBank.model_validate_json(fh.read())
    banked = {key: np.array(entry.features, dtype=float) / STEP for key, entry in bank.keys.items()}
    distance = {}
    for r in bank_rows(mset, gpu, cal):
        points = banked.get(r.key)
        q = np.array(r.features, dtype=float) / STEP  # octaves, as the bank's
        distance[r.id] = float(np.sqrt(((points - q) ** 2).sum(axis=1)).min()) if points is not None else float("inf")
    out = []
    for c in mset.cases:
        if not (c.ok and c.seconds and c.primary):
            continue
        w = workload_of(c)
        out.append((family(c), c.seconds, float(predict(w, gpu, warn=False).seconds),
                    float(predict(w, gpu, warn=False, neighbours=False).seconds), float(roofline(w, gpu).t_sol),
                    distance.get(c.id, float("inf"))))
    return out


def table(found: list[tuple[str, float, float, float, float, float]]) -> str:
    """The Markdown table: per family, then all."""
    lines = ["| family | cases | median error | p90 error | physical median | physical p90 | max SOL fraction | "
             "median distance (octaves) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in sorted({f for f, *_ in found}) + ["**all**"]:
        x = [r for r in found if name == "**all**" or r[0] == name]
        m = np.array([r[1] for r in x])
        e, f = (np.expm1(np.abs(np.log(np.array([r[i] for r in x]) / m))) for i in (2, 3))
        sol = max(r[4] / r[1] for r in x)
        d = np.median([r[5] for r in x])
        lines.append(f"| {name} | {len(x)} | {np.median(e):.1%} | {np.percentile(e, 90):.1%} | {np.median(f):.1%} | "
                     f"{np.percentile(f, 90):.1%} | {sol:.3f} | {d:.2f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="frozen_report.py", description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+", metavar="FILE", help="measured draws (benchmarks/measure_h200.py's JSON)")
    ap.add_argument("--spec", default=SPEC, help="the GPU: a name, alias or spec file (default the H200's)")
    args = ap.parse_args(argv)
    paths = args.files
    try:
        gpu = load_gpu(args.spec)
    except SolkitError as exc:
        ap.error(str(exc))
    every = []
    for path in paths:
        found = rows(path, gpu)
        every += found
        print(f"\n{path}\n\n{table(found)}")
    if len(paths) > 1:
        print(f"\nall files\n\n{table(every)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
