"""Ragged work (issue 32): varlen attention and grouped GEMMs of uneven groups, counted per group and
wave-quantized over their actual tiles. Expected values are hand arithmetic in named dimensions."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit import models, ops
from solkit.cli import main
from solkit.errors import ArgumentTypeError, OptionError, ShapeError
from solkit.ops.aten import BALANCED_GROUPS, BALANCED_SEQUENCES, Mapped, Unmapped, map_call
from solkit.prediction.gpu import calibration, matmul_rate
from solkit.prediction.kernel import CAUSAL_TAIL, kernel_terms
from solkit.prediction.tiles import (attention_compute_time, gemm_time, ragged_attention_compute_time, ragged_gemm_time,
                                     ragged_waves)

from test_ops import hand_checked

H200 = sk.load_gpu("h200")
BF = "c10::BFloat16"

# ---- varlen attention: counts ------------------------------------------------------------------------------


def test_varlen_pairs_per_sequence_not_causal():
    """h=8, d=64, kv=2, sequences of 100, 300, 37: pairs 100^2 + 300^2 + 37^2 = 101,369; FLOPs 4*8*64*101,369."""
    w = ops.attention(3, 8, 512, head_dim=64, kv_heads=2, seq_lens=[100, 300, 37])
    assert w.flops == 4 * 8 * 64 * 101_369  # 207,603,712
    assert w.executed_flops == w.flops  # flash: executed = model
    # Q, O: 2 * h * (100 + 300 + 37 = 437) * d * 2 B = 894,976; K, V: 2 * kv * 437 * d * 2 B = 223,744
    assert w.bytes_read == 8 * 437 * 64 * 2 + 2 * 2 * 437 * 64 * 2  # 447,488 + 223,744 = 671,232
    assert w.bytes_written == 8 * 437 * 64 * 2  # 447,488
    assert w.name == "attention (flash, varlen)"


def test_varlen_pairs_per_sequence_causal():
    """Causal, q = k per sequence: l(l+1)/2 each: 5,050 + 45,150 + 703 = 50,903 pairs; FLOPs 4*8*64*50,903."""
    w = ops.attention(3, 8, 512, head_dim=64, kv_heads=2, seq_lens=[100, 300, 37], causal=True)
    assert w.flops == 4 * 8 * 64 * 50_903  # 104,249,344


def test_varlen_queries_and_keys_apart_bottom_right_causal():
    """Sequence 0: 4 queries, 6 keys: 4*6 - 4*3/2 = 18 pairs; sequence 1: 10 queries, 8 keys: 8*9/2 = 36; 54 in all
    (not causal: 24 + 80 = 104)."""
    causal = ops.attention(2, 1, 16, seq_kv=16, head_dim=1, seq_lens=[4, 10], seq_lens_kv=[6, 8], causal=True)
    full = ops.attention(2, 1, 16, seq_kv=16, head_dim=1, seq_lens=[4, 10], seq_lens_kv=[6, 8])
    assert causal.flops == 4 * 54  # 216
    assert full.flops == 4 * 104  # 416


def test_varlen_decode_against_uneven_caches():
    """Decode: 1 query each against caches of 100, 2000, 50 keys (seq_kv 2048): 2,150 pairs per head; h=32, kv=8,
    d=128; K, V read 2 * 8 * 2,150 * 128 * 2 B = 8,806,400."""
    w = ops.attention(3, 32, 1, seq_kv=2048, kv_heads=8, seq_lens_kv=[100, 2000, 50])
    assert w.flops == 4 * 32 * 128 * 2150  # 35,225,600
    assert w.bytes_read == 32 * 3 * 128 * 2 + 2 * 8 * 2150 * 128 * 2  # 24,576 + 8,806,400
    # a decode packs each KV head's 32/8 = 4 query heads as rows: each sequence 4 rows, 3 * 8 products
    assert w.kernels[0].gemm.groups == ((4.0, 100.0, 128.0), (4.0, 2000.0, 128.0), (4.0, 50.0, 128.0))
    assert w.kernels[0].gemm.batch == 3 * 8


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [
    dict(batch=4, heads=8, seq_q=2048),  # 4 x ceil(2048/64) x 8 = 1,024 items: no split
    dict(batch=2, heads=16, seq_q=300, head_dim=64),  # 2 x 5 x 16 = 160 items >= 105.6: no split
    dict(batch=3, heads=32, seq_q=1, seq_kv=4096, kv_heads=8),  # decode, GQA: packed, split-KV in both
])
def test_equal_lengths_are_the_padded_call(shape, causal):
    """With every sequence as long as declared, a varlen call counts and predicts what the padded call does."""
    b, sq = shape["batch"], shape["seq_q"]
    skv = shape.get("seq_kv", sq)
    ragged = ops.attention(**shape, causal=causal, seq_lens=[sq] * b, seq_lens_kv=[skv] * b)
    padded = ops.attention(**shape, causal=causal)
    assert ragged.flops == padded.flops and ragged.bytes_read == padded.bytes_read
    assert ragged.bytes_written == padded.bytes_written
    assert sk.predict(ragged, H200, warn=False).seconds == pytest.approx(sk.predict(padded, H200, warn=False).seconds,
                                                                         rel=1e-12)
    assert models.backward(ragged).flops == models.backward(padded).flops
    assert models.backward(ragged).bytes == models.backward(padded).bytes


def test_varlen_prefill_never_splits_the_keys():
    """2 sequences of 300 (2 heads of 64): padded, 2 x 5 x 2 = 20 items < 105.6 split the keys in 2 (64-query tiles,
    5 x 2 x 2 x 2 = 40 work items); mha_varlen_fwd splits only a packed decode: 128-query tiles, ceil(300/128) = 3 x 2
    x 2 = 12 work items, one wave of 12 / 132 SMs."""
    cal = calibration(H200)
    varlen = kernel_terms(ops.attention(2, 2, 300, head_dim=64, seq_lens=[300, 300]).kernels[0], H200, cal)
    padded = kernel_terms(ops.attention(2, 2, 300, head_dim=64).kernels[0], H200, cal)
    assert dict(padded.variants)["splitkv"] is True and padded.wave_efficiency == pytest.approx(40 / 132, rel=1e-12)
    assert dict(varlen.variants)["splitkv"] is False and varlen.wave_efficiency == pytest.approx(12 / 132, rel=1e-12)
    assert varlen.waves == padded.waves == 1.0
    # a decode with fewer KV heads than query heads is packed (4 query heads of a KV head as rows) and may split
    decode = ops.attention(3, 32, 1, seq_kv=4096, kv_heads=8, seq_lens_kv=[4096, 100, 7])
    assert decode.kernels[0].gemm.split is True
    assert ops.attention(3, 32, 1, seq_kv=4096, seq_lens_kv=[4096, 100, 7]).kernels[0].gemm.split is False  # MHA


def test_self_attention_keys_follow_the_queries():
    """seq_kv none: each sequence's keys are its queries (seq_lens); seq_kv given: seq_kv keys each."""
    own = ops.attention(2, 1, 8, head_dim=1, seq_lens=[3, 8])
    cache = ops.attention(2, 1, 8, seq_kv=20, head_dim=1, seq_lens=[3, 8])
    assert own.flops == 4 * (3 * 3 + 8 * 8)  # 292
    assert cache.flops == 4 * (3 * 20 + 8 * 20)  # 880


@settings(max_examples=40, deadline=None)
@given(lens=st.lists(st.tuples(st.integers(1, 300), st.integers(1, 300)), min_size=1, max_size=6),
       causal=st.booleans(), kv=st.sampled_from([1, 2, 4]))
def test_varlen_is_the_sum_of_its_sequences(lens, causal, kv):
    """A varlen call's FLOPs and bytes are the sums of one call per sequence (batch 1, its own lengths)."""
    q, k = [a for a, _ in lens], [b for _, b in lens]
    w = ops.attention(len(lens), 4, 300, seq_kv=300, head_dim=16, kv_heads=kv, causal=causal, seq_lens=q,
                      seq_lens_kv=k)
    ones = [ops.attention(1, 4, a, seq_kv=b, head_dim=16, kv_heads=kv, causal=causal) for a, b in lens]
    assert w.flops == sum(o.flops for o in ones)
    assert w.bytes == sum(o.bytes for o in ones)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 5000), min_size=1, max_size=8).filter(any), n=st.integers(1, 4096),
       k=st.integers(1, 4096))
def test_grouped_is_the_sum_of_its_groups(sizes, n, k):
    """A grouped GEMM's FLOPs and bytes are the sums of one matmul per group with rows (each reads its B_i)."""
    w = ops.grouped_matmul(sizes, n, k)
    ones = [ops.matmul(g, n, k) for g in sizes if g]
    assert w.flops == sum(o.flops for o in ones)
    assert w.bytes == sum(o.bytes for o in ones)


# ---- varlen attention: bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("value, error, words", [
    ([], ShapeError, "seq_lens must hold at least one length"),
    ([100, 2.5], ShapeError, "seq_lens must be a positive integer, got 2.5 at index 1"),
    ([100, -3], ShapeError, "seq_lens must be a positive integer, got -3 at index 1"),
    ([100, 0], ShapeError, "seq_lens must be a positive integer, got 0 at index 1"),
    ([100, 5000], ShapeError, r"seq_lens must be at most seq_q \(4096, the longest sequence declared\), got 5000 at "
                              r"index 1"),
    ([100], ShapeError, r"seq_lens must hold one length per sequence \(batch=2\), got 1"),
    ([[100, 200]], ShapeError, "seq_lens must be a flat list"),
    (100, ArgumentTypeError, "seq_lens must be a list of integers, one per group, got 100"),
    ("100,200", ArgumentTypeError, "seq_lens must be a list of integers"),
    ({0: 100, 1: 200}, ArgumentTypeError, "seq_lens must be a list of integers"),
    ([True, 200], ArgumentTypeError, "seq_lens must hold numbers, got a bool"),
    (["100", 200], ArgumentTypeError, "seq_lens must be a number or an array of numbers"),
])
def test_bad_seq_lens(value, error, words):
    """Each bad seq_lens is the right solkit error naming the argument (a ValueError or TypeError too)."""
    with pytest.raises(error, match=words):
        ops.attention(2, 8, 4096, seq_lens=value)


def test_bad_seq_lens_kv_and_their_companions():
    """Keys longer than seq_kv, a varlen call of the unfused impl, and an array dimension beside lengths are refused."""
    with pytest.raises(ShapeError, match=r"seq_lens_kv must be at most seq_kv \(1024.*got 2048 at index 0"):
        ops.attention(2, 8, 1, seq_kv=1024, seq_lens_kv=[2048, 10])
    with pytest.raises(ShapeError, match=r"seq_lens_kv must be at most seq_q \(64"):
        ops.attention(1, 8, 64, seq_lens_kv=[65])
    with pytest.raises(OptionError, match="seq_lens needs a fused attention kernel.*impl='naive'"):
        ops.attention(2, 8, 64, impl="naive", seq_lens=[3, 64])
    with pytest.raises(OptionError, match="seq_lens needs a fused attention kernel.*impl='sdpa'"):
        ops.attention(2, 8, 64, kv_heads=2, impl="sdpa", dtype="fp32", seq_lens=[3, 64])
    with pytest.raises(ShapeError, match=r"seq_lens takes one shape: heads must be one value, got an array of shape "
                                         r"\(2,\)"):
        ops.attention(2, np.array([8, 16]), 64, seq_lens=[3, 64])
    for error in (ShapeError, ArgumentTypeError):
        assert issubclass(error, (ValueError, TypeError))


# ---- varlen attention: tiles and waves ---------------------------------------------------------------------


def test_varlen_tiles_per_sequence_no_split():
    """32 heads over sequences of 1000, 3000, 500 (d 128): items ceil(q/64) = 16 + 47 + 8 = 71, x 32 = 2,272 >= 0.8 x 132:
    no split; 128-query tiles 8 + 24 + 4 = 36, x 32 = 1,152 work items: ceil(1,152 / 132) = 9 waves (1,188 slots);
    padding (1024*1000 + 3072*3000 + 512*500) / (1000^2 + 3000^2 + 500^2) = 10,496,000 / 10,250,000."""
    groups = ((1000.0, 1000.0, 128.0), (3000.0, 3000.0, 128.0), (500.0, 500.0, 128.0))
    seconds, wave, split, waves = ragged_attention_compute_time(groups, 32.0, 1.0, 132)
    assert (split, waves) == (False, 9.0)
    assert wave == pytest.approx(1152 / 1188, rel=1e-12)  # 0.9697
    assert seconds == pytest.approx(1.0 * (10_496_000 / 10_250_000) / (1152 / 1188), rel=1e-12)  # 1.0560


def test_varlen_tiles_per_sequence_split_kv():
    """Where the kernel may split (split=True), 8 heads over 100, 300, 37 (d 64): items (2 + 5 + 1) x 8 = 64 < 105.6;
    key blocks ceil(300/256) = 2: s = 1 fills 64/132 = 0.48, s = 2 fills 128/132 = 0.97: 2 splits; 64-query tiles, work 8 x 8 x 2 = 128 in one wave;
    padding (128*100 + 320*300 + 64*37) / 101,369 = 111,168 / 101,369."""
    groups = ((100.0, 100.0, 64.0), (300.0, 300.0, 64.0), (37.0, 37.0, 64.0))
    seconds, wave, split, waves = ragged_attention_compute_time(groups, 8.0, 1.0, 132, split=True)
    assert (split, waves) == (True, 1.0)
    assert wave == pytest.approx(128 / 132, rel=1e-12)
    assert seconds == pytest.approx((111_168 / 101_369) / (128 / 132), rel=1e-12)  # 1.1309


def test_varlen_equal_groups_are_attention_compute_time():
    """Four sequences of 2048 queries and keys, 8 heads: the ragged formula is the padded one."""
    ragged = ragged_attention_compute_time(((2048.0, 2048.0, 128.0),) * 4, 8.0, 1e-3, 132)
    padded = attention_compute_time(2048.0, 2048.0, 128.0, 32.0, 1e-3, 132)
    assert ragged == pytest.approx(padded, rel=1e-12)


def test_predict_reads_the_varlen_tiles_and_their_tail():
    """The H200 prediction of a varlen kernel: 9 waves (above), and unequal sequences add CAUSAL_TAIL of the longest
    tile (128 queries x 3000 keys x d 128, 4 FLOPs a pair, at one SM's share of the matmul rate) times the keys'
    spread, 1 - 500 / 3000 = 5/6."""
    w = ops.attention(3, 32, 3000, seq_lens=[1000, 3000, 500])
    kernel, cal = w.kernels[0], calibration(H200)
    terms = kernel_terms(kernel, H200, cal)
    rate = matmul_rate(cal, H200, "bf16")
    assert terms.waves == 9.0
    balanced = kernel.matrix_flops / rate * (10_496_000 / 10_250_000) / (1152 / 1188)
    longest = 4.0 * 128 * 3000 * 128 / (rate / 132)
    assert terms.t_compute == pytest.approx(balanced + CAUSAL_TAIL * (5 / 6) * longest, rel=1e-12)


def test_a_longer_declared_sequence_changes_nothing():
    """seq_q and seq_kv only bound the lengths: declaring 8192 where the longest is 3000 counts and predicts the same."""
    tight = ops.attention(3, 32, 3000, seq_lens=[1000, 3000, 500], causal=True)
    loose = ops.attention(3, 32, 8192, seq_kv=8192, seq_lens=[1000, 3000, 500], seq_lens_kv=[1000, 3000, 500],
                          causal=True)
    assert (tight.flops, tight.bytes) == (loose.flops, loose.bytes)
    assert sk.predict(tight, H200, warn=False).seconds == sk.predict(loose, H200, warn=False).seconds


# ---- the wave-by-wave view ---------------------------------------------------------------------------------


def test_ragged_waves_by_hand():
    """2 SMs, items of 1, 3, 1, 3 s: in that order two waves of max(1, 3) = 6 s; longest first [3, 3] then [1, 1]: 4 s;
    five items on 2 SMs: 3 waves, the last half empty."""
    assert ragged_waves([1.0, 3.0, 1.0, 3.0], 2) == (6.0, 2.0)  # 3 + 3
    assert ragged_waves([3.0, 3.0, 1.0, 1.0], 2) == (4.0, 2.0)  # 3 + 1
    assert ragged_waves([2.0, 2.0, 2.0, 2.0, 1.0], 2) == (5.0, 3.0)  # 2 + 2 + 1
    # padded to the longest: 4 items of 3 s on 2 SMs, 2 waves = 6 s; by size, longest first: 4 s (1.5x)
    assert ragged_waves([3.0] * 4, 2)[0] / ragged_waves([3.0, 3.0, 1.0, 1.0], 2)[0] == 1.5


# ---- grouped GEMMs of uneven groups ------------------------------------------------------------------------


@hand_checked("grouped_matmul")
def test_grouped_matmul_counts_per_group():
    """Experts of 512, 96, 0, 300 rows, n = 1024, k = 2048, bf16: 908 rows; FLOPs 2*908*1024*2048; bytes A 908*2048,
    the 3 experts with rows' B 3*2048*1024, C 908*1024, 2 B each."""
    w = ops.grouped_matmul([512, 96, 0, 300], 1024, 2048)
    assert w.flops == 2 * 908 * 1024 * 2048  # 3,808,428,032
    assert w.bytes_read == (908 * 2048 + 3 * 2048 * 1024) * 2  # 16,302,080
    assert w.bytes_written == 908 * 1024 * 2  # 1,859,584
    g = w.kernels[0].gemm
    assert g.groups == ((512.0, 1024.0, 2048.0), (96.0, 1024.0, 2048.0), (0.0, 1024.0, 2048.0), (300.0, 1024.0, 2048.0))
    assert (g.m, g.batch) == (512.0, 4.0)
    back = models.backward(w)
    assert back.flops == 2 * w.flops
    # dgrad reads dC 908*1024 and 3 B_i (1024*2048), writes dA 908*2048; wgrad reads A and dC, writes 4 dB_i
    assert back.bytes == ((908 * 1024 + 3 * 1024 * 2048 + 908 * 2048) + (908 * 2048 + 908 * 1024 + 4 * 2048 * 1024)) * 2


def test_equal_groups_are_the_batched_matmul():
    """8 experts of 1024 rows: the counts of matmul(1024, 4096, 4096, batch=8); the physical model's prediction too
    (512 tiles of 128 x 256 >= 132 SMs: the batched GEMM splits nothing). The grouped kernel is torch's, not cuBLAS's
    batched GEMM: it borrows none of the batched GEMMs' neighbour correction (its factor 1)."""
    a, b = ops.grouped_matmul([1024] * 8, 4096, 4096), ops.matmul(1024, 4096, 4096, batch=8)
    assert (a.flops, a.bytes_read, a.bytes_written) == (b.flops, b.bytes_read, b.bytes_written)
    physical = [sk.predict(w, H200, warn=False, neighbours=False).seconds for w in (a, b)]
    assert physical[0] == pytest.approx(physical[1], rel=1e-12)
    grouped = sk.predict(a, H200, warn=False)
    assert grouped.seconds == physical[0] and grouped.kernels[0].neighbour == 1.0
    assert ragged_gemm_time(((1024.0, 4096.0, 4096.0),) * 8, 1.0, 1e15, 132) == pytest.approx(
        gemm_time(1024.0, 4096.0, 4096.0, 8.0, 1e15, 132), rel=1e-12)


def test_grouped_tiles_summed_over_groups():
    """Groups of 1000 and 3000 rows, n = k = 4096, 132 SMs at rate R: 64 x 64 tiles (16 + 47) x 64 = 4,032, ceil(4,032 /
    132) = 31 waves of 2*64*64*4096 FLOPs; every other tile takes longer (128 x 256: 512 tiles, 4 waves of
    2*128*256*4096 = 1,073,741,824 > 31 x 33,554,432 = 1,040,187,392)."""
    rate = 1e15
    seconds, wave, largest = ragged_gemm_time(((1000.0, 4096.0, 4096.0), (3000.0, 4096.0, 4096.0)), 1.0, rate, 132)
    assert seconds == pytest.approx(31 * 2 * 64 * 64 * 4096 / (rate / 132), rel=1e-12)
    assert largest == (8 + 24) * 16  # 128 x 256 tiles: ceil(1000/128) + ceil(3000/128) = 32 rows of 16 columns
    assert wave == pytest.approx(2 * 4000 * 4096 * 4096 / rate / seconds, rel=1e-12)  # 0.9677


def test_grouped_unequal_reduction_costs_the_mean_tile():
    """A weight gradient's groups (k, n, g_i) = (64, 64, 100) and (64, 64, 300) on 4 SMs: one 64 x 64 tile each, one
    wave of the mean tile, 2*64*64*(100 + 300)/2 = 1,638,400 FLOPs at rate / 4."""
    rate = 1e12
    seconds, _, _ = ragged_gemm_time(((64.0, 64.0, 100.0), (64.0, 64.0, 300.0)), 1.0, rate, 4)
    assert seconds == pytest.approx(1_638_400 / (rate / 4), rel=1e-12)


def test_grouped_sweep_of_n_and_k_is_each_shape():
    """n and k take arrays (a sweep); each element counts and predicts what its own call does."""
    sizes = [512, 96, 0, 300]
    n, k = np.array([1024, 4096, 14336]), np.array([2048, 4096, 4096])
    sweep = ops.grouped_matmul(sizes, n, k)
    assert list(sweep.flops) == [2 * 908 * 1024 * 2048, 2 * 908 * 4096 * 4096, 2 * 908 * 14336 * 4096]
    seconds = sk.predict(sweep, H200, warn=False).seconds
    for i in range(3):
        one = ops.grouped_matmul(sizes, int(n[i]), int(k[i]))
        assert one.bytes == sweep.bytes[i]
        assert seconds[i] == pytest.approx(sk.predict(one, H200, warn=False).seconds, rel=1e-12)


def test_bad_group_sizes():
    """Bad group sizes are shape or type errors naming group_sizes; a group may hold 0 rows, not all of them."""
    for value, error, words in (
            ([], ShapeError, "group_sizes must hold at least one length"),
            ([0, 0], ShapeError, "group_sizes must give at least one group a row"),
            ([8, -1], ShapeError, "group_sizes must be an integer >= 0, got -1 at index 1"),
            ([8, 1.5], ShapeError, "group_sizes must be an integer >= 0, got 1.5 at index 1"),
            (8, ArgumentTypeError, "group_sizes must be a list of integers"),
            ("8", ArgumentTypeError, "group_sizes must be a list of integers")):
        with pytest.raises(error, match=words):
            ops.grouped_matmul(value, 1024, 2048)


# ---- the ATen adapters -------------------------------------------------------------------------------------


def _flash_varlen(total_q: int, total_k: int, b: int, max_q: str, causal: str) -> Mapped | Unmapped:
    """_flash_attention_forward(q [total_q, 32, 128], k, v [total_k, 8, 128], cum_seq_q, cum_seq_k [b + 1], max_q,
    max_k, dropout_p, is_causal, return_debug_mask, scale)."""
    return map_call("aten::_flash_attention_forward",
                    ((total_q, 32, 128), (total_k, 8, 128), (total_k, 8, 128), (b + 1,), (b + 1,), (), (), (), (), (), ()),
                    (BF, BF, BF, "int", "int", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", ""),
                    ("", "", "", "", "", max_q, max_q, "0.", causal, "False", ""))


def test_flash_varlen_in_a_trace_is_balanced():
    """4 packed sequences of 8,192 queries and keys, causal: 2,048 each (balanced, noted); max_seqlen 4096 declared;
    pairs 4 x 2048*2049/2 = 8,392,704; FLOPs 4*32*128*8,392,704."""
    r = _flash_varlen(8192, 8192, 4, "4096", "True")
    assert isinstance(r, Mapped)
    assert r.arguments["seq_lens"] == [2048] * 4 and r.arguments["seq_q"] == 4096
    assert r.workload.flops == 4 * 32 * 128 * 8_392_704  # 137,506,062,336
    assert BALANCED_SEQUENCES in r.notes


def test_flash_varlen_uneven_total_keeps_the_sum():
    """10 queries over 4 sequences: 3, 3, 2, 2 (the sum exact); not causal: 9 + 9 + 4 + 4 = 26 pairs per head."""
    r = _flash_varlen(10, 10, 4, "3", "False")
    assert isinstance(r, Mapped) and r.arguments["seq_lens"] == [3, 3, 2, 2]
    assert r.workload.flops == 4 * 32 * 128 * 26  # 425,984


def test_flash_varlen_shorter_max_seqlen_is_unmapped():
    """max_seqlen_q below the mean sequence cannot be: Unmapped, saying so."""
    r = _flash_varlen(8192, 8192, 4, "1024", "False")
    assert isinstance(r, Unmapped) and "shorter than the mean sequence" in r.reason


def test_efficient_varlen_packed_in_a_batch_of_one():
    """_efficient_attention_forward(q [1, 600, 8, 64], k, v, bias, cu_seqlens_q, cu_seqlens_k [3], max_q, max_k,
    dropout, custom_mask_type 2 (causal, bottom right)): 2 sequences of 300; 2 x 300*301/2 = 90,300 pairs."""
    r = map_call("aten::_efficient_attention_forward",
                 ((1, 600, 8, 64), (1, 600, 8, 64), (1, 600, 8, 64), (), (3,), (3,), (), (), (), (), (), ()),
                 (BF, BF, BF, "", "int", "int", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", ""),
                 ("", "", "", "", "", "", "300", "300", "0.", "2", "True", ""))
    assert isinstance(r, Mapped) and r.arguments["impl"] == "efficient"
    assert r.workload.flops == 4 * 8 * 64 * 90_300  # 184,934,400


def test_grouped_mm_in_a_trace():
    """_grouped_mm(a [4096, 2048], b [8, 2048, 1024], offs [8]): 512 rows each (balanced, noted); a [8, 64, 2048] @
    b [8, 2048, 1024]: 8 equal groups of 64, exact; grouped columns [8, 64, 2048] @ [2048, 4096]: Unmapped."""
    r = map_call("aten::_grouped_mm", ((4096, 2048), (8, 2048, 1024), (8,), (), ()), (BF, BF, "int", "", ""),
                 ("", "", "", "", ""))
    assert isinstance(r, Mapped) and r.arguments["group_sizes"] == [512] * 8 and BALANCED_GROUPS in r.notes
    assert r.workload.flops == 2 * 4096 * 1024 * 2048  # 17,179,869,184
    r = map_call("aten::_grouped_mm", ((8, 64, 2048), (8, 2048, 1024)), (BF, BF), ("", ""))
    assert isinstance(r, Mapped) and r.arguments["group_sizes"] == [64] * 8 and not r.notes
    r = map_call("aten::_grouped_mm", ((8, 64, 2048), (2048, 4096), (8,)), (BF, BF, "int"), ("", "", ""))
    assert isinstance(r, Unmapped) and "grouped columns are not" in r.reason


def test_grouped_reduction_in_a_trace_is_the_wgrad_kernel():
    """_grouped_mm(a [2048, 4096], b [4096, 1024], offs [8]) -> [8, 2048, 1024]: a weight gradient, the reduction of
    4096 split 512 each; FLOPs 2 x 2048 x 4096 x 1024; reads a and b, writes 8 x 2048 x 1024 (bf16)."""
    r = map_call("aten::_grouped_mm", ((2048, 4096), (4096, 1024), (8,)), (BF, BF, "int"), ("", "", ""))
    assert isinstance(r, Mapped) and BALANCED_GROUPS in r.notes
    w = r.workload
    assert w.flops == 2 * 2048 * 4096 * 1024  # 17,179,869,184
    assert w.bytes_read == (2048 * 4096 + 4096 * 1024) * 2  # 25,165,824
    assert w.bytes_written == 8 * 2048 * 1024 * 2  # 33,554,432
    g = w.kernels[0].gemm
    assert g.groups == ((2048.0, 1024.0, 512.0),) * 8 and g.layout == "wgrad"


def test_given_sizes_replace_the_balanced_assumption():
    """A mapped call's arguments with the real lengths: what ops takes (here 1,000 + 7,192 queries, causal)."""
    r = _flash_varlen(8192, 8192, 2, "7192", "True")
    assert isinstance(r, Mapped)
    w = ops.attention(**{**r.arguments, "seq_lens": [1000, 7192], "seq_lens_kv": [1000, 7192]})
    assert w.flops == 4 * 32 * 128 * (1000 * 1001 // 2 + 7192 * 7193 // 2)  # 500,500 + 25,866,028 pairs
    assert math.isfinite(sk.predict(w, H200, warn=False).seconds)


def test_capture_maps_a_varlen_flash_call():
    """Captured on meta tensors, _flash_attention_forward over 4,096 packed tokens of 2 sequences (cum_seq [3], max
    2048), 32 query and 8 KV heads of 128, causal: 2 x 2048*2049/2 = 4,196,352 pairs; 4*32*128 x that FLOPs."""
    torch = pytest.importorskip("torch", reason="capture needs PyTorch (pip install torch==2.13.0, the CPU build)")

    def varlen(q, k, v, cum_q, cum_k):
        return torch.ops.aten._flash_attention_forward(q, k, v, cum_q, cum_k, 2048, 2048, 0.0, True, False)[0]

    q = torch.empty(4096, 32, 128, dtype=torch.bfloat16, device="meta")
    k = torch.empty(4096, 8, 128, dtype=torch.bfloat16, device="meta")
    cum = torch.empty(3, dtype=torch.int32, device="meta")
    w = sk.capture(varlen, q, k, k, cum, cum)
    assert w.flops == 4 * 32 * 128 * 4_196_352  # 68,753,031,168
    assert w.kernels[0].gemm.groups == ((2048.0, 2048.0, 128.0),) * 2
    assert BALANCED_SEQUENCES in w.recipe.notes


@pytest.mark.parametrize("argv, flops", [
    (("attention", "--batch", "2", "--heads", "1", "--seq-q", "8", "--head-dim", "1", "--seq-lens", "3,8"),
     4 * (3 * 3 + 8 * 8)),  # 292
    (("attention", "--batch", "1", "--heads", "1", "--seq-q", "8", "--head-dim", "1", "--seq-lens", "5"), 4 * 5 * 5),
    (("grouped_matmul", "--group-sizes", "3,0,5", "--n", "4", "--k", "2"), 2 * 8 * 4 * 2),  # 128
])
def test_the_cli_takes_a_list_of_lengths_as_one_value(capsys, argv, flops):
    """`solkit op NAME --seq-lens 3,8` is one list of lengths (not a sweep); a single length is a list of one."""
    assert main(["op", *argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model_flops"] == flops


def test_capture_maps_a_grouped_mm_to_one_grouped_kernel():
    """Captured on meta tensors, bf16 torch._grouped_mm(a [1000, 256], b [4, 256, 512], offs [4]): one grouped kernel
    of 4 experts of 1000 / 4 = 250 rows (balanced, noted); FLOPs 2 x 1000 x 512 x 256 = 262,144,000."""
    torch = pytest.importorskip("torch", reason="capture needs PyTorch (pip install torch==2.13.0, the CPU build)")
    a = torch.empty(1000, 256, dtype=torch.bfloat16, device="meta")
    b = torch.empty(4, 512, 256, dtype=torch.bfloat16, device="meta").transpose(-2, -1)  # each B_i column-major
    offs = torch.empty(4, dtype=torch.int32, device="meta")
    w = sk.capture(lambda x, y, o: torch._grouped_mm(x, y, offs=o), a, b, offs)
    assert w.flops == 2 * 1000 * 512 * 256
    assert len(w.kernels) == 1 and w.kernels[0].gemm.groups == ((250.0, 512.0, 256.0),) * 4
    assert BALANCED_GROUPS in w.recipe.notes


def test_one_key_fewer_in_one_sequence_moves_the_time_by_as_little():
    """Four non-causal sequences of 2,048 against [2048, 2047, 2048, 2048]: the unequal-tile tail is scaled by the
    spread 1 - 2047/2048 = 1/2048, so the time moves by well under 0.1% (the whole tail, +3%, before)."""
    h200 = sk.load_gpu("h200")
    even = sk.predict(ops.attention(4, 32, 2048, kv_heads=8, impl="flash"), h200).seconds
    short = sk.predict(ops.attention(4, 32, 2048, kv_heads=8, impl="flash", seq_lens=[2048, 2047, 2048, 2048]),
                       h200).seconds
    assert abs(short / even - 1) < 1e-3
    same = sk.predict(ops.attention(4, 32, 2048, kv_heads=8, impl="flash", seq_lens=[2048] * 4), h200).seconds
    assert same == even  # equal sequences: no tail, the padded call exactly
