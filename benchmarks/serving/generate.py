#!/usr/bin/env python3
"""Time Hugging Face ``generate`` (greedy, bf16, random weights) for two engines: TTFT and TPOT.

    python benchmarks/serving/generate.py --draw 3001 --out "$OUT"        # on the H200 (about 5 minutes)
    python benchmarks/serving/generate.py --draw 3001 --out /tmp/g --small  # anywhere: tiny configs, CPU if no CUDA

Engines:

- ``hf-eager``: ``model.generate(ids, max_new_tokens=N, do_sample=False)`` with the default ``DynamicCache``;
- ``hf-static``: the same with ``cache_implementation="static"``: transformers preallocates a cache of
  prompt + N tokens and compiles the decode step (``torch.compile``, mode "reduce-overhead": CUDA graphs);
  ``torch._dynamo.reset()`` before each case (every shape compiles anew, as a user's first call does).

Per case: TTFT = the median time of ``generate(max_new_tokens=1)``; T_N = the median time of
``generate(max_new_tokens=N)``; TPOT = (T_N - TTFT) / (N - 1). Each call is timed with CUDA events around it
(``torch.cuda.synchronize()`` before), after untimed warmup calls of the same shape (the static engine's first
calls compile and record its graphs). NB: hf-static's TTFT call preallocates prompt + 1 tokens, not prompt + N.
The model's ``generation_config`` has no EOS token (random weights would stop at random), so every call makes
exactly N tokens. Models are built from configs with random weights (``benchmarks/programs/steps.py``'s
``hf_config``: GPT-2 124M, Llama-3.2-1B dims, Qwen2.5-0.5B's config.json). A launch probe (2,000 small
``torch.add``, median of 5) records the host's speed, at the start and again before each case (``case_probe_us``),
and (from seed 3008 on) just before the timed TTFT calls and just before the timed calls of all N tokens
(``ttft_probe_us``, ``t_n_probe_us``: after the warmup, which compiles the static engine's step).
``--fresh-process hf-static`` times each case of those engines in a child process of its own (this script with
``--only`` its id): in one process a static case's TPOT moves by 0.60-1.25x with the cases compiled before it
(``data/h200_serving_static_process_record.json``), while a user's server compiles one model. ``DIR/serving.json`` is
rewritten after every case; one JSON line per case goes to stdout. Needs torch and transformers; never imports solkit.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import random
import re
import statistics
import sys
import time
import traceback
from typing import Any, Callable

T0 = time.monotonic()
HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = os.path.normpath(os.path.join(HERE, os.pardir, "programs", "steps.py"))


def _load_steps() -> Any:
    spec = importlib.util.spec_from_file_location("steps", STEPS)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {STEPS}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


steps = _load_steps()

ENGINES = ("hf-eager", "hf-static")
#: the declared space: per family, log-uniform integer ranges of the batch, the prompt and the output tokens
#: (GPT-2's 1,024 learned positions bound prompt + output); engines drawn uniformly
SPACE: dict[str, dict[str, tuple[int, int]]] = {
    "gpt2": {"batch": (1, 32), "prompt": (32, 768), "output": (16, 128)},
    "llama": {"batch": (1, 32), "prompt": (32, 2048), "output": (16, 128)},
    "qwen2": {"batch": (1, 32), "prompt": (32, 2048), "output": (16, 128)},
}
#: at most this many hf-static cases per draw (each compiles for tens of seconds)
STATIC_CASES = 5


def elapsed() -> float:
    return time.monotonic() - T0


def log(msg: str) -> None:
    print(f"[{elapsed():6.1f}s] {msg}", file=sys.stderr, flush=True)


def draw(seed: int, count: int, static_cases: int = STATIC_CASES) -> list[dict[str, Any]]:
    """``count`` cases drawn at random (seeded): family and engine uniformly, sizes log-uniform; at most
    ``static_cases`` static ones; ordered so each (family, engine) comes early (a budget cut keeps coverage)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    while len(out) < count:
        family = sorted(SPACE)[rng.randrange(len(SPACE))]
        engine = ENGINES[rng.randrange(len(ENGINES))]
        sizes = {k: int(round(math.exp(rng.uniform(math.log(lo), math.log(hi))))) for k, (lo, hi) in SPACE[family].items()}
        if engine == "hf-static" and sum(c["engine"] == engine for c in out) >= static_cases:
            continue
        case = {"id": f"d{seed}-{family}-{engine}-b{sizes['batch']}-p{sizes['prompt']}-o{sizes['output']}",
                "family": family, "engine": engine, **sizes}
        if case["id"] not in {c["id"] for c in out}:
            out.append(case)
    seen: set[tuple[str, str]] = set()
    first, rest = [], []
    for c in out:
        key = (c["family"], c["engine"])
        (rest if key in seen else first).append(c)
        seen.add(key)
    return first + rest


def build(torch: Any, family: str, dev: str, small: bool,
          reshape: Callable[[Any], Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """The family's causal LM in bf16, random weights (seed 0), with no EOS token (``reshape``: a change to its config
    first, such as fewer layers)."""
    config, cls = steps.hf_config("qwen2" if family == "qwen2" else family, small)
    if reshape is not None:
        config = reshape(config)
    torch.manual_seed(0)
    with torch.device(dev):
        model = cls(config)
    model = model.to(dev, torch.bfloat16).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    info = {"params": sum(p.numel() for p in model.parameters()), "hf_config": json.loads(config.to_json_string(
        use_diff=False)), "model_class": f"transformers.{type(model).__name__}"}
    return model, info


def timed(torch: Any, fn: Any, dev: str) -> float:
    if dev != "cuda":
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3


def measure(torch: Any, model: Any, case: dict[str, Any], dev: str, repeats: int, small: bool,
            probe: Callable[[], float] | None = None) -> dict[str, Any]:
    """One case's TTFT and TPOT; ``probe`` (seconds per small launch), where given, is read just before the timed
    TTFT calls and again just before the timed calls of all N tokens (``ttft_probe_us``, ``t_n_probe_us``)."""
    b, p, n = case["batch"], case["prompt"], case["output"]
    if small:
        b, p, n = min(b, 2), max(8, p // 32), max(4, n // 8)
    vocab = model.config.vocab_size
    gen = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, vocab, (b, p), generator=gen).to(dev)
    kw: dict[str, Any] = {"do_sample": False, "attention_mask": torch.ones_like(ids)}
    if case["engine"] == "hf-static":
        kw["cache_implementation"] = "static"
        torch._dynamo.reset()

    def call(tokens: int) -> Any:
        with torch.inference_mode():
            return model.generate(ids, max_new_tokens=tokens, min_new_tokens=tokens, **kw)

    t_warm = time.monotonic()
    out = call(n)  # warmup (the static engine compiles here, and records its graphs on the next calls)
    made = int(out.shape[1] - p)
    call(n)
    if case["engine"] == "hf-static":
        call(n)
    call(1)
    warm_s = time.monotonic() - t_warm
    ttft_probe = probe() if probe is not None else None
    one = [timed(torch, lambda: call(1), dev) for _ in range(repeats)]
    t_n_probe = probe() if probe is not None else None
    full = [timed(torch, lambda: call(n), dev) for _ in range(repeats)]
    ttft, t_n = statistics.median(one), statistics.median(full)
    rec: dict[str, Any] = {"batch": b, "prompt": p, "output": n, "tokens_made": made, "ttft_s": ttft,
                           "t_n_s": t_n, "tpot_s": (t_n - ttft) / (n - 1), "ttft_all_s": one, "t_n_all_s": full,
                           "warmup_s": warm_s, "ttft_probe_us": ttft_probe and ttft_probe * 1e6,
                           "t_n_probe_us": t_n_probe and t_n_probe * 1e6}
    if case["engine"] == "hf-static":
        try:
            counters = torch._dynamo.utils.counters
            rec["dynamo"] = {"unique_graphs": int(counters["stats"].get("unique_graphs", 0)),
                             "calls_captured": int(counters["stats"].get("calls_captured", 0))}
        except Exception as err:  # noqa: BLE001 - a fact to record
            rec["dynamo"] = f"unavailable: {err}"
    if dev == "cuda":
        rec["max_memory_bytes"] = int(torch.cuda.max_memory_allocated())
    return rec


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--draw", type=int, required=True, help="the seed of the random draw")
    ap.add_argument("--count", type=int, default=18)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=330.0)
    ap.add_argument("--static-cases", type=int, default=STATIC_CASES,
                    help="at most this many hf-static cases (5 for the seeds 3001 and 3002)")
    ap.add_argument("--only", default=None, metavar="REGEX",
                    help="time only the drawn cases whose id matches (re.search, unanchored: '^ID$' for one); the "
                         "others are recorded as skipped")
    ap.add_argument("--fresh-process", default="", metavar="ENGINES",
                    help="comma-separated engines (hf-eager, hf-static) whose cases each run in a fresh Python process")
    ap.add_argument("--small", action="store_true")
    args = ap.parse_args(argv)
    fresh = [e for e in args.fresh_process.split(",") if e]
    if any(e not in ENGINES for e in fresh):
        ap.error(f"--fresh-process takes engines of {', '.join(ENGINES)}, got {args.fresh_process!r}")
    args.fresh_process = fresh
    return args


def in_fresh_process(args: argparse.Namespace, case: dict[str, Any]) -> dict[str, Any]:
    """``case`` timed by this script in a child process of its own (``--only`` its id): the child's record of it."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, os.path.abspath(__file__), "--draw", str(args.draw), "--count", str(args.count),
               "--static-cases", str(args.static_cases), "--repeats", str(args.repeats), "--only",
               f"^{re.escape(case['id'])}$", "--out", out] + (["--small"] if args.small else [])
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=max(120.0, args.budget_s - elapsed() + 120.0))
        if run.returncode != 0:
            raise RuntimeError(f"the child process exited {run.returncode}: {run.stderr[-400:]}")
        with open(os.path.join(out, "serving.json")) as f:
            rec = json.load(f)["cases"][case["id"]]
    return {**rec, "process": "fresh"}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    os.makedirs(args.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    cases = draw(args.draw, args.count, args.static_cases)
    probe = steps.launch_probe(torch) if dev == "cuda" else None
    doc: dict[str, Any] = {"protocol": __doc__, "seed": args.draw, "space": {k: dict(v) for k, v in SPACE.items()},
                           "engines": list(ENGINES), "repeats": args.repeats, "static_cases": args.static_cases,
                           "count": args.count, "small": args.small, "only": args.only,
                           "fresh_process": args.fresh_process,
                           "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                           "environment": steps.environment(torch, dev), "host_probe_us": probe and probe * 1e6,
                           "cases": {c["id"]: {**c, "status": "pending"} for c in cases}}
    models: dict[str, Any] = {}
    path = os.path.join(args.out, "serving.json")
    for case in cases:
        rec = doc["cases"][case["id"]]
        if args.only is not None and not re.search(args.only, case["id"]):
            rec["status"] = "skipped (--only)"
        elif elapsed() > args.budget_s:
            rec["status"] = "skipped (budget)"
        else:
            try:
                if case["engine"] in args.fresh_process:
                    rec.update(in_fresh_process(args, case))
                else:
                    if case["family"] not in models:  # kept: the three fit one GPU together
                        models[case["family"]] = build(torch, case["family"], dev, args.small)
                    model, info = models[case["family"]]
                    if dev == "cuda":
                        torch.cuda.reset_peak_memory_stats()
                        rec["case_probe_us"] = steps.launch_probe(torch) * 1e6  # the host's speed just before this case
                    probe = (lambda: steps.launch_probe(torch)) if dev == "cuda" else None
                    rec.update(measure(torch, model, case, dev, args.repeats, args.small, probe), model=info,
                               status="ok")
            except Exception as err:  # noqa: BLE001 - recorded, the next case runs
                rec["status"] = f"error: {type(err).__name__}: {err}"[:400]
                rec["traceback"] = traceback.format_exc()[-2000:]
        with open(path + ".tmp", "w") as f:
            json.dump(doc, f, indent=1, default=str)
        os.replace(path + ".tmp", path)
        short = {k: rec.get(k) for k in ("id", "status", "ttft_s", "tpot_s", "warmup_s")}
        print(json.dumps(short), flush=True)
        log(f"{case['id']}: {rec['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
