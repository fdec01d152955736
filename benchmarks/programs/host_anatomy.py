#!/usr/bin/env python3
"""Where a step's host time goes, op by op: one profiled step per case, beside its unprofiled host time.

    python benchmarks/programs/host_anatomy.py --out "$OUT/host_anatomy.json"        # on a GPU (about a minute)

Each case is built as ``steps.py`` builds it (its ``build``: the same configs, dtypes and calls), warmed up, its
host time per step taken unprofiled (``time.perf_counter`` around ``step()``, median of ``--steps``, a sync before
each), then ``--profiled`` steps run under ``torch.profiler`` (CPU and CUDA). Per step, the profiler's ATen ops
(``aten::`` events with no ``aten::`` parent: what the Python called) with their count and mean CPU time (their
nested calls and CUDA runtime calls inside), and every CUDA runtime call by name with the outermost ATen op it ran
in: where the memcpys, syncs and launches come from. NB: the profiler adds its own few microseconds per op; read
the ratios between ops. NB: the "unprofiled" host time of a case is taken after a warm-up profiler session and the
earlier cases' profiled steps, which slow later launches (steps.py profiles after timing for this reason; the first
records' probes read 7.8-11.9 us against the fit draws' 5.0-10.2): it is not a step's clean host time. In a training case
the backward's ops (the autograd engine's thread) count as top-level ops too. Never imports solkit.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steps  # noqa: E402 - the steps' own builders and probe

#: (family, mode, batch, seq or context): captured-draw shapes, CPU-bound, one of each kind of program
CASES = (("mixtral", "prefill", 4, 181), ("mixtral", "decode", 3, 347), ("mistral", "decode", 5, 297),
         ("mistral", "prefill", 7, 384), ("qwen3", "decode", 4, 500), ("bert-large", "infer", 2, 128),
         ("gpt2-medium", "decode", 4, 300), ("mixtral", "train", 1, 346))


def outermost(evt: Any) -> Any:
    """The outermost ``aten::`` op an event ran inside (None: called from Python directly)."""
    top = None
    p = evt.cpu_parent
    while p is not None:
        if p.name.startswith("aten::"):
            top = p
        p = p.cpu_parent
    return top


def sync(torch: Any) -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def anatomy(torch: Any, bench: Any, profiled: int) -> dict[str, Any]:
    """The per-step ATen ops and CUDA runtime calls of ``profiled`` profiled steps of ``bench``."""
    P = torch.profiler.ProfilerActivity
    with torch.profiler.profile(activities=[P.CPU, P.CUDA] if torch.cuda.is_available() else [P.CPU]) as prof:
        for _ in range(profiled):
            bench.reset()
            sync(torch)
            bench.step()
            sync(torch)
    ops: dict[str, list[float]] = collections.defaultdict(list)
    runtime: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CPU:
            continue
        if e.name.startswith("aten::") and outermost(e) is None:
            ops[e.name].append(e.cpu_time_total)
        elif e.name.startswith("cu"):  # the CUDA runtime's and driver's calls
            top = outermost(e)
            runtime[e.name][top.name if top is not None else "(python)"] += 1
    return {"ops": {k: {"calls": round(len(v) / profiled, 2), "cpu_us": round(sum(v) / len(v), 2)}
                    for k, v in sorted(ops.items(), key=lambda kv: -sum(kv[1]))},
            "runtime": {k: {p: round(n / profiled, 2) for p, n in c.most_common()} for k, c in runtime.items()}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--profiled", type=int, default=3)
    p.add_argument("--small", action="store_true", help="tiny configs on the CPU: a check of the script, not a reading")
    args = p.parse_args()
    import torch
    import transformers

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    steps.Runner(torch, argparse.Namespace(profile_cpu=True, no_profile=False), dev, "/tmp").warm_profiler()
    doc: dict[str, Any] = {"schema": 1, "command": "benchmarks/programs/host_anatomy.py", "torch": torch.__version__,
                           "transformers": transformers.__version__,
                           "gpu": torch.cuda.get_device_name() if dev == "cuda" else "cpu", "cases": []}
    for family, mode, batch, length in CASES:
        case = steps._case(family, mode, batch, context=length) if mode == "decode" else \
            steps._case(family, mode, batch, seq=length)
        rec: dict[str, Any] = {"id": case["id"]}
        bench = None
        try:
            bench = steps.build(torch, case, dev, args.small)
            for _ in range(3):
                bench.reset()
                bench.step()
            sync(torch)
            rec["probe_us"] = round(steps.launch_probe(torch) * 1e6, 3) if dev == "cuda" else None
            host = []
            for _ in range(args.steps):
                bench.reset()
                sync(torch)
                t0 = time.perf_counter()
                bench.step()
                host.append(time.perf_counter() - t0)
                sync(torch)
            rec["host_ms"] = round(statistics.median(host) * 1e3, 4)
            rec.update(anatomy(torch, bench, args.profiled))
        except Exception as err:  # noqa: BLE001 - record why, go on
            rec["error"] = f"{type(err).__name__}: {err}"[:300]
        doc["cases"].append(rec)
        print(json.dumps({"id": rec["id"], "host_ms": rec.get("host_ms"), "probe_us": rec.get("probe_us"),
                          "error": rec.get("error"), "memcpy": rec.get("runtime", {}).get("cudaMemcpyAsync")}),
              flush=True)
        del bench
        if dev == "cuda":
            torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
