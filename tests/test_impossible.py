"""Impossible numbers (issue 10): a measured time below T_SOL or a utilization above 1 is flagged every time.

The contract: ``ImpossibleMeasurementWarning`` each time, the number still returned;
``strict=True`` raises ``ImpossibleMeasurementError`` (a MeasurementError, so a ValueError).
Predictions never fall below T_SOL, whatever the calibration says.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit import ops
from solkit.errors import ImpossibleMeasurementError, ImpossibleMeasurementWarning, MeasurementError, SolkitError
from solkit.prediction import calibration

H200 = sk.load_gpu("h200")
GEMM = ops.matmul(8192, 8192, 8192)
T_GEMM = 2 * 8192**3 / 989.4e12  # 1.0995e12 FLOPs / 989.4 TFLOP/s (H200 dense bf16, datasheet) = 1.1113e-3 s


def test_below_t_sol_returns_the_number_and_warns_every_time():
    """Three calls of sol_fraction at 1 ms for a 1.1113 ms bound: 1.1113 each time, three warnings, even under Python's default filter."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # shows a warning once per line, unless solkit bypasses it
        values = [sk.sol_fraction(GEMM, H200, 1e-3) for _ in range(3)]
    assert values == pytest.approx([T_GEMM / 1e-3] * 3)  # 1.1113
    flagged = [w for w in caught if w.category is ImpossibleMeasurementWarning]
    assert len(flagged) == 3
    assert all(w.filename == __file__ for w in flagged)  # points at the caller's line, not into solkit
    assert "measured_seconds = 1 ms is below T_SOL = 1.111 ms of 'matmul' on h200-sxm" in str(flagged[0].message)


def test_strict_raises_a_measurement_error():
    """strict=True: ImpossibleMeasurementError, also a MeasurementError, a SolkitError and a ValueError."""
    with pytest.raises(ImpossibleMeasurementError, match=r"faster than the speed of light by 1\.11x") as info:
        sk.sol_fraction(GEMM, H200, 1e-3, strict=True)
    assert isinstance(info.value, MeasurementError) and isinstance(info.value, SolkitError)
    assert isinstance(info.value, ValueError)
    assert sk.sol_fraction(GEMM, H200, 2 * T_GEMM, strict=True) == pytest.approx(0.5)  # possible: no error


def test_the_bound_itself_is_possible_and_rounding_is_not_flagged():
    """Measured = T_SOL gives 1.0; 1e-12 below it is float rounding (RTOL 1e-9); 1e-6 below it is flagged."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImpossibleMeasurementWarning)
        assert sk.sol_fraction(GEMM, H200, T_GEMM) == pytest.approx(1.0)
        assert sk.sol_fraction(GEMM, H200, T_GEMM * (1 - 1e-12)) == pytest.approx(1.0)
    with pytest.warns(ImpossibleMeasurementWarning):
        sk.sol_fraction(GEMM, H200, T_GEMM * (1 - 1e-6))


def test_mfu_above_one_and_a_workload_below_its_split_bound():
    """MFU 2 x 989.4e12 FLOPs in 1 s = 2.0 is flagged; a workload on 8 GPUs is bounded by T_SOL / 8."""
    with pytest.warns(ImpossibleMeasurementWarning, match=r"mfu = 2 is above 1"):
        assert sk.mfu(2 * 989.4e12, 1.0, H200) == pytest.approx(2.0)
    with pytest.warns(ImpossibleMeasurementWarning, match=r"hfu = 2 is above 1"):
        sk.hfu(2 * 989.4e12, 1.0, H200)
    # 8 GPUs: 1.1113 ms / 8 = 0.1389 ms; 0.1 ms is below it (MFU 1.39), 0.2 ms is not (MFU 0.695)
    with pytest.warns(ImpossibleMeasurementWarning, match="split ideally over n_gpus") as rec:
        sk.mfu(GEMM, 1e-4, H200, n_gpus=8)
    assert len(rec) == 1  # one flag per impossible number, not one for the time and one for MFU > 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImpossibleMeasurementWarning)
        assert sk.mfu(GEMM, 2e-4, H200, n_gpus=8) == pytest.approx(2 * 8192**3 / (989.4e12 * 2e-4 * 8))  # 0.6946


def test_a_memory_bound_time_below_t_sol_is_flagged_though_mfu_is_small():
    """layernorm 8192x4096: T_SOL (2*8192*4096 + 2*4096)*2 B / 4.8e12 B/s = 27.97 us; 10 us is impossible at MFU 0.03."""
    w = ops.layernorm(8192, 4096)
    with pytest.warns(ImpossibleMeasurementWarning, match=r"seconds = 10 us is below T_SOL = 27\.97 us"):
        assert sk.mfu(w, 1e-5, H200) < 0.05


def test_achieved_rates_are_checked_only_with_a_gpu():
    """achieved_bandwidth of a 27.97 us layernorm in 10 us: 13.4 TB/s, flagged on the H200, unchecked without a GPU."""
    w = ops.layernorm(8192, 4096)
    nbytes = (2 * 8192 * 4096 + 2 * 4096) * 2  # 134,234,112 B
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImpossibleMeasurementWarning)
        assert sk.achieved_bandwidth(w, 1e-5) == pytest.approx(nbytes / 1e-5)  # 1.342e13 B/s
    with pytest.warns(ImpossibleMeasurementWarning):
        sk.achieved_bandwidth(w, 1e-5, H200)
    with pytest.raises(ImpossibleMeasurementError):
        sk.achieved_flops(w, 1e-5, H200, strict=True)


def test_compare_reports_measured_speedup_and_flags_each_side():
    """Unfused vs fused LayerNorm+residual, measured 300 us and 150 us: measured speed-up 2.0; a side below T_SOL is flagged."""
    a, b = ops.layernorm_residual(16384, 4096, fused=False), ops.layernorm_residual(16384, 4096, fused=True)
    c = sk.compare(a, b, H200, measured=(300e-6, 150e-6))
    assert c.measured_speedup == pytest.approx(2.0)
    # fused: (4*16384*4096 + 2*4096)*2 B / 4.8e12 B/s = 111.85 us; 111.85 / 150 = 0.7457
    assert c.sol_fraction_variant == pytest.approx((4 * 16384 * 4096 + 2 * 4096) * 2 / 4.8e12 / 150e-6)
    assert sk.compare(a, b, H200).measured_speedup is None
    with pytest.warns(ImpossibleMeasurementWarning, match=r"measured\[1\] \(variant seconds\) = 50 us"):
        sk.compare(a, b, H200, measured=(300e-6, 50e-6))


# ---- predictions never below T_SOL ------------------------------------------------------------

SHAPES = st.integers(1, 1 << 14)


@settings(max_examples=60, deadline=None)
@given(m=SHAPES, n=SHAPES, k=SHAPES, gpu=st.sampled_from(["h200", "a100", "b200", "mi300x"]))
def test_prediction_of_a_gemm_is_never_below_its_bound(m, n, k, gpu):
    """For any GEMM on a calibrated or uncalibrated GPU, predicted seconds >= T_SOL, in total and per kernel."""
    w = ops.matmul(m, n, k)
    p = sk.predict(w, gpu, warn=False)
    assert p.seconds >= p.t_sol
    assert all(kp.seconds >= kp.t_sol for kp in p.kernels)


def test_prediction_is_floored_at_t_sol_whatever_the_calibration_says(tmp_path: Path):
    """A calibration forced to 100x efficiencies and no overheads would predict 1/100 of T_SOL: the result is T_SOL."""
    path = tmp_path / "h200-copy.yaml"
    shutil.copy(Path(sk.load_gpu("h200").path), path)
    g = sk.load_gpu(path)
    cal = calibration(g)
    fast = MappingProxyType({key: 100.0 for key in ("gemm", "copy", "elementwise", "reduction", "layernorm")})
    g.memo["calibration"] = cal.replace(compute_efficiency=fast, memory_efficiency=fast, kernel_latency=MappingProxyType({}),
                                        launch_floor=0.0, kernel_gap=0.0)
    for w in (GEMM, ops.layernorm(8192, 4096), ops.matmul(np.array([64, 8192]), 8192, 8192)):
        p = sk.predict(w, g, warn=False)
        assert np.all(np.asarray(p.seconds) == np.asarray(p.t_sol))  # floored exactly at the bound
        assert all(np.all(np.asarray(kp.seconds) >= np.asarray(kp.t_sol)) for kp in p.kernels)


def test_a_warning_from_python_dash_c_is_shown():
    """`python -c` code below T_SOL (1 ms for the 1.1113 ms bound): the warning on stderr, the number printed, exit 0
    (its __main__ has no source for the line cache; that once raised ImportError)."""
    import subprocess
    import sys

    code = "import solkit as sk; print(round(sk.sol_fraction(sk.ops.matmul(8192, 8192, 8192), 'h200', 1e-3), 4))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "1.1113" and "ImpossibleMeasurementWarning" in run.stderr
