"""Calibrated expected time: what a workload will really take on a GPU, not just its bound.

The model, with every parameter named and measured or fitted (``measured:`` in the spec):

    t = launch_floor + sum_k body_k + (launches - 1) * kernel_gap
    body_k = latency[op] + softmax_p(t_compute_k / compute_efficiency[op],
                                     t_memory_k / memory_efficiency[op])

  where [op] is the kernel's operator entry if the calibration has one, else its kind's, and
  softmax_p(a, b) = (a**p + b**p)**(1/p) with the fitted ``overlap_exponent`` p (p = inf is max).

- ``launch_floor``: the measured time of an empty kernel under the same timer; ``kernel_gap``:
  what each further launch adds; ``latency[kind]``: a kernel's fixed cost (ramp-up, tail,
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

A GPU with no ``measured:`` section uses ``DEFAULTS`` (fractions of its datasheet figures,
taken from the H200 measurements) for its ceilings, borrows the per-kind efficiencies and
latencies of ``REFERENCE_GPU``'s calibration, and says so in ``Prediction.notes``.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

import html

from ._display import fmt_seconds, html_table, plain
from ._validate import as_result, flag
from .errors import PerformanceWarning
from .hardware import as_gpu
from .hardware.schema import GPU
from .precision import rate_class, storage_bytes
from .sol import roofline
from .workload import Kernel, Workload, as_workload

__all__ = [
    "Calibration",
    "KernelTerms",
    "KernelPrediction",
    "Prediction",
    "calibration",
    "kernel_terms",
    "predict",
    "DEFAULTS",
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

#: for a GPU whose spec has no ``measured:`` section
DEFAULTS: dict[str, Any] = {
    "matmul_fraction": 0.70,  # H200: 691 of 989 TFLOP/s bf16 (fp16 0.68, fp8 0.65, int8 0.47)
    "bandwidth_fraction": 0.89,  # H200: 4.27 of 4.8 TB/s, device-to-device copy
    "launch_floor_s": 4.5e-6,  # H200: 4.48 us, do_bench of a one-element kernel
    "kernel_gap_s": 1.5e-6,
}


@dataclass(frozen=True)
class Calibration:
    """The parameters the predictor uses for one GPU, and where they came from."""

    gpu: str
    calibrated: bool
    source: str
    matmul_flops: Mapping[str, float]
    bandwidth: float
    launch_s: float
    gap_s: float
    latency_s: Mapping[str, float]
    compute_efficiency: Mapping[str, float]
    memory_efficiency: Mapping[str, float]
    misaligned_penalty: float
    small_channel_penalty: float
    overlap: float = float("inf")

    def lookup(self, table: str, terms: "KernelTerms", default: float) -> Any:
        """A per-kernel parameter: the operator's entry, else the kind's, else ``default``.

        Where ``terms.variant_mask`` holds (flash attention that splits the KV sequence,
        a depthwise conv on CUDA cores) the ``<op>_<variant>`` entry is used instead, element by
        element in a sweep, if the calibration has one.
        """
        mapping = getattr(self, table)
        base = mapping.get(terms.op, mapping.get(terms.kind, default))
        if not terms.variant or not np.any(terms.variant_mask):
            return base
        return np.where(terms.variant_mask, mapping.get(f"{terms.op}_{terms.variant}", base), base)

    def matmul_rate(self, gpu: GPU, precision: str) -> float:
        """Achievable dense matmul FLOP/s of ``precision``: measured, else the default fraction of peak."""
        key = rate_class(precision)
        if key in self.matmul_flops:
            return self.matmul_flops[key]
        return DEFAULTS["matmul_fraction"] * gpu.peak_flops(precision, "matrix")

    def with_params(self, **changes: Any) -> "Calibration":
        """A copy with some parameters replaced (used when fitting)."""
        return Calibration(**{**self.__dict__, **changes})


def calibration(gpu: Any) -> Calibration:
    """The predictor's parameters for ``gpu``: its ``measured:`` section, else defaults.

    Defaults: the ceilings are ``DEFAULTS`` fractions of the GPU's own datasheet peaks and
    bandwidth; the per-kind efficiencies, latencies, penalties and overlap are borrowed from the
    reference calibration (``REFERENCE_GPU``, measured), since they describe the software's
    kernels more than the chip (NB: a different GPU generation can differ).
    """
    g = as_gpu(gpu)
    m = g.measured
    if m is None:
        reference = _reference_calibration()
        borrowed = {} if reference is None else dict(
            gap_s=reference.gap_s, latency_s=reference.latency_s, compute_efficiency=reference.compute_efficiency,
            memory_efficiency=reference.memory_efficiency, misaligned_penalty=reference.misaligned_penalty,
            small_channel_penalty=reference.small_channel_penalty, overlap=reference.overlap)
        return Calibration(
            gpu=g.name,
            calibrated=False,
            source=(
                f"{g.name} has no measured section: uncalibrated defaults (matmul {DEFAULTS['matmul_fraction']:.0%} "
                f"of the dense peak, bandwidth {DEFAULTS['bandwidth_fraction']:.0%} of the datasheet, launch floor "
                f"{DEFAULTS['launch_floor_s'] * 1e6:g} us; kernel efficiencies borrowed from {REFERENCE_GPU}'s calibration)"
            ),
            matmul_flops={},
            bandwidth=DEFAULTS["bandwidth_fraction"] * g.memory_bandwidth,
            launch_s=DEFAULTS["launch_floor_s"],
            **{"gap_s": DEFAULTS["kernel_gap_s"], "latency_s": {}, "compute_efficiency": {}, "memory_efficiency": {},
               "misaligned_penalty": 1.0, "small_channel_penalty": 1.0, **borrowed},
        )
    return Calibration(
        gpu=g.name,
        calibrated=True,
        source=f"measured on {g.name} {m.date}: {m.method}",
        matmul_flops={k: v * 1e12 for k, v in m.matmul_rate_tflops.items()},
        bandwidth=m.copy_bandwidth_tb_s * 1e12,
        launch_s=m.launch_floor_us * 1e-6,
        gap_s=m.kernel_gap_us * 1e-6,
        latency_s={k: v * 1e-6 for k, v in m.kernel_latency_us.items()},
        compute_efficiency=dict(m.compute_efficiency),
        memory_efficiency=dict(m.memory_efficiency),
        misaligned_penalty=m.misaligned_gemm_penalty,
        small_channel_penalty=m.small_channel_penalty,
        overlap=float(m.overlap_exponent),
    )


#: the measured GPU whose kernel efficiencies an uncalibrated GPU borrows
REFERENCE_GPU = "h200-sxm"


@functools.lru_cache(maxsize=1)
def _reference_calibration() -> "Calibration | None":
    from .hardware import load_spec_file, spec_dirs

    path = spec_dirs()[-1] / f"{REFERENCE_GPU}.yaml"
    if not path.is_file():
        return None
    reference = load_spec_file(path)
    return calibration(reference) if reference.measured is not None else None


def _ceil(a: Any, b: Any) -> np.ndarray:
    return np.ceil(np.asarray(a, dtype=np.float64) / b)


def gemm_compute_time(m: Any, n: Any, k: Any, batch: Any, rate: float, sms: int) -> tuple[np.ndarray, np.ndarray]:
    """(seconds, wave efficiency) of the best tile for a [batch, m, k] @ [k, n] GEMM at ``rate`` FLOP/s.

    Wave efficiency = useful FLOPs / FLOPs the waves occupy (1.0: no tile or wave loss).
    """
    per_sm = rate / sms
    best: Any = None
    for tm, tn in TILES:
        tiles = _ceil(m, tm) * _ceil(n, tn) * batch
        # split-K fills idle SMs when the grid is smaller than the machine
        split = np.clip(np.floor(sms / tiles), 1, np.maximum(1, np.floor(k / MIN_SPLIT_K)))
        waves = _ceil(tiles * split, sms)
        t = waves * 2.0 * tm * tn * _ceil(k, split) / per_sm
        best = t if best is None else np.minimum(best, t)
    useful = 2.0 * m * n * k * batch / rate
    return best, useful / best


@dataclass(frozen=True)
class KernelTerms:
    """A kernel's raw times at the calibrated ceilings (efficiency 1), and its flags."""

    kind: str
    op: str
    variant: str  # "splitkv": flash attention with fewer work items than SMs; "depthwise": conv on CUDA cores
    variant_mask: np.ndarray  # where the variant applies
    launches: np.ndarray
    present: np.ndarray  # False where a sweep gives the kernel no work (e.g. no NCHW transform)
    t_compute: np.ndarray
    t_memory: np.ndarray
    wave_efficiency: np.ndarray
    misaligned: np.ndarray
    small_channels: np.ndarray


def kernel_terms(kernel: Kernel, gpu: GPU, cal: Calibration) -> KernelTerms:
    """Raw compute and memory times of one kernel and the flags the efficiencies act on."""
    shape = kernel.shape
    per = ALIGN_BYTES / storage_bytes(kernel.precision)
    t_memory = kernel.bytes / cal.bandwidth
    t_compute = np.zeros(shape)
    if np.any(kernel.vector_flops > 0):
        t_compute = kernel.vector_flops / gpu.peak_flops(kernel.vector_precision, "vector")
    wave = np.ones(shape)
    misaligned = np.zeros(shape, dtype=bool)
    small = np.zeros(shape, dtype=bool)
    g = kernel.gemm
    variant, variant_mask = "", np.zeros(shape, dtype=bool)
    if np.any(kernel.matrix_flops > 0):
        rate = cal.matmul_rate(gpu, kernel.precision)
        if g is not None and kernel.kind == "gemm":
            t_mat, wave = gemm_compute_time(g.m, g.n, g.k, g.batch, rate, gpu.sm_count)
            misaligned = np.broadcast_to((np.mod(g.k, per) != 0) | (np.mod(g.n, per) != 0), shape)
        elif g is not None and kernel.kind == "conv" and g.channels is not None:
            c = g.channels
            spatial = g.k / c  # R*S
            depthwise = (g.batch > 1) & (c < per) & (g.n < per)
            small = np.broadcast_to((c < per) & ~depthwise, shape)
            t_tc, wave = gemm_compute_time(g.m, g.n, _ceil(c, per) * per * spatial, g.batch, rate, gpu.sm_count)
            t_cuda = kernel.matrix_flops / gpu.peak_flops("fp32", "vector")
            t_mat = np.where(depthwise, t_cuda, t_tc)
            wave = np.where(depthwise, 1.0, wave)
            variant, variant_mask = "depthwise", depthwise
        elif g is not None and kernel.kind == "attention":
            items = _ceil(g.m, ATTENTION_QUERY_TILE) * g.batch
            wave = items / (_ceil(items, gpu.sm_count) * gpu.sm_count)
            t_mat = kernel.matrix_flops / rate / wave
            variant, variant_mask = "splitkv", items < gpu.sm_count
        else:
            t_mat = kernel.matrix_flops / rate
        t_compute = np.maximum(t_compute, t_mat)
    present = (kernel.bytes > 0) | (kernel.executed_flops > 0)

    def b(x: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(x), shape)

    return KernelTerms(kernel.kind, kernel.op, variant, b(variant_mask), b(kernel.launches), b(present), b(t_compute), b(t_memory), b(wave), b(misaligned), b(small))


def kernel_seconds(terms: KernelTerms, cal: Calibration) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(body seconds, compute seconds, memory seconds) of one kernel under ``cal``'s efficiencies."""
    compute = terms.t_compute / cal.lookup("compute_efficiency", terms, 1.0)
    compute = np.where(terms.misaligned, compute * cal.misaligned_penalty, compute)
    compute = np.where(terms.small_channels, compute * cal.small_channel_penalty, compute)
    memory = terms.t_memory / cal.lookup("memory_efficiency", terms, 1.0)
    body = np.where(terms.present, cal.lookup("latency_s", terms, 0.0) + soft_max(compute, memory, cal.overlap), 0.0)
    return body, compute, memory


def soft_max(a: Any, b: Any, p: float) -> np.ndarray:
    """(a**p + b**p)**(1/p): max(a, b) at p = inf, a + b at p = 1 (compute and memory only partly overlap)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not np.isfinite(p):
        return np.maximum(a, b)
    top = np.maximum(np.maximum(a, b), 1e-300)
    return top * ((a / top) ** p + (b / top) ** p) ** (1.0 / p)


def combine(terms: tuple[KernelTerms, ...], cal: Calibration) -> np.ndarray:
    """Workload seconds: launch floor + kernel bodies + a gap per further launch."""
    total: Any = cal.launch_s
    launches: Any = 0.0
    for t in terms:
        body, _, _ = kernel_seconds(t, cal)
        total = total + body
        launches = launches + np.where(t.present, t.launches, 0.0)
    return np.asarray(total + cal.gap_s * np.maximum(launches - 1, 0))


@dataclass(frozen=True)
class KernelPrediction:
    """One kernel's expected time (its body, without the workload's launch floor) and its limiter."""

    name: str
    kind: str
    seconds: Any
    t_compute: Any
    t_memory: Any
    t_sol: Any
    wave_efficiency: Any
    limiter: Any
    misaligned: Any


@dataclass(frozen=True)
class Prediction:
    """Expected time of a workload on one GPU, per kernel, with the calibration it used."""

    workload: str
    gpu: str
    seconds: Any
    t_sol: Any
    calibrated: bool
    launch_floor: float
    kernels: tuple[KernelPrediction, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def sol_fraction(self) -> Any:
        """T_SOL / predicted time: the fraction of the speed of light this prediction reaches."""
        return as_result(np.asarray(self.t_sol) / np.asarray(self.seconds))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON; times in seconds."""
        out = {k: plain(v) for k, v in self.__dict__.items() if k != "kernels"}
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
        rows = [(k.name, k.kind, k.seconds * 1e6, k.t_compute * 1e6, k.t_memory * 1e6, k.t_sol * 1e6,
                 k.wave_efficiency, k.limiter) for k in self.kernels]
        rows.append(("launch floor", "", self.launch_floor * 1e6, "", "", "", "", ""))
        rows.append(("total", "", self.seconds * 1e6, "", "", self.t_sol * 1e6, "", ""))
        header = ("kernel", "kind", "predicted us", "compute us", "memory us", "t_sol us", "wave eff.", "limiter")
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return html_table(header, rows, f"Prediction of {self.workload} on {self.gpu}") + notes


def _limiter(terms: KernelTerms, cal: Calibration, compute: np.ndarray, memory: np.ndarray) -> Any:
    work = np.maximum(compute, memory)
    overhead = cal.lookup("latency_s", terms, 0.0) + cal.gap_s
    name = np.where(compute >= memory, "compute", "memory")
    name = np.where((compute >= memory) & (terms.wave_efficiency < 0.75), "wave quantization", name)
    name = np.where((compute >= memory) & terms.small_channels, "small channels", name)
    name = np.where((compute >= memory) & terms.misaligned, "misaligned", name)
    name = np.where(overhead > work, "launch/latency", name)
    return as_result(np.where(terms.present, name, "absent"))


def predict(workload: Workload, gpu: Any, warn: bool = True) -> Prediction:
    """Calibrated expected time of ``workload`` on ``gpu`` (seconds, per-kernel breakdown, limiters)."""
    w = as_workload(workload)
    g = as_gpu(gpu)
    flag("warn", warn)
    cal = calibration(g)
    bound = roofline(w, g)
    all_terms = tuple(kernel_terms(k, g, cal) for k in w.kernels)
    rows = []
    for k, t, kr in zip(w.kernels, all_terms, bound.kernels):
        body, compute, memory = kernel_seconds(t, cal)
        rows.append(
            KernelPrediction(
                name=k.name,
                kind=k.kind,
                seconds=as_result(body),
                t_compute=as_result(compute),
                t_memory=as_result(memory),
                t_sol=kr.t_sol,
                wave_efficiency=as_result(t.wave_efficiency),
                limiter=_limiter(t, cal, compute, memory),
                misaligned=as_result(t.misaligned),
            )
        )
    notes = [] if cal.calibrated else [cal.source]
    bad = [k.name for k, t in zip(w.kernels, all_terms) if np.any(t.misaligned)]
    if bad:
        message = (
            f"{w.name}: GEMM leading dimension (k or n) not a multiple of {ALIGN_BYTES} bytes in {', '.join(bad)}; "
            f"expect about {cal.misaligned_penalty:.2g}x the aligned compute time (pad e.g. a vocab to a multiple of 64)"
        )
        notes.append(message)
        if warn:
            warnings.warn(message, PerformanceWarning, stacklevel=2)
    return Prediction(
        workload=w.name,
        gpu=g.name,
        seconds=as_result(np.broadcast_to(combine(all_terms, cal), w.shape)),
        t_sol=bound.t_sol,
        calibrated=cal.calibrated,
        launch_floor=cal.launch_s,
        kernels=tuple(rows),
        notes=tuple(notes),
    )

