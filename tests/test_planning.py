"""planning.inference (TTFT, TPOT, tokens/s, memory) and the quantization and KV-cache precision options."""

from __future__ import annotations

import numpy as np
import pytest

import solkit as sk
from solkit import models, ops, planning
from solkit.errors import ArgumentTypeError, OptionError

LLAMA = models.preset("llama3-8b")


def test_ttft_is_the_prefill_and_tpot_the_mean_decode_step():
    """TTFT = predict(prefill); TPOT = the mean of decode steps predicted at contexts 1024 .. 1279."""
    e = planning.inference(LLAMA, "h200", batch=4, prompt=1024, output=256, kernels="fused")
    assert e.ttft == sk.predict(LLAMA.prefill(batch=4, seq=1024, kernels="fused"), "h200", warn=False).seconds
    steps = [sk.predict(LLAMA.decode(batch=4, context=c, kernels="fused"), "h200", warn=False).seconds
             for c in np.unique(np.linspace(1024, 1279, planning.DECODE_POINTS).round())]
    assert e.tpot == pytest.approx(np.mean(steps), rel=1e-12)
    assert e.decode_tokens_per_s == pytest.approx(4 / e.tpot)
    assert e.latency == pytest.approx(e.ttft + 256 * e.tpot)
    assert e.throughput == pytest.approx(4 * 256 / e.latency)


def test_batch_sweep_gives_arrays_and_more_tokens_per_second():
    """A batch array is a sweep: decoding tokens/s grows with the batch while the weights are read once per step."""
    e = planning.inference(LLAMA, "h200", batch=np.array([1, 8, 64]), prompt=512, output=128, kernels="fused")
    assert np.shape(e.tpot) == (3,) and np.all(np.diff(e.decode_tokens_per_s) > 0)
    assert np.all(e.fits)


def test_weight_only_int4_reads_a_quarter_of_the_weights():
    """w4a16: a layer linear reads its weight at 0.5 bytes: q_proj [1,4096] @ [4096,4096] reads 4096*4096*0.5 bytes."""
    w = LLAMA.decode(batch=1, context=1024, kernels="fused", quant="w4a16")
    qkv = [k for k in w.kernels if k.name == "qkv"][0]
    # x [1,4096] bf16 + w [4096, 6144] int4 + y [1, 6144] bf16
    assert qkv.bytes == 4096 * 2 + 4096 * 6144 * 0.5 + 6144 * 2
    mem = LLAMA.memory(batch=1, seq=1024, quant="w4a16")
    quantized = 32 * 218_103_808  # the layers' linear weights
    assert mem.weights == (8_030_261_248 - quantized) * 2 + quantized * 0.5  # 5,591,539,712


def test_w8a8_quantizes_each_linear_input():
    """w8a8: a quantize kernel (bf16 in, int8 out) before an int8 GEMM with a bf16 output."""
    w = LLAMA.decode(batch=8, context=1024, kernels="fused", quant="w8a8")
    names = [k.name for k in w.kernels]
    i = names.index("qkv")
    assert names[i - 1] == "quantize activations" and w.kernels[i].precision == "int8"
    assert w.kernels[i - 1].bytes == 8 * 4096 * (2 + 1)


def test_fp8_kv_cache_halves_the_cache_reads():
    """kv_dtype='fp8': K and V of 4097 tokens read at 1 byte: (2*8*32*128)*2 + 2*8*8*4097*128*1 bytes."""
    w = LLAMA.decode(batch=8, context=4096, kernels="fused", kv_dtype="fp8")
    attn = [k for k in w.kernels if k.kind == "attention"][0]
    assert attn.bytes == 2 * 8 * 32 * 128 * 2 + 2 * 8 * 8 * 4097 * 128  # 67,256,320
    assert LLAMA.kv_cache_bytes(8, 4096, "fp8") == LLAMA.kv_cache_bytes(8, 4096) / 2


def test_attention_kv_dtype_needs_a_fused_kernel():
    """The naive path reads K and V in dtype: an fp8 cache there is refused."""
    with pytest.raises(OptionError, match="kv_dtype='fp8_e4m3' needs a fused attention kernel"):
        ops.attention(1, 8, 1, 128, 64, impl="naive", kv_dtype="fp8")


def test_quantization_is_an_inference_option():
    """quant with training is refused; an unknown scheme names the choices."""
    with pytest.raises(OptionError, match="inference option"):
        LLAMA.forward(batch=1, seq=128, quant="w4a16", training=True)
    with pytest.raises(OptionError, match="quant must be one of"):
        LLAMA.decode(batch=1, context=128, quant="int3")


def test_matmul_weight_dtype_counts_b_in_its_own_precision():
    """[16,4096] bf16 @ [4096,4096] int8 -> [16,4096] bf16: 16*4096*2 + 4096*4096*1 + 16*4096*2 = 17,039,360 bytes."""
    w = ops.matmul(16, 4096, 4096, weight_dtype="int8")
    assert w.bytes == 16 * 4096 * 2 + 4096 * 4096 + 16 * 4096 * 2
    assert w.flops == 2 * 16 * 4096 * 4096


def test_inference_refuses_a_workload():
    """inference takes the architecture, not a workload: a wrong type, so an ArgumentTypeError (a TypeError)."""
    with pytest.raises(ArgumentTypeError, match="must be a solkit.models.Transformer"):
        planning.inference(LLAMA.forward(batch=1, seq=128), "h200")
