"""Summarise a torch.profiler Chrome trace: event counts, kernel time, and the links a parser relies on.

    python benchmarks/profiling/trace_stats.py TRACE.json[.gz] [...]     # prints one JSON object per trace

Standard library only. ``record.py`` stores this summary for every trace in ``manifest.json``, so the
structure that the solkit parser depends on (kernel -> launch -> ATen op) is checked where the trace was made.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from typing import Any

LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


def load(path: str) -> dict[str, Any]:
    """A trace file (plain or gzip, detected from the first bytes) as a dict."""
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:  # type: ignore[operator]
        return json.load(f)


def summarize(trace: dict[str, Any]) -> dict[str, Any]:
    """Counts per category, kernel totals, arg keys per category and the kernel -> op link coverage."""
    events = [e for e in trace.get("traceEvents", []) if isinstance(e, dict)]
    cats = Counter(str(e.get("cat")) for e in events if e.get("ph") == "X")
    kernels = [e for e in events if e.get("cat") == "kernel"]
    cpu_ops = [e for e in events if e.get("cat") == "cpu_op"]
    launches = [e for e in events if e.get("cat") in LAUNCH_CATS]

    arg_keys: dict[str, list[str]] = {}
    for cat in sorted({str(e.get("cat")) for e in events if e.get("ph") == "X"}):
        keys: set[str] = set()
        for e in events:
            if e.get("ph") == "X" and str(e.get("cat")) == cat:
                keys.update((e.get("args") or {}).keys())
        arg_keys[cat] = sorted(keys)

    op_by_ext = {}
    for e in cpu_ops:
        ext = (e.get("args") or {}).get("External id")
        if ext is not None:
            op_by_ext.setdefault(ext, e)
    annot_ext = {(e.get("args") or {}).get("External id") for e in events if e.get("cat") == "user_annotation"}
    launch_corr = {(e.get("args") or {}).get("correlation") for e in launches}
    k_ext = [(e.get("args") or {}).get("External id") for e in kernels]
    k_corr = [(e.get("args") or {}).get("correlation") for e in kernels]
    linked = [op_by_ext[x] for x in k_ext if x in op_by_ext]
    aten_linked = [op for op in linked if str(op.get("name", "")).startswith("aten::")]
    with_dims = [op for op in linked if "Input Dims" in (op.get("args") or {})]

    dur = [float(e.get("dur", 0)) for e in kernels]
    starts = [float(e["ts"]) for e in kernels if "ts" in e]
    ends = [float(e["ts"]) + float(e.get("dur", 0)) for e in kernels if "ts" in e]
    streams = Counter((e.get("args") or {}).get("stream", e.get("tid")) for e in kernels)
    top = Counter()
    for e in kernels:
        top[str(e.get("name"))[:120]] += float(e.get("dur", 0))
    linked_op_names = Counter(str(op.get("name")) for op in linked)
    return {
        "events": len(events),
        "cats": dict(sorted(cats.items())),
        "kernel_events": len(kernels),
        "kernel_dur_us": round(sum(dur), 3),
        "kernel_span_us": round(max(ends) - min(starts), 3) if kernels else 0.0,
        "kernel_streams": {str(k): v for k, v in streams.items()},
        "memcpy_events": cats.get("gpu_memcpy", 0),
        "memset_events": cats.get("gpu_memset", 0),
        "cpu_op_events": len(cpu_ops),
        "cpu_ops_with_input_dims": sum(1 for e in cpu_ops if "Input Dims" in (e.get("args") or {})),
        "kernels_with_external_id": sum(1 for x in k_ext if x is not None),
        "kernels_linked_to_cpu_op": len(linked),
        "kernels_linked_to_aten_op": len(aten_linked),
        "kernels_linked_to_user_annotation": sum(1 for x in k_ext if x in annot_ext and x not in op_by_ext),
        "kernels_linked_op_has_input_dims": len(with_dims),
        "kernels_with_launch_correlation": sum(1 for c in k_corr if c is not None and c in launch_corr),
        "arg_keys": arg_keys,
        "top_kernels_us": [[n, round(t, 3)] for n, t in top.most_common(8)],
        "top_linked_ops": linked_op_names.most_common(12),
        "top_level_keys": sorted(k for k in trace if k != "traceEvents"),
    }


def main(argv: list[str]) -> int:
    for path in argv:
        print(json.dumps({"path": path, **summarize(load(path))}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
