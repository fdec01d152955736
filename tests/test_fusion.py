"""Fusion analysis: what the seed article's claims mean under the counting rules."""

from __future__ import annotations

import pytest

import solkit as sk
from solkit import ops

# datasheets: H200 SXM bf16 989.4 TFLOP/s dense, 4.8 TB/s; A100 SXM4 80GB bf16 312 TFLOP/s dense, 2,039 GB/s
PEAK = {"h200": (989.4e12, 4.8e12), "a100": (312e12, 2.039e12)}


def test_qkv_fusion_saves_two_thirds_of_x_reads_not_of_all_bytes(h200):
    """BERT-base T=4096, d=768: x reads 3*T*d*e -> T*d*e (-66.7%); all bytes 41,287,680 -> 28,704,768 (-30.5%)."""
    t, d, e = 4096, 768, 2
    unfused = ops.qkv_projection(t, d, fused=False)
    fused = ops.qkv_projection(t, d)
    x_reads_unfused = sum(float(k.gemm.m * k.gemm.k) for k in unfused.kernels) * e  # 3*T*d*e = 18,874,368
    x_reads_fused = float(fused.kernels[0].gemm.m * fused.kernels[0].gemm.k) * e  # T*d*e = 6,291,456
    assert 1 - x_reads_fused / x_reads_unfused == pytest.approx(2 / 3)
    c = sk.compare(unfused, fused, h200)
    assert c.bytes_saved == 3 * t * d * e - t * d * e  # 12,582,912
    assert c.bytes_saved_fraction == pytest.approx(12_582_912 / 41_287_680)  # 0.3048
    assert c.kernels_saved == 2


@pytest.mark.parametrize("gpu", ["h200", "a100"])
def test_qkv_fusion_does_not_move_t_sol_when_compute_bound(gpu):
    """Each unfused BERT-base projection is compute-bound, so T_SOL is 2*T*d*N / peak either way."""
    peak, _ = PEAK[gpu]
    c = sk.compare(ops.qkv_projection(4096, 768, fused=False), ops.qkv_projection(4096, 768), gpu)
    assert c.t_sol_variant == pytest.approx(2 * 4096 * 768 * 2304 / peak)  # 14.65 us on H200, 46.46 us on A100
    assert c.speedup == pytest.approx(1.0)


@pytest.mark.parametrize("gpu", ["h200", "a100"])
def test_layernorm_residual_fusion(gpu):
    """Llama-3-8B T=8192, d=4096: (5*T*d + 2*d)*e -> (4*T*d + 2*d)*e: -20.0% bytes, T_SOL ratio 1.25 (memory-bound)."""
    _, bw = PEAK[gpu]
    c = sk.compare(ops.layernorm_residual(8192, 4096, fused=False), ops.layernorm_residual(8192, 4096), gpu)
    assert c.bytes_saved == 8192 * 4096 * 2  # one T*d round trip of h: 67,108,864
    assert c.t_sol_baseline == pytest.approx(335_560_704 / bw)
    assert c.speedup == pytest.approx(335_560_704 / 268_451_840)  # 1.24997


def test_conv_layouts(h200):
    """ResNet-50 3x3: NCHW transforms triple the bytes (77,144,064 vs 25,763,840) and flip the bound."""
    nchw = ops.conv2d(32, 64, 56, 56, 64, 3, padding=1, layout="nchw")
    nhwc = ops.conv2d(32, 64, 56, 56, 64, 3, padding=1, layout="nhwc")
    c = sk.compare(nchw, nhwc, h200)
    assert c.bytes_saved_fraction == pytest.approx(1 - 25_763_840 / 77_144_064)  # 0.666
    flops = 7_398_752_256
    # nchw: two transforms memory-bound + conv compute-bound
    t_nchw = 2 * 12_845_056 * 2 / 4.8e12 + max(flops / 989.4e12, 25_763_840 / 4.8e12)
    assert c.t_sol_baseline == pytest.approx(t_nchw)  # 18.18 us
    assert c.t_sol_variant == pytest.approx(flops / 989.4e12)  # 7.48 us


def test_flash_vs_naive(h200):
    """Llama-3-8B causal 8k: naive writes and rereads S and P (4*b*h*sq*skv*e); flash reads Q, K, V once."""
    naive = ops.attention(1, 32, 8192, head_dim=128, kv_heads=8, causal=True, impl="naive")
    flash = ops.attention(1, 32, 8192, head_dim=128, kv_heads=8, causal=True)
    c = sk.compare(naive, flash, h200)
    s = 32 * 8192 * 8192 * 2  # one S or P: 4,294,967,296 B
    assert c.bytes_saved == 4 * s  # 17,179,869,184
    assert c.flops_baseline == c.flops_variant  # same model FLOPs; naive executes twice as many
    assert naive.executed_flops > 1.9 * flash.executed_flops
