"""The calibrated predictor: hand-checked pieces, fallbacks, warnings, and its relation to T_SOL."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit import ops
from solkit.errors import PerformanceWarning
from solkit.prediction import calibration, gemm_compute_time, predict, soft_max


def test_wave_quantization_by_hand():
    """896 x 2432 x 4096 on 132 SMs at 1 TFLOP/s each: the best tile is 64x64, 14*38 = 532 tiles -> 5 waves.

    Other tiles: 128x256 70 tiles (1 wave of 268.4 us), 128x128 133 tiles (2 waves, 268.4 us),
    64x128 266 tiles (3 waves, 201.3 us); 64x64: 5 waves * 2*64*64*4096 / 1e12 = 167.8 us.
    """
    rate = 132e12
    t, eff = gemm_compute_time(np.float64(896), np.float64(2432), np.float64(4096), np.float64(1), rate, 132)
    assert float(t) == pytest.approx(5 * 2 * 64 * 64 * 4096 / 1e12)  # 167.77 us
    assert float(eff) == pytest.approx((2 * 896 * 2432 * 4096 / rate) / (5 * 2 * 64 * 64 * 4096 / 1e12))  # 0.806
    # 132 tiles of 128x256 (m = 12*128, n = 11*256): one full wave, no loss
    t, eff = gemm_compute_time(np.float64(1536), np.float64(2816), np.float64(4096), np.float64(1), rate, 132)
    assert float(eff) == pytest.approx(1.0)
    assert float(t) == pytest.approx(2 * 1536 * 2816 * 4096 / rate)  # 268.4 us


def test_soft_max():
    """(a^p + b^p)^(1/p): p=inf is max, p=1 is the sum, p=2 is the hypotenuse."""
    assert soft_max(3.0, 4.0, np.inf) == 4.0
    assert soft_max(3.0, 4.0, 1.0) == pytest.approx(7.0)
    assert soft_max(3.0, 4.0, 2.0) == pytest.approx(5.0)


def test_uncalibrated_gpu_says_so():
    """A100 has no measured section: defaults, and a note saying so."""
    cal = calibration("a100")
    assert not cal.calibrated
    p = predict(ops.matmul(8192, 8192, 8192), "a100")
    assert not p.calibrated
    assert any("no measured section" in n for n in p.notes)
    # default: 70% of the dense peak -> 2*8192^3 / (0.70 * 312e12) = 5.03 ms plus launch floor
    assert p.seconds == pytest.approx(2 * 8192**3 / (0.70 * 312e12), rel=0.05)


def test_h200_is_calibrated():
    """The H200 prediction uses its measured section (and says what its neighbour correction did, nothing else)."""
    p = predict(ops.matmul(8192, 8192, 8192), "h200")
    assert p.calibrated and len(p.notes) == 1 and p.notes[0].startswith("neighbour correction from")
    # 8192^3 bf16 measured 1.59 ms (data/h200_measurements.json); the prediction is within 10%
    assert p.seconds == pytest.approx(1.59e-3, rel=0.10)


def test_launch_floor_dominates_tiny_kernels():
    """A 1000-element add is all launch: within 30% of the 4.0 us floor, limiter 'launch/latency'.

    Measured (data/h200_sample_fit_run2.json, floor 4.00 us): adds of 1,114 to 3,690 elements took 4.6-5.8 us.
    """
    p = predict(ops.add(1000), "h200")
    assert p.seconds == pytest.approx(4.0e-6, rel=0.3)
    assert p.kernels[0].limiter == "launch/latency"


def test_misaligned_vocab_warns():
    """An lm-head GEMM with vocab 50257 (not a multiple of 8) warns; 50304 does not."""
    with pytest.warns(PerformanceWarning, match="not a multiple of 16 bytes"):
        slow = predict(ops.matmul(4096, 50257, 4096), "h200")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast = predict(ops.matmul(4096, 50304, 4096), "h200")
    assert slow.seconds > 2 * fast.seconds
    assert slow.kernels[0].limiter == "misaligned"


def test_stem_conv_small_channels():
    """A 3-channel stem conv is flagged and far slower than its roofline."""
    p = predict(ops.conv2d(32, 3, 224, 224, 64, 7, 2, 3), "h200")
    assert p.kernels[0].limiter == "small channels"
    assert p.sol_fraction < 0.2


def test_broadcast_prediction():
    """Arrays in, arrays out, equal to scalar calls."""
    m = np.array([1, 256, 8192])
    p = predict(ops.matmul(m, 4096, 4096), "h200")
    assert np.shape(p.seconds) == (3,)
    for i, mi in enumerate(m):
        assert p.seconds[i] == pytest.approx(predict(ops.matmul(int(mi), 4096, 4096), "h200").seconds)


dims = st.integers(1, 1 << 14)


@settings(max_examples=150, deadline=None)
@given(m=dims, n=dims, k=dims, dtype=st.sampled_from(["bf16", "fp16", "fp8", "tf32", "fp32"]))
def test_predicted_never_below_t_sol_gemm(m, n, k, dtype):
    """The calibrated time is never faster than the speed of light."""
    w = ops.matmul(m, n, k, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)
        assert predict(w, "h200").seconds >= sk.roofline(w, "h200").t_sol


@settings(max_examples=100, deadline=None)
@given(b=st.integers(1, 64), h=st.sampled_from([8, 16, 32]), s=st.integers(1, 8192), causal=st.booleans(),
       t=st.integers(1, 1 << 16), d=st.sampled_from([768, 4096]))
def test_predicted_never_below_t_sol_others(b, h, s, causal, t, d):
    """Attention, norms and elementwise: predicted >= T_SOL."""
    for w in (ops.attention(b, h, s, head_dim=128, causal=causal), ops.layernorm_residual(t, d, fused=False),
              ops.softmax(t, d), ops.add(t * d), ops.conv2d(b, 64, 56, 56, 64, 3, padding=1, layout="nchw")):
        assert predict(w, "h200").seconds >= sk.roofline(w, "h200").t_sol


# ---- the pieces, each by hand ---------------------------------------------------------------------


def test_soft_max_for_any_exponent():
    """(a^p + b^p)^(1/p) for p = 1, 3, inf and 2, on scalars and arrays alike."""
    assert soft_max(3.0, 4.0, 3.0) == pytest.approx((27 + 64) ** (1 / 3))  # 4.498
    a, b = np.array([3.0, 0.0, 1.0]), np.array([4.0, 0.0, 1.0])
    assert soft_max(a, b, 1.0) == pytest.approx([7.0, 0.0, 2.0])
    assert soft_max(a, b, 3.0) == pytest.approx([(27 + 64) ** (1 / 3), 0.0, 2 ** (1 / 3)])
    assert list(soft_max(a, b, np.inf)) == [4.0, 0.0, 1.0]
    assert soft_max(a, b, 2.0) == pytest.approx([5.0, 0.0, 2**0.5])
    assert soft_max(0.0, 0.0, 3.0) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 16)),
                min_size=1, max_size=20))
def test_gemm_time_sweep_equals_one_shape_at_a_time(shapes):
    """The sweep path of the tile model (two regimes, reused buffers) gives exactly the one-shape path's numbers."""
    m, n, k, b = (np.array([s[i] for s in shapes], dtype=float) for i in range(4))
    t, eff = gemm_compute_time(m, n, k, b, 691.4e12, 132)
    for i, (mi, ni, ki, bi) in enumerate(shapes):
        ti, ei = gemm_compute_time(float(mi), float(ni), float(ki), float(bi), 691.4e12, 132)
        assert t[i] == ti and eff[i] == pytest.approx(ei, rel=1e-12)
    k_alone, _ = gemm_compute_time(m, n, float(shapes[0][2]), b, 691.4e12, 132)  # k a scalar: its fast fold
    assert k_alone[0] == gemm_compute_time(float(m[0]), float(n[0]), float(shapes[0][2]), float(b[0]), 691.4e12, 132)[0]


def test_split_k_fills_idle_sms():
    """m = n = 64, k = 8192 on 132 SMs at 1 TFLOP/s each: one 64x64 tile splits k 33 ways (8192/256 = 32 caps it): 256 per split."""
    rate = 132e12
    t, eff = gemm_compute_time(64.0, 64.0, 8192.0, 1.0, rate, 132)
    # every tile candidate covers the 64x64 output in 1 tile; split = min(132, 32) = 32; one wave of k/32 = 256 deep
    assert t == pytest.approx(2 * 64 * 64 * 256 / 1e12)  # 2.1 us on one SM's 1 TFLOP/s
    assert eff == pytest.approx((2 * 64 * 64 * 8192 / rate) / t)  # 32 of 132 SMs busy: 0.242


def test_limiters_name_what_binds():
    """Each label by construction: compute, memory, wave quantization, small channels, misaligned, launch/latency, absent."""
    h200 = sk.load_gpu("h200")
    limit = lambda w: predict(w, h200, warn=False).kernels[0].limiter  # noqa: E731
    assert limit(ops.matmul(8192, 8192, 8192)) in ("compute", "wave quantization")
    assert limit(ops.layernorm(65536, 8192)) == "memory"
    # m = 208: 4 row tiles of 64 (3.25 used), so every candidate wastes a quarter of its tiles or more
    assert predict(ops.matmul(208, 4312, 3400), h200, warn=False).kernels[0].wave_efficiency < 0.75
    assert limit(ops.matmul(208, 4312, 3400)) == "wave quantization"
    assert limit(ops.conv2d(32, 3, 224, 224, 64, 7, 2, 3)) == "small channels"
    assert limit(ops.matmul(4096, 50257, 4096)) == "misaligned"
    assert limit(ops.add(1000)) == "launch/latency"
    sweep = predict(ops.conv2d(2, 16, 8, 8, 16, kernel=np.array([1, 3]), padding=np.array([0, 1]), layout="nchw"), h200)
    assert sweep.kernels[0].limiter[0] == "absent" and sweep.kernels[0].seconds[0] == 0.0


def test_variants_take_their_own_entries_per_element():
    """A sweep of groups 1 and 64 (depthwise, 64 channels): only the depthwise element runs on CUDA cores."""
    h200 = sk.load_gpu("h200")
    cal = calibration(h200)
    from solkit.prediction import kernel_terms

    k = ops.conv2d(8, 64, 56, 56, 64, 3, padding=1, groups=np.array([1, 64])).kernels[0]
    t = kernel_terms(k, h200, cal)
    assert t.variants[0][0] == "depthwise" and list(t.variants[0][1]) == [False, True]
    # the depthwise element: 2*8*64*56*56*9 FLOPs at the 67 TFLOP/s fp32 CUDA-core peak
    assert t.t_compute[1] == pytest.approx(2 * 8 * 64 * 56 * 56 * 9 / 67e12)
    stem = kernel_terms(ops.conv2d(8, np.array([3, 64]), 224, 224, 64, 7, 2, 3).kernels[0], h200, cal)
    assert list(stem.small_channels) == [True, False]  # 3 bf16 channels are 6 bytes < 16


def test_uncalibrated_ceilings_are_the_reference_shares():
    """An uncalibrated GPU: each precision at the H200's measured share of its own peak; copy at 4.296/4.8 of its bandwidth.

    The H200's measured figures (hardware_specs/h200-sxm.yaml): bf16 708.5, tf32 355.8 TFLOP/s, copy 4.296 TB/s, floor 4.0 us;
    its datasheet: bf16 989.4, tf32 494.7 TFLOP/s dense, 4.8 TB/s. The A100's: bf16 312, tf32 156 TFLOP/s, 2.039 TB/s.
    """
    a100, b200 = calibration("a100"), calibration("b200")
    assert not a100.calibrated and "uncalibrated" in a100.source
    assert a100.matmul_rate["bf16"] == pytest.approx(708.5 / 989.4 * 312e12)  # 223.4 TFLOP/s
    assert a100.matmul_rate["tf32"] == pytest.approx(355.8 / 494.7 * 156e12)  # 112.2 TFLOP/s
    assert a100.copy_bandwidth == pytest.approx(4.296 / 4.8 * 2.039e12)  # 1.825 TB/s
    assert a100.launch_floor == pytest.approx(4.0e-6)  # the H200's measured floor, borrowed
    assert a100.kernel_gap == calibration("h200-sxm").kernel_gap  # the H200 spec's fitted gap, borrowed
    assert b200.matmul_rate["fp4"] == pytest.approx(708.5 / 989.4 * 9000e12)  # no fp4 on the H200: the bf16 share
    assert calibration("a100") is a100  # derived once per loaded spec
    assert calibration("h200").memory_efficiency["softmax"] == sk.load_gpu("h200").measured.memory_efficiency["softmax"]


def test_a_precision_the_calibration_lacks_takes_the_bf16_share(tmp_path):
    """A calibrated spec without an fp8 matmul rate predicts fp8 at its bf16 measured share of the fp8 peak."""
    import yaml

    spec = yaml.safe_load(open(sk.load_gpu("h200").path))
    spec["name"], spec["aliases"] = "h200-nofp8", []
    del spec["measured"]["matmul_rate_tflops"]["fp8"]
    del spec["measured"]["neighbours"]  # the shipped bank names h200-sxm: a renamed spec may not borrow it
    path = tmp_path / "h200-nofp8.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    from solkit.prediction import matmul_rate

    gpu = sk.load_gpu(path)
    cal = calibration(gpu)
    assert matmul_rate(cal, gpu, "fp8_e4m3") == pytest.approx(708.5 / 989.4 * 1978.9e12)  # 1417.1 TFLOP/s
    assert matmul_rate(cal, gpu, "bf16") == pytest.approx(708.5e12)
