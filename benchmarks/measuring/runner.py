"""The runner: command line, budget, phases (ceilings, cases, census), meta, the JSON after every case, signals."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import hashlib
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from . import builders, ceilings, timing
from .builders import BUILDERS, Prepared, spot_check
from .cases import FAMILIES, ROUGH_EFF, Case, all_cases, estimate_seconds, quick_subset, rough_cost, run_order
from .ceilings import Ceilings, warm_gpu
from .output import short_error, write_outputs
from .sampling import DEFAULT_N, DEFAULT_SEED, SETS, sample_set
from .timing import METHOD, Bencher, kernel_census

# the budget counts from here (the entry point imports this module first), torch import included
_T0 = time.monotonic()

SCRIPT_VERSION = "1.0"

torch: Any = None  # set by load_torch()

#: the entry point and this package: the files whose bytes meta.script_sha256 hashes
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
SCRIPT_DIR = os.path.dirname(PACKAGE_DIR)
ENTRY_POINT = "measure_h200.py"


def load_torch() -> None:
    """Import torch (and torch.nn.functional) into the globals of every module that uses them."""
    global torch
    import torch as _torch
    import torch.nn.functional as _F

    torch = _torch
    builders.torch, builders.F = _torch, _F
    timing.torch = _torch
    ceilings.torch = _torch


def script_sha256() -> str:
    """sha256 of the code that ran: measure_h200.py and every measuring/*.py, concatenated in sorted path order.

    Paths are taken relative to benchmarks/ and sorted by code point, so the entry point comes first; the
    same digest is ``cd benchmarks && cat $(printf '%s\\n' measure_h200.py measuring/*.py | LC_ALL=C sort) |
    sha256sum``.
    """
    paths = [ENTRY_POINT] + [f"measuring/{name}" for name in os.listdir(PACKAGE_DIR) if name.endswith(".py")]
    digest = hashlib.sha256()
    for rel in sorted(paths):
        with open(os.path.join(SCRIPT_DIR, rel), "rb") as fh:
            digest.update(fh.read())
    return digest.hexdigest()


def nvidia_smi(fields: str) -> str | None:
    """One nvidia-smi --query-gpu line, or None if it is not there."""
    try:
        res = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return res.stdout.strip() or res.stderr.strip() or None
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable: {exc}"


def _read_flag(obj: Any, name: str) -> Any:
    """A torch.backends flag as a JSON value, or the error reading it raised."""
    try:
        value = getattr(obj, name)
        return value if isinstance(value, (bool, int, float, str)) or value is None else repr(value)
    except Exception as exc:  # noqa: BLE001
        return f"unreadable: {exc}"


class Runner:
    """Runs ceilings, cases and the census under the budget and writes the JSON after each step."""

    def __init__(self, args: argparse.Namespace, cases: list[Case]) -> None:
        self.args = args
        self.cases = cases
        self.deadline = _T0 + args.budget
        self.rows: list[dict[str, Any]] = []
        self.ceilings: dict[str, Any] = {}
        self.meta: dict[str, Any] = {}
        self.skipped: list[str] = []
        self.census_skipped: list[str] = []
        self.bencher = Bencher(args.warmup, args.rep)
        self.log_lines: list[str] = []
        self.fatal: str | None = None

    # -- output -------------------------------------------------------------------------------
    def log(self, line: str) -> None:
        """Print with flush and keep a copy for the .log file."""
        print(line, flush=True)
        self.log_lines.append(line)

    def elapsed(self) -> float:
        """Seconds since the process started."""
        return time.monotonic() - _T0

    def save(self) -> None:
        """Write the JSON (atomically) and the log next to it."""
        self.meta["elapsed_s"] = round(self.elapsed(), 2)
        self.meta["skipped"] = self.skipped
        self.meta["census_skipped"] = self.census_skipped
        self.meta["fatal"] = self.fatal
        doc = {"meta": self.meta, "ceilings": self.ceilings, "cases": self.rows}
        write_outputs(self.args.out, doc, self.log_lines)

    # -- meta ---------------------------------------------------------------------------------
    def collect_meta(self) -> None:
        """GPU, driver, software stack, method."""
        import numpy as np

        props = torch.cuda.get_device_properties(0)
        try:
            import triton

            triton_version = triton.__version__
        except Exception as exc:  # noqa: BLE001
            triton_version = f"unavailable: {exc}"
        self.meta = {
            "gpu_name": torch.cuda.get_device_name(0),
            "nvidia_smi": nvidia_smi("driver_version,name,clocks.max.sm,clocks.sm,clocks.mem"),
            "nvidia_smi_fields": "driver_version,name,clocks.max.sm,clocks.sm,clocks.mem",
            "torch_version": torch.__version__,
            "cuda_version": torch.version.cuda,
            "triton_version": triton_version,
            "cudnn_version": torch.backends.cudnn.version(),
            "numpy_version": np.__version__,
            "python_version": platform.python_version(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "hostname": socket.gethostname(),
            "sm_count": props.multi_processor_count,
            "l2_bytes": getattr(props, "L2_cache_size", None),
            "total_memory_bytes": props.total_memory,
            "compute_capability": f"{props.major}.{props.minor}",
            "method": METHOD.replace("WARMUP", str(self.args.warmup)).replace("REP", str(self.args.rep)),
            "script": "benchmarks/measure_h200.py",
            "script_version": SCRIPT_VERSION,
            "script_sha256": script_sha256(),
            "args": {k: v for k, v in vars(self.args).items() if k != "dry_run"},
            "flags": {
                "cudnn_benchmark": _read_flag(torch.backends.cudnn, "benchmark"),
                "matmul_allow_tf32_default": _read_flag(torch.backends.cuda.matmul, "allow_tf32"),
                "matmul_allow_bf16_reduced_precision_reduction":
                    _read_flag(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"),
                "matmul_allow_fp16_reduced_precision_reduction":
                    _read_flag(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"),
            },
            "cases_listed": len(self.cases),
        }
        self.log(f"# {self.meta['gpu_name']} | nvidia-smi: {self.meta['nvidia_smi']}")
        self.log(f"# torch {torch.__version__} cuda {torch.version.cuda} triton {triton_version} "
                 f"cudnn {self.meta['cudnn_version']} | {props.multi_processor_count} SMs, "
                 f"L2 {self.meta['l2_bytes']} B, {props.total_memory / 2**30:.1f} GiB")

    # -- ceilings -----------------------------------------------------------------------------
    def measure_ceilings(self) -> None:
        """Copy and read bandwidth, matmul rate per precision, launch floor (each step guarded)."""
        c = self.ceilings
        meter = Ceilings(self.bencher, c, self.log, self._recover)
        for name, step in meter.steps(self.args.quick):
            if time.monotonic() > self.deadline:
                c.setdefault("errors", {})[name] = "skipped: budget"
                continue
            try:
                step()
            except Exception as exc:  # noqa: BLE001
                c.setdefault("errors", {})[name] = short_error(exc)
                self.log(f"ceiling {name}: FAILED {short_error(exc)}")
                self._recover()
            self.save()

    # -- cases --------------------------------------------------------------------------------
    def _recover(self) -> None:
        """After a failure: free memory; a sticky CUDA error ends the run."""
        gc.collect()
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception as exc:  # noqa: BLE001
            self.fatal = f"CUDA context unusable after a failure: {short_error(exc)}"

    def run_case(self, c: Case) -> dict[str, Any]:
        """Build, check (if marked), time; every failure becomes the row's error."""
        row: dict[str, Any] = {
            "id": c.id, "family": c.family, "op": c.op, "params": dict(c.params), "impl_note": c.impl_note,
            "seconds": None, "q20": None, "q80": None, "ok": False, "error": None,
            "extra_kernels": c.extra_kernels, "tier": c.tier, "primary": c.primary,
            "n_reps": None, "rep_ms": None, "mean_s": None, "min_s": None, "check": None,
            "kernels": None, "n_kernels": None,
        }
        t_start = time.monotonic()
        prep: Prepared | None = None
        try:
            prep = BUILDERS[c.impl](c)
            if prep.note:
                row["impl_note"] = f"{c.impl_note}; {prep.note}"
            with prep.ctx():
                if c.check:
                    row["check"] = spot_check(prep)
                else:
                    prep.fn()
                    torch.cuda.synchronize()
                stats = self.bencher(prep.fn)
            row.update(stats)
            row["ok"] = True
            if row["check"] is not None and row["check"]["pass"] is False:
                row["ok"] = False
                row["error"] = f"spot check failed: rel_err={row['check']['rel_err']} > tol={row['check']['tol']}"
        except Exception as exc:  # noqa: BLE001 - OOM, unsupported shape, missing backend...
            row["error"] = short_error(exc)
            prep = None
            self._recover()
        finally:
            del prep
        row["wall_s"] = round(time.monotonic() - t_start, 3)
        return row

    def _progress(self, i: int, n: int, c: Case, row: dict[str, Any]) -> None:
        """One line per case: time, rough achieved rates, check."""
        head = f"[{i:3d}/{n}] {self.elapsed():6.1f}s {c.id[:86]:<86}"
        if row["seconds"] is None:
            self.log(f"{head} ERROR {row['error']}")
            return
        flops, byt, _ = rough_cost(c)
        t = row["seconds"]
        rates = f"~{flops / t / 1e12:7.1f} TF/s ~{byt / t / 1e12:5.2f} TB/s"
        chk = ""
        if row["check"] is not None:
            err = row["check"]["rel_err"]
            verdict = "PASS" if row["check"]["pass"] else "FAIL"
            chk = f" check {verdict} (rel err {'nan' if err is None else f'{err:.1e}'})"
        self.log(f"{head} {t * 1e6:11.2f} us {rates}{chk}" + ("" if row["ok"] else f" NOT OK: {row['error']}"))

    def run_cases(self) -> None:
        """Every selected case in run order, while the budget lasts."""
        ordered = run_order(self.cases)
        n = len(ordered)
        compiled_once = False
        for i, c in enumerate(ordered, 1):
            if self.fatal:
                self.skipped.append(c.id)
                continue
            est = estimate_seconds(c, self.args.warmup, self.args.rep, census=False)
            if c.compiles and not compiled_once:
                est += 20.0  # the first torch.compile imports and warms Inductor
            if c.compiles and self.args.no_compile:
                self.skipped.append(c.id)
                continue
            if time.monotonic() + est > self.deadline:
                self.skipped.append(c.id)
                continue
            row = self.run_case(c)
            compiled_once = compiled_once or c.compiles
            self.rows.append(row)
            self._progress(i, n, c, row)
            if i % 25 == 0 or torch.cuda.memory_reserved() > 32 * 2 ** 30:
                gc.collect()
                torch.cuda.empty_cache()
            self.save()
        if self.skipped:
            self.log(f"skipped {len(self.skipped)} cases (budget, --no-compile or a fatal error): "
                     + ", ".join(self.skipped))

    def run_census(self) -> None:
        """Kernel census of the measured cases, most important first, while the budget lasts."""
        by_id = {c.id: c for c in self.cases}
        todo = [r for r in self.rows if r["seconds"] is not None]
        self.log(f"# kernel census of {len(todo)} cases")
        for row in todo:
            c = by_id[row["id"]]
            if self.fatal or time.monotonic() + 0.5 + (5.0 if c.compiles else 0.0) > self.deadline:
                self.census_skipped.append(c.id)
                continue
            prep: Prepared | None = None
            try:
                prep = BUILDERS[c.impl](c)
                with prep.ctx():
                    row.update(kernel_census(prep, self.bencher))
            except Exception as exc:  # noqa: BLE001
                row["census_error"] = short_error(exc)
                prep = None
                self._recover()
            finally:
                del prep
        if self.census_skipped:
            self.log(f"census skipped for {len(self.census_skipped)} cases (budget)")
        self.save()

    # -- summary ------------------------------------------------------------------------------
    def summary(self) -> None:
        """Per-family counts and checks, then the ceilings."""
        listed: dict[str, int] = {}
        for case in self.cases:
            listed[case.family] = listed.get(case.family, 0) + 1
        skipped = set(self.skipped)
        self.log("")
        self.log(f"{'family':<20}{'listed':>7}{'ran':>6}{'ok':>6}{'fail':>6}{'skip':>6}  checks  kernels(median)")
        checks_meta: dict[str, dict[str, int]] = {}
        for fam in FAMILIES:
            if fam not in listed:
                continue
            rows = [r for r in self.rows if r["family"] == fam]
            ok = sum(1 for r in rows if r["ok"])
            chk = [r["check"]["pass"] for r in rows if r["check"] is not None]
            checks_meta[fam] = {"pass": sum(1 for x in chk if x), "total": len(chk)}
            nk = [r["n_kernels"] for r in rows if r.get("n_kernels") is not None]
            nk_s = f"{statistics.median(nk):.0f}" if nk else "-"
            n_skip = sum(1 for case in self.cases if case.family == fam and case.id in skipped)
            self.log(f"{fam:<20}{listed[fam]:>7}{len(rows):>6}{ok:>6}{len(rows) - ok:>6}{n_skip:>6}"
                     f"  {checks_meta[fam]['pass']}/{checks_meta[fam]['total']:<5}  {nk_s}")
        self.meta["checks"] = checks_meta
        self.meta["counts"] = {
            "listed": len(self.cases), "ran": len(self.rows), "ok": sum(1 for r in self.rows if r["ok"]),
            "failed": sum(1 for r in self.rows if not r["ok"]), "skipped": len(self.skipped),
        }
        c: dict[str, Any] = self.ceilings
        if c:
            self.log("")
            if "copy_bandwidth_bytes_per_s" in c:
                self.log(f"copy bandwidth  {c['copy_bandwidth_bytes_per_s'] / 1e12:7.3f} TB/s (read+write, "
                         f"{c['copy_bandwidth_bytes_moved'] / 1e9:.1f} GB moved)")
            if "read_bandwidth_bytes_per_s" in c:
                self.log(f"read bandwidth  {c['read_bandwidth_bytes_per_s'] / 1e12:7.3f} TB/s "
                         f"({c['read_bandwidth_bytes_read'] / 1e9:.1f} GB read)")
            for dt, v in c.get("matmul_flops_per_s", {}).items():
                self.log(f"matmul {dt:<9}{v / 1e12:9.1f} T(FL)OP/s")
            if "launch_floor_s" in c:
                g = c.get("launch_floor_graph_s")
                self.log(f"launch floor    {c['launch_floor_s'] * 1e6:7.2f} us (do_bench), "
                         f"{c['launch_floor_eager_loop_s'] * 1e6:.2f} us (eager loop), "
                         f"{'n/a' if g is None else f'{g * 1e6:.2f}'} us (graph)")
        self.log(f"elapsed {self.elapsed():.1f} s of budget {self.args.budget:.0f} s; output {self.args.out}")

    # -- main ---------------------------------------------------------------------------------
    def run(self) -> int:
        """All phases; the JSON is valid after every step."""
        torch.manual_seed(self.args.seed)
        torch.backends.cudnn.benchmark = True
        with contextlib.suppress(Exception):  # the default already; set so a stray env setting can't leak in
            torch.backends.cuda.matmul.allow_tf32 = False
        self.collect_meta()
        self.bencher.probe()
        self.meta["timer"] = self.bencher.mode
        self.meta["timer_probe_error"] = self.bencher.probe_error
        probe_note = f" ({self.bencher.probe_error})" if self.bencher.probe_error else ""
        self.log(f"# timer: {self.bencher.mode}{probe_note}")
        self.save()
        with torch.inference_mode():
            if self.args.ceilings:
                warm_gpu(0.3 if self.args.quick else 1.0)
                self.measure_ceilings()
            self.run_cases()
            if not self.args.no_census:
                self.run_census()
        self.meta["nvidia_smi_end"] = nvidia_smi("driver_version,name,clocks.max.sm,clocks.sm,clocks.mem")
        self.meta["nvidia_smi_end_power"] = nvidia_smi("power.draw,power.limit,temperature.gpu")
        self.summary()
        self.save()
        return 0 if not self.fatal else 3


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None, doc: str = "") -> argparse.Namespace:
    """Command-line options; --help's description is the first paragraph of doc (the entry point's docstring)."""
    default_out = os.path.join(os.environ.get("OUT", "."), "h200_measurements.json")
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=default_out, help="output JSON (default: $OUT/h200_measurements.json)")
    ap.add_argument("--budget", type=float, default=480.0, help="seconds since start for all phases (default 480)")
    ap.add_argument("--only", default="", help="comma-separated families to run; add 'ceilings' to keep the "
                    f"ceilings (families: {', '.join(FAMILIES)})")
    ap.add_argument("--dry-run", action="store_true", help="print the case list, counts and a time estimate; no torch")
    ap.add_argument("--quick", action="store_true", help="smoke test: checked cases + one per family, short timing")
    ap.add_argument("--no-census", action="store_true", help="skip the profiler pass that names the kernels")
    ap.add_argument("--no-ceilings", action="store_true", help="skip the ceilings phase (a second run on one machine)")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile'd (fused) cases")
    ap.add_argument("--warmup", type=float, default=None, help="do_bench warmup in ms (default 25; --quick 5)")
    ap.add_argument("--rep", type=float, default=None, help="do_bench rep in ms (default 100; --quick 20)")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed")
    ap.add_argument("--sample", choices=tuple(SETS), default=None,
                    help="measure a randomly drawn set (measuring.sampling) instead of the catalogue")
    ap.add_argument("--sample-seed", type=int, default=DEFAULT_SEED, help=f"sampler seed (default {DEFAULT_SEED})")
    ap.add_argument("--sample-n", type=int, default=DEFAULT_N, help=f"cases in the sampled set (default {DEFAULT_N})")
    ap.add_argument("--sample-families", default="", help="comma-separated families to draw from instead of SPACE's "
                    "(e.g. sdpa: SDPA with PyTorch's own backend choice)")
    args = ap.parse_args(argv)
    args.warmup = args.warmup if args.warmup is not None else (5.0 if args.quick else 25.0)
    args.rep = args.rep if args.rep is not None else (20.0 if args.quick else 100.0)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in FAMILIES and s != "ceilings"]
    if unknown:
        ap.error(f"--only: unknown family {', '.join(unknown)}; expected some of ceilings, {', '.join(FAMILIES)}")
    args.only = only
    args.ceilings = (not only or "ceilings" in only) and not args.no_ceilings
    return args


def select_cases(args: argparse.Namespace) -> list[Case]:
    """The registry (or with --sample, the sampled set) filtered by --only and --quick."""
    families = [f for f in args.sample_families.split(",") if f] or None
    cases = sample_set(args.sample, args.sample_n, args.sample_seed, families) if args.sample else all_cases()
    if args.only:
        cases = [c for c in cases if c.family in args.only]
    if args.quick:
        cases = quick_subset(cases)
    return cases


def dry_run(cases: list[Case], args: argparse.Namespace) -> None:
    """Print the run order with estimates, counts per family and the estimated device time."""
    ordered = run_order(cases)
    census = not args.no_census
    total = 0.0
    print(f"{'#':>4} tier {'est s':>6}  id")
    for i, c in enumerate(ordered, 1):
        est = estimate_seconds(c, args.warmup, args.rep, census)
        total += est
        flags = ("C" if c.check else " ") + ("*" if c.compiles else " ")
        print(f"{i:4d}  t{c.tier}  {est:6.2f} {flags} {c.id}")
    print("\n(C = spot-checked against float64, * = torch.compile)\n")
    print(f"{'family':<20}{'cases':>6}{'t0':>5}{'t1':>5}{'t2':>5}{'checks':>8}{'est s':>8}")
    for fam in FAMILIES:
        fc = [c for c in cases if c.family == fam]
        if not fc:
            continue
        est = sum(estimate_seconds(c, args.warmup, args.rep, census) for c in fc)
        tiers = [sum(1 for c in fc if c.tier == t) for t in (0, 1, 2)]
        print(f"{fam:<20}{len(fc):>6}{tiers[0]:>5}{tiers[1]:>5}{tiers[2]:>5}{sum(c.check for c in fc):>8}{est:>8.1f}")
    fixed = 25.0 + (12.0 if args.ceilings else 0.0) + (20.0 if any(c.compiles for c in cases) else 0.0)
    fixed += 5.0 if census else 0.0
    print(f"{'total':<20}{len(cases):>6}{'':>23}{total:>8.1f}")
    print(f"\nestimated device time: {total:.0f} s for the cases + ~{fixed:.0f} s fixed (torch import, CUDA "
          f"init, warm-up, and as selected ceilings, first torch.compile, profiler init) = ~{total + fixed:.0f} s "
          f"(budget {args.budget:.0f} s; estimate from datasheet rates at {ROUGH_EFF:.0%} efficiency)")
    print(f"ceilings: {'yes' if args.ceilings else 'no'}; census: {'yes' if census else 'no'}; "
          f"do_bench warmup {args.warmup:g} ms, rep {args.rep:g} ms")


def main(argv: Sequence[str] | None = None, doc: str = "") -> int:
    """Entry point; doc is the entry point's module docstring (for --help)."""
    args = parse_args(argv, doc)
    cases = select_cases(args)
    if args.dry_run:
        dry_run(cases, args)
        return 0
    load_torch()
    if not torch.cuda.is_available():
        print("no CUDA device: run this on the H200 (or use --dry-run)", file=sys.stderr)
        return 2

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    runner = Runner(args, cases)
    try:
        return runner.run()
    except BaseException as exc:  # noqa: BLE001 - keep what was measured
        runner.fatal = runner.fatal or short_error(exc)
        runner.log(f"ABORTED: {runner.fatal}")
        try:
            runner.save()
        except Exception:  # noqa: BLE001
            pass
        raise

