"""``python -m solkit.calibration fit|report``: the calibration and its report from committed measurements.

    python -m solkit.calibration fit [--data data/h200_measurements.json] [--spec hardware_specs/h200-sxm.yaml] [--write]
    python -m solkit.calibration report [--data ...] [--repeat data/h200_measurements_run2.json] [--out data/h200_validation.md]

Paths are relative to the current folder (run it from a source checkout's root).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..hardware import load_spec_file
from .fitting import fit
from .data import load_measurements
from .metrics import evaluate
from .report import validation_report
from .writer import _dump, measured_section, write_measured

DATA = "data/h200_measurements.json"
SPEC = "hardware_specs/h200-sxm.yaml"
REPEAT = "data/h200_measurements_run2.json"
REPORT = "data/h200_validation.md"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m solkit.calibration", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fit", help="fit the predictor's parameters; print (and with --write, store) the measured: section")
    p.add_argument("--data", default=DATA)
    p.add_argument("--spec", default=SPEC)
    p.add_argument("--write", action="store_true", help="replace the spec's measured: section")
    p = sub.add_parser("report", help="write the validation report")
    p.add_argument("--data", default=DATA)
    p.add_argument("--spec", default=SPEC)
    p.add_argument("--repeat", default=REPEAT, help="a second run of the same cases ('' for none)")
    p.add_argument("--out", default=REPORT)
    args = parser.parse_args(argv)
    mset = load_measurements(args.data)
    gpu = load_spec_file(args.spec)
    if args.command == "fit":
        result = fit(mset, gpu)
        section = measured_section(mset, result, args.data)
        print(_dump(section), end="")
        if args.write:
            write_measured(args.spec, section)
            print(f"wrote {args.spec}")
        return 0
    repeat = load_measurements(args.repeat) if args.repeat else None
    text = validation_report(mset, gpu, args.data, args.spec, repeat)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    worst = max(r.sol_fraction for r in evaluate(mset, gpu))
    print(f"\nmax SOL fraction over all cases: {worst:.3f} (must be <= 1)")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
