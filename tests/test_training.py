"""Backward passes by hand: each operator's registered gradient, and training steps of whole models."""

from __future__ import annotations

import pytest

import solkit as sk
from solkit import models, ops
from solkit.errors import OptionError
from solkit.workload import Kernel, Workload


def _by_name(w: Workload) -> dict[str, Kernel]:
    return {k.name: k for k in w.kernels}


def test_matmul_with_bias_and_gelu():
    """m=2048, n=4096, k=1024 bf16 with bias and GELU: gelu backward, bias grad, dgrad (m,k,n) and wgrad (k,n,m)."""
    m, n, k = 2048, 4096, 1024
    backward = models.backward(ops.matmul(m, n, k, bias=True, epilogue="gelu"))
    assert backward.name == "matmul backward"
    back = _by_name(backward)
    assert list(back) == ["matmul gelu backward", "matmul bias grad", "matmul dgrad", "matmul wgrad"]
    gelu = back["matmul gelu backward"]  # reads dY and Z, writes dZ: 2 x 8 FLOPs per output
    assert (gelu.vector_flops, gelu.bytes_read, gelu.bytes_written) == (16 * m * n, 2 * m * n * 2, m * n * 2)  # 134,217,728
    bias = back["matmul bias grad"]  # sums dZ over m rows into n
    assert (bias.vector_flops, bias.bytes_read, bias.bytes_written) == (2 * m * n, m * n * 2, n * 2)  # 16,777,216; 8,192 B
    for name in ("matmul dgrad", "matmul wgrad"):
        assert back[name].matrix_flops == 2 * m * n * k  # 17,179,869,184
        assert back[name].bytes == (m * n + n * k + m * k) * 2  # 29,360,128
    assert (back["matmul dgrad"].gemm.m, back["matmul dgrad"].gemm.n, back["matmul dgrad"].gemm.k) == (m, k, n)
    assert (back["matmul wgrad"].gemm.m, back["matmul wgrad"].gemm.n, back["matmul wgrad"].gemm.k) == (k, n, m)
    forward = 2 * m * n * k + m * n * (1 + 8)  # 17,255,366,656 model FLOPs: product, bias, GELU
    assert models.training_step(ops.matmul(m, n, k, bias=True, epilogue="gelu"), optimizer=None).flops == 3 * forward


def test_matmul_backward_in_the_output_precision():
    """bf16 inputs with an fp32 output and a bias: the bias gradient reads dC (4 bytes per element) and writes n fp32."""
    bias = _by_name(models.backward(ops.matmul(64, 32, 16, out_dtype="fp32", bias=True)))["matmul bias grad"]
    assert (bias.bytes_read, bias.bytes_written) == (64 * 32 * 4, 32 * 4)  # 8,192; 128


def test_batched_matmul_backward():
    """batch 16 of 512x256x64: dgrad and wgrad are batched GEMMs of the same batch."""
    dgrad, wgrad = models.backward(ops.matmul(512, 256, 64, batch=16)).kernels
    assert (dgrad.gemm.batch, wgrad.gemm.batch) == (16, 16)
    assert dgrad.matrix_flops == wgrad.matrix_flops == 2 * 16 * 512 * 256 * 64  # 268,435,456


def test_unfused_qkv_sums_three_input_gradients():
    """BERT-base T=4096, d=768: three dgrad/wgrad pairs, then two adds of the partial dx (3*T*d*2 B, T*d FLOPs each)."""
    t, d = 4096, 768
    back = models.backward(ops.qkv_projection(t, d, fused=False))
    assert back.name == "qkv_projection (unfused) backward"
    names = [k.name for k in back.kernels]
    assert names[:6] == ["qkv_projection (unfused) v_proj dgrad", "qkv_projection (unfused) v_proj wgrad",
                         "qkv_projection (unfused) k_proj dgrad", "qkv_projection (unfused) k_proj wgrad",
                         "qkv_projection (unfused) q_proj dgrad", "qkv_projection (unfused) q_proj wgrad"]
    dx_sum = back.kernels[6]
    assert len(back) == 8 and back.kernels[7] is dx_sum
    assert dx_sum.bytes == 3 * t * d * 2  # 18,874,368
    assert (dx_sum.vector_flops, dx_sum.model_flops) == (t * d, 0)  # 3,145,728 adds, bookkeeping
    assert back.flops == 2 * 2 * t * d * 3 * d  # dgrad + wgrad of N = 3d columns: 57,982,058,496


# ResNet-50 conv2_x 3x3: N=32, C=K=64, 56x56, padding 1
X, W, Y = 32 * 64 * 56 * 56, 64 * 64 * 9, 32 * 64 * 56 * 56  # elements: 6,422,528; 36,864; 6,422,528
CONV_FLOPS = 2 * 32 * 64 * 56 * 56 * 64 * 9  # 7,398,752,256


@pytest.mark.parametrize("layout, transforms, moved", [("nhwc", 0, 0), ("nchw", 2, (2 * Y + 2 * X) * 2)])  # 51,380,224
def test_conv_backward(layout, transforms, moved):
    """dgrad reads dy and w, writes dx; wgrad reads x and dy, writes dw; NCHW adds a transform of dy and of dx."""
    back = models.backward(ops.conv2d(32, 64, 56, 56, 64, 3, padding=1, layout=layout))
    assert back.name == f"conv2d ({layout}) backward"
    named = {k.name.rsplit(" ", 1)[-1]: k for k in back.kernels}
    assert (named["dgrad"].bytes_read, named["dgrad"].bytes_written) == ((Y + W) * 2, X * 2)  # 12,918,784; 12,845,056
    assert (named["wgrad"].bytes_read, named["wgrad"].bytes_written) == ((X + Y) * 2, W * 2)  # 25,690,112; 73,728
    assert named["dgrad"].matrix_flops == named["wgrad"].matrix_flops == CONV_FLOPS
    layouts = [k for k in back.kernels if k.kind == "layout"]  # dy to NHWC (read, write y), dx back (read, write x)
    assert len(layouts) == transforms
    assert sum(k.bytes for k in layouts) == moved


def test_im2col_conv_backward():
    """im2col: dcols = dy @ w^T (a (100,352, 576, 64) GEMM), col2im (reads 57,802,752 columns, writes x), dw = cols^T @ dy."""
    cols = 32 * 56 * 56 * 64 * 9  # 57,802,752 elements
    back = models.backward(ops.conv2d(32, 64, 56, 56, 64, 3, padding=1, layout="im2col"))
    assert back.name == "conv2d (im2col) backward"
    dcols, col2im, wgrad = back.kernels
    assert col2im.launches == 32  # one fold per image, as the unfold
    assert (dcols.gemm.m, dcols.gemm.n, dcols.gemm.k) == (100_352, 576, 64)
    assert dcols.bytes == (100_352 * 64 + 64 * 576 + 100_352 * 576) * 2  # 128,524,288
    assert (col2im.bytes_read, col2im.bytes_written, col2im.vector_flops, col2im.model_flops) == (cols * 2, X * 2, cols, 0)
    assert (wgrad.gemm.m, wgrad.gemm.n, wgrad.gemm.k) == (576, 64, 100_352)
    assert dcols.matrix_flops == wgrad.matrix_flops == CONV_FLOPS


def test_naive_causal_attention_step_is_three_forwards():
    """b=1, h=8, s=1024, d=64 causal: model 4*8*64*524,800 = 1,074,790,400; the step counts 3x, the backward executes 4 full products."""
    fwd = ops.attention(1, 8, 1024, head_dim=64, causal=True, impl="naive")
    pairs = 1024 * 1024 - 1024 * 1023 // 2  # 524,800
    assert fwd.flops == 4 * 8 * 64 * pairs  # 1,074,790,400
    back = models.backward(fwd)
    assert back.flops == 2 * fwd.flops  # 2,149,580,800
    assert models.training_step(fwd, optimizer=None).flops == 3 * fwd.flops  # 3,224,371,200 (the old per-kernel rule gave 5x)
    assert back.matrix_flops == 4 * 2 * 8 * 1024 * 1024 * 64  # 4,294,967,296: dP, dV, dQ, dK over every pair
    assert back.vector_flops == 10 * 8 * 1024 * 1024  # the softmax's gradient, 2 x 5 per element: 83,886,080
    assert [k.name.split(" ", 3)[-1] for k in back.kernels] == ["dP = dO V^T", "dV = P^T dO", "softmax backward",
                                                               "dQ = dS K", "dK = dS^T Q"]


def test_naive_gqa_attention_backward_bytes():
    """b=1, h=8 over kv=2, sq=256, skv=512, d=64 bf16: Q 131,072, K 65,536, S 1,048,576 elements; each product by hand."""
    q, k, s = 8 * 256 * 64, 2 * 512 * 64, 8 * 256 * 512
    back = {kern.name.removeprefix("attention (naive) "): kern for kern in models.backward(
        ops.attention(1, 8, 256, seq_kv=512, head_dim=64, kv_heads=2, impl="naive")).kernels}
    expect = {  # name: (bytes read, bytes written, gemm (m, n, k)), 2 bytes per element
        "dP = dO V^T": ((q + k) * 2, s * 2, (256, 512, 64)),  # dO, V -> dP
        "dV = P^T dO": ((s + q) * 2, k * 2, (512, 64, 256)),  # P, dO -> dV (per KV head)
        "dQ = dS K": ((s + k) * 2, q * 2, (256, 64, 512)),  # dS, K -> dQ
        "dK = dS^T Q": ((s + q) * 2, k * 2, (512, 64, 256)),  # dS, Q -> dK
    }
    for name, (read, written, (m, n, kk)) in expect.items():
        kern = back[name]
        assert (kern.bytes_read, kern.bytes_written) == (read, written), name
        assert (kern.gemm.m, kern.gemm.n, kern.gemm.k, kern.gemm.batch) == (m, n, kk, 8), name
        assert kern.matrix_flops == 2 * 8 * m * n * kk == 2 * 8 * 256 * 512 * 64  # 134,217,728
        assert kern.model_flops == 2 * 8 * 64 * 256 * 512  # not causal: every pair counts
    soft = back["softmax backward"]
    assert (soft.bytes_read, soft.bytes_written, soft.vector_flops) == (2 * s * 2, s * 2, 10 * s)  # 4,194,304; 2,097,152


def test_flash_attention_backward():
    """Flash backward: 2.5x the forward's executed FLOPs, 2x its model FLOPs; reads Q,K,V,O,dO, writes dQ,dK,dV."""
    fwd = ops.attention(2, 32, 1024, head_dim=128, kv_heads=8, causal=True)
    back_w = models.backward(fwd)
    assert back_w.name == "attention (flash, causal) backward"
    (back,) = back_w.kernels
    assert back.matrix_flops == 2.5 * fwd.executed_flops
    assert back.model_flops == 2 * fwd.flops
    q, kv = 2 * 32 * 1024 * 128, 2 * 8 * 1024 * 128  # elements of Q (and O, dO, dQ), of K (and V, dK, dV)
    assert back.bytes_read == (q + 2 * kv + 2 * q) * 2  # Q, K, V, O, dO
    assert back.bytes_written == (q + 2 * kv) * 2  # dQ, dK, dV
    g = back.gemm
    assert (g.m, g.n, g.k, g.batch) == (1024, 1024, 128, 2 * 32)  # as the forward: per query head
    assert back.op == "flash_attention"


def test_embedding_backward():
    """T=8192 ids, vocab 128256 x 4096 bf16: zero the table's gradient, then scatter-add dy into the T rows."""
    back = models.backward(ops.embedding(8192, 128256, 4096))
    assert back.name == "embedding backward"
    zero, scatter = back.kernels
    assert zero.bytes_written == 128256 * 4096 * 2  # 1,050,673,152
    assert scatter.bytes_read == 8192 * 8 + 2 * 8192 * 4096 * 2  # ids, dy, rows: 134,283,264
    assert scatter.bytes_written == 8192 * 4096 * 2  # 67,108,864
    assert (scatter.vector_flops, scatter.model_flops) == (8192 * 4096, 0)


def test_memory_bound_backward_of_a_norm():
    """LayerNorm T=8192, d=4096: reads x, gamma, beta and dy ((2*T*d + 2*d)*2), writes dx, dgamma, dbeta ((T*d + 2*d)*2)."""
    (back,) = models.backward(ops.layernorm(8192, 4096)).kernels
    assert back.bytes_read == (2 * 8192 * 4096 + 2 * 4096) * 2  # 134,234,112
    assert back.bytes_written == (8192 * 4096 + 2 * 4096) * 2  # 67,125,248
    assert back.vector_flops == 2 * 8 * 8192 * 4096  # 536,870,912


def test_qkv_backward_with_an_explicit_head_dim():
    """MQA, 16 heads of 256 over d_model 2048 (not 2048/16): the fused backward's GEMMs are [T,d] x [d, 4096 + 2*256]."""
    dgrad, wgrad = models.backward(ops.qkv_projection(100, 2048, heads=16, kv_heads=1, head_dim=256)).kernels
    assert (dgrad.gemm.m, dgrad.gemm.n, dgrad.gemm.k) == (100, 2048, 4608)  # dX = dQKV [100,4608] @ W^T [4608,2048]
    assert (wgrad.gemm.m, wgrad.gemm.n, wgrad.gemm.k) == (2048, 4608, 100)  # dW = X^T [2048,100] @ dQKV [100,4608]


def test_memory_bound_backward_rule():
    """The rule on any kernels: reverse order, reads in + out, writes in, 2x each FLOP figure, kinds and keys kept."""
    from solkit.ops._common import memory_bound_backward

    a = Kernel("a", "elementwise", "bf16", matrix_flops=4.0, vector_flops=6.0, bytes_read=10.0, bytes_written=20.0,
               model_flops=5.0, vector_precision="fp16", op="add")
    b = Kernel("b", "reduction", "fp32", vector_flops=1.0, bytes_read=3.0, bytes_written=7.0, op="softmax")
    back = memory_bound_backward("step", Workload("fwd", (a, b)))
    assert back.name == "step backward"
    b_back, a_back = back.kernels
    assert (b_back.name, a_back.name) == ("step b backward", "step a backward")
    assert (a_back.matrix_flops, a_back.vector_flops, a_back.model_flops) == (8.0, 12.0, 10.0)
    assert (a_back.bytes_read, a_back.bytes_written) == (30.0, 10.0)  # 10 + 20 read, 10 written
    assert (a_back.kind, a_back.op, a_back.vector_precision, b_back.precision) == ("elementwise", "add", "fp16", "fp32")
    (single,) = memory_bound_backward("ln", Workload("fwd", (b,))).kernels
    assert single.name == "ln backward"


def test_hand_built_kernels_have_no_backward():
    """A workload of hand-built kernels cannot be differentiated: an OptionError names the kernel."""
    w = Workload("mine", (Kernel("custom", "elementwise", "bf16", vector_flops=1.0, bytes_read=8.0),))
    with pytest.raises(OptionError, match="kernel 'custom' was not built by a registered operator"):
        models.training_step(w, optimizer=None)


LLAMA_LAYER = dict(vocab=128256, batch=1, seq=2048, d_model=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336)


def test_repeated_layers_are_held_once():
    """80 layers: 13 distinct kernels (embedding, the layer's 10, final norm, LM head), 803 launches; same bound as expanded."""
    w = models.transformer(80, **LLAMA_LAYER)
    assert len(w.counted) == 1 + 10 + 2
    assert len(w) == len(w.kernels) == 1 + 80 * 10 + 2
    expanded = Workload(w.name, w.kernels)
    gpu = sk.load_gpu("h200")
    assert sk.roofline(w, gpu).t_sol == pytest.approx(sk.roofline(expanded, gpu).t_sol, rel=1e-12)
    assert sk.predict(w, gpu).seconds == pytest.approx(sk.predict(expanded, gpu).seconds, rel=1e-12)
    step = models.training_step(w, optimizer=None)
    assert step.flops == pytest.approx(3 * w.flops, rel=1e-12)
    assert len(step.counted) < 40  # the backward is held once per layer too


def test_a_typo_in_the_layer_count_does_not_hang():
    """layers=10**6 builds and bounds at once (the layer is held once), and predicts about 1e6 x one layer's time."""
    gpu = sk.load_gpu("h200")
    shape = {**LLAMA_LAYER, "vocab": 256}
    huge, one = models.transformer(10**6, **shape), models.transformer(1, **shape)
    layer = sk.roofline(huge, gpu).t_sol - sk.roofline(one, gpu).t_sol
    assert layer == pytest.approx((10**6 - 1) * (sk.roofline(models.transformer(2, **shape), gpu).t_sol
                                                 - sk.roofline(one, gpu).t_sol), rel=1e-9)


def test_final_norm_follows_norm_whatever_its_case():
    """norm='RMSNorm' gives an RMSNorm at the end too (it used to fall back to a LayerNorm)."""
    w = models.transformer(2, norm="RMSNorm", **LLAMA_LAYER)
    assert w.kernels[-2].name == "rmsnorm"
    assert models.transformer(2, norm="LayerNorm", **LLAMA_LAYER).kernels[-2].name == "layernorm"
