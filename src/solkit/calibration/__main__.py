"""``python -m solkit.calibration fit|cv|sampled|programs|report``: the calibration and its report from committed measurements.

    python -m solkit.calibration fit [--data data/h200_sample_fit_run2.json data/h200_sample_fit_seed2027.json
                                          data/h200_measurements.json] [--bank FILE ...] [--spec ...] [--write]
    python -m solkit.calibration cv [--data SAMPLED CATALOGUE] [--validation data/h200_sample_validation.json]
    python -m solkit.calibration sampled [--sets TITLE=PATH ...] [--cv FILE] [--out ...]
    python -m solkit.calibration programs [--out data/h200_programs.md]
    python -m solkit.calibration collectives [--out data/h200x2_collectives.md]
    python -m solkit.calibration report [--data ...] [--repeat data/h200_measurements_run2.json] [--out data/h200_validation.md]

A measurement file is a path, or a file of solkit's data folder by name (``NAME`` or ``data/NAME``: the copy
shipped in the package, a source checkout's ``data/``); ``data/manifest.yaml`` gives each file's role, and the
defaults below are read from it. Outputs (``--out``, the spec with ``--write``) are paths from the current folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..hardware import load_spec_file
from ..prediction import calibration
from .collectives import (COMM_FIT_DATA, COMM_MISALIGNED_DATA, COMM_MULTI_FIT_DATA, COMM_SPENT_DATA, COMM_TEST_DATA,
                          COMM_TEST_FROZEN, COMM_VALIDATION_DATA, collectives_report)
from .crossval import cross_validate, format_scores
from .data import MeasurementSet, load_measurements
from .fitting import fit
from .manifest import DataFile, data_path, manifest
from .metrics import evaluate
from .neighbours import BANK_DATA, bank_document, bank_file, bank_rows, holdout_by_set, write_bank
from .parallel import parallel_report_lines
from .programs import programs_report
from .report import sampled_report, validation_report
from .rounding import round_calibration
from .writer import measured_section, section_text, write_measured


def _shown(name: str) -> str:
    """A data file as the commands name it: ``data/NAME`` (its place in a source checkout)."""
    return f"data/{name}"


def _title(e: DataFile) -> str:
    """A sampled set's heading in the sampled report: its role, family and what the manifest says of it."""
    role = {"test": "Test (frozen)", "spent": "Test (spent)", "bank": "Fit (bank only)"}.get(e.role, e.role.capitalize())
    said = "; ".join(([f"measured after commit {e.after}"] if e.after else []) + ([e.note] if e.note else []))
    return f"{role}, {e.family}, seed {e.seed}" + (f" ({said})" if said else "")


_KERNELS = manifest().select(measures="kernels")
#: the kernel fit's files, in the fit's order (the first gives the measured ceilings)
FIT_DATA = tuple(_shown(e.file) for e in _KERNELS if "kernels" in e.fits)
#: the hand-picked catalogue (its training two thirds are fitted, its held-out third reported) and its second run
DATA = _shown(manifest().files(role="fit", measures="kernels", family="catalogue")[0])
REPEAT = _shown(manifest().files(role="repeat", measures="kernels", family="catalogue")[0])
_FIRST = manifest().entry(FIT_DATA[0])
#: the validation set drawn with the first fit file (its seed and family)
VALIDATION = _shown(manifest().files(role="validation", measures="kernels", family=_FIRST.family, seed=_FIRST.seed)[0])
#: an earlier run of the first fit file's cases (the sampled report's run-to-run spread)
SAMPLE_REPEAT = _shown(manifest().files(role="repeat", measures="kernels", family=_FIRST.family, seed=_FIRST.seed)[0])
#: the newest frozen test draw of the sampler's default mix (the validation report shows it first)
_FROZEN = manifest().newest_test("kernels", "sampled")
FROZEN_TEST = _shown(_FROZEN.file) if _FROZEN is not None else ""
#: the sampled report's sets, in order: (title, path): the frozen test draws first, then every other sampled set
SAMPLED_SETS = tuple((_title(e), _shown(e.file)) for e in
                     sorted((e for e in _KERNELS if e.family != "catalogue" and e.role in ("fit", "bank", "validation", "test",
                                                                                          "spent")),
                            key=lambda e: e.role != "test"))
SPEC = "hardware_specs/h200-sxm.yaml"
SAMPLED_REPORT = "data/h200_sample_report.md"
REPORT = "data/h200_validation.md"
PROGRAMS_REPORT = "data/h200_programs.md"


def _load(path: str) -> MeasurementSet:
    """A measurement file by path or by its name in the data folder."""
    return load_measurements(data_path(path))


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
        msets = [_load(path) for path in args.data]
        result = fit(msets, gpu)
        section = measured_section(msets[0], result, " + ".join(args.data), bank_file(gpu.name))
        print(section_text(section), end="")
        if args.write:
            rows = [r for path in args.bank for r in bank_rows(_load(path), gpu,
                                                                 round_calibration(result.calibration))]
            write_bank(Path(args.spec).parent / bank_file(gpu.name), bank_document(rows, gpu.name, args.bank))
            write_measured(args.spec, section)
            print(f"wrote {args.spec} and its neighbour bank {bank_file(gpu.name)} ({len(rows)} cases)")
        return 0
    if args.command == "cv":
        sample, catalogue = (_load(path) for path in args.data)
        scores = cross_validate(sample, catalogue, _load(args.validation), gpu,
                                gpu.measured.calibration(gpu.name) if gpu.measured else fit([sample, catalogue], gpu).calibration)
        print(format_scores(scores))
        return 0
    if args.command == "sampled":
        named = [item.rsplit("=", 1) for item in args.sets]
        sets = [(name, path, _load(path)) for name, path in named]
        # the earlier run repeats the seed-2026 fit set (run 2)
        again = next((m for _, path, m in sets if Path(path).name == Path(FIT_DATA[0]).name), sets[0][2])
        earlier = (_load(args.repeat), again) if args.repeat else None
        cv_table = Path(args.cv).read_text(encoding="utf-8").strip() if args.cv else ""
        named_rows = [(Path(path).name, bank_rows(_load(path), gpu, calibration(gpu))) for path in BANK_DATA]
        text = sampled_report(sets, gpu, args.spec, cv_table, earlier, holdout_by_set(named_rows, gpu, calibration(gpu)))
        Path(args.out).write_text(text, encoding="utf-8")
        print(text)
        return 0
    if args.command == "collectives":

        named = ([("fit", COMM_FIT_DATA), ("fit: chunks off 16-byte alignment (link_misaligned)", COMM_MISALIGNED_DATA),
                  ("validation", COMM_VALIDATION_DATA)] + [(f"frozen test ({COMM_TEST_FROZEN[t]})" if t in COMM_TEST_FROZEN else "frozen test", t)
                                                        for t in COMM_TEST_DATA]
                 + [("fit: 4 or 8 GPUs (link_hop)", t) for t in COMM_MULTI_FIT_DATA]
                 + [(f"spent test ({why})", t) for t, why in COMM_SPENT_DATA])
        present = [(title, path) for title, path in named if data_path(path).exists()]
        if not present:
            print(f"no collectives measured yet (data/{COMM_FIT_DATA}): run benchmarks/comm/run_x2.sh on 2 GPUs")
            return 1
        text = collectives_report(present, gpu) + "\n" + "\n".join(parallel_report_lines(gpu)).rstrip() + "\n"
        Path(args.out).write_text(text, encoding="utf-8")
        print(text)
        return 0
    if args.command == "programs":
        text = programs_report(gpu)
        Path(args.out).write_text(text, encoding="utf-8")
        print(text)
        return 0
    mset = _load(args.data)
    repeat = _load(args.repeat) if args.repeat else None
    frozen = (args.frozen, _load(args.frozen)) if args.frozen else None
    text = validation_report(mset, gpu, args.data, args.spec, repeat, frozen)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    worst = max(r.sol_fraction for r in evaluate(mset, gpu))
    print(f"\nmax SOL fraction over all cases: {worst:.3f} (must be <= 1)")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
