"""Calibrated expected time: what a workload will really take on a GPU, not just its bound.

The model, every parameter named once (``solkit.hardware.schema.PARAMETERS``) and measured or
fitted (``measured:`` in the spec):

    t = launch_floor + sum_k count_k * body_k + (launches - 1) * kernel_gap
    body_k = kernel_latency[key] + softmax_p(t_compute_k / compute_efficiency[key],
                                             t_memory_k / memory_efficiency[key])

  where [key] is the kernel's calibration key (``Kernel.op``: its operator, or a variant of
  it) if the calibration has an entry for it, else its kind's, and softmax_p(a, b) =
  (a**p + b**p)**(1/p) with the fitted ``overlap_exponent`` p (p = inf is max).

- ``launch_floor``: the measured time of an empty kernel under the same timer; ``kernel_gap``:
  what each further launch adds; ``kernel_latency``: a kernel's fixed cost (ramp-up, tail,
  cross-block reduction) beyond its work.
- ``t_memory`` = compulsory bytes / measured copy bandwidth.
- ``t_compute`` of a GEMM or implicit-GEMM conv: the tile/wave model at the measured
  large-GEMM rate of its precision. For each candidate output tile (TM x TN) the grid has
  ceil(m/TM) * ceil(n/TN) * batch tiles; when that is below the SM count, split-K spreads k
  over idle SMs; each SM runs ceil(tiles / SMs) waves of a full tile's work. The fastest
  candidate is taken (NB: the library's heuristic is not modelled). Flash attention: the same
  wave count over (128-query tile, head) work items. Vector work: the CUDA-core peak.
- Leading dimensions (k, n of a row-major GEMM) not multiples of 16 bytes lose vector loads:
  ``misaligned_gemm_penalty`` x the compute time, and a ``PerformanceWarning``.
- Convs with fewer than 16 bytes of input channels per group (a 3-channel stem) pad channels
  and run a slower kernel: channels padded to 16 bytes and ``small_channel_penalty`` x.
  Grouped convs with under 16 bytes of channels per group on both sides (depthwise) run on
  CUDA cores.

A GPU with no ``measured:`` section takes ``REFERENCE_GPU``'s measured shares of the datasheet
as its ceilings (matmul rate per precision, copy bandwidth) and that calibration's launch floor,
latencies and efficiencies, and says so in ``Prediction.notes``. Cost: one pass over the
workload's distinct kernels; plain Python for one shape, numpy for a sweep.
"""

from __future__ import annotations

import html
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

import numpy as np

from ._display import fmt_seconds, html_table, plain
from ._num import Num, any_, broadcast_to, ceil, maximum, not_, product, result, shape_of, where
from ._validate import flag
from .errors import PerformanceWarning, SpecError
from .hardware import as_gpu, load_spec_file, shipped_dir
from .hardware.parameters import PARAMETERS, Calibration, ReadOnlyTable
from .ops.registry import calibration_keys
from .precision import PRECISIONS, rate_class
from .sol import roofline
from .workload import Kernel, Workload, as_workload

if TYPE_CHECKING:  # pragma: no cover
    from .hardware.schema import GPU, Measured

__all__ = [
    "Calibration",
    "KernelTerms",
    "KernelPrediction",
    "Prediction",
    "calibration",
    "kernel_terms",
    "kernel_seconds",
    "combine",
    "gemm_compute_time",
    "soft_max",
    "predict",
    "REFERENCE_GPU",
    "TILES",
]

#: candidate output tiles (TM, TN) of a tensor-core GEMM kernel
TILES: tuple[tuple[int, int], ...] = ((128, 256), (256, 128), (128, 128), (64, 256), (64, 128), (64, 64))
#: flash attention's query tile per work item
ATTENTION_QUERY_TILE = 128
#: split-K never cuts k below this many elements per split
MIN_SPLIT_K = 256
#: leading dimensions and conv channels should be multiples of this many bytes
ALIGN_BYTES = 16
#: the measured GPU whose calibration an uncalibrated GPU borrows (read from the shipped specs)
REFERENCE_GPU = "h200-sxm"


# ---- the calibration of a GPU -----------------------------------------------------------------


def calibration(gpu: Any) -> Calibration:
    """The predictor's parameters for ``gpu`` in SI units: its ``measured:`` section, else the reference's shares.

    Computed once per loaded spec. The per-key tables' keys must be kernel kinds or calibration
    keys of registered operators (``solkit.ops.calibration_keys()``); anything else is a
    ``SpecError`` naming the file and the field.
    """
    g = as_gpu(gpu)
    memo = g.memo
    cal = memo.get("calibration")
    if cal is None:
        cal = memo["calibration"] = _borrowed(g) if g.measured is None else _measured(g, g.measured)
    return cal


def _measured(g: "GPU", measured: "Measured") -> Calibration:
    keys = set(calibration_keys())
    for p in PARAMETERS:
        if p.keyed and p.name != "matmul_rate":
            unknown = [k for k in getattr(measured, p.file_key) if k not in keys]
            if unknown:
                raise SpecError(f"{g.path or g.name}: field 'measured.{p.file_key}': {unknown[0]!r} is neither a kernel "
                                f"kind nor a registered operator's calibration key; known: {', '.join(sorted(keys))}")
    return measured.calibration(g.name)


def _borrowed(g: "GPU") -> Calibration:
    """An uncalibrated GPU: ceilings at the reference's measured shares of its own datasheet, the rest borrowed."""
    ref_gpu = load_spec_file(shipped_dir() / f"{REFERENCE_GPU}.yaml")
    ref = calibration(ref_gpu)
    bf16_share = ref.matmul_rate["bf16"] / ref_gpu.peak_flops("bf16")
    rates = {}
    for cls in g.precisions:
        try:
            peak = g.peak_flops(cls, "matrix")
        except LookupError:
            continue
        share = ref.matmul_rate[cls] / ref_gpu.peak_flops(cls) if cls in ref.matmul_rate else bf16_share
        rates[cls] = share * peak
    bw_share = ref.copy_bandwidth / ref_gpu.memory_bandwidth
    source = (f"{g.name} has no measured section: uncalibrated, at {REFERENCE_GPU}'s measured shares of the datasheet "
              f"(matmul {bf16_share:.0%} of the dense bf16 peak, copy {bw_share:.0%} of the bandwidth), its launch "
              f"floor ({ref.launch_floor * 1e6:g} us) and its kernel efficiencies and latencies")
    return ref.replace(gpu=g.name, calibrated=False, source=source, matmul_rate=ReadOnlyTable(rates),
                       copy_bandwidth=bw_share * g.memory_bandwidth, read_bandwidth=None)


def matmul_rate(cal: Calibration, gpu: "GPU", precision: str) -> float:
    """Achievable dense matmul FLOP/s of ``precision``: measured, else the bf16 measured share of its peak."""
    cls = rate_class(precision)
    rate = cal.matmul_rate.get(cls)
    if rate is None:
        share = cal.matmul_rate["bf16"] / gpu.peak_flops("bf16") if "bf16" in cal.matmul_rate else 1.0
        rate = share * gpu.peak_flops(precision, "matrix")
    return rate


# ---- per-kernel terms -------------------------------------------------------------------------


def gemm_compute_time(m: Any, n: Any, k: Any, batch: Any, rate: float, sms: int) -> tuple[Num, Num]:
    """(seconds, wave efficiency) of the best tile for a [batch, m, k] @ [k, n] GEMM at ``rate`` FLOP/s.

    For each tile TM x TN: tiles = ceil(m/TM) * ceil(n/TN) * batch; split = clip(floor(SMs / tiles),
    1, max(1, floor(k / MIN_SPLIT_K))); seconds = ceil(tiles * split / SMs) waves of
    2*TM*TN*ceil(k / split) FLOPs at rate / SMs each. Wave efficiency = useful FLOPs / FLOPs the
    waves occupy (1.0: no tile or wave loss).

    A sweep computes the same numbers in two regimes: a grid of at least SMs tiles splits
    nothing (split = 1: ceil(tiles / SMs) waves of the whole k); a smaller one fits one wave
    (tiles * split <= SMs) of ceil(k / split), computed on those elements only.
    """
    if type(m) is float and type(n) is float and type(k) is float and type(batch) is float:  # pragma: no mutate
        return _gemm_compute_time_one(m, n, k, batch, rate, sms)
    shape = np.broadcast_shapes(np.shape(m), np.shape(n), np.shape(k), np.shape(batch))
    if not shape:  # numpy scalars
        return _gemm_compute_time_one(float(m), float(n), float(k), float(batch), rate, sms)
    per_sm = rate / sms
    max_split = np.maximum(1.0, np.floor_divide(k, MIN_SPLIT_K))
    k_arr, max_split = np.broadcast_to(k, shape), np.broadcast_to(max_split, shape)
    rows = {tm: _ceil_div(m, tm) for tm in (64, 128, 256)}
    cols = {tn: product(_ceil_div(n, tn), batch) for tn in (64, 128, 256)}
    k_scalar = np.ndim(k) == 0
    tiles, t = np.empty(shape), np.empty(shape)
    best: Any = None
    for tm, tn in TILES:
        np.multiply(rows[tm], cols[tn], out=tiles)
        per_wave = 2.0 * tm * tn / per_sm  # seconds of one tile's multiply-adds per element of k
        np.divide(tiles, sms, out=t)
        np.ceil(t, out=t)
        np.multiply(t, per_wave * (float(k) if k_scalar else k), out=t)  # split = 1: ceil(tiles / SMs) waves of all of k
        small = np.flatnonzero(tiles < sms)
        if small.size:  # one wave; split-K spreads k over the idle SMs
            few = tiles.reshape(-1)[small]
            split = np.clip(np.floor_divide(sms, few), 1.0, max_split.reshape(-1)[small])
            t.reshape(-1)[small] = per_wave * np.ceil(k_arr.reshape(-1)[small] / split)
        if best is None:
            best, t = t, np.empty(shape)
        else:
            np.minimum(best, t, out=best)
    useful = product(2.0 / rate, m, n, k, batch)  # seconds at the rate, no tile or wave loss
    return best, np.divide(useful, best, out=useful if type(useful) is np.ndarray and useful.shape == best.shape else None)


def _ceil_div(x: Any, d: int) -> Any:
    """ceil(x / d) (one buffer for an array)."""
    if type(x) is float:
        return float(math.ceil(x / d))
    out = np.divide(x, d)
    return np.ceil(out, out=out)


def _gemm_compute_time_one(m: float, n: float, k: float, batch: float, rate: float, sms: int) -> tuple[float, float]:
    """``gemm_compute_time`` of one shape, in plain Python (a test checks that both agree)."""
    per_sm = rate / sms
    max_split = max(1.0, k // MIN_SPLIT_K)
    best = math.inf
    for tm, tn in TILES:
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
        split = min(max(float(sms // tiles), 1.0), max_split)
        best = min(best, math.ceil(tiles * split / sms) * (2.0 * tm * tn / per_sm * math.ceil(k / split)))
    return best, 2.0 * m * n * k * batch / rate / best


class KernelTerms(NamedTuple):
    """A kernel's raw times at the calibrated ceilings (efficiency 1), and its flags."""

    kind: str
    op: str
    variant: str  # "splitkv": flash attention with fewer work items than SMs; "depthwise": conv on CUDA cores
    variant_mask: Any  # where the variant applies
    launches: Num
    present: Any  # False where a sweep gives the kernel no work (e.g. no NCHW transform)
    t_compute: Num
    t_memory: Num
    wave_efficiency: Num
    misaligned: Any
    small_channels: Any


def kernel_terms(kernel: Kernel, gpu: "GPU", cal: Calibration) -> KernelTerms:
    """Raw compute and memory times of one kernel and the flags the efficiencies act on."""
    per = ALIGN_BYTES / PRECISIONS[kernel.precision]  # elements in 16 bytes
    nbytes = kernel.bytes_read + kernel.bytes_written
    t_memory = nbytes / cal.copy_bandwidth
    vf, mf = kernel.vector_flops, kernel.matrix_flops
    t_compute: Any = vf / gpu.peak_flops(kernel.vector_precision, "vector") if any_(vf > 0) else 0.0
    t_mat: Any
    wave: Any = 1.0
    misaligned: Any = False
    small: Any = False
    variant: str = ""
    variant_mask: Any = False
    g = kernel.gemm
    if any_(mf > 0):
        rate = matmul_rate(cal, gpu, kernel.precision)
        if g is not None and kernel.kind == "gemm":
            t_mat, wave = gemm_compute_time(g.m, g.n, g.k, g.batch, rate, gpu.sm_count)
            misaligned = (g.k % per != 0) | (g.n % per != 0)
        elif g is not None and kernel.kind == "conv" and g.channels is not None:
            c = g.channels
            depthwise = (g.batch > 1) & (c < per) & (g.n < per)
            small = (c < per) & not_(depthwise)
            # channels padded to 16 bytes: k = ceil(c / per) * per * R*S
            t_tc, wave_tc = gemm_compute_time(g.m, g.n, ceil(c / per) * per * (g.k / c), g.batch, rate, gpu.sm_count)
            t_mat = where(depthwise, mf / gpu.peak_flops("fp32", "vector"), t_tc)
            wave = where(depthwise, 1.0, wave_tc)
            variant, variant_mask = "depthwise", depthwise
        elif g is not None and kernel.kind == "attention":
            items = ceil(g.m / ATTENTION_QUERY_TILE) * g.batch
            wave = items / (ceil(items / gpu.sm_count) * gpu.sm_count)
            t_mat = mf / rate / wave
            variant, variant_mask = "splitkv", items < gpu.sm_count
        else:
            t_mat = mf / rate
        t_compute = t_mat if type(t_compute) is float and t_compute == 0.0 else maximum(t_compute, t_mat)
    present: Any = True if isinstance(nbytes, np.ndarray) and nbytes.min() > 0 else (nbytes > 0) | (vf + mf > 0)
    return KernelTerms(kernel.kind, kernel.op, variant, variant_mask, kernel.launches, present, t_compute, t_memory,
                       wave, misaligned, small)


def _lookup(table: Mapping[str, float], terms: KernelTerms, default: float) -> Any:
    """A per-kernel parameter: the kernel's key's entry, else its kind's, else ``default``; a variant's entry where it applies."""
    base = table.get(terms.op, table.get(terms.kind, default))
    if not terms.variant or not any_(terms.variant_mask):
        return base
    return where(terms.variant_mask, table.get(f"{terms.op}_{terms.variant}", base), base)


def soft_max(a: Any, b: Any, p: float) -> Any:
    """(a**p + b**p)**(1/p): max(a, b) at p = inf, a + b at p = 1 (compute and memory only partly overlap)."""
    if not math.isfinite(p):
        return maximum(a, b)
    if p == 2.0:
        return math.hypot(a, b) if type(a) is float and type(b) is float else np.hypot(a, b)
    if type(a) is float and type(b) is float:
        top = max(a, b, 1e-300)
        return top * ((a / top) ** p + (b / top) ** p) ** (1.0 / p)
    top = np.maximum(np.maximum(a, b), 1e-300)
    return top * ((a / top) ** p + (b / top) ** p) ** (1.0 / p)


def kernel_seconds(terms: KernelTerms, cal: Calibration) -> tuple[Num, Num, Num]:
    """(body seconds, compute seconds, memory seconds) of one launch under ``cal``'s efficiencies."""
    compute = terms.t_compute / _lookup(cal.compute_efficiency, terms, 1.0)
    if any_(terms.misaligned):
        compute = where(terms.misaligned, compute * cal.misaligned_gemm_penalty, compute)
    if any_(terms.small_channels):
        compute = where(terms.small_channels, compute * cal.small_channel_penalty, compute)
    memory = terms.t_memory / _lookup(cal.memory_efficiency, terms, 1.0)
    body = soft_max(compute, memory, cal.overlap_exponent)
    latency = _lookup(cal.kernel_latency, terms, 0.0)
    if type(latency) is not float or latency:
        body = body + latency
    return (body if terms.present is True else where(terms.present, body, 0.0)), compute, memory


def combine(terms: Any, cal: Calibration) -> Num:
    """Workload seconds from (terms, count) pairs: launch floor + kernel bodies + a gap per further launch."""
    total: Any = cal.launch_floor
    launches: Any = 0.0
    for t, count in terms:
        body, _, _ = kernel_seconds(t, cal)
        total = total + (body if count == 1 else body * count)
        n = where(t.present, t.launches, 0.0)
        launches = launches + (n if count == 1 else n * count)
    return total + cal.kernel_gap * maximum(launches - 1.0, 0.0)


# ---- the prediction ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelPrediction:
    """One kernel's expected time per launch (its body, without the workload's launch floor), its count and limiter."""

    name: str
    kind: str
    count: int
    seconds: Any
    t_compute: Any
    t_memory: Any
    t_sol: Any
    wave_efficiency: Any
    limiter: Any
    misaligned: Any


def _limiter(terms: KernelTerms, cal: Calibration, compute: Num, memory: Num) -> Any:
    """What bounds the kernel: compute, memory, wave quantization, small channels, misaligned, launch/latency or absent."""
    overhead = _lookup(cal.kernel_latency, terms, 0.0) + cal.kernel_gap
    names = np.where(np.asarray(compute) >= memory, "compute", "memory")
    compute_bound = np.asarray(compute) >= memory
    names = np.where(compute_bound & (np.asarray(terms.wave_efficiency) < 0.75), "wave quantization", names)
    names = np.where(compute_bound & terms.small_channels, "small channels", names)
    names = np.where(compute_bound & terms.misaligned, "misaligned", names)
    names = np.where(overhead > np.maximum(compute, memory), "launch/latency", names)
    return result(np.where(terms.present, names, "absent"))


class Prediction:
    """Expected time of a workload on one GPU, per kernel (``kernels``, built on demand), with the calibration it used."""

    __slots__ = ("workload", "gpu", "seconds", "t_sol", "calibrated", "launch_floor", "notes", "_rows")
    _FIELDS = ("workload", "gpu", "seconds", "t_sol", "calibrated", "launch_floor", "notes")

    workload: str
    gpu: str
    seconds: Any
    t_sol: Any
    calibrated: bool
    launch_floor: float
    notes: tuple[str, ...]
    _rows: Any  # () -> the per-kernel rows

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Prediction is immutable: cannot set {name!r}")

    @property
    def kernels(self) -> tuple[KernelPrediction, ...]:
        """Per-kernel breakdown, one row per distinct kernel (times per launch)."""
        return self._rows()

    @property
    def sol_fraction(self) -> Any:
        """T_SOL / predicted time: the fraction of the speed of light this prediction reaches."""
        return result(np.asarray(self.t_sol) / np.asarray(self.seconds))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON; times in seconds."""
        out = {k: plain(getattr(self, k)) for k in self._FIELDS}
        out["kernels"] = [{k: plain(v) for k, v in kp.__dict__.items()} for kp in self.kernels]
        return out

    def __repr__(self) -> str:
        if np.ndim(self.seconds):
            return f"Prediction({self.workload!r} on {self.gpu}: sweep of shape {np.shape(self.seconds)})"
        limits = ", ".join(f"{k.name}: {k.limiter}" for k in self.kernels)
        cal = "calibrated" if self.calibrated else "UNCALIBRATED defaults"
        return (f"Prediction({self.workload!r} on {self.gpu}: {fmt_seconds(self.seconds)} ({cal}), "
                f"T_SOL {fmt_seconds(self.t_sol)}, SOL fraction {self.sol_fraction:.2f}; {limits})")

    def _repr_html_(self) -> str:
        if np.ndim(self.seconds):
            return f"<p>{repr(self)}</p>"
        rows: list[tuple[Any, ...]] = [(k.name, k.count, k.kind, k.seconds * 1e6, k.t_compute * 1e6, k.t_memory * 1e6, k.t_sol * 1e6,
                 k.wave_efficiency, k.limiter) for k in self.kernels]
        rows.append(("launch floor", "", "", self.launch_floor * 1e6, "", "", "", "", ""))
        rows.append(("total", "", "", self.seconds * 1e6, "", "", self.t_sol * 1e6, "", ""))
        header = ("kernel", "count", "kind", "predicted us (each)", "compute us", "memory us", "t_sol us", "wave eff.",
                  "limiter")
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return html_table(header, rows, f"Prediction of {self.workload} on {self.gpu}") + notes


def predict(workload: Workload, gpu: Any, warn: bool = True) -> Prediction:
    """Calibrated expected time of ``workload`` on ``gpu`` (seconds, per-kernel breakdown, limiters).

    Never below T_SOL, the workload's or any kernel's: the spec loader keeps efficiencies at most 1
    and measured ceilings at most the datasheet, and the result is floored at the bound regardless.
    """
    w = as_workload(workload)
    g = as_gpu(gpu)
    flag("warn", warn)
    cal = calibration(g)
    bound = roofline(w, g)
    counted = w.counted
    terms = [(kernel_terms(k, g, cal), count) for k, count in counted]
    notes: list[str] = [] if cal.calibrated else [cal.source]
    bad = [k.name for (k, _), (t, _) in zip(counted, terms) if any_(t.misaligned)]
    if bad:
        message = (
            f"{w.name}: GEMM leading dimension (k or n) not a multiple of {ALIGN_BYTES} bytes in {', '.join(bad)}; "
            f"expect about {cal.misaligned_gemm_penalty:.2g}x the aligned compute time (pad e.g. a vocab to a multiple of 64)"
        )
        notes.append(message)
        if warn:
            warnings.warn(message, PerformanceWarning, stacklevel=2)

    def rows() -> tuple[KernelPrediction, ...]:
        out = []
        for (k, count), (t, _), kr in zip(counted, terms, bound.kernels):
            body, compute, memory = kernel_seconds(t, cal)
            # never below the kernel's bound, whatever the calibration says
            out.append(KernelPrediction(k.name, k.kind, count, result(maximum(body, kr.t_sol)), result(compute),
                                        result(memory), kr.t_sol, result(t.wave_efficiency), _limiter(t, cal, compute, memory),
                                        result(t.misaligned)))
        return tuple(out)

    p = object.__new__(Prediction)
    s = object.__setattr__
    s(p, "workload", w.name)
    s(p, "gpu", g.name)
    s(p, "seconds", broadcast_to(maximum(combine(terms, cal), bound.t_sol), w.shape))  # never below T_SOL
    s(p, "t_sol", bound.t_sol)
    s(p, "calibrated", cal.calibrated)
    s(p, "launch_floor", cal.launch_floor)
    s(p, "notes", tuple(notes))
    s(p, "_rows", rows)
    return p
