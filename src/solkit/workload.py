"""``Kernel`` (one launch) and ``Workload`` (kernels run one after another, repeated parts held once).

A kernel records what it executes (matrix FLOPs on tensor cores, vector FLOPs on CUDA cores),
the useful (model) FLOPs among them, and its compulsory DRAM bytes. Each figure is a Python
float for one shape or a float64 numpy array for a sweep (figures of one kernel broadcast
together). A workload holds its parts with a count: an 80-layer model holds its layer once,
``w.counted`` lists each distinct kernel with how often it runs (what ``roofline`` and
``predict`` loop over), and ``w.kernels`` lists every launch, built on demand.

Cost: ``counted``, ``len(w)``, the figures, ``roofline`` and ``predict`` take O(K) steps, K the
distinct kernels (13 for a transformer of any depth), each a few float operations for one
shape or one numpy pass per figure for a sweep; the layer count never enters, so 10**12
layers (a typo) cost what one does. ``w.kernels`` costs one step per launch and is refused
beyond ``MAX_LISTED`` (10**7) launches. A workload runs at most ``MAX_LAUNCHES`` (2**53)
launches, and a total beyond float64 (about 1.8e308) is a ShapeError, never an inf figure.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Protocol, Union, runtime_checkable

import numpy as np

from ._num import Num, broadcast_to, shape_of
from ._validate import shown, name_text
from .errors import ArgumentTypeError, OptionError, ShapeError
from .precision import PRECISIONS, normalize

__all__ = ["Kernel", "Workload", "Gemm", "Rows", "Link", "Join", "Pipeline", "Schedule", "Autograd", "Program", "FSDP_GROUP_OP", "OpCall", "KERNEL_KINDS", "MAX_LAUNCHES", "MAX_LISTED", "as_workload", "chain", "issued_launches", "with_kernels",
           "overflow", "is_overflow"]

#: what a kernel is, for the predictor's efficiency model: GEMMs, implicit-GEMM convolutions,
#: fused attention, elementwise maps, row reductions (norms, softmax), plain copies, gathers
#: (embedding), layout transforms (NCHW <-> NHWC), im2col unfolds, and collectives (NCCL kernels moving data
#: between GPUs over links)
KERNEL_KINDS: tuple[str, ...] = ("gemm", "conv", "attention", "elementwise", "reduction", "copy", "gather", "layout", "im2col",
                                 "collective")

_KINDS = frozenset(KERNEL_KINDS)
_INF = math.inf
#: model FLOPs may exceed the executed by float rounding only
_SLACK = 1 + 1e-12
#: the most launches a workload may run (2**53: every count stays exact in float64)
MAX_LAUNCHES = 2**53
#: the most launches ``Workload.kernels`` lists one by one (a list of 10**7 references is about 80 MB)
MAX_LISTED = 10**7
_FIGURES = ("matrix_flops", "vector_flops", "bytes_read", "bytes_written", "model_flops", "launches")


class Gemm(NamedTuple):
    """The problem a GEMM-like kernel solves: ``batch`` products of [m, k] @ [k, n].

    ``channels``: an implicit-GEMM conv's input channels per group (k = channels * R * S);
    ``layout``: a forward conv's layout ("nhwc" or "nchw"), which decides how cuDNN pads unaligned channels.
    """

    m: Num
    n: Num
    k: Num
    batch: Num = 1.0
    channels: Optional[Num] = None
    layout: Optional[str] = None


class Rows(NamedTuple):
    """The rows a row-wise kernel (a normalization, a softmax, a gather) works on: ``number`` rows of ``width`` elements.

    The usual implementation gives each row to one thread block (or warp); the predictor reads the
    row count for the kernel's parallelism and the width for its alignment.
    """

    number: Num
    width: Num


#: collectives whose traffic runs along a ring (or a chain/tree with the same per-GPU bytes): a group spread
#: over nodes sends 1/L of each GPU's bytes over the network (L of its GPUs per node), the rest over the node's links
RING_COLLECTIVES = frozenset({"all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv"})


class Link(NamedTuple):
    """A collective's traffic between GPUs: what ``solkit.comm`` counts, what the roofline charges to the links.

    ``collective`` over ``n_gpus`` GPUs of a buffer of ``nbytes`` (nccl-tests' size); ``bus_bytes``: the bytes
    each GPU sends (nbytes times nccl-tests' bus factor, e.g. 2(n-1)/n for an all-reduce); ``steps``: the
    link hops in a row its algorithm takes (2(n-1) for a ring all-reduce), which the predictor charges a
    latency each; ``stride``: how far apart the group's GPUs sit (1: neighbours; a data-parallel group
    beside tensor parallelism of 8 has stride 8, one GPU per 8-GPU node); ``overlap``: "" runs in line
    on the compute stream, "gradients" on NCCL's stream after the compute issued before it (DDP's
    buckets, FSDP's reduce-scatters), "prefetch" on another, independent of the compute (FSDP's
    all-gathers of the next layer) (``solkit.prediction.timeline``).
    """

    collective: str
    algorithm: str
    n_gpus: Num
    nbytes: Num
    bus_bytes: Num
    steps: Num
    stride: float = 1.0
    overlap: str = ""

    def local(self, gpus_per_node: int) -> Num:
        """How many of the group's GPUs share a node: gpus_per_node // stride, at least 1, at most n_gpus."""
        per_node = max(1.0, float(gpus_per_node // self.stride))
        n = self.n_gpus
        return np.minimum(n, per_node) if isinstance(n, np.ndarray) else min(n, per_node)

    def hops(self, gpus_per_node: int) -> Num:
        """Link steps in a row: the ring's ``steps``; a tree's 2 (L - 1 + ceil(log2(nodes))), L GPUs per node."""
        if self.algorithm != "tree":
            return self.steps
        local = self.local(gpus_per_node)
        hops = 2 * (local - 1 + np.ceil(np.log2(np.ceil(self.n_gpus / local))))
        return float(hops) if np.ndim(hops) == 0 else hops

    def network_hops(self, gpus_per_node: int) -> Num:
        """Steps in a row that cross between nodes: a ring passes each of its k nodes' boundary once per pass (an
        all-reduce makes two passes), a tree 2 ceil(log2 k), an all-to-all or send/recv one; none inside a node."""
        n = self.n_gpus
        local = self.local(gpus_per_node)
        nodes = np.ceil(n / local)
        if self.collective in ("all_to_all", "send_recv"):
            hops = np.where(nodes > 1, 1.0, 0.0)
        elif self.algorithm == "tree":
            hops = 2 * np.ceil(np.log2(nodes))
        else:
            hops = np.where(nodes > 1, nodes * (2 if self.collective == "all_reduce" else 1), 0.0)
        return float(hops) if np.ndim(hops) == 0 else hops

    def level_bytes(self, gpus_per_node: int) -> tuple[Num, Num]:
        """(intra-node, inter-node) bytes each GPU sends, ``local`` of its group's GPUs in each node.

        Within one node everything crosses the node's links. Spread over nodes with L GPUs in each, a ring's
        g rings each leave a node once, so each GPU sends 1/L of its bytes over the network and (L-1)/L over
        the links; an all-to-all sends each peer nbytes/n directly: (n - L) peers are off the node.
        """
        n = self.n_gpus
        local = self.local(gpus_per_node)
        spread = local < n
        if self.collective in RING_COLLECTIVES:
            off = np.where(spread, self.bus_bytes / local, 0.0)
        else:  # all_to_all: nbytes / n to each of the n - local peers off the node
            off = np.where(spread, self.nbytes * (n - local) / n, 0.0)
        inter: Num = off if np.ndim(off) else float(off)
        return self.bus_bytes - inter, inter


#: the calibration key of FSDP's per-layer copy out of its gathered parameters: where the predictor charges the host
#: time of FSDP2's hooks for that layer and pass (``host_fsdp_group``; ``solkit.models.parallel`` emits it)
FSDP_GROUP_OP = "fsdp_unshard"


class Join(NamedTuple):
    """A workload's ``schedule``: the compute stream waits for ``streams`` at the workload's start or end (``at``)."""

    streams: tuple[str, ...]
    at: str = "end"


class Pipeline(NamedTuple):
    """A workload's ``schedule``: its one part is a pipeline stage's microbatch (forward and backward) run ``count``
    times in a 1F1B schedule of ``stages`` stages, which takes the time of count + ceil((stages - 1) / interleave)
    microbatches (the bubble; ``interleave`` virtual stages per GPU shrink it)."""

    stages: int
    interleave: int = 1

    @property
    def bubble(self) -> int:
        """Microbatches of idle time: ceil((stages - 1) / interleave)."""
        return -(-(self.stages - 1) // self.interleave)


#: how a workload's parts run in time beyond one after another (``predict``'s timeline reads it)
Schedule = Union[Join, Pipeline]


class Autograd(NamedTuple):
    """A workload's ``autograd``: what eager autograd launches for its backward beyond each kernel's own gradient
    (``models.training.backward``): ``launches`` of each kernel of its gradient (a one-kernel operator's: cuDNN's SDPA
    backward runs 3, LayerNorm's 2) and ``extra`` kernels after the gradients (accumulations of a tensor's gradients,
    casts, slices' zero-fills); ``gradient=False``: its kernels have none (buffer updates, tables built without grad),
    the backward is ``extra`` alone, or nothing."""

    extra: Optional["Workload"] = None
    launches: Optional[int] = None
    gradient: bool = True


@runtime_checkable
class Program(Protocol):
    """A workload's ``recipe``: what a program built by ``solkit.models`` (or captured) tells ``predict``, the
    calibration and ``training_step`` (``models.program.ModelCall`` and ``models.resnet.ResNetCall`` implement it).

    ``kernels``: "eager" (one launch per ATen kernel, issued by the CPU: host time per launch, layer and program)
    or "fused" (a fused engine: no host time modelled); ``training``: built as a training step runs it;
    ``layers``: the repeated blocks the host's per-layer time counts; ``preamble``: Python runs before the
    first launch (a Hugging Face model's masks, positions, cache); ``params``: the model's parameters.
    ``training_step``: the step of this forward (``models.training_step`` documents the arguments; ``split``
    is a ``models.parallel.Split``).
    """

    @property
    def kernels(self) -> str: ...

    @property
    def training(self) -> bool: ...

    @property
    def layers(self) -> int: ...

    @property
    def preamble(self) -> bool: ...

    @property
    def params(self) -> int: ...

    def training_step(self, optimizer: str, amp: Any, microbatches: int, checkpointing: bool,
                      split: Any) -> "Workload": ...


class OpCall(NamedTuple):
    """Which registered operator built a workload, and its validated arguments (for its backward)."""

    op: str
    args: Mapping[str, Any]


def _figure(kernel: str, name: str, value: Any) -> Num:
    """A kernel figure as a float or a float64 array; negative, non-finite or non-numeric is refused."""
    kind = type(value)
    if kind is float or kind is int:
        if 0 <= value < math.inf:
            try:
                return float(value)
            except OverflowError:  # an int beyond float64
                raise overflow(ShapeError(f"{kernel}: {name} must be a finite number >= 0 that float64 can hold "
                                          f"(below 1.8e308), got an integer of {len(str(value))} digits")) from None
        error = ShapeError(f"{kernel}: {name} must be a finite number >= 0, got {value!r}")
        raise overflow(error) if value != value or value in (_INF, -_INF) else error
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise ArgumentTypeError(f"{kernel}: {name} must be a number or an array of numbers, got {value!r}")
    try:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf":
            if arr.dtype == object and arr.size and all(_is_real(x) for x in arr.reshape(-1)):
                arr = arr.astype(np.float64)
            else:
                raise TypeError(arr.dtype)
    except OverflowError:
        raise overflow(ShapeError(f"{kernel}: {name} must be a finite number >= 0 that float64 can hold "
                                  f"(below 1.8e308), got an integer beyond that")) from None
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{kernel}: {name} must be a number or an array of numbers, got {shown(value)}") from None
    arr = arr.astype(np.float64, copy=False)
    if not arr.size:
        raise ShapeError(f"{kernel}: {name} must hold at least one value, got an empty array of shape {arr.shape}")
    low, high = arr.min(), arr.max()  # reductions: no temporaries (a NaN fails both tests below)
    if np.isnan(high):
        raise overflow(ShapeError(f"{kernel}: {name} is not finite: it must be a number >= 0, got nan at index "
                                  f"{_index(np.isnan(arr))}"))
    if not np.isfinite(high):
        raise overflow(ShapeError(f"{kernel}: {name} is not finite at index {_index(np.isinf(arr))} "
                                  f"(beyond float64, about 1.8e308: a shape or count too large)"))
    if not low >= 0:
        raise ShapeError(f"{kernel}: {name} must not be negative, got {low!r} at index {_index(arr < 0)}")
    return float(arr) if arr.ndim == 0 else arr


def _is_real(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _index(bad: np.ndarray) -> Any:
    """The first index where ``bad`` holds (an int for 1-d arrays, () for a 0-d one)."""
    where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return where[0] if len(where) == 1 else where


def _big(n: int) -> str:
    """A large count, short: 1e+12, or the digits of one beyond float64."""
    return f"{n:.4g}" if n < 10**300 else f"an integer of {len(str(n))} digits"


def overflow(error: ShapeError) -> ShapeError:
    """``error`` marked as a figure beyond float64 (an operator then names the dimensions that caused it)."""
    error.overflow = True  # type: ignore[attr-defined]  # a marker read by is_overflow
    return error


def is_overflow(error: BaseException) -> bool:
    """Whether ``error`` is a figure beyond float64 (``overflow``)."""
    return getattr(error, "overflow", False) is True


def _add(a: Num, b: Num) -> Num:
    """a + b, without a new array when one side is the scalar 0."""
    if type(b) is float and b == 0.0:  # pragma: no mutate (a fast path: a + 0.0 is a)
        return a
    if type(a) is float and a == 0.0:  # pragma: no mutate
        return b
    return a + b


class _KernelFields(NamedTuple):
    name: str
    kind: str
    precision: str
    matrix_flops: Num
    vector_flops: Num
    bytes_read: Num
    bytes_written: Num
    model_flops: Num
    gemm: Optional[Gemm]
    vector_precision: str
    op: str
    launches: Num
    rows: Optional[Rows]
    link: Optional[Link]


class Kernel(_KernelFields):
    """One kernel launch: executed FLOPs by unit, useful (model) FLOPs, DRAM bytes read and written.

    ``op`` is the calibration key the predictor looks the kernel's efficiencies up by (the
    registered operator that emits it, or a named implementation of it); it defaults to
    ``name``. ``precision`` is the matrix-unit precision (the operands' storage precision for
    elementwise kernels); vector FLOPs are charged at the ``vector_precision`` CUDA-core rate
    (fp32: normalization and activation kernels compute in fp32 whatever they store).
    ``model_flops`` defaults to the executed FLOPs and may not exceed them. ``launches``: the
    launches the usual implementation makes (im2col: one per image); T_SOL ignores it. ``rows``:
    a row-wise kernel's rows (``Rows``), which the predictor's row-parallel term reads. ``link``: a
    collective's traffic between GPUs (``Link``), charged to the links, never to DRAM ``bytes``.
    """

    __slots__ = ()

    def __new__(
        cls,
        name: str,
        kind: str,
        precision: str,
        matrix_flops: Any = 0.0,
        vector_flops: Any = 0.0,
        bytes_read: Any = 0.0,
        bytes_written: Any = 0.0,
        model_flops: Any = None,
        gemm: Optional[Gemm] = None,
        vector_precision: str = "fp32",
        op: str = "",
        launches: Any = 1.0,
        rows: Optional[Rows] = None,
        link: Optional[Link] = None,
    ) -> "Kernel":
        if type(name) is not str or not name:
            raise ArgumentTypeError(f"name must be a non-empty string, got {name!r}")
        if type(kind) is not str or kind not in _KINDS:
            if not isinstance(kind, str):
                raise ArgumentTypeError(f"kind must be one of {', '.join(KERNEL_KINDS)}, got {shown(kind)}")
            raise OptionError(f"kind must be one of {', '.join(KERNEL_KINDS)}, got {kind!r}")
        if gemm is not None and type(gemm) is not Gemm:
            raise ArgumentTypeError(f"gemm must be a solkit.workload.Gemm or None, got {shown(gemm)}")
        if rows is not None and type(rows) is not Rows:
            raise ArgumentTypeError(f"rows must be a solkit.workload.Rows or None, got {shown(rows)}")
        if link is not None and (type(link) is not Link or kind != "collective"):
            raise ArgumentTypeError(f"link must be a solkit.workload.Link on a kernel of kind 'collective', got "
                                    f"{shown(link)} on kind {kind!r}")
        precision = precision if type(precision) is str and precision in PRECISIONS else normalize(precision, "precision")
        vector_precision = (vector_precision if type(vector_precision) is str and vector_precision in PRECISIONS
                            else normalize(vector_precision, "vector_precision"))
        if type(op) is not str:
            raise ArgumentTypeError(f"op must be a string (a calibration key), got {op!r}")
        mf: Num
        vf: Num
        br: Num
        bw: Num
        executed: Num
        useful: Num
        mf, vf, br, bw = matrix_flops, vector_flops, bytes_read, bytes_written
        if (type(mf) is float and type(vf) is float and type(br) is float and type(bw) is float and type(launches) is float
                and (model_flops is None or type(model_flops) is float)):
            # one shape (the fast path): finite, non-negative, model <= executed, launches >= 1
            executed = mf + vf
            useful = executed if model_flops is None else model_flops
            if 0 <= mf < _INF and 0 <= vf < _INF and 0 <= br < _INF and 0 <= bw < _INF and 0 <= useful <= executed * _SLACK \
                    and (launches == 1.0 or (1 <= launches < _INF and launches.is_integer())):
                return tuple.__new__(cls, (name, kind, precision, mf, vf, br, bw, useful, gemm, vector_precision,
                                           op or name, launches, rows, link))
        mf = _figure(name, "matrix_flops", mf)
        vf = _figure(name, "vector_flops", vf)
        br = _figure(name, "bytes_read", br)
        bw = _figure(name, "bytes_written", bw)
        executed = _add(mf, vf)
        useful = executed if model_flops is None else _figure(name, "model_flops", model_flops)
        n = _figure(name, "launches", launches)
        if isinstance(n, np.ndarray):
            if n.size and not (n.min() >= 1 and (np.floor(n) == n).all()):
                raise ShapeError(f"{name}: launches must be a whole number >= 1, got {shown(n)}")
        elif not (n >= 1 and n.is_integer()):
            raise ShapeError(f"{name}: launches must be a whole number >= 1, got {n!r}")
        if useful is not executed:
            over = useful > executed * _SLACK
            if over if type(over) is bool else np.any(over):
                raise ShapeError(f"{name}: model_flops must not exceed the executed FLOPs (matrix + vector), "
                                 f"got model {useful!r} > executed {executed!r}")
        try:
            shape_of(mf, vf, br, bw, useful, n)
        except ValueError:
            shapes = ", ".join(f"{f} {np.shape(v)}" for f, v in zip(_FIGURES, (mf, vf, br, bw, useful, n)))
            raise ShapeError(f"{name}: the figures do not broadcast together ({shapes})") from None
        return tuple.__new__(cls, (name, kind, precision, mf, vf, br, bw, useful, gemm, vector_precision, op or name, n,
                                   rows, link))

    @property
    def executed_flops(self) -> Num:
        """FLOPs the kernel computes, matrix plus vector."""
        return _add(self.matrix_flops, self.vector_flops)

    @property
    def flops(self) -> Num:
        """Useful (model) FLOPs."""
        return self.model_flops

    @property
    def bytes(self) -> Num:
        """Compulsory DRAM bytes: read plus written."""
        return _add(self.bytes_read, self.bytes_written)

    @property
    def shape(self) -> tuple[int, ...]:
        """Broadcast shape of the kernel's figures (() for one shape)."""
        return shape_of(self.matrix_flops, self.vector_flops, self.bytes_read, self.bytes_written, self.model_flops)

    def renamed(self, name: str) -> "Kernel":
        """The same kernel under another name (its calibration key stays)."""
        return self._replace(name=name)

    def __repr__(self) -> str:
        def show(x: Any) -> str:
            return f"{x:.4g}" if type(x) is float else f"array{np.shape(x)}"

        return (f"Kernel({self.name!r}, {self.kind}, {self.precision}, matrix_flops={show(self.matrix_flops)}, "
                f"vector_flops={show(self.vector_flops)}, bytes={show(self.bytes)}, op={self.op!r})")


Node = Union[Kernel, "Workload"]


def _total(w: "Workload", figure: str) -> Num:
    """Sum of one figure over the workload's (kernel, count) pairs, of the workload's shape; beyond float64 is an error."""
    counted = w.counted
    if len(counted) == 1 and counted[0][1] == 1:  # one kernel, once: its figures are already checked
        return broadcast_to(getattr(counted[0][0], figure), w.shape)
    if w.shape:
        with np.errstate(over="ignore", invalid="ignore"):  # beyond float64 is refused just below
            total = _sum(counted, figure)
    else:
        total = _sum(counted, figure)  # Python floats: inf without a warning
    if not (total - total == 0.0 if type(total) is float else np.isfinite(total).all()):
        raise overflow(ShapeError(f"{w.name}: {figure} is beyond float64 (about 1.8e308): a shape or a count "
                                  f"(repeat, layers) too large"))
    return broadcast_to(total, w.shape)


def _sum(counted: tuple[tuple[Kernel, int], ...], figure: str) -> Num:
    """Sum of ``figure`` times each kernel's count."""
    total: Any = 0.0
    for k, count in counted:
        value = getattr(k, figure)
        total = _add(total, value if count == 1 else value * count)  # pragma: no mutate (x * 1 is x)
    return total


def issued_launches(w: "Workload") -> float:
    """Launches the CPU issues for ``w``: each kernel's count times its ``launches`` (NB: a sweep whose kernels' launches
    vary takes the largest; no eager program solkit builds has such kernels)."""
    return float(sum(count * float(np.max(k.launches)) for k, count in w.counted))


def with_kernels(w: "Workload", name: Optional[str] = None, **changes: Any) -> "Workload":
    """``w``'s distinct kernels, flattened with their counts, each with ``changes`` (e.g. ``model_flops=0.0``,
    ``launches=3.0``); its ``call`` kept, so its backward is still its operator's."""
    return Workload.of(w.name if name is None else name, tuple((k._replace(**changes), n) for k, n in w.counted), w.call)


def _launch_count(w: "Workload") -> int:
    """Kernel runs of the whole workload: the sum of its distinct kernels' counts (a kernel's own ``launches`` once)."""
    return sum(count for _, count in w.counted)


class Workload:
    """Kernels run one after another (an operator, a layer, a model step); repeated parts held once with a count."""

    __slots__ = ("name", "parts", "call", "recipe", "autograd", "schedule", "_counted", "_shape")

    name: str
    parts: tuple[tuple[Node, int], ...]  # (a kernel or a sub-workload, how many times it runs in a row)
    call: Optional[OpCall]  # the registered operator that built it, if one did
    recipe: Optional[Program]  # the program it is (a model call of solkit.models), if one: predict and training_step read it
    autograd: Optional[Autograd]  # what eager autograd launches for its backward beyond its kernels' gradients, if known
    schedule: Optional[Schedule]  # how its parts run beyond one after another (a Join, a Pipeline), if not so
    _counted: Optional[tuple[tuple[Kernel, int], ...]]  # derived on first use
    _shape: Optional[tuple[int, ...]]

    def __init__(self, name: str, kernels: Any) -> None:
        name = name_text("name", name)
        if not isinstance(kernels, (tuple, list)) or isinstance(kernels, Kernel):
            raise ArgumentTypeError(f"kernels must be a non-empty sequence of Kernel, got {kernels!r}")
        if not kernels or not all(isinstance(k, Kernel) for k in kernels):
            raise ArgumentTypeError(f"kernels must be a non-empty sequence of Kernel, got {shown(kernels)}")
        _init(self, name, tuple((k, 1) for k in kernels))
        _check_parts(self, "kernels")

    @classmethod
    def of(cls, name: str, parts: tuple[tuple[Node, int], ...], call: Optional[OpCall] = None, *,
           recipe: Optional[Program] = None, autograd: Optional[Autograd] = None,
           schedule: Optional[Schedule] = None) -> "Workload":
        """A workload from validated (kernel or workload, count) parts (for ops and models), with what built it."""
        w = object.__new__(cls)
        _init(w, name, parts, call, recipe, autograd, schedule)
        return w

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Workload is immutable: cannot set {name!r}")

    # ---- structure ------------------------------------------------------------------------
    @property
    def counted(self) -> tuple[tuple[Kernel, int], ...]:
        """Each distinct kernel with how many times it runs, in first-launch order."""
        if self._counted is None:
            object.__setattr__(self, "_counted", tuple(_flatten(self.parts, 1)))
        return self._counted  # type: ignore[return-value]  # set just above

    @property
    def kernels(self) -> tuple[Kernel, ...]:
        """Every launch in order (a part that runs n times appears n times); at most ``MAX_LISTED`` launches.

        Building the list costs one step per launch: a model of 10**12 layers (a typo) is refused
        here with a ShapeError; ``counted`` and ``len(w)`` cost one step per distinct kernel.
        """
        n = len(self)
        if n > MAX_LISTED:
            raise ShapeError(f"{self.name}: kernels would list {n:,} launches, more than {MAX_LISTED:,}; iterate "
                             f"w.counted ((kernel, count) pairs) instead, and len(w) for the count of kernel runs")
        return tuple(_launches(self.parts))

    def __len__(self) -> int:
        """Kernel runs (a kernel of ``launches`` > 1 counts once; ``issued_launches`` counts what the CPU issues)."""
        return _launch_count(self)

    def repeat(self, count: Any, name: Optional[str] = None) -> "Workload":
        """This workload run ``count`` times in a row, held once (a model's layers); at most ``MAX_LAUNCHES`` launches in all."""
        if type(count) is not int or count < 1:
            if isinstance(count, (int, np.integer)) and not isinstance(count, (bool, np.bool_)) and count >= 1:
                count = int(count)
            elif isinstance(count, (bool, np.bool_, str, bytes)) or count is None or not isinstance(count, (int, float, np.number)):
                raise ArgumentTypeError(f"count must be a positive integer, got {shown(count)}")
            else:
                raise ShapeError(f"count must be a positive integer, got {shown(count)}")
        label = f"{self.name} x {count}" if name is None else name_text("name", name)
        launches = len(self) * count
        if launches > MAX_LAUNCHES:
            raise ShapeError(f"count must keep the workload at most {MAX_LAUNCHES:,} launches (2**53), got count "
                             f"{_big(count)} x {len(self):,} launches = {_big(launches)}")
        w = Workload.of(label, ((self, count),))
        _check_parts(w, "count")
        return w

    def renamed(self, name: str, kernels: bool = False) -> "Workload":
        """The same kernels under another name; ``kernels=True`` renames a single-kernel workload's kernel too."""
        if type(name) is not str:
            name = name_text("name", name)
        if kernels and len(self.parts) == 1 and isinstance(self.parts[0][0], Kernel) and self.parts[0][1] == 1:
            return Workload.of(name, ((self.parts[0][0].renamed(name), 1),), self.call, recipe=self.recipe,
                               autograd=self.autograd, schedule=self.schedule)
        return Workload.of(name, self.parts, self.call, recipe=self.recipe, autograd=self.autograd, schedule=self.schedule)

    def __add__(self, other: Any) -> "Workload":
        """``a + b``: a then b (a Kernel is taken as a one-kernel workload)."""
        b = as_workload(other, "the right operand of +")
        return chain(f"{self.name} + {b.name}", self, b)

    def __radd__(self, other: Any) -> "Workload":
        """``sum(workloads)``: the 0 it starts from adds nothing."""
        if type(other) is int and other == 0:
            return self
        return as_workload(other, "the left operand of +") + self

    # ---- figures ----------------------------------------------------------------------------
    @property
    def flops(self) -> Num:
        """Model (useful) FLOPs: what MFU counts."""
        return _total(self, "model_flops")

    @property
    def executed_flops(self) -> Num:
        """FLOPs the kernels execute (>= flops): what HFU and T_SOL use."""
        return _add(self.matrix_flops, self.vector_flops)

    @property
    def matrix_flops(self) -> Num:
        """Executed FLOPs on matrix units."""
        return _total(self, "matrix_flops")

    @property
    def vector_flops(self) -> Num:
        """Executed FLOPs on vector units."""
        return _total(self, "vector_flops")

    @property
    def bytes_read(self) -> Num:
        """DRAM bytes read, all kernels."""
        return _total(self, "bytes_read")

    @property
    def bytes_written(self) -> Num:
        """DRAM bytes written, all kernels."""
        return _total(self, "bytes_written")

    @property
    def bytes(self) -> Num:
        """DRAM bytes, all kernels."""
        return _add(self.bytes_read, self.bytes_written)

    @property
    def intensity(self) -> Num:
        """Executed FLOPs per DRAM byte."""
        return self.executed_flops / self.bytes

    @property
    def precision(self) -> str:
        """Precision of the first matrix-unit kernel (else of the first kernel)."""
        for k, _ in self.counted:
            if k.kind in ("gemm", "conv", "attention"):
                return k.precision
        return self.counted[0][0].precision

    @property
    def shape(self) -> tuple[int, ...]:
        """Broadcast shape of the workload's figures (() for one shape)."""
        if self._shape is None:
            shapes = [node.shape for node, _ in self.parts]
            object.__setattr__(self, "_shape", np.broadcast_shapes(*shapes) if any(shapes) else ())
        return self._shape  # type: ignore[return-value]

    # ---- display ----------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        from ._display import html_table

        if self.shape:
            return f"<p>{repr(self)}</p>"
        rows = [(k.name, count, k.kind, k.precision, count * k.model_flops / 1e9, count * k.executed_flops / 1e9,
                 count * k.bytes_read / 1e6, count * k.bytes_written / 1e6) for k, count in self.counted]
        rows.append(("total", len(self), "", "", self.flops / 1e9, self.executed_flops / 1e9, self.bytes_read / 1e6,
                     self.bytes_written / 1e6))
        header = ("kernel", "count", "kind", "precision", "model GFLOP", "executed GFLOP", "MB read", "MB written")
        return html_table(header, rows, self.name)

    def __repr__(self) -> str:
        def show(x: Any) -> str:
            return f"{float(x):.4g}" if np.ndim(x) == 0 else f"array{np.shape(x)}"

        names = ", ".join(k.name if count == 1 else f"{k.name} x{count}" for k, count in self.counted[:12])
        more = "" if len(self.counted) <= 12 else f", ... {len(self.counted) - 12} more"
        return (f"Workload({self.name!r}, {len(self)} kernel(s): [{names}{more}], flops={show(self.flops)}, "
                f"executed_flops={show(self.executed_flops)}, bytes={show(self.bytes)})")


def _init(w: Workload, name: str, parts: tuple[tuple[Node, int], ...], call: Optional[OpCall] = None,
          recipe: Optional[Program] = None, autograd: Optional[Autograd] = None, schedule: Optional[Schedule] = None) -> None:
    setattr_ = object.__setattr__
    setattr_(w, "name", name)
    setattr_(w, "parts", parts)
    setattr_(w, "call", call)
    setattr_(w, "recipe", recipe)
    setattr_(w, "autograd", autograd)
    setattr_(w, "schedule", schedule)
    setattr_(w, "_counted", parts if all(type(n) is Kernel for n, _ in parts) else None)
    setattr_(w, "_shape", None)


def _flatten(parts: tuple[tuple[Node, int], ...], times: int) -> Iterable[tuple[Kernel, int]]:
    for node, count in parts:
        if isinstance(node, Kernel):
            yield node, count * times
        else:
            yield from _flatten(node.parts, count * times)


def _launches(parts: tuple[tuple[Node, int], ...]) -> Iterable[Kernel]:
    for node, count in parts:
        for _ in range(count):
            if isinstance(node, Kernel):
                yield node
            else:
                yield from _launches(node.parts)


def as_workload(w: Any, argument: str = "workload") -> Workload:
    """A Workload from a Workload or a single Kernel; anything else is a type error naming ``argument``."""
    if isinstance(w, Workload):
        return w
    if isinstance(w, Kernel):
        return Workload.of(w.name, ((w, 1),))
    hint = (f" (a model's architecture: pass its program, e.g. {argument}=m.forward(batch=, seq=))"
            if callable(getattr(w, "forward", None)) else "")
    raise ArgumentTypeError(f"{argument} must be a solkit Workload or Kernel, got {type(w).__name__}{hint}")


def chain(name: str, *workloads: Any) -> Workload:
    """Workloads (or kernels) run back to back, as one workload named ``name``; their shapes must broadcast together."""
    label = name if type(name) is str else name_text("name", name)
    parts = tuple((as_workload(w, f"workloads[{i}]"), 1) for i, w in enumerate(workloads))
    if not parts:
        raise ArgumentTypeError(f"chain needs at least one workload after the name {label!r}")
    w = Workload.of(label, parts)
    _check_parts(w, "workloads")
    return w


def _check_parts(w: Workload, argument: str) -> None:
    """Refuse a combined workload whose parts' shapes do not broadcast, or whose launches or totals leave float64."""
    shapes = [node.shape for node, _ in w.parts]
    if any(shapes):
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            listed = ", ".join(f"{node.name!r} {shape}" for (node, _), shape in zip(w.parts, shapes))
            raise ShapeError(f"{argument}: the workloads' shapes do not broadcast together: {listed}") from None
    n = len(w)
    if n > MAX_LAUNCHES:
        raise ShapeError(f"{argument}: the workload would run {_big(n)} launches, more than {MAX_LAUNCHES:,} (2**53)")
    if n == 1:
        return
    for figure in ("matrix_flops", "vector_flops", "bytes_read", "bytes_written"):
        # an upper bound first: one reduction per kernel, no temporaries; the exact sum only if it overflows
        if sum(count * _largest(getattr(k, figure)) for k, count in w.counted) < _INF:
            continue
        try:
            _total(w, figure)
        except ShapeError:
            raise overflow(ShapeError(f"{argument}: the workload's {figure} is beyond float64 (about 1.8e308): "
                                      f"a shape or a count too large")) from None


def _largest(x: Num) -> float:
    """The largest element of a figure (0 for an empty sweep)."""
    if isinstance(x, np.ndarray):
        return float(x.max()) if x.size else 0.0
    return float(x)
