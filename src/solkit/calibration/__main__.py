"""``python -m solkit.calibration fit|cv|sampled|programs|report``: the calibration and its report from committed measurements.

    python -m solkit.calibration fit [--data data/h200_sample_fit_run2.json data/h200_sample_fit_seed2027.json
                                          data/h200_measurements.json] [--bank FILE ...] [--spec ...] [--write]
    python -m solkit.calibration cv [--data SAMPLED CATALOGUE] [--validation data/h200_sample_validation.json]
    python -m solkit.calibration sampled [--sets TITLE=PATH ...] [--cv FILE] [--out ...]
    python -m solkit.calibration programs [--out data/h200_programs.md]
    python -m solkit.calibration collectives [--out data/h200x2_collectives.md]
    python -m solkit.calibration report [--data ...] [--repeat data/h200_measurements_run2.json] [--out data/h200_validation.md]

Paths are relative to the current folder (run it from a source checkout's root).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..hardware import load_spec_file
from .crossval import cross_validate, format_scores
from .fitting import fit, round_calibration
from .neighbours import BANK_DATA, bank_document, bank_file, bank_rows, holdout_by_set, write_bank
from ..prediction import calibration
from .data import load_measurements
from .metrics import evaluate
from .report import sampled_report, validation_report
from .writer import _dump, measured_section, write_measured

DATA = "data/h200_measurements.json"
#: the fit reads the sampled fit sets (the first's ceilings; all their cases: seed 2026, then seed 2027, measured
#: after the frozen test draw, SDPA as users call it, and casts between precisions) and two thirds of the
#: hand-picked catalogue
FIT_DATA = ("data/h200_sample_fit_run2.json", "data/h200_sample_fit_seed2027.json", "data/h200_sdpa_fit_seed2027.json",
            "data/h200_cast_fit_seed2028.json", DATA)
SPEC = "hardware_specs/h200-sxm.yaml"
REPEAT = "data/h200_measurements_run2.json"
VALIDATION = "data/h200_sample_validation.json"
#: the random test draw measured after the current model was frozen (commit 2e97ee8)
FROZEN_TEST = "data/h200_sample_test_seed2032.json"
#: a spent test set (seed 2027, measured after commit 490446c froze the model of then); the frozen test of the
#: current model is seed 2032's (SAMPLED_SETS' first)
TEST = "data/h200_sample_test_seed2027.json"
#: the sampled report's sets, in order: (title, path)
SAMPLED_SETS = (
    ("Test, seed 2032 (frozen: measured after commit 2e97ee8 froze this model; in no fit and not in the bank)",
     "data/h200_sample_test_seed2032.json"),
    ("SDPA as users call it, seed 2032, test (frozen: measured after commit 2e97ee8, this model)",
     "data/h200_sdpa_test_seed2032.json"),
    ("Fit, seed 2026", "data/h200_sample_fit_run2.json"),
    ("Fit, seed 2027", "data/h200_sample_fit_seed2027.json"),
    ("Fit, seed 2030 (bank only)", "data/h200_sample_fit_seed2030.json"),
    ("Fit, seed 2030, convs and batched GEMMs only (bank only)", "data/h200_sample_fit_conv_bmm_seed2030.json"),
    ("Validation, seed 2026", VALIDATION),
    ("Validation, seed 2027", "data/h200_sample_validation_seed2027.json"),
    ("Validation, seed 2030", "data/h200_sample_validation_seed2030.json"),
    ("Test, seed 2028 (spent: the result of commit 98403b1 is data/h200_test_seed2028_frozen.md; in the bank since)",
     "data/h200_sample_test_seed2028.json"),
    ("Test, seed 2027 (spent: data/h200_test_seed2027_frozen.md; in the bank since)", TEST),
    ("Earlier test, seed 2026 (spent: measured after the previous model, seen since)", "data/h200_sample_test.json"),
    ("SDPA as users call it (no backend forced; modelled as impl='sdpa'), seed 2027, fit", "data/h200_sdpa_fit_seed2027.json"),
    ("SDPA as users call it, seed 2027, validation", "data/h200_sdpa_validation_seed2027.json"),
    ("SDPA as users call it, seed 2027, test (spent: measured after 5185ace, an earlier model)",
     "data/h200_sdpa_test_seed2027.json"),
    ("Casts between precisions (dst.copy_(src)), seed 2028, fit", "data/h200_cast_fit_seed2028.json"),
    ("Casts between precisions, seed 2028, validation", "data/h200_cast_validation_seed2028.json"),
    ("Casts between precisions, seed 2028, test (spent: measured after 98403b1)", "data/h200_cast_test_seed2028.json"),
)
SAMPLE_REPEAT = "data/h200_sample_fit.json"
SAMPLED_REPORT = "data/h200_sample_report.md"
REPORT = "data/h200_validation.md"
PROGRAMS_REPORT = "data/h200_programs.md"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m solkit.calibration", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fit", help="fit the predictor's parameters; print (and with --write, store) the measured: section")
    p.add_argument("--data", nargs="+", default=list(FIT_DATA), help="measurement files; the first gives the ceilings")
    p.add_argument("--spec", default=SPEC)
    p.add_argument("--write", action="store_true", help="replace the spec's measured: section and its neighbour bank")
    p.add_argument("--bank", nargs="+", default=list(BANK_DATA), help="measurement files of the neighbour bank")
    p = sub.add_parser("cv", help="k-fold cross-validation of the fit beside simpler baselines (a Markdown table)")
    p.add_argument("--data", nargs=2, default=[FIT_DATA[0], DATA], metavar=("SAMPLED", "CATALOGUE"))
    p.add_argument("--validation", default=VALIDATION)
    p.add_argument("--spec", default=SPEC)
    p = sub.add_parser("sampled", help="write the report on the randomly sampled sets (fit, validation, test)")
    p.add_argument("--sets", nargs="+", default=[f"{title}={path}" for title, path in SAMPLED_SETS],
                   metavar="TITLE=PATH", help="the sets to report, in order")
    p.add_argument("--repeat", default=SAMPLE_REPEAT, help="an earlier run of sampled cases, for the run-to-run spread")
    p.add_argument("--cv", default="", help="a file holding the cross-validation table (the output of the cv command)")
    p.add_argument("--spec", default=SPEC)
    p.add_argument("--out", default=SAMPLED_REPORT)
    p = sub.add_parser("programs", help="write the whole-program report (data/h200_programs.md)")
    p.add_argument("--spec", default=SPEC)
    p.add_argument("--out", default=PROGRAMS_REPORT)
    p = sub.add_parser("collectives", help="write the NCCL collectives report (data/h200x2_collectives.md)")
    p.add_argument("--spec", default=SPEC)
    p.add_argument("--out", default="data/h200x2_collectives.md")
    p = sub.add_parser("report", help="write the validation report")
    p.add_argument("--data", default=DATA)
    p.add_argument("--spec", default=SPEC)
    p.add_argument("--repeat", default=REPEAT, help="a second run of the same cases ('' for none)")
    p.add_argument("--frozen", default=FROZEN_TEST, help="the frozen random test draw ('' for none)")
    p.add_argument("--out", default=REPORT)
    args = parser.parse_args(argv)
    gpu = load_spec_file(args.spec)
    if args.command == "fit":
        msets = [load_measurements(path) for path in args.data]
        result = fit(msets, gpu)
        section = measured_section(msets[0], result, " + ".join(args.data), bank_file(gpu.name))
        print(_dump(section), end="")
        if args.write:
            rows = [r for path in args.bank for r in bank_rows(load_measurements(path), gpu,
                                                                 round_calibration(result.calibration))]
            write_bank(Path(args.spec).parent / bank_file(gpu.name), bank_document(rows, gpu.name, args.bank))
            write_measured(args.spec, section)
            print(f"wrote {args.spec} and its neighbour bank {bank_file(gpu.name)} ({len(rows)} cases)")
        return 0
    if args.command == "cv":
        sample, catalogue = (load_measurements(path) for path in args.data)
        scores = cross_validate(sample, catalogue, load_measurements(args.validation), gpu,
                                gpu.measured.calibration(gpu.name) if gpu.measured else fit([sample, catalogue], gpu).calibration)
        print(format_scores(scores))
        return 0
    if args.command == "sampled":
        named = [item.rsplit("=", 1) for item in args.sets]
        sets = [(name, path, load_measurements(path)) for name, path in named]
        # the earlier run repeats the seed-2026 fit set (run 2)
        again = next((m for _, path, m in sets if Path(path).name == Path(FIT_DATA[0]).name), sets[0][2])
        earlier = (load_measurements(args.repeat), again) if args.repeat else None
        cv_table = Path(args.cv).read_text(encoding="utf-8").strip() if args.cv else ""
        named_rows = [(Path(path).name, bank_rows(load_measurements(path), gpu, calibration(gpu))) for path in BANK_DATA]
        text = sampled_report(sets, gpu, args.spec, cv_table, earlier, holdout_by_set(named_rows, gpu, calibration(gpu)))
        Path(args.out).write_text(text, encoding="utf-8")
        print(text)
        return 0
    if args.command == "collectives":
        from .collectives import (COMM_FIT_DATA, COMM_MISALIGNED_DATA, COMM_MULTI_FIT_DATA, COMM_SPENT_DATA, COMM_TEST_DATA,
                                  COMM_TEST_FROZEN, COMM_VALIDATION_DATA, collectives_report)
        from .programs import data_dir

        named = ([("fit", COMM_FIT_DATA), ("fit: chunks off 16-byte alignment (link_misaligned)", COMM_MISALIGNED_DATA),
                  ("validation", COMM_VALIDATION_DATA)] + [(f"frozen test ({COMM_TEST_FROZEN[t]})" if t in COMM_TEST_FROZEN else "frozen test", t)
                                                        for t in COMM_TEST_DATA]
                 + [("fit: 4 or 8 GPUs (link_hop)", t) for t in COMM_MULTI_FIT_DATA]
                 + [(f"spent test ({why})", t) for t, why in COMM_SPENT_DATA])
        present = [(title, path) for title, path in named if (data_dir() / path).exists()]
        if not present:
            print(f"no collectives measured yet (data/{COMM_FIT_DATA}): run benchmarks/comm/run_x2.sh on 2 GPUs")
            return 1
        from .parallel import parallel_report_lines

        text = collectives_report(present, gpu) + "\n" + "\n".join(parallel_report_lines(gpu)).rstrip() + "\n"
        Path(args.out).write_text(text, encoding="utf-8")
        print(text)
        return 0
    if args.command == "programs":
        from .programs import programs_report

        text = programs_report(gpu)
        Path(args.out).write_text(text, encoding="utf-8")
        print(text)
        return 0
    mset = load_measurements(args.data)
    repeat = load_measurements(args.repeat) if args.repeat else None
    frozen = (args.frozen, load_measurements(args.frozen)) if args.frozen else None
    text = validation_report(mset, gpu, args.data, args.spec, repeat, frozen)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    worst = max(r.sol_fraction for r in evaluate(mset, gpu))
    print(f"\nmax SOL fraction over all cases: {worst:.3f} (must be <= 1)")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
