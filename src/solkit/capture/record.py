"""The recorder: a TorchDispatchMode over fake tensors that writes down every ATen call a program makes.

Each call becomes an ``Event``: the op's name, its arguments in trace form (``encode``), its tensor outputs, whether
the autograd engine ran it and the module path it came from (forward: the modules whose forward is running; backward:
the module of the forward op whose gradient node runs, by the node's sequence number). Calls that launch no kernel
(views, metadata, uninitialized allocations, outputs of no element) are kept out of the events but their outputs
still count as memory, and their number (``silent_calls``) as host work, beside the module forwards run
(``module_calls``): the Python and dispatch a CPU spends issuing the program (``prediction.host``).

A device-to-host read (``.item()``: ``aten::_local_scalar_dense``) is a recorded stall under ``syncs="stall"`` (the
value read stands in as zero: NB, a branch on it takes the zero side) or a CaptureError under ``syncs="error"``; a
data-dependent shape (``nonzero``, a boolean mask) is always a CaptureError naming the op, the module path and what
would get past it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional

import torch
from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
from torch.utils._python_dispatch import TorchDispatchMode

from .encode import TraceArgs, cpp_dtype, encode
from ..errors import CaptureError

__all__ = ["Event", "Output", "Recorder", "NO_LAUNCH", "SYNC_HINT", "setup", "active"]

#: ops that launch no kernel although their schema is not a view: metadata, uninitialized allocations, aliases
NO_LAUNCH = frozenset({
    "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided",
    "aten::_unsafe_view", "aten::lift_fresh", "aten::lift_fresh_copy", "aten::resize_", "aten::set_", "aten::detach",
    "aten::detach_", "aten::requires_grad_", "aten::retain_grad",
    "aten::_reshape_alias", "aten::sym_size", "aten::sym_stride", "aten::sym_numel", "aten::sym_storage_offset",
    "aten::size", "aten::stride", "aten::is_contiguous", "aten::dim", "aten::numel", "aten::storage_offset",
    "aten::is_non_overlapping_and_dense", "aten::is_strides_like_format", "aten::_has_compatible_shallow_copy_type",
    "aten::is_same_size", "aten::record_stream", "aten::_nested_tensor_size", "aten::equal_shape",
    "aten::_assert_async", "aten::_assert_tensor_metadata", "aten::_functional_assert_async",
    "aten::sym_constrain_range_for_size", "aten::_assert_scalar", "aten::_print", "aten::_version",
})
#: what gets a data-dependent Hugging Face MoE past a sync
SYNC_HINT = ("a Hugging Face mixture of experts runs without syncs under experts_implementation='grouped_mm' (transformers "
             "5's default; solkit counts its routing as balanced top-k); otherwise keep the data-dependent step outside "
             "the captured function")
#: the CUDA caching allocator's block size: every allocation takes a multiple of 512 bytes
BLOCK = 512
#: a program that reads the device this many times, or makes this many ATen calls, is refused: a Python loop on a value
#: read on the host (which stands in as zero, so a loop waiting on it never ends) would otherwise run forever
MAX_STALLS = 10_000
MAX_EVENTS = 20_000_000


class Output(NamedTuple):
    """A tensor output of a call: dims, C++ dtype name, strides, bytes of its elements."""

    shape: tuple[int, ...]
    dtype: str
    stride: tuple[int, ...]
    nbytes: int


class Event(NamedTuple):
    """One recorded ATen call (see the module docstring); ``hints``: (list_elements, list_dtype) of tensor lists."""

    op: str
    trace: TraceArgs
    outputs: tuple[Output, ...]
    backward: bool
    module: str
    read: int  # bytes of the tensor inputs as stored (a broadcast dim once)
    hints: tuple[Optional[int], Optional[str]]
    lists: int  # tensors in the first tensor-list input (0 without one)
    mutable: bool
    recompute: bool = False  # a forward run again inside the backward (activation checkpointing)


def stored_bytes(t: Any) -> int:
    """Bytes of a tensor's elements as stored: dims of stride 0 (broadcast) counted once."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n * t.element_size() if t.numel() else 0


def _tensors(value: Any) -> list[Any]:
    """The tensors in an argument (a tensor, or a list or tuple of them)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


@dataclass
class _Storage:
    """One storage's life: bytes (rounded to the allocator's block), when it came and went (event clock)."""

    nbytes: int
    born: int
    died: Optional[int] = None
    kind: str = "activations"


@dataclass
class Memory:
    """Every storage the program held, in allocation and free order (a clock ticks at each allocation and free)."""

    records: list[_Storage] = field(default_factory=list)
    clock: int = 0
    quiet: list[list[int]] = field(default_factory=list)  # [start, end] clocks of setup blocks: no peak taken inside
    _live: dict[int, _Storage] = field(default_factory=dict)
    _refs: list[Any] = field(default_factory=list)

    def track(self, t: Any, kind: str = "activations") -> None:
        """Note ``t``'s storage (once) and when its last reference dies; ``kind`` other than activations re-labels it."""
        st = t.untyped_storage()
        key = st._cdata
        known = self._live.get(key)
        if known is not None and known.died is None:
            if kind != "activations":
                known.kind = kind
            return
        self.clock += 1
        nbytes = -(-int(st.nbytes()) // BLOCK) * BLOCK
        record = self._live[key] = _Storage(nbytes, self.clock, kind=kind)
        self.records.append(record)
        self._refs.append(weakref.ref(st, self._died(record)))

    def _died(self, record: _Storage) -> Callable[[Any], None]:
        def callback(_: Any) -> None:
            if record.died is None:
                self.clock += 1
                record.died = self.clock
        return callback

    def mark(self, t: Any, kind: str) -> None:
        """Mark ``t``'s live storage as ``kind`` (gradients, optimizer_states)."""
        self.track(t, kind)

    def peak(self) -> tuple[int, dict[str, int]]:
        """The most bytes live at once, and how they split by kind at that moment (the first time it is reached)."""
        changes = sorted([(r.born, r.nbytes, r.kind) for r in self.records]
                         + [(r.died, -r.nbytes, r.kind) for r in self.records if r.died is not None])
        live: dict[str, int] = {}
        total = best = 0
        split: dict[str, int] = {}
        for clock, delta, kind in changes:
            live[kind] = live.get(kind, 0) + delta
            total += delta
            if total > best and not any(start <= clock <= end for start, end in self.quiet):
                best, split = total, dict(live)
        return best, split


class Recorder(TorchDispatchMode):
    """Records every ATen call (``events``), the module it came from, live storages and syncs."""

    def __init__(self, syncs: str = "stall") -> None:
        super().__init__()
        self.events: list[Event] = []
        self.memory = Memory()
        self.syncs: list[tuple[str, int]] = []  # (module path, events before it) of each stall
        self.last: tuple[str, str] = ("", "")  # (op, module path) of the call now dispatching
        self.policy = syncs
        self.modules: list[str] = []  # the forward stack of module paths, outermost first
        self.objects: list[Any] = []  # the modules themselves, in step with ``modules``
        self._of_node: dict[int, str] = {}  # autograd sequence number -> module path of the op that made the node
        self.suppress = 0  # > 0: calls are not events (a construct the function mode records itself)
        self.notes: dict[str, None] = {}  # what the recording assumed, in order
        self.recompute = 0  # > 0: a module's forward runs inside the backward (activation checkpointing)
        self.silent_calls = 0  # ATen calls that launch nothing (views, metadata, allocations): host work all the same
        self.module_calls = 0  # module forwards run (the Tracker counts them): their Python is host work
        self.backward_silent = 0  # of silent_calls: those the autograd engine ran
        self.after_silent = 0  # of silent_calls: those outside the autograd engine after its first call (the optimizer)
        self.backward_seen = False  # the autograd engine has run a call

    # ---- where a call comes from -------------------------------------------------------------------------------
    def where(self) -> tuple[str, bool]:
        """(module path, backward) of the call now dispatching."""
        node = torch._C._current_autograd_node()
        if node is not None:
            return self._of_node.get(node._sequence_nr(), ""), True
        path = self.modules[-1] if self.modules else ""
        if torch._C._current_graph_task_id() != -1:
            return path, True
        self._of_node.setdefault(torch._C._autograd._get_sequence_nr() - 1, path)
        return path, False

    def note(self, text: str) -> None:
        """Record an assumption (once)."""
        self.notes[text] = None

    def stall(self, module: str, why: str) -> None:
        """A device-to-host read here (``why``): a host stall of the program, unless inside ``setup()`` (which launches
        nothing) or right after another read (nothing launched between: the GPU is already idle); past ``MAX_STALLS``
        a CaptureError (a loop on a value read on the host)."""
        if self.suppress:
            return
        if self.syncs and self.syncs[-1][1] == len(self.events):  # no launch since the last read: the host waits once
            return                                                # (``.tolist()`` reads each element so)
        if len(self.syncs) >= MAX_STALLS:
            raise CaptureError(f"{why}{self.place(module)} was read on the host {MAX_STALLS:,} times: a Python loop on a "
                               "value the GPU computes never ends on fake tensors (the value stands in as zero); capture "
                               "one pass of the loop's body instead")
        self.syncs.append((module, len(self.events)))

    def place(self, module: str) -> str:
        """Where a call ran, in words: its module path, else the root module's class."""
        if module:
            return f" in module {module!r}"
        if self.objects:
            return f" in the root module ({type(self.objects[0]).__name__})"
        return " at the top level (no module)"

    def emit(self, op: str, trace: TraceArgs, outputs: tuple[Output, ...], read: int, module: str, backward: bool,
             hints: tuple[Optional[int], Optional[str]] = (None, None), lists: int = 0, mutable: bool = False) -> None:
        """Append an event made outside the dispatch (a construct recorded whole, such as SDPA), unless suppressed."""
        if self.suppress:
            return
        self.events.append(Event(op, trace, outputs, backward, module, read, hints, lists, mutable, self.recompute > 0))

    # ---- the dispatch ------------------------------------------------------------------------------------------
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func._schema.name
        if name.startswith(("prim::", "profiler::")):
            return func(*args, **kwargs)
        module, backward = self.where()
        self.last = (name, module)
        self.backward_seen = self.backward_seen or backward
        try:
            if name == "aten::_grouped_mm" and args[0].dtype != torch.bfloat16:
                out = self._grouped_fallback(func, args, kwargs, module)
            else:
                out = func(*args, **kwargs)
        except DataDependentOutputException:
            if name == "aten::_local_scalar_dense" and self.policy == "stall":
                self.stall(module, name)
                self.note("a value read on the host (.item()) stands in as zero (False, 0 or 0.0): a branch on it takes "
                          "the zero side")
                return _stand_in(args[0])
            raise CaptureError(_sync_message(name, self.place(module), "reads a tensor's value on the host (.item(), "
                                             "a Python bool or int of a tensor)", self.policy)) from None
        except DynamicOutputShapeException:
            raise CaptureError(_sync_message(name, self.place(module), "has an output whose size depends on the data "
                                             "(nonzero, a boolean mask, unique): eager PyTorch syncs with the GPU here",
                                             None)) from None
        outs = _tensors(out) if not isinstance(out, tuple) else [t for o in out for t in _tensors(o)]
        for t in outs:
            self.memory.track(t)
        inputs = [t for a in list(args) + list(kwargs.values()) for t in _tensors(a)]
        if func.is_view and not self.suppress and outs and not _aliases(outs, inputs) and inputs:
            return self._copied(func, inputs[0], outs[0], module, backward, out)
        if self.suppress:
            return out  # a construct recorded whole (``emit``) runs these calls inside its one event
        if name in NO_LAUNCH or func.is_view or (outs and all(t.numel() == 0 for t in outs)):
            self._silent(backward)
            return out  # nothing launches (a kernel over no element returns before launching)
        mutable = func._schema.is_mutable
        if not mutable and outs and _aliases(outs, inputs):
            self._silent(backward)
            return out  # every output is an input's storage: a view by another name
        trace = encode(func, tuple(args), kwargs)
        first = next((a for a in list(args) + list(kwargs.values())
                      if isinstance(a, (list, tuple)) and a and all(isinstance(v, torch.Tensor) for v in a)), None)
        hints: tuple[Optional[int], Optional[str]] = (None, None)
        lists = 0
        if first is not None:
            lists = len(first)
            hints = (sum(int(t.numel()) for t in first), cpp_dtype(first[0].dtype))
        outputs = tuple(Output(tuple(t.shape), cpp_dtype(t.dtype), tuple(t.stride()), int(t.numel()) * t.element_size())
                        for t in outs)
        read = sum(stored_bytes(t) for t in inputs if t.dim() > 0 or len(inputs) == 1)
        if len(self.events) >= MAX_EVENTS:
            raise CaptureError(f"the program made {MAX_EVENTS:,} ATen calls that launch kernels (last {name}"
                               f"{self.place(module)}): a loop that does not end on fake tensors? capture a bounded part")
        self.events.append(Event(name, trace, outputs, backward, module, read, hints, lists, mutable, self.recompute > 0))
        return out

    def _silent(self, backward: bool) -> None:
        """Count a call that launched nothing, and its phase (the autograd engine's, or after its first call)."""
        self.silent_calls += 1
        if backward:
            self.backward_silent += 1
        elif self.backward_seen:
            self.after_silent += 1

    def _copied(self, func: Any, source: Any, result: Any, module: str, backward: bool, out: Any) -> Any:
        """An op that may alias its input but made a new tensor (``to`` a new dtype, ``reshape`` or ``contiguous`` of
        a strided input, as they reach the recorder whole under inference mode): the copy eager runs, ``_to_copy``."""
        if result.numel() == 0:
            return out
        trace = encode(torch.ops.aten._to_copy.default, (source,), {"dtype": result.dtype})
        outputs = (Output(tuple(result.shape), cpp_dtype(result.dtype), tuple(result.stride()),
                          int(result.numel()) * result.element_size()),)
        self.events.append(Event("aten::_to_copy", trace, outputs, backward, module, stored_bytes(source), (None, None),
                                 0, False, self.recompute > 0))
        return out

    def _grouped_fallback(self, func: Any, args: Any, kwargs: Any, module: str) -> Any:
        """``_grouped_mm`` off bfloat16: ATen's fallback reads the group offsets on the host (a stall) and runs one
        GEMM per group; its output as the bf16 kernel's, in the inputs' dtype."""
        self.stall(module, "aten::_grouped_mm's group offsets")
        self.note("a grouped GEMM off bfloat16 runs ATen's fallback: the group offsets read on the host (a stall), "
                  "one GEMM launch per group")
        a, b = args[0], args[1]
        self.suppress += 1
        try:
            out = func(a.to(torch.bfloat16), b.to(torch.bfloat16), *args[2:], **kwargs)
            return torch.empty_like(out, dtype=a.dtype)
        finally:
            self.suppress -= 1


def _aliases(outs: list[Any], inputs: list[Any]) -> bool:
    """Whether every output shares a storage with an input."""
    held = {t.untyped_storage()._cdata for t in inputs}
    return all(t.untyped_storage()._cdata in held for t in outs)


def _stand_in(t: Any) -> Any:
    """The value a stalled host read stands in with: False, 0 or 0.0 by dtype (NB: the program takes the zero side)."""
    if t.dtype == torch.bool:
        return False
    return 0.0 if t.is_floating_point() else 0


def _sync_message(op: str, where: str, what: str, policy: Optional[str]) -> str:
    """A CaptureError's text: the op, where it ran (``Recorder.place``), why, and what gets past it."""
    past = SYNC_HINT
    if policy == "error":
        past = "syncs='stall' records it as a host stall with the value read as zero; or " + SYNC_HINT
    return f"{op}{where} {what}, which fake tensors cannot know: {past}"


def active() -> Optional[Recorder]:
    """The recorder of the capture now running, or None."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return next((m for m in reversed(_get_current_dispatch_mode_stack()) if isinstance(m, Recorder)), None)


class setup:  # noqa: N801 - a context manager used like a function
    """Inside a captured function: what runs here launches nothing in the program (building inputs, a KV cache, an
    optimizer's state); the tensors it leaves count as memory, its own transient peak does not. Outside a capture it
    does nothing."""

    def __enter__(self) -> "setup":
        self.recorder = active()
        if self.recorder is not None:
            self.recorder.suppress += 1
            self.recorder.memory.quiet.append([self.recorder.memory.clock + 1, -1])
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.recorder is not None:
            self.recorder.suppress -= 1
            self.recorder.memory.quiet[-1][1] = self.recorder.memory.clock
