"""Profiles (issue 11): real H200 traces joined to SOL, every aggregate checked by hand against the raw file.

The fixtures in data/profiles were recorded on an H200 by benchmarks/profiling/record.py (torch 2.11,
record_shapes=True): a BERT-base training step (batch 8, seq 512, bf16 autocast, fused AdamW),
ResNet-50 inference (batch 64) and training (batch 32) in channels-last bf16, and a 4-layer
Llama-3-8B prefill (2048 tokens) and decode step. Expected figures below come from the model
configs by hand (2 FLOPs per multiply-add, a training step 3x the forward) or from the raw JSON.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import solkit as sk
from solkit import ops
from solkit.errors import ArgumentTypeError, MeasurementError
from solkit.profile import L2_RESIDENT, load_profile

DATA = Path(__file__).resolve().parents[1] / "data" / "profiles"
PROGRAMS = ("bert_train", "resnet50_infer", "resnet50_train", "llama_prefill", "llama_decode")


@pytest.fixture(scope="module")
def profiles():
    return {name: load_profile(DATA / f"{name}.json.gz", "h200") for name in PROGRAMS}


def _raw_kernels(name: str) -> list[dict]:
    """The trace's kernel events, read with json alone."""
    events = json.loads(gzip.open(DATA / f"{name}.json.gz").read())["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_kernel_time_is_the_sum_of_the_trace_kernel_events(profiles, name):
    """kernel_seconds = the sum of every kernel event's dur (us) in the raw JSON; span = last end - first start."""
    raw = _raw_kernels(name)
    p = profiles[name]
    assert len(p.kernels) == len(raw)
    assert p.kernel_seconds == pytest.approx(sum(e["dur"] for e in raw) * 1e-6, rel=1e-12)
    first = min(e["ts"] for e in raw)
    last = max(e["ts"] + e["dur"] for e in raw)
    assert p.span_seconds == pytest.approx((last - first) * 1e-6, abs=2e-9)  # the trace clock's float steps: ~1 ns
    assert p.idle_seconds == pytest.approx(p.span_seconds - p.busy_seconds)
    assert p.busy_seconds <= p.kernel_seconds + 1e-12  # overlapping kernels count once


@pytest.mark.parametrize("name", PROGRAMS)
def test_coverage_and_the_bound(profiles, name):
    """At least 90% of kernel time maps to solkit operators; the mapped calls' T_SOL never exceeds their measured time in sum."""
    p = profiles[name]
    assert p.coverage >= 0.90
    assert p.sol_seconds <= p.modeled_seconds
    assert p.modeled_seconds == pytest.approx(sum(c.seconds for c in p.calls if c.workload is not None))
    assert 0.0 < p.mfu < 1.0


def test_bert_training_step_model_flops_match_a_hand_count(profiles):
    """BERT-base MLM step, batch 8 x seq 512 = 4096 tokens: 3 x forward, within 5%.

    Per layer: QKV + output 4*768*768 and FFN 2*768*3072 multiply-adds per token
    = 2,359,296 + 4,718,592 = 7,077,888; x 12 layers x 2 FLOPs x 4096 tokens = 6.958e11.
    Attention: 4 * batch * d_model * seq^2 per layer = 4*8*768*512*512 = 6.442e9, x 12 = 7.730e10.
    MLM head: dense 768*768 + decoder 768*30522 = 24,030,720 MACs/token, x 2 x 4096 = 1.9686e11.
    Forward 9.697e11; step 3 x = 2.909e12.
    """
    tokens, d, ffn, layers, seq, batch, vocab = 4096, 768, 3072, 12, 512, 8, 30522
    forward = (2 * tokens * layers * (4 * d * d + 2 * d * ffn) + layers * 4 * batch * d * seq * seq
               + 2 * tokens * (d * d + d * vocab))
    assert forward == pytest.approx(9.697e11, rel=1e-3)
    assert profiles["bert_train"].flops == pytest.approx(3 * forward, rel=0.05)


def test_resnet50_flops_match_its_gmacs(profiles):
    """ResNet-50 v1.5: 4.089 GMACs per 224x224 image (torchvision; solkit's models.resnet50 agrees exactly).

    Inference, batch 64: 2 * 4.089e9 * 64 = 5.234e11; a training step, batch 32: 3 * 2 * 4.089e9 * 32 = 7.851e11.
    """
    assert profiles["resnet50_infer"].flops == pytest.approx(2 * 4.089e9 * 64, rel=0.05)
    assert profiles["resnet50_train"].flops == pytest.approx(3 * 2 * 4.089e9 * 32, rel=0.05)


def test_llama_prefill_flops_match_a_hand_count(profiles):
    """4 Llama-3-8B layers over 2048 tokens, logits of the last token only.

    Weights per layer: q 4096^2 + k, v 2 * 4096*1024 + o 4096^2 + MLP 3 * 4096*14336 = 218,103,808;
    x 2 x 2048 tokens x 4 layers = 3.5734e12. Causal attention: 4 * heads * head_dim * s(s+1)/2
    = 4*32*128*2,098,176 = 3.4377e10 per layer, x 4 = 1.3751e11. LM head: 2*4096*128256 = 1.0507e9.
    Total 3.7120e12.
    """
    weights = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
    total = 2 * 2048 * 4 * weights + 4 * 4 * 32 * 128 * (2048 * 2049 // 2) + 2 * 4096 * 128256
    assert profiles["llama_prefill"].flops == pytest.approx(total, rel=0.05)


def test_a_big_gemm_call_matches_its_roofline(profiles):
    """BERT's FFN-up addmm: x [4096, 768] @ W^T [768, 3072] + bias: T_SOL of ops.matmul(4096, 3072, 768, bias=True)."""
    p = profiles["bert_train"]
    calls = [c for c in p.calls if c.op == "aten::addmm" and not c.backward
             and [list(s) for s in c.shapes[:3]] == [[3072], [4096, 768], [768, 3072]]]
    assert len(calls) == 12  # one per layer
    t_sol = sk.roofline(ops.matmul(4096, 3072, 768, bias=True), "h200").t_sol
    # 2*4096*3072*768 = 19,327,352,832 FLOPs / 989.4e12 = 19.53 us (compute-bound)
    assert t_sol == pytest.approx(2 * 4096 * 3072 * 768 / 989.4e12, rel=1e-3)
    for c in calls:
        assert c.t_sol == pytest.approx(t_sol)
        measured = sum(p.kernels[i].seconds for i in c.kernels)
        assert c.sol_fraction == pytest.approx(t_sol / measured)
        assert 0.3 < c.sol_fraction <= 1.0


def test_kernels_of_one_call_share_its_workload_and_aggregates_count_it_once(profiles):
    """A call with several kernels: each kernel points to it; sol_seconds sums calls, not kernels."""
    p = profiles["bert_train"]
    multi = [c for c in p.calls if len(c.kernels) > 1 and c.workload is not None]
    assert multi
    c = multi[0]
    assert {p.kernels[i].call for i in c.kernels} == {p.calls.index(c)}
    assert all(p.kernels[i].workload is c.workload for i in c.kernels)
    assert p.sol_seconds == pytest.approx(sum(c.t_sol for c in p.calls if c.t_sol is not None))


def test_calls_below_their_dram_bound_are_labelled_not_given_fractions_above_one(profiles):
    """A call measured below its T_SOL has no SOL fraction; its verdict says it likely ran from L2."""
    below = [c for p in profiles.values() for c in p.calls if c.t_sol is not None and c.t_sol > c.seconds]
    for c in below:
        assert c.sol_fraction is None and c.verdict == L2_RESIDENT
    fractions = [c.sol_fraction for p in profiles.values() for c in p.calls if c.sol_fraction is not None]
    assert max(fractions) <= 1.0


def test_the_unmodeled_time_is_listed_under_its_own_name(profiles):
    """Op calls no operator claims stay in the report as '<aten op> (unmodeled)' with their measured time."""
    p = profiles["bert_train"]
    rows = p.groups()
    assert sum(r["measured_s"] for r in rows) == pytest.approx(p.kernel_seconds)
    unmodeled = [r for r in rows if not r["modeled"]]
    assert sum(r["measured_s"] for r in unmodeled) == pytest.approx(p.kernel_seconds - p.modeled_seconds)


def test_report_json_and_frame(profiles):
    """print(profile) shows the aggregates; to_dict is JSON-ready; to_frame has one row per group."""
    p = profiles["llama_decode"]
    text = str(p)
    assert "coverage" in text and "top" in text and "MFU" in text
    d = json.loads(json.dumps(p.to_dict()))
    assert d["launches"] == len(p.kernels) and d["kernel_s"] == pytest.approx(p.kernel_seconds)
    pd = pytest.importorskip("pandas")
    frame = p.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(p.groups())
    assert "<table" in p._repr_html_()


def test_the_profile_workload_feeds_roofline_predict_and_mfu(profiles):
    """profile.workload is a Workload of the mapped calls: its flops are the profile's, its T_SOL the sum."""
    p = profiles["llama_decode"]
    w = p.workload
    assert float(w.flops) == pytest.approx(p.flops)
    assert sk.roofline(w, "h200").t_sol == pytest.approx(p.sol_seconds)


def test_several_ranks_give_the_slowest(tmp_path):
    """Two files: the profile is the one with the larger span, with both in ranks."""
    p = load_profile([DATA / "llama_prefill.json.gz", DATA / "llama_decode.json.gz"], "h200")
    assert len(p.ranks) == 2
    assert p.span_seconds == max(r.span_seconds for r in p.ranks)


def test_bad_profile_inputs(tmp_path):
    """A missing file, an empty list, a JSON without traceEvents, a trace without kernels: clear solkit errors."""
    with pytest.raises(MeasurementError, match="nope.json"):
        load_profile(tmp_path / "nope.json", "h200")
    with pytest.raises(ArgumentTypeError, match="path"):
        load_profile([], "h200")
    bad = tmp_path / "x.json"
    bad.write_text('{"foo": 1}')
    with pytest.raises(MeasurementError, match="traceEvents"):
        load_profile(bad, "h200")
    cpu_only = tmp_path / "cpu.json"
    cpu_only.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5,
                                                     "pid": 1, "tid": 1, "args": {"External id": 1}}]}))
    with pytest.raises(MeasurementError, match="no GPU kernels"):
        load_profile(cpu_only, "h200")


def _ncu_rows() -> list[dict]:
    """The ncu raw page read with csv alone: header, a units row, then one row per kernel."""
    import csv
    import io

    lines = [line for line in gzip.open(DATA / "ncu_ops.csv.gz").read().decode().splitlines()
             if not line.startswith("==")]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    return rows[1:]  # rows[0] holds the units


def test_ncu_rows_keep_their_measured_dram_bytes_and_map_by_nvtx():
    """Nsight Compute: 7 rows; each call's measured bytes = dram read + write of its rows; NVTX ranges map to workloads."""
    rows = _ncu_rows()
    n = 4096
    ranges = {f"mm_bf16_{n}x{n}x{n}": ops.matmul(n, n, n), f"gemv_bf16_1x{n}x{n}": ops.matmul(1, n, n),
              "layernorm_bf16_8192x4096": ops.layernorm(8192, 4096), "softmax_bf16_4096x4096": ops.softmax(4096, 4096),
              "sdpa_flash_bf16_b4h32s2048d128_causal": ops.attention(4, 32, 2048, head_dim=128, causal=True)}
    p = load_profile(DATA / "ncu_ops.csv.gz", "h200", nvtx=ranges)
    assert len(p.kernels) == len(rows) == 7
    as_int = lambda cell: int(cell.replace(",", ""))  # noqa: E731 - units row says "byte" and "nsecond"
    total_bytes = sum(as_int(r["dram__bytes_read.sum"]) + as_int(r["dram__bytes_write.sum"]) for r in rows)
    assert sum(c.measured_bytes for c in p.calls) == total_bytes
    assert p.kernel_seconds == pytest.approx(sum(as_int(r["gpu__time_duration.sum"]) for r in rows) * 1e-9)
    # the GEMV and cuBLASLt's split-K reduce run under one NVTX range: one call of two kernels
    gemv = [c for c in p.calls if len(c.kernels) == 2]
    assert len(gemv) == 1 and gemv[0].t_sol == pytest.approx(sk.roofline(ops.matmul(1, n, n), "h200").t_sol)
    # only the add has no workload in nvtx=: coverage = 1 - its time / all
    add = [c for c in p.calls if c.workload is None]
    assert len(add) == 1 and p.coverage == pytest.approx(1 - add[0].seconds / p.kernel_seconds)
    assert "DRAM MB" in p.report()
    unmapped = load_profile(DATA / "ncu_ops.csv.gz", "h200")
    assert unmapped.coverage == 0.0 and all("nvtx=" in c.reason for c in unmapped.calls)
    with pytest.raises(ArgumentTypeError, match="nvtx"):
        load_profile(DATA / "ncu_ops.csv.gz", "h200", nvtx={"x": 3})


def test_a_trace_written_by_sk_measure_on_the_h200():
    """sk.measure(gelu(x @ w1) @ w2 + x) on an H200 (benchmarks/profiling/measure_check.py): its trace, counted by hand.

    x [4096, 4096], w1 [4096, 14336], w2 [14336, 4096], bf16. Two GEMMs: 2 * 2*4096*4096*14336
    = 962,072,674,304 FLOPs; gelu 8 FLOPs x 4096*14336 = 469,762,048; the add 4096*4096 = 16,777,216.
    Total 962,559,213,568 model FLOPs, all four kernels modelled.
    """
    p = load_profile(DATA / "measure_block.json.gz", "h200")
    assert len(p.kernels) == 4 and p.coverage == 1.0
    assert p.flops == 2 * 2 * 4096 * 4096 * 14336 + 8 * 4096 * 14336 + 4096 * 4096  # 962,559,213,568
    mm = [c for c in p.calls if c.operator == "matmul"]
    assert len(mm) == 2
    # the first GEMM's bound: 2*4096*4096*14336 / 989.4e12 = 486.2 us (compute-bound)
    assert mm[0].t_sol == pytest.approx(2 * 4096 * 4096 * 14336 / 989.4e12, rel=1e-3)


def test_measure_needs_torch_and_a_callable():
    """Without torch: OptionalDependencyError naming the install; a non-callable fn: ArgumentTypeError."""
    from solkit.errors import OptionalDependencyError

    with pytest.raises(ArgumentTypeError, match="fn must be callable"):
        sk.measure(3, gpu="h200")
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(OptionalDependencyError, match="solkit\\[torch\\]"):
            sk.measure(print, gpu="h200")


def test_a_trace_of_zero_length_kernels_reports_zeros_not_a_division_error(tmp_path):
    """Two kernels of 0 us at the same instant: kernel time, span, coverage and MFU are 0, and the report prints."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0, "dur": 10, "pid": 1, "tid": 1,
               "args": {"External id": 7, "Input Dims": [[4], [4]], "Input type": ["float", "float"]}}]
    events += [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": 5, "dur": 0, "pid": 0, "tid": 7,
                "args": {"External id": 7, "correlation": i, "stream": 7, "device": 0}} for i in range(2)]
    path = tmp_path / "zero.json"
    path.write_text(json.dumps({"traceEvents": events}))
    p = load_profile(path, "h200")
    assert (p.kernel_seconds, p.span_seconds, p.coverage, p.mfu) == (0.0, 0.0, 0.0, 0.0)
    assert "coverage 0.0%" in str(p)
