#!/usr/bin/env python3
"""What one decode step inside Hugging Face ``generate`` does (eager or static cache): launches, ops, syncs, Python.

    python benchmarks/serving/profile_decode.py --out "$OUT"            # on the H200 (about 1 minute)
    python benchmarks/serving/profile_decode.py --out /tmp/p --small    # anywhere: tiny configs, CPU if no CUDA

Per family (``generate.py``'s models: GPT-2 124M, Llama-3.2-1B dims, Qwen2.5-0.5B; bf16, random weights, no EOS),
engine ``--engine`` (``hf-eager``, the default ``DynamicCache``; or ``hf-static``, ``cache_implementation="static"``
as ``generate.py`` runs it: ``torch._dynamo.reset()`` before each model's first call, one more warmup call to record
its CUDA graphs), batch ``--batch``, prompt ``--prompt``:

1. timing, before any profiler session in this process (one session slows every later launch of the process):
   TTFT = median of ``--repeats`` CUDA-event-timed ``generate(max_new_tokens=1)``, T_N likewise for
   ``max_new_tokens=N`` (``--tokens``), TPOT = (T_N - TTFT) / (N - 1), after warmup calls; the same for the family
   with its layers cut to ``--few-layers`` (the host time per layer is the TPOT difference over the layers removed);
   a launch probe (2,000 small ``torch.add``) before each family;
2. counts per decode step: ``torch.profiler`` (CPU and CUDA) around ``generate(max_new_tokens=1)`` and around
   ``generate(max_new_tokens=1 + K)`` (``--steps`` K); each count per step is (count(1 + K) - count(1)) / K: GPU
   kernels by name (count and device time), CUDA runtime calls (launches, copies, synchronisations) by name,
   ``aten::`` ops (all, and the top-level ones: no ``aten::`` parent), the kernels' summed device time;
3. Python per decode step: ``sys.setprofile`` counting Python function calls (and C calls) by function over the same
   two calls, differenced likewise.

One JSON document ``DIR/profile.json``; one JSON line per family to stdout. Needs torch and transformers; never
imports solkit.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib.util
import json
import os
import statistics
import sys
import time
from collections import Counter
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, f"{name}.py"))
    if spec is None or spec.loader is None:
        raise ImportError(name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _load("generate")
steps = gen.steps

RUNTIME = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx", "cudaMemcpyAsync",
           "cudaMemcpy", "cudaMemsetAsync", "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
           "cudaStreamWaitEvent", "cudaEventRecord", "cudaStreamIsCapturing", "cudaGraphLaunch", "cudaMalloc",
           "cudaFree", "cudaHostAlloc", "cudaLaunchCooperativeKernel")
LAYER_KEYS = ("num_hidden_layers", "n_layer")


def few_layers(config: Any, layers: int) -> Any:
    """The config with its layers cut to ``layers`` (and its per-layer lists cut alike)."""
    cfg = copy.deepcopy(config)
    for key in LAYER_KEYS:
        if hasattr(cfg, key):
            setattr(cfg, key, layers)
    if getattr(cfg, "layer_types", None):
        cfg.layer_types = list(cfg.layer_types)[:layers]
    return cfg


def build(torch: Any, family: str, dev: str, small: bool, layers: int | None) -> tuple[Any, int]:
    """generate.py's model of the family (its layers cut to ``layers`` where given), and its layer count."""
    model, _ = gen.build(torch, family, dev, small, None if layers is None else lambda c: few_layers(c, layers))
    config = model.config
    return model, int(next(getattr(config, k) for k in LAYER_KEYS if hasattr(config, k)))


def caller(torch: Any, model: Any, batch: int, prompt: int, dev: str, engine: str = "hf-eager") -> Any:
    gen_ = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt), generator=gen_).to(dev)
    kw: dict[str, Any] = {"attention_mask": torch.ones_like(ids), "do_sample": False}
    if engine == "hf-static":
        kw["cache_implementation"] = "static"

    def call(tokens: int) -> Any:
        with torch.inference_mode():
            return model.generate(ids, max_new_tokens=tokens, min_new_tokens=tokens, **kw)
    return call


def timing(torch: Any, call: Any, tokens: int, repeats: int, dev: str, engine: str = "hf-eager") -> dict[str, Any]:
    if engine == "hf-static":
        torch._dynamo.reset()  # every model compiles anew, as generate.py's cases do
        call(tokens)
    call(tokens)
    call(tokens)
    call(1)
    one = [gen.timed(torch, lambda: call(1), dev) for _ in range(repeats)]
    full = [gen.timed(torch, lambda: call(tokens), dev) for _ in range(repeats)]
    ttft, t_n = statistics.median(one), statistics.median(full)
    return {"ttft_s": ttft, "t_n_s": t_n, "tpot_s": (t_n - ttft) / (tokens - 1), "ttft_all_s": one, "t_n_all_s": full}


def profiled(torch: Any, call: Any, tokens: int, dev: str) -> dict[str, Any]:
    """Counts of one profiled ``call(tokens)``: kernels, runtime calls, aten ops (all, top-level), kernel time."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    if dev == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    with profile(activities=acts) as prof:
        call(tokens)
        if dev == "cuda":
            torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    kernels: Counter[str] = Counter()
    kernel_time: Counter[str] = Counter()
    runtime: Counter[str] = Counter()
    aten: Counter[str] = Counter()
    top: Counter[str] = Counter()
    kernel_us = 0.0
    aten_top_us = 0.0
    for ev in prof.events():
        dt = str(ev.device_type)
        if dt.endswith("CUDA"):
            kernels[ev.name] += 1
            kernel_time[ev.name] += ev.time_range.elapsed_us()
            kernel_us += ev.time_range.elapsed_us()
            continue
        if ev.name in RUNTIME or ev.name.startswith(("cuda", "cu")) and not ev.name.startswith("cudnn"):
            runtime[ev.name] += 1
            continue
        if ev.name.startswith("aten::"):
            aten[ev.name] += 1
            parent = ev.cpu_parent
            while parent is not None and not parent.name.startswith("aten::"):
                parent = parent.cpu_parent
            if parent is None:
                top[ev.name] += 1
                aten_top_us += ev.time_range.elapsed_us()
    return {"wall_s": wall, "kernels": dict(kernels), "kernel_time_us": dict(kernel_time), "runtime": dict(runtime),
            "aten": dict(aten),
            "aten_top": dict(top), "kernel_us": kernel_us, "aten_top_us": aten_top_us}


def pycalls(call: Any, tokens: int) -> dict[str, Any]:
    """Python function calls (and C calls) by function during ``call(tokens)``, with sys.setprofile."""
    py: Counter[str] = Counter()
    cc: Counter[str] = Counter()

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            py[f"{os.path.basename(code.co_filename)}:{code.co_name}"] += 1
        elif event == "c_call":
            cc[getattr(arg, "__qualname__", None) or getattr(arg, "__name__", "?")] += 1

    sys.setprofile(hook)
    try:
        call(tokens)
    finally:
        sys.setprofile(None)
    return {"py": dict(py), "c": dict(cc)}


def per_step(a: dict[str, Any], b: dict[str, Any], k: int, keep: int = 60) -> dict[str, Any]:
    """(b - a) / k for each key of two count dicts, largest first, the total too."""
    keys = set(a) | set(b)
    diff = {key: (b.get(key, 0) - a.get(key, 0)) / k for key in keys}
    ranked = sorted(diff.items(), key=lambda kv: -abs(kv[1]))
    return {"total": sum(diff.values()), "distinct": sum(1 for v in diff.values() if v), "top": dict(ranked[:keep])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--families", default="gpt2,llama,qwen2")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=33)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--few-layers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--engine", choices=("hf-eager", "hf-static"), default="hf-eager")
    args = ap.parse_args(argv)
    import torch

    os.makedirs(args.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    b, p, n = (min(args.batch, 2), 16, 8) if args.small else (args.batch, args.prompt, args.tokens)
    doc: dict[str, Any] = {"protocol": __doc__, "engine": args.engine, "batch": b, "prompt": p, "tokens": n,
                           "steps": args.steps,
                           "environment": steps.environment(torch, dev), "families": {}}
    fams = args.families.split(",")
    models: dict[str, Any] = {}

    def save() -> None:
        with open(os.path.join(args.out, "profile.json"), "w") as f:
            json.dump(doc, f, indent=1, default=str)

    for fam in fams:  # 1. timing, before any profiler session
        rec: dict[str, Any] = {}
        for label, layers in (("few", 1 if args.small else args.few_layers), ("full", None)):
            model, count = build(torch, fam, dev, args.small, layers)
            if dev == "cuda":
                rec[f"{label}_probe_us"] = steps.launch_probe(torch) * 1e6
            rec[label] = {"layers": count, **timing(torch, caller(torch, model, b, p, dev, args.engine), n, args.repeats,
                                                    dev, args.engine)}
            if label == "full":
                models[fam] = model
            else:
                del model
                gc.collect()
                if dev == "cuda":
                    torch.cuda.empty_cache()
        few, full = rec["few"], rec["full"]
        rec["tpot_per_layer_s"] = (full["tpot_s"] - few["tpot_s"]) / (full["layers"] - few["layers"])
        rec["tpot_layer0_s"] = few["tpot_s"] - few["layers"] * rec["tpot_per_layer_s"]
        doc["families"][fam] = rec
        print(json.dumps({"family": fam, "phase": "timing", "tpot_full_ms": full["tpot_s"] * 1e3,
                          "tpot_few_ms": few["tpot_s"] * 1e3, "per_layer_us": rec["tpot_per_layer_s"] * 1e6,
                          "layer0_us": rec["tpot_layer0_s"] * 1e6}), flush=True)
        save()
    for fam in fams:  # 2. and 3. counts per decode step
        rec = doc["families"][fam]
        call = caller(torch, models[fam], b, p, dev, args.engine)
        call(1 + args.steps)
        if args.engine == "hf-static":  # compiled anew after the other models' resets: record its graphs again
            call(1 + args.steps)
            call(1)
        one, more = profiled(torch, call, 1, dev), profiled(torch, call, 1 + args.steps, dev)
        k = args.steps
        rec["profile"] = {"wall_per_step_s": (more["wall_s"] - one["wall_s"]) / k,
                          "kernel_us_per_step": (more["kernel_us"] - one["kernel_us"]) / k,
                          "aten_top_us_per_step": (more["aten_top_us"] - one["aten_top_us"]) / k,
                          **{key: per_step(one[key], more[key], k)
                             for key in ("kernels", "kernel_time_us", "runtime", "aten", "aten_top")},
                          "first_call": {key: sum(one[key].values()) for key in ("kernels", "runtime", "aten")}}
        a, c = pycalls(call, 1), pycalls(call, 1 + k)
        rec["python"] = {"py": per_step(a["py"], c["py"], k, 80), "c": per_step(a["c"], c["c"], k, 40)}
        pr = rec["profile"]
        print(json.dumps({"family": fam, "phase": "profile", "kernels": pr["kernels"]["total"],
                          "launch_calls": sum(v for key, v in pr["runtime"]["top"].items() if "aunch" in key),
                          "syncs": {key: v for key, v in pr["runtime"]["top"].items() if "ynchron" in key or "emcpy" in key},
                          "aten": pr["aten"]["total"], "aten_top": pr["aten_top"]["total"],
                          "kernel_us": pr["kernel_us_per_step"], "py_calls": rec["python"]["py"]["total"],
                          "c_calls": rec["python"]["c"]["total"]}), flush=True)
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
