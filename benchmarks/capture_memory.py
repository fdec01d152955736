"""Captured peak memory against the H200's measured peaks, as figures (not a test): each Hugging Face case of the newest
frozen step test and of the step fit file (data/manifest.yaml gives the roles), captured on fake tensors.

    python benchmarks/capture_memory.py                 # needs torch (pip install torch==2.13.0) and transformers
    python benchmarks/capture_memory.py --cases         # and one line per case

Per case: the program steps.py ran (``benchmarks/programs/steps.py``: train = AMP bf16 over fp32 weights and fused AdamW,
``model(ids, labels=ids).loss.backward()``; infer = a bf16 forward, every token's logits; prefill; one decode step
against the case's cache), captured by ``capture.hf_model`` from the case's ``hf_config``; its recipe's peak of live
tensor bytes (``CaptureMemory.peak``) against ``peak_memory_bytes`` (``torch.cuda.max_memory_allocated`` over the first
timed step, its peak statistics reset just before it, so the weights, optimizer states and a decode's cache are in it).
Printed per file, family and mode: the median and p90 of |captured - measured| / measured, the same of the closed form's
``memory()`` where one applies (``calibration.programs.predicted_memory``: training, prefill and decode; not a forward
keeping every token's logits), the gap measured - captured in MB (median, p10 and p90), and the gap before the step:
``memory_before_bytes`` less the captured state (the weights; training also its gradients, alive from the last step
until ``zero_grad``, and AdamW's moments; a decode also its cache). Then: does a constant explain the gap? The
median gap of each family and mode on the fit file, added to the captured peak of the test's cases.

What the captured peak leaves out: the CUDA context (never in ``max_memory_allocated``), cuBLAS's and cuDNN's
workspaces (allocated through the caching allocator: in the measured peak), the caching allocator's rounding beyond
its 512-byte blocks (small requests share 2 MB segments, which ``memory_allocated`` does not count: none), buffers a
module allocates outside the program's tensors. ResNet-50 cases are left out (torchvision is not a dependency here).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Optional

import numpy as np

MB = 1e6


def _files() -> tuple[str, str]:
    """(the newest frozen step test, the step fit file), by the data manifest's roles and dates."""
    from solkit.calibration.manifest import manifest

    newest = manifest().newest_test("steps")
    if newest is None:
        raise SystemExit("the data manifest lists no frozen step test")
    return newest.file, manifest().files(role="fit", fits="host")[0]


def _state(memory: Any, case: Any, cache: float) -> float:
    """What the captured program holds before the step: the weights, and training's gradients (as many bytes as the
    fp32 weights) and moments; a decode's cache."""
    if case.mode == "train":
        return float(2 * memory.parameters + memory.optimizer_states)
    return float(memory.parameters) + (cache if case.mode == "decode" else 0.0)


def _cache_bytes(model: Any, case: Any) -> float:
    """The decode's DynamicCache of ``context`` tokens: K and V, layers x batch x kv heads x context x head_dim, bf16."""
    cfg = model.config
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return float(2 * cfg.num_hidden_layers * case.batch * kv * case.context * head_dim * 2)


def measure(path: str, show: bool) -> list[dict[str, Any]]:
    """One row per Hugging Face case of a step file: captured, closed-form and measured bytes."""
    from solkit.calibration.captured import captured_workload
    from solkit.calibration.programs import ARCHITECTURES, load_steps, predicted_memory
    from solkit.capture import hf_model

    models: dict[str, Any] = {}
    rows = []
    for case in load_steps(path).cases:
        if not case.ok or case.model_class not in ARCHITECTURES or not case.peak_memory_bytes:
            continue
        cfg = dict(case.hf_config or {}, architectures=[ARCHITECTURES[case.model_class]])
        key = json.dumps(cfg, sort_keys=True)
        model = models.get(key) or models.setdefault(key, hf_model(cfg, name=case.family))
        start = time.process_time()
        memory = captured_workload(case, model).recipe.memory
        closed: Optional[float] = predicted_memory(case) if case.mode != "infer" else None
        cache = _cache_bytes(model, case) if case.mode == "decode" else 0.0
        row = {"id": case.id, "family": case.family, "mode": case.mode, "captured": float(memory.peak),
               "closed": closed, "measured": float(case.peak_memory_bytes),
               "before": float(case.memory_before_bytes or 0), "state": _state(memory, case, cache),
               "seconds": time.process_time() - start}
        rows.append(row)
        if show:
            print(f"  {case.id:34s} captured {row['captured'] / MB:9.1f} MB  measured {row['measured'] / MB:9.1f} MB  "
                  f"({row['captured'] / row['measured'] - 1:+6.1%})  {row['seconds']:.1f} s CPU", flush=True)
    return rows


def _err(rows: list[dict[str, Any]], field: str, plus: Optional[dict[tuple[str, str], float]] = None) -> str:
    """Median and p90 of |row[field] (+ the group's constant) - measured| / measured, as text ('-' where none)."""
    errs = [abs(r[field] + (plus or {}).get((r["family"], r["mode"]), 0.0) - r["measured"]) / r["measured"]
            for r in rows if r[field] is not None]
    if not errs:
        return "-"
    return f"{np.median(errs):.1%} / {np.percentile(errs, 90):.1%}"


def _gaps(rows: list[dict[str, Any]], a: str, b: str) -> str:
    """Median, p10 and p90 of row[a] - row[b] in MB."""
    g = [(r[a] - r[b]) / MB for r in rows]
    return f"{np.median(g):+.0f} ({np.percentile(g, 10):+.0f} .. {np.percentile(g, 90):+.0f})"


def report(name: str, rows: list[dict[str, Any]], constant: Optional[dict[tuple[str, str], float]]) -> None:
    """The table of one file (module docstring)."""
    print(f"\n{name}: {len(rows)} cases\n")
    print("| family | mode | cases | captured: median / p90 | closed form: median / p90 | measured - captured, MB: "
          "median (p10 .. p90) | before the step: measured - captured state, MB | captured + the fit's constant |")
    print("|---|---|---|---|---|---|---|---|")
    groups = sorted({(r["family"], r["mode"]) for r in rows})
    for family, mode in [*groups, ("all", ""), ("all", "closed")]:
        if family != "all":
            sel = [r for r in rows if (r["family"], r["mode"]) == (family, mode)]
        else:  # every case, then the cases the closed form's memory() models (training, prefill, decode)
            sel = [r for r in rows if mode == "" or r["closed"] is not None]
            mode = "train, prefill, decode" if mode else ""
        print(f"| {family} | {mode} | {len(sel)} | {_err(sel, 'captured')} | {_err(sel, 'closed')} | "
              f"{_gaps(sel, 'measured', 'captured')} | {_gaps(sel, 'before', 'state')} | "
              f"{_err(sel, 'captured', constant) if constant is not None else '-'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", action="store_true", help="print one line per case")
    args = parser.parse_args()
    start = time.process_time()
    import torch  # noqa: F401
    import transformers  # noqa: F401

    print(f"imports (torch, transformers): {time.process_time() - start:.1f} s CPU")
    test, fit = _files()
    fit_rows = measure(fit, args.cases)
    constant = {g: statistics.median(r["measured"] - r["captured"] for r in fit_rows if (r["family"], r["mode"]) == g)
                for g in {(r["family"], r["mode"]) for r in fit_rows}}
    test_rows = measure(test, args.cases)
    report(f"{test} (the newest frozen step test)", test_rows, constant)
    report(f"{fit} (the step fit file; its own constant, in sample)", fit_rows, constant)
    print("\nthe fit's constant per family and mode (median measured - captured, MB): "
          + ", ".join(f"{f} {m} {c / MB:+.0f}" for (f, m), c in sorted(constant.items())))
    seconds = sum(r["seconds"] for r in fit_rows + test_rows)
    print(f"captured {len(fit_rows) + len(test_rows)} programs in {seconds:.0f} s CPU")


if __name__ == "__main__":
    main()
