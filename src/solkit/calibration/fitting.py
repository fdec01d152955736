"""The fit: the predictor's parameters from measurement files (``PARAMETERS`` names, SI units).

Measured directly, no fitting (``ceilings``, from the first file): the dense matmul rate per rate
class (the best of its runs), the device-to-device copy bandwidth, the read bandwidth and the
launch floor, each rounded as the spec file keeps it.

Fitted on the training cases only (``fit_cases``: a sampled fit set whole, two thirds of the
hand-picked catalogue): the kernel gap; per kernel kind and per operator or variant key with at
least ``MIN_CASES_PER_KEY`` training cases, a latency, a memory efficiency, a compute efficiency
(where a kernel is compute-bound), a wave latency, a k-step latency (GEMMs and convs) and a row
bandwidth (row-wise kernels); the overlap exponent. The fit is coordinate descent over ``GRIDS``, ``PASSES`` passes in a fixed order,
minimizing, per source, the mean over its cases of e + TAIL_WEIGHT * max(e - TAIL_START, 0) with
e = |log(predicted / measured)| (the hinge keeps the tail in view), averaged over the sources (the
sampled files together, the catalogue: its real-model shapes weigh as much as the random draws).
The loss is a sum over cases, so
a key's parameters answer to its own cases only (a global p90 term made the fit path-dependent:
families nothing had changed moved by 5 points of median error from one refit to the next). Each
file's cases are predicted beside its own measured launch floor.
It is deterministic: the same files give the same parameters, which ``tests/test_calibration.py``
checks against the committed spec. The loss is evaluated for every training kernel at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

import numpy as np

from ..hardware.parameters import PARAMETERS, UNIT_FACTORS, Calibration, ReadOnlyTable
from ..precision import rate_class
from ..prediction import KernelTerms, kernel_terms, soft_max
from .data import MeasurementSet, fit_cases, sample_set_of, workload_of
from .metrics import log_error

if TYPE_CHECKING:  # pragma: no cover
    from .programs import StepSet
    from ..hardware.schema import GPU

__all__ = ["ceilings", "fit", "FitResult", "GRIDS", "MIN_CASES_PER_KEY", "PASSES", "TAIL_START", "TAIL_WEIGHT", "round_calibration"]

EFFICIENCY_GRID = np.geomspace(0.03, 1.0, 90)  # an efficiency is a share of a measured ceiling: at most 1 (a spec check)
LATENCY_GRID = np.linspace(0.0, 20e-6, 81)
WAVE_LATENCY_GRID = np.linspace(0.0, 8e-6, 65)
KSTEP_LATENCY_GRID = np.linspace(0.0, 0.4e-6, 81)
BLOCK_BANDWIDTH_GRID = np.geomspace(1e8, 1e12, 61)  # one block's bytes/s: 0.1 GB/s to 1 TB/s
OVERLAP_GRID = np.array([1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 12.0, np.inf])

#: the values each fitted parameter is tried at
GRIDS: dict[str, np.ndarray] = {
    "kernel_gap": LATENCY_GRID / 2,
    "kernel_latency": LATENCY_GRID,
    "compute_efficiency": EFFICIENCY_GRID,
    "memory_efficiency": EFFICIENCY_GRID,
    "wave_latency": WAVE_LATENCY_GRID,
    "kstep_latency": KSTEP_LATENCY_GRID,
    "block_bandwidth": BLOCK_BANDWIDTH_GRID,
    "overlap_exponent": OVERLAP_GRID,
}
#: an operator key gets its own entries only with this many training cases (fewer would fit noise)
MIN_CASES_PER_KEY = 10
#: the fitted parameters that are one number (the rest are per-key tables)
SCALARS = ("kernel_gap", "overlap_exponent")
#: the loss per case: |log error| plus TAIL_WEIGHT times what exceeds TAIL_START (a 25% error)
TAIL_START = float(np.log(1.25))
TAIL_WEIGHT = 2.0
#: passes of coordinate descent
PASSES = 12
#: kinds whose operators may get their own entries
PER_OPERATOR_KINDS = ("reduction", "elementwise", "attention", "conv", "gemm", "copy")


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
    objective: float  # the loss (mean of the hinged |log(predicted / measured)|) on the training cases


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
        self.present = column("present", bool)
        self.waves, self.block_bytes, self.k_steps = column("waves"), column("block_bytes"), column("k_steps")
        self.helper_bytes = column("helper_bytes")
        self.keys: list[str] = sorted({t.op for t in rows} | {t.kind for t in rows} |
                                      {f"{t.op}_{name}" for t in rows for name, _ in t.variants})
        index = {k: i for i, k in enumerate(self.keys)}
        self.op = np.array([index[t.op] for t in rows])
        self.kind = np.array([index[t.kind] for t in rows])
        # every kernel of a fit is one shape: a variant applies or not; -1 (an absent entry) where none does
        depth = max((len(t.variants) for t in rows), default=0)
        self.variant_keys = [np.array([index[f"{t.op}_{t.variants[i][0]}"] if i < len(t.variants) and
                                       bool(np.all(t.variants[i][1])) else -1 for t in rows]) for i in range(depth)]

    def lookup(self, table: Any, default: float) -> np.ndarray:
        """Each kernel's entry: its key's, else its kind's, else ``default``; its variant's where that applies."""
        values = np.array([table.get(k, np.nan) for k in self.keys] + [np.nan])
        by_op, by_kind = values[self.op], values[self.kind]
        value = np.where(np.isnan(by_op), np.where(np.isnan(by_kind), default, by_kind), by_op)
        for keys in self.variant_keys:  # in order: a later variant's entry wins
            by_variant = values[keys]
            value = np.where(np.isnan(by_variant), value, by_variant)
        return value

    def predicted(self, cal: Calibration) -> np.ndarray:
        """Predicted seconds of every case (``solkit.prediction.combine`` for all at once)."""
        compute = self.t_compute / self.lookup(cal.compute_efficiency, 1.0)
        memory_efficiency = self.lookup(cal.memory_efficiency, 1.0)
        memory = self.t_memory / memory_efficiency
        body = soft_max(compute, memory, cal.overlap_exponent)
        stream = self.waves * np.maximum(self.block_bytes / self.lookup(cal.block_bandwidth, np.inf),
                                         self.k_steps * self.lookup(cal.kstep_latency, 0.0))
        body = self.lookup(cal.kernel_latency, 0.0) + self.waves * self.lookup(cal.wave_latency, 0.0) + \
            np.maximum(body, stream) + self.helper_bytes / (cal.copy_bandwidth * memory_efficiency)
        body = np.where(self.present, body, 0.0) * self.count
        launches = np.bincount(self.case, np.where(self.present, self.launches, 0.0) * self.count, self.n_cases)
        total = cal.launch_floor + np.bincount(self.case, body, self.n_cases)
        return total + cal.kernel_gap * np.maximum(launches - 1.0, 0.0)  # type: ignore[no-any-return]


def _key(t: KernelTerms) -> str:
    """The operator entry a kernel's parameters come from: its last applying variant's (a split-KV attention...), else its op's."""
    return next((f"{t.op}_{name}" for name, mask in reversed(t.variants) if np.all(mask)), t.op)


def _keys_with(cases: list[tuple[KernelTerms, ...]], has: Any) -> list[str]:
    """The keys (operator or variant) of kernels for which ``has(terms)`` holds in at least MIN_CASES_PER_KEY cases."""
    count: dict[str, int] = {}
    for terms in cases:
        for key in {_key(t) for t in terms if has(t)}:
            count[key] = count.get(key, 0) + 1
    return sorted(k for k, n in count.items() if n >= MIN_CASES_PER_KEY)


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
    wave_keys = _keys_with(cases, lambda t: np.any(t.waves))
    row_keys = _keys_with(cases, lambda t: np.any(t.block_bytes))
    kstep_keys = _keys_with(cases, lambda t: np.any(t.k_steps))
    coordinates: list[tuple[str, Optional[str]]] = [("kernel_gap", None)]  # first: the rest sit on top of it
    coordinates += [("memory_efficiency", k) for k in kinds + op_keys]
    compute_keys = sorted({_key(t) for terms in cases for t in terms
                           if t.kind in compute_kinds and np.any(t.t_compute > t.t_memory)} & set(op_keys))
    coordinates += [("compute_efficiency", k) for k in compute_kinds + compute_keys]
    coordinates += [("kernel_latency", k) for k in kinds + op_keys]
    coordinates += [("wave_latency", k) for k in wave_keys] + [("block_bandwidth", k) for k in row_keys]
    coordinates += [("kstep_latency", k) for k in kstep_keys]
    coordinates += [(name, None) for name in SCALARS if name != "kernel_gap"]
    return coordinates


def _with(cal: Calibration, parameter: str, key: Optional[str], value: float) -> Calibration:
    if key is None:
        return cal.replace(**{parameter: float(value)})
    return cal.replace(**{parameter: {**getattr(cal, parameter), key: float(value)}})


def _used_keys(cal: Calibration, train_terms: Iterable[tuple[KernelTerms, ...]]) -> Calibration:
    """The calibration without entries that no training kernel resolves to (an operator's entry hides its kind's)."""
    tables = ("kernel_latency", "compute_efficiency", "memory_efficiency", "wave_latency", "kstep_latency", "block_bandwidth")
    used: dict[str, set[str]] = {table: set() for table in tables}
    for terms in train_terms:
        for t in terms:
            for table in tables:
                mapping = getattr(cal, table)
                used[table].add(_key(t) if _key(t) in mapping else t.op if t.op in mapping else t.kind)
    return cal.replace(**{table: {k: v for k, v in getattr(cal, table).items() if k in used[table]} for table in tables})


def fit(msets: "MeasurementSet | Sequence[MeasurementSet]", gpu: "GPU", steps: "Optional[Sequence[StepSet]]" = None
        ) -> FitResult:
    """Fit the predictor's parameters to the training cases of ``msets`` for ``gpu`` (its SM count and peaks).

    The ceilings are the first file's; the training cases are every file's ``fit_cases``; the host
    times of eager programs are fitted on whole steps (``steps``, default the committed step files).
    """
    sets = [msets] if isinstance(msets, MeasurementSet) else list(msets)
    base = Calibration(gpu=gpu.name, calibrated=True, source="fit", **ceilings(sets[0]), kernel_gap=0.0,
                       kernel_latency={}, compute_efficiency={}, memory_efficiency={}, wave_latency={}, kstep_latency={}, block_bandwidth={},
                       overlap_exponent=float("inf"))
    split = [fit_cases(m) for m in sets]
    train = [c for t, _ in split for c in t]
    held = [c for _, h in split for c in h]
    train_terms = [tuple(kernel_terms(k, gpu, base) for k, _ in workload_of(c).counted) for c in train]
    counts = [tuple(n for _, n in workload_of(c).counted) for c in train]
    kernels = _Kernels([(i, t, n) for i, (terms, ns) in enumerate(zip(train_terms, counts)) for t, n in zip(terms, ns)],
                       len(train))
    measured = np.array([c.seconds for c in train], dtype=float)  # fit_cases keeps measured cases only

    # each source's training cases weigh the same: the hand-picked shapes users run stay in view beside the random draws
    # (the sampled files together are one source, each other file another)
    starts = np.cumsum([0] + [len(t) for t, _ in split])
    sources: dict[str, list[np.ndarray]] = {}
    for i, m in enumerate(sets):
        source = "sampled" if sample_set_of(m) is not None else f"file {i}"
        sources.setdefault(source, []).append(np.arange(starts[i], starts[i + 1]))
    groups = [np.concatenate(parts) for parts in sources.values() if sum(len(p) for p in parts)]

    # each run's cases beside its own measured launch floor (it moves by ~0.5 us from machine to machine): the
    # fitted latencies are what a kernel adds to the floor, whichever machine measured it
    floor_shift = np.concatenate([np.full(len(t), ceilings(m)["launch_floor"] - base.launch_floor)
                                  for m, (t, _) in zip(sets, split)])

    def loss(cal: Calibration) -> float:
        err = log_error(kernels.predicted(cal) + floor_shift, measured)
        err = err + TAIL_WEIGHT * np.maximum(err - TAIL_START, 0.0)
        return float(np.mean([np.mean(err[g]) for g in groups]))

    cal, best = base, loss(base)
    coordinates = _coordinates(train_terms)
    for _ in range(PASSES):
        for parameter, key in coordinates:
            for value in GRIDS[parameter]:
                trial = _with(cal, parameter, key, value)
                value_loss = loss(trial)
                if value_loss < best - 1e-12:
                    cal, best = trial, value_loss
    from .collectives import link_parameters
    from .parallel import parallel_parameters

    links = link_parameters()
    links["link_latency"] = ReadOnlyTable(links["link_latency"])
    links["link_efficiency"] = ReadOnlyTable(links["link_efficiency"])
    links["link_misaligned"] = ReadOnlyTable(links["link_misaligned"])
    fitted = _used_keys(cal, train_terms).replace(**host_parameters(steps), **parallel_parameters(), **links)
    return FitResult(fitted, len(train), len(held), best)


def host_parameters(steps: "Optional[Sequence[StepSet]]" = None) -> dict[str, float]:
    """The host-time parameters fitted on whole steps (``programs.fit_host``; default: the committed step files)."""
    from .programs import STEP_FIT_DATA, fit_host, load_steps

    sets = list(steps) if steps is not None else [load_steps(name) for name in STEP_FIT_DATA]
    host = fit_host(sets)
    return {name: getattr(host, name) for name in type(host).model_fields if name.startswith("host_")}
