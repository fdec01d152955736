"""The cross-validation's parts: folds, parameter counts and the two baselines (the full k-fold run is a CLI job)."""

from __future__ import annotations

import numpy as np
import pytest

import solkit as sk
from solkit.calibration import MeasuredCase
from solkit.calibration.crossval import (K, PAIR_GRID, GlobalPair, fit_global_pair, fold_of, parameter_count,
                                         roofline_baseline)
from solkit.hardware.parameters import Calibration

H200 = sk.load_gpu("h200-sxm")


def _case(op: str, seconds: float, **params) -> MeasuredCase:
    return MeasuredCase(id=f"{op}/{params}", family=op, op=op, params=params, impl_note="synthetic", seconds=seconds,
                        ok=True)


def test_folds_are_fixed_and_balanced():
    ids = [f"case-{i}" for i in range(5000)]
    folds = [fold_of(i) for i in ids]
    assert folds == [fold_of(i) for i in ids]  # a function of the id alone
    counts = np.bincount(folds, minlength=K)
    assert len(counts) == K and counts.min() > 0.9 * 5000 / K  # each fold near 1,000 of 5,000


def test_parameter_count_counts_fitted_entries_only():
    cal = Calibration(gpu="x", calibrated=True, source="t", matmul_rate={"bf16": 1.0, "fp8": 2.0}, copy_bandwidth=1.0,
                      read_bandwidth=None, launch_floor=1.0, kernel_gap=0.0, kernel_latency={"a": 1.0, "b": 2.0},
                      compute_efficiency={"a": 0.5}, memory_efficiency={"a": 0.5, "b": 0.4, "c": 0.3},
                      wave_latency={}, kstep_latency={"a": 1.0}, block_bandwidth={}, overlap_exponent=2.0)
    # fitted: latencies 2 + compute 1 + memory 3 + k-step 1 entries, the gap and the exponent = 9 (the matmul rates,
    # bandwidths and floor are measured, not fitted)
    assert parameter_count(cal) == 9


def test_roofline_baseline_is_floor_plus_t_sol():
    case = _case("matmul", 1e-3, m=4096, n=4096, k=4096, dtype="bf16")
    t_sol = 2 * 4096**3 / 989.4e12  # dense bf16 datasheet peak of the H200 SXM (NVIDIA H200 datasheet): 138.9 us
    assert roofline_baseline([case], H200, 4e-6)[0] == pytest.approx(4e-6 + t_sol, rel=1e-6)


def test_global_pair_recovers_the_efficiencies_it_was_built_with():
    """Cases timed as floor + max(t_c / e_c, t_m / e_m) with grid values e_c, e_m: the search finds them back."""
    e_c, e_m, floor = PAIR_GRID[40], PAIR_GRID[50], 4e-6
    shapes = [dict(m=m, n=n, k=k, dtype="bf16") for m, n, k in [(8192, 8192, 8192), (1, 4096, 4096), (64, 8192, 8192),
                                                              (4096, 4096, 64), (2048, 2048, 2048)]]
    shapes_copy = [dict(elements=e, dtype="bf16") for e in (1 << 20, 1 << 26)]
    cases = []
    for p in shapes:
        r = sk.roofline(sk.ops.matmul(**p), H200)
        cases.append(_case("matmul", floor + max(float(r.t_compute) / e_c, float(r.t_memory) / e_m), **p))
    for p in shapes_copy:
        r = sk.roofline(sk.ops.copy(**p), H200)
        cases.append(_case("copy", floor + float(r.t_memory) / e_m, **p))
    pair = fit_global_pair(cases, H200, floor)
    assert (pair.compute_efficiency, pair.memory_efficiency) == (pytest.approx(e_c), pytest.approx(e_m))
    predicted = pair.predict(cases, H200)
    assert np.allclose(predicted, [c.seconds for c in cases], rtol=1e-9)
    assert isinstance(pair, GlobalPair) and pair.launch_floor == floor
