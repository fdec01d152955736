"""The memory-efficient attention kernel (what fp32 SDPA runs without GQA) as PyTorch's cutlass kernels run it, and the
kernel fit's second stage that fits it (issue 31)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

import solkit as sk
from solkit import ops
from solkit.errors import OptionError
from solkit.prediction import calibration, kernel_seconds, kernel_terms
from solkit.prediction.tiles import efficient_attention_loop
from solkit.stacks.torch211 import EFFICIENT_KERNELS

DATA = Path(__file__).resolve().parents[1] / "data"
FIT = DATA / "h200_sdpafp32_fit_seed2056.json"
HALF_FIT = DATA / "h200_efficienthalf_fit_seed2057.json"
SMS = 132  # the H200's SMs


def test_one_block_over_a_long_cache_walks_every_key_block():
    """fp32, head dim 72 (the 64 x 128 kernel: 8 warps, 12 // 8 = 1 block an SM), one query, one head, 18,854 keys:
    1 block, ceil(18,854 / 128) = 148 key blocks in one wave; tile FLOPs 4 x 64 x 128 x 128 (kMaxK) x 148 =
    620,756,992."""
    flops, waves, steps, wide, gmem = efficient_attention_loop(1.0, 18854.0, 72.0, 1.0, 1.0, "fp32", SMS)
    assert (waves, steps, wide, gmem) == (1.0, 148.0, True, False)
    assert flops == 4 * 64 * 128 * 128 * 148  # 620,756,992


def test_resident_blocks_set_the_waves():
    """fp32, head dim 64 (the 64 x 64 kernel: 4 warps, 12 // 4 = 3 blocks an SM): 400 one-query heads fill
    ceil(400 / (132 x 3)) = 2 waves; 1,000 keys are ceil(1000 / 64) = 16 key blocks each, so a wave walks
    max(16 / 2, 16) = 16. In bf16 the budget is 16 warps: 4 blocks an SM, ceil(400 / 528) = 1 wave."""
    _, waves, steps, _, _ = efficient_attention_loop(1.0, 1000.0, 64.0, 400.0, 1.0, "fp32", SMS)
    assert (waves, steps) == (2.0, 16.0)
    assert efficient_attention_loop(1.0, 1000.0, 64.0, 400.0, 1.0, "bf16", SMS)[1] == 1.0


def test_a_causal_gmem_block_walks_its_mean_or_the_longest():
    """Head dim 256 (the 32 x 128 gmem kernel, 3 blocks an SM), causal 1,000 x 1,000 over 10 heads: ceil(1000 / 32) x 10
    = 320 blocks in ceil(320 / 396) = 1 wave; the unmasked share is (1000 x 1001 / 2) / 1000^2 = 0.5005 of
    ceil(1000 / 128) = 8 key blocks (mean 4.004), and one wave walks the longest block's 8. Tile FLOPs over the mean
    walk, at the actual head dim: 4 x 32 x 128 x 256 x 320 x 4.004 = 5,374,077,829.12."""
    share = (1000 * 1001 / 2) / 1000 ** 2
    flops, waves, steps, wide, gmem = efficient_attention_loop(1000.0, 1000.0, 256.0, 10.0, share, "fp32", SMS)
    assert (waves, steps, wide, gmem) == (1.0, 8.0, False, True)
    assert flops == pytest.approx(4 * 32 * 128 * 256 * 320 * 8 * share, rel=1e-12)  # 5,374,077,829.12


def test_many_waves_walk_the_mean():
    """Head dim 128, causal 4,096 x 4,096 over 64 heads: ceil(4096 / 64) x 64 = 4,096 blocks, 1 an SM: ceil(4096 / 132)
    = 32 waves; share (4096 x 4097 / 2) / 4096^2 = 0.5001220703125 of 32 key blocks: 16.00390625 a block, more than the
    longest's 32 / 32 = 1 a wave."""
    share = (4096 * 4097 / 2) / 4096 ** 2
    _, waves, steps, _, _ = efficient_attention_loop(4096.0, 4096.0, 128.0, 64.0, share, "fp32", SMS)
    assert (waves, steps) == (32.0, 32 * share)  # 16.00390625


def test_a_sweep_is_the_scalar_path_element_by_element():
    m, n, d, b = (np.array(x, dtype=float) for x in ([1, 64, 700, 1], [18854, 300, 700, 17], [72, 32, 256, 128],
                                                      [1, 900, 12, 2000]))
    share = np.array([1.0, 1.0, 0.5, 1.0])
    swept = efficient_attention_loop(m, n, d, b, share, "fp32", SMS)
    for i in range(4):
        one = efficient_attention_loop(float(m[i]), float(n[i]), float(d[i]), float(b[i]), float(share[i]), "fp32", SMS)
        assert [float(x[i]) for x in swept] == [float(x) for x in one]


def test_kernel_terms_of_fp32_sdpa_decode():
    """SDPA in fp32 without GQA runs the efficient kernel: no split over the keys (the variants say its class), its
    waves and key blocks as above; with GQA forced onto it, no query heads are packed (8 heads: 8 blocks)."""
    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    t = kernel_terms(ops.attention(1, 1, 1, 18854, 72, dtype="fp32", impl="sdpa").kernels[0], gpu, cal)
    assert t.op == "efficient_attention" and [name for name, m in t.variants if m] == ["keys128"]
    assert (t.waves, t.k_steps) == (1.0, 148.0)
    g = ops.attention(1, 8, 1, 1000, 64, kv_heads=2, dtype="fp32", impl="efficient").kernels[0].gemm
    assert (g.m, g.batch) == (1.0, 8.0)  # flash packs h / kv = 4 query heads a row: (4, 2)
    flash = ops.attention(1, 8, 1, 1000, 64, kv_heads=2, dtype="bf16", impl="flash").kernels[0].gemm
    assert (flash.m, flash.batch) == (4.0, 2.0)


def test_the_long_cache_case_by_hand():
    """The seed-2055 case that found the model (one fp32 head over 18,854 keys, head dim 72; measured 1,692.4 us):
    launch floor + wave latency + 148 key blocks x the 64 x 128 kernel's k-step, from the spec's own figures
    (4.0 + 0.25 + 148 x 11.25 = 1,669.25 us), within 2% of the measurement."""
    spec = sk.load_gpu("h200").measured
    by_hand = (spec.launch_floor_us + spec.wave_latency_us["efficient_attention_keys128"]
               + 148 * spec.kstep_latency_us["efficient_attention_keys128"]) * 1e-6
    w = ops.attention(1, 1, 1, 18854, 72, dtype="fp32", impl="sdpa")
    assert float(sk.predict(w, "h200", neighbours=False).seconds) == pytest.approx(by_hand, rel=1e-12)
    case = next(c for c in json.loads((DATA / "h200_sdpa_test_seed2055.json").read_text())["cases"]
                if c["params"] == {"batch": 1, "heads": 1, "seq_q": 1, "seq_kv": 18854, "head_dim": 72, "kv_heads": 1,
                                   "causal": False, "impl": "flash", "dtype": "fp32"})
    assert by_hand == pytest.approx(case["seconds"], rel=0.02)  # measured 1,692.4 us


def _cases(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cases"] if c["ok"] and c["params"]["kv_heads"] == c["params"]["heads"]]


@pytest.mark.parametrize("name", ["h200_sdpafp32_fit_seed2056.json", "h200_sdpafp32_validation_seed2056.json",
                                  "h200_sdpafp32_test_seed2056.json", "h200_efficienthalf_fit_seed2057.json",
                                  "h200_efficienthalf_validation_seed2057.json"])
def test_the_census_ran_the_kernel_class_of_each_head_dim(name):
    """Every MHA case of the fp32 SDPA (seed 2056) and forced 16-bit efficient (seed 2057) draws ran the kernel
    EFFICIENT_KERNELS names for its head dim (the first whose kMaxK holds it), its queries x keys a block in the kernel's
    name, in its own precision."""
    cases = _cases(DATA / name)
    assert len(cases) >= 100
    for c in cases:
        d, dtype = c["params"]["head_dim"], {"fp32": "f32", "bf16": "bf16", "fp16": "f16"}[c["params"]["dtype"]]
        _, qb, kb = next(k for k in EFFICIENT_KERNELS if d <= k[0])
        names = {k["name"].split("(")[0] for k in c["kernels"] if "fmha_cutlassF" in k["name"]}
        assert len(names) == 1 and f"_{dtype}_aligned_{int(qb)}x{int(kb)}_" in names.pop(), (c["id"], names)


@pytest.mark.parametrize("path, keys", [
    (FIT, ("efficient_attention", "efficient_attention_keys128", "efficient_attention_gmem")),
    (HALF_FIT, ("efficient_attention_half", "efficient_attention_halfkeys128", "efficient_attention_halfgmem"))])
def test_the_fitted_key_block_latencies_are_the_measured_walks(path, keys):
    """Each class's fitted kstep_latency is within 10% of the median time per key block of the fit draw's one-wave
    decodes that walk at least 8 key blocks (the census's kernel time / key blocks: no launch, no fit); fp32's
    (3xTF32: three MMAs a product) 2.4-3.1x the 16-bit kernels'."""
    spec = sk.load_gpu("h200").measured
    fitted = {i: spec.kstep_latency_us[key] for i, key in enumerate(keys)}
    per: dict[int, list[float]] = {0: [], 1: [], 2: []}
    for c in _cases(path):
        p = c["params"]
        cls = next(i for i, k in enumerate(EFFICIENT_KERNELS) if p["head_dim"] <= k[0])
        kb = EFFICIENT_KERNELS[cls][2]
        blocks = math.ceil(p["seq_kv"] / kb)
        if p["seq_q"] == 1 and p["batch"] * p["heads"] <= SMS and blocks >= 8:
            per[cls].append(sum(k["us"] for k in c["kernels"] if "fmha_cutlassF" in k["name"]) / blocks)
    for cls, times in per.items():
        assert len(times) >= 5 and fitted[cls] == pytest.approx(statistics.median(times), rel=0.10), (cls, times)
    half = ("efficient_attention_half", "efficient_attention_halfkeys128", "efficient_attention_halfgmem")
    full = ("efficient_attention", "efficient_attention_keys128", "efficient_attention_gmem")
    assert all(2.4 <= spec.kstep_latency_us[f] / spec.kstep_latency_us[h] <= 3.1 for f, h in zip(full, half))


def test_the_second_stage_moves_only_its_keys():
    """A keyed file refits the entries of its prefix's keys alone: on a small fit (the catalogue's norms, softmaxes,
    adds and GEMMs) with the seed-2056 fp32 SDPA draw keyed, every other parameter is the first stage's, bit for bit."""
    from solkit.calibration import load_measurements
    from solkit.calibration.fitting import fit_kernels

    gpu = sk.load_gpu("h200")
    catalogue = load_measurements(DATA / "h200_measurements.json")
    small = catalogue.model_copy(update={"cases": tuple(c for c in catalogue.cases if c.op in
                                                        {"rmsnorm", "layernorm", "softmax", "add", "matmul"})})
    alone = fit_kernels(small, gpu).calibration
    keyed = fit_kernels(small, gpu, keyed=[(load_measurements(FIT), "efficient_attention")]).calibration
    assert keyed.kernel_gap == alone.kernel_gap and keyed.overlap_exponent == alone.overlap_exponent
    for table in ("kernel_latency", "compute_efficiency", "memory_efficiency", "wave_latency", "kstep_latency",
                  "block_bandwidth"):
        mine = {k: v for k, v in getattr(keyed, table).items() if not k.startswith("efficient_attention")}
        assert mine == dict(getattr(alone, table)), table
    assert {"efficient_attention", "efficient_attention_keys128", "efficient_attention_gmem"} <= set(keyed.kstep_latency)
    assert 5e-6 < keyed.kstep_latency["efficient_attention_keys128"] < 20e-6  # a key block's walk, on its own grid


def test_a_keyed_file_names_a_known_prefix(capsys):
    from solkit.calibration import __main__ as cli

    assert cli.main(["fit", "--data", str(DATA / "h200_measurements.json"), "--keyed", f"flash={FIT}"]) == 2
    err = capsys.readouterr().err
    assert "--keyed" in err and "efficient_attention" in err and "'flash=" in err
    with pytest.raises(OptionError, match="PREFIX=PATH"):
        cli._keyed(str(FIT))


def test_varlen_of_equal_sequences_is_the_padded_call():
    """Four sequences of 2,048 queries and keys, causal, head dim 128, and two of 512 at head dim 256 (gmem): the varlen
    efficient kernel's blocks and walks are the padded call's, and so is its time, in fp32 and bf16."""
    for b, h, s, d, causal in ((4, 16, 2048, 128, True), (2, 8, 512, 256, False)):
        for dtype in ("fp32", "bf16"):
            kw = dict(causal=causal, dtype=dtype, impl="efficient")
            padded = sk.predict(ops.attention(b, h, s, s, d, **kw), "h200", warn=False).seconds
            varlen = sk.predict(ops.attention(b, h, s, s, d, seq_lens=[s] * b, **kw), "h200", warn=False).seconds
            assert float(varlen) == pytest.approx(float(padded), rel=1e-12), (b, h, s, d, dtype)


def test_a_ragged_batch_walks_its_longest_sequence():
    """fp32, head dim 64 (64 x 64 kernel, 3 blocks an SM), 2 heads, sequences of (64, 640) and (64, 64) keys: blocks 1 x 2
    + 1 x 2 = 4 in one wave, walks ceil(640 / 64) = 10 and 1: mean (2 x 10 + 2 x 1) / 4 = 5.5, longest 10."""
    from solkit.prediction.tiles import ragged_efficient_attention_loop

    flops, waves, steps, keys128, gmem = ragged_efficient_attention_loop(((64, 640, 64), (64, 64, 64)), 2.0, 1.0,
                                                                         "fp32", SMS)
    assert (waves, steps, keys128, gmem) == (1.0, 10.0, False, False)
    assert flops == 4 * 64 * 64 * 64 * 4 * 5.5  # 23,068,672


def test_16_bit_kernels_and_the_backward_have_their_own_keys():
    """bf16 and fp16 take the half variants of their class; the backward (cutlassB) is not the forward's walk."""
    from solkit import models

    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    for d, dtype, key in ((64, "bf16", "half"), (128, "fp16", "halfkeys128"), (256, "bf16", "halfgmem"),
                          (256, "fp32", "gmem")):
        t = kernel_terms(ops.attention(1, 8, 1, 4096, d, dtype=dtype, impl="efficient").kernels[0], gpu, cal)
        assert [name for name, m in t.variants if m] == [key], (d, dtype)
    for dtype, cls in (("fp32", "efficient_attention"), ("bf16", "efficient_attention_half")):
        forward = ops.attention(2, 16, 2048, None, 64, dtype=dtype, impl="efficient")
        back = models.backward(forward).kernels[0]
        t = kernel_terms(back, gpu, cal)
        assert back.op == "efficient_attention_backward" and t.k_steps == 0.0
        assert [name for name, m in t.variants if m][-1] == "backward"  # looked up as the forward class, then nothing
        # its compute at the forward class's efficiency: 2.5 x the forward's executed FLOPs over the tile model
        assert kernel_seconds(t, cal)[1] == pytest.approx(t.t_compute / cal.compute_efficiency[cls], rel=1e-12)
        ratio = float(sk.predict(models.backward(forward), "h200", warn=False).seconds
                      / sk.predict(forward, "h200", warn=False).seconds)
        assert ratio >= 2.0, (dtype, ratio)  # five products for two, as the FLOPs say


def test_a_precision_or_head_dim_the_kernel_lacks_is_refused():
    with pytest.raises(OptionError, match="dtype='fp8_e4m3'") as err:
        ops.attention(1, 8, 1, 100, 64, dtype="fp8_e4m3", impl="efficient")
    assert isinstance(err.value, ValueError) and "'fp32', 'bf16', 'fp16'" in str(err.value)
    with pytest.raises(OptionError, match="head_dim up to 65536; got head_dim=65544"):
        ops.attention(1, 1, 1, 100, 65544, dtype="fp32", impl="efficient")
    # SDPA takes the math path where no fused kernel has the precision (fp64 without GQA included)
    assert ops.attention(1, 8, 1, 100, 64, dtype="fp64", impl="sdpa").name == "attention (sdpa: math)"


def test_a_ragged_batch_through_kernel_terms():
    """bf16, head dim 64 (the 64 x 64 kernel, 4 blocks an SM), 2 heads, sequences of 640 and 64 queries and keys: blocks
    ceil(640 / 64) x 2 + 1 x 2 = 22 in one wave, walks 10 and 1 (sum of blocks x walks 20 x 10 + 2 x 1 = 202), the
    longest 10; tile FLOPs 4 x 64 x 64 x 64 x 202 = 211,812,352 at the bf16 rate; the 16-bit class's variant."""
    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    w = ops.attention(2, 2, 640, None, 64, seq_lens=[640, 64], dtype="bf16", impl="efficient")
    t = kernel_terms(w.kernels[0], gpu, cal)
    assert (t.waves, t.k_steps) == (1.0, 10.0) and [n for n, m in t.variants if m] == ["half"]
    rate = gpu.measured.matmul_rate_tflops["bf16"] * 1e12
    assert t.t_compute == pytest.approx(211_812_352 / rate, rel=1e-12)


def test_the_keyed_fits_are_manifest_fits():
    from solkit.calibration.fitting import KEYED_FITS
    from solkit.calibration.manifest import FITS

    assert set(KEYED_FITS) <= set(FITS)


def test_the_docs_validation_figures_are_the_model_held_out_by_set():
    """docs/accuracy.md's validation figures of the two draws that chose the model (fp32 SDPA 9.5% / 41.2%, the 16-bit
    kernel 5.0% / 20.8%) are today's model on each file against a bank of every other bank file (holdout_by_set)."""
    from solkit.calibration.data import load_measurements
    from solkit.calibration.neighbours import bank_files, bank_rows, holdout_by_set

    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    named = [(f, bank_rows(load_measurements(f), gpu, cal)) for f in bank_files()]
    got = {Path(name).name: f"{med:.1%} / {p90:.1%}" for name, _, _, _, med, p90 in holdout_by_set(named, gpu, cal)}
    text = (DATA.parent / "docs" / "accuracy.md").read_text()
    for name, figure in (("h200_sdpafp32_validation_seed2056.json", "34.4% / 114.0% -> 9.5% / 41.2%"),
                         ("h200_efficienthalf_validation_seed2057.json", "55.3% / 313.9% -> 5.0% / 20.8%")):
        assert figure in text and got[name] == figure.split(" -> ")[1], (name, got[name])
