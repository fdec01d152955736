"""The operators a whole program runs between its GEMMs (pointwise, reductions, fills, concat, gather, batch norm,
dropout, NLL loss, optimizer steps): FLOPs and bytes by hand, in named dimensions, on shapes from real traces."""

from __future__ import annotations

import numpy as np
import pytest

from solkit import models, ops
from solkit.errors import ShapeError

from test_ops import hand_checked

# ---- pointwise ------------------------------------------------------------------------------------------------


@hand_checked("pointwise")
def test_pointwise_broadcast_multiply_rotary():
    """Llama rotary q [B,H,S,D] = [1,32,2048,128] * cos [1,1,2048,128] (bf16): each input read at its own size."""
    b, h, s, d = 1, 32, 2048, 128
    w = ops.pointwise(out_elements=b * h * s * d, in_elements=b * h * s * d + s * d)
    assert w.bytes_read == (b * h * s * d + s * d) * 2  # 8,650,752 elements = 17,301,504 B
    assert w.bytes_written == b * h * s * d * 2  # 16,777,216
    assert w.flops == w.executed_flops == b * h * s * d  # 8,388,608: one multiply per output
    assert w.kernels[0].kind == "elementwise" and w.kernels[0].op == "pointwise"


def test_pointwise_cast_and_mixed_precision():
    """A cast fp32 -> bf16 of [8,512,768] (N = 3,145,728): N*4 read, N*2 written, no FLOPs; an add of a bf16 [N] and
    an fp32 [N] into fp32 reads N*2 + N*4 and writes N*4."""
    n = 8 * 512 * 768  # 3,145,728
    cast = ops.pointwise(n, n, dtype="fp32", out_dtype="bf16", flops_per_element=0, name="cast")
    assert (cast.bytes_read, cast.bytes_written, cast.flops) == (n * 4, n * 2, 0)  # 12,582,912 and 6,291,456 B
    assert cast.kernels[0].name == "cast"
    add = ops.pointwise(n, n, dtype="bf16", out_dtype="fp32", other_elements=n, other_dtype="fp32")
    assert add.bytes_read == n * 2 + n * 4  # 18,874,368
    assert add.bytes_written == n * 4  # 12,582,912
    assert add.flops == n
    same = ops.pointwise(n, 2 * n, dtype="fp32")  # both in fp32: other_elements defaults to 0
    assert same.bytes == 3 * n * 4  # 37,748,736


def test_pointwise_backward_is_memory_bound():
    """The convention: reads what the forward read and wrote, writes what it read, twice its FLOPs."""
    n = 4096
    back = models.backward(ops.pointwise(n, 2 * n, flops_per_element=2))
    assert back.bytes_read == (2 * n + n) * 2  # 24,576
    assert back.bytes_written == 2 * n * 2  # 16,384
    assert back.flops == 2 * 2 * n  # 16,384


# ---- reductions, fills, concat ---------------------------------------------------------------------------------


@hand_checked("reduce")
def test_reduce_bias_gradient_and_rms_mean():
    """BERT bias gradient: sum of [4096, 768] bf16 over dim 0 -> [768]; Llama RMS mean: [2048, 4096] fp32 -> [2048]."""
    t, d = 4096, 768
    w = ops.reduce(t * d, d)
    assert w.bytes_read == t * d * 2  # 6,291,456
    assert w.bytes_written == d * 2  # 1,536
    assert w.flops == t * d  # 3,145,728: one add per input element
    assert ops.reduce(t * d, d, out_dtype="fp32").bytes_written == d * 4  # 3,072
    m = ops.reduce(2048 * 4096, 2048, dtype="fp32")
    assert (m.bytes_read, m.bytes_written) == (2048 * 4096 * 4, 2048 * 4)  # 33,554,432 and 8,192
    with pytest.raises(ShapeError, match="out_elements must be at most in_elements"):
        ops.reduce(10, 11)


@hand_checked("fill")
def test_fill_writes_only():
    """Zeroing BERT's word-embedding gradient, 30522 x 768 fp32: 23,440,896 elements * 4 = 93,763,584 B written."""
    w = ops.fill(30522 * 768, dtype="fp32")
    assert (w.bytes_read, w.bytes_written) == (0, 30522 * 768 * 4)  # 93,763,584
    assert w.flops == w.executed_flops == 0
    assert w.kernels[0].kind == "copy"


@hand_checked("concat")
def test_concat_kv_cache():
    """Llama decode's KV cache [1,8,2048,128] grown by [1,8,1,128]: 8*2049*128 = 2,098,176 bf16 elements moved."""
    n = 8 * 2048 * 128 + 8 * 1 * 128  # 2,098,176
    w = ops.concat(n)
    assert w.bytes_read == w.bytes_written == n * 2  # 4,196,352
    assert w.bytes == 2 * n * 2 and w.flops == 0  # read n + write n bf16 elements: 8,392,704


@hand_checked("gather")
def test_gather_rows_like_embedding():
    """Llama prefill's embedding as a gather: T = 2048 ids into [128256, 4096] bf16: T*8 + 2*T*d*2 = 33,570,816 B."""
    t, d = 2048, 4096
    w = ops.gather(t * d, index_elements=t)
    assert w.bytes_read == t * 8 + t * d * 2  # 16,384 + 16,777,216 = 16,793,600
    assert w.bytes_written == t * d * 2  # 16,777,216
    assert w.bytes == ops.embedding(t, 128256, d).bytes == t * 8 + 2 * t * d * 2  # 33,570,816
    assert w.flops == 0
    assert ops.gather(1000).bytes_read == 1000 * 8 + 1000 * 2  # one index per element by default: 10,000
    back = models.backward(w)  # scatter-add: ids, dy and the rows added into; the rows written back
    assert back.bytes_read == t * 8 + 2 * t * d * 2  # 33,570,816
    assert back.bytes_written == t * d * 2
    assert back.executed_flops == t * d and back.flops == 0  # 8,388,608 adds, no model FLOPs


# ---- batch norm ----------------------------------------------------------------------------------------------

# ResNet-50's stem batch norm at N = 32: x [32, 64, 112, 112] in bf16, per-channel vectors in fp32 (autocast)
BN_X = 32 * 64 * 112 * 112  # 25,690,112 elements
BN_VEC = 64 * 4  # one fp32 vector of 64 channels: 256 B


@hand_checked("batchnorm")
def test_batchnorm_training_and_eval():
    """training: x, y once (2 * 51,380,224 B) + gamma, beta, running mean/var read + 4 vectors written; 6 FLOPs/element."""
    w = ops.batchnorm(32, 64, 112, 112, training=True, param_dtype="fp32")
    assert w.bytes_read == BN_X * 2 + 4 * BN_VEC  # 51,380,224 + 1,024 = 51,381,248
    assert w.bytes_written == BN_X * 2 + 4 * BN_VEC  # 51,381,248
    assert w.flops == 6 * BN_X  # 154,140,672
    e = ops.batchnorm(32, 64, 112, 112, training=False)  # eval, bf16 vectors: 4 * 64 * 2 = 512 B read
    assert e.bytes_read == BN_X * 2 + 4 * 64 * 2  # 51,380,736
    assert e.bytes_written == BN_X * 2  # 51,380,224
    assert e.flops == 2 * BN_X  # 51,380,224: one multiply-add per element


def test_batchnorm_backward():
    """dy and x read, gamma + saved mean + inverse std (3 vectors); dx, dgamma, dbeta written; 2 x 6 FLOPs/element."""
    back = models.backward(ops.batchnorm(32, 64, 112, 112, param_dtype="fp32"))
    assert back.bytes_read == 2 * BN_X * 2 + 3 * BN_VEC  # 102,760,448 + 768 = 102,761,216
    assert back.bytes_written == BN_X * 2 + 2 * BN_VEC  # 51,380,224 + 512 = 51,380,736
    assert back.flops == 2 * 6 * BN_X  # 308,281,344


# ---- dropout, loss ---------------------------------------------------------------------------------------------


@hand_checked("dropout")
def test_dropout_writes_a_mask_and_no_model_flops():
    """BERT hidden dropout, [8,512,768] bf16 (N = 3,145,728): reads N*2, writes N*2 + N*1 (bool mask); backward reads
    dy and the mask, writes dx."""
    n = 8 * 512 * 768
    w = ops.dropout(n)
    assert (w.bytes_read, w.bytes_written) == (n * 2, n * 3)  # 6,291,456 and 9,437,184
    assert w.flops == 0 and w.executed_flops == 2 * n  # 6,291,456: compare and scale
    back = models.backward(w)
    assert (back.bytes_read, back.bytes_written) == (n * 3, n * 2)
    assert back.flops == 0 and back.executed_flops == 2 * n


@hand_checked("nll_loss")
def test_nll_loss_reads_one_log_probability_per_row():
    """BERT MLM loss: 4096 rows of 30522 fp32 log-probabilities: 4096*(8 + 4) = 49,152 B read; mean writes 2*4 B."""
    rows, classes = 4096, 30522
    w = ops.nll_loss(rows, classes, dtype="fp32")
    assert w.bytes_read == rows * (8 + 4)  # 49,152
    assert w.bytes_written == 2 * 4  # the loss and the total weight: 8
    assert w.flops == rows  # 4,096
    assert ops.nll_loss(rows, classes, reduction="none", dtype="fp32").bytes_written == rows * 4  # 16,384
    back = models.backward(w)  # targets and the scalar gradient read, one element per row written
    assert back.bytes_read == rows * 8 + 4  # 32,772
    assert back.bytes_written == rows * 4  # 16,384
    assert back.flops == 2 * rows  # 8,192


# ---- optimizer steps -------------------------------------------------------------------------------------------


@hand_checked("adamw")
def test_adamw_step_bert_base():
    """BERT-base, P = 109,514,298 fp32 parameters: reads p, g, m, v (16 B each), writes p, m, v (12 B); 16 FLOPs each."""
    p = 109_514_298
    w = ops.adamw(p)
    assert w.bytes_read == p * 4 * 4  # 1,752,228,768
    assert w.bytes_written == p * 3 * 4  # 1,314,171,576
    assert w.executed_flops == 16 * p and w.flops == 0  # 1,752,228,768 executed, no model FLOPs
    assert ops.adamw(p, grad_dtype="bf16").bytes_read == p * (3 * 4 + 2)  # bf16 gradients: 1,533,200,172


@hand_checked("foreach")
def test_foreach_sgd_weight_decay():
    """ResNet-50's SGD d = g + wd*p over P = 25,557,032 fp32: 2 lists read, 1 written, a multiply-add each."""
    p = 25_557_032
    w = ops.foreach(p, inputs=2, outputs=1, flops_per_element=2)
    assert w.bytes_read == 2 * p * 4  # 204,456,256
    assert w.bytes_written == p * 4  # 102,228,128
    assert w.executed_flops == 2 * p and w.flops == 0  # 51,114,064 executed, no model FLOPs
    assert ops.foreach(p, inputs=0, flops_per_element=0, name="foreach_zero").bytes == p * 4  # zero_: writes only


# ---- the new keywords of existing operators -----------------------------------------------------------------------


def test_copy_casts_with_out_dtype():
    """Llama's fp32 -> bf16 cast of the hidden state [1,2048,4096] (N = 8,388,608): N*4 read, N*2 written."""
    n = 2048 * 4096
    w = ops.copy(n, dtype="fp32", out_dtype="bf16")
    assert (w.bytes_read, w.bytes_written, w.flops) == (n * 4, n * 2, 0)  # 33,554,432 and 16,777,216
    assert ops.copy(n, out_dtype="bf16").bytes == ops.copy(n).bytes == 4 * n  # same precision: a plain copy
    assert w.kernels[0].kind == "copy" and w.kernels[0].op == "copy"


def test_pool2d_with_indices():
    """ResNet's max pool 3x3/2 pad 1 on [32,64,112,112]: 6,422,528 outputs, each also an int64 index."""
    outputs = 32 * 64 * 56 * 56  # 6,422,528
    x = 32 * 64 * 112 * 112  # 25,690,112
    w = ops.pool2d(32, 64, 112, 112, kernel=3, stride=2, padding=1, indices=True)
    assert w.bytes_read == x * 2  # 51,380,224
    assert w.bytes_written == outputs * (2 + 8)  # 64,225,280
    back = models.backward(w)  # reads dy and the indices, writes dx
    assert back.bytes_read == outputs * (2 + 8)  # 64,225,280
    assert back.bytes_written == x * 2  # 51,380,224
    assert back.flops == 2 * 9 * outputs  # 115,605,504
    plain = ops.pool2d(32, 64, 112, 112, kernel=3, stride=2, padding=1)
    assert plain.bytes_written == outputs * 2 and models.backward(plain).bytes_read == (x + outputs) * 2


def test_log_softmax_is_softmax():
    """aten::_log_softmax and its backward are claimed by softmax: a [4096, 30522] bf16 call maps to x in, y out, 5 FLOPs/element."""
    from solkit.ops.aten import map_call

    assert ops.by_aten("aten::_log_softmax") == (ops.REGISTRY["softmax"], False)
    assert ops.by_aten("aten::_log_softmax_backward_data") == (ops.REGISTRY["softmax"], True)
    m = map_call("aten::_log_softmax", ((4096, 30522), (), ()), ("c10::BFloat16", "Scalar", "Scalar"), ("", "-1", "False"))
    rows, cols = 4096, 30522
    assert m.workload.bytes == 2 * rows * cols * 2  # x read + y written, bf16: 500,072,448
    assert m.workload.flops == 5 * rows * cols  # 625,082,880


def test_new_ops_sweep():
    """The new operators take arrays and agree with scalar calls."""
    n = np.array([1024, 4096])
    for build in (lambda n: ops.pointwise(n, 2 * n, out_dtype="fp32"), lambda n: ops.reduce(n, 8),
                  lambda n: ops.fill(n), lambda n: ops.concat(n), lambda n: ops.gather(n, 4),
                  lambda n: ops.batchnorm(2, 3, n, 5), lambda n: ops.dropout(n), lambda n: ops.nll_loss(n, 10),
                  lambda n: ops.adamw(n), lambda n: ops.foreach(n, 2)):
        w = build(n)
        assert w.shape == (2,)
        for i, ni in enumerate(n):
            assert w.bytes[i] == build(int(ni)).bytes and w.executed_flops[i] == build(int(ni)).executed_flops
