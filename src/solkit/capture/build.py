"""Recorded calls to a Workload: each call mapped by the registry's ATen adapters, repeated layers held once.

Each call launches as ``eager.launched`` says; each launch maps through ``solkit.ops.aten.map_call`` (identical calls
mapped once); SDPA's recorded backward is its forward call's registered gradient. A launch no operator models stays
as an unmodeled kernel (kind "elementwise", calibration key "unmodeled": its tensors' bytes, no FLOPs). A foreach or
fused optimizer call launches as PyTorch's multi_tensor_apply does (a new launch when its tensor list or its 320
chunks of 65,536 elements are full; tensors per launch by list depth, MultiTensorApply.cuh).

A device-to-host read recorded as a stall becomes a part of no kernels whose ``schedule`` is a ``workload.Sync`` (the
host waits for the GPU there), in program order, inside its layer's part where it ran in one.

Repeats: calls inside the children of a repeated container (``Tracker.containers``: a ModuleList of one class) are
grouped by child; consecutive children whose calls are identical (the same ATen calls on the same shapes, dtypes and
arguments) become one layer x N (``Workload.repeat``).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Optional

from ..ops.aten import Mapped, map_call
from ..ops.registry import REGISTRY
from ..workload import Kernel, Node, Sync, Workload, issued_launches, with_kernels
from .eager import SDPA_BACKWARD, Launch, launched
from .program import Coverage
from .record import Event

__all__ = ["Built", "build"]

#: multi_tensor_apply's tensors per launch by list depth (MultiTensorApply.cuh: depth_to_max_tensors)
_TENSORS_PER_LAUNCH = {1: 110, 2: 64, 3: 48, 4: 36, 5: 30}
_CHUNK, _CHUNKS_PER_LAUNCH = 65536, 320
_BY_NAME = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64"}


class Built:
    """A program's parts (launch order, layers held once), its coverage, layers and notes."""

    def __init__(self, parts: tuple[tuple[Node, int], ...], coverage: Coverage, layers: int, notes: tuple[str, ...],
                 stalls: tuple[int, ...], phases: tuple[float, float] = (0.0, 0.0)) -> None:
        self.parts, self.coverage, self.layers, self.notes = parts, coverage, layers, notes
        self.stalls = stalls  # per host sync: the kernel calls (in launch order) before it
        self.phases = phases  # launches the autograd engine issued; launches outside it after its first (the optimizer)


class _Item:
    """One launch: the part it adds, its signature (for repeats), its layer, whether it is mapped, its bytes."""

    __slots__ = ("node", "key", "layer", "mapped", "bytes", "op", "backward")

    def __init__(self, node: Node, key: Any, layer: Optional[tuple[str, int]], mapped: bool, nbytes: float,
                 op: str, backward: bool) -> None:
        self.node, self.key, self.layer, self.mapped, self.bytes, self.op = node, key, layer, mapped, nbytes, op
        self.backward = backward


def _list_launches(e: Event, depth: int) -> float:
    """multi_tensor_apply's launches for ``e``'s tensor lists (module docstring)."""
    tensors, elements = e.lists, e.hints[0] or 0
    per = _TENSORS_PER_LAUNCH.get(depth, 30)
    chunks = elements / _CHUNK + tensors
    return float(max(1, math.ceil(tensors / per), math.ceil(chunks / _CHUNKS_PER_LAUNCH)))


def _unmodeled(e: Event, launch: Launch, reason: str) -> Kernel:
    """A launch no operator models: its tensors' bytes (inputs as stored, outputs written), no FLOPs, its kernels."""
    dtype = next((o.dtype for o in e.outputs), next((d for d in launch.trace.dtypes if d in _BY_NAME), "float"))
    precision = _BY_NAME.get(dtype, "fp32")
    written = float(sum(o.nbytes for o in e.outputs))
    return Kernel(f"{launch.op} (unmodeled)", "elementwise", precision, bytes_read=float(e.read), bytes_written=written,
                  op="unmodeled", launches=1.0 if launch.kernels is None else launch.kernels)


class _Mapper:
    """map_call of each distinct launch once; the notes of every mapping."""

    def __init__(self) -> None:
        self.cache: dict[Any, tuple[Node, bool]] = {}
        self.notes: dict[str, None] = {}

    def node(self, e: Event, launch: Launch) -> tuple[Node, bool, Any]:
        """(the launch's workload or unmodeled kernel, mapped, cache key)."""
        key = (launch.op, launch.trace, launch.kernels, launch.lists, e.backward, e.hints, e.lists, e.op, e.outputs, e.read,
               e.recompute)
        hit = self.cache.get(key)
        if hit is not None:
            return hit[0], hit[1], key
        t = launch.trace
        elements, dtype = launch.lists or e.hints
        result = map_call(launch.op, t.shapes, t.dtypes, t.concrete, t.strides, e.backward,
                          list_elements=elements, list_dtype=dtype)
        node: Node
        if isinstance(result, Mapped):
            w = result.workload
            if e.op == SDPA_BACKWARD:
                assert w.call is not None  # noqa: S101 - the registry records every call
                w = REGISTRY[w.call.op].gradient(w.call)
            if e.recompute:  # checkpointing's recomputed forward: executed FLOPs, no model FLOPs
                w = with_kernels(w, model_flops=0.0)
            if launch.per_group:  # ATen's grouped-GEMM fallback: one GEMM launch per group
                w = with_kernels(w, launches=float(launch.trace.shapes[0][0]))
            if launch.kernels is not None:  # an op that launches several kernels (eager.launched)
                w = with_kernels(w, launches=launch.kernels)
            if e.lists and result.operator in ("adamw", "foreach"):
                depth = sum(1 for d in t.dtypes if d == "TensorList")
                w = with_kernels(w, launches=_list_launches(e, depth))
            for note in result.notes:
                self.notes[note] = None
            if launch.note:
                self.notes[launch.note] = None
            node, mapped = w, True
        else:
            node, mapped = _unmodeled(e, launch, result.reason), False
        self.cache[key] = (node, mapped)
        return node, mapped, key


def _bytes(node: Node) -> float:
    """DRAM bytes of a part."""
    return float(node.bytes_read + node.bytes_written)


def _label(e: Event, op: str) -> str:
    """A part's name: the op, backward or not, and where it ran."""
    where = e.module or "top level"
    return f"{op.removeprefix('aten::')}{' backward' if e.backward else ''} ({where})"


def _sync(module: str, layer_of: Any, backward: bool) -> _Item:
    """A host sync where ``module`` read a value on the host: a part of no kernels, scheduled ``Sync``; ``backward``:
    the autograd engine ran the call it comes before."""
    node = Workload.of(f"host sync ({module or 'top level'})", (), schedule=Sync())
    # its key names no module path: the same sync in each of N identical layers keeps them one layer x N
    return _Item(node, ("sync",), layer_of(module) if module else None, True, 0.0, "sync", backward)


def build(events: list[Event], layer_of: Any, kinds: dict[str, str], syncs: Any = ()) -> Built:
    """The parts of a program of ``events`` (module docstring); ``layer_of(path)`` finds a call's layer; ``syncs``:
    (module path, the events before it) of each recorded host stall."""
    mapper = _Mapper()
    items: list[_Item] = []
    at: dict[int, list[str]] = {}
    for module, before in syncs:
        at.setdefault(before, []).append(module)
    stalls: list[int] = []
    for index, e in enumerate(events):
        for module in at.pop(index, ()):
            stalls.append(sum(1 for i in items if i.op != "sync"))
            items.append(_sync(module, layer_of, e.backward))
        layer = layer_of(e.module) if e.module else None
        for launch in launched(e):
            node, mapped, key = mapper.node(e, launch)
            named = node.renamed(_label(e, launch.op), kernels=True) if isinstance(node, Workload) else \
                node.renamed(_label(e, launch.op) + " [unmodeled]")
            items.append(_Item(named, key, layer, mapped, _bytes(node), launch.op, e.backward))
    for module in (m for before in sorted(at) for m in at[before]):  # after the last call
        stalls.append(sum(1 for i in items if i.op != "sync"))
        items.append(_sync(module, layer_of, bool(events) and events[-1].backward))
    coverage = _coverage([i for i in items if i.op != "sync"])
    parts, layers = _repeats(items, kinds)
    return Built(parts, coverage, layers, tuple(mapper.notes), tuple(stalls), _phases(items))


def _phases(items: list[_Item]) -> tuple[float, float]:
    """The launches of ``items`` the autograd engine issued, and those outside it after its first (an optimizer's
    step, its zero_grad)."""
    backward = after = 0.0
    seen = False
    for item in items:
        if item.op == "sync":
            continue
        n = float(issued_launches(item.node) if isinstance(item.node, Workload) else item.node.launches)
        seen = seen or item.backward
        if item.backward:
            backward += n
        elif seen:
            after += n
    return backward, after


def _coverage(items: list[_Item]) -> Coverage:
    """Calls and bytes mapped, and the unmodeled ops by calls."""
    unmodeled = Counter(i.op for i in items if not i.mapped)
    total = math.fsum(i.bytes for i in items)
    mapped = math.fsum(i.bytes for i in items if i.mapped)
    return Coverage(len(items), sum(1 for i in items if i.mapped), total, mapped,
                    tuple(sorted(unmodeled.items(), key=lambda kv: (-kv[1], kv[0]))))


def _repeats(items: list[_Item], kinds: dict[str, str]) -> tuple[tuple[tuple[Node, int], ...], int]:
    """Parts with consecutive identical layers held once (module docstring), and the layers the forward ran."""
    runs: list[tuple[Optional[tuple[str, int]], list[_Item]]] = []
    for item in items:
        if item.layer is not None and runs and runs[-1][0] == item.layer:
            runs[-1][1].append(item)
        else:
            runs.append((item.layer, [item]))
    parts: list[tuple[Node, int]] = []
    seen: set[tuple[str, int]] = set()
    i = 0
    while i < len(runs):
        layer, run = runs[i]
        if layer is None:
            parts.extend((item.node, 1) for item in run)
            i += 1
            continue
        signature = tuple(item.key for item in run)
        j = i + 1
        indices = [layer[1]]
        while j < len(runs):
            other, body_items = runs[j]
            if other is None or other[0] != layer[0] or tuple(item.key for item in body_items) != signature:
                break
            indices.append(other[1])
            j += 1
        backward = all(item.backward for item in run)
        if not backward:
            seen.update((layer[0], k) for k in indices)
        container = layer[0] or "layers"
        kind = kinds.get(f"{layer[0]}.{layer[1]}" if layer[0] else str(layer[1]), "layer")
        span = f"{indices[0]}" if len(indices) == 1 else f"{indices[0]}-{indices[-1]}"
        body = Workload.of(f"{container}.{span} ({kind}{', backward' if backward else ''})",
                           tuple((item.node, 1) for item in run))
        parts.append((body, 1) if len(indices) == 1 else (body.repeat(len(indices)), 1))
        i = j
    return tuple(parts), len(seen)
