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
    """The H200 prediction uses its measured section."""
    p = predict(ops.matmul(8192, 8192, 8192), "h200")
    assert p.calibrated and p.notes == ()
    # 8192^3 bf16 measured 1.59 ms (data/h200_measurements.json); the prediction is within 10%
    assert p.seconds == pytest.approx(1.59e-3, rel=0.10)


def test_launch_floor_dominates_tiny_kernels():
    """A 1000-element add is all launch: about the 4.48 us floor, limiter 'launch/latency'."""
    p = predict(ops.add(1000), "h200")
    assert p.seconds == pytest.approx(4.48e-6, rel=0.2)
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
