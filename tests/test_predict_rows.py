"""The predictor's implementation-aware terms: row-wise kernels, their variants, flash attention's split-KV choice.

Every expected value is hand arithmetic on the H200's 132 SMs (hardware_specs/h200-sxm.yaml: chip.sm_count).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import solkit as sk
from solkit.errors import ArgumentTypeError
from solkit.prediction import ROW_BLOCKS_PER_SM, calibration, flash_splits, kernel_terms, wave_seconds
from solkit.workload import Kernel, Rows

SMS = 132  # H200 SXM streaming multiprocessors


@pytest.fixture(scope="module")
def h200():
    return sk.load_gpu("h200-sxm")


def _terms(workload, gpu):
    (kernel, _), = workload.counted
    return kernel_terms(kernel, gpu, calibration(gpu))


def test_row_wise_ops_name_their_rows():
    assert sk.ops.layernorm(tokens=4096, d_model=768).kernels[0].rows == Rows(4096, 768)
    assert sk.ops.rmsnorm(tokens=7, d_model=4096).kernels[0].rows == Rows(7, 4096)
    assert sk.ops.softmax(rows=300, cols=2048).kernels[0].rows == Rows(300, 2048)
    assert sk.ops.embedding(tokens=512, vocab=32000, d_model=1024).kernels[0].rows == Rows(512, 1024)
    assert sk.ops.matmul(m=64, n=64, k=64).kernels[0].rows is None


def test_kernel_refuses_rows_of_the_wrong_type():
    with pytest.raises(ArgumentTypeError, match="rows must be a solkit.workload.Rows"):
        Kernel("k", "reduction", "bf16", bytes_read=1.0, rows=(4, 8))


def test_embedding_reads_each_distinct_row_once():
    """Compulsory reads: the ids and min(tokens, vocab) rows; a table smaller than the token count caps them."""
    small = sk.ops.embedding(tokens=10_000, vocab=1_000, d_model=512, dtype="bf16").kernels[0]
    assert small.bytes_read == 10_000 * 8 + 1_000 * 512 * 2  # ids 80,000 + rows 1,024,000 = 1,104,000
    assert small.bytes_written == 10_000 * 512 * 2  # 10,240,000
    large = sk.ops.embedding(tokens=1_000, vocab=50_000, d_model=512, dtype="bf16").kernels[0]
    assert large.bytes_read == 1_000 * 8 + 1_000 * 512 * 2  # 8,000 + 1,024,000 = 1,032,000


def test_row_waves_and_bytes_per_row(h200):
    """4,225 rows over 132 SMs x 16 blocks = 2,112 per wave: 3 waves; bytes per row = the kernel's bytes / rows."""
    assert ROW_BLOCKS_PER_SM == 16
    t = _terms(sk.ops.layernorm(tokens=4225, d_model=1024, dtype="bf16"), h200)
    assert t.waves == 3  # ceil(4225 / 2112)
    # x in, y out: 2 * 4225 * 1024 * 2 B; gamma, beta: 2 * 1024 * 2 B; over 4,225 rows
    assert t.block_bytes == pytest.approx((2 * 4225 * 1024 * 2 + 2 * 1024 * 2) / 4225)  # 4096.97 B


@pytest.mark.parametrize("op, kwargs, variant, applies", [
    ("layernorm", dict(tokens=64, d_model=1164, dtype="bf16"), "unaligned", False),  # 1164 = 4 x 291
    ("layernorm", dict(tokens=64, d_model=1166, dtype="bf16"), "unaligned", True),  # 1166 = 4 x 291 + 2
    ("rmsnorm", dict(tokens=64, d_model=4435, dtype="fp32"), "unaligned", True),  # 4435 = 4 x 1108 + 3
    ("embedding", dict(tokens=64, vocab=1000, d_model=1964, dtype="bf16"), "unaligned", True),  # 3,928 B = 16 x 245 + 8
    ("embedding", dict(tokens=64, vocab=1000, d_model=1968, dtype="bf16"), "unaligned", False),  # 3,936 B = 16 x 246
    ("embedding", dict(tokens=16, vocab=1000, d_model=1968, dtype="bf16"), "fewindex", True),  # 16 ids: the small-index kernel
    ("embedding", dict(tokens=17, vocab=1000, d_model=1968, dtype="bf16"), "fewindex", False),
    ("softmax", dict(rows=64, cols=2048, dtype="bf16"), "wide", False),  # a warp per row: 2,048 elements, 4,096 B
    ("softmax", dict(rows=64, cols=2049, dtype="bf16"), "wide", True),  # more than 2,048 elements
    ("softmax", dict(rows=64, cols=2048, dtype="fp32"), "wide", False),  # 2,048 x 4 B = 8,192 B: still a warp
    ("softmax", dict(rows=64, cols=1025, dtype="fp64"), "wide", True),  # 1,025 x 8 B = 8,200 B > 8,192
])
def test_row_kernel_variants(h200, op, kwargs, variant, applies):
    t = _terms(getattr(sk.ops, op)(**kwargs), h200)
    assert bool(dict(t.variants)[variant]) is applies
    assert len(t.variants) == (2 if op == "embedding" else 1)  # embedding: unaligned, then fewindex


@pytest.mark.parametrize("rows, cols, dtype, waves", [
    # a warp per row, 2,048 threads = 64 warps per SM; two rows per warp up to 128 elements
    (132 * 128, 100, "bf16", 1),  # 16,896 rows, 128 per SM: 1 wave
    (132 * 128 + 1, 100, "bf16", 2),
    (132 * 64, 1000, "bf16", 1),  # 8,448 rows, 64 per SM: 1 wave
    (132 * 64 * 3 + 1, 1000, "bf16", 4),  # 25,345 rows: ceil(3.0001) = 4 waves
    # a block per row of min(cols, 1024) threads: 1,024 threads, 2 blocks per SM = 264 rows per wave
    (1000, 4096, "bf16", 4),  # ceil(1000 / 264) = 4
    (264, 3000, "fp32", 1),  # 12,000 B > 8,192 B: wide; 264 rows = 1 wave
])
def test_softmax_waves_follow_its_kernels(h200, rows, cols, dtype, waves):
    assert _terms(sk.ops.softmax(rows=rows, cols=cols, dtype=dtype), h200).waves == waves


def test_a_few_ids_are_serial_steps(h200):
    """index_select's small-index kernel walks at most 16 ids one after another: waves = ids; 17 ids take one wave."""
    assert _terms(sk.ops.embedding(tokens=16, vocab=5000, d_model=512), h200).waves == 16
    assert _terms(sk.ops.embedding(tokens=17, vocab=5000, d_model=512), h200).waves == 1  # ceil(17 / 2,112)


def test_wave_seconds_is_waves_times_latency_and_streaming(h200):
    """3 waves x 2 us = 6 us of row latency; 3 waves x 8,192 B / 4.096 GB/s = 6 us of streaming."""
    cal = calibration(h200).replace(wave_latency={"layernorm": 2e-6}, block_bandwidth={"layernorm": 4.096e9})
    t = _terms(sk.ops.layernorm(tokens=4225, d_model=2048, dtype="bf16"), h200)
    t = t._replace(block_bytes=8192.0)
    latency, stream = wave_seconds(t, cal)
    assert latency == pytest.approx(6e-6)
    assert stream == pytest.approx(6e-6)


def test_no_row_term_without_row_parameters(h200):
    cal = calibration(h200).replace(wave_latency={}, block_bandwidth={})
    latency, stream = wave_seconds(_terms(sk.ops.rmsnorm(tokens=100, d_model=4096), h200), cal)
    assert latency == 0.0 and stream == 0.0


@pytest.mark.parametrize("items, key_blocks, splits", [
    # 45 items: s=1 0.341, s=2 90/132 = 0.682, s=3 135/264 = 0.511, s=4 180/264 = 0.682; first >= 0.85 x 0.682: 2
    (45, 4, 2),
    # 1 item, 28 blocks: s = 15..27 repeat ceil(28/s) = 2 (ineligible); best 28/132; first >= 0.85 x 0.212 = 0.180: 28
    (1, 28, 28),
    (106, 64, 1),  # 106 >= 0.8 x 132 = 105.6: no split
    (8, 1, 1),  # one key block: nothing to split
])
def test_flash_splits_follow_the_flash_heuristic(items, key_blocks, splits):
    assert flash_splits(items, key_blocks, SMS) == splits


def test_decode_attention_splits_the_keys(h200):
    """Decode, 56 query heads on 1 KV head, 3,576 keys, d = 128: 1 item, 28 key blocks of 128, 28 splits."""
    t = _terms(sk.ops.attention(batch=1, heads=56, kv_heads=1, seq_q=1, seq_kv=3576, head_dim=128), h200)
    assert [(name, bool(mask)) for name, mask in t.variants] == [("splitkv", True), ("causal", False)]
    assert t.wave_efficiency == pytest.approx(28 / 132)  # 28 work items on 132 SMs
    flops = 4 * 56 * 3576 * 128  # QK^T and PV over 56 packed query rows: 102,531,072
    rate = calibration(h200).matmul_rate["bf16"]
    pad = 64 / 56  # a 64-row query tile computes 64 rows for 56
    assert t.t_compute == pytest.approx(flops / rate * pad / (28 / 132))


def test_prefill_attention_is_not_split(h200):
    """8 x 16 heads x ceil(2048 / 64) = 4,096 items fill the SMs: the unsplit kernel, 128-query tiles."""
    t = _terms(sk.ops.attention(batch=8, heads=16, seq_q=2048, head_dim=128), h200)
    assert [(name, bool(mask)) for name, mask in t.variants] == [("splitkv", False), ("causal", False)]
    work = math.ceil(2048 / 128) * 8 * 16  # 2,048 tiles
    assert t.wave_efficiency == pytest.approx(work / (math.ceil(work / SMS) * SMS))  # 2048 / (16 x 132) = 0.970


def test_prefill_does_not_pack_gqa_heads():
    """flash_api.cpp packs the query heads sharing a KV head as rows only for one query (decode)."""
    prefill = sk.ops.attention(batch=2, heads=32, kv_heads=8, seq_q=300, head_dim=128).kernels[0].gemm
    assert (prefill.m, prefill.batch) == (300, 2 * 32)  # [300, d] per query head: 64 heads of 300 rows
    decode = sk.ops.attention(batch=2, heads=32, kv_heads=8, seq_q=1, seq_kv=300, head_dim=128).kernels[0].gemm
    assert (decode.m, decode.batch) == (32 / 8, 2 * 8)  # 4 packed query rows per KV head, 16 KV heads


def test_causal_attention_waits_for_its_longest_tile(h200):
    """8 x 16 heads x 4,096 causal queries, d = 64: 8 x 16 x 32 = 4,096 tiles of 128 queries, unsplit.

    Causal FLOPs 4 x b x h x d x pairs, pairs = 4096 x 4097 / 2 = 8,390,656; the longest tile (128 queries
    x 4,096 keys x 4 x 64 FLOPs) runs on one SM at rate / 132, CAUSAL_TAIL = 0.5 of it past the balanced time.
    """
    from solkit.prediction import CAUSAL_TAIL
    causal = _terms(sk.ops.attention(batch=8, heads=16, seq_q=4096, head_dim=64, causal=True), h200)
    assert dict(causal.variants) == {"splitkv": False, "causal": True}
    rate = calibration(h200).matmul_rate["bf16"]
    work = 32 * 8 * 16  # 4,096 tiles of 128 queries
    wave = work / (math.ceil(work / SMS) * SMS)  # 4096 / (32 x 132) = 0.970
    balanced = 4 * 8 * 16 * 64 * (4096 * 4097 / 2) / rate / wave
    longest = 4 * 128 * 4096 * 64 / (rate / SMS)
    assert CAUSAL_TAIL == 0.5
    assert causal.t_compute == pytest.approx(balanced + 0.5 * longest)
    full = _terms(sk.ops.attention(batch=8, heads=16, seq_q=4096, head_dim=64), h200)
    assert dict(full.variants)["causal"] is False
    assert full.t_compute == pytest.approx(4 * 8 * 16 * 64 * 4096 * 4096 / rate / wave)  # no tail


@pytest.mark.parametrize("build, values", [
    (lambda v: sk.ops.attention(batch=2, heads=16, kv_heads=4, seq_q=1, seq_kv=v, head_dim=128), [300, 4096, 65536]),
    (lambda v: sk.ops.attention(batch=4, heads=8, seq_q=v, head_dim=64, causal=True), [64, 1000, 8192]),
    (lambda v: sk.ops.layernorm(tokens=3000, d_model=v, dtype="bf16"), [1164, 1166, 8192]),  # aligned, not, aligned
    (lambda v: sk.ops.softmax(rows=500, cols=v), [100, 1024, 2048, 2049, 50257]),  # warp x2 rows, warp, warp, wide, wide
    (lambda v: sk.ops.softmax(rows=v, cols=3000, dtype="fp32"), [1, 264, 265, 100_000]),  # wide: 264 rows a wave
    (lambda v: sk.ops.embedding(tokens=v, vocab=5000, d_model=1000), [1, 16, 17, 5000]),  # serial ids, then waves
    (lambda v: sk.ops.attention(batch=2, heads=8, kv_heads=2, seq_q=v, head_dim=64, causal=True), [1, 2, 700, 5000]),
    (lambda v: sk.ops.matmul(m=v, n=4096, k=4095), [1, 16, 17, 4096]),  # skinny and misaligned mixed
])
def test_a_sweep_predicts_what_each_call_predicts(build, values):
    """Variants, waves and splits per element: a sweep over a dimension equals the scalar calls, element by element."""
    sweep = sk.predict(build(np.array(values)), "h200", warn=False).seconds
    one_by_one = [float(sk.predict(build(v), "h200", warn=False).seconds) for v in values]
    assert np.asarray(sweep) == pytest.approx(one_by_one, rel=1e-12)


def test_a_few_long_rows_are_limited_by_few_blocks():
    """2 rows of 124,596 bf16 elements: two blocks stream the rows; neither roofline term binds (measured 35 us)."""
    p = sk.predict(sk.ops.softmax(rows=2, cols=124_596), "h200")
    (k,) = p.kernels
    assert k.limiter == "few blocks"
    assert k.seconds > 5 * max(k.t_compute, k.t_memory)  # 2 x 498 KB at one block's bandwidth, not 4.3 TB/s


def test_a_large_gemm_is_compute_bound():
    (k,) = sk.predict(sk.ops.matmul(m=8192, n=8192, k=8192), "h200").kernels
    assert k.limiter == "compute"


def test_variant_keys_and_row_ops_come_from_the_registry():
    """Every op the predictor names (row widths, wide rows) is a registered operator, and every variant key a kernel
    can resolve to is a calibration key its operator declares."""
    from solkit.ops.registry import REGISTRY, calibration_keys
    from solkit.stacks.torch211 import ROW_VECTOR, WIDE_ROW_OPS

    assert set(ROW_VECTOR) | set(WIDE_ROW_OPS) <= set(REGISTRY)
    keys = set(calibration_keys())
    for op in REGISTRY.values():
        w = op.function(**op.example)
        for kernel, _ in w.counted:
            terms = kernel_terms(kernel, sk.load_gpu("h200"), calibration("h200"))  # op resolved (sdpa: cudnn's)
            for name, _mask in terms.variants:
                assert f"{terms.op}_{name}" in keys, (op.name, terms.op, name)


def test_attention_impls_count_as_flash_and_name_their_kernel():
    """cudnn and efficient: one fused kernel with flash's counts, under their own calibration keys."""
    flash = sk.ops.attention(2, 16, 1024, head_dim=128, causal=True).kernels[0]
    for impl, op in (("cudnn", "cudnn_attention"), ("efficient", "efficient_attention"), ("sdpa", "sdpa_attention")):
        (k,) = sk.ops.attention(2, 16, 1024, head_dim=128, causal=True, impl=impl).kernels
        assert k.op == op
        assert (k.matrix_flops, k.bytes_read, k.bytes_written, k.gemm) == (flash.matrix_flops, flash.bytes_read,
                                                                         flash.bytes_written, flash.gemm)


def test_sdpa_resolves_to_what_pytorch_runs():
    """fp16/bf16: cuDNN's kernel on Hopper and Blackwell, flash on Ampere (chosen by predict); fp32: efficient, or the
    unfused math path with GQA (chosen when the workload is built: no GPU changes it)."""
    w = sk.ops.attention(1, 32, 2048, head_dim=128, kv_heads=8, impl="sdpa")
    assert _terms(w, sk.load_gpu("h200")).op == "cudnn_attention"
    assert _terms(w, sk.load_gpu("b200")).op == "cudnn_attention"
    assert _terms(w, sk.load_gpu("a100")).op == "flash_attention"
    assert any("cudnn's fused kernel on hopper" in n for n in sk.predict(w, "h200", warn=False).notes)
    fp32 = sk.ops.attention(1, 32, 2048, head_dim=128, impl="sdpa", dtype="fp32")
    assert [k.op for k in fp32.kernels] == ["efficient_attention"]
    math_path = sk.ops.attention(1, 32, 2048, head_dim=128, kv_heads=8, impl="sdpa", dtype="fp32")
    assert math_path.name == "attention (sdpa: math)"
    assert [k.op for k in math_path.kernels] == ["matmul", "softmax", "matmul"]


def test_sdpa_fp32_sweep_mixing_gqa_is_refused():
    from solkit.errors import OptionError

    with pytest.raises(OptionError, match="impl='sdpa' with dtype='fp32'.*mixes both"):
        sk.ops.attention(1, 32, 512, head_dim=64, kv_heads=np.array([8, 32]), impl="sdpa", dtype="fp32")


def test_sdpa_backward_follows_its_forward():
    """The fused kernels' backward is flash's formula (2.5x executed, 2x model FLOPs); the math path's autograd's."""
    from solkit import models

    fused = models.backward(sk.ops.attention(2, 8, 512, head_dim=64, impl="sdpa"))
    assert len(fused.kernels) == 1 and fused.kernels[0].op == "sdpa_attention"
    math_back = models.backward(sk.ops.attention(2, 8, 512, head_dim=64, kv_heads=2, impl="sdpa", dtype="fp32"))
    assert len(math_back.kernels) == 5  # dP, dV, softmax backward, dQ, dK
