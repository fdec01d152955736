"""The fit: the predictor's parameters from measurement files (``PARAMETERS`` names, SI units).

Measured directly, no fitting (``ceilings``, from the first file): the dense matmul rate per rate
class (the best of its runs), the device-to-device copy bandwidth, the read bandwidth and the
launch floor, each rounded as the spec file keeps it.

Fitted on the training cases only (``fit_cases``: a sampled fit set whole, two thirds of the
hand-picked catalogue): the kernel gap; per kernel kind and per operator or variant key with at
least ``MIN_CASES_PER_KEY`` training cases, a latency, a memory efficiency, a compute efficiency
(where a kernel is compute-bound), a wave latency, a k-step latency (GEMMs, convs and the memory-efficient attention, its own grid: ``KEY_GRIDS``) and a row
bandwidth (row-wise kernels); the overlap exponent. The fit is coordinate descent over ``GRIDS``, ``PASSES`` passes in a fixed order,
minimizing, per source, the mean over its cases of e + TAIL_WEIGHT * max(e - TAIL_START, 0) with
e = |log(predicted / measured)| (the hinge keeps the tail in view), averaged over the sources (the
sampled files together, the catalogue: its real-model shapes weigh as much as the random draws).
The loss is a sum over cases, so
a key's parameters answer to its own cases only (a global p90 term made the fit path-dependent:
families nothing had changed moved by 5 points of median error from one refit to the next). Each
file's cases are predicted beside its own measured launch floor.
It is deterministic: the same files give the same parameters, which ``tests/test_calibration.py``
checks against the committed spec. The loss is evaluated for every training kernel at once, and a trial
recomputes only the kernels and cases its value moves (``descent``: bit for bit the whole evaluation).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

import numpy as np

from ..hardware.parameters import Calibration, ReadOnlyTable
from ..precision import rate_class
from ..prediction import KernelTerms, kernel_terms
from .captured_host import captured_host_parameters
from .collectives import link_parameters
from .data import MeasuredCase, MeasurementSet, fit_cases, sample_set_of, workload_of
from .descent import KernelArrays, descend
from .metrics import log_error
from .parallel import parallel_parameters
from .programs import StepSet, fit_host, load_steps, step_files
from .rounding import rounded

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU

__all__ = ["ceilings", "floor_shift", "fit", "fit_kernels", "fit_split", "host_parameters", "FitResult", "GRIDS", "KEY_GRIDS", "KEYED_FITS",
           "MIN_CASES_PER_KEY",
           "PASSES", "TAIL_START", "TAIL_WEIGHT"]

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
#: the memory-efficient attention kernel's k-step is a key block's walk (2.5-20 us on an H200), not a GEMM's 64 elements of
#: k: its keys (``efficient_attention`` and its variants') are tried on this grid
BLOCK_KSTEP_GRID = np.linspace(0.0, 40e-6, 161)
#: (parameter, key prefix) -> the grid the keys so named are tried on in place of GRIDS' for the parameter
KEY_GRIDS: dict[tuple[str, str], np.ndarray] = {("kstep_latency", "efficient_attention"): BLOCK_KSTEP_GRID}
#: the manifest's fits that name a key prefix: their files are read by the kernel fit's second stage, for those keys alone
KEYED_FITS = ("efficient_attention",)
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


def ceilings(mset: MeasurementSet) -> dict[str, Any]:
    """The directly measured ceilings in SI units, rounded as the spec keeps them."""
    c = mset.ceilings
    rates: dict[str, float] = {}
    for run in c["matmul_runs"]:
        key = rate_class(run["dtype"])
        rates[key] = max(rates.get(key, 0.0), run["flops_per_s"])
    return {
        "matmul_rate": {k: rounded(v, "matmul_rate") for k, v in rates.items()},
        "copy_bandwidth": rounded(c["copy_bandwidth_bytes_per_s"], "copy_bandwidth"),
        "read_bandwidth": rounded(c["read_bandwidth_bytes_per_s"], "read_bandwidth"),
        "launch_floor": rounded(c["launch_floor_s"], "launch_floor"),
    }


def floor_shift(mset: MeasurementSet, launch_floor: float) -> float:
    """How far a file's own measured launch floor sits above ``launch_floor`` (0 for a file measured without its
    ceilings: NB its cases are taken at the first file's floor, which moves by ~0.5 us from machine to machine)."""
    return ceilings(mset)["launch_floor"] - launch_floor if mset.ceilings.get("launch_floor_s") else 0.0


@dataclass(frozen=True)
class FitResult:
    """The fitted calibration (unrounded) and what it was fitted on."""

    calibration: Calibration
    train_cases: int
    holdout_cases: int
    objective: float  # the loss (mean of the hinged |log(predicted / measured)|) on the training cases
    train_ids: tuple[str, ...] = ()  # the ids of the cases fitted on, in the order the fit read them


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


def fit_split(msets: "MeasurementSet | Sequence[MeasurementSet]") -> list[tuple[list[MeasuredCase], list[MeasuredCase]]]:
    """Per file, in order: (training, held-out) cases, its ``fit_cases``; the fit reads the training cases alone."""
    sets = [msets] if isinstance(msets, MeasurementSet) else list(msets)
    return [fit_cases(m) for m in sets]


def fit_kernels(msets: "MeasurementSet | Sequence[MeasurementSet]", gpu: "GPU",
                keyed: Sequence[tuple[MeasurementSet, str]] = ()) -> FitResult:
    """The kernels' parameters (the ceilings, the gap, the per-key tables, the overlap exponent) fitted to the training
    cases of ``msets`` (``fit_split``) for ``gpu``; the host and link parameters stay as ``Calibration`` defaults.

    ``keyed``: (file, key prefix) pairs for a second stage: the entries of the keys that start with a prefix are
    fitted again on the first stage's cases and the keyed files' training cases together, every other parameter
    held at the first stage's value (a draw measured for one kernel shapes that kernel's entries alone: in the first
    stage it would move the shared kernel gap, and with it every kernel's entries).
    """
    sets = [msets] if isinstance(msets, MeasurementSet) else list(msets)
    base = Calibration(gpu=gpu.name, calibrated=True, source="fit", **ceilings(sets[0]), kernel_gap=0.0,
                       kernel_latency={}, compute_efficiency={}, memory_efficiency={}, wave_latency={}, kstep_latency={}, block_bandwidth={},
                       overlap_exponent=float("inf"))
    read = [_read(m, split, gpu, base) for m, split in zip(sets, fit_split(sets))]
    cal, best, train_terms, train, held = _descended(read, base, base, None)
    if keyed:  # the first stage's files as read, and the keyed files
        prefixes = tuple(dict.fromkeys(prefix for _, prefix in keyed))
        read += [_read(m, split, gpu, base) for m, split in zip([m for m, _ in keyed], fit_split([m for m, _ in keyed]))]
        cal, best, train_terms, train, held = _descended(read, base, cal, prefixes)
    return FitResult(_used_keys(cal, train_terms), len(train), len(held), best, tuple(c.id for c in train))


#: a file as the fit reads it: (the file, its training cases, its held-out cases, each training case's kernels' terms
#: and counts)
_Read = tuple[MeasurementSet, list[MeasuredCase], list[MeasuredCase], list[tuple[KernelTerms, ...]],
              list[tuple[Any, ...]]]


def _read(m: MeasurementSet, split: tuple[list[MeasuredCase], list[MeasuredCase]], gpu: "GPU", base: Calibration) -> _Read:
    """A file's training and held-out cases (``split``: its ``fit_split``) and its training kernels' terms and counts."""
    train, held = split
    counted = [workload_of(c).counted for c in train]
    return m, train, held, [tuple(kernel_terms(k, gpu, base) for k, _ in w) for w in counted], \
        [tuple(n for _, n in w) for w in counted]


def _descended(read: list[_Read], base: Calibration, start: Calibration, prefixes: Optional[tuple[str, ...]]
               ) -> tuple[Calibration, float, list[tuple[KernelTerms, ...]], list[MeasuredCase], list[MeasuredCase]]:
    """(calibration, loss, training kernels' terms, training cases, held-out cases) of coordinate descent from
    ``start`` on the training cases of the files ``read``, over every coordinate, or (``prefixes``) those of the keys
    so named."""
    sets = [m for m, *_ in read]
    split = [(t, h) for _, t, h, _, _ in read]
    train = [c for t, _ in split for c in t]
    held = [c for _, h in split for c in h]
    train_terms = [terms for *_, per, _ in read for terms in per]
    counts = [ns for *_, per in read for ns in per]
    kernels = KernelArrays([(i, t, n) for i, (terms, ns) in enumerate(zip(train_terms, counts)) for t, n in zip(terms, ns)],
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
    shifts = np.concatenate([np.full(len(t), floor_shift(m, base.launch_floor)) for m, (t, _) in zip(sets, split)])

    def errors(predicted: np.ndarray, at: Any) -> np.ndarray:
        """e + TAIL_WEIGHT max(e - TAIL_START, 0), e = |log(predicted / measured)|, of the cases ``at``."""
        err = log_error(predicted + shifts[at], measured[at])
        return err + TAIL_WEIGHT * np.maximum(err - TAIL_START, 0.0)  # type: ignore[no-any-return]

    coordinates = [(name, key) for name, key in _coordinates(train_terms)
                   if prefixes is None or (key is not None and key.startswith(prefixes))]
    own = {(name, key): grid for name, key in coordinates if key is not None
           for (of, prefix), grid in KEY_GRIDS.items() if name == of and key.startswith(prefix)}
    cal, best = descend(kernels, start, coordinates, GRIDS, errors, groups, PASSES, own)
    return cal, best, train_terms, train, held


def fit(msets: "MeasurementSet | Sequence[MeasurementSet]", gpu: "GPU", steps: Optional[Sequence[StepSet]] = None,
        keyed: Sequence[tuple[MeasurementSet, str]] = ()) -> FitResult:
    """Fit the predictor's parameters to the training cases of ``msets`` for ``gpu`` (its SM count and peaks).

    The ceilings are the first file's; the kernels' parameters are fitted on every file's training cases
    (``fit_kernels``; ``keyed`` files in its second stage); the host times of eager programs on whole steps (``steps``, default the committed step
    files), captured programs' on the committed counts of theirs (``captured_host``), FSDP's host time and the links'
    on their own files (``parallel_parameters``, ``link_parameters``).
    """
    kernels = fit_kernels(msets, gpu, keyed)
    links = link_parameters()
    links["link_latency"] = ReadOnlyTable(links["link_latency"])
    links["link_efficiency"] = ReadOnlyTable(links["link_efficiency"])
    links["link_misaligned"] = ReadOnlyTable(links["link_misaligned"])
    host = host_parameters(steps)
    captured = captured_host_parameters(host["host_probe"])
    captured["op_host_weight"] = ReadOnlyTable(captured["op_host_weight"])
    fitted = kernels.calibration.replace(**host, **captured, **parallel_parameters(), **links)
    return dataclasses.replace(kernels, calibration=fitted)


def host_parameters(steps: Optional[Sequence[StepSet]] = None) -> dict[str, float]:
    """The host-time parameters fitted on whole steps (``programs.fit_host``; default: the committed step files)."""
    sets = list(steps) if steps is not None else [load_steps(name) for name in step_files("fit")]
    host = fit_host(sets)
    return {name: getattr(host, name) for name in type(host).model_fields if name.startswith("host_")}
