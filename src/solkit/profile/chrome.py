"""torch.profiler Chrome traces (``export_chrome_trace``) to kernel records linked to the ops that launched them.

The format, as Kineto writes it (checked on the H200 fixtures in ``data/profiles``, torch 2.11): ``"ph": "X"``
events with ``ts``/``dur`` in microseconds. GPU activity is ``cat`` "kernel", "gpu_memcpy" or "gpu_memset"
(``pid`` = device, ``tid`` = stream; args ``External id``, ``correlation``, ``stream``, ``device``, ``grid``,
``block``, ``bytes``). Host events are ``cpu_op`` (ATen ops, autograd nodes, with ``record_shapes``: "Input Dims",
"Input type", "Input Strides", "Concrete Inputs"), ``user_annotation`` (``record_function`` ranges such as
``Optimizer.step#AdamW.step``) and the launch calls ``cuda_runtime``/``cuda_driver`` (args ``correlation``,
``External id``). ``gpu_user_annotation`` spans are not kernels and are skipped.

Linking, for each GPU event: (1) its ``External id`` names the innermost cpu_op/user_annotation on the launching
thread's stack; (2) failing that, its ``correlation`` names the launch call, whose own ``External id`` is tried;
(3) failing that, the innermost host op enclosing the launch call in time on its thread. Ops nest per (pid, tid)
by interval containment: one sort and one stack per thread, and a bisection per fallback lookup, so a trace of
a million events is O(n log n).

``backward``: launched under the autograd engine: an enclosing host op named
``autograd::engine::evaluate_function: ...`` or ``...Backward<n>``, or a launching thread named ``pt_autograd_*``.
In the fixtures all three agree: every kernel launched on the autograd thread sits under an
``evaluate_function`` op, and no kernel on the main thread does (the loss's ``ones_like`` seed of ``backward()``
runs on the main thread, outside the engine, and counts as forward).
"""

from __future__ import annotations

import gc
import json
import re
from bisect import bisect_right
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from ..errors import MeasurementError
from ._read import KernelRecord

__all__ = ["KernelRecord", "ChromeTrace", "TraceMeta", "DeviceInfo", "read_chrome", "parse_chrome", "KIND_OF_CAT"]

KIND_OF_CAT = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
HOST_CATS = frozenset({"cpu_op", "user_annotation"})
LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver"})
_US = 1e-6
_ENGINE = "autograd::engine::evaluate_function"


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """One entry of the trace's ``deviceProperties``."""

    id: int
    name: str
    compute_capability: str | None
    sms: int | None
    memory_bytes: int | None


@dataclass(frozen=True, slots=True)
class TraceMeta:
    """What a Chrome trace says about itself, and how its GPU events were linked to host ops."""

    path: str
    events: int
    host_ops: int
    launches: int
    devices: tuple[DeviceInfo, ...]
    versions: tuple[tuple[str, str], ...]  # (key, value): cupti_version, cuda_runtime_version, ...
    threads: tuple[tuple[int, int, str], ...]  # (pid, tid, name) of host threads
    rank: int | None
    world_size: int | None
    base_time_ns: int | None
    trace_name: str | None
    linked_by_external_id: int
    linked_by_launch_external_id: int
    linked_by_launch_enclosing: int
    unlinked: int


@dataclass(frozen=True, slots=True)
class ChromeTrace:
    """The GPU records of a trace (sorted by start) and its metadata."""

    kernels: tuple[KernelRecord, ...]
    meta: TraceMeta


def read_chrome(text: str, path: str) -> tuple[KernelRecord, ...]:
    """The GPU records (kernels, memcpys, memsets; by start time) of a torch.profiler Chrome trace."""
    return parse_chrome(text, path).kernels


def _num(value: Any) -> float | None:
    """A finite float of a JSON number, else None."""
    t = type(value)
    if t is float:
        return value if value - value == 0.0 else None  # NaN and infinities fail
    if t is int:
        return float(value)
    return None


_DIGITS = re.compile(r"-?\d+")


def _int(value: Any, default: int | None) -> int | None:
    """An int of a JSON number or of the first integer in a string ("stream 7"), else ``default``."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = _DIGITS.search(value)
        if m:
            return int(m.group())
    return default


def _key(value: Any) -> Any:
    """``value`` when it can be a dict key (an id from JSON), else None."""
    return None if isinstance(value, (list, dict)) else value


def _int_or(value: Any, default: int) -> int:
    """``_int`` with an int default."""
    out = _int(value, None)
    return default if out is None else out


def _freeze(value: Any) -> Any:
    """Lists made tuples, recursively (``Input Dims`` of a TensorList is a list of shapes)."""
    if type(value) is not list:
        return value
    for v in value:
        if type(v) is list:
            return tuple(map(_freeze, value))
    return tuple(value)


def _ints(value: Any) -> tuple[int, ...]:
    """A grid/block triple as a tuple of ints (empty when absent or malformed)."""
    if type(value) is not list:
        return ()
    for v in value:
        if type(v) is not int:
            return ()
    return tuple(value)


def _is_backward_node(name: str) -> bool:
    """An autograd engine frame (``autograd::engine::evaluate_function: ...``) or node (``AddmmBackward0``)."""
    return name.startswith(_ENGINE) or name.rstrip("0123456789").endswith("Backward")


class _Host:
    """The host ops of a trace (parallel lists, appended by ``add``), nested per thread by ``nest``."""

    __slots__ = ("names", "args", "starts", "ends", "threads", "cpu_op", "parent", "by_ext", "sorted_by_thread",
                 "_memo")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.args: list[dict[str, Any]] = []
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.threads: list[tuple[Any, Any]] = []
        self.cpu_op: list[bool] = []
        self.parent: list[int] = []
        self.by_ext: dict[Any, int] = {}
        self.sorted_by_thread: dict[tuple[Any, Any], tuple[list[float], list[int]]] = {}
        self._memo: dict[int, tuple[tuple[str, ...], bool]] = {}

    def add(
        self, name: str, args: dict[str, Any], ts: float, dur: float, thread: tuple[Any, Any], cpu_op: bool
    ) -> None:
        """Record one host op; by ``External id``, a cpu_op wins over a user_annotation, else the first one wins."""
        i = len(self.names)
        self.names.append(name)
        self.args.append(args)
        self.starts.append(ts)
        self.ends.append(ts + dur)
        self.threads.append(thread)
        self.cpu_op.append(cpu_op)
        ext = _key(args.get("External id"))
        if ext is not None:
            j = self.by_ext.get(ext)
            if j is None or (cpu_op and not self.cpu_op[j]):
                self.by_ext[ext] = i

    def nest(self) -> None:
        """Parent links by interval containment: one sort and one stack per thread."""
        starts, ends = self.starts, self.ends
        self.parent = parent = [-1] * len(starts)
        per_thread: dict[tuple[Any, Any], list[int]] = {}
        for i, key in enumerate(self.threads):
            per_thread.setdefault(key, []).append(i)
        neg_ends = [-x for x in ends]
        for key, idx in per_thread.items():
            idx.sort(key=neg_ends.__getitem__)  # stable: then by start, so outer before inner at equal starts
            idx.sort(key=starts.__getitem__)
            stack: list[int] = []
            for i in idx:
                t = starts[i]
                while stack and ends[stack[-1]] <= t:
                    stack.pop()
                if stack:
                    parent[i] = stack[-1]
                stack.append(i)
            self.sorted_by_thread[key] = ([starts[i] for i in idx], idx)

    def context(self, i: int) -> tuple[tuple[str, ...], bool]:
        """(names of the ops enclosing op ``i``, outer to inner; whether ``i`` or one of them is autograd's)."""
        memo, parent, names = self._memo, self.parent, self.names
        chain: list[int] = []
        j = i
        while j >= 0 and j not in memo:
            chain.append(j)
            j = parent[j]
        for k in reversed(chain):  # the outermost unknown first: its parent is a root or already known
            p = parent[k]
            if p < 0:
                memo[k] = ((), _is_backward_node(names[k]))
            else:
                above, bw = memo[p]
                memo[k] = (above + (names[p],), bw or _is_backward_node(names[k]))
        return memo[i]

    def enclosing(self, thread: tuple[Any, Any], t: float) -> int:
        """The innermost op on ``thread`` whose [start, end] holds ``t``, or -1."""
        entry = self.sorted_by_thread.get(thread)
        if entry is None:
            return -1
        starts, idx = entry
        k = bisect_right(starts, t) - 1
        if k < 0:
            return -1
        j = idx[k]  # the last op to start at or before t: t is in it or in one of its ancestors
        while j >= 0 and self.ends[j] < t:
            j = self.parent[j]
        return j


def _events(text: str, path: str) -> tuple[list[Any], dict[str, Any]]:
    """The event list and the top-level object of a trace's JSON text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MeasurementError(
            f"profile {path!r} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); truncated?"
        ) from None
    except RecursionError:
        raise MeasurementError(f"profile {path!r} nests JSON too deeply to be a Chrome trace") from None
    if isinstance(data, list):
        return data, {}
    if isinstance(data, dict):
        events = data.get("traceEvents")
        if isinstance(events, list):
            return events, data
        raise MeasurementError(
            f"profile {path!r}: \"traceEvents\" must be a list of events, got {type(events).__name__}"
        )
    raise MeasurementError(f"profile {path!r} is JSON {type(data).__name__}, not a Chrome trace (object or list)")


def _devices(top: dict[str, Any]) -> tuple[DeviceInfo, ...]:
    """``deviceProperties`` as DeviceInfo records."""
    out: list[DeviceInfo] = []
    props = top.get("deviceProperties")
    for d in props if isinstance(props, list) else ():
        if not isinstance(d, dict):
            continue
        major, minor = d.get("computeMajor"), d.get("computeMinor")
        out.append(DeviceInfo(
            id=_int_or(d.get("id"), len(out)),
            name=str(d.get("name", "")),
            compute_capability=f"{major}.{minor}" if major is not None and minor is not None else None,
            sms=_int(d.get("numSms"), None),
            memory_bytes=_int(d.get("totalGlobalMem"), None),
        ))
    return tuple(out)


_Launches = dict[Any, tuple[tuple[Any, Any], float, Any]]  # correlation -> ((pid, tid), ts, External id)
_GpuEvents = list[tuple[int, dict[str, Any], str]]  # (index in traceEvents, event, kind)


def _scan(events: list[Any]) -> tuple[_Host, _Launches, _GpuEvents, dict[tuple[Any, Any], str]]:
    """One pass over the events: host ops, launch calls by correlation, GPU events, host thread names."""
    host = _Host()
    add = host.add
    launches: _Launches = {}
    gpu: _GpuEvents = []
    thread_names: dict[tuple[Any, Any], str] = {}
    kind_of = KIND_OF_CAT.get
    for n, e in enumerate(events):
        if type(e) is not dict:
            continue
        ph = e.get("ph")
        if ph != "X":
            if ph == "M" and e.get("name") == "thread_name" and type(e.get("args")) is dict:
                thread_names[(e.get("pid"), e.get("tid"))] = str(e["args"].get("name", ""))
            continue
        cat = e.get("cat")
        if type(cat) is not str:
            continue
        kind = kind_of(cat)
        if kind is not None:
            gpu.append((n, e, kind))
        elif cat in HOST_CATS:
            ts, dur = _num(e.get("ts")), _num(e.get("dur"))
            if ts is None or dur is None or dur < 0:
                continue  # NB: a host op without a time cannot enclose anything; skipped
            args = e.get("args")
            add(str(e.get("name", "")), args if type(args) is dict else {}, ts, dur, (e.get("pid"), e.get("tid")),
                cat == "cpu_op")
        elif cat in LAUNCH_CATS:
            args = e.get("args")
            ts = _num(e.get("ts"))
            if type(args) is dict and ts is not None and _key(args.get("correlation")) is not None:
                launches[args["correlation"]] = ((e.get("pid"), e.get("tid")), ts, args.get("External id"))
    host.nest()
    return host, launches, gpu, thread_names


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused, then restored to its previous state.

    NB: building a trace's millions of small dicts and tuples triggers full collections that each walk the whole
    trace; pausing makes ``json.loads`` of a million events about 3.5x faster (measured: 17 s -> 5 s).
    Nothing built here forms a cycle, so nothing is left for the collector afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_chrome(text: str, path: str) -> ChromeTrace:
    """Kernel records and trace metadata of a torch.profiler Chrome trace; no GPU kernel is a MeasurementError."""
    with _gc_paused():
        return _parse(text, path)


def _parse(text: str, path: str) -> ChromeTrace:
    """``parse_chrome`` with the collector paused."""
    events, top = _events(text, path)
    host, launches, gpu, thread_names = _scan(events)
    if not any(kind == "kernel" for _, _, kind in gpu):
        raise MeasurementError(
            f"profile {path!r} has no GPU kernels (no \"cat\": \"kernel\" events among {len(events)}): "
            "recorded without CUDA activity? Use torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True)"
        )
    autograd_threads = {key for key, name in thread_names.items() if "pt_autograd" in name}
    cache: dict[int, tuple[Any, ...]] = {}
    records: list[KernelRecord] = []
    counts: dict[str | None, int] = {"external_id": 0, "launch_external_id": 0, "launch_enclosing": 0, None: 0}
    by_ext, host_threads = host.by_ext, host.threads
    for n, e, kind in gpu:
        ts, dur = _num(e.get("ts")), _num(e.get("dur"))
        if ts is None or dur is None or dur < 0:
            raise MeasurementError(
                f"profile {path!r}: GPU event #{n} ({e.get('name')!r}) needs numeric \"ts\" and \"dur\" >= 0, "
                f"got ts={e.get('ts')!r} dur={e.get('dur')!r}"
            )
        args = e.get("args")
        if type(args) is not dict:
            args = {}
        corr = _key(args.get("correlation"))
        op = by_ext.get(_key(args.get("External id")), -1)
        link: str | None = "external_id" if op >= 0 else None
        launch = launches.get(corr) if corr is not None else None
        thread: tuple[Any, Any] | None = None
        if launch is not None:
            thread = launch[0]
            if op < 0:
                op = by_ext.get(_key(launch[2]), -1)
                link = "launch_external_id" if op >= 0 else None
            if op < 0:
                op = host.enclosing(launch[0], launch[1])
                link = "launch_enclosing" if op >= 0 else None
        counts[link] += 1
        if op >= 0:
            thread = host_threads[op]
            info = cache.get(op)
            if info is None:
                info = cache[op] = _op_info(host, op, thread in autograd_threads)
        else:
            info = (None, None, (), (), (), (), (), thread in autograd_threads)
        op_name, op_id, shapes, dtypes, concrete, strides, parents, backward = info
        stream, device, tid = args.get("stream"), args.get("device"), thread[1] if thread is not None else None
        records.append(KernelRecord(
            str(e.get("name", "")), ts * _US, dur * _US, kind,
            stream if type(stream) is int else _int_or(stream, _int_or(e.get("tid"), -1)),
            device if type(device) is int else _int_or(device, _int_or(e.get("pid"), -1)),
            corr if type(corr) is int else _int(corr, None),
            op_name, op_id, shapes, dtypes, concrete, strides, parents, backward, link,
            tid if type(tid) is int else _int(tid, None),
            _ints(args.get("grid")),
            _ints(args.get("block")),
            _int(args.get("bytes"), None) if kind != "kernel" else None,
        ))
    records.sort(key=_start)
    dist = top.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    meta = TraceMeta(
        path=path,
        events=len(events),
        host_ops=len(host.names),
        launches=len(launches),
        devices=_devices(top),
        versions=tuple((k, str(top[k])) for k in ("cupti_version", "cuda_runtime_version", "cuda_driver_version")
                       if k in top),
        threads=tuple(sorted((_int_or(k[0], -1), _int_or(k[1], -1), v) for k, v in thread_names.items())),
        rank=_int(dist.get("rank"), None),
        world_size=_int(dist.get("world_size"), None),
        base_time_ns=_int(top.get("baseTimeNanoseconds"), None),
        trace_name=str(top["traceName"]) if "traceName" in top else None,
        linked_by_external_id=counts["external_id"],
        linked_by_launch_external_id=counts["launch_external_id"],
        linked_by_launch_enclosing=counts["launch_enclosing"],
        unlinked=counts[None],
    )
    return ChromeTrace(tuple(records), meta)


def _start(r: KernelRecord) -> float:
    return r.start


def _strs(value: Any) -> tuple[str, ...] | None:
    """A list of JSON scalars as strings ("" for null), or None when not a list."""
    if type(value) is not list:
        return None
    return tuple(v if type(v) is str else "" if v is None else str(v) for v in value)


def _op_info(host: _Host, i: int, autograd_thread: bool) -> tuple[Any, ...]:
    """(op, op_id, shapes, dtypes, concrete, strides, parents, backward) of host op ``i``: KernelRecord's order."""
    args = host.args[i]
    shapes = _freeze(args.get("Input Dims"))
    shapes = shapes if type(shapes) is tuple else ()
    concrete = _strs(args.get("Concrete Inputs"))
    strides = _freeze(args.get("Input Strides"))
    parents, backward = host.context(i)
    return (
        host.names[i], _int(args.get("External id"), None), shapes, _strs(args.get("Input type")) or (),
        ("",) * len(shapes) if concrete is None else concrete, strides if type(strides) is tuple else (),
        parents, backward or autograd_thread,
    )
