#!/usr/bin/env python3
"""Where does the host time of a CPU-bound eager step vary, and can a one-second probe track it? An experiment.

    python benchmarks/programs/host_noise.py [--rounds 12] [--out host_noise.jsonl]

Runs one child process per configuration (``plain``; ``pinned``: the process bound to one CPU with
``os.sched_setaffinity``; ``profiled``: after one ``torch.profiler`` session with CUDA activity, as
``steps.py`` runs; ``pinned+profiled``). Each child builds four CPU-bound cases (steps.py's models),
then for ``--rounds`` rounds, for each case: a launch probe (the median host time per launch of
2,000 small ``torch.add`` launches, in 5 repeats) and a block of 10 steps (the median host time,
``time.perf_counter`` around the step call). One JSON line per (configuration, round, case) on
stdout and in ``--out``: how host time drifts within a process, between configurations, and
whether the probe moves with it. Needs torch, transformers and torchvision; never imports solkit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CONFIGS = ("plain", "pinned", "profiled", "pinned+profiled")
CASES = (("gpt2", "prefill", 4, {"seq": 92}), ("llama", "decode", 8, {"context": 512}),
         ("bert", "train", 8, {"seq": 128}), ("resnet50", "infer", 1, {"image": 224}))


def child(config: str, rounds: int) -> int:
    """One configuration: build the cases, then rounds of (probe, block of steps) per case; JSON lines on stdout."""
    import torch

    import steps

    if "pinned" in config:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[len(cpus) // 2]})
    benches = []
    for family, mode, batch, sizes in CASES:
        case = steps._case(family, mode, batch, **sizes)
        bench = steps.build(torch, case, "cuda", False)
        for _ in range(4 + bench.extra_warmup):
            bench.reset()
            bench.step()
        torch.cuda.synchronize()
        benches.append((case["id"], bench))
    if "profiled" in config:
        x = torch.ones(64, 64, device="cuda")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]):
            (x @ x).sum()
            torch.cuda.synchronize()
    start = time.monotonic()
    for r in range(rounds):
        for case_id, bench in benches:
            probe = steps.launch_probe(torch)
            host, wall = [], []
            for _ in range(10):
                bench.reset()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                bench.step()
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                host.append((t1 - t0) * 1e3)
                wall.append((time.perf_counter() - t0) * 1e3)
            print(json.dumps({"config": config, "round": r, "case": case_id, "t_s": round(time.monotonic() - start, 3),
                              "probe_us": round(probe * 1e6, 3), "host_ms": round(statistics.median(host), 3),
                              "host_min_ms": round(min(host), 3), "wall_ms": round(statistics.median(wall), 3),
                              "cpu": sorted(os.sched_getaffinity(0))[:4]}), flush=True)
            time.sleep(0.1)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--out", default="host_noise.jsonl")
    p.add_argument("--child", choices=CONFIGS, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.rounds)
    with open(args.out, "w") as out:
        for config in CONFIGS:
            r = subprocess.run([sys.executable, __file__, "--child", config, "--rounds", str(args.rounds)],
                               capture_output=True, text=True)
            for line in r.stdout.splitlines():
                if line.startswith("{"):
                    out.write(line + "\n")
                    print(line, flush=True)
            if r.returncode:
                print(json.dumps({"config": config, "error": r.stderr[-2000:]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
