"""Roofline bound, SOL fraction, MFU and HFU: pure functions of a workload and a GPU spec.

A kernel's time bound is max(matrix FLOPs / matrix peak of its precision, vector FLOPs /
vector peak, bytes / DRAM bandwidth, link time). A collective's link time is the slower of its
two levels, max(intra-node bytes / link bandwidth, inter-node bytes / network bandwidth), per GPU
and per direction (``solkit.comm``; the levels run at once). A workload's T_SOL is the sum over its
kernels, each times the number of times it runs (they run one after another); collectives overlapped
on their own stream (``Link.overlap``) can at best hide behind all the rest, so T_SOL is
max(sum of the others, sum of each stream's overlapped ones). Peaks are dense
datasheet figures unless ``sparse=True``. ``gpu`` is a GPU (one node of its usual system when a
collective needs links) or a ``System``. Cost: one pass over the workload's distinct kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sys

import numpy as np

from ._display import fmt_seconds, html_table, plain
from ._optional import require_pandas
from ._typing import Dim, DType, Figure, GPULike, Real
from ._impossible import above_one, below_bound
from ._num import Num, broadcast_to, maximum, result
from ._validate import checked_call, dim, finite_result, flag, positive
from .errors import MeasurementError, OptionError, ShapeError
from .hardware import as_gpu, load_gpu
from .precision import normalize, rate_class
from .workload import Kernel, Workload, as_workload, kernel_count

_SYSTEM = "solkit.hardware.system"

if TYPE_CHECKING:  # pragma: no cover
    from .hardware.schema import GPU

__all__ = [
    "KernelRoofline",
    "Roofline",
    "roofline",
    "sol_fraction",
    "mfu",
    "hfu",
    "achieved_flops",
    "achieved_bandwidth",
]


def _ratio(flops: Num, nbytes: Num) -> Num:
    """FLOP per byte; a kernel that moves no bytes (absent in a sweep) has intensity 0."""
    if type(flops) is float and type(nbytes) is float:
        return flops / nbytes if nbytes > 0 else 0.0
    flops, nbytes = np.broadcast_arrays(np.asarray(flops, dtype=np.float64), np.asarray(nbytes, dtype=np.float64))
    return np.divide(flops, nbytes, out=np.zeros(flops.shape), where=nbytes > 0)


def _bound(t_compute: Num, t_memory: Num, t_link: Num = 0.0) -> Any:
    """'compute' where the compute time is at least the memory time, else 'memory'; 'link' where the links outlast both."""
    if type(t_compute) is float and type(t_memory) is float and type(t_link) is float:
        if t_link > t_compute and t_link > t_memory:
            return "link"
        return "compute" if t_compute >= t_memory else "memory"
    named = np.where(np.asarray(t_compute) >= t_memory, "compute", "memory")
    return result(np.where((np.asarray(t_link) > t_compute) & (np.asarray(t_link) > t_memory), "link", named))


@dataclass(frozen=True)
class KernelRoofline:
    """One kernel's bound per launch (seconds), how many times it runs, the roof that binds it, its intensity."""

    name: str
    kind: str
    precision: str
    count: int
    t_matrix: Any
    t_vector: Any
    t_compute: Any
    t_memory: Any
    t_sol: Any
    bound: Any
    flops: Any
    executed_flops: Any
    bytes: Any
    intensity: Any
    t_link: Any = 0.0


class Roofline:
    """A workload's speed-of-light bound on one GPU, with a per-kernel breakdown (``kernels``).

    ``t_compute``, ``t_memory`` and ``t_link`` (collectives' link time) are per-kernel sums; ``t_sol``
    is the sum of each kernel's max and so is at least max(t_compute, t_memory, t_link). ``bound``
    names the roof behind the largest share of ``t_sol``. Breakdown rows are per launch, with the launch ``count``. The
    times are computed at once; the other figures when first read.
    """

    __slots__ = ("workload", "gpu", "t_sol", "t_compute", "t_memory", "t_link", "system", "gpu_spec", "system_spec", "_w",
                 "_sparse", "_times", "_lazy")
    _FIELDS = ("workload", "gpu", "system", "t_sol", "t_compute", "t_memory", "t_link", "bound", "intensity", "ridge_point",
               "flops", "executed_flops", "bytes")

    workload: str
    gpu: str
    t_sol: Any
    t_compute: Any
    t_memory: Any
    t_link: Any  # collectives' time on the links (0 without collectives)
    system: Any  # the system's name where collectives needed one, else None
    gpu_spec: "GPU"  # the loaded spec of the GPU
    system_spec: Any  # the System the collectives ran on (None without collectives and without a System given)
    _w: Workload
    _sparse: bool
    _times: list[Any]
    _lazy: dict[str, Any]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Roofline is immutable: cannot set {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by its slots (``multiprocessing``, ``joblib``, a notebook's cache)."""
        from ._frozen import restored, slots_state

        return restored, (type(self), slots_state(self))

    def _cached(self, name: str, compute: Any) -> Any:
        lazy = self._lazy
        if name not in lazy:
            lazy[name] = compute()
        return lazy[name]

    @property
    def flops(self) -> Any:
        """Model (useful) FLOPs."""
        return self._cached("flops", lambda: self._w.flops)

    @property
    def executed_flops(self) -> Any:
        """Executed FLOPs (what T_SOL charges)."""
        return self._cached("executed_flops", lambda: self._w.executed_flops)

    @property
    def bytes(self) -> Any:
        """Compulsory DRAM bytes."""
        return self._cached("bytes", lambda: self._w.bytes)

    @property
    def intensity(self) -> Any:
        """Executed FLOPs per DRAM byte."""
        return self._cached("intensity", lambda: result(_ratio(self.executed_flops, self.bytes)))

    @property
    def bound(self) -> Any:
        """'compute', 'memory' or 'link' (an array of them for a sweep): the roof behind the largest share of ``t_sol``
        (with overlapped collectives: 'link' where one of NCCL's streams sets it, else the in-line kernels' roof)."""
        def compute() -> Any:
            share: Any = 0.0  # the in-line kernels' T_SOL by the roof that binds each
            link: Any = 0.0
            serial: Any = 0.0
            sides: dict[str, Any] = {}  # collectives overlapped on NCCL's streams, by stream
            for (k, count), (_, _, t_c, t_mem, t_l, t_sol) in zip(self._w.counted, self._times):
                if k.link is not None and k.link.overlap:
                    sides[k.link.overlap] = sides.get(k.link.overlap, 0.0) + np.asarray(t_sol) * count
                    continue
                linked = (np.asarray(t_l) > t_c) & (np.asarray(t_l) > t_mem)
                serial = serial + np.asarray(t_sol) * count
                share = share + np.where(~linked & (np.asarray(t_c) >= t_mem), t_sol, 0.0) * count
                link = link + np.where(linked, t_sol, 0.0) * count
            memory_share = serial - share - link
            named = np.where(share >= memory_share, "compute", "memory")
            named = np.where((link > share) & (link > memory_share), "link", named)
            hidden = max(sides.values(), key=np.max) if sides else 0.0
            return result(np.where(np.asarray(hidden) > serial, "link", named))  # an NCCL stream outlasts the rest

        lazy = self._lazy
        if "bound" not in lazy and not np.ndim(self.t_sol) and not self.t_link:  # one shape, no links: the share alone
            share = _compute_share(self._w, self._times)  # pragma: no mutate (the sweep path gives the same)
            lazy["bound"] = "compute" if share >= self.t_sol / 2 else "memory"
        return self._cached("bound", compute)

    @property
    def ridge_point(self) -> float:
        """Intensity (FLOP/byte) where the roofs of the workload's precision meet (fp32 vector for vector-only work)."""
        w, g = self._w, self.gpu_spec
        if any(np.any(k.matrix_flops > 0) for k, _ in w.counted):
            return g.peak_flops(w.precision, "matrix", sparse=self._sparse) / g.memory_bandwidth
        return g.ridge_point("fp32", "vector")

    @property
    def kernels(self) -> tuple[KernelRoofline, ...]:
        """Per-kernel breakdown, one row per distinct kernel (times per launch)."""
        return tuple(
            KernelRoofline(k.name, k.kind, k.precision, count, result(t_mat), result(t_vec), result(t_c), result(t_mem),
                           result(t_sol), _bound(t_c, t_mem, t_l), result(k.model_flops), result(k.executed_flops),
                           result(k.bytes), result(_ratio(k.executed_flops, k.bytes)), result(t_l))
            for (k, count), (t_mat, t_vec, t_c, t_mem, t_l, t_sol) in zip(self._w.counted, self._times)
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (arrays become lists) for JSON; times in seconds."""
        out = {k: plain(getattr(self, k)) for k in self._FIELDS}
        out["kernels"] = [{k: plain(v) for k, v in kr.__dict__.items()} for kr in self.kernels]
        return out

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per configuration of a sweep (needs ``pip install 'solkit[pandas]'``)."""
        pd = require_pandas()
        shape = np.shape(self.t_sol)
        columns = {
            "t_sol_s": self.t_sol,
            "t_compute_s": self.t_compute,
            "t_memory_s": self.t_memory,
            "t_link_s": self.t_link,
            "bound": self.bound,
            "intensity_flop_per_byte": self.intensity,
            "model_flops": self.flops,
            "executed_flops": self.executed_flops,
            "bytes": self.bytes,
        }
        flat = {k: np.broadcast_to(np.asarray(v), shape).reshape(-1) for k, v in columns.items()}
        frame = pd.DataFrame(flat)
        frame.insert(0, "gpu", self.gpu)
        frame.insert(0, "workload", self.workload)
        return frame

    def __repr__(self) -> str:
        if np.ndim(self.t_sol):
            return f"Roofline({self.workload!r} on {self.gpu}: sweep of shape {np.shape(self.t_sol)})"
        link = f", t_link {fmt_seconds(self.t_link)} on {self.system}" if self.system else ""
        return (
            f"Roofline({self.workload!r} on {self.gpu}: T_SOL {fmt_seconds(self.t_sol)}, {self.bound}-bound, "
            f"t_compute {fmt_seconds(self.t_compute)}, t_memory {fmt_seconds(self.t_memory)}{link}, "
            f"intensity {self.intensity:.4g} FLOP/B (ridge {self.ridge_point:.4g}), {kernel_count(self._w)})"
        )

    def _repr_html_(self) -> str:
        if np.ndim(self.t_sol):
            return f"<p>{repr(self)}</p>"
        rows: list[tuple[Any, ...]] = [
            (k.name, k.count, k.kind, k.precision, k.executed_flops / 1e9, k.bytes / 1e6, k.intensity,
             k.t_compute * 1e6, k.t_memory * 1e6, k.t_sol * 1e6, k.bound)
            for k in self.kernels
        ]
        rows.append(("total", "", "", "", self.executed_flops / 1e9, self.bytes / 1e6, self.intensity,
                     self.t_compute * 1e6, self.t_memory * 1e6, self.t_sol * 1e6, self.bound))
        header = ("kernel", "count", "kind", "precision", "GFLOP", "MB", "FLOP/B", "t_compute us", "t_memory us",
                  "t_sol us (each)", "bound")
        return html_table(header, rows, f"Roofline of {self.workload} on {self.gpu}")


def _rate_time(work: Any, gpu: "GPU", precision: str, unit: str, sparse: bool) -> Any:
    """work / the peak of ``precision`` on ``unit``; no peak is needed (nor asked) where there is no work."""
    if type(work) is float:
        return work / gpu.peak_flops(precision, unit, sparse) if work > 0 else 0.0
    try:
        return work / gpu.peak_flops(precision, unit, sparse)
    except LookupError:
        if work.max() > 0:
            raise
        return 0.0


def target(gpu: Any) -> tuple["GPU", Any]:
    """(GPU, System or None) of a GPU, name, alias, path or ``System``."""
    if type(gpu) is not str:
        systems = sys.modules.get(_SYSTEM)
        if systems is not None and type(gpu) is systems.System:
            return gpu.gpu_spec, gpu
    return as_gpu(gpu), None


def link_seconds(k: Kernel, system: Any, efficiency: Any = 1.0) -> Any:
    """A collective's time on the links, per GPU and direction: max(intra bytes / link bw, inter bytes / network bw),
    the bandwidths taken at ``efficiency`` (1: the roof; the predictor passes its measured share)."""
    link = k.link
    if link is None:
        return 0.0
    n_max = float(np.max(link.n_gpus))
    span = (n_max - 1) * link.stride + 1  # the group's GPUs sit stride apart
    if span > system.n_gpus:
        spread = f" {link.stride:g} apart (a span of {span:g})" if link.stride != 1 else ""
        raise ShapeError(f"{k.name}: n_gpus={n_max:g}{spread} is more GPUs than the system {system.name!r} has "
                         f"({system.nodes} node(s) x {system.gpus_per_node}); load it with more nodes: "
                         f"solkit.load_system({system.name!r}, nodes=...)")
    intra, inter = link.level_bytes(system.gpus_per_node)
    t_intra = intra / (efficiency * system.link_bandwidth)
    if not np.any(inter):
        return t_intra
    if not system.network_bandwidth:
        raise ShapeError(f"{k.name}: its group spans nodes but the system {system.name!r} has no network")
    return maximum(t_intra, inter / (efficiency * system.network_bandwidth))


@checked_call
def roofline(workload: Workload, gpu: GPULike, sparse: bool = False) -> Roofline:
    """The speed-of-light bound of ``workload`` on ``gpu`` (a GPU, name, alias or path, or a ``System``)."""
    w = workload if type(workload) is Workload else as_workload(workload)  # pragma: no mutate (a fast path)
    if type(gpu) is str:  # pragma: no mutate (a fast path: target() gives the same)
        g, system = load_gpu(gpu), None
    else:
        g, system = target(gpu)
    if sparse is not False:  # pragma: no mutate (False needs no check)
        flag("sparse", sparse)
    bandwidth = g.memory_bandwidth
    total_c: Any = None
    total_m: Any = None
    total_l: Any = 0.0
    total_sol: Any = None
    total_side: dict[str, Any] = {}  # overlapped collectives by stream: hidden at best behind everything else
    times = []
    for k, count in w.counted:
        t_mat = _rate_time(k.matrix_flops, g, k.precision, "matrix", sparse)
        t_vec = _rate_time(k.vector_flops, g, k.vector_precision, "vector", False)
        t_mem = k.bytes / bandwidth
        t_c = _max(t_mat, t_vec)
        t_l: Any = 0.0
        linked = k.link is not None
        if linked:
            if system is None:
                from .hardware.system import default_system

                system = default_system(g)
            t_l = link_seconds(k, system)
        t_sol = maximum(maximum(t_c, t_mem), t_l) if linked else maximum(t_c, t_mem)
        times.append((t_mat, t_vec, t_c, t_mem, t_l, t_sol))
        if count != 1:
            t_c, t_mem, t_l, t_sol = t_c * count, t_mem * count, t_l * count, t_sol * count
        side = k.link.overlap if linked else ""  # type: ignore[union-attr]  # linked: k.link is set
        if total_c is None:
            total_c, total_m = t_c, t_mem
        else:
            total_c, total_m = total_c + t_c, total_m + t_mem
        if side:
            total_side[side] = total_side.get(side, 0.0) + t_sol
        else:
            total_sol = t_sol if total_sol is None else total_sol + t_sol
        if linked:
            total_l = total_l + t_l
    for side_sol in total_side.values():
        total_sol = side_sol if total_sol is None else maximum(total_sol, side_sol)
    r = object.__new__(Roofline)
    s = object.__setattr__
    shape = w.shape
    s(r, "workload", w.name)
    s(r, "gpu", g.name)
    s(r, "system", None if system is None else f"{system.name} x {system.nodes}")
    if not shape and type(total_sol) is float and type(total_c) is float and type(total_m) is float:
        s(r, "t_sol", total_sol)  # pragma: no mutate (one shape of Python floats: broadcast_to gives them back)
        s(r, "t_compute", total_c)
        s(r, "t_memory", total_m)
    else:
        s(r, "t_sol", broadcast_to(total_sol, shape))
        s(r, "t_compute", broadcast_to(total_c, shape))
        s(r, "t_memory", broadcast_to(total_m, shape))
    s(r, "t_link", total_l if not shape and type(total_l) is float else broadcast_to(total_l, shape))
    s(r, "_w", w)
    s(r, "gpu_spec", g)
    s(r, "system_spec", system)
    s(r, "_sparse", sparse)
    s(r, "_times", times)
    s(r, "_lazy", {})
    return r


def _max(a: Any, b: Any) -> Any:
    """max(a, b), without a new array when one side is the scalar 0 (times are never negative)."""
    if type(b) is float and b == 0.0:  # pragma: no mutate (a fast path: max(a, 0) is a)
        return a
    if type(a) is float and a == 0.0:  # pragma: no mutate
        return b
    return maximum(a, b)


def _compute_share(w: Workload, times: list[Any]) -> float:
    """Seconds of T_SOL spent in compute-bound kernels (one shape)."""
    return sum(t_sol * count for (_, count), (_, _, t_c, t_mem, _, t_sol) in zip(w.counted, times) if t_c >= t_mem)


@checked_call
def sol_fraction(workload: Workload, gpu: GPULike, measured_seconds: Real, sparse: bool = False,
                 strict: bool = False) -> Figure:
    """T_SOL / measured time: 1.0 is the speed of light, 0.25 is four times slower than it.

    A measured time below T_SOL (a fraction above 1) is impossible: it is returned with an
    ``ImpossibleMeasurementWarning``, or raised as ``ImpossibleMeasurementError`` with ``strict=True``.
    """
    seconds = positive("measured_seconds", measured_seconds)
    strict = flag("strict", strict)
    r = roofline(workload, gpu, sparse=sparse)
    t_sol = r.t_sol
    try:
        ratio = t_sol / seconds
    except ValueError:
        raise ShapeError(
            f"measured_seconds of shape {np.shape(seconds)} does not broadcast with the workload's shape {np.shape(t_sol)}"
        ) from None
    ratio = finite_result("measured_seconds", ratio, "it is too small to divide by")
    below_bound("measured_seconds", seconds, t_sol, lambda: f"{r.workload!r} on {r.gpu}", strict)
    return result(ratio)


def _n_gpus(n_gpus: Any) -> Any:
    try:
        return dim("n_gpus", n_gpus)
    except ValueError as exc:
        raise MeasurementError(str(exc)) from None


def _per_gpu(workload: Workload, n_gpus: Any) -> Any:
    """1 (of ``n_gpus``' shape) for one GPU's share of a step split over ``world`` GPUs when ``n_gpus`` agrees (1 or the
    world); else a MeasurementError."""
    world = workload.recipe.world  # type: ignore[union-attr]  # the caller checked the recipe
    n = np.asarray(n_gpus)
    bad = (n != 1) & (n != world)
    if not bad.any():
        return 1.0 if type(n_gpus) is float else np.ones(n.shape)
    got = n[bad][0] if n.ndim else n_gpus
    raise MeasurementError(f"n_gpus={got:g} disagrees with the workload: {workload.name!r} is one GPU's share of a step "
                           f"split over {world} GPUs (its FLOPs are one GPU's, so its MFU is the job's); pass n_gpus={world} "
                           f"or leave it at 1")


def _system_for(workload: Workload, gpu: Any, g: Any) -> Any:
    """Where ``workload``'s T_SOL is taken: the System given, else for a step split over more GPUs than one node holds
    the GPU's usual system with the nodes its world needs (None where it has no network to grow), else the GPU."""
    _, system = target(gpu)
    world = workload.recipe.world if workload.recipe is not None else 1
    if system is not None or world == 1:
        return gpu
    from .hardware.system import default_system

    node = default_system(g)
    if world <= node.n_gpus:
        return node
    if node.network is not None:
        return node.with_nodes(-(-world // node.gpus_per_node))
    # NB: no network to span the world: the bound leaves the collectives out (a lower bound still)
    return None


def _utilization(flops: Any, seconds: Any, gpu: Any, dtype: Any, n_gpus: Any, sparse: bool, strict: bool,
                 executed: bool) -> Any:
    """FLOPs / (matrix peak of ``dtype`` x seconds x n_gpus), shared by ``mfu`` and ``hfu``, flagged above 1.

    A Workload whose matrix kernels all run in another precision than ``dtype`` is refused: an
    fp8 workload measured against the bf16 peak would read as MFU 2.0. A Workload is also
    flagged when ``seconds`` is below its T_SOL split ideally over ``n_gpus``.
    """
    precision = normalize(dtype, "dtype")
    g, _ = target(gpu)  # a GPU, or a System (its GPU; a split step's bound is then taken on it)
    workload = flops if isinstance(flops, Workload) else None
    if workload is not None:
        f = workload.executed_flops if executed else workload.flops
        classes = {rate_class(k.precision) for k, _ in workload.counted if np.any(k.matrix_flops > 0)}
        if classes and rate_class(precision) not in classes:
            raise OptionError(
                f"dtype is {precision!r} but the workload's matrix kernels run in {', '.join(sorted(classes))}; "
                f"pass dtype= the precision whose peak the utilization should be measured against"
            )
    else:
        f = positive("flops", flops)
    s = positive("seconds", seconds)
    n = _n_gpus(n_gpus)
    if workload is not None and workload.recipe is not None and workload.recipe.world > 1:
        n = _per_gpu(workload, n)
    strict = flag("strict", strict)
    peak = g.peak_flops(precision, "matrix", sparse=sparse)
    try:
        u = f / (peak * s * n)
    except ValueError:
        raise ShapeError(f"flops, seconds and n_gpus must broadcast together, got shapes {np.shape(f)}, "
                         f"{np.shape(s)} and {np.shape(n)}") from None
    u = finite_result("seconds", u, "it is too small to divide by")
    name = "hfu" if executed else "mfu"
    flagged = False
    if workload is not None:
        where = _system_for(workload, gpu, g)
        bounded = workload if where is not None else Workload.of(
            workload.name, tuple((k, c) for k, c in workload.counted if k.link is None))
        t_sol = roofline(bounded, g if where is None else where, sparse=sparse).t_sol
        try:
            per_gpu = t_sol / n
            np.broadcast_shapes(np.shape(per_gpu), np.shape(s))
        except ValueError:
            raise ShapeError(f"seconds of shape {np.shape(s)} and n_gpus of shape {np.shape(n)} do not broadcast "
                             f"with the workload's shape {np.shape(t_sol)}") from None
        flagged = below_bound("seconds", s, per_gpu, lambda: f"{workload.name!r} on {g.name}" + (
            " split ideally over n_gpus" if np.any(np.asarray(n) != 1) else ""), strict, stacklevel=3)
    if not flagged:  # one flag per impossible number: below T_SOL already says it
        above_one(name, u, lambda: f"{'executed' if executed else 'model'} FLOPs / ({g.name} {'sparse' if sparse else 'dense'} "
                  f"{precision} peak {peak / 1e12:g} TFLOP/s x seconds x n_gpus)", strict, stacklevel=3)
    return result(u)


@checked_call
def mfu(flops: Real | Workload, seconds: Real, gpu: GPULike, dtype: DType = "bf16", n_gpus: Dim = 1, sparse: bool = False,
        strict: bool = False) -> Figure:
    """Model FLOPs utilization: model FLOPs / (dense matrix peak of ``dtype`` x seconds x n_gpus).

    ``gpu``: a GPU (its name, alias, path or spec) or a System. ``flops`` is a number (or array) of model FLOPs, or a
    Workload (its ``flops``; its matrix
    kernels must include ``dtype``'s precision). A step split over GPUs (``training_step(dp=, tp=, pp=)``) is one
    GPU's share and knows its world size: its MFU is per GPU, which is the job's; ``n_gpus`` may be 1 or that
    world size (either gives the same number), anything else is a MeasurementError. Above 1 (or, for a Workload, ``seconds`` below
    its T_SOL / n_gpus) is impossible: ``ImpossibleMeasurementWarning``, or with ``strict=True``
    ``ImpossibleMeasurementError``.
    """
    return _utilization(flops, seconds, gpu, dtype, n_gpus, sparse, strict, executed=False)


@checked_call
def hfu(flops: Real | Workload, seconds: Real, gpu: GPULike, dtype: DType = "bf16", n_gpus: Dim = 1, sparse: bool = False,
        strict: bool = False) -> Figure:
    """Hardware FLOPs utilization: executed FLOPs (a Workload's ``executed_flops``) / (peak x seconds x n_gpus); flagged as ``mfu``."""
    return _utilization(flops, seconds, gpu, dtype, n_gpus, sparse, strict, executed=True)


def _achieved(workload: Workload, seconds: Any, gpu: Any, strict: bool, figure: str) -> Any:
    """``figure`` (executed_flops or bytes) of ``workload`` per measured second; below T_SOL on ``gpu`` flagged."""
    w = as_workload(workload)
    s = positive("seconds", seconds)
    strict = flag("strict", strict)
    try:
        rate = getattr(w, figure) / s
    except ValueError:
        raise ShapeError(f"seconds of shape {np.shape(s)} does not broadcast with the workload's shape {w.shape}") from None
    rate = finite_result("seconds", rate, "it is too small to divide by")
    if gpu is not None:
        r = roofline(w, gpu)
        below_bound("seconds", s, r.t_sol, lambda: f"{r.workload!r} on {r.gpu}", strict, stacklevel=3)
    return result(rate)


@checked_call
def achieved_flops(workload: Workload, seconds: Real, gpu: GPULike | None = None, strict: bool = False) -> Figure:
    """Executed FLOP/s reached by a run of ``workload`` that took ``seconds``.

    With ``gpu``, a time below the workload's T_SOL there is flagged (``ImpossibleMeasurementWarning``;
    ``strict=True`` raises); without it nothing can be checked.
    """
    return _achieved(workload, seconds, gpu, strict, "executed_flops")


@checked_call
def achieved_bandwidth(workload: Workload, seconds: Real, gpu: GPULike | None = None, strict: bool = False) -> Figure:
    """DRAM bytes/s reached (compulsory bytes over the measured time); ``gpu`` and ``strict`` as ``achieved_flops``."""
    return _achieved(workload, seconds, gpu, strict, "bytes")
