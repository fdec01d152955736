"""``--measured TIME``: a kernel's measured time against its speed of light, its prediction, the roofs, and a verdict.

TIME has a unit (``180us``, ``0.2ms``, ``1.5e-4s``, ``950ns``); a comma list (``180us,185us,178us``) is several
runs, reported by its median. The report: SOL fraction (T_SOL / measured), achieved TFLOP/s and TB/s against
the dense datasheet peak (the vector peak for CUDA-core-only work) and bandwidth, MFU and HFU (against the
matrix peak of the op's precision), the headroom to T_SOL and to the calibrated prediction,
and one line saying which roof binds, how far off the kernel is and the usual cause (the predictor's limiter
of the kernel that takes most of the predicted time). A measurement below T_SOL is impossible: the
plausibility contract applies (a warning, exit 1).
"""

from __future__ import annotations

import math
import re
import statistics
from typing import Any

from .errors import CLIError

__all__ = ["parse_seconds", "measured_report", "measured_lines", "CAUSES"]

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|us|µs|ns)\s*$")
#: the usual cause behind each of the predictor's limiters, as a verdict says it
CAUSES = {
    "launch/latency": "launch-bound: too little work to hide a launch (batch it, fuse it, or use CUDA graphs)",
    "misaligned": "misaligned: a leading dimension is not a multiple of 16 bytes (pad it: cuBLAS falls back to slow kernels)",
    "wave quantization": "under-filled waves: the output tiles leave SMs idle in the last wave (change the shape or the tile)",
    "few blocks": "too few thread blocks to fill the GPU (more rows, or split the reduction)",
    "small channels": "small channels: fewer than 16 bytes of channels per tap (pad the channels)",
}


def parse_seconds(text: str) -> float:
    """Seconds of a TIME with a unit; a comma list gives the median of its values."""
    parts = [p for p in str(text).split(",") if p.strip()]
    if not parts:
        raise CLIError(f"--measured needs a time with a unit (180us, 0.2ms, 1.5e-4s), got {text!r}")
    values = []
    for part in parts:
        match = _TIME.match(part)
        if match is None:
            hint = " (add a unit: s, ms, us or ns)" if re.fullmatch(r"\s*[0-9.eE+-]+\s*", part) else ""
            raise CLIError(f"--measured must be a time with a unit like 180us, 0.2ms or 1.5e-4s, got {part.strip()!r}{hint}")
        value = float(match.group(1)) * _UNITS[match.group(2)]
        if not value > 0:
            raise CLIError(f"--measured must be a positive time, got {part.strip()!r}")
        if math.isinf(value):
            raise CLIError(f"--measured must be a time that float64 holds (below 1.8e308 s), got {part.strip()!r}")
        values.append(value)
    return float(statistics.median(values))


def measured_report(w: Any, gpu: Any, seconds: float, report: dict[str, Any]) -> dict[str, Any]:
    """The figures of a measured time of workload ``w`` on ``gpu`` (``report``: the op's roofline and prediction)."""
    from .sol import hfu, mfu, sol_fraction

    precision = w.precision
    if any(k.matrix_flops > 0 for k, _ in w.counted):
        peak = gpu.peak_flops(precision)
    else:  # only CUDA-core work: its roof is the vector peak of the precision it computes in
        precision = w.counted[0][0].vector_precision
        peak = gpu.peak_flops(precision, "vector")
    t_sol, predicted = report["t_sol"], report["predicted_seconds"]
    if not math.isfinite(seconds / min(t_sol, predicted)):
        raise CLIError(f"--measured {seconds:g} s is more than float64 holds times the op's T_SOL ({t_sol:.4g} s): "
                       "a time with the wrong unit?")
    kernels = report["kernels"]
    slowest = max(kernels, key=lambda k: k["predicted_seconds"] * k.get("count", 1))
    return {
        "measured_seconds": seconds,
        "sol_fraction": float(sol_fraction(w, gpu, seconds)),  # warns when below T_SOL
        "achieved_flops": report["executed_flops"] / seconds,
        "peak_flops": peak,
        "precision": precision,
        "unit": "dense matrix" if precision == w.precision and any(k.matrix_flops > 0 for k, _ in w.counted) else "vector",
        "achieved_bandwidth": report["bytes"] / seconds,
        "memory_bandwidth": gpu.memory_bandwidth,
        "mfu": float(mfu(report["flops"], seconds, gpu, w.precision)) if report["flops"] else 0.0,
        "hfu": float(hfu(report["executed_flops"], seconds, gpu, w.precision)) if report["executed_flops"] else 0.0,
        "headroom_to_sol": seconds / t_sol,
        "headroom_to_predicted": seconds / predicted,
        "verdict": verdict(report["bound"], seconds / t_sol, seconds / predicted, slowest["limiter"]),
    }


def verdict(bound: str, to_sol: float, to_predicted: float, limiter: str) -> str:
    """One line: the roof that binds, how far off, the usual cause."""
    if to_sol < 1:
        return f"{bound}-bound; faster than the speed of light ({to_sol:.2f}x T_SOL): check the timer, the shape and the GPU"
    where = f"{bound}-bound at {1 / to_sol:.1%} of T_SOL ({to_sol:.2f}x from it)"
    if limiter in CAUSES:
        return f"{where}; {CAUSES[limiter]}"
    if to_predicted < 0.77:
        return (f"{where}; {1 / to_predicted:.2f}x faster than the calibrated prediction: the kernel beats what solkit "
                f"expects of its class here (the prediction is pessimistic for this shape)")
    if to_predicted > 1.3:
        return (f"{where}, {to_predicted:.2f}x the calibrated prediction: look for memory traffic above the compulsory "
                f"bytes (unfused intermediates, re-reads) or a slow kernel choice")
    return (f"{where}, {to_predicted:.2f}x the calibrated prediction: about what this kernel class reaches on this "
            f"GPU; the rest of the gap is the hardware's, not the kernel's")


def measured_lines(m: dict[str, Any]) -> list[str]:
    """The measured figures as text lines."""
    return [
        f"measured {m['measured_seconds'] * 1e6:,.2f} us: SOL fraction {m['sol_fraction']:.3f}",
        f"  achieved {m['achieved_flops'] / 1e12:,.1f} TFLOP/s of {m['peak_flops'] / 1e12:g} ({m['precision']} {m['unit']} peak, "
        f"{m['achieved_flops'] / m['peak_flops']:.1%}); {m['achieved_bandwidth'] / 1e12:,.3f} TB/s of "
        f"{m['memory_bandwidth'] / 1e12:g} ({m['achieved_bandwidth'] / m['memory_bandwidth']:.1%})",
        f"  MFU {m['mfu']:.1%}, HFU {m['hfu']:.1%}; {m['headroom_to_sol']:.2f}x T_SOL, "
        f"{m['headroom_to_predicted']:.2f}x the calibrated prediction",
        f"verdict: {m['verdict']}",
    ]
