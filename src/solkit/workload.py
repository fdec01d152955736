"""``Workload``: kernels (``solkit.kernel.Kernel``, one launch each) run one after another, repeated parts held once,
with what built it: its operator (``call``), its program (``recipe``), autograd's extras and its schedule.

A workload holds its parts with a count: an 80-layer model holds its layer once,
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

from ._num import Num, broadcast_to
from ._validate import checked_call, shown, name_text
from .errors import ArgumentTypeError, ShapeError
from .kernel import (KERNEL_KINDS, MAX_LAUNCHES, MAX_LISTED, RING_COLLECTIVES, Gemm, Kernel, Link, Rows, add_figures,
                     big_count, is_overflow, overflow)

__all__ = ["Kernel", "Workload", "Gemm", "Rows", "Link", "Join", "Pipeline", "Sync", "Schedule", "host_syncs", "Autograd", "Program", "HostCalls", "FSDP_GROUP_OP", "OpCall", "KERNEL_KINDS", "MAX_LAUNCHES", "MAX_LISTED", "as_workload", "chain", "issued_launches", "with_kernels",
           "kernel_count",
           "overflow", "is_overflow", "RING_COLLECTIVES"]

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


class Sync(NamedTuple):
    """A workload's ``schedule``: the host waits for ``stream`` here (a device-to-host read: ``.item()``, ``.tolist()``,
    a data-dependent shape) before it issues what follows; its parts (usually none) run after the wait."""

    stream: str = "compute"


#: how a workload's parts run in time beyond one after another (``predict``'s timeline reads it)
Schedule = Union[Join, Pipeline, Sync]


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
    is a ``models.split.Split``). ``world``: the GPUs a split step runs on (dp x tp x pp; 1 for anything else):
    the workload is one GPU's share of it, so ``mfu`` of it is per GPU. ``host_calls``: the host work a captured
    program counted beyond its launches (``HostCalls``), None for a closed form (its host time is per layer).
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

    @property
    def world(self) -> int: ...

    @property
    def host_calls(self) -> Optional["HostCalls"]: ...

    def training_step(self, optimizer: str, amp: Any, microbatches: int, checkpointing: bool,
                      split: Any) -> "Workload": ...


class HostCalls(NamedTuple):
    """What a captured program's CPU did beyond launching: ATen calls that launch nothing, module forwards run, and
    its launching calls by host key (``capture.host_keys``: the op, with a size class where its host path changes),
    which the spec's ``op_host_weight`` weighs."""

    silent: int  # views, metadata, allocations: dispatched, nothing launched
    modules: int  # nn.Module forwards (their Python, hooks)
    ops: tuple[tuple[str, int], ...] = ()  # (host key, calls) of the calls that launched, sorted by key
    backward_launches: float = 0.0  # of the launches: those the autograd engine issued
    after_launches: float = 0.0  # of the launches: those outside the autograd engine after its first (the optimizer)
    backward_silent: int = 0  # of silent: those the autograd engine ran
    after_silent: int = 0  # of silent: those outside the autograd engine after its first


class OpCall(NamedTuple):
    """Which registered operator built a workload, and its validated arguments (for its backward)."""

    op: str
    args: Mapping[str, Any]


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
        total = add_figures(total, value if count == 1 else value * count)  # pragma: no mutate (x * 1 is x)
    return total


def host_syncs(w: "Workload") -> int:
    """The times the host waits for the GPU in ``w`` (its ``Sync`` parts, each counted as often as it runs)."""
    own = 1 if type(w.schedule) is Sync else 0
    return own + sum(count * host_syncs(node) for node, count in w.parts if isinstance(node, Workload))


def issued_launches(w: "Workload") -> Num:
    """Launches the CPU issues for ``w``: each kernel's count times its ``launches``, per point of a sweep (an im2col's
    launches are its batch's images: a float for one shape, an array where they vary)."""
    total: Any = 0.0
    for k, count in w.counted:
        total = total + count * k.launches
    return total if type(total) is float else (float(total) if np.ndim(total) == 0 else np.asarray(total, np.float64))


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

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by its slots (``multiprocessing``, ``joblib``, a notebook's cache)."""
        from ._frozen import restored, slots_state

        return restored, (type(self), slots_state(self))

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
                             f"{big_count(count)} x {len(self):,} launches = {big_count(launches)}")
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
        return add_figures(self.matrix_flops, self.vector_flops)

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
        return add_figures(self.bytes_read, self.bytes_written)

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
    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per distinct kernel (``counted``, in first-launch order): name, kind, precision,
        ``count`` (its launches), then its figures summed over those launches (``model_flops``, ``executed_flops``,
        ``matrix_flops``, ``vector_flops``, ``bytes_read``, ``bytes_written``, ``bytes``): each column sums to the
        workload's figure. A sweep: one row per kernel and point, ``point`` the flat (C-order) index of the point."""
        from ._optional import require_pandas

        pd = require_pandas()
        shape, counted = self.shape, self.counted
        points = int(np.prod(shape))
        figures = ("model_flops", "executed_flops", "matrix_flops", "vector_flops", "bytes_read", "bytes_written",
                   "bytes")
        columns: dict[str, Any] = {
            "kernel": np.repeat([k.name for k, _ in counted], points),
            "kind": np.repeat([k.kind for k, _ in counted], points),
            "precision": np.repeat([k.precision for k, _ in counted], points),
            "count": np.repeat(np.array([n for _, n in counted], dtype=np.int64), points),
        }
        for f in figures:  # each kernel's figure times its count, over the sweep's points
            columns[f] = np.concatenate([np.broadcast_to(np.multiply(getattr(k, f), n, dtype=np.float64), shape).reshape(-1)
                                         for k, n in counted])
        if shape:
            columns = {"point": np.tile(np.arange(points, dtype=np.int64), len(counted)), **columns}
        return pd.DataFrame(columns)

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
        return (f"Workload({self.name!r}, {kernel_count(self)}: [{names}{more}], flops={show(self.flops)}, "
                f"executed_flops={show(self.executed_flops)}, bytes={show(self.bytes)})")


def kernel_count(w: Workload) -> str:
    """'187 distinct kernels, 4,435 launches': what a workload's reprs count, each named (launches: what the CPU
    issues, ``issued_launches``: a kernel of several launches a run, an im2col's, counts each)."""
    distinct, issued = len(w.counted), issued_launches(w)
    low, high = round(float(np.min(issued))), round(float(np.max(issued)))
    launches = f"{low:,} to {high:,} launches" if low != high else f"{high:,} launch{'' if high == 1 else 'es'}"
    return f"{distinct:,} distinct kernel{'' if distinct == 1 else 's'}, {launches}"


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


@checked_call
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
        raise ShapeError(f"{argument}: the workload would run {big_count(n)} launches, more than {MAX_LAUNCHES:,} (2**53)")
    if n == 1:
        return
    for figure in ("matrix_flops", "vector_flops", "bytes_read", "bytes_written"):
        # an upper bound first: one reduction per kernel, no temporaries; the exact sum only if it overflows
        if sum(count * _largest(getattr(k, figure)) for k, count in w.counted) < math.inf:
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
