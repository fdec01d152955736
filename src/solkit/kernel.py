"""``Kernel``: one launch, with what it executes (matrix FLOPs on tensor cores, vector FLOPs on CUDA cores), the useful
(model) FLOPs among them, and its compulsory DRAM bytes; ``Gemm``, ``Rows`` and ``Link`` describe its problem.

Each figure is a Python float for one shape or a float64 numpy array for a sweep (figures of one kernel broadcast
together); a negative, non-finite or non-numeric figure is refused, and a total beyond float64 (about 1.8e308) is a
``ShapeError`` (``overflow``), never an inf figure.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import numpy as np

from ._num import Num, shape_of
from ._validate import checked_call, digits, shown
from .errors import ArgumentTypeError, OptionError, ShapeError
from .precision import PRECISIONS, normalize

__all__ = ["Kernel", "Gemm", "Rows", "Link", "KERNEL_KINDS", "RING_COLLECTIVES", "MAX_LAUNCHES", "MAX_LISTED", "overflow",
           "is_overflow", "add_figures", "big_count"]

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
    ``layout``: a forward conv's layout ("nhwc" or "nchw"), which decides how cuDNN pads unaligned channels;
    ``groups``: ragged work, one (m, n, k) per group, each group ``batch / len(groups)`` products (a varlen
    attention's sequences: queries, keys, head dim; a grouped GEMM's experts); m, n and k then hold the largest
    (a grouped GEMM's n and k may be arrays, a sweep); ``split``: whether the library may split the reduction over
    idle SMs (a varlen flash attention splits its keys only for a packed decode).
    """

    m: Num
    n: Num
    k: Num
    batch: Num = 1.0
    channels: Optional[Num] = None
    layout: Optional[str] = None
    groups: Optional[tuple[tuple[Num, Num, Num], ...]] = None
    split: bool = True


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


def _figure(kernel: str, name: str, value: Any) -> Num:
    """A kernel figure as a float or a float64 array; negative, non-finite or non-numeric is refused."""
    kind = type(value)
    if kind is float or kind is int:
        if 0 <= value < math.inf:
            try:
                return float(value)
            except OverflowError:  # an int beyond float64
                raise overflow(ShapeError(f"{kernel}: {name} must be a finite number >= 0 that float64 can hold "
                                          f"(below 1.8e308), got an integer of {digits(value)}")) from None
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


def big_count(n: int) -> str:
    """A large count, short: 1e+12, or the digits of one beyond float64."""
    return f"{n:.4g}" if n < 10**300 else f"an integer of {digits(n)}"


def overflow(error: ShapeError) -> ShapeError:
    """``error`` marked as a figure beyond float64 (an operator then names the dimensions that caused it)."""
    error.overflow = True  # type: ignore[attr-defined]  # a marker read by is_overflow
    return error


def is_overflow(error: BaseException) -> bool:
    """Whether ``error`` is a figure beyond float64 (``overflow``)."""
    return getattr(error, "overflow", False) is True


def add_figures(a: Num, b: Num) -> Num:
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
        executed = add_figures(mf, vf)
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

    # an unknown keyword (flops=) or a missing argument: an ArgumentTypeError naming it and what Kernel takes
    __new__ = checked_call(__new__, "Kernel()")  # type: ignore[assignment]

    @property
    def executed_flops(self) -> Num:
        """FLOPs the kernel computes, matrix plus vector."""
        return add_figures(self.matrix_flops, self.vector_flops)

    @property
    def flops(self) -> Num:
        """Useful (model) FLOPs."""
        return self.model_flops

    @property
    def bytes(self) -> Num:
        """Compulsory DRAM bytes: read plus written."""
        return add_figures(self.bytes_read, self.bytes_written)

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
