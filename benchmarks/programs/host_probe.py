#!/usr/bin/env python3
"""Why does the same eager program take the CPU 6 ms at one batch and 13 ms at another? A host-time probe.

    python benchmarks/programs/host_probe.py [--family gpt2] [--mode prefill] [--seq 92] [--batches 1,2,3,4,5,6,8]

Builds one model (steps.py's configs), then for each batch: warm-up steps, the median host time
(``time.perf_counter`` around the step call) of 10 steps, the CUDA API calls of one profiled step that
took the most CPU time (``torch.profiler``, CPU only: cudaMalloc, cudaMemcpy, synchronizations), and the
count of launches. One JSON line per batch on stdout. Needs torch and transformers; never imports solkit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import steps  # noqa: E402  (this folder's step builders)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", default="gpt2")
    p.add_argument("--mode", default="prefill")
    p.add_argument("--seq", type=int, default=92)
    p.add_argument("--context", type=int, default=None)
    p.add_argument("--batches", default="1,2,3,4,5,6,8")
    args = p.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    for batch in (int(b) for b in args.batches.split(",")):
        case = steps._case(args.family, args.mode, batch, seq=args.seq if args.mode != "decode" else None,
                           context=args.context)
        bench = steps.build(torch, case, "cuda", False)
        for _ in range(4):
            bench.reset()
            bench.step()
        torch.cuda.synchronize()
        host = []
        for _ in range(10):
            bench.reset()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            bench.step()
            host.append((time.perf_counter() - t0) * 1e3)
            torch.cuda.synchronize()
        bench.reset()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            bench.step()
            torch.cuda.synchronize()
        api: Counter[str] = Counter()
        api_us: Counter[str] = Counter()
        ops_us: Counter[str] = Counter()
        launches = 0
        for e in prof.events():
            if e.device_type.name == "CUDA":
                launches += 1
                continue
            if e.name.startswith("cuda"):
                api[e.name] += 1
                api_us[e.name] += e.cpu_time_total
            else:
                ops_us[e.name] += e.self_cpu_time_total
        print(json.dumps({"batch": batch, "seq": args.seq, "host_ms": round(statistics.median(host), 3),
                          "host_all": [round(h, 2) for h in host], "gpu_events": launches,
                          "api": {k: [api[k], round(api_us[k], 1)] for k in api},
                          "top_ops_us": [[k, round(v, 1)] for k, v in ops_us.most_common(12)]}), flush=True)
        del bench
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
