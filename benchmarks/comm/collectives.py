#!/usr/bin/env python3
"""Time NCCL collectives between the GPUs of one host, the way nccl-tests does (sizes, algbw, busbw).

    torchrun --nproc_per_node=2 benchmarks/comm/collectives.py --out "$OUT" --grid               # ~2-3 min on 2 H200
    torchrun --nproc_per_node=2 benchmarks/comm/collectives.py --out "$OUT" --draw 7 --cases 60
    torchrun --nproc_per_node=2 benchmarks/comm/collectives.py --out /tmp/c --grid --max-bytes 1048576  # CPU (gloo)

Ops: all_reduce (in place, SUM), all_gather (all_gather_into_tensor), reduce_scatter (reduce_scatter_tensor, SUM),
all_to_all (all_to_all_single), broadcast (root 0), send_recv (each rank sends its buffer to rank+1 and receives
one from rank-1 at the same time, one dist.batch_isend_irecv, like nccl-tests sendrecv_perf). ``nbytes`` is the
nccl-tests "size": the whole buffer (all_reduce's buffer, all_gather's OUTPUT, reduce_scatter's INPUT, all_to_all's
buffer, broadcast's buffer, the buffer each rank sends in send_recv). algbw = nbytes / seconds; busbw = algbw x the
nccl-tests factor (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast, send_recv 1).

Per case: buffers allocated once (random normal), 1 warm-up call, then 4 more warm-up calls timed as one block to
pick ``iters`` (about 20 ms per round, 1..1000), then ``--rounds`` rounds: dist.barrier(), synchronize, CUDA event,
``iters`` calls back to back, CUDA event, synchronize (time.perf_counter with gloo). Each round's time is the MAX
over ranks; ``seconds`` is the median over rounds of round/iters. Rank 0 rewrites ``DIR/collectives.json`` after
every case and prints one JSON line per case. Backend nccl with CUDA, else gloo. Never imports solkit.
``parallel_steps.py`` imports the helpers of this file (init_dist, environment, write_json).
"""

from __future__ import annotations

import os

# NVLink multicast (NVLS) must stay off on the lent machines: set before torch (and NCCL) load.
for _key, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                     ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_key, _value)

import argparse  # noqa: E402
import datetime as _dt  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from typing import Any, Callable  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

T0 = time.monotonic()
warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.distributed.*")

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
ELEM_BYTES = {"bf16": 2, "fp32": 4}
MIN_BYTES = 4096
GRID_SIZES = 22  # 4 KiB .. 8 GiB
ROUND_TARGET_S = 0.020
MAX_ITERS = 1000
ENV_PREFIXES = ("NCCL_", "TORCH_NCCL", "TORCH_SYMM", "NVSHMEM", "CUDA_VISIBLE", "TORCH_DISTRIBUTED", "GLOO_")


def busbw_factor(op: str, n: int) -> float:
    """The nccl-tests factor from algorithm bandwidth to bus bandwidth for ``n`` ranks."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0  # broadcast, send_recv


def elapsed() -> float:
    return time.monotonic() - T0


# --------------------------------------------------------------------------- shared helpers (parallel_steps.py too)


class DistInfo:
    """The process group of this run, started once: rank, world size, device, and a few small collectives."""

    def __init__(self) -> None:
        if "RANK" not in os.environ:  # plain `python script.py`: a one-process group
            os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
            os.environ.setdefault("MASTER_PORT", "29531")
        self.cuda = torch.cuda.is_available()
        self.backend = "nccl" if self.cuda else "gloo"
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if self.cuda:
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cpu")
        if not dist.is_initialized():
            kwargs = {"device_id": self.device} if self.cuda else {}
            dist.init_process_group(self.backend, **kwargs)
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def max_all(self, values: list[float]) -> list[float]:
        """Elementwise MAX of ``values`` over all ranks (every rank must pass a list of the same length)."""
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return [float(x) for x in t.tolist()]

    def rank0_says(self, flag: bool) -> bool:
        """Rank 0's ``flag`` on every rank (budget decisions must agree, or ranks would wait on each other)."""
        t = torch.tensor([1.0 if flag else 0.0], device=self.device)
        dist.broadcast(t, src=0)
        return bool(t.item() > 0)


def _steps_module() -> Any:
    """benchmarks/programs/steps.py: its helpers (run_cmd, stderr_to) serve these scripts too."""
    folder = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "programs"))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import steps  # noqa: PLC0415 - benchmarks/programs/steps.py, by its folder

    return steps


run_cmd = _steps_module().run_cmd


def environment(d: DistInfo) -> dict[str, Any]:
    """Versions, GPUs, the NVLink topology and the communication environment variables of this run."""
    env: dict[str, Any] = {
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(), "python": platform.python_version(), "platform": platform.platform(),
        "torch": torch.__version__, "cuda": torch.version.cuda, "backend": d.backend, "world_size": d.world,
        "nccl": None, "gpus": [], "gpu_props": None, "nvidia_smi": None, "nvidia_smi_topo": None,
        "env_vars": {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)},
    }
    if d.cuda:
        try:
            env["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
        except Exception as err:  # noqa: BLE001
            env["nccl"] = f"unavailable: {err}"
        env["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        p = torch.cuda.get_device_properties(d.device)
        env["gpu_props"] = {"name": p.name, "total_memory": p.total_memory, "sm_count": p.multi_processor_count,
                            "capability": f"{p.major}.{p.minor}"}
        env["nvidia_smi"] = run_cmd(["nvidia-smi", "--query-gpu=index,name,driver_version,pci.bus_id,memory.total,"
                                     "clocks.max.sm,clocks.max.mem,power.limit", "--format=csv"])
        env["nvidia_smi_topo"] = run_cmd(["nvidia-smi", "topo", "-m"])
    return env


def write_json(path: str, doc: dict[str, Any]) -> None:
    """Write ``doc`` atomically (a killed run leaves the previous complete file)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- cases


def round_bytes(nbytes: int, n: int, dtype: str) -> int:
    """``nbytes`` rounded DOWN to a multiple of n x element bytes (at least one such unit)."""
    unit = n * ELEM_BYTES[dtype]
    return max(unit, nbytes // unit * unit)


def grid_cases(n: int, max_bytes: int) -> list[dict[str, Any]]:
    """Every op x dtype x size (4 KiB .. 8 GiB, powers of 2, capped at ``max_bytes``)."""
    out = []
    for op in OPS:
        for dtype in DTYPES:
            for k in range(GRID_SIZES):
                if MIN_BYTES << k > max_bytes:
                    break
                out.append({"op": op, "dtype": dtype, "nbytes": round_bytes(MIN_BYTES << k, n, dtype),
                            "source": "grid"})
    return out


#: the ops whose chunks' alignment the --misaligned grid tests (all_reduce as the control)
MISALIGNED_OPS = ("all_gather", "reduce_scatter", "all_to_all", "all_reduce")


def misaligned_cases(n: int, max_bytes: int) -> list[dict[str, Any]]:
    """MISALIGNED_OPS x dtype x (2**k + 8 x n bytes, 1 MiB <= 2**k <= 8 GiB): each GPU's chunk is 2**k / n + 8 bytes, a
    multiple of 4 and of 8 but not of 16."""
    out = []
    for op in MISALIGNED_OPS:
        for dtype in DTYPES:
            for k in range(20, 34):
                if (1 << k) > max_bytes:
                    break
                out.append({"op": op, "dtype": dtype, "nbytes": (1 << k) + 8 * n, "source": "misaligned"})
    return out


def draw_cases(seed: int, count: int, n: int, max_bytes: int) -> list[dict[str, Any]]:
    """``count`` cases from the declared space: op and dtype uniform, nbytes log-uniform on [4 KiB, max_bytes],
    rounded down to a multiple of n x element bytes. Every rank draws the same cases from the same seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        op, dtype = rng.choice(OPS), rng.choice(sorted(DTYPES))
        raw = int(math.exp(rng.uniform(math.log(MIN_BYTES), math.log(max_bytes))))
        out.append({"op": op, "dtype": dtype, "nbytes": round_bytes(raw, n, dtype), "source": f"draw{seed}"})
    return out


def case_id(c: dict[str, Any]) -> str:
    return f"{c['op']}-{c['dtype']}-{c['nbytes']}"


# --------------------------------------------------------------------------- one case


def build_call(op: str, dtype: str, nbytes: int, d: DistInfo) -> Callable[[], None]:
    """Allocate the case's buffers (random normal data) and return the call to time; the closure owns them."""
    torch.manual_seed(1000 + d.rank)
    dt, n, r = DTYPES[dtype], d.world, d.rank
    count = nbytes // ELEM_BYTES[dtype]

    def randn(c: int) -> torch.Tensor:
        return torch.randn(c, dtype=dt, device=d.device)

    def empty(c: int) -> torch.Tensor:
        return torch.empty(c, dtype=dt, device=d.device)

    if op == "all_reduce":
        buf = randn(count)  # repeated in-place SUMs grow the values (to inf in time); NCCL's speed does not care
        return lambda: dist.all_reduce(buf, op=dist.ReduceOp.SUM)
    if op == "all_gather":
        src, dst = randn(count // n), empty(count)
        return lambda: dist.all_gather_into_tensor(dst, src)
    if op == "reduce_scatter":
        src, dst = randn(count), empty(count // n)
        return lambda: dist.reduce_scatter_tensor(dst, src, op=dist.ReduceOp.SUM)
    if op == "all_to_all":
        src, dst = randn(count), empty(count)
        return lambda: dist.all_to_all_single(dst, src)
    if op == "broadcast":
        buf = randn(count)
        return lambda: dist.broadcast(buf, src=0)
    if op == "send_recv":
        if n < 2:
            raise ValueError("send_recv needs at least 2 ranks")
        send, recv = randn(count), empty(count)

        def call() -> None:
            works = dist.batch_isend_irecv([dist.P2POp(dist.isend, send, (r + 1) % n),
                                            dist.P2POp(dist.irecv, recv, (r - 1) % n)])
            for w in works:
                w.wait()

        return call
    raise ValueError(f"unknown op {op!r}")


def time_block(call: Callable[[], None], iters: int, d: DistInfo) -> float:
    """Seconds this rank takes for ``iters`` back-to-back calls, started after a barrier and a synchronize."""
    dist.barrier()
    d.sync()
    if d.cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t = time.perf_counter()
    for _ in range(iters):
        call()
    return time.perf_counter() - t


def measure(call: Callable[[], None], rounds: int, d: DistInfo) -> dict[str, Any]:
    """Warm up (1 + 4 timed calls, which pick ``iters``), then ``rounds`` rounds; MAX over ranks per round."""
    call()
    d.sync()
    per_call = d.max_all([time_block(call, 4, d) / 4])[0]
    iters = max(1, min(MAX_ITERS, round(ROUND_TARGET_S / max(per_call, 1e-9))))
    times = d.max_all([time_block(call, iters, d) for _ in range(rounds)])
    per = [t / iters for t in times]
    return {"seconds": statistics.median(per), "rounds_seconds": per, "iters": iters,
            "warmup_seconds_per_call": per_call}


def free_memory(d: DistInfo) -> None:
    if d.cuda:
        torch.cuda.empty_cache()


def run_case(case: dict[str, Any], args: argparse.Namespace, d: DistInfo) -> dict[str, Any]:
    """Build, agree that every rank built, measure; an error (OOM included) becomes the case's ``error``."""
    rec: dict[str, Any] = {**case, "n_gpus": d.world}
    t = time.monotonic()
    call: Callable[[], None] | None = None
    err = ""
    try:
        call = build_call(case["op"], case["dtype"], case["nbytes"], d)
    except Exception as e:  # noqa: BLE001 - OOM or unsupported: recorded, the run goes on
        err = f"{type(e).__name__}: {e}"[:500]
    if d.max_all([1.0 if err else 0.0])[0] > 0:  # all ranks skip together, so none waits in a collective
        rec.update(status="error", error=err or "failed on another rank")
    else:
        assert call is not None
        try:
            rec.update(measure(call, args.rounds, d))
            nbytes, s = case["nbytes"], rec["seconds"]
            rec["algbw_gb_s"] = nbytes / s / 1e9
            rec["busbw_gb_s"] = rec["algbw_gb_s"] * busbw_factor(case["op"], d.world)
            rec["status"] = "ok"
        except Exception as e:  # noqa: BLE001 - only survivable when every rank fails alike
            rec.update(status="error", error=f"{type(e).__name__}: {e}"[:500])
    call = None
    free_memory(d)
    rec["case_s"] = round(time.monotonic() - t, 3)
    return rec


def short(rec: dict[str, Any]) -> dict[str, Any]:
    """The stdout line of a case."""
    line = {"op": rec["op"], "dtype": rec["dtype"], "nbytes": rec["nbytes"], "status": rec.get("status")}
    if "seconds" in rec:
        line.update(us=round(rec["seconds"] * 1e6, 2), busbw=round(rec["busbw_gb_s"], 2), iters=rec["iters"])
    if "error" in rec:
        line["error"] = rec["error"][:120]
    line["t"] = round(elapsed(), 1)
    return line


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for collectives.json")
    p.add_argument("--grid", action="store_true", help="every op x dtype x power-of-two size")
    p.add_argument("--draw", type=int, default=None, metavar="SEED", help="random cases from the declared space")
    p.add_argument("--misaligned", action="store_true",
                   help="all-gather, reduce-scatter, all-to-all and all-reduce of 2**k + 8 x n bytes (chunks off 16-byte alignment)")
    p.add_argument("--cases", type=int, default=40, help="cases for --draw (default 40)")
    p.add_argument("--max-bytes", type=int, default=8 << 30, help="largest nbytes (default 8 GiB)")
    p.add_argument("--only", default=None, metavar="REGEX", help="keep cases whose id op-dtype-nbytes matches")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per case (default 7)")
    p.add_argument("--budget-s", type=float, default=280.0,
                   help="start no case once this many seconds have passed (default 280)")
    args = p.parse_args(argv)
    if not args.grid and args.draw is None and not args.misaligned:
        p.error("give --grid, --misaligned and/or --draw SEED")
    if args.max_bytes < MIN_BYTES or args.rounds < 1:
        p.error("--max-bytes must be at least 4096 and --rounds at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    d = DistInfo()
    cases = grid_cases(d.world, args.max_bytes) if args.grid else []
    cases += misaligned_cases(d.world, args.max_bytes) if args.misaligned else []
    if args.draw is not None:
        cases += draw_cases(args.draw, args.cases, d.world, args.max_bytes)
    if args.only:
        cases = [c for c in cases if re.search(args.only, case_id(c))]
    path = os.path.join(args.out, "collectives.json")
    doc: dict[str, Any] = {}
    if d.rank == 0:
        os.makedirs(args.out, exist_ok=True)
        doc = {"schema": 1, "command": sys.argv, "environment": environment(d),
               "settings": {"rounds": args.rounds, "round_target_s": ROUND_TARGET_S, "max_iters": MAX_ITERS,
                            "warmup_calls": 5, "budget_s": args.budget_s, "max_bytes": args.max_bytes,
                            "timing": ("CUDA events" if d.cuda else "time.perf_counter") +
                            " around `iters` back-to-back calls after dist.barrier() and a synchronize; round time "
                            "= MAX over ranks; seconds = median over rounds of round/iters",
                            "size": "nccl-tests size: the whole buffer (all_gather's output, reduce_scatter's input)",
                            "gb": "algbw_gb_s and busbw_gb_s in 1e9 bytes per second"},
               "cases": [{**c, "n_gpus": d.world, "status": "pending"} for c in cases]}
        write_json(path, doc)
        print(json.dumps({"cases": len(cases), "world_size": d.world, "backend": d.backend}), flush=True)
    for i, case in enumerate(cases):
        if d.rank0_says(elapsed() > args.budget_s):
            rec = {**case, "n_gpus": d.world, "status": "skipped (budget)"}
        else:
            rec = run_case(case, args, d)
        if d.rank == 0:
            doc["cases"][i] = rec
            doc["total_s"] = round(elapsed(), 1)
            write_json(path, doc)
            print(json.dumps(short(rec), separators=(",", ":")), flush=True)
    if d.rank == 0:
        counts: dict[str, int] = {}
        for c in doc["cases"]:
            counts[c["status"]] = counts.get(c["status"], 0) + 1
        doc["summary"], doc["total_s"] = counts, round(elapsed(), 1)
        write_json(path, doc)
        print(json.dumps({"done": counts, "total_s": doc["total_s"]}), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
