"""The fit: the predictor's parameters from a measurement file (``PARAMETERS`` names, SI units).

Measured directly, no fitting (``ceilings``): the dense matmul rate per rate class (the best of
its runs), the device-to-device copy bandwidth, the read bandwidth and the launch floor, each
rounded as the spec file keeps it.

Fitted on the training cases only (``fit_cases``: primary, measured, not held out): the kernel
gap, a latency and a memory efficiency per kernel kind and per operator key with at least
``MIN_CASES_PER_KEY`` training cases (row reductions, elementwise maps, attention and convs differ
by implementation), a compute efficiency per kind that has a compute-bound kernel, the
misaligned-GEMM and small-channel penalties and the overlap exponent. The fit is coordinate
descent over ``GRIDS``, ``PASSES`` passes in a fixed order, minimizing the mean plus the 90th
percentile of |log(predicted / measured)| (the p90 term keeps the tail in view). It is
deterministic: the same file gives the same parameters, which ``tests/test_calibration.py``
checks against the committed spec. The loss is evaluated for every training kernel at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Optional

import numpy as np

from ..hardware.parameters import PARAMETERS, UNIT_FACTORS, Calibration
from ..precision import rate_class
from ..prediction import KernelTerms, kernel_terms, soft_max
from .data import MeasurementSet, fit_cases, workload_of
from .metrics import log_error

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU

__all__ = ["ceilings", "fit", "FitResult", "GRIDS", "MIN_CASES_PER_KEY", "PASSES", "round_calibration"]

EFFICIENCY_GRID = np.geomspace(0.03, 1.0, 90)  # an efficiency is a share of a measured ceiling: at most 1 (a spec check)
LATENCY_GRID = np.linspace(0.0, 20e-6, 81)
PENALTY_GRID = np.geomspace(1.0, 40.0, 60)
OVERLAP_GRID = np.array([1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 12.0, np.inf])

#: the values each fitted parameter is tried at
GRIDS: dict[str, np.ndarray] = {
    "kernel_gap": LATENCY_GRID / 2,
    "kernel_latency": LATENCY_GRID,
    "compute_efficiency": EFFICIENCY_GRID,
    "memory_efficiency": EFFICIENCY_GRID,
    "misaligned_gemm_penalty": PENALTY_GRID,
    "small_channel_penalty": PENALTY_GRID,
    "overlap_exponent": OVERLAP_GRID,
}
#: an operator key gets its own entries only with this many training cases (fewer would fit noise)
MIN_CASES_PER_KEY = 5
#: passes of coordinate descent
PASSES = 6
#: kinds whose operators may get their own entries
PER_OPERATOR_KINDS = ("reduction", "elementwise", "attention", "conv")


def _round(value: float, parameter: str) -> float:
    """``value`` (SI) rounded as the spec keeps it (in its file unit)."""
    p = next(p for p in PARAMETERS if p.name == parameter)
    factor = UNIT_FACTORS[p.unit]
    return float(round(value / factor, p.digits) * factor) if np.isfinite(value) else float(value)


def ceilings(mset: MeasurementSet) -> dict[str, Any]:
    """The directly measured ceilings in SI units, rounded as the spec keeps them."""
    c = mset.ceilings
    rates: dict[str, float] = {}
    for run in c["matmul_runs"]:
        key = rate_class(run["dtype"])
        rates[key] = max(rates.get(key, 0.0), run["flops_per_s"])
    return {
        "matmul_rate": {k: _round(v, "matmul_rate") for k, v in rates.items()},
        "copy_bandwidth": _round(c["copy_bandwidth_bytes_per_s"], "copy_bandwidth"),
        "read_bandwidth": _round(c["read_bandwidth_bytes_per_s"], "read_bandwidth"),
        "launch_floor": _round(c["launch_floor_s"], "launch_floor"),
    }


def round_calibration(cal: Calibration) -> Calibration:
    """Every fitted parameter rounded as the spec keeps it (what the committed file holds)."""
    changes: dict[str, Any] = {}
    for p in PARAMETERS:
        if p.fitted:
            value = getattr(cal, p.name)
            changes[p.name] = {k: _round(v, p.name) for k, v in value.items()} if p.keyed else _round(value, p.name)
    return cal.replace(**changes)


@dataclass(frozen=True)
class FitResult:
    """The fitted calibration (unrounded) and what it was fitted on."""

    calibration: Calibration
    train_cases: int
    holdout_cases: int
    objective: float  # mean + p90 of |log(predicted / measured)| on the training cases


class _Kernels:
    """Every kernel of the training cases as arrays, to evaluate a calibration on all of them at once."""

    def __init__(self, terms: list[tuple[int, KernelTerms, int]], n_cases: int) -> None:
        self.n_cases = n_cases
        self.case = np.array([c for c, _, _ in terms])
        self.count = np.array([float(n) for _, _, n in terms])
        rows = [t for _, t, _ in terms]

        def column(name: str, dtype: Any = float) -> np.ndarray:
            return np.array([getattr(t, name) for t in rows], dtype=dtype)

        self.t_compute, self.t_memory, self.launches = column("t_compute"), column("t_memory"), column("launches")
        self.present, self.misaligned = column("present", bool), column("misaligned", bool)
        self.small, self.variant = column("small_channels", bool), column("variant_mask", bool)
        self.keys: list[str] = sorted({t.op for t in rows} | {t.kind for t in rows} |
                                      {f"{t.op}_{t.variant}" for t in rows if t.variant})
        index = {k: i for i, k in enumerate(self.keys)}
        self.op = np.array([index[t.op] for t in rows])
        self.kind = np.array([index[t.kind] for t in rows])
        self.variant_key = np.array([index[f"{t.op}_{t.variant}"] if t.variant else -1 for t in rows])

    def lookup(self, table: Any, default: float) -> np.ndarray:
        """Each kernel's entry: its key's, else its kind's, else ``default``; its variant's where that applies."""
        values = np.array([table.get(k, np.nan) for k in self.keys] + [np.nan])
        by_op, by_kind, by_variant = values[self.op], values[self.kind], values[self.variant_key]
        base = np.where(np.isnan(by_op), np.where(np.isnan(by_kind), default, by_kind), by_op)
        return np.where(self.variant & ~np.isnan(by_variant), by_variant, base)

    def predicted(self, cal: Calibration) -> np.ndarray:
        """Predicted seconds of every case (``solkit.prediction.combine`` for all at once)."""
        compute = self.t_compute / self.lookup(cal.compute_efficiency, 1.0)
        compute = np.where(self.misaligned, compute * cal.misaligned_gemm_penalty, compute)
        compute = np.where(self.small, compute * cal.small_channel_penalty, compute)
        memory = self.t_memory / self.lookup(cal.memory_efficiency, 1.0)
        body = self.lookup(cal.kernel_latency, 0.0) + soft_max(compute, memory, cal.overlap_exponent)
        body = np.where(self.present, body, 0.0) * self.count
        launches = np.bincount(self.case, np.where(self.present, self.launches, 0.0) * self.count, self.n_cases)
        total = cal.launch_floor + np.bincount(self.case, body, self.n_cases)
        return total + cal.kernel_gap * np.maximum(launches - 1.0, 0.0)  # type: ignore[no-any-return]


def _key(t: KernelTerms) -> str:
    """The operator entry a kernel's parameters come from (a split-KV attention, a depthwise conv: their variant's)."""
    return f"{t.op}_{t.variant}" if t.variant and np.all(t.variant_mask) else t.op


def _coordinates(train_terms: Iterable[tuple[KernelTerms, ...]]) -> list[tuple[str, Optional[str]]]:
    """The (parameter, key) pairs to fit, in the order coordinate descent visits them."""
    cases = list(train_terms)
    kinds = sorted({t.kind for terms in cases for t in terms})
    count: dict[str, int] = {}
    for terms in cases:
        for key in {_key(t) for t in terms if t.kind in PER_OPERATOR_KINDS}:
            count[key] = count.get(key, 0) + 1
    op_keys = sorted(k for k, n in count.items() if n >= MIN_CASES_PER_KEY)
    compute_kinds = sorted({t.kind for terms in cases for t in terms if np.any(t.t_compute > t.t_memory)})
    coordinates: list[tuple[str, Optional[str]]] = [("kernel_gap", None)]
    coordinates += [("memory_efficiency", k) for k in kinds + op_keys]
    coordinates += [("compute_efficiency", k) for k in compute_kinds]
    coordinates += [("kernel_latency", k) for k in kinds + op_keys]
    coordinates += [("misaligned_gemm_penalty", None), ("small_channel_penalty", None), ("overlap_exponent", None)]
    return coordinates


def _with(cal: Calibration, parameter: str, key: Optional[str], value: float) -> Calibration:
    if key is None:
        return cal.replace(**{parameter: float(value)})
    return cal.replace(**{parameter: {**getattr(cal, parameter), key: float(value)}})


def _used_keys(cal: Calibration, train_terms: Iterable[tuple[KernelTerms, ...]]) -> Calibration:
    """The calibration without entries that no training kernel resolves to (an operator's entry hides its kind's)."""
    tables = ("kernel_latency", "compute_efficiency", "memory_efficiency")
    used: dict[str, set[str]] = {table: set() for table in tables}
    for terms in train_terms:
        for t in terms:
            for table in tables:
                mapping = getattr(cal, table)
                used[table].add(_key(t) if _key(t) in mapping else t.op if t.op in mapping else t.kind)
    return cal.replace(**{table: {k: v for k, v in getattr(cal, table).items() if k in used[table]} for table in tables})


def fit(mset: MeasurementSet, gpu: "GPU") -> FitResult:
    """Fit the predictor's parameters to the training cases of ``mset`` for ``gpu`` (its SM count and peaks)."""
    base = Calibration(gpu=gpu.name, calibrated=True, source="fit", **ceilings(mset), kernel_gap=0.0, kernel_latency={},
                       compute_efficiency={}, memory_efficiency={}, misaligned_gemm_penalty=1.0,
                       small_channel_penalty=1.0, overlap_exponent=float("inf"))
    train, held = fit_cases(mset)
    train_terms = [tuple(kernel_terms(k, gpu, base) for k, _ in workload_of(c).counted) for c in train]
    counts = [tuple(n for _, n in workload_of(c).counted) for c in train]
    kernels = _Kernels([(i, t, n) for i, (terms, ns) in enumerate(zip(train_terms, counts)) for t, n in zip(terms, ns)],
                       len(train))
    measured = np.array([c.seconds for c in train], dtype=float)  # fit_cases keeps measured cases only

    def loss(cal: Calibration) -> float:
        err = log_error(kernels.predicted(cal), measured)
        return float(np.mean(err) + np.percentile(err, 90))

    cal, best = base, loss(base)
    coordinates = _coordinates(train_terms)
    for _ in range(PASSES):
        for parameter, key in coordinates:
            for value in GRIDS[parameter]:
                trial = _with(cal, parameter, key, value)
                value_loss = loss(trial)
                if value_loss < best - 1e-12:
                    cal, best = trial, value_loss
    return FitResult(_used_keys(cal, train_terms), len(train), len(held), best)
