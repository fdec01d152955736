"""Per-family errors of the neighbour correction held out by set: each validation file against a bank of every other file.

    python benchmarks/heldout_families.py OUT.json [FILE ...]          # today's model; default: the banked validation draws
    python benchmarks/heldout_families.py --compare BEFORE.json AFTER.json

Each file's cases (bank rows: their main kernel's miss under the physical model) are predicted as ``predict`` does
(every kernel corrected, floored at T_SOL) with a bank built from every other bank file (``calibration.neighbours``),
without the calibration keys the shipped bank switches off; "physical" is the same without a bank. Families are
``frozen_report.family``'s. Error = exp(|log(predicted / measured)|) - 1. Run it in two checkouts (``git archive REV``
into a folder, run from there with ``PYTHONPATH=src``) and ``--compare`` the two files: how docs/accuracy.md judged the
seed-2054 grouped-conv draws (7.0% / 39.7% -> 6.9% / 38.7% on 1,720 validation cases).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from typing import Any

import numpy as np

from frozen_report import BANK, SPEC, family
from solkit.calibration.data import load_measurements
from solkit.calibration.metrics import log_error
from solkit.calibration.neighbours import bank_files, bank_of, bank_rows, predicted, validation_files
from solkit.hardware import load_spec_file
from solkit.prediction.bank import calibration_key
from solkit.prediction.gpu import calibration


def errors(files: list[str]) -> dict[str, list[tuple[float, float]]]:
    """{"file|family": [(corrected log error, physical log error), ...]} of each file's bank rows."""
    gpu = load_spec_file(SPEC)
    cal = calibration(gpu)
    physical = cal.replace(neighbours=None)
    with open(BANK, encoding="utf-8") as fh:
        off = set(json.load(fh)["off"])
    named = {f: bank_rows(load_measurements(f), gpu, cal) for f in bank_files()}
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for name in files:
        rows = named.get(name) or bank_rows(load_measurements(name), gpu, cal)
        families = {c.id: family(c) for c in load_measurements(name).cases}
        others = [r for f, rs in named.items() if f != name for r in rs if calibration_key(r.key) not in off]
        held = physical.replace(neighbours=bank_of(others))
        for r in rows:
            out[f"{name}|{families[r.id]}"].append((float(log_error(predicted(r, gpu, held), r.measured)),
                                                     float(log_error(r.rest + r.main, r.measured))))
    return dict(out)


def compare(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Per family, per file and over all: median / p90 before and after (corrected), and the physical medians."""
    lines = []
    for by in (lambda f, fam: fam, lambda f, fam: f.rsplit("/", 1)[-1]):
        groups: dict[str, tuple[list[Any], list[Any]]] = defaultdict(lambda: ([], []))
        for i, data in enumerate((before, after)):
            for key, rows in data.items():
                groups[by(*key.split("|"))][i].extend(rows)
        for name in sorted(groups):
            a, b = (np.expm1(np.array([e for e, _ in rows])) if rows else np.array([np.nan]) for rows in groups[name])
            pa, pb = (np.expm1(np.array([p for _, p in rows])) if rows else np.array([np.nan]) for rows in groups[name])
            lines.append(f"{name:42s} {len(a):5d}  before {np.median(a):6.1%} {np.percentile(a, 90):6.1%}  after "
                         f"{np.median(b):6.1%} {np.percentile(b, 90):6.1%}  physical {np.median(pa):6.1%} {np.median(pb):6.1%}")
        lines.append("")
    a, b = (np.expm1([e for rows in d.values() for e, _ in rows]) for d in (before, after))
    lines.append(f"all {len(a)}: before {np.median(a):.1%} / {np.percentile(a, 90):.1%}, after {np.median(b):.1%} / "
                 f"{np.percentile(b, 90):.1%}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="heldout_families.py", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="print two earlier runs' files side by side")
    ap.add_argument("out", nargs="?", metavar="OUT.json", help="where to write today's errors")
    ap.add_argument("files", nargs="*", metavar="FILE", help="validation files (default: the banked validation draws)")
    args = ap.parse_args(argv)
    if args.compare:
        if args.out:
            ap.error("--compare takes its two files and nothing else")
        with open(args.compare[0], encoding="utf-8") as f1, open(args.compare[1], encoding="utf-8") as f2:
            print(compare(json.load(f1), json.load(f2)))
        return 0
    if not args.out:
        ap.error("give OUT.json (where the errors go) or --compare BEFORE AFTER")
    files = args.files or list(validation_files())
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(errors(files), fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
