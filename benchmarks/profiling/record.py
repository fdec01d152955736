#!/usr/bin/env python3
"""Record the real-program profiles that solkit's profile reader is validated on (issue 11).

    python3 benchmarks/profiling/record.py --out "$OUT"                     # on the H200 (about 2-4 minutes)
    python3 benchmarks/profiling/record.py --out /tmp/p --device cpu --small # anywhere: tiny configs, no CUDA, no ncu

For each program (``programs.py``): build it, run ``--warmup`` untimed steps (cuDNN/cuBLAS autotuning and lazy
init happen here), time ``--timing-steps`` steps with CUDA events outside the profiler (median kept), then
profile exactly ONE step with ``torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True)``,
``torch.cuda.synchronize()`` before and after it, and write ``<name>.json.gz`` (``export_chrome_trace``, then
gzip). Then ``ncu_ops``: Nsight Compute over the ops in ``ncu_ops.py`` -> ``ncu_ops.csv.gz``. Everything
is described in ``manifest.json`` (rewritten after every program, so a run cut short keeps what it made),
and one JSON line per program goes to stdout as it finishes.

Files written to ``--out`` (nothing else): bert_train.json.gz, resnet50_infer.json.gz,
resnet50_train.json.gz, llama_prefill.json.gz, llama_decode.json.gz, ncu_ops.csv.gz, manifest.json.
Needs torch (+ transformers, torchvision); never imports solkit.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import gc
import gzip
import hashlib
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import trace_stats  # noqa: E402
from programs import PROGRAMS  # noqa: E402

T0 = time.monotonic()
NCU = "ncu_ops"
ALL = [*PROGRAMS, NCU]
# rough seconds each needs on an H200 (build + warmup + timing + profile + export); a program is skipped
# when less than this is left of --budget-s
MIN_SECONDS = {"bert_train": 25, "resnet50_infer": 15, "resnet50_train": 20, "llama_prefill": 25,
               "llama_decode": 15, NCU: 45}
NCU_METRICS = "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
SCRIPT_FILES = ["record.py", "programs.py", "ncu_ops.py", "trace_stats.py"]


def elapsed() -> float:
    return time.monotonic() - T0


def log(msg: str) -> None:
    print(f"[{elapsed():6.1f}s] {msg}", file=sys.stderr, flush=True)


def emit(obj: dict[str, Any]) -> None:
    """One JSON line on stdout (the fallback record if the files do not come back)."""
    print(json.dumps(obj, default=str), flush=True)


def script_sha256() -> str:
    h = hashlib.sha256()
    for name in SCRIPT_FILES:
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def run_cmd(cmd: list[str], timeout: float = 30) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (r.stdout + r.stderr).strip()
    except Exception as err:  # noqa: BLE001 - a missing tool is a fact to record, not a failure
        return f"unavailable: {type(err).__name__}: {err}"


def gzip_file(src: str, dst: str) -> int:
    """gzip ``src`` into ``dst`` (level 9, mtime 0 so identical input gives identical bytes); returns its size."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        with gzip.GzipFile(filename="", mode="wb", fileobj=fout, compresslevel=9, mtime=0) as gz:
            shutil.copyfileobj(fin, gz, 1 << 20)
    return os.path.getsize(dst)


# --------------------------------------------------------------------------- environment


def environment(torch: Any, device: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "torch_git": getattr(torch.version, "git_version", None),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "flags": {
            "cudnn.benchmark": torch.backends.cudnn.benchmark,
            "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "cuda.matmul.allow_bf16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        },
    }
    for mod in ("transformers", "torchvision", "triton", "numpy"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception as err:  # noqa: BLE001
            env[mod] = f"unavailable: {type(err).__name__}: {err}"
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = torch.cuda.get_device_name(0)
        env["gpu_props"] = {"sm_count": props.multi_processor_count, "total_memory": props.total_memory,
                            "capability": f"{props.major}.{props.minor}",
                            "l2_cache_size": getattr(props, "L2_cache_size", None)}
        env["nvidia_smi"] = run_cmd([
            "nvidia-smi", "--query-gpu=name,driver_version,pci.bus_id,memory.total,clocks.sm,clocks.max.sm,"
            "clocks.mem,clocks.max.mem,power.limit,temperature.gpu,persistence_mode,compute_mode",
            "--format=csv"])
        smi = env["nvidia_smi"].splitlines()
        if len(smi) >= 2 and not env["nvidia_smi"].startswith("unavailable"):
            row = dict(zip([c.strip() for c in smi[0].split(",")], [c.strip() for c in smi[1].split(",")]))
            env["driver"] = row.get("driver_version")
        else:
            env["driver"] = None
        try:
            env["cuda_driver_api_version"] = torch._C._cuda_getDriverVersion()  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001
            pass
    else:
        env["gpu"] = None
        env["driver"] = None
    return env


# --------------------------------------------------------------------------- one traced program


class Runner:
    def __init__(self, torch: Any, args: argparse.Namespace, manifest: dict[str, Any], tmp: str) -> None:
        self.torch = torch
        self.args = args
        self.cuda = args.device == "cuda"
        self.manifest = manifest
        self.tmp = tmp

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def activities(self) -> list[Any]:
        P = self.torch.profiler.ProfilerActivity
        return [P.CPU, P.CUDA] if self.cuda else [P.CPU]

    def warm_profiler(self) -> None:
        """Start and stop the profiler once on a tiny op, so CUPTI/Kineto init is not in the first trace."""
        torch = self.torch
        x = torch.ones(64, 64, device=self.args.device)
        with torch.profiler.profile(activities=self.activities(), record_shapes=True):
            (x @ x).sum()
            self.sync()

    def time_steps(self, prog: Any, n: int) -> list[float]:
        """Wall time (ms) of ``n`` steps, one at a time: CUDA events around each step (perf_counter on CPU)."""
        torch = self.torch
        out = []
        for _ in range(n):
            prog.reset()
            self.sync()
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                prog.step()
                end.record()
                end.synchronize()
                out.append(float(start.elapsed_time(end)))
            else:
                t = time.perf_counter()
                prog.step()
                out.append((time.perf_counter() - t) * 1e3)
        return out

    def record(self, name: str, prog: Any) -> dict[str, Any]:
        torch, args = self.torch, self.args
        info: dict[str, Any] = {}
        t = time.monotonic()
        for _ in range(args.warmup):
            prog.reset()
            prog.step()
        self.sync()
        info["warmup_steps"] = args.warmup
        info["warmup_s"] = round(time.monotonic() - t, 3)

        times = self.time_steps(prog, args.timing_steps)
        info["wall_ms"] = statistics.median(times)
        info["wall_ms_all"] = [round(x, 4) for x in times]
        info["wall_method"] = ("CUDA events around one step, outside the profiler, torch.cuda.synchronize() "
                               "before each; median" if self.cuda else "time.perf_counter, median")

        prog.reset()
        self.sync()
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
        with torch.profiler.profile(activities=self.activities(), record_shapes=True) as prof:
            self.sync()
            prog.step()
            self.sync()
        if self.cuda:
            info["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated())
        raw = os.path.join(self.tmp, f"{name}.json")
        t = time.monotonic()
        prof.export_chrome_trace(raw)
        info["export_s"] = round(time.monotonic() - t, 3)
        info["trace_bytes_raw"] = os.path.getsize(raw)
        stats = trace_stats.summarize(trace_stats.load(raw))
        fname = f"{name}.json.gz"
        info["file"] = fname
        info["trace_bytes"] = gzip_file(raw, os.path.join(args.out, fname))
        os.remove(raw)
        info["kernel_events"] = stats["kernel_events"]
        info["kernel_dur_us"] = stats["kernel_dur_us"]
        info["trace_stats"] = stats
        if info["trace_bytes"] > args.max_trace_mb * 1e6:
            info["warning"] = (f"trace is {info['trace_bytes'] / 1e6:.1f} MB compressed, over --max-trace-mb "
                               f"{args.max_trace_mb}: rerun it with a smaller --batch {name}=N")
        if self.cuda and stats["kernel_events"] == 0:
            info["warning"] = "no kernel events in the trace (CUPTI not collecting?)"
        return info

    def run_program(self, name: str, shared: dict[str, Any]) -> dict[str, Any]:
        builder, _group = PROGRAMS[name]
        entry: dict[str, Any] = {"status": "error"}
        t = time.monotonic()
        try:
            try:
                prog = builder(self.torch, self.args.device, self.args.small, shared,
                               batch=self.args.batch.get(name))
            except ImportError as err:  # e.g. no (working) torchvision: skip this program, say why
                entry.update(status="skipped", reason=f"import failed: {err}")
                log(f"{name} skipped: {entry['reason']}")
                return entry
            entry["build_s"] = round(time.monotonic() - t, 3)
            entry["batch_override"] = self.args.batch.get(name)
            entry["config"] = prog.config
            entry.update(self.record(name, prog))
            entry["status"] = "ok"
        except Exception as err:  # noqa: BLE001 - one failure must not lose the other programs
            entry["error"] = f"{type(err).__name__}: {err}"
            entry["traceback"] = traceback.format_exc()
            log(f"{name} failed: {entry['error']}")
        finally:
            prog = None  # noqa: F841
        entry["seconds"] = round(time.monotonic() - t, 3)
        return entry


# --------------------------------------------------------------------------- Nsight Compute


def ncu_csv(stdout_text: str) -> tuple[str, list[str], dict[str, Any]]:
    """Split ncu's stdout into the CSV (header, units row, one row per kernel) and its own messages."""
    lines = stdout_text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    messages = [ln for ln in lines if ln.startswith("==")]
    if start is None:
        return "", messages, {"rows": 0}
    body = [ln for ln in lines[start:] if ln.startswith('"')]
    text = "\n".join(body) + "\n"
    table = list(csv.reader(io.StringIO(text)))
    header = table[0] if table else []
    rows = [r for r in table[2:] if len(r) == len(header)]
    nvtx_cols = [c for c in header if "Push/Pop_Range" in c or "NVTX" in c.upper()]
    info: dict[str, Any] = {"rows": len(rows), "columns": len(header), "nvtx_columns": nvtx_cols,
                            "units": {h: u for h, u in zip(header, table[1]) if u} if len(table) > 1 else {}}
    for m in NCU_METRICS.split(","):
        info[f"has_{m}"] = m in header
    if "Kernel Name" in header:
        ki = header.index("Kernel Name")
        info["kernels"] = [r[ki][:100] for r in rows]
    if nvtx_cols:
        ni = header.index(nvtx_cols[0])
        info["rows_in_sk_measure"] = sum(1 for r in rows if "sk_measure" in r[ni])
        info["nvtx_values"] = [r[ni][:160] for r in rows]
    return text, messages, info


def run_ncu(args: argparse.Namespace, tmp: str, remaining: float) -> dict[str, Any]:
    entry: dict[str, Any] = {"status": "error"}
    ncu = shutil.which("ncu")
    if ncu is None:
        for cand in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
            if os.path.exists(cand):
                ncu = cand
    if ncu is None:
        entry["error"] = "ncu not found on PATH"
        return entry
    entry["ncu"] = ncu
    entry["ncu_version"] = run_cmd([ncu, "--version"])
    script = os.path.join(HERE, "ncu_ops.py")
    meta_path = os.path.join(tmp, "ncu_ops_meta.json")
    app = [sys.executable, script, "--meta-out", meta_path]
    common = [ncu, "--csv", "--page", "raw", "--section", "SpeedOfLight", "--metrics", NCU_METRICS,
              "--nvtx", "--target-processes", "all"]
    # Each attempt runs only if the one before gave no kernel rows:
    # 1: profile only between cudaProfilerStart/Stop (the measured launches), base units, no clock lock;
    # 2: the same, filtered by NVTX instead (the outer push/pop range "sk_measure/");
    # 3: the NVTX filter with ncu's defaults for everything else (units auto, clocks locked to base).
    base_units = ["--print-units", "base", "--clock-control", "none"]
    attempts = [
        common + ["--profile-from-start", "off", "--launch-count", "64", *base_units] + app,
        common + ["--nvtx-include", "sk_measure/", "--launch-count", "64", *base_units] + app,
        common + ["--nvtx-include", "sk_measure/", "--launch-count", "64"] + app,
    ]
    entry["attempts"] = []
    deadline = time.monotonic() + remaining
    for cmd in attempts:
        left = min(args.ncu_timeout, deadline - time.monotonic())
        if left < 20:
            entry["attempts"].append({"cmd": cmd, "skipped": f"only {left:.0f}s left"})
            break
        out_path, err_path = os.path.join(tmp, "ncu.stdout"), os.path.join(tmp, "ncu.stderr")
        t = time.monotonic()
        rc: Any
        with open(out_path, "w") as fo, open(err_path, "w") as fe:
            proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, start_new_session=True)
            try:
                rc = proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
                rc = f"timeout after {left:.0f}s"
        with open(out_path, errors="replace") as f:
            stdout_text = f.read()
        with open(err_path, errors="replace") as f:
            stderr_text = f.read()
        text, messages, info = ncu_csv(stdout_text)
        att = {"cmd": cmd, "rc": rc, "seconds": round(time.monotonic() - t, 2), **info,
               "ncu_messages": messages[-40:], "stderr_tail": stderr_text[-3000:],
               "stdout_non_csv_tail": [ln for ln in stdout_text.splitlines()
                                       if not ln.startswith('"')][-20:]}
        entry["attempts"].append(att)
        log(f"ncu attempt {len(entry['attempts'])}: rc={rc} rows={info['rows']} in {att['seconds']}s")
        if isinstance(rc, str):  # timed out: a retry with other filters would be as slow
            break
        if "ERR_NVGPUCTRPERM" in stdout_text + stderr_text:
            entry["error_hint"] = "no permission for GPU performance counters (ERR_NVGPUCTRPERM)"
            break
        if info["rows"] > 0:
            csv_raw = os.path.join(tmp, "ncu_ops.csv")
            with open(csv_raw, "w") as f:
                f.write(text)
            entry["file"] = "ncu_ops.csv.gz"
            entry["csv_bytes_raw"] = os.path.getsize(csv_raw)
            entry["trace_bytes"] = gzip_file(csv_raw, os.path.join(args.out, entry["file"]))
            entry["command"] = " ".join(cmd)
            entry["rows"] = info["rows"]
            entry["status"] = "ok"
            break
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            entry["ops"] = json.load(f)
    if entry["status"] != "ok":
        entry["error"] = "no ncu attempt produced kernel rows (see attempts: permissions, flags, timeout)"
    entry["settings"] = {"replay": "kernel (default)", "cache_control": "all (default: caches flushed per pass)",
                         "clock_control": "none in attempts 1-2 (application clocks), base (ncu default) in 3",
                         "units": "base in attempts 1-2 (byte, nsecond), auto in 3: read the CSV's units row",
                         "used_attempt": len(entry["attempts"]) if entry["status"] == "ok" else None}
    return entry


def ncu_cpu_smoke(tmp: str) -> dict[str, Any]:
    """On CPU: run ncu_ops.py itself with tiny shapes (no ncu) so its code path is tested."""
    meta_path = os.path.join(tmp, "ncu_ops_meta.json")
    r = subprocess.run([sys.executable, os.path.join(HERE, "ncu_ops.py"), "--device", "cpu", "--small",
                        "--meta-out", meta_path], capture_output=True, text=True, timeout=300)
    entry: dict[str, Any] = {"status": "skipped", "reason": "no ncu on --device cpu; ncu_ops.py smoke-tested",
                             "smoke_rc": r.returncode, "smoke_stdout": r.stdout[-500:],
                             "smoke_stderr": r.stderr[-2000:]}
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            entry["ops"] = json.load(f)
    return entry


# --------------------------------------------------------------------------- main


def write_manifest(out: str, manifest: dict[str, Any]) -> None:
    tmp = os.path.join(out, ".manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1, default=str)
    os.replace(tmp, os.path.join(out, "manifest.json"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for the traces and manifest.json")
    p.add_argument("--only", nargs="+", choices=ALL, default=None, help="run only these programs")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--small", action="store_true", help="tiny configs (for the CPU dry run)")
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="skip the remaining programs once this many seconds have passed (default 420)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps before timing and profiling (>= 3)")
    p.add_argument("--timing-steps", type=int, default=5, help="steps timed outside the profiler (median)")
    p.add_argument("--ncu-timeout", type=float, default=150.0, help="seconds per ncu attempt")
    p.add_argument("--max-trace-mb", type=float, default=6.0, help="flag traces larger than this (compressed)")
    p.add_argument("--batch", action="append", default=[], metavar="NAME=N",
                   help="override a program's batch (repeatable), e.g. --batch bert_train=4")
    args = p.parse_args(argv)
    batches: dict[str, int] = {}
    for item in args.batch:
        name, _, value = item.partition("=")
        if name not in PROGRAMS or not value.isdigit() or int(value) < 1:
            p.error(f"--batch expects NAME=N with NAME one of {', '.join(PROGRAMS)} and N >= 1, got {item!r}")
        batches[name] = int(value)
    args.batch = batches
    if args.warmup < 3:
        p.error("--warmup must be at least 3")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    selected = [n for n in ALL if args.only is None or n in args.only]

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("record.py: --device cuda but CUDA is not available (use --device cpu --small)", file=sys.stderr)
        return 2
    if args.device == "cuda":
        torch.backends.cudnn.benchmark = True  # fixed shapes: let cuDNN autotune during the warmup steps

    manifest: dict[str, Any] = {
        "schema": 1,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": [os.path.relpath(sys.argv[0]) if sys.argv else "record.py", *(argv or sys.argv[1:])],
        "script_sha256": script_sha256(),
        "device": args.device,
        "small": args.small,
        "env": environment(torch, args.device),
        "settings": {
            "warmup_steps": args.warmup, "timing_steps": args.timing_steps, "budget_s": args.budget_s,
            "profiler": "torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True); one step; "
                        "torch.cuda.synchronize() before and after the step inside the profiler; "
                        "export_chrome_trace, then gzip -9",
            "profiler_warmed": "one throwaway profile of a 64x64 matmul before the first program",
        },
        "programs": {},
    }
    write_manifest(args.out, manifest)
    tmp = tempfile.mkdtemp(prefix="solkit_profiles_")
    runner = Runner(torch, args, manifest, tmp)
    try:
        runner.warm_profiler()
    except Exception as err:  # noqa: BLE001
        manifest["settings"]["profiler_warmed"] = f"failed: {type(err).__name__}: {err}"

    shared: dict[str, Any] = {}
    last_group = None
    try:
        for name in selected:
            remaining = args.budget_s - elapsed()
            group = PROGRAMS[name][1] if name in PROGRAMS else None
            if group != last_group:
                shared.clear()
                gc.collect()
                if args.device == "cuda":
                    torch.cuda.empty_cache()
            last_group = group
            if remaining < MIN_SECONDS[name] * (0.2 if args.small else 1.0):
                entry: dict[str, Any] = {"status": "skipped",
                                         "reason": f"budget: {remaining:.0f}s left of --budget-s {args.budget_s}"}
            elif name == NCU:
                shared.clear()
                gc.collect()
                if args.device == "cuda":
                    torch.cuda.empty_cache()
                    entry = run_ncu(args, tmp, remaining - 5)
                else:
                    entry = ncu_cpu_smoke(tmp)
            else:
                log(f"{name}: start")
                entry = runner.run_program(name, shared)
            manifest["programs"][name] = entry
            write_manifest(args.out, manifest)
            emit({"program": name, "status": entry.get("status"), "file": entry.get("file"),
                  "bytes": entry.get("trace_bytes"), "kernel_events": entry.get("kernel_events"),
                  "kernel_dur_us": entry.get("kernel_dur_us"), "wall_ms": entry.get("wall_ms"),
                  "rows": entry.get("rows"), "seconds": entry.get("seconds"),
                  "error": entry.get("error") or entry.get("reason"), "warning": entry.get("warning"),
                  "elapsed_s": round(elapsed(), 1)})
    finally:
        shared.clear()
        shutil.rmtree(tmp, ignore_errors=True)
        manifest["total_s"] = round(elapsed(), 1)
        manifest["files"] = {f: os.path.getsize(os.path.join(args.out, f))
                             for f in sorted(os.listdir(args.out)) if not f.startswith(".")}
        write_manifest(args.out, manifest)
        manifest["files"]["manifest.json"] = os.path.getsize(os.path.join(args.out, "manifest.json"))
        for f, size in manifest["files"].items():
            print(f"{size:>12,d}  {f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
