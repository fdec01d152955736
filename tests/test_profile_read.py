"""The profile reading layer: files to text, Chrome traces and ncu CSV to kernel records, timeline sums, by hand."""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solkit.errors import ArgumentTypeError, MeasurementError
from solkit.profile._read import KernelRecord, detect_format, read_text
from solkit.profile.chrome import parse_chrome, read_chrome
from solkit.profile.ncu import parse_ncu, parse_nvtx, read_ncu
from solkit.profile.timeline import (
    busy_intervals, busy_seconds, idle_seconds, kernel_seconds, launch_gaps, span_seconds,
)

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "data" / "profiles"
MANIFEST = json.loads((PROFILES / "manifest.json").read_text())
PROGRAMS = ["bert_train", "resnet50_infer", "resnet50_train", "llama_prefill", "llama_decode"]
US = 1e-6
T0 = 5_190_000_000_000.0  # us: an absolute clock like the fixtures' (ts ~ 5.19e12 us)
NS = 2e-9  # s: absolute starts ~5.19e6 s are floats with a step of ~0.9 ns, about the trace's own 1 ns resolution


# ----------------------------------------------------------------------------------------------- synthetic trace

def _op(name, ts, dur, ext, tid=100, **args):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": T0 + ts, "dur": dur,
            "args": {"External id": ext, **args}}


def _launch(ts, corr, ext=None, tid=100, cat="cuda_runtime"):
    args = {"correlation": corr, "cbid": 211}
    if ext is not None:
        args["External id"] = ext
    return {"ph": "X", "cat": cat, "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": T0 + ts, "dur": 1.0,
            "args": args}


def _gpu(name, ts, dur, stream, corr, ext=None, cat="kernel", **extra):
    args = {"device": 0, "stream": stream, "correlation": corr, "grid": [8, 12, 1], "block": [128, 1, 1], **extra}
    if ext is not None:
        args["External id"] = ext
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": T0 + ts, "dur": dur, "args": args}


def _trace() -> dict:
    """Kernels A [0,10) us stream 7, B [5,15) stream 8, C [20,25) stream 7, each linked a different way; plus extras.

    Host thread 100 (python): aten::linear [-30, -10) > aten::addmm [-28, -12) (ext 2) launches A (the kernel's own
    External id 2); aten::gelu [-9, -4) (ext 3) launches B (B has no External id; its launch call has 3);
    aten::layer_norm [-3, 19) (ext 4) > aten::native_layer_norm [-2, 18) (ext 5) > aten::empty [-1, 0) (ext 9);
    C's launch at 17 and C have no External id: time containment finds native_layer_norm. Thread 200 (pt_autograd_0): AddmmBackward0 under the
    engine launches the memset M [30, 31). A gpu_user_annotation and flow events are skipped.
    """
    dims = [[768], [4096, 768], [768, 3072], [], []]
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 100, "args": {"name": "thread 100 (python3)"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 200, "args": {"name": "thread 200 (pt_autograd_0)"}},
        _op("aten::linear", -30, 20, 1, **{"Input Dims": [[8, 512, 768], [3072, 768], [3072]],
                                           "Input type": ["float", "float", "float"]}),
        _op("aten::addmm", -28, 16, 2, **{"Input Dims": dims, "Input type": ["c10::BFloat16"] * 3 + ["Scalar"] * 2,
                                          "Input Strides": [[1], [768, 1], [1, 768], [], []],
                                          "Concrete Inputs": ["", "", "", "1", "1"]}),
        _launch(-20, corr=11, ext=2),
        _op("aten::gelu", -9, 5, 3, **{"Input Dims": [[4096, 3072]], "Input type": ["c10::BFloat16"]}),
        _launch(-7, corr=12, ext=3, cat="cuda_driver"),
        _op("aten::layer_norm", -3, 22, 4),
        _op("aten::native_layer_norm", -2, 20, 5, **{"Input Dims": [[4096, 768], [], [768], [768], []]}),
        _op("aten::empty", -1, 1, 9),  # the last op to start before the launch, over by then: look one level up
        _launch(17, corr=13),
        _op("autograd::engine::evaluate_function: AddmmBackward0", 21, 9, 6, tid=200),
        _op("AddmmBackward0", 22, 7, 7, tid=200),
        _op("aten::zero_", 23, 5, 8, tid=200),
        _launch(24, corr=14, ext=8, tid=200),
        _gpu("A_gemm", 0, 10, 7, corr=11, ext=2),
        _gpu("B_gelu", 5, 10, 8, corr=12),
        _gpu("C_layernorm", 20, 5, 7, corr=13),
        _gpu("Memset (Device)", 30, 1, 7, corr=14, ext=8, cat="gpu_memset", bytes=4096),
        {"ph": "X", "cat": "gpu_user_annotation", "name": "Optimizer.step#AdamW.step", "pid": 0, "tid": 7,
         "ts": T0, "dur": 25.0, "args": {"External id": 99}},
        {"ph": "s", "cat": "ac2g", "id": 11, "pid": 1, "tid": 100, "ts": T0 - 20},
        {"ph": "f", "cat": "ac2g", "id": 11, "pid": 0, "tid": 7, "ts": T0, "bp": "e"},
    ]
    random.Random(0).shuffle(events)  # the reader must not depend on the order of events
    return {"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"id": 0, "name": "NVIDIA H200",
            "computeMajor": 9, "computeMinor": 0, "numSms": 132, "totalGlobalMem": 150109880320}],
            "distributedInfo": {"rank": 3, "world_size": 8}}


@pytest.fixture(scope="module")
def synthetic() -> dict[str, KernelRecord]:
    """The synthetic trace's records by kernel name."""
    return {r.name: r for r in read_chrome(json.dumps(_trace()), "synthetic.json")}


def test_synthetic_kernels_are_read_in_time_order():
    """Four GPU records (three kernels and a memset), sorted by start, the user annotation skipped."""
    records = read_chrome(json.dumps(_trace()), "t.json")
    assert [r.name for r in records] == ["A_gemm", "B_gelu", "C_layernorm", "Memset (Device)"]
    assert [r.kind for r in records] == ["kernel", "kernel", "kernel", "memset"]


def test_synthetic_times_and_streams(synthetic):
    """start and seconds are the trace's ts and dur in seconds; stream, device, grid, block from the args."""
    a, b = synthetic["A_gemm"], synthetic["B_gelu"]
    assert a.start == pytest.approx(T0 * US, abs=1e-9) and a.seconds == pytest.approx(10 * US)
    assert b.start - a.start == pytest.approx(5 * US, abs=1e-9)  # B starts 5 us after A
    assert (a.stream, b.stream, a.device) == (7, 8, 0)
    assert a.grid == (8, 12, 1) and a.block == (128, 1, 1)
    assert a.correlation == 11 and a.end == pytest.approx(a.start + 10 * US)


def test_link_by_external_id_gives_the_innermost_op_and_its_parents(synthetic):
    """A's External id 2 is aten::addmm inside aten::linear: op addmm, parents (linear,), addmm's bf16 args."""
    a = synthetic["A_gemm"]
    assert (a.op, a.op_id, a.link) == ("aten::addmm", 2, "external_id")
    assert a.parents == ("aten::linear",)
    assert a.shapes == ((768,), (4096, 768), (768, 3072), (), ())
    assert a.dtypes == ("c10::BFloat16",) * 3 + ("Scalar", "Scalar")
    assert a.concrete == ("", "", "", "1", "1")
    assert a.strides == ((1,), (768, 1), (1, 768), (), ())
    assert a.backward is False and a.thread == 100


def test_link_falls_back_to_the_launch_calls_external_id(synthetic):
    """B has no External id: its correlation 12 finds the cuLaunchKernel call, whose External id 3 is aten::gelu."""
    b = synthetic["B_gelu"]
    assert (b.op, b.op_id, b.link) == ("aten::gelu", 3, "launch_external_id")
    assert b.shapes == ((4096, 3072),) and b.parents == ()
    assert b.concrete == ("",)  # no "Concrete Inputs": "" per input


def test_link_falls_back_to_the_op_enclosing_the_launch(synthetic):
    """C's launch at 17 us has no External id: the innermost op around it is native_layer_norm in layer_norm."""
    c = synthetic["C_layernorm"]
    assert (c.op, c.op_id, c.link) == ("aten::native_layer_norm", 5, "launch_enclosing")
    assert c.parents == ("aten::layer_norm",)
    assert c.shapes == ((4096, 768), (), (768,), (768,), ())
    assert c.dtypes == ()  # no "Input type" recorded


def test_memset_is_a_record_with_its_op_and_bytes(synthetic):
    """The memset links to aten::zero_ under the autograd engine: kind memset, backward, copy_bytes 4096."""
    m = synthetic["Memset (Device)"]
    assert (m.kind, m.op, m.copy_bytes, m.backward, m.thread) == ("memset", "aten::zero_", 4096, True, 200)
    assert m.parents == ("autograd::engine::evaluate_function: AddmmBackward0", "AddmmBackward0")


def test_backward_is_decided_by_the_engine_frame_or_the_autograd_thread():
    """An op under evaluate_function on the main thread is backward; so is any op on a pt_autograd thread."""
    trace = _trace()
    for e in trace["traceEvents"]:  # move the backward ops to the main thread: the engine frame still marks them
        if e.get("tid") == 200 and e.get("ph") == "X":
            e["tid"] = 100
    assert {r.name: r.backward for r in read_chrome(json.dumps(trace), "t")}["Memset (Device)"] is True
    trace = _trace()
    for e in trace["traceEvents"]:  # on the main thread without the engine frame: the node AddmmBackward0 marks it
        if e.get("tid") == 200 and e.get("ph") == "X":
            e["tid"] = 100
        if e.get("name", "").startswith("autograd::engine"):
            e["name"] = "some_function"
    assert {r.name: r.backward for r in read_chrome(json.dumps(trace), "t")}["Memset (Device)"] is True
    trace = _trace()
    for e in trace["traceEvents"]:  # drop the engine frames: the thread's name still marks them
        if e.get("tid") == 200 and e.get("name", "").endswith("Backward0"):
            e["name"] = "some_function"
    assert {r.name: r.backward for r in read_chrome(json.dumps(trace), "t")}["Memset (Device)"] is True


def test_unlinked_kernel_has_no_op():
    """A kernel whose correlation matches no launch and with no External id has op None and link None."""
    trace = {"traceEvents": [_gpu("lonely", 0, 2, 7, corr=999)]}
    (r,) = read_chrome(json.dumps(trace), "t")
    assert (r.op, r.op_id, r.link, r.parents, r.shapes, r.backward) == (None, None, None, (), (), False)


def test_tensor_list_dims_are_nested_tuples():
    """aten::cat's Input Dims [[[1,2,64,16],[1,2,1,16]], []] become nested tuples (hashable)."""
    trace = {"traceEvents": [
        _op("aten::cat", 0, 5, 1, **{"Input Dims": [[[1, 2, 64, 16], [1, 2, 1, 16]], []],
                                     "Input type": ["TensorList", "Scalar"]}),
        _gpu("cat_kernel", 6, 1, 7, corr=1, ext=1),
    ]}
    (r,) = read_chrome(json.dumps(trace), "t")
    assert r.shapes == (((1, 2, 64, 16), (1, 2, 1, 16)), ())
    hash(r)


def test_trace_metadata():
    """deviceProperties, distributedInfo and the link counts come back in the metadata."""
    meta = parse_chrome(json.dumps(_trace()), "t").meta
    assert meta.devices[0].name == "NVIDIA H200" and meta.devices[0].sms == 132
    assert meta.devices[0].compute_capability == "9.0"
    assert (meta.rank, meta.world_size) == (3, 8)
    assert (meta.linked_by_external_id, meta.linked_by_launch_external_id, meta.linked_by_launch_enclosing,
            meta.unlinked) == (2, 1, 1, 0)  # A and the memset; B; C
    assert (1, 200, "thread 200 (pt_autograd_0)") in meta.threads


def test_ops_starting_together_nest_longest_first():
    """aten::linear and aten::addmm start at the same ts: the longer one encloses; a zero-length op encloses nothing."""
    trace = {"traceEvents": [
        _op("aten::addmm", 0, 5, 2), _op("aten::linear", 0, 8, 1), _op("aten::t", 0, 0, 3),
        _launch(6, corr=1), _gpu("k", 9, 1, 7, corr=1),  # launched at 6: inside linear, after addmm
        _launch(1, corr=2), _gpu("k2", 10, 1, 7, corr=2),  # launched at 1: inside addmm (aten::t ended at 0)
    ]}
    k, k2 = read_chrome(json.dumps(trace), "t")
    assert (k.op, k.parents, k.link) == ("aten::linear", (), "launch_enclosing")
    assert (k2.op, k2.parents) == ("aten::addmm", ("aten::linear",))


def test_external_id_prefers_the_cpu_op_over_an_annotation():
    """A cpu_op and a user_annotation sharing an External id: the kernel maps to the cpu_op, whichever comes first."""
    annotation = {**_op("Optimizer.step#AdamW.step", 0, 9, 5), "cat": "user_annotation"}
    for events in ([_op("aten::_fused_adamw_", 1, 5, 5), annotation], [annotation, _op("aten::_fused_adamw_", 1, 5, 5)]):
        trace = {"traceEvents": [*events, _gpu("adam", 7, 1, 7, corr=1, ext=5)]}
        assert read_chrome(json.dumps(trace), "t")[0].op == "aten::_fused_adamw_"


def test_garbage_collector_state_is_restored():
    """Parsing pauses the cyclic collector and restores it, also when the trace is refused."""
    import gc

    assert gc.isenabled()
    read_chrome(json.dumps(_trace()), "t")
    with pytest.raises(MeasurementError):
        read_chrome('{"traceEvents": []}', "t")
    assert gc.isenabled()


def test_a_bare_list_of_events_is_a_trace():
    """A JSON list of events (no top-level object) reads the same."""
    records = read_chrome(json.dumps(_trace()["traceEvents"]), "t")
    assert len(records) == 4


def test_kernel_cat_capitalized_is_accepted():
    """cat "Kernel" (older Kineto) is a kernel too."""
    trace = {"traceEvents": [_gpu("k", 0, 3, 7, corr=1, cat="Kernel")]}
    assert read_chrome(json.dumps(trace), "t")[0].kind == "kernel"


# ---------------------------------------------------------------------------------------------------- timeline

def test_timeline_by_hand(synthetic):
    """A [0,10) s7, B [5,15) s8, C [20,25) s7: kernel 25 us, span 25, busy 20, idle 5, one gap of 5 us at 15."""
    recs = list(synthetic.values())
    assert kernel_seconds(recs) == pytest.approx(25 * US)  # 10 + 10 + 5; the memset is not a kernel
    assert span_seconds(recs) == pytest.approx(25 * US, abs=NS)  # 0 -> 25
    assert busy_seconds(recs) == pytest.approx(20 * US, abs=NS)  # [0,15) u [20,25) = 15 + 5
    assert idle_seconds(recs) == pytest.approx(5 * US, abs=NS)  # 25 - 20
    gaps = launch_gaps(recs)
    assert gaps.count == 1
    assert gaps.total == pytest.approx(5 * US, abs=NS) and gaps.largest == pytest.approx(5 * US, abs=NS)
    assert gaps.gaps[0].start == pytest.approx((T0 + 15) * US, abs=1e-9)


def test_timeline_with_every_kind(synthetic):
    """kinds=None counts the memset [30,31) too: kernel 26 us, span 31, busy 21, idle 10, gaps 5 and 5."""
    recs = list(synthetic.values())
    assert kernel_seconds(recs, None) == pytest.approx(26 * US)  # 25 + 1
    assert span_seconds(recs, None) == pytest.approx(31 * US, abs=NS)
    assert busy_seconds(recs, None) == pytest.approx(21 * US, abs=NS)  # 15 + 5 + 1
    assert idle_seconds(recs, None) == pytest.approx(10 * US, abs=NS)  # 31 - 21
    assert [g.seconds for g in launch_gaps(recs, None).gaps] == pytest.approx([5 * US, 5 * US], abs=NS)


def test_timeline_edge_cases():
    """No records: all zeros; touching intervals leave no gap; a nested interval adds no busy time."""
    assert (kernel_seconds([]), span_seconds([]), busy_seconds([]), idle_seconds([])) == (0.0, 0.0, 0.0, 0.0)
    assert launch_gaps([]).count == 0 and launch_gaps([]).largest == 0.0
    touching = [KernelRecord("a", 0.0, 1.0), KernelRecord("b", 1.0, 2.0)]
    assert launch_gaps(touching).count == 0 and busy_seconds(touching) == 3.0  # [0,1) + [1,3)
    assert busy_intervals(touching).tolist() == [[0.0, 3.0]]  # merged: one busy interval
    nested = [KernelRecord("a", 0.0, 10.0, stream=1), KernelRecord("b", 2.0, 3.0, stream=2)]
    assert busy_seconds(nested) == 10.0 and kernel_seconds(nested) == 13.0 and idle_seconds(nested) == 0.0
    assert busy_intervals(nested).tolist() == [[0.0, 10.0]]


def test_gaps_are_sorted_largest_first():
    """Gaps 3 and 1 and 2 (in time order) come back 3, 2, 1; min_seconds drops the small ones."""
    recs = [KernelRecord(str(i), s, 1.0) for i, s in enumerate([0.0, 4.0, 6.0, 9.0])]  # ends 1, 5, 7, 10
    gaps = launch_gaps(recs)
    assert [g.seconds for g in gaps.gaps] == [3.0, 2.0, 1.0] and [g.start for g in gaps.gaps] == [1.0, 7.0, 5.0]
    assert gaps.total == 6.0 and idle_seconds(recs) == 6.0  # span 10 - busy 4
    assert launch_gaps(recs, min_seconds=1.5).count == 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12), st.integers(0, 3)), min_size=1, max_size=25))
def test_busy_time_is_the_union_on_a_grid(intervals):
    """Busy time equals the count of occupied unit cells; idle = span - busy = the sum of the gaps."""
    recs = [KernelRecord("k", float(s), float(d), stream=q) for s, d, q in intervals]
    cells = {t for s, d, _ in intervals for t in range(s, s + d)}
    assert busy_seconds(recs) == len(cells)
    assert busy_seconds(recs) <= kernel_seconds(recs)
    assert idle_seconds(recs) == pytest.approx(launch_gaps(recs).total)
    assert idle_seconds(recs) == span_seconds(recs) - busy_seconds(recs)


# ------------------------------------------------------------------------------------------------- reading files

def test_gzip_detected_from_content_not_extension(tmp_path):
    """A gzip file named .json and a plain file named .gz read the same text."""
    text = json.dumps(_trace())
    liar_gz = tmp_path / "trace.json"
    liar_gz.write_bytes(gzip.compress(text.encode()))
    liar_plain = tmp_path / "trace.json.gz"
    liar_plain.write_text(text)
    assert read_text(liar_gz) == (text, str(liar_gz))
    assert read_text(str(liar_plain)) == (text, str(liar_plain))
    assert detect_format(read_text(liar_gz)[0]) == "chrome"


def test_size_caps_refuse_before_reading_it_all(tmp_path):
    """A gzip over the file cap, one that inflates past the text cap, a plain file over the text cap: refused."""
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b" " * 100_000))  # ~100 B on disk, 100 kB inside
    with pytest.raises(MeasurementError, match="decompresses to more than") as info:
        read_text(bomb, max_text_bytes=10_000)
    assert str(bomb) in str(info.value)
    with pytest.raises(MeasurementError, match="over the"):
        read_text(bomb, max_file_bytes=10)
    plain = tmp_path / "plain.json"
    plain.write_text("[" + " " * 5000 + "]")
    with pytest.raises(MeasurementError, match="over the"):
        read_text(plain, max_text_bytes=1000)


@pytest.mark.parametrize("content, says", [
    (b"", "is empty"),
    (b"  \n\t ", "is empty"),
    (gzip.compress(b"", mtime=0), "is empty"),
    (gzip.compress(b'{"traceEvents": []}', mtime=0)[:-12], "not a readable gzip"),  # truncated gzip
    (b"\xff\xfe\x00garbage", "not UTF-8"),
])
def test_unreadable_files_name_the_path(tmp_path, content, says):
    """Empty, truncated-gzip and binary files are MeasurementErrors that name the path."""
    path = tmp_path / "bad.bin"
    path.write_bytes(content)
    with pytest.raises(MeasurementError, match=says) as info:
        read_text(path)
    assert str(path) in str(info.value)


def test_missing_path_and_directory(tmp_path):
    """A missing file and a directory are MeasurementErrors (never a raw OSError) naming the path and the reason."""
    missing = tmp_path / "nope.json"
    with pytest.raises(MeasurementError) as info:
        read_text(missing)
    assert str(missing) in str(info.value) and "No such file" in str(info.value)
    with pytest.raises(MeasurementError) as info:
        read_text(tmp_path)
    assert str(tmp_path) in str(info.value) and "directory" in str(info.value).lower()


@pytest.mark.parametrize("bad", [123, None, b"trace.json", ["a.json"], True])
def test_wrong_path_types(bad):
    """A path that is not a str or a str PathLike is an ArgumentTypeError."""
    with pytest.raises(ArgumentTypeError, match="path must be"):
        read_text(bad)


def test_empty_path_string():
    """An empty path string is refused as a value."""
    with pytest.raises(MeasurementError, match="empty string"):
        read_text("")


@pytest.mark.parametrize("text, says", [
    ("hello world, not a profile", "neither a torch.profiler Chrome trace"),
    ('"a","b"\n"","byte"\n', "neither"),  # a CSV without ID / Kernel Name
    ('{"schemaVersion": 1, "events": []}', "without \"traceEvents\""),
])
def test_detect_format_refuses_other_content(text, says):
    """Unknown content is refused naming the path and quoting what was seen (first 80 chars)."""
    with pytest.raises(MeasurementError, match=says) as info:
        detect_format(text, "x/y.txt")
    assert "'x/y.txt'" in str(info.value) and repr(text[:80]) in str(info.value)


def test_detect_format_skips_ncu_messages():
    """ncu's own ==PROF== lines before the header do not hide the CSV."""
    text = '==PROF== Connected to process 1\n"ID","Kernel Name","gpu__time_duration.sum"\n'
    assert detect_format(text) == "ncu"
    assert detect_format("  \n[{}]") == "chrome"


@pytest.mark.parametrize("text, says", [
    ('{"traceEvents": [{"ph": "X", "cat": "kernel"', "not valid JSON"),  # truncated
    ('{"traceEvents": {}}', "must be a list"),
    ('"a string"', "not a Chrome trace"),
    ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}', "no GPU kernels"),
    ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 2}]}', "numeric"),
    ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -2}]}', "numeric"),
])
def test_malformed_traces_name_the_path(text, says):
    """Truncated JSON, a wrong shape, no kernels, a kernel without times: MeasurementErrors naming the path."""
    with pytest.raises(MeasurementError, match=says) as info:
        read_chrome(text, "run/trace.json")
    assert "run/trace.json" in str(info.value)


def test_many_events_parse_in_linear_time():
    """40,000 ops, each found by time containment, parse in seconds (an O(n^2) search would take minutes)."""
    n = 20_000
    events = []
    for i in range(n):
        t = 10.0 * i
        events += [_op("aten::outer", t, 9, 2 * i), _op("aten::inner", t + 1, 7, 2 * i + 1),
                   _launch(t + 2, corr=i), _gpu("k", t + 5, 4, 7, corr=i)]
    start = time.perf_counter()
    records = read_chrome(json.dumps({"traceEvents": events}), "big")
    assert time.perf_counter() - start < 20
    assert len(records) == n and all(r.op == "aten::inner" and r.parents == ("aten::outer",) for r in records)


# ---------------------------------------------------------------------------------------------------- ncu CSV

NCU_HEADER = ('"ID","Process Name","thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",'
              '"Kernel Name","Stream","Device","Block Size","Grid Size",'
              '"dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum"\n')
NVTX_CELL = ('"7  ""<default domain>:outer:none:none:none:none:none:none""  '
             '""<default domain>:mm:v2:none:none:none:none:none:none"" "')


def _ncu(units: str, *rows: str) -> str:
    return "==PROF== Connected\n" + NCU_HEADER + units + "".join(rows) + "==PROF== Disconnected\n"


def test_ncu_units_are_converted_exactly():
    """usecond and Kbyte/Mbyte: 1,234.5 us = 1.2345e-3 s; 2.5 Kbyte = 2,500 B; 1,024 Mbyte = 1,024,000,000 B."""
    text = _ncu(
        '"","","","","","","","","Kbyte","Mbyte","usecond"\n',
        f'"0","python3",{NVTX_CELL},"gemm","7","0","(384, 1, 1)","(2, 66, 1)","2.5","1,024","1,234.5"\n',
        '"1","python3","","add","13","1","(128, 1, 1)","(65536, 1, 1)","0","0.001","0.5"\n',
    )
    report = parse_ncu(text, "ops.csv")
    a, b = report.kernels
    assert a.seconds == 1.2345e-3 and b.seconds == 0.5e-6
    assert (a.bytes_read, a.bytes_written, a.measured_bytes) == (2_500, 1_024_000_000, 1_024_002_500)
    assert (b.bytes_read, b.bytes_written, b.measured_bytes) == (0, 1_000, 1_000)  # 0.001 Mbyte = 1,000 B
    assert (a.start, b.start) == (0.0, 1.2345e-3)  # ncu serializes: b starts when a ends
    assert a.nvtx == ("outer", "mm:v2") and b.nvtx == ()
    assert (a.stream, b.stream, b.device, a.grid, a.block) == (7, 13, 1, (2, 66, 1), (384, 1, 1))
    assert (a.op, a.kind, a.correlation) == (None, "kernel", None)
    assert (report.meta.time_unit, report.meta.read_unit, report.meta.processes) == ("usecond", "Kbyte", ("python3",))


@pytest.mark.parametrize("time_unit, value, seconds", [
    ("nsecond", "178,208", 178_208e-9), ("ns", "11,776", 11_776e-9), ("msecond", "1.5", 1.5e-3), ("second", "2", 2.0),
])
def test_ncu_time_units(time_unit, value, seconds):
    """Each time unit ncu prints is scaled to seconds."""
    text = _ncu(f'"","","","","","","","","byte","byte","{time_unit}"\n',
                f'"0","p","","k","7","0","","","1","2","{value}"\n')
    assert read_ncu(text, "t.csv")[0].seconds == pytest.approx(seconds, rel=1e-15)


@pytest.mark.parametrize("text, says", [
    ('"ID","Kernel Name"\n"",""\n"0","k"\n', "gpu__time_duration.sum"),  # no duration column
    (NCU_HEADER + '"0","p","","k","7","0","","","1","2","3"\n', "no units row"),
    (_ncu('"","","","","","","","","byte","byte","fortnight"\n', '"0","p","","k","7","0","","","1","2","3"\n'),
     "unit 'fortnight'"),
    (_ncu('"","","","","","","","","byte","byte","ns"\n', '"0","p","","k","7"\n'), "cells"),  # truncated row
    (_ncu('"","","","","","","","","byte","byte","ns"\n', '"0","p","","k","7","0","","","1","2","soon"\n'),
     "expected a number"),
    (_ncu('"","","","","","","","","byte","byte","ns"\n'), "no kernel rows"),
])
def test_malformed_ncu_names_the_path(text, says):
    """A missing column, no units row, an unknown unit, a short row, a non-number, no rows: errors naming the path."""
    with pytest.raises(MeasurementError, match=says) as info:
        read_ncu(text, "prof/ops.csv")
    assert "prof/ops.csv" in str(info.value)


def test_parse_nvtx_keeps_colons_in_range_names():
    """The range name is what lies between the domain and the six trailing fields."""
    cell = '561  "<default domain>:sk_measure:none:none:none:none:none:none"  "dom:a:b:none:none:none:none:none:none" '
    assert parse_nvtx(cell) == ("sk_measure", "a:b")


# --------------------------------------------------------------------------------------------- real H200 fixtures

@pytest.fixture(scope="module")
def fixtures() -> dict:
    """Each program's parsed trace."""
    return {p: parse_chrome(*read_text(PROFILES / f"{p}.json.gz")) for p in PROGRAMS}


@pytest.mark.parametrize("program", PROGRAMS)
def test_fixture_kernels_match_the_manifest(fixtures, program):
    """The kernel count and the sum of their durations equal the recording script's (cat == "kernel", sum of dur)."""
    entry = MANIFEST["programs"][program]
    records = fixtures[program].kernels
    kernels = [r for r in records if r.kind == "kernel"]
    assert len(kernels) == entry["kernel_events"]
    assert kernel_seconds(records) / US == pytest.approx(entry["kernel_dur_us"], abs=5e-4)  # rounded to 1 ns
    stats = entry["trace_stats"]
    assert sum(r.kind == "memset" for r in records) == stats["memset_events"]
    assert sum(r.kind == "memcpy" for r in records) == stats["memcpy_events"]
    assert span_seconds(records) / US == pytest.approx(stats["kernel_span_us"], abs=2e-3)


@pytest.mark.parametrize("program", PROGRAMS)
def test_fixture_kernels_all_link_to_an_op(fixtures, program):
    """Every GPU record of the five traces links to its op through its own External id, with recorded shapes."""
    trace = fixtures[program]
    assert detect_format(*read_text(PROFILES / f"{program}.json.gz")) == "chrome"
    assert all(r.op is not None and r.link == "external_id" for r in trace.kernels)
    assert all(r.op.startswith("aten::") for r in trace.kernels if r.kind == "kernel")
    assert trace.meta.unlinked == 0 and trace.meta.linked_by_external_id == len(trace.kernels)
    assert trace.meta.devices[0].name == "NVIDIA H200"


@pytest.mark.parametrize("program", PROGRAMS)
def test_fixture_timeline_is_consistent(fixtures, program):
    """busy <= kernel time, busy + idle = span, and the gaps add up to the idle time (to ~1 ns each)."""
    records = fixtures[program].kernels
    busy, span, idle = busy_seconds(records), span_seconds(records), idle_seconds(records)
    assert busy <= kernel_seconds(records) * (1 + 1e-12)
    assert busy + idle == pytest.approx(span, rel=1e-12)
    gaps = launch_gaps(records)
    assert gaps.total == pytest.approx(idle, abs=gaps.count * 2e-9)


@pytest.mark.parametrize("program", PROGRAMS)
def test_fixture_backward_is_the_autograd_thread(fixtures, program):
    """A kernel is backward exactly when the pt_autograd thread launched it (forward-only programs have none)."""
    trace = fixtures[program]
    autograd = {tid for _, tid, name in trace.meta.threads if "pt_autograd" in name}
    assert all(r.backward == (r.thread in autograd) for r in trace.kernels)
    assert any(r.backward for r in trace.kernels) == program.endswith("_train")


def test_bert_gemm_shapes_by_hand(fixtures):
    """BERT-base, batch 8 x seq 512 = 4096 tokens, d 768, ffn 3072: the FFN GEMMs, 12 layers each."""
    kernels = [r for r in fixtures["bert_train"].kernels if r.kind == "kernel"]
    # forward FFN up: addmm(bias [3072], x [8*512=4096, 768], W^T [768, 3072]), under autocast's two aten::linear
    up = [r for r in kernels if r.op == "aten::addmm" and r.shapes == ((3072,), (4096, 768), (768, 3072), (), ())]
    assert len(up) == 12 and not any(r.backward for r in up)
    assert all(r.parents == ("aten::linear", "aten::linear") and r.dtypes[1] == "c10::BFloat16" for r in up)
    # backward of FFN up, input grad: dY [4096, 3072] @ W [3072, 768], an aten::mm under AddmmBackward0
    dx = [r for r in kernels if r.op == "aten::mm" and r.shapes == ((4096, 3072), (3072, 768))]
    assert len(dx) == 12 and all(r.backward for r in dx)
    assert all(r.parents[-1] == "AddmmBackward0" and r.parents[0].startswith("autograd::engine") for r in dx)
    # 12 layers x 4 attention projections (Q, K, V, O) + the MLM head's dense = 49 addmm of [4096, 768] x [768, 768]
    assert sum(r.op == "aten::addmm" and r.shapes[1:3] == ((4096, 768), (768, 768)) for r in kernels) == 49


def test_ncu_fixture_by_an_independent_parse():
    """7 rows; the 4096^3 bf16 GEMM's duration and DRAM bytes equal the csv module's reading of the same cells."""
    text, path = read_text(PROFILES / "ncu_ops.csv.gz")
    assert detect_format(text, path) == "ncu"
    report = parse_ncu(text, path)
    assert len(report.kernels) == 7 == MANIFEST["programs"]["ncu_ops"]["rows"]
    rows = list(csv.reader(io.StringIO(gzip.decompress((PROFILES / "ncu_ops.csv.gz").read_bytes()).decode())))
    header, units, first = rows[0], rows[1], rows[2]
    cell = {name: (first[i], units[i]) for i, name in enumerate(header)}
    assert cell["gpu__time_duration.sum"] == ("178,208", "ns")
    assert cell["dram__bytes_read.sum"] == ("147,938,304", "byte")
    assert cell["dram__bytes_write.sum"] == ("27,421,440", "byte")
    mm = report.kernels[0]
    assert mm.nvtx == ("sk_measure", "mm_bf16_4096x4096x4096")
    assert mm.seconds == pytest.approx(178_208e-9, rel=1e-15)  # 178.208 us
    assert (mm.bytes_read, mm.bytes_written) == (147_938_304, 27_421_440)
    assert mm.measured_bytes == 175_359_744  # 147,938,304 + 27,421,440
    assert mm.measured_bytes >= 3 * 4096 * 4096 * 2  # compulsory: A, B read and C written once, bf16 = 100,663,296 B
    assert report.meta.time_unit == "ns" and report.meta.read_unit == "byte"


def test_ncu_fixture_rows_follow_the_nvtx_ranges():
    """Each row sits in sk_measure and one op's range, in the order ncu_ops.py ran them; starts are cumulative."""
    records = read_ncu(*read_text(PROFILES / "ncu_ops.csv.gz"))
    ranges = [op["range"] for op in MANIFEST["programs"]["ncu_ops"]["ops"]["ops"]]
    assert all(r.nvtx[0] == "sk_measure" for r in records)
    seen = [r.nvtx[1] for r in records]
    assert list(dict.fromkeys(seen)) == ranges  # the GEMV range holds two kernels (GEMV + split-K reduce)
    assert seen.count("gemv_bf16_1x4096x4096") == 2
    for i, r in enumerate(records):
        assert r.start == pytest.approx(sum(x.seconds for x in records[:i]), rel=1e-12)
    assert idle_seconds(records) == pytest.approx(0.0, abs=1e-15)
