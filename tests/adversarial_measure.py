"""Adversarial cases: impossible measurements (a time below T_SOL, a utilization above 1), flagged every time.

Every function that takes a measured time and can know the bound is tried at times below it
(flagged: ``ImpossibleMeasurementWarning``; ``strict=True``: ``ImpossibleMeasurementError``),
at the bound itself and above it (plain numbers, no flag).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import solkit as sk
from adversarial import Adv
from solkit import ops
from solkit.errors import (
    ArgumentTypeError,
    ImpossibleMeasurementError,
    ImpossibleMeasurementWarning,
    MeasurementError,
    ShapeError,
)

H200 = sk.load_gpu("h200")

#: workloads of every bound: compute (GEMM, conv, attention), memory (norms, copies), vector-only, multi-kernel
WORKLOADS = {
    "matmul 8192^3": ops.matmul(8192, 8192, 8192),  # T_SOL 2*8192^3 / 989.4e12 = 1.1113 ms, compute-bound
    "matmul 64x32x16": ops.matmul(64, 32, 16),  # memory-bound: (64*16 + 16*32 + 64*32)*2 B / 4.8e12 B/s = 1.49 ns
    "layernorm 8192x4096": ops.layernorm(8192, 4096),  # (2*8192*4096 + 2*4096)*2 B / 4.8e12 = 27.97 us
    "conv2d resnet 3x3": ops.conv2d(32, 64, 56, 56, 64, 3, padding=1),
    "attention causal": ops.attention(4, 32, 2048, head_dim=128, causal=True),
    "layernorm_residual unfused": ops.layernorm_residual(16384, 4096, fused=False),  # two kernels
}

#: measured time as a multiple of T_SOL: below it (beyond float rounding) is impossible
IMPOSSIBLE = {"0.5x": 0.5, "0.999x": 0.999}
POSSIBLE = {"1x": 1.0, "2x": 2.0}


def _t_sol(w: Any) -> float:
    return float(sk.roofline(w, H200).t_sol)


def _mfu_workload(w: Any, seconds: float, **kw: Any) -> Any:
    dtype = "bf16"
    return sk.mfu(w, seconds, H200, dtype=dtype, **kw)


#: (function name, the argument named in the flag, call(workload, seconds, **strict))
MEASURING: dict[str, tuple[str, Callable[..., Any]]] = {
    "sol_fraction": ("measured_seconds", lambda w, s, **kw: sk.sol_fraction(w, H200, s, **kw)),
    "mfu": ("seconds", _mfu_workload),
    "hfu": ("seconds", lambda w, s, **kw: sk.hfu(w, s, H200, **kw)),
    "achieved_flops": ("seconds", lambda w, s, **kw: sk.achieved_flops(w, s, H200, **kw)),
    "achieved_bandwidth": ("seconds", lambda w, s, **kw: sk.achieved_bandwidth(w, s, H200, **kw)),
    "compare baseline": ("measured[0]", lambda w, s, **kw: sk.compare(w, w, H200, measured=(s, 1.0), **kw)),
    "compare variant": ("measured[1]", lambda w, s, **kw: sk.compare(w, w, H200, measured=(1.0, s), **kw)),
}


def _below_bound_cases() -> list[Adv]:
    cases = []
    for fname, (arg, call) in MEASURING.items():
        for wname, w in WORKLOADS.items():
            t = _t_sol(w)
            for label, factor in IMPOSSIBLE.items():
                seconds = t * factor
                cases.append(Adv(f"measure-below-sol: {fname} of {wname} at {label} T_SOL",
                                 functools.partial(call, w, seconds), ImpossibleMeasurementWarning,
                                 names=(arg, "T_SOL")))
                cases.append(Adv(f"measure-strict: {fname} of {wname} at {label} T_SOL, strict=True",
                                 functools.partial(call, w, seconds, strict=True), ImpossibleMeasurementError,
                                 ValueError, names=(arg, "strict=True")))
            for label, factor in POSSIBLE.items():
                cases.append(Adv(f"measure-possible: {fname} of {wname} at {label} T_SOL",
                                 functools.partial(call, w, t * factor), None))
    return cases


def _array_cases() -> list[Adv]:
    """Sweeps: one impossible element among possible ones is flagged with its index."""
    w = ops.matmul(8192, 8192, 8192)
    t = _t_sol(w)  # 1.1113 ms
    seconds = np.array([2 * t, 0.5 * t, 3 * t])  # index 1 is impossible
    sweep = ops.matmul(np.array([4096, 8192]), 8192, 8192)  # T_SOL 0.5556 ms and 1.1113 ms
    return [
        Adv("measure-array: sol_fraction, index 1 of 3 below T_SOL", lambda: sk.sol_fraction(w, H200, seconds),
            ImpossibleMeasurementWarning, names=("measured_seconds", "index 1", "1 of 3")),
        Adv("measure-array: sol_fraction strict, index 1 of 3", lambda: sk.sol_fraction(w, H200, seconds, strict=True),
            ImpossibleMeasurementError, ValueError, names=("measured_seconds", "index 1")),
        # 1 ms is above 0.5556 ms but below 1.1113 ms: the second shape is impossible
        Adv("measure-array: sweep of m measured at 1 ms", lambda: sk.sol_fraction(sweep, H200, 1e-3),
            ImpossibleMeasurementWarning, names=("measured_seconds", "index 1", "1 of 2")),
        Adv("measure-array: sweep of m measured at 1.2 ms", lambda: sk.sol_fraction(sweep, H200, 1.2e-3), None),
        Adv("measure-array: 2-D seconds", lambda: sk.sol_fraction(w, H200, np.array([[2 * t, 2 * t], [2 * t, 0.1 * t]])),
            ImpossibleMeasurementWarning, names=("index (1, 1)",)),
        Adv("measure-array: mfu of flops over seconds array",
            lambda: sk.mfu(1e15, np.array([2.0, 0.5]), H200),  # 1e15 / (989.4e12 * 0.5) = 2.02
            ImpossibleMeasurementWarning, names=("mfu", "index 1")),
        # 1e15 FLOPs in 1 s: on 8 GPUs 1e15 / (989.4e12 * 8) = 0.126; on one 1e15 / 989.4e12 = 1.011, impossible
        Adv("measure-array: mfu over n_gpus array", lambda: sk.mfu(1e15, 1.0, H200, n_gpus=np.array([8, 1])),
            ImpossibleMeasurementWarning, names=("mfu", "index 1", "1 of 2")),
        Adv("measure-array: mfu over n_gpus array, all possible", lambda: sk.mfu(0.9e15, 1.0, H200, n_gpus=np.array([8, 1])),
            None),
        Adv("measure-array: compare measured arrays", lambda: sk.compare(sweep, sweep, H200, measured=(1.2e-3, np.array([1.2e-3, 1e-3]))),
            ImpossibleMeasurementWarning, names=("measured[1]", "index 1")),
    ]


def _utilization_cases() -> list[Adv]:
    """MFU/HFU from a number of FLOPs: above 1 is flagged, whatever made it (n_gpus, dtype, sparse)."""
    peak = 989.4e12  # H200 SXM dense bf16, NVIDIA H200 datasheet (hardware_specs/h200-sxm.yaml)
    cases = []
    for fname, fn in (("mfu", sk.mfu), ("hfu", sk.hfu)):
        cases += [
            Adv(f"measure-utilization: {fname} 1.5 (flops = 1.5 x peak x 1 s)", functools.partial(fn, 1.5 * peak, 1.0, H200),
                ImpossibleMeasurementWarning, names=(fname, "above 1")),
            Adv(f"measure-utilization: {fname} 1.5 strict", functools.partial(fn, 1.5 * peak, 1.0, H200, strict=True),
                ImpossibleMeasurementError, ValueError, names=(fname, "above 1")),
            Adv(f"measure-utilization: {fname} exactly 1", functools.partial(fn, peak, 1.0, H200), None),
            Adv(f"measure-utilization: {fname} 8 GPUs claimed as 1",  # 4 x peak in 1 s on 8 GPUs: 0.5; on 1: 4
                functools.partial(fn, 4 * peak, 1.0, H200, n_gpus=1), ImpossibleMeasurementWarning, names=(fname,)),
            Adv(f"measure-utilization: {fname} 8 GPUs", functools.partial(fn, 4 * peak, 1.0, H200, n_gpus=8), None),
            # bf16 FLOPs measured against the dense tf32 peak (494.7 TFLOP/s): 0.9 x 989.4 / 494.7 = 1.8
            Adv(f"measure-utilization: {fname} against the tf32 peak", functools.partial(fn, 0.9 * peak, 1.0, H200, dtype="tf32"),
                ImpossibleMeasurementWarning, names=(fname, "tf32")),
            # the same FLOPs against the 2:4 sparse peak (1979 TFLOP/s): 0.45, possible
            Adv(f"measure-utilization: {fname} 0.9 x dense peak with sparse=True",
                functools.partial(fn, 0.9 * peak, 1.0, H200, sparse=True), None),
            Adv(f"measure-utilization: {fname} 2.5 x dense peak, sparse=True",
                functools.partial(fn, 2.5 * peak, 1.0, H200, sparse=True), ImpossibleMeasurementWarning, names=(fname, "sparse")),
        ]
    return cases


def _compare_argument_cases() -> list[Adv]:
    a, b = ops.layernorm_residual(16384, 4096, fused=False), ops.layernorm_residual(16384, 4096, fused=True)
    sweep3 = ops.layernorm_residual(np.array([1024, 2048, 4096]), 4096)
    sweep2 = ops.layernorm_residual(np.array([1024, 2048]), 4096)
    q = functools.partial
    return [
        Adv("measure-compare: measured a number", q(sk.compare, a, b, H200, measured=1e-3), ArgumentTypeError, TypeError,
            names=("measured",)),
        Adv("measure-compare: measured a string", q(sk.compare, a, b, H200, measured="ab"), ArgumentTypeError, TypeError,
            names=("measured",)),
        Adv("measure-compare: measured of 3", q(sk.compare, a, b, H200, measured=(1.0, 1.0, 1.0)), ArgumentTypeError,
            TypeError, names=("measured",)),
        Adv("measure-compare: measured (0, 1)", q(sk.compare, a, b, H200, measured=(0.0, 1.0)), MeasurementError, ValueError,
            names=("measured[0]",)),
        Adv("measure-compare: measured (1, nan)", q(sk.compare, a, b, H200, measured=(1.0, float("nan"))), MeasurementError,
            ValueError, names=("measured[1]",)),
        Adv("measure-compare: measured (1, None)", q(sk.compare, a, b, H200, measured=(1.0, None)), ArgumentTypeError,
            TypeError, names=("measured[1]",)),
        Adv("measure-compare: measured (True, 1)", q(sk.compare, a, b, H200, measured=(True, 1.0)), ArgumentTypeError,
            TypeError, names=("measured[0]",)),
        Adv("measure-compare: sweeps of 3 and 2 shapes", q(sk.compare, sweep3, sweep2, H200), ShapeError, ValueError,
            names=("baseline", "variant")),
        Adv("measure-compare: measured of shape (2,) for a sweep of 3", q(sk.compare, sweep3, sweep3, H200,
            measured=(np.array([1.0, 1.0]), 1.0)), ShapeError, ValueError, names=("measured[0]",)),
        Adv("measure-compare: strict='yes'", q(sk.compare, a, b, H200, measured=(1.0, 1.0), strict="yes"), ArgumentTypeError,
            TypeError, names=("strict",)),
        Adv("measure-compare: a list pair works", q(sk.compare, a, b, H200, measured=[1e-3, 5e-4]), None),
    ]


def _strict_argument_cases() -> list[Adv]:
    w = ops.matmul(64, 32, 16)
    calls = {
        "sol_fraction": lambda v: sk.sol_fraction(w, H200, 1.0, strict=v),
        "mfu": lambda v: sk.mfu(1e9, 1.0, H200, strict=v),
        "hfu": lambda v: sk.hfu(1e9, 1.0, H200, strict=v),
        "achieved_flops": lambda v: sk.achieved_flops(w, 1.0, H200, strict=v),
        "achieved_bandwidth": lambda v: sk.achieved_bandwidth(w, 1.0, H200, strict=v),
    }
    cases = []
    for fname, call in calls.items():
        for label, value in (("1", 1), ("'no'", "no"), ("None", None)):
            cases.append(Adv(f"measure-strict-arg: {fname} strict={label}", functools.partial(call, value),
                             ArgumentTypeError, TypeError, names=("strict",)))
    return cases


def _mfu_workload_cases() -> list[Adv]:
    """A Workload measured on n GPUs: its T_SOL split ideally over them is the bound."""
    w = ops.matmul(8192, 8192, 8192)  # T_SOL 1.1113 ms on one H200
    return [
        # on 8 GPUs the ideal split takes 1.1113 / 8 = 0.1389 ms; 0.2 ms is possible (MFU 0.69)
        Adv("measure-ngpus: matmul on 8 GPUs in 0.2 ms", lambda: sk.mfu(w, 2e-4, H200, n_gpus=8), None),
        # 0.1 ms on 8 GPUs is below the split bound 0.1389 ms
        Adv("measure-ngpus: matmul on 8 GPUs in 0.1 ms", lambda: sk.mfu(w, 1e-4, H200, n_gpus=8),
            ImpossibleMeasurementWarning, names=("seconds", "n_gpus")),
        Adv("measure-ngpus: memory-bound workload, MFU small but time below T_SOL",  # layernorm: T_SOL 27.97 us
            lambda: sk.mfu(ops.layernorm(8192, 4096), 1e-5, H200), ImpossibleMeasurementWarning, names=("seconds", "T_SOL")),
    ]


def _plot_cases() -> list[Adv]:
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # pragma: no cover - plots are an optional extra
        return []
    from solkit import plot

    w = ops.matmul(8192, 8192, 8192)
    t = _t_sol(w)
    return [
        Adv("measure-plot: measured point above the roof", lambda: plot.roofline({"mm": w}, H200, measured={"mm": 0.5 * t}),
            ImpossibleMeasurementWarning, names=("measured['mm']", "T_SOL")),
        Adv("measure-plot: strict", lambda: plot.roofline({"mm": w}, H200, measured={"mm": 0.5 * t}, strict=True),
            ImpossibleMeasurementError, ValueError, names=("measured['mm']",)),
        Adv("measure-plot: measured point under the roof", lambda: plot.roofline({"mm": w}, H200, measured={"mm": 2 * t}),
            None),
    ]


CASES: list[Adv] = (_below_bound_cases() + _array_cases() + _utilization_cases() + _compare_argument_cases()
                    + _strict_argument_cases() + _mfu_workload_cases() + _plot_cases())
