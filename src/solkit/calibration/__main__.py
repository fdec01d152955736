"""``python -m solkit.calibration fit|cv|sampled|programs|report``: the calibration and its report from committed measurements.

    python -m solkit.calibration fit [--data data/h200_sample_fit_run2.json data/h200_sample_fit_seed2027.json
                                          data/h200_measurements.json] [--bank FILE ...] [--spec ...] [--write]
    python -m solkit.calibration cv [--data SAMPLED CATALOGUE] [--validation data/h200_sample_validation.json]
    python -m solkit.calibration sampled [--sets TITLE=PATH ...] [--cv FILE] [--out ...]
    python -m solkit.calibration programs [--out data/h200_programs.md]
    python -m solkit.calibration captured [--out data/h200_captured.md] [--counts]
    python -m solkit.calibration collectives [--out data/h200x2_collectives.md]
    python -m solkit.calibration report [--data ...] [--repeat data/h200_measurements_run2.json] [--out data/h200_validation.md]

A measurement file is a path, or a file of solkit's data folder by name (``NAME`` or ``data/NAME``: the copy
shipped in the package, a source checkout's ``data/``); ``data/manifest.yaml`` gives each file's role, and the
defaults below are read from it when a command runs. ``--spec`` is a spec file or a GPU name (default: the shipped
H200 spec, ``hardware_specs/h200-sxm.yaml``). Outputs default to a source checkout's ``data/`` (from an installed
wheel, name them with ``--out``); ``fit --write`` rewrites the spec, so from a wheel it needs ``--spec`` naming a copy.
A bad argument or file is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ..errors import OptionError, SolkitError
from ..hardware import load_gpu, load_spec_file, shipped_dir
from ..prediction import calibration
from .collectives import collectives_report, report_sets
from .crossval import cross_validate, format_scores
from .data import MeasurementSet, load_measurements
from .fitting import KEYED_FITS, fit
from .manifest import DataFile, data_path, manifest, source_checkout
from .metrics import evaluate
from .neighbours import (bank_document, bank_file, bank_files, bank_rows, holdout_by_set, switched_off, validation_files,
                         write_bank)
from .parallel import parallel_report_lines
from .programs import programs_report
from .report import sampled_report, validation_report
from .rounding import round_calibration
from .writer import measured_section, section_text, write_measured

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU


def _shown(name: str) -> str:
    """A data file as the commands name it: ``data/NAME`` (its place in a source checkout)."""
    return f"data/{name}"


def _title(e: DataFile) -> str:
    """A sampled set's heading in the sampled report: its role, family and what the manifest says of it."""
    role = {"test": "Test (frozen)", "spent": "Test (spent)", "bank": "Fit (bank only)"}.get(e.role, e.role.capitalize())
    said = "; ".join(([f"measured after commit {e.after}"] if e.after else []) + ([e.note] if e.note else []))
    return f"{role}, {e.family}, seed {e.seed}" + (f" ({said})" if said else "")


def fit_files() -> tuple[str, ...]:
    """The kernel fit's files (``data/NAME``), in the fit's order: the first gives the measured ceilings."""
    return tuple(_shown(name) for name in manifest().files(measures="kernels", fits="kernels"))


def keyed_files() -> tuple[tuple[str, str], ...]:
    """(``data/NAME``, key prefix) of the files the kernel fit's second stage reads for one kernel's keys alone."""
    return tuple((_shown(name), prefix) for prefix in KEYED_FITS
                 for name in manifest().files(measures="kernels", fits=prefix))


def _first_fit() -> DataFile:
    """The kernel fit's first file (the measured ceilings, the sampled report's run-to-run pair)."""
    return manifest().first(measures="kernels", fits="kernels")


def frozen_test() -> str:
    """The newest frozen test draw of the sampler's default mix on the fit's GPU (the validation report shows it first),
    '' if none."""
    newest = manifest().newest_test("kernels", "sampled", gpu=_first_fit().gpu)
    return _shown(newest.file) if newest is not None else ""


def sampled_sets() -> tuple[tuple[str, str], ...]:
    """The sampled report's sets, in order, (title, path): the frozen test draws first, then every other sampled set (of
    the fit's GPU: another GPU's draws are reported with its own spec, ``benchmarks/frozen_report.py --spec``)."""
    gpu = _first_fit().gpu
    kept = (e for e in manifest().select(measures="kernels", gpu=gpu)
            if e.family != "catalogue" and e.role in ("fit", "bank", "validation", "test", "spent"))
    return tuple((_title(e), _shown(e.file)) for e in sorted(kept, key=lambda e: e.role != "test"))


#: the data files by their old names, read from the manifest on use (``__getattr__``: importing this module reads
#: no data): the kernel fit's files; the hand-picked catalogue (its training two thirds are fitted, its held-out third
#: reported) and its second run; the validation set drawn with the first fit file (its seed and family); an earlier
#: run of the first fit file's cases (the sampled report's run-to-run spread); the newest frozen test draw; the
#: sampled report's sets
_FILES: dict[str, Callable[[], Any]] = {
    "FIT_DATA": fit_files,
    "DATA": lambda: _shown(manifest().first(role="fit", measures="kernels", family="catalogue").file),
    "REPEAT": lambda: _shown(manifest().first(role="repeat", measures="kernels", family="catalogue").file),
    "VALIDATION": lambda: _shown(manifest().first(role="validation", measures="kernels", family=_first_fit().family,
                                                  seed=_first_fit().seed).file),
    "SAMPLE_REPEAT": lambda: _shown(manifest().first(role="repeat", measures="kernels", family=_first_fit().family,
                                                     seed=_first_fit().seed).file),
    "FROZEN_TEST": frozen_test,
    "SAMPLED_SETS": sampled_sets,
}
FIT_DATA: tuple[str, ...]
DATA: str
REPEAT: str
VALIDATION: str
SAMPLE_REPEAT: str
FROZEN_TEST: str
SAMPLED_SETS: tuple[tuple[str, str], ...]

#: the shipped spec the commands read by default (``hardware_specs/`` in the package)
SPEC = "h200-sxm.yaml"
#: the reports' names in a source checkout's ``data/``
SAMPLED_REPORT = "h200_sample_report.md"
REPORT = "h200_validation.md"
PROGRAMS_REPORT = "h200_programs.md"
CAPTURED_REPORT = "h200_captured.md"
COLLECTIVES_REPORT = "h200x2_collectives.md"


def __getattr__(name: str) -> Any:
    """``FIT_DATA`` and the other files of ``_FILES``, read from the manifest when asked for."""
    if name in _FILES:
        return _FILES[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _load(path: str) -> MeasurementSet:
    """A measurement file by path or by its name in the data folder."""
    return load_measurements(data_path(path))


def _spec(value: Optional[str]) -> "GPU":
    """The spec ``--spec`` names (a spec file, or a GPU name as ``load_gpu`` takes it); default the shipped H200 spec."""
    return load_spec_file(shipped_dir() / SPEC) if value is None else load_gpu(value)


def _shipped(gpu: "GPU") -> bool:
    """The spec is one of the package's own files."""
    return Path(gpu.path).resolve().parent == shipped_dir().resolve()


def _spec_shown(gpu: "GPU", value: Optional[str]) -> str:
    """The spec as the reports name it: ``hardware_specs/NAME`` for a shipped one, else as given."""
    return f"hardware_specs/{Path(gpu.path).name}" if _shipped(gpu) else (value or gpu.path)


def _out(value: Optional[str], name: str) -> Path:
    """Where a command writes: ``--out``, else ``name`` in a source checkout's ``data/`` (an installed wheel has none)."""
    if value:
        return Path(value)
    root = source_checkout()
    if root is None:
        raise OptionError(f"--out: solkit is not running from a source checkout, so there is no data/ folder to write "
                          f"{name} into; name the output file with --out")
    return root / "data" / name


#: the options whose default is read from the manifest when the command runs (``--help`` reads no data)
_DEFAULTS: dict[tuple[str, str], Callable[[], Any]] = {
    ("fit", "data"): lambda: list(fit_files()),
    ("fit", "bank"): lambda: list(bank_files()),
    ("cv", "data"): lambda: [_shown(_first_fit().file), _FILES["DATA"]()],
    ("cv", "validation"): _FILES["VALIDATION"],
    ("sampled", "sets"): lambda: [f"{title}={path}" for title, path in sampled_sets()],
    ("sampled", "repeat"): _FILES["SAMPLE_REPEAT"],
    ("report", "data"): _FILES["DATA"],
    ("report", "repeat"): _FILES["REPEAT"],
    ("report", "frozen"): frozen_test,
}


def _parser() -> argparse.ArgumentParser:
    """The commands and their options (defaults that name data files are filled in by ``_run``, from the manifest)."""
    parser = argparse.ArgumentParser(prog="python -m solkit.calibration", description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    spec = "a spec file or a GPU name (default: the shipped hardware_specs/h200-sxm.yaml)"
    out = "the file to write (default: data/%s of a source checkout; required from an installed wheel)"
    p = sub.add_parser("fit", help="fit the predictor's parameters; print (and with --write, store) the measured: section")
    p.add_argument("--data", nargs="+", help="measurement files; the first gives the ceilings (default: the manifest's "
                                             "kernel fit files)")
    p.add_argument("--spec", help=spec)
    p.add_argument("--write", action="store_true", help="replace the spec's measured: section and its neighbour bank")
    p.add_argument("--bank", nargs="+", help="measurement files of the neighbour bank (default: the manifest's bank: true)")
    p.add_argument("--keyed", nargs="*", metavar="PREFIX=PATH",
                   help="files fitted in a second stage on the keys that start with PREFIX alone (default: the "
                        "manifest's fits: [" + ", ".join(KEYED_FITS) + "], none where --data is given)")
    p = sub.add_parser("cv", help="k-fold cross-validation of the fit beside simpler baselines (a Markdown table)")
    p.add_argument("--data", nargs=2, metavar=("SAMPLED", "CATALOGUE"),
                   help="default: the first kernel fit file and the catalogue")
    p.add_argument("--validation", help="default: the validation draw of the first kernel fit file's seed")
    p.add_argument("--spec", help=spec)
    p = sub.add_parser("sampled", help="write the report on the randomly sampled sets (fit, validation, test)")
    p.add_argument("--sets", nargs="+", metavar="TITLE=PATH",
                   help="the sets to report, in order (default: every sampled kernel file, the frozen tests first)")
    p.add_argument("--repeat", help="an earlier run of sampled cases, for the run-to-run spread ('' for none)")
    p.add_argument("--cv", default="", help="a file holding the cross-validation table (the output of the cv command)")
    p.add_argument("--spec", help=spec)
    p.add_argument("--out", help=out % SAMPLED_REPORT)
    p = sub.add_parser("programs", help=f"write the whole-program report (data/{PROGRAMS_REPORT})")
    p.add_argument("--spec", help=spec)
    p.add_argument("--out", help=out % PROGRAMS_REPORT)
    p = sub.add_parser("captured", help=f"write the captured programs' report (data/{CAPTURED_REPORT}; needs torch and "
                                        "transformers)")
    p.add_argument("--spec", help=spec)
    p.add_argument("--out", help=out % CAPTURED_REPORT)
    p.add_argument("--counts", action="store_true", help="write instead the host counts of the captured-steps files' "
                   "programs, every one but the frozen tests (data/h200_captured_host_counts.json), which the host fit "
                   "reads")
    p = sub.add_parser("collectives", help=f"write the NCCL collectives report (data/{COLLECTIVES_REPORT})")
    p.add_argument("--spec", help=spec)
    p.add_argument("--out", help=out % COLLECTIVES_REPORT)
    p = sub.add_parser("report", help=f"write the validation report (data/{REPORT})")
    p.add_argument("--data", help="the catalogue (default: the manifest's)")
    p.add_argument("--spec", help=spec)
    p.add_argument("--repeat", help="a second run of the same cases ('' for none; default: the catalogue's repeat)")
    p.add_argument("--frozen", help="the frozen random test draw ('' for none; default: the newest one)")
    p.add_argument("--out", help=out % REPORT)
    return parser


def _publish(out: Path, text: str) -> int:
    """Write a report to ``out`` and print it; 0."""
    out.write_text(text, encoding="utf-8")
    print(text)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point: 0 done, 1 a bound broken or nothing measured yet, 2 bad input (one line on stderr), never a traceback."""
    try:
        return _run(_parser().parse_args(argv))
    except SolkitError as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"python -m solkit.calibration: error: {message}", file=sys.stderr)
        return 2


def _keyed(item: str) -> tuple[str, str]:
    """(prefix, path) of a ``--keyed`` PREFIX=PATH."""
    prefix, sep, path = item.partition("=")
    if not sep or prefix not in KEYED_FITS or not path:
        raise OptionError(f"--keyed: expected PREFIX=PATH with PREFIX one of {', '.join(KEYED_FITS)}, got {item!r}")
    return prefix, path


def _run(args: argparse.Namespace) -> int:
    """Run one parsed command."""
    if args.command == "fit" and args.keyed is None:  # the manifest's, unless --data names the files to fit
        args.keyed = [f"{prefix}={path}" for path, prefix in keyed_files()] if args.data is None else []
    for (command, dest), default in _DEFAULTS.items():
        if args.command == command and getattr(args, dest) is None:
            setattr(args, dest, default())
    gpu = _spec(args.spec)
    spec = _spec_shown(gpu, args.spec)
    if args.command == "fit":
        if args.write and _shipped(gpu) and source_checkout() is None:
            raise OptionError(f"--write: {gpu.path} is the installed package's own spec; copy it and name the copy with "
                              "--spec")
        msets = [_load(path) for path in args.data]
        keyed = [_keyed(item) for item in args.keyed]
        result = fit(msets, gpu, keyed=[(_load(path), prefix) for prefix, path in keyed])
        stages = {prefix: [path for p, path in keyed if p == prefix] for prefix, _ in keyed}
        raw = " + ".join(args.data) + "".join(f"; {prefix} keys alone (the fit's second stage): {' + '.join(paths)}"
                                               for prefix, paths in stages.items())
        section = measured_section(msets[0], result, raw, bank_file(gpu.name))
        print(section_text(section), end="")
        if args.write:
            physical = round_calibration(result.calibration)
            banked = [(path, bank_rows(_load(path), gpu, physical)) for path in args.bank]
            rows = [r for _, part in banked for r in part]
            off = switched_off(banked, validation_files(), gpu, physical)
            write_bank(Path(gpu.path).parent / bank_file(gpu.name), bank_document(rows, gpu.name, args.bank, off))
            write_measured(gpu.path, section)
            print(f"wrote {spec} and its neighbour bank {bank_file(gpu.name)} ({len(rows)} cases)")
        return 0
    if args.command == "cv":
        sample, catalogue = (_load(path) for path in args.data)
        scores = cross_validate(sample, catalogue, _load(args.validation), gpu,
                                gpu.measured.calibration(gpu.name) if gpu.measured else fit([sample, catalogue], gpu).calibration)
        print(format_scores(scores))
        return 0
    if args.command == "sampled":
        out = _out(args.out, SAMPLED_REPORT)
        named = [item.rsplit("=", 1) for item in args.sets]
        sets = [(name, path, _load(path)) for name, path in named]
        # the earlier run repeats the first fit file's cases
        again = next((m for _, path, m in sets if Path(path).name == _first_fit().file), sets[0][2])
        earlier = (_load(args.repeat), again) if args.repeat else None
        cv_table = Path(args.cv).read_text(encoding="utf-8").strip() if args.cv else ""
        named_rows = [(Path(path).name, bank_rows(_load(path), gpu, calibration(gpu))) for path in bank_files()]
        text = sampled_report(sets, gpu, spec, cv_table, earlier, holdout_by_set(named_rows, gpu, calibration(gpu)))
        return _publish(out, text)
    if args.command == "collectives":
        out = _out(args.out, COLLECTIVES_REPORT)
        named = report_sets()
        present = [(title, path) for title, path in named if data_path(path).exists()]
        if not present:
            print(f"no collectives measured yet (data/{named[0][1]}): run benchmarks/comm/run_x2.sh on 2 GPUs")
            return 1
        text = collectives_report(present, gpu) + "\n" + "\n".join(parallel_report_lines(gpu)).rstrip() + "\n"
        return _publish(out, text)
    if args.command == "captured":
        from .captured import captured_report, counted_files, host_counts
        from .captured_host import COUNTS_FILE

        if args.counts:
            counts = host_counts(counted_files())
            return _publish(_out(args.out, COUNTS_FILE), json.dumps(counts.model_dump(), indent=1) + "\n")
        out = _out(args.out, CAPTURED_REPORT)
        text = captured_report(gpu)
        return _publish(out, text)
    if args.command == "programs":
        out = _out(args.out, PROGRAMS_REPORT)
        text = programs_report(gpu)
        return _publish(out, text)
    out = _out(args.out, REPORT)
    mset = _load(args.data)
    repeat = _load(args.repeat) if args.repeat else None
    frozen = (args.frozen, _load(args.frozen)) if args.frozen else None
    text = validation_report(mset, gpu, args.data, spec, repeat, frozen)
    _publish(out, text)
    worst = max(r.sol_fraction for r in evaluate(mset, gpu))
    print(f"\nmax SOL fraction over all cases: {worst:.3f} (must be <= 1)")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
