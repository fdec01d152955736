"""Operator cost models: FLOPs, bytes and kernels by hand, in named dimensions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solkit import ops
from solkit.errors import ArgumentTypeError, OptionError, ShapeError, UnknownPrecisionError

#: registered operators whose counts a test below works out by hand (test_registry checks every one is here)
HAND_CHECKED: set[str] = set()


def hand_checked(*names: str):
    """Mark a test as the hand-arithmetic check of these operators' counts."""
    HAND_CHECKED.update(names)
    return lambda test: test

# ---- matmul ---------------------------------------------------------------------------


@hand_checked("matmul")
@pytest.mark.parametrize(
    "dtype, e_in, e_out",
    [("bf16", 2, 2), ("fp16", 2, 2), ("tf32", 4, 4), ("fp32", 4, 4), ("fp64", 8, 8), ("fp8", 1, 2), ("int8", 1, 4)],
)
def test_matmul_bytes_by_dtype(dtype, e_in, e_out):
    """m=4096, n=1024, k=512: (m*k + k*n)*e_in + m*n*e_out; fp8 writes bf16, int8 writes int32."""
    m, n, k = 4096, 1024, 512
    w = ops.matmul(m, n, k, dtype=dtype)
    assert w.flops == 2 * m * n * k  # 4,294,967,296
    assert w.bytes_read == (m * k + k * n) * e_in  # 2,621,440 elements
    assert w.bytes_written == m * n * e_out  # 4,194,304 elements
    assert len(w.kernels) == 1


def test_batched_matmul():
    """batch=16 of 512x512x64 bf16: FLOPs 2*16*512*512*64 = 536,870,912; bytes (16*512*64*2 + 16*512*512)*2."""
    w = ops.matmul(512, 512, 64, batch=16)
    assert w.flops == 536_870_912
    assert w.bytes == (16 * 512 * 64 * 2 + 16 * 512 * 512) * 2  # 10,485,760


def test_matmul_bias_and_epilogue():
    """Linear with bias and GELU: bias n elements read, 1 + 8 vector FLOPs per output."""
    m, n, k = 2048, 4096, 1024
    w = ops.matmul(m, n, k, bias=True, epilogue="gelu")
    assert w.matrix_flops == 2 * m * n * k  # 17,179,869,184
    assert w.vector_flops == m * n * 9  # 75,497,472
    assert w.bytes_read == (m * k + k * n + n) * 2  # 12,591,104
    assert w.flops == w.executed_flops


def test_matmul_out_dtype_override():
    """bf16 inputs with fp32 output: C costs 4 bytes per element."""
    assert ops.matmul(64, 64, 64, out_dtype="fp32").bytes_written == 64 * 64 * 4  # 16,384


# ---- qkv -------------------------------------------------------------------------------


@hand_checked("qkv_projection")
def test_qkv_bert_base_fused_and_unfused():
    """BERT-base, T = 8*512 = 4096, d = 768, N = 3*768 = 2304."""
    t, d, n = 4096, 768, 2304
    fused = ops.qkv_projection(t, d)
    unfused = ops.qkv_projection(t, d, fused=False)
    assert fused.flops == unfused.flops == 2 * t * d * n  # 14,495,514,624
    assert fused.bytes == (t * d + d * n + t * n) * 2  # 28,704,768
    assert fused.bytes == 28_704_768
    assert unfused.bytes == (3 * t * d + d * n + t * n) * 2  # 41,287,680
    assert len(fused.kernels) == 1 and len(unfused.kernels) == 3


def test_qkv_gqa_llama3_8b():
    """Llama-3-8B: d=4096, 32 heads, 8 KV heads, head_dim 128 -> N = 4096 + 2*1024 = 6144."""
    t, d = 8192, 4096
    w = ops.qkv_projection(t, d, heads=32, kv_heads=8)
    assert w.kernels[0].gemm.n == 6144
    assert w.flops == 2 * t * d * 6144  # 412,316,860,416
    assert w.bytes == (t * d + d * 6144 + t * 6144) * 2  # 218,103,808
    parts = ops.qkv_projection(t, d, heads=32, kv_heads=8, fused=False).kernels
    assert [float(k.gemm.n) for k in parts] == [4096, 1024, 1024]


def test_qkv_mqa_and_explicit_head_dim():
    """MQA: 16 heads of 256 with one KV head: N = 4096 + 2*256 = 4608, independent of d_model=2048."""
    w = ops.qkv_projection(100, 2048, heads=16, kv_heads=1, head_dim=256)
    assert w.flops == 2 * 100 * 2048 * 4608  # 1,887,436,800


def test_qkv_bad_heads():
    """kv_heads must divide heads; d_model must divide by heads without head_dim."""
    with pytest.raises(ShapeError, match="heads must be a multiple of kv_heads"):
        ops.qkv_projection(8, 4096, heads=32, kv_heads=6)
    with pytest.raises(ShapeError, match="d_model must be a multiple of heads"):
        ops.qkv_projection(8, 1000, heads=3)
    with pytest.raises(ShapeError, match="kv_heads must be at most heads"):
        ops.qkv_projection(8, 4096, heads=8, kv_heads=16)
    with pytest.raises(ShapeError, match="need heads"):
        ops.qkv_projection(8, 4096, kv_heads=8)


# ---- norms -----------------------------------------------------------------------------


@hand_checked("layernorm", "rmsnorm")
def test_layernorm_and_rmsnorm_bytes():
    """T=8192, d=4096, bf16: LN (2*T*d + 2*d)*2 = 134,234,112; RMS (2*T*d + d)*2 = 134,225,920."""
    assert ops.layernorm(8192, 4096).bytes == 134_234_112
    assert ops.rmsnorm(8192, 4096).bytes == 134_225_920
    assert ops.layernorm(8192, 4096).flops == 8 * 8192 * 4096  # 268,435,456
    assert ops.rmsnorm(8192, 4096).flops == 4 * 8192 * 4096  # 134,217,728


@hand_checked("layernorm_residual")
def test_layernorm_residual():
    """fused (4*T*d + 2*d)*e = 268,451,840; unfused (5*T*d + 2*d)*e = 335,560,704 (T=8192, d=4096)."""
    fused = ops.layernorm_residual(8192, 4096)
    unfused = ops.layernorm_residual(8192, 4096, fused=False)
    assert fused.bytes == 268_451_840
    assert unfused.bytes == 335_560_704
    assert fused.flops == unfused.flops == 9 * 8192 * 4096  # add 1 + layernorm 8 per element
    assert (len(fused.kernels), len(unfused.kernels)) == (1, 2)


# ---- small ops -------------------------------------------------------------------------


@hand_checked("softmax", "add", "gelu", "silu", "copy", "elementwise")
def test_softmax_and_elementwise():
    """softmax 4096x4096 fp32: 2*4096*4096*4 = 134,217,728 B; add 1e6 bf16: 3e6*2 = 6e6 B."""
    assert ops.softmax(4096, 4096, dtype="fp32").bytes == 134_217_728
    assert ops.softmax(4096, 4096).flops == 5 * 4096 * 4096  # 83,886,080
    assert ops.add(10**6).bytes == 6_000_000
    assert ops.gelu(10**6).bytes == 4_000_000 and ops.gelu(10**6).flops == 8_000_000
    assert ops.silu(10**6).flops == 4_000_000
    assert ops.copy(10**6, dtype="fp32").bytes == 8_000_000 and ops.copy(10**6).flops == 0
    w = ops.elementwise(1000, inputs=3, outputs=2, flops_per_element=7, dtype="fp16")
    assert w.bytes == 5 * 1000 * 2 and w.flops == 7000


@hand_checked("embedding")
def test_embedding():
    """T=8192 ids into a 128256 x 4096 bf16 table: 8192*8 + 2*8192*4096*2 = 134,283,264 B."""
    w = ops.embedding(8192, 128256, 4096)
    assert w.bytes == 8192 * 8 + 2 * 8192 * 4096 * 2
    assert w.bytes == 134_283_264
    assert w.flops == 0


# ---- conv2d ----------------------------------------------------------------------------

# ResNet-50 conv2_x 3x3: N=32, C=K=64, 56x56, pad 1 -> Ho=Wo=56
N, C, H, K = 32, 64, 56, 64
X_BYTES = N * C * H * H * 2  # 12,845,056
W_BYTES = K * C * 9 * 2  # 73,728
Y_BYTES = N * K * H * H * 2  # 12,845,056
CONV_FLOPS = 2 * N * K * H * H * C * 9  # 7,398,752,256


@hand_checked("conv2d")
def test_conv_nhwc():
    """Implicit GEMM: x + w + y = 25,763,840 B; FLOPs 7,398,752,256."""
    w = ops.conv2d(N, C, H, H, K, kernel=3, padding=1, layout="nhwc")
    assert w.flops == CONV_FLOPS == 7_398_752_256
    assert w.bytes == X_BYTES + W_BYTES + Y_BYTES == 25_763_840
    assert len(w.kernels) == 1


def test_conv_nchw_adds_transforms():
    """NCHW 3x3: + read/write x and read/write y: 25,763,840 + 2*12,845,056*2 = 77,144,064 B."""
    w = ops.conv2d(N, C, H, H, K, kernel=3, padding=1, layout="nchw")
    assert w.bytes == 77_144_064
    assert w.flops == CONV_FLOPS
    assert len(w.kernels) == 3


def test_conv_nchw_1x1_is_direct():
    """A 1x1 stride-1 conv in NCHW is a direct GEMM: bytes as NHWC, one kernel."""
    nchw = ops.conv2d(32, 256, 56, 56, 64, kernel=1, layout="nchw")
    nhwc = ops.conv2d(32, 256, 56, 56, 64, kernel=1, layout="nhwc")
    assert nchw.bytes == nhwc.bytes == (32 * 256 * 3136 + 64 * 256 + 32 * 64 * 3136) * 2  # 64,258,048
    assert len(nchw.kernels) == 1


def test_conv_im2col():
    """cols = 32*56*56 x 64*9 bf16 = 115,605,504 B, written then read: total 256,974,848 B."""
    w = ops.conv2d(N, C, H, H, K, kernel=3, padding=1, layout="im2col")
    cols = N * H * H * C * 9 * 2  # 115,605,504
    assert w.bytes == X_BYTES + 2 * cols + W_BYTES + Y_BYTES == 256_974_848
    assert w.flops == CONV_FLOPS


def test_conv_stem_stride_and_output_size():
    """ResNet-50 stem: 7x7 s2 p3 on 224 -> (224 + 6 - 6 - 1)//2 + 1 = 112; FLOPs 7,552,892,928 at N=32."""
    assert ops.conv_output_size(224, 7, 2, 3) == 112
    w = ops.conv2d(32, 3, 224, 224, 64, kernel=7, stride=2, padding=3)
    assert w.flops == 2 * 32 * 64 * 112 * 112 * 3 * 49 == 7_552_892_928


def test_conv_depthwise_and_rectangular_and_dilation():
    """Depthwise 3x3 (groups=C=256) at 14x14: 2*256*196*9 = 903,168; 1x7 kernel; dilation 2 3x3 -> 5x5 span."""
    assert ops.conv2d(1, 256, 14, 14, 256, 3, padding=1, groups=256).flops == 903_168
    w = ops.conv2d(1, 128, 17, 17, 128, kernel=(1, 7), padding=(0, 3))
    assert w.flops == 2 * 128 * 17 * 17 * 128 * 7  # 66,289,664
    assert ops.conv_output_size(32, 3, 1, 0, dilation=2) == 28  # 32 - 5 + 1


def test_conv_bad_arguments():
    """Kernel larger than padded input, groups not dividing channels, unknown layout."""
    with pytest.raises(ShapeError, match="must fit the padded input along height"):
        ops.conv2d(1, 3, 5, 5, 8, kernel=7)
    with pytest.raises(ShapeError, match="in_channels must be a multiple of groups"):
        ops.conv2d(1, 30, 8, 8, 64, groups=4)
    with pytest.raises(OptionError, match="layout must be one of 'nhwc', 'nchw', 'im2col', got 'chwn'"):
        ops.conv2d(1, 3, 8, 8, 8, layout="chwn")
    with pytest.raises(ArgumentTypeError, match="pair"):
        ops.conv2d(1, 3, 8, 8, 8, kernel=(3, 3, 3))


# ---- attention -------------------------------------------------------------------------


@hand_checked("attention")
def test_attention_flash_full_and_causal():
    """b=1, h=32, s=4096, d=128: pairs 16,777,216; causal 16,777,216 - 4096*4095/2 = 8,390,656."""
    full = ops.attention(1, 32, 4096, head_dim=128)
    causal = ops.attention(1, 32, 4096, head_dim=128, causal=True)
    assert full.flops == 4 * 32 * 128 * 16_777_216 == 274_877_906_944
    assert causal.flops == 4 * 32 * 128 * 8_390_656 == 137_472_507_904
    assert full.bytes == causal.bytes == 4 * 32 * 4096 * 128 * 2  # Q, K, V, O = 134,217,728


def test_attention_decode_gqa():
    """Decode, 32 heads over 8 KV heads, 8192 cached: FLOPs 4*32*128*8192; bytes (2*32*128 + 2*8*8192*128)*2."""
    w = ops.attention(1, 32, 1, seq_kv=8192, head_dim=128, kv_heads=8)
    assert w.flops == 134_217_728
    assert w.bytes == 33_570_816


def test_attention_naive_counts_every_pair():
    """Naive causal, b=h=1, s=1024, d=64: executed 4*64*1024^2 = 268,435,456 matrix FLOPs, model 134,348,800."""
    w = ops.attention(1, 1, 1024, head_dim=64, causal=True, impl="naive")
    assert w.matrix_flops == 268_435_456
    assert w.flops == 4 * 64 * (1024 * 1024 - 1024 * 1023 // 2) == 134_348_800
    s_bytes = 1024 * 1024 * 2  # S and P, bf16: 2,097,152 each
    qkvo = 1024 * 64 * 2  # 131,072 each
    assert w.bytes == 4 * qkvo + 4 * s_bytes  # S written+read, P written+read = 8,912,896
    assert [k.name for k in w.kernels] == ["S = Q K^T", "P = softmax(S)", "O = P V"]


@pytest.mark.parametrize("sq, skv, pairs", [(3, 5, 12), (5, 3, 6), (1, 7, 7), (4, 4, 10)])
def test_causal_pairs_bottom_right(sq, skv, pairs):
    """Bottom-right causal: query i sees keys j <= i + skv - sq (sq=5, skv=3: 0+0+1+2+3 = 6)."""
    assert ops.attention_pairs(sq, skv, causal=True) == pairs


@settings(max_examples=100, deadline=None)
@given(sq=st.integers(1, 64), skv=st.integers(1, 64))
def test_causal_pairs_match_a_mask(sq, skv):
    """The closed form equals the count of an explicit bottom-right mask."""
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    assert ops.attention_pairs(sq, skv, causal=True) == np.count_nonzero(j <= i + skv - sq)
    assert ops.attention_pairs(sq, skv, causal=True) <= ops.attention_pairs(sq, skv)


def test_attention_bad_arguments():
    """Unknown impl, kv_heads not dividing heads, causal not a bool."""
    with pytest.raises(OptionError, match="impl must be one of 'flash', 'naive', 'cudnn', 'efficient', 'sdpa', got 'xformers'"):
        ops.attention(1, 8, 128, impl="xformers")
    with pytest.raises(ShapeError, match="heads must be a multiple of kv_heads"):
        ops.attention(1, 8, 128, kv_heads=3)
    with pytest.raises(ArgumentTypeError, match="causal must be True or False"):
        ops.attention(1, 8, 128, causal="yes")
    with pytest.raises(UnknownPrecisionError, match="dtype must be one of"):
        ops.attention(1, 8, 128, dtype="bf17")


# ---- properties ------------------------------------------------------------------------

small = st.integers(1, 512)


@settings(max_examples=100, deadline=None)
@given(t=small, d=small, h=st.sampled_from([1, 2, 4, 8]), g=st.sampled_from([1, 2, 4]))
def test_fused_never_more_bytes(t, d, h, g):
    """Fusing QKV or LN+residual never adds bytes; NHWC never more than NCHW or im2col; flash never more than naive."""
    hd = 16
    assert ops.qkv_projection(t, d * h, heads=h, kv_heads=max(1, h // g), head_dim=hd).bytes <= ops.qkv_projection(
        t, d * h, heads=h, kv_heads=max(1, h // g), head_dim=hd, fused=False
    ).bytes
    assert ops.layernorm_residual(t, d).bytes <= ops.layernorm_residual(t, d, fused=False).bytes
    nhwc = ops.conv2d(2, 8, 16, 16, 8, 3, padding=1).bytes
    assert nhwc <= ops.conv2d(2, 8, 16, 16, 8, 3, padding=1, layout="nchw").bytes
    assert nhwc <= ops.conv2d(2, 8, 16, 16, 8, 3, padding=1, layout="im2col").bytes
    assert ops.attention(1, h, t, head_dim=hd).bytes <= ops.attention(1, h, t, head_dim=hd, impl="naive").bytes


@settings(max_examples=100, deadline=None)
@given(b=st.integers(1, 64), s=st.integers(1, 256), d=st.sampled_from([32, 64, 128]))
def test_flops_linear_in_batch(b, s, d):
    """FLOPs of batch b are b times FLOPs of batch 1 (attention, conv, matmul)."""
    assert ops.attention(b, 4, s, head_dim=d).flops == b * ops.attention(1, 4, s, head_dim=d).flops
    assert ops.conv2d(b, 8, 16, 16, 8, 3).flops == b * ops.conv2d(1, 8, 16, 16, 8, 3).flops
    assert ops.matmul(s, d, d, batch=b).flops == b * ops.matmul(s, d, d).flops


def test_all_ops_broadcast():
    """Every op takes arrays, returns figures of the broadcast shape, and agrees with scalar calls."""
    t = np.array([128, 256, 512])
    builders = (
        lambda t: ops.qkv_projection(t, 768),
        lambda t: ops.layernorm(t, 768),
        lambda t: ops.layernorm_residual(t, 768, fused=False),
        lambda t: ops.softmax(t, 768),
        lambda t: ops.embedding(t, 30522, 768),
        lambda t: ops.conv2d(t, 64, 56, 56, 64, 3, padding=1, layout="nchw"),
        lambda t: ops.attention(1, 12, t, head_dim=64, impl="naive"),
    )
    for build in builders:
        w = build(t)
        assert w.shape == (3,)
        for i, ti in enumerate(t):
            one = build(int(ti))
            assert w.bytes[i] == one.bytes
            assert w.flops[i] == one.flops


# ---- the parts of convolutions and pooling ----------------------------------------------


@hand_checked("im2col")
def test_im2col_bytes():
    """ResNet 3x3 pad 1 on 32 x 64 x 56 x 56: x 12,845,056 B read, columns 32*56*56*64*9*2 = 115,605,504 B written."""
    w = ops.im2col(32, 64, 56, 56, kernel=3, padding=1)
    assert w.bytes_read == 32 * 64 * 56 * 56 * 2  # 12,845,056
    assert w.bytes_written == 32 * 56 * 56 * 64 * 9 * 2  # 115,605,504
    assert w.flops == 0
    assert w.kernels[0].launches == 32  # one unfold per image


@hand_checked("layout_transform")
def test_layout_transform_bytes():
    """An NCHW <-> NHWC transform of 1,000,000 bf16 elements reads and writes them: 4,000,000 B, no FLOPs."""
    w = ops.layout_transform(10**6)
    assert (w.bytes_read, w.bytes_written, w.flops) == (2_000_000, 2_000_000, 0)
    assert w.kernels[0].kind == "layout"


@hand_checked("pool2d")
def test_pool2d_counts():
    """ResNet-50's max pool: 3x3/2 pad 1 on 32 x 64 x 112 x 112 -> 56 x 56; 9 compares per output."""
    w = ops.pool2d(32, 64, 112, 112, kernel=3, stride=2, padding=1)
    outputs = 32 * 64 * 56 * 56  # (112 + 2 - 3) // 2 + 1 = 56: 6,422,528 outputs
    assert w.flops == 9 * outputs  # 57,802,752
    assert w.bytes == (32 * 64 * 112 * 112 + outputs) * 2  # 51,380,224 + 12,845,056 = 64,225,280
    g = ops.pool2d(2, 2048, 7, 7, kernel=7, stride=1, mode="avg")  # global average: 49 adds per output
    assert g.flops == 49 * 2 * 2048  # 200,704
    with pytest.raises(ShapeError, match="must fit the padded input along height"):
        ops.pool2d(1, 8, 2, 8, kernel=3)


# ---- the problem each kernel solves (what the predictor's tile model reads) ------------


def test_gemm_dims_of_each_kernel():
    """Each matrix kernel names its GEMM: matmul (m, n, k, batch), flash attention per query head (per KV head in
    decode), naive's two products, convs per group."""
    g = ops.matmul(512, 256, 64, batch=16).kernels[0].gemm
    assert (g.m, g.n, g.k, g.batch) == (512, 256, 64, 16)
    # flash, GQA 32 query heads over 8 KV heads, b=2, s=4096, d=128: per query head [4096, 128] x [128, 4096], 2*32 items
    g = ops.attention(2, 32, 4096, head_dim=128, kv_heads=8).kernels[0].gemm
    assert (g.m, g.n, g.k, g.batch) == (4096, 4096, 128, 64)
    # decode (one query): the 32/8 = 4 query heads of a KV head packed as rows, [4, 128] x [128, 4096], 2*8 items
    g = ops.attention(2, 32, 1, seq_kv=4096, head_dim=128, kv_heads=8).kernels[0].gemm
    assert (g.m, g.n, g.k, g.batch) == (4, 4096, 128, 16)
    qk, _, pv = ops.attention(2, 8, 256, seq_kv=512, head_dim=64, impl="naive").kernels
    assert (qk.gemm.m, qk.gemm.n, qk.gemm.k, qk.gemm.batch) == (256, 512, 64, 16)  # Q [256,64] @ K^T [64,512]
    assert (pv.gemm.m, pv.gemm.n, pv.gemm.k, pv.gemm.batch) == (256, 64, 512, 16)  # P [256,512] @ V [512,64]
    # conv, 2 groups: N*Ho*Wo = 4*30*30 = 3600 rows, K/g = 32 columns, (C/g)*R*S = 16*9 = 144 deep, C/g = 16 channels
    g = ops.conv2d(4, 32, 32, 32, 64, 3, groups=2).kernels[0].gemm
    assert (g.m, g.n, g.k, g.batch, g.channels) == (3600, 32, 144, 2, 16)
    assert ops.conv2d(4, 32, 32, 32, 64, 3, groups=2).flops == 2 * 2 * 3600 * 32 * 144  # 66,355,200
    g = ops.conv2d(4, 32, 32, 32, 64, 3, groups=2, layout="im2col").kernels[1].gemm
    assert (g.m, g.n, g.k, g.batch) == (3600, 32, 144, 2)


@pytest.mark.parametrize("kernel, stride, padding, direct", [(1, 1, 0, True), (1, 2, 0, False), (1, 1, 1, False),
                                                               ((1, 3), 1, 0, False), ((3, 1), 1, (1, 0), False)])
def test_nchw_direct_only_for_unpadded_unit_stride_1x1(kernel, stride, padding, direct):
    """NCHW skips the layout transforms only for a 1x1, stride-1, unpadded conv (else three kernels)."""
    w = ops.conv2d(2, 16, 8, 8, 16, kernel=kernel, stride=stride, padding=padding, layout="nchw")
    assert len(w.kernels) == (1 if direct else 3)


def test_nchw_depthwise_is_direct():
    """PyTorch runs a depthwise conv (C = groups) on NCHW directly: one kernel, bytes as NHWC, no transforms."""
    w = ops.conv2d(8, 96, 28, 28, 96, kernel=3, padding=1, groups=96, layout="nchw")
    assert len(w.kernels) == 1
    # x 8*96*28*28 = 602,112; w 96*1*3*3 = 864; y 602,112 elements; bf16: (602,112*2 + 864) * 2 = 2,410,176 B
    assert w.bytes == 2_410_176
    assert len(models_backward_kernels(w)) == 2  # dgrad and wgrad, no transforms either
    grouped = ops.conv2d(8, 96, 28, 28, 96, kernel=3, padding=1, groups=4, layout="nchw")
    assert len(grouped.kernels) == 3  # grouped but not depthwise: transformed


def test_a_strided_conv_reads_only_the_pixels_its_windows_touch():
    """1x1 stride 2 on 88x88: Ho = Wo = 44, rows read min(88, 44*1) = 44: a quarter of x; 3x3 stride 2 reads all."""
    w = ops.conv2d(31, 576, 88, 88, 8, kernel=1, stride=2, layout="nhwc", dtype="bf16")
    # x read 31*576*44*44 = 17,856*1,936 = 34,569,216; w 8*576 = 4,608; y 31*8*44*44 = 480,128 elements; bf16 x 2 B
    assert w.kernels[0].bytes_read == (34_569_216 + 4_608) * 2  # 69,147,648 B
    assert w.kernels[0].bytes_written == 480_128 * 2  # 960,256 B
    nchw = ops.conv2d(31, 576, 88, 88, 8, kernel=1, stride=2, layout="nchw", dtype="bf16")
    assert nchw.kernels[0].bytes_read == 34_569_216 * 2  # the transform moves the touched pixels only
    k3 = ops.conv2d(2, 64, 56, 56, 64, kernel=3, stride=2, padding=1, layout="nhwc", dtype="bf16")
    # Ho = (56 + 2 - 3) // 2 + 1 = 28; rows min(56, 28*3 = 84) = 56: all of x, 2*64*56*56 = 401,408; w 64*64*9 = 36,864
    assert k3.kernels[0].bytes_read == (401_408 + 36_864) * 2  # 876,544 B
    k2s4 = ops.conv2d(1, 16, 100, 100, 16, kernel=2, stride=4, layout="nhwc", dtype="bf16")
    # Ho = (100 - 2) // 4 + 1 = 25; rows min(100, 25*2) = 50, columns 50: x read 16*50*50 = 40,000; w 16*16*4 = 1,024
    assert k2s4.kernels[0].bytes_read == (40_000 + 1_024) * 2  # 82,048 B


def test_nchw_conv_of_few_channels_is_direct():
    """Fewer than 16 bytes of input channels (RGB, bf16: 6 B) on NCHW: cuDNN convolves directly, one kernel."""
    stem = ops.conv2d(32, 3, 224, 224, 64, kernel=7, stride=2, padding=3, layout="nchw", dtype="bf16")
    assert len(stem.kernels) == 1
    # Ho = Wo = (224 + 6 - 7) // 2 + 1 = 112; x 32*3*224*224 = 4,816,896; w 64*3*7*7 = 9,408;
    # y 32*64*112*112 = 25,690,112 elements; bf16: (4,816,896 + 9,408 + 25,690,112) * 2 = 61,032,832 B
    assert stem.bytes == 61_032_832
    eight = ops.conv2d(32, 8, 56, 56, 64, kernel=3, padding=1, layout="nchw", dtype="bf16")  # 16 B of channels
    assert len(eight.kernels) == 3  # transformed to NHWC and back
    fp32 = ops.conv2d(32, 4, 56, 56, 64, kernel=3, padding=1, layout="nchw", dtype="fp32")  # 4 x 4 B = 16 B
    assert len(fp32.kernels) == 3


def models_backward_kernels(w):
    from solkit import models

    return models.backward(w).kernels


def test_nchw_sweep_transforms_only_where_needed():
    """A sweep over 1x1 and 3x3 (padding 1) in NCHW: the transforms move nothing at the 1x1 element, x and y at the 3x3."""
    w = ops.conv2d(2, 16, 8, 8, 16, kernel=np.array([1, 3]), padding=np.array([0, 1]), layout="nchw")
    x = y = 2 * 16 * 8 * 8 * 2  # bytes of x and of y (8x8 out either way): 4,096
    to_nhwc, _, to_nchw = w.kernels
    assert list(to_nhwc.bytes) == [0, 2 * x] and list(to_nchw.bytes) == [0, 2 * y]
    from solkit import models

    back = [k for k in models.backward(w).kernels if k.kind == "layout"]
    assert [list(k.bytes) for k in back] == [[0, 2 * y], [0, 2 * x]]  # dy to NHWC, dx back


def test_elementwise_keys_are_the_operators_not_the_names():
    """A named elementwise kernel ('bn+relu') keeps the calibration key 'elementwise'; add, gelu, silu, copy their own."""
    assert ops.elementwise(1000, name="bn+relu").kernels[0].op == "elementwise"
    assert [f(1000).kernels[0].op for f in (ops.add, ops.gelu, ops.silu, ops.copy)] == ["add", "gelu", "silu", "copy"]
    assert ops.copy(1000).kernels[0].kind == "copy" and ops.softmax(4, 8).kernels[0].kind == "reduction"


def test_public_helpers():
    """qkv_widths, attention_pairs and conv_output_size by hand, and their errors name the argument."""
    assert ops.qkv_widths(768) == (768, 768)
    assert ops.qkv_widths(4096, heads=32, kv_heads=8) == (4096, 1024)  # head_dim 128: 32*128, 8*128
    assert ops.qkv_widths(2048, heads=16, kv_heads=1, head_dim=256) == (4096, 256)
    assert list(ops.qkv_widths(np.array([768, 1536]), heads=12)[1]) == [768, 1536]
    with pytest.raises(ShapeError, match="d_model must be a multiple of heads"):
        ops.qkv_widths(1000, heads=3)
    with pytest.raises(ShapeError, match="kv_heads and head_dim need heads"):
        ops.qkv_widths(1000, kv_heads=2)
    assert list(ops.attention_pairs(np.array([3, 5]), np.array([5, 3]), causal=True)) == [12, 6]  # 15 - 3; 3*4/2
    assert ops.attention_pairs(4, 6) == 24
    with pytest.raises(ShapeError, match="seq_kv must be a positive integer, got 0"):
        ops.attention_pairs(4, 0)
    assert list(ops.conv_output_size(np.array([224, 225]), 7, 2, 3)) == [112, 113]  # (224+6-7)//2+1; (225+6-7)//2+1
    with pytest.raises(ShapeError, match="must fit the padded input along width: width 4 .* at index 1"):
        ops.conv_output_size(np.array([8, 4]), 7, axis="width")
    with pytest.raises(ShapeError, match="stride must be a positive integer, got 0"):
        ops.conv_output_size(8, 3, stride=0)


@pytest.mark.parametrize("call, error, says", [
    (lambda: ops.conv_output_size(8, 3, padding=-1), ShapeError, "padding must be an integer >= 0, got -1"),
    (lambda: ops.conv_output_size(8, 3, dilation=0), ShapeError, "dilation must be a positive integer, got 0"),
    (lambda: ops.conv_output_size(8, 0), ShapeError, "kernel must be a positive integer, got 0"),
    (lambda: ops.conv_output_size(0, 3), ShapeError, "height must be a positive integer, got 0"),
    (lambda: ops.conv_output_size(np.array([8, 9]), np.array([3, 3, 3])), ShapeError, "height (2,), kernel (3,)"),
    (lambda: ops.qkv_widths(768, heads=0), ShapeError, "heads must be a positive integer, got 0"),
    (lambda: ops.qkv_widths(768, heads=12, kv_heads=0), ShapeError, "kv_heads must be a positive integer, got 0"),
    (lambda: ops.qkv_widths(768, heads=12, head_dim=0), ShapeError, "head_dim must be a positive integer, got 0"),
    (lambda: ops.qkv_widths(768, heads=8, kv_heads=16), ShapeError, "kv_heads must be at most heads, got 16"),
    (lambda: ops.qkv_widths(768, heads=8, kv_heads=3), ShapeError, "heads must be a multiple of kv_heads"),
    (lambda: ops.qkv_widths(np.array([768, 1536]), heads=np.array([12, 12, 12])), ShapeError, "d_model (2,), heads (3,)"),
    (lambda: ops.attention_pairs(0, 4), ShapeError, "seq_q must be a positive integer, got 0"),
    (lambda: ops.attention_pairs(4, 4, causal="yes"), ArgumentTypeError, "causal must be True or False, got 'yes'"),
    (lambda: ops.attention_pairs(np.array([1, 2]), np.array([1, 2, 3])), ShapeError, "seq_q (2,), seq_kv (3,)"),
])
def test_helper_errors(call, error, says):
    """The helpers validate like the operators: the error names the argument and what came."""
    with pytest.raises(error) as info:
        call()
    assert says in str(info.value)


def test_helpers_by_hand():
    """conv_output_size with stride, padding and dilation; qkv_widths with an explicit head_dim; causal pairs by element."""
    assert ops.conv_output_size(32, 3, stride=2, padding=1, dilation=2) == 15  # (32 + 2 - 4 - 1)//2 + 1
    assert ops.conv_output_size(7, 7) == 1 and ops.conv_output_size(8, 1, stride=3) == 3  # (8 - 1)//3 + 1
    assert ops.qkv_widths(1000, heads=10, kv_heads=2, head_dim=64) == (640, 128)  # head_dim need not divide d_model
    assert ops.attention_pairs(5, 3, causal=False) == 15 and ops.attention_pairs(5, 3, causal=True) == 6
