#!/usr/bin/env python3
"""Time whole data-parallel training steps of Hugging Face models (random weights) on 1 or N GPUs of one host.

    torchrun --nproc_per_node=2 benchmarks/comm/parallel_steps.py --out "$OUT"                 # the grid, ~3-5 min
    torchrun --nproc_per_node=2 benchmarks/comm/parallel_steps.py --out "$OUT" --draw 11 --cases 20
    torchrun --nproc_per_node=2 benchmarks/comm/parallel_steps.py --out /tmp/p --small --steps 2 --warmup 1  # CPU

Models: "bert-base" (BertForMaskedLM) and "llama-1b" (LlamaForCausalLM), built from tests/data/hf_configs/*.json
with attn_implementation="sdpa", torch.manual_seed(0), fp32 weights, model.train(); labels = input ids. A step is
opt.zero_grad(set_to_none=True); with autocast(bf16): loss = model(ids, labels=ids).loss; loss.backward();
opt.step() with AdamW(lr=1e-4, wd=0.01, fused=True) (foreach=True if fused fails; recorded). Modes: "single"
(the plain model on rank 0 while the other ranks wait at a gloo barrier; world_size 1), "ddp"
(DistributedDataParallel, bucket_cap_mb=25, gradient_as_bucket_view=False), "fsdp" (FSDP2 fully_shard on every
layer, then the root; reshard_after_forward=True; no MixedPrecisionPolicy; FSDP1 FULL_SHARD if FSDP2 is missing).
``batch`` is per GPU. Per case: ``--warmup`` steps, ``--steps`` timed steps one at a time (synchronize, barrier,
CUDA events around the step; the MAX over ranks per step), peak memory on rank 0. Once every case is timed, a trace
pass builds each grid case again (unless --no-traces) and profiles one step on ranks 0 and 1:
DIR/traces/<id>-rank<r>.json.gz, summarised on rank 0 (NCCL kernels, their GPU time and the part no compute kernel
overlaps, all kernel time, the kernel span). No step is timed after a profiler session: one session leaves every later
launch of the process about 1.5x slower on the host (benchmarks/programs/host_noise.py). Rank 0 rewrites
DIR/parallel_steps.json after every case. Never imports solkit; uses ./collectives.py and ../profiling/trace_stats.py.
"""

from __future__ import annotations

import os

# NVLink multicast (NVLS) must stay off on the lent machines: set before torch (and NCCL) load.
for _key, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                     ("NVSHMEM_DISABLE_NVLS", "1"), ("KINETO_LOG_LEVEL", "5")):
    os.environ.setdefault(_key, _value)

import argparse  # noqa: E402
import gc  # noqa: E402
import gzip  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

warnings.filterwarnings("ignore", message="FSDP2-wrapped module")  # the loss is no view; logits are unused

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG_DIR = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, "tests", "data", "hf_configs"))


def _load(name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, os.path.normpath(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


comm = _load("collectives", os.path.join(HERE, "collectives.py"))  # init_dist, environment, write_json
trace_stats = _load("trace_stats", os.path.join(HERE, os.pardir, "profiling", "trace_stats.py"))

MODELS = {  # name: (config file, class, path to the layer list, tokens-per-GPU cap for draws, seq range, batch range)
    "bert-base": ("bert-base-uncased.json", "BertForMaskedLM", "bert.encoder.layer", 32768, (64, 512), (1, 64)),
    "llama-1b": ("llama3.2-1b.json", "LlamaForCausalLM", "model.layers", 16384, (128, 2048), (1, 8)),
}
SMALL = {"bert-base": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                           vocab_size=1000),
         "llama-1b": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          head_dim=16, intermediate_size=128, vocab_size=1000, bos_token_id=1, eos_token_id=2)}
GRID_SHAPES = [("bert-base", 128, 8), ("bert-base", 128, 32), ("bert-base", 128, 64), ("bert-base", 512, 8),
               ("bert-base", 512, 16), ("llama-1b", 1024, 1), ("llama-1b", 1024, 4), ("llama-1b", 2048, 2),
               ("llama-1b", 2048, 4)]
MODES = ("single", "ddp", "fsdp")
ADAMW = dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
SHAPE_ARGS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_runtime", "cuda_driver", "ac2g")


# --------------------------------------------------------------------------- cases


def _case(model: str, mode: str, seq: int, batch: int, source: str, prefix: str = "") -> dict[str, Any]:
    return {"id": f"{prefix}{model}-{mode}-s{seq}-b{batch}", "model": model, "mode": mode, "seq": seq,
            "batch": batch, "source": source}


def grid(modes: list[str]) -> list[dict[str, Any]]:
    """GRID_SHAPES (most important first), each in every mode asked for."""
    return [_case(m, mode, s, b, "grid") for m, s, b in GRID_SHAPES for mode in modes]


def draw(seed: int, count: int, modes: list[str]) -> list[dict[str, Any]]:
    """``count`` random cases: model and mode uniform, seq and per-GPU batch log-uniform in the model's ranges,
    redrawn while batch x seq is above the model's tokens-per-GPU cap. Same seed, same cases on every rank."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []

    def log_uniform(lo: int, hi: int) -> int:
        return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))

    while len(out) < count:
        model = rng.choice(sorted(MODELS))
        cap, seq_range, batch_range = MODELS[model][3:]
        seq, batch, mode = log_uniform(*seq_range), log_uniform(*batch_range), rng.choice(modes)
        case = _case(model, mode, seq, batch, f"draw{seed}", prefix=f"d{seed}-")
        if batch * seq <= cap and case["id"] not in {c["id"] for c in out}:
            out.append(case)
    return out


def shrink(case: dict[str, Any]) -> dict[str, Any]:
    """``--small`` shapes (same id): per-GPU batch <= 2, seq / 32 (at least 8)."""
    return {**case, "batch": min(case["batch"], 2), "seq": max(8, case["seq"] // 32)}


# --------------------------------------------------------------------------- one training setup


def load_config(model: str, small: bool) -> Any:
    """The model's transformers config from the repo's JSON (``--small``: 2 layers, hidden 64, vocab 1000)."""
    from transformers import AutoConfig

    with open(os.path.join(CONFIG_DIR, MODELS[model][0])) as f:
        d = json.load(f)
    for key in ("torch_dtype", "dtype", "transformers_version"):  # weights stay fp32
        d.pop(key, None)
    if small:
        d.update(SMALL[model])
    return AutoConfig.for_model(d.pop("model_type"), attn_implementation="sdpa", **d)


def _layers(model: Any, path: str) -> Any:
    for name in path.split("."):
        model = getattr(model, name)
    return model


class Trainer:
    """A model, its inputs (built without collectives), then ``parallelize()``: the wrapper for the case's mode and
    the optimizer; ``step(i)`` is the measured step on batch ``i``."""

    _mesh: Any = None  # the FSDP2 device mesh, made once

    def __init__(self, case: dict[str, Any], d: Any, small: bool, n_batches: int) -> None:
        import transformers

        self.d, self.case = d, case
        self.dev_type = d.device.type
        config = load_config(case["model"], small)
        torch.manual_seed(0)
        with torch.device(d.device):
            model = getattr(transformers, MODELS[case["model"]][1])(config)
        model.train()
        self.params = sum(p.numel() for p in model.parameters())
        self.param_dtype = str(next(model.parameters()).dtype)
        self.dropout = {k: getattr(config, k) for k in ("hidden_dropout_prob", "attention_probs_dropout_prob",
                                                         "attention_dropout") if hasattr(config, k)}
        self.kwargs = {} if case["model"] == "bert-base" else {"use_cache": False}
        gen = torch.Generator().manual_seed(1 + d.rank)  # each rank its own data, as in data parallelism
        self.ids = [torch.randint(0, config.vocab_size, (case["batch"], case["seq"]), generator=gen).to(d.device)
                    for _ in range(n_batches)]
        self.model, self.parallel = model, "not wrapped yet"
        self.opt: Any = None
        self.optimizer, self.checked = "fused", False
        self.optimizer_note: str | None = None

    def parallelize(self) -> None:
        """Wrap the model for the case's mode (DDP and FSDP run collectives here), then make the optimizer."""
        self.model, self.parallel = self._wrap(self.model, MODELS[self.case["model"]][2])
        self.opt = self._adamw(fused=True)

    def _wrap(self, model: Any, layer_path: str) -> tuple[Any, str]:
        mode, d = self.case["mode"], self.d
        if mode == "single":
            return model, "none (one GPU)"
        if mode == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP

            ids = [d.local_rank] if d.cuda else None
            return (DDP(model, device_ids=ids, bucket_cap_mb=25, gradient_as_bucket_view=False),
                    "DDP(bucket_cap_mb=25, gradient_as_bucket_view=False, static_graph=False)")
        layers = _layers(model, layer_path)
        try:
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.fsdp import fully_shard
        except ImportError:  # FSDP2 missing: FSDP1 FULL_SHARD, one unit per layer
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
            from torch.distributed.fsdp.wrap import ModuleWrapPolicy

            return (FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD, use_orig_params=True,
                         auto_wrap_policy=ModuleWrapPolicy({type(layers[0])}), device_id=d.device if d.cuda else None),
                    "FSDP1 FULL_SHARD (one unit per layer + root, use_orig_params=True)")
        if Trainer._mesh is None:
            Trainer._mesh = init_device_mesh(self.dev_type, (d.world,))
        for layer in layers:
            fully_shard(layer, mesh=Trainer._mesh)
        fully_shard(model, mesh=Trainer._mesh)
        return model, "FSDP2 fully_shard (each layer, then root; reshard_after_forward=True; no MixedPrecisionPolicy)"

    def _adamw(self, fused: bool) -> Any:
        try:
            return torch.optim.AdamW(self.model.parameters(), **ADAMW, **({"fused": True} if fused else {"foreach": True}))
        except Exception:  # noqa: BLE001 - fused refused at construction: the first step falls back
            if not fused:
                raise
            return None

    def _opt_step(self) -> None:
        """opt.step(); the first time, a fused AdamW that fails is replaced by foreach=True (recorded)."""
        if self.checked:
            self.opt.step()
            return
        try:
            if self.opt is None:
                raise RuntimeError("AdamW(fused=True) refused the parameters")
            self.opt.step()
        except Exception as err:  # noqa: BLE001
            self.optimizer_note = f"fused failed, foreach used: {type(err).__name__}: {err}"[:300]
            self.opt, self.optimizer = self._adamw(fused=False), "foreach"
            self.opt.step()
        self.checked = True

    def step(self, i: int) -> None:
        if self.opt is not None:
            self.opt.zero_grad(set_to_none=True)
        ids = self.ids[i]
        with torch.autocast(self.dev_type, dtype=torch.bfloat16):
            loss = self.model(input_ids=ids, labels=ids, **self.kwargs).loss
        loss.backward()
        self._opt_step()


# --------------------------------------------------------------------------- profiling


stderr_to = comm._steps_module().stderr_to  # benchmarks/programs/steps.py's (a context manager)


def profile_step(tr: Trainer, i: int, path: str, tmp: str, max_bytes: int) -> None:
    """One step under torch.profiler (CPU + CUDA activity, record_shapes=True); the Chrome trace is written
    gzipped to ``path``, slimmed if above ``max_bytes`` (shape args dropped, then only GPU-side events kept;
    the top-level key "traceSlimmed" says which)."""
    P = torch.profiler.ProfilerActivity
    raw = os.path.join(tmp, "trace.json")
    with stderr_to(os.path.join(tmp, "profiler.stderr")):
        with torch.profiler.profile(activities=[P.CPU, P.CUDA] if tr.d.cuda else [P.CPU], record_shapes=True) as prof:
            tr.d.sync()
            tr.step(i)
            tr.d.sync()
        prof.export_chrome_trace(raw)
    del prof
    with open(raw, "rb") as f:
        data = f.read()
    os.remove(raw)
    blob = gzip.compress(data, compresslevel=6)
    for stage in ("no shape args", "GPU-side events only"):
        if len(blob) <= max_bytes:
            break
        trace = json.loads(data)
        for e in trace.get("traceEvents", []):
            for key in SHAPE_ARGS:
                (e.get("args") or {}).pop(key, None)
        if stage != "no shape args":
            trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("ph") == "M" or e.get("cat") in GPU_CATS]
        trace["traceSlimmed"] = stage
        data = json.dumps(trace).encode()
        blob = gzip.compress(data, compresslevel=6)
    with open(path, "wb") as f:
        f.write(blob)


def _uncovered_us(spans: list[tuple[float, float]], cover: list[tuple[float, float]]) -> float:
    """Total length of ``spans`` not covered by the union of ``cover`` (µs)."""
    merged: list[list[float]] = []
    for a, b in sorted(cover):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    total = 0.0
    for a, b in spans:
        covered = sum(max(0.0, min(b, y) - max(a, x)) for x, y in merged if x < b and y > a)
        total += (b - a) - covered
    return total


def summarize_trace(path: str) -> dict[str, Any]:
    """NCCL kernels (name contains "nccl"): count, GPU µs, µs overlapped by no compute kernel; all kernels'
    count and µs; the kernel span (first kernel start to last kernel end) of the step."""
    trace = trace_stats.load(path)
    s = trace_stats.summarize(trace)
    kernels = [e for e in trace.get("traceEvents", []) if isinstance(e, dict) and e.get("cat") == "kernel"]
    spans = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in kernels]
    is_nccl = ["nccl" in str(e.get("name", "")).lower() for e in kernels]
    nccl = [sp for sp, n in zip(spans, is_nccl) if n]
    compute = [sp for sp, n in zip(spans, is_nccl) if not n]
    return {"kernels": s["kernel_events"], "kernel_us": s["kernel_dur_us"], "span_us": s["kernel_span_us"],
            "nccl_kernels": len(nccl), "nccl_us": round(sum(b - a for a, b in nccl), 3),
            "nccl_exposed_us": round(_uncovered_us(nccl, compute), 3),
            "compute_us": round(sum(b - a for a, b in compute), 3), "kernel_streams": s["kernel_streams"],
            "cpu_op_events": s["cpu_op_events"], "slimmed": trace.get("traceSlimmed")}


# --------------------------------------------------------------------------- measuring one case


def measure(tr: Trainer, args: argparse.Namespace, collective: bool) -> dict[str, Any]:
    """Warm-up, then timed steps one at a time; with ``collective`` a barrier before each and the MAX over ranks."""
    d = tr.d
    for i in range(args.warmup):
        tr.step(i)
    d.sync()
    probe = comm._steps_module().launch_probe(torch) if d.cuda else None  # the host's speed now (predict(host_probe_us=))
    if probe is not None and collective:
        probe = d.max_all([probe])[0]  # the slowest rank's
    if d.cuda:
        torch.cuda.reset_peak_memory_stats()
    before = int(torch.cuda.memory_allocated()) if d.cuda else None
    dev_s, host_s, sync_s = [], [], []
    for k in range(args.steps):
        i = args.warmup + k
        d.sync()
        if collective:
            dist.barrier()
        if d.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        h0 = time.perf_counter()
        tr.step(i)
        h1 = time.perf_counter()
        if d.cuda:
            end.record()
            end.synchronize()
        h2 = time.perf_counter()
        dev_s.append(start.elapsed_time(end) / 1e3 if d.cuda else h2 - h0)
        host_s.append(h1 - h0)
        sync_s.append(h2 - h0)
    if collective:
        dev_s = d.max_all(dev_s)
    return {"seconds": statistics.median(dev_s), "steps_seconds": dev_s, "host_seconds": statistics.median(host_s),
            "host_sync_seconds": statistics.median(sync_s), "memory_before_bytes": before,
            "probe_us": round(probe * 1e6, 3) if probe is not None else None,
            "peak_memory_bytes": int(torch.cuda.max_memory_allocated()) if d.cuda else None}


class Runner:
    def __init__(self, args: argparse.Namespace, d: Any) -> None:
        self.args, self.d = args, d
        self.tmp = tempfile.mkdtemp(prefix=f"parallel_steps_r{d.rank}_")
        self.traces = os.path.join(args.out, "traces")

    def warm_profiler(self) -> None:
        """A throwaway profile, so profiler start-up is in no case's trace."""
        P = torch.profiler.ProfilerActivity
        x = torch.ones(64, 64, device=self.d.device)
        with stderr_to(os.path.join(self.tmp, "warm.stderr")):
            with torch.profiler.profile(activities=[P.CPU, P.CUDA] if self.d.cuda else [P.CPU]):
                (x @ x).sum()
                self.d.sync()

    def run_case(self, case: dict[str, Any]) -> dict[str, Any]:
        """Build, measure, trace one case on the ranks taking part; errors are recorded, never raised."""
        d, args = self.d, self.args
        collective = case["mode"] != "single"
        rec: dict[str, Any] = {**case, "world_size": d.world if collective else 1,
                               "global_batch": case["batch"] * (d.world if collective else 1)}
        t = time.monotonic()
        tr: Trainer | None = None
        try:
            build_error: Exception | None = None
            try:
                tr = Trainer(case, d, args.small, args.warmup + args.steps + 1)
            except Exception as e:  # noqa: BLE001 - OOM while building: every rank must learn it first
                build_error = e
            if collective and d.max_all([1.0 if build_error else 0.0])[0] > 0 and build_error is None:
                build_error = RuntimeError("the build failed on another rank")
            if build_error is not None:
                raise build_error
            assert tr is not None
            tr.parallelize()
            rec.update(params=tr.params, param_dtype=tr.param_dtype, parallel=tr.parallel, dropout=tr.dropout,
                       tokens_per_gpu=case["batch"] * case["seq"], build_s=round(time.monotonic() - t, 3))
            rec.update(measure(tr, args, collective))
            rec.update(optimizer=tr.optimizer, optimizer_note=tr.optimizer_note, status="ok")
        except Exception as e:  # noqa: BLE001 - one failure (OOM included) must not lose the other cases
            rec.update(status="error", error=f"{type(e).__name__}: {e}"[:1000],
                       traceback=traceback.format_exc()[-2500:])
        finally:
            tr = None
            gc.collect()
            if d.cuda:
                torch.cuda.empty_cache()
        rec["case_s"] = round(time.monotonic() - t, 3)
        return rec

    def trace_case(self, case: dict[str, Any]) -> dict[str, Any]:
        """The trace pass: build the case again, warm it up, profile one step (``trace``); errors are recorded."""
        d, args = self.d, self.args
        tr: Trainer | None = None
        try:
            build_error: Exception | None = None
            try:
                tr = Trainer(case, d, args.small, args.warmup + 1)
            except Exception as e:  # noqa: BLE001 - OOM while building: every rank must learn it first
                build_error = e
            if case["mode"] != "single" and d.max_all([1.0 if build_error else 0.0])[0] > 0 and build_error is None:
                build_error = RuntimeError("the build failed on another rank")
            if build_error is not None:
                raise build_error
            assert tr is not None
            tr.parallelize()
            for i in range(args.warmup):
                tr.step(i)
            d.sync()
            return self.trace(tr, case)
        except Exception as e:  # noqa: BLE001 - a failed trace keeps the case's timings
            return {"error": f"rank {d.rank}: {type(e).__name__}: {e}"[:500]}
        finally:
            tr = None
            gc.collect()
            if d.cuda:
                torch.cuda.empty_cache()

    def trace(self, tr: Trainer, case: dict[str, Any]) -> dict[str, Any]:
        """Profile one more step on ranks 0 and 1 (the others run it plain); rank 0 summarises the traces."""
        d = self.d
        ranks: Any = [0, 1] if case["mode"] != "single" and d.world > 1 else [0]
        i, out = len(tr.ids) - 1, {"ranks": ranks}
        path = os.path.join(self.traces, f"{case['id']}-rank{{}}.json.gz")
        if d.rank in ranks:
            os.makedirs(self.traces, exist_ok=True)
            if os.path.exists(path.format(d.rank)):  # an older run's trace must not pass for this one
                os.remove(path.format(d.rank))
            try:  # a failed profile must not keep this rank from the barrier below
                profile_step(tr, i, path.format(d.rank), self.tmp, int(self.args.trace_max_mb * 2**20))
            except Exception as err:  # noqa: BLE001
                out["error"] = f"rank {d.rank}: {type(err).__name__}: {err}"[:500]
        else:
            tr.step(i)
        if len(ranks) > 1:
            dist.barrier()  # rank 1's file is written
        for r in ranks if d.rank == 0 else []:
            if os.path.exists(path.format(r)):
                out[f"rank{r}"] = {"file": os.path.relpath(path.format(r), self.args.out),
                                   "bytes": os.path.getsize(path.format(r)), **summarize_trace(path.format(r))}
        return out


# --------------------------------------------------------------------------- main


def short(rec: dict[str, Any]) -> dict[str, Any]:
    """The stdout line of a case."""
    r0 = (rec.get("traces") or {}).get("rank0") or {}
    line = {"id": rec["id"], "status": rec.get("status"), "ms": rec.get("seconds"), "host_ms": rec.get("host_seconds"),
            "peak_mib": (rec.get("peak_memory_bytes") or 0) / 2**20 or None, "nccl_us": r0.get("nccl_us"),
            "nccl_exposed_us": r0.get("nccl_exposed_us"), "span_us": r0.get("span_us"), "opt": rec.get("optimizer"),
            "s": rec.get("case_s"), "t": round(comm.elapsed(), 1), "error": (rec.get("error") or "")[:160] or None}
    for key in ("ms", "host_ms"):
        if line[key] is not None:
            line[key] = line[key] * 1e3
    return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in line.items() if v is not None}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for parallel_steps.json and traces/")
    p.add_argument("--modes", default="single,ddp,fsdp", help="comma list of single, ddp, fsdp")
    p.add_argument("--only", default=None, metavar="REGEX", help="keep cases whose id matches (re.search)")
    p.add_argument("--draw", type=int, default=None, metavar="SEED", help="random cases instead of the grid")
    p.add_argument("--cases", type=int, default=20, help="cases for --draw (default 20)")
    p.add_argument("--small", action="store_true", help="tiny configs and shapes (the CPU smoke test)")
    p.add_argument("--steps", type=int, default=10, help="timed steps per case (default 10)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--no-traces", dest="traces", action="store_false", help="profile no step")
    p.add_argument("--trace-max-mb", type=float, default=3.0, help="slim a gzipped trace above this (default 3)")
    p.add_argument("--budget-s", type=float, default=280.0, help="start no case after this many seconds (default 280)")
    p.add_argument("--trace-budget-s", type=float, default=60.0,
                   help="trace no case once --budget-s plus this many seconds have passed (default 60)")
    args = p.parse_args(argv)
    args.mode_list = [m for m in args.modes.split(",") if m]
    if not args.mode_list or any(m not in MODES for m in args.mode_list):
        p.error(f"--modes takes a comma list of {', '.join(MODES)}")
    if args.steps < 1 or args.warmup < 1:
        p.error("--steps and --warmup must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    d = comm.DistInfo()
    if not d.cuda and not args.small:
        print("parallel_steps.py: no CUDA; use --small for the CPU smoke test", file=sys.stderr)
        return 2
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
    except Exception:  # noqa: BLE001
        pass
    wait_group, wait_how = None, "the default group"
    if d.backend != "gloo":
        try:  # idle ranks wait on the CPU, not in a spinning NCCL kernel
            wait_group, wait_how = dist.new_group(backend="gloo"), "a gloo group"
        except Exception:  # noqa: BLE001
            pass
    cases = draw(args.draw, args.cases, args.mode_list) if args.draw is not None else grid(args.mode_list)
    if args.only:
        cases = [c for c in cases if re.search(args.only, c["id"])]
    if args.small:
        cases = [shrink(c) for c in cases]
    path, doc = os.path.join(args.out, "parallel_steps.json"), {}
    if d.rank == 0:
        import transformers

        os.makedirs(args.out, exist_ok=True)
        env = {**comm.environment(d), "transformers": transformers.__version__}
        doc = {"schema": 1, "command": sys.argv, "small": args.small, "environment": env,
               "settings": {"warmup": args.warmup, "steps": args.steps, "budget_s": args.budget_s, "adamw": ADAMW,
                            "amp": "fp32 weights, torch.autocast(bf16) around forward + loss",
                            "timing": "per step: synchronize, barrier (ddp/fsdp), CUDA events (perf_counter on CPU) "
                                      "around zero_grad+forward+backward+opt.step; MAX over ranks; median",
                            "single": f"rank 0 alone (world_size 1); the other ranks wait at a barrier of {wait_how}"},
               "cases": [{**c, "status": "pending"} for c in cases]}
        comm.write_json(path, doc)
    runner = Runner(args, d)
    for i, case in enumerate(cases):
        if d.rank0_says(comm.elapsed() > args.budget_s):
            rec = {**case, "status": "skipped (budget)"}
        elif case["mode"] == "single" and d.rank != 0:
            rec = {}
        else:
            rec = runner.run_case(case)
        if case["mode"] == "single" and d.world > 1:
            dist.barrier(group=wait_group)
        if d.rank == 0:
            doc["cases"][i] = rec
            doc["environment"]["optimizers_used"] = sorted({c["optimizer"] for c in doc["cases"] if c.get("optimizer")})
            doc["environment"]["parallel_used"] = sorted({c["parallel"] for c in doc["cases"] if c.get("parallel")})
            doc["total_s"] = round(comm.elapsed(), 1)
            comm.write_json(path, doc)
            print(json.dumps(short(rec), separators=(",", ":")), flush=True)
    traced = [i for i, c in enumerate(cases) if args.traces and c["source"] == "grid"]
    if traced and d.rank in (0, 1):
        runner.warm_profiler()  # after every timing (a profiler session slows later launches)
    for i in traced:
        if d.rank0_says(comm.elapsed() > args.budget_s + args.trace_budget_s):
            break
        if not d.rank0_says(d.rank == 0 and doc["cases"][i].get("status") == "ok"):
            continue
        single = cases[i]["mode"] == "single"
        out = runner.trace_case(cases[i]) if not single or d.rank == 0 else {}
        if single and d.world > 1:
            dist.barrier(group=wait_group)
        if d.rank == 0:
            doc["cases"][i]["traces"] = out
            comm.write_json(path, doc)
    if d.rank == 0:
        counts: dict[str, int] = {}
        for c in doc["cases"]:
            counts[c["status"]] = counts.get(c["status"], 0) + 1
        doc["summary"], doc["total_s"] = counts, round(comm.elapsed(), 1)
        comm.write_json(path, doc)
        print(json.dumps({"done": counts, "total_s": doc["total_s"]}), flush=True)
    shutil.rmtree(runner.tmp, ignore_errors=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
