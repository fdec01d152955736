"""Issue 31's kernel physics: cuDNN's SDPA decode kernel (split-KV work items), grouped convs, the native NCHW
depthwise kernel's per-output cost; and the sampler's weak-family mix that measured them."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

import solkit as sk
from solkit import ops
from solkit.prediction import calibration, kernel_terms
from solkit.prediction.gpu import matmul_rate
from solkit.prediction.tiles import decode_items
from solkit.stacks.torch211 import DEPTHWISE_OUTPUT_MACS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from measuring import sampling  # noqa: E402

SMS = 132  # H200


def test_decode_items_split_few_items_with_many_keys():
    """8 items of 8192 keys (d = 128: blocks of 128 keys, 64 blocks): flash's heuristic over the eligible splits
    (1-8, 10, 11, 13, 16, 22, 32, 64) finds the best wave efficiency 8 x 16 / 132 = 0.9697 (also at 32 and 64) and takes
    the smallest split within 0.85 of it: 13 gives 104 / 132 = 0.788 < 0.824, 16 gives 0.9697: 16 splits, 128 items."""
    assert decode_items(8.0, 8192.0, 128.0, SMS, 64, 512) == (16.0, 128.0)


@pytest.mark.parametrize("items, keys, expected", [
    (100.0, 8192.0, (1.0, 100.0)),  # more than 64 items: no split
    (8.0, 512.0, (1.0, 8.0)),  # 512 keys, not more: no split
    (66.0, 100000.0, (1.0, 66.0)),  # 66 > 64 items
])
def test_decode_items_no_split(items, keys, expected):
    """No split where more than 64 items, or at most 512 keys each (the seed-2050 census)."""
    assert decode_items(items, keys, 128.0, SMS, 64, 512) == expected


def test_decode_items_broadcast_like_the_scalar():
    """A sweep gives each element's scalar answer."""
    items, keys = np.array([8.0, 100.0, 8.0]), np.array([8192.0, 8192.0, 512.0])
    splits, work = decode_items(items, keys, 128.0, SMS, 64, 512)
    assert splits.tolist() == [16.0, 1.0, 1.0] and work.tolist() == [128.0, 100.0, 8.0]


def test_cudnn_decode_kernel_streams_its_items():
    """SDPA decode, b = 2, h = 32, kv = 4 (8 query rows per KV head), 8192 keys, d = 128, bf16, on the H200 (cuDNN):
    items = b x kv = 8, split 16 ways (above): 128 work items, one wave over 132 SMs, each streaming
    (Q + O + K + V) / 128 = (2 x 2x32x1x128 x 2 + 2 x 2x4x8192x128 x 2) / 128 = 33,587,200 / 128 = 262,400 bytes;
    two launches (the reduction); compute at the bf16 rate with no query-tile padding: 4 x 2x32x128x8192 = 268,435,456
    FLOPs."""
    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    kernel = ops.attention(2, 32, 1, seq_kv=8192, head_dim=128, kv_heads=4, impl="sdpa").kernels[0]
    t = kernel_terms(kernel, gpu, cal)
    assert t.op == "cudnn_attention"
    flags = dict(t.variants)
    assert flags["decode"] and flags["decodesplit"] and not flags["decodewide"]
    assert t.waves == 1.0 and t.block_bytes == pytest.approx(262_400.0) and t.launches == 2.0
    assert t.t_compute == pytest.approx(268_435_456 / matmul_rate(cal, gpu, "bf16"), rel=1e-12)


def test_cudnn_decode_wide_heads_and_many_items():
    """d = 256 is the wide decode key; 64 x 2 = 128 items (more than 64) are not split: one launch, ceil(128 / 132) = 1
    wave of (2 x 64x16x1x256 x 2 + 2 x 64x2x1000x256 x 2) / 128 = (1,048,576 + 131,072,000) / 128 = 1,032,192 bytes
    each."""
    gpu = sk.load_gpu("h200")
    kernel = ops.attention(64, 16, 1, seq_kv=1000, head_dim=256, kv_heads=2, impl="sdpa").kernels[0]
    t = kernel_terms(kernel, gpu, calibration(gpu))
    flags = dict(t.variants)
    assert flags["decode"] and not flags["decodesplit"] and flags["decodewide"]
    assert t.launches == 1.0 and t.waves == 1.0 and t.block_bytes == pytest.approx(1_032_192.0)


def test_prefill_attention_is_not_a_decode_kernel():
    """128 queries per head (MHA): more query rows than one 64-row tile, the prefill kernel."""
    gpu = sk.load_gpu("h200")
    kernel = ops.attention(2, 8, 128, head_dim=128, impl="sdpa").kernels[0]
    assert not dict(kernel_terms(kernel, gpu, calibration(gpu)).variants).get("decode", False)


@pytest.mark.parametrize("layout, native", [("nchw", True), ("nhwc", False)])
def test_depthwise_conv_compute_time(layout, native):
    """Depthwise 3x3, N = 2, C = K = groups = 64, 32x32, padding 1: 2x32x32 = 2,048 output pixels x 64 channels =
    131,072 outputs, 2 x 131,072 x 9 = 2,359,296 FLOPs on CUDA cores; PyTorch's native NCHW kernel adds 2 x 14 x 131,072
    = 3,670,016 FLOPs' time for its index arithmetic (6,029,312 in all), cuDNN's NHWC kernel does not."""
    gpu = sk.load_gpu("h200")
    kernel = next(k for k in ops.conv2d(2, 64, 32, 32, 64, kernel=3, padding=1, groups=64, layout=layout).kernels
                  if k.kind == "conv")
    t = kernel_terms(kernel, gpu, calibration(gpu))
    flags = dict(t.variants)
    assert flags["depthwise"] and bool(flags["nativedw"]) == native and not flags["grouped"]
    flops = 2_359_296 + (2 * DEPTHWISE_OUTPUT_MACS * 131_072 if native else 0.0)  # 6,029,312 or 2,359,296
    assert t.t_compute == pytest.approx(flops / gpu.peak_flops("fp32", "vector"), rel=1e-12)


def test_grouped_convs_have_their_own_key():
    """groups = 4 of 16 input channels each: the grouped variant, which wins over unaligned; a dense conv is not grouped."""
    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    grouped = ops.conv2d(4, 64, 16, 16, 128, kernel=3, padding=1, groups=4).kernels[0]
    dense = ops.conv2d(4, 64, 16, 16, 128, kernel=3, padding=1).kernels[0]
    flags = dict(kernel_terms(grouped, gpu, cal).variants)
    assert flags["grouped"] and not flags["depthwise"] and [n for n, m in kernel_terms(grouped, gpu, cal).variants][-1] == "grouped"
    assert not dict(kernel_terms(dense, gpu, cal).variants)["grouped"]


@pytest.mark.parametrize("layout, helper_bytes, launches", [
    # x 2x96x16x16 x 2 B = 98,304 and w 120x12 x 2 B = 2,880: 101,184 read; y 2x120x16x16 x 2 B = 122,880 written.
    # NHWC: 3 x 101,184 (x and w padded in) + 2 x 122,880 (y padded, copied back) = 549,312 B; 1 + 4 + 1 = 6 launches
    ("nhwc", 549_312.0, 6.0),
    # NCHW: a stride-1, unpadded 1x1 is modelled as a direct GEMM, padded no more than a dense 1x1: 1 launch (NB: cuDNN
    # ran 5 of the 12 such seed-2054 convs with layout transforms and padding: CUDNN_GROUPED_PAD_BACK's note)
    ("nchw", 0.0, 1.0),
])
def test_a_grouped_conv_of_unaligned_channels_runs_on_padded_copies(layout, helper_bytes, launches):
    """groups = 8 of 12 input and 15 output channels each (24 and 30 bytes: not multiples of 16), a 1x1 filter: in NHWC
    cuDNN pads x and w per group, writes y padded and copies it back (1x1 included, as it is for no dense conv)."""
    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    kernel = next(k for k in ops.conv2d(2, 96, 16, 16, 120, kernel=1, groups=8, layout=layout).kernels if k.kind == "conv")
    assert (kernel.bytes_read, kernel.bytes_written) == (101_184.0, 122_880.0)
    t = kernel_terms(kernel, gpu, cal)
    assert dict(t.variants)["unaligned"] and dict(t.variants)["grouped"]
    assert (t.helper_bytes, t.launches) == (helper_bytes, launches)
    # the same channels ungrouped (96 in, 120 out: multiples of 8) and a dense 1x1 of unaligned channels pad nothing
    for dense in (ops.conv2d(2, 96, 16, 16, 120, kernel=1), ops.conv2d(2, 92, 16, 16, 116, kernel=1)):
        t = kernel_terms(dense.kernels[0], gpu, cal)
        assert (t.helper_bytes, t.launches) == (0.0, 1.0)


@pytest.mark.parametrize("family", sampling.MIXES["weak"])
def test_weak_families_stay_in_their_declared_space(family):
    """Every case drawn from each weak family lies in its space and is measured as the family solkit models it by."""
    cases = sampling.sample_set("fit", 60, seed=2050, families=[family])
    assert len(cases) == 60
    for c in cases:
        assert sampling.check_case(c, family) == [], (c.id, sampling.check_case(c, family))
        assert c.family == sampling.DRAWN_AS.get(family, "bmm" if c.params.get("batch", 1) > 1 else "matmul")


def test_the_weak_mix_draws_its_five_families_and_long_caches():
    """'weak' names the five families; its decode draws reach KV caches of more than 1 GiB (2 x b x kv x skv x d x 2 B)."""
    assert sampling.MIXES["weak"] == ("sdpa_decode", "conv_dense", "conv_grouped", "tf32", "causal")
    cases = sampling.sample_set("fit", 300, seed=2050, families=["weak"])
    decode = [c.params for c in cases if c.family == "sdpa"]
    assert {c.family for c in cases} == {"sdpa", "conv2d", "matmul", "bmm", "attention"}
    assert max(2 * p["batch"] * p["kv_heads"] * p["seq_kv"] * p["head_dim"] * 2 for p in decode) > 2 ** 30
    assert all(p["seq_q"] == 1 for p in decode)
    grouped = [c.params for c in cases if c.family == "conv2d" and 1 < c.params["groups"] < c.params["in_channels"]]
    assert grouped and all(p["in_channels"] % p["groups"] == 0 == p["out_channels"] % p["groups"] for p in grouped)
    assert math.isclose(sampling.EXTRA_SPACE["tf32"]["dtypes"]["tf32"], 1.0)


def _set(cases: list[tuple[float, float]], role: str) -> "object":
    """An in-memory sampled measurement set of bf16 m x 4096 x 4096 GEMMs: (m, measured seconds) each."""
    from solkit.calibration.data import MeasuredCase, MeasurementSet

    rows = tuple(MeasuredCase(id=f"matmul/matmul/m={m:g}", family="matmul", op="matmul",
                              params={"m": m, "n": 4096, "k": 4096, "dtype": "bf16"}, impl_note="", seconds=s, ok=True)
                 for m, s in cases)
    return MeasurementSet(meta={"args": {"sample": role}}, ceilings={}, cases=rows)


@pytest.mark.parametrize("slower, off", [(1.0, ["matmul"]), (2.0, [])])
def test_the_switch_turns_off_a_key_the_correction_made_worse(slower, off):
    """A bank set whose 12 GEMMs ran 2x the physical model, and a validation set of 12 shapes between them that ran
    ``slower`` x it: at 1x the correction (pulling toward 2x) raises every validation error, so "matmul" is switched
    off; at 2x it lowers them, so it stays on."""
    from solkit.calibration.neighbours import bank_rows, switched_off

    gpu = sk.load_gpu("h200")
    physical = calibration(gpu).replace(neighbours=None)

    def model(m: float) -> float:
        return float(sk.predict(ops.matmul(m, 4096.0, 4096.0), gpu, neighbours=False).seconds)

    ms = [2048.0 + 256.0 * i for i in range(12)]
    bank = _set([(m, 2.0 * model(m)) for m in ms], "fit")
    validation = _set([(m + 128.0, slower * model(m + 128.0)) for m in ms], "validation")
    named = [("bank", bank_rows(bank, gpu, physical)), ("validation", bank_rows(validation, gpu, physical))]
    assert switched_off(named, ["validation"], gpu, physical) == off
    # the sets matched by file name: fit --write's --bank paths and the manifest's data/NAME need not name one folder
    moved = [("data/bank.json", named[0][1]), ("./data/validation.json", named[1][1])]
    assert switched_off(moved, ["data/validation.json"], gpu, physical) == off


def test_the_fp32_sdpa_family_draws_both_backends_and_every_kernel_class():
    """'sdpa_fp32': fp32 SDPA only, inside its space; MHA (the memory-efficient kernel) and GQA (the math path), decode
    and prefill, and head dims in each of the efficient kernel's three classes (<= 64, 65..128, > 128)."""
    cases = sampling.sample_set("fit", 120, seed=2056, families=["sdpa_fp32"])
    assert len(cases) == 120
    for c in cases:
        assert sampling.check_case(c, "sdpa_fp32") == [], (c.id, sampling.check_case(c, "sdpa_fp32"))
        assert c.family == "sdpa" and c.params["dtype"] == "fp32"
    p = [c.params for c in cases]
    assert {(q["seq_q"] == 1, q["kv_heads"] < q["heads"]) for q in p} == {(True, True), (True, False), (False, True),
                                                                         (False, False)}
    assert {0 if q["head_dim"] <= 64 else 1 if q["head_dim"] <= 128 else 2 for q in p} == {0, 1, 2}
    assert max(q["seq_kv"] for q in p if q["seq_q"] == 1) > 32768  # caches past the default sdpa family's 32k keys
