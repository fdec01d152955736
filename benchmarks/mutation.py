"""Test strength, measured: a mutation run (mutmut) over the counting code, the registry, the roofline and the predictor.

    python benchmarks/mutation.py [--jobs 2] [--out data/mutation.json] [--group collectives] [--sample N --seed S]

It copies the working tree to a temporary folder, runs ``mutmut run`` there (every mutant of the
mutated files is run against the tests that cover it; the first failing test kills it), and prints
the score per group: killed / (killed + survived + no test). Lines marked ``# pragma: no mutate``
are fast paths whose mutants are equivalent (they pick between two paths that give the same
result; the vectorized-equals-scalar property tests check both). The summary, with every surviving
mutant's name, is written to ``--out``. Needs ``pip install mutmut`` (3.x); a benchmark-style
script, not a CI test: it takes minutes. ``--sample N`` runs N mutants drawn at random (``--seed``) from each group
instead of all of them (a 2-core machine runs a full pass in hours): the score is then an estimate, printed with its
95% Wilson interval.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: mutmut's own output shown (``--verbose``), else hidden
VERBOSE = "--verbose" in sys.argv

#: the mutated files, by group: the counting code (operators' formulas and the workload's figures), the registry, the
#: roofline and the predictor
GROUPS = {
    "counting (ops formulas, Kernel and Workload figures)": ("src/solkit/ops/", "src/solkit/kernel.py",
                                                             "src/solkit/workload.py"),
    "registry (registration, parameters, validation)": ("src/solkit/ops/registry.py",),
    # moved into ops/ from profile/ in 0.3 (scored apart, so that counting's score compares with the runs before)
    "ATen adapters (ops.aten: the arguments profiles and capture read)": ("src/solkit/ops/aten.py",),
    "roofline (solkit.sol)": ("src/solkit/sol.py",),
    # the modules that were prediction.py (the neighbour lookup and the timeline were their own files, and no group)
    "predictor (solkit.prediction)": tuple(f"src/solkit/prediction/{name}.py" for name in (
        "expected", "result", "gpu", "tiles", "kernel", "collectives", "host")),
    "collectives (solkit.comm)": ("src/solkit/comm.py",),
    "eager programs (models.program, training, resnet: the kernels and autograd launches of whole steps)": (
        "src/solkit/models/program.py", "src/solkit/models/training.py", "src/solkit/models/resnet.py"),
}
#: functions that only format output (reprs, HTML, dicts, frames): reported apart, not part of any score
DISPLAY = re.compile(r"(__repr__|_repr_html_|to_dict|to_frame|describe)$")
TESTS = ("tests/test_ops.py", "tests/test_ops_program.py", "tests/test_registry.py", "tests/test_training.py", "tests/test_roofline.py",
         "tests/test_workload.py", "tests/test_api.py",
         "tests/test_flop_counter.py", "tests/test_models.py", "tests/test_fusion.py", "tests/test_reliability.py",
         "tests/test_predict.py", "tests/test_predict_rows.py", "tests/test_calibration.py", "tests/test_display.py",
         "tests/test_comm.py", "tests/test_parallel.py", "tests/test_moe.py", "tests/test_autograd_launches.py",
         "tests/test_model_step.py", "tests/test_transformer.py", "tests/test_profile_aten.py", "tests/test_profile.py",
         "tests/test_capture.py")
#: tests left out of every mutant's run (a pytest -k expression; "" for none): the calibration's refits are back in since
#: the incremental descent made them take seconds (the refit ~5 s)
DESELECT = ""
#: (process isolation, groups) of each mutmut pass: the tests run in workers forked from one process that has
#: imported solkit, so code that runs only at import (an operator's registration) keeps its first behaviour: its
#: mutants are caught, if at all, by the tests that register operators themselves (tests/test_registry.py)
PASSES = (("fork", tuple(GROUPS)),)


def _module_of(name: str) -> str:
    """'solkit.ops.conv.x__col2im__mutmut_3' -> 'src/solkit/ops/conv.py'."""
    module = name.split(".x")[0] if ".x" in name else name.rsplit(".", 1)[0]
    return "src/" + module.replace(".", "/") + ".py"


def _function_of(name: str) -> str:
    return re.sub(r"__mutmut_\d+$", "", name.split(".x", 1)[-1]).replace("ǁ", ".").lstrip("._")


def _group(name: str) -> str:
    path = _module_of(name)
    if DISPLAY.search(_function_of(name)):
        return "display (reprs, HTML, dicts; no score)"
    for group, prefixes in reversed(list(GROUPS.items())):  # the registry before the rest of ops/
        if any(path == p or (p.endswith("/") and path.startswith(p)) for p in prefixes):
            return group
    return "other"


def run(jobs: int, keep: str = "", reuse: dict[str, str] | None = None, only: tuple[str, ...] = (),
        sample: int = 0, seed: int = 0) -> dict[str, str]:
    """{mutant: status} from mutmut runs on a copy of the working tree (the passes of PASSES).

    ``reuse``: isolation -> a folder where that pass already ran (kept with ``--keep``): its
    results are read there instead of running it again.
    """
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    results: dict[str, str] = {}
    for isolation, groups in PASSES:
        if reuse and isolation in reuse:
            results.update(_results(Path(reuse[isolation])))
            continue
        chosen = tuple(g for g in groups if not only or any(g.startswith(o) for o in only))
        with tempfile.TemporaryDirectory(prefix="solkit-mutation-") as tmp:
            work = Path(keep) / isolation if keep else Path(tmp)
            results.update(_run_pass(files, work, jobs, isolation, chosen, sample, seed))
    return results


def _results(work: Path) -> dict[str, str]:
    """{mutant: status} of the mutmut run in ``work``."""
    out = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=work, capture_output=True,
                         text=True, check=True).stdout
    results = {}
    for line in out.splitlines():
        if ":" in line:
            name, status = line.strip().rsplit(":", 1)
            results[name.strip()] = status.strip()
    return results


def _run_pass(files: list[str], work: Path, jobs: int, isolation: str, groups: tuple[str, ...], sample: int = 0,
              seed: int = 0) -> dict[str, str]:
    """One mutmut run over ``groups``' files, with the given process isolation; {mutant: status} (of ``sample``
    mutants drawn from each group, when given)."""
    if work.exists():
        shutil.rmtree(work)
    for f in files:
        src = ROOT / f
        if src.is_file() or src.is_symlink():
            (work / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, work / f, follow_symlinks=False)
    only = "\n    ".join(p + ("*.py" if p.endswith("/") else "") for g in groups for p in GROUPS[g])
    skip = "\n    ".join(p for g in GROUPS if g not in groups for p in GROUPS[g] if not p.endswith("/")) or "nothing.py"
    tests = "\n    ".join(TESTS)
    select = f"\n    -k\n    {DESELECT}" if DESELECT else ""
    (work / "setup.cfg").write_text(f"""[mutmut]
source_paths=src
process_isolation={isolation}
forkserver_warmup=none
only_mutate=
    {only}
do_not_mutate=
    {skip}
also_copy=
    hardware_specs
    data
    benchmarks
    src/solkit/hardware_specs
    src/solkit/data
pytest_add_cli_args_test_selection=
    {tests}
pytest_add_cli_args=
    -p
    no:cacheprovider
    -n
    0
    -q
    -x{select}
""")
    names: list[str] = []
    if sample:
        # a filter that matches nothing: mutmut generates every mutant and its tests' coverage, then stops
        subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), "no-such-mutant"], cwd=work,
                       stdout=None if VERBOSE else subprocess.DEVNULL, stderr=None if VERBOSE else subprocess.DEVNULL,
                       check=False)
        names = _sampled(sorted(_results(work)), sample, seed)
    subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *names], cwd=work,
                   stdout=None if VERBOSE else subprocess.DEVNULL, check=False)
    results = _results(work)
    return {n: results[n] for n in names} if sample else results


def _sampled(names: list[str], per_group: int, seed: int) -> list[str]:
    """``per_group`` mutants drawn at random (``seed``) from each scored group's mutants (display functions left out)."""
    rng = random.Random(seed)
    by_group: dict[str, list[str]] = {}
    for name in names:
        by_group.setdefault(_group(name), []).append(name)
    drawn = []
    for group, members in sorted(by_group.items()):
        if not group.startswith("display"):
            drawn += rng.sample(members, min(per_group, len(members)))
    return sorted(drawn)


def wilson(killed: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a kill share ``killed / n`` (n > 0)."""
    z, p = 1.96, killed / n
    centre, half = (p + z * z / (2 * n)), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def summarize(results: dict[str, str]) -> dict[str, dict[str, object]]:
    """Per group: counts by status, the score, and the survivors."""
    groups: dict[str, dict[str, object]] = {}
    for name, status in sorted(results.items()):
        g = groups.setdefault(_group(name), {"killed": 0, "survived": 0, "no tests": 0, "other": 0, "survivors": []})
        key = status if status in ("killed", "survived", "no tests") else "other"
        g[key] = int(g[key]) + 1  # type: ignore[call-overload]
        if status in ("survived", "no tests"):
            g["survivors"].append(name)  # type: ignore[union-attr]
    for g in groups.values():
        scored = int(g["killed"]) + int(g["survived"]) + int(g["no tests"])  # type: ignore[call-overload]
        g["score"] = round(int(g["killed"]) / scored, 4) if scored else None  # type: ignore[call-overload]
    return groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="show mutmut's own output")
    parser.add_argument("--out", default=str(ROOT / "data" / "mutation.json"))
    parser.add_argument("--keep", default="", help="run in this folder and keep it (to read survivors with mutmut show)")
    parser.add_argument("--reuse", action="append", default=[], metavar="ISOLATION=DIR",
                        help="take a pass's results from a kept folder instead of running it (fork=... or forkserver=...)")
    parser.add_argument("--sample", type=int, default=0, metavar="N", help="run N random mutants of each group, not all")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--group", action="append", default=[], metavar="NAME",
                        help="mutate only the groups whose name starts with NAME (repeatable; e.g. collectives)")
    args = parser.parse_args()
    import mutmut  # noqa: F401 - fail early, with the install hint, if it is missing

    started = datetime.datetime.now(datetime.timezone.utc)
    reuse = dict(item.split("=", 1) for item in args.reuse)
    groups = summarize(run(args.jobs, args.keep, reuse, tuple(args.group), args.sample, args.seed))
    print(f"{'group':<56} {'mutants':>8} {'killed':>7} {'survived':>9} {'no test':>8} {'score':>7}"
          + ("  95% interval" if args.sample else ""))
    for name, g in groups.items():
        total = sum(int(g[k]) for k in ("killed", "survived", "no tests", "other"))  # type: ignore[call-overload]
        score = "-" if g["score"] is None or name.startswith("display") else f"{g['score']:.1%}"
        scored = int(g["killed"]) + int(g["survived"]) + int(g["no tests"])  # type: ignore[call-overload]
        interval = ""
        if args.sample and scored and not name.startswith("display"):
            low, high = wilson(int(g["killed"]), scored)  # type: ignore[call-overload]
            g["interval"] = [round(low, 4), round(high, 4)]
            interval = f"  {low:.1%}-{high:.1%}"
        print(f"{name:<56} {total:>8} {g['killed']:>7} {g['survived']:>9} {g['no tests']:>8} {score:>7}{interval}")
    Path(args.out).write_text(json.dumps({
        "date_utc": started.isoformat(timespec="seconds"),
        "tool": f"mutmut {__import__('mutmut').__version__}",
        "tests": list(TESTS), "deselected": DESELECT, "sample": {"per_group": args.sample, "seed": args.seed} if args.sample
        else None, "groups": groups,
    }, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
