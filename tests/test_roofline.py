"""Roofline core: hand-computed T_SOL, bounds, MFU/HFU and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit import ops
from solkit.errors import ArgumentTypeError, MeasurementError, ShapeError, SolkitError
from solkit.workload import Kernel, Workload

# H200 SXM datasheet: 1,979 TFLOP/s bf16 tensor "with sparsity" -> 989.4 dense; 4.8 TB/s HBM3e
H200_BF16 = 989.4e12
H200_BW = 4.8e12


def test_square_gemm_is_compute_bound(h200):
    """8192^3 bf16 GEMM on H200: 2*8192^3 = 1.0995e12 FLOP / 989.4e12 = 1.111 ms, compute-bound."""
    r = sk.roofline(ops.matmul(8192, 8192, 8192), h200)
    flops = 2 * 8192**3  # 1,099,511,627,776
    nbytes = 3 * 8192 * 8192 * 2  # A, B, C in bf16 = 402,653,184
    assert r.flops == flops
    assert r.bytes == nbytes
    assert r.t_compute == pytest.approx(flops / H200_BF16)  # 1.1113e-3 s
    assert r.t_memory == pytest.approx(nbytes / H200_BW)  # 8.389e-5 s
    assert r.t_sol == pytest.approx(1.1113e-3, rel=1e-4)
    assert r.bound == "compute"
    assert r.intensity == pytest.approx(flops / nbytes)  # 2730.7 FLOP/B
    assert r.ridge_point == pytest.approx(H200_BF16 / H200_BW)  # 206.1 FLOP/B


def test_gemv_is_memory_bound(h200):
    """1x8192x8192 GEMV: (8192 + 8192*8192 + 8192)*2 = 134,250,496 B / 4.8e12 = 27.97 us."""
    r = sk.roofline(ops.matmul(1, 8192, 8192), h200)
    assert r.bytes == 134_250_496
    assert r.t_sol == pytest.approx(134_250_496 / 4.8e12)  # 2.7969e-5 s
    assert r.t_sol == pytest.approx(27.97e-6, rel=1e-3)
    assert r.bound == "memory"


def test_no_int64_wraparound():
    """2*m*n*k for m = n = k = 2**21 is 2**64 = 18446744073709551616, exact in float64."""
    w = ops.matmul(2**21, 2**21, 2**21)
    assert w.flops == 18446744073709551616.0
    w_arr = ops.matmul(np.array([2**21], dtype=np.int64), 2**21, 2**21)
    assert w_arr.flops[0] == 2.0**64


def test_broadcast_matches_scalar(h200):
    """A sweep is one call and agrees element by element with scalar calls."""
    ms = np.array([1, 64, 4096, 8192])
    r = sk.roofline(ops.matmul(ms, 8192, 8192), h200)
    assert np.shape(r.t_sol) == (4,)
    for i, m in enumerate(ms):
        assert r.t_sol[i] == pytest.approx(sk.roofline(ops.matmul(int(m), 8192, 8192), h200).t_sol)
    assert list(r.bound) == ["memory", "memory", "compute", "compute"]


def test_two_dimensional_sweep(h200):
    """m as a column and n as a row broadcast to a 2-D grid."""
    r = sk.roofline(ops.matmul(np.array([[1], [1024]]), np.array([1024, 2048, 4096]), 4096), h200)
    assert np.shape(r.t_sol) == (2, 3)


def test_workload_t_sol_sums_kernels(h200):
    """Unfused LN+residual: add (3*T*d*e) and layernorm ((2*T*d + 2*d)*e) are two memory-bound kernels."""
    t, d, e = 8192, 4096, 2
    r = sk.roofline(ops.layernorm_residual(t, d, fused=False), h200)
    add_bytes = 3 * t * d * e  # 201,326,592
    ln_bytes = (2 * t * d + 2 * d) * e  # 134,234,112
    assert [k.name for k in r.kernels] == ["add", "layernorm"]
    assert r.kernels[0].t_sol == pytest.approx(add_bytes / H200_BW)
    assert r.kernels[1].t_sol == pytest.approx(ln_bytes / H200_BW)
    assert r.t_sol == pytest.approx((add_bytes + ln_bytes) / H200_BW)  # 69.91 us
    assert r.bound == "memory"


def test_vector_flops_use_cuda_core_rate(h200):
    """A kernel of pure vector work is timed at the fp32 CUDA-core rate: 67e12 FLOP / 67 TFLOP/s = 1 s."""
    k = Kernel("vec", "elementwise", "bf16", vector_flops=67e12, bytes_read=1.0)
    r = sk.roofline(k, h200)
    assert r.t_sol == pytest.approx(1.0)  # H200 datasheet: FP32 67 TFLOPS
    assert r.bound == "compute"


def test_fp32_matmul_without_tf32_runs_on_cuda_cores(h200):
    """fp32 matrix peak falls back to the 67 TFLOP/s vector rate; tf32 uses 494.7 (989 sparse / 2)."""
    assert h200.peak_flops("fp32") == pytest.approx(67e12)
    assert h200.peak_flops("tf32") == pytest.approx(494.7e12)
    r = sk.roofline(ops.matmul(8192, 8192, 8192, dtype="fp32"), h200)
    assert r.t_sol == pytest.approx(2 * 8192**3 / 67e12)  # 16.41 ms


def test_sparse_peak_is_twice_dense(h200):
    """2:4 sparsity: the datasheet's 1,979 TFLOP/s bf16."""
    assert h200.peak_flops("bf16", sparse=True) == pytest.approx(1979e12)
    r_dense = sk.roofline(ops.matmul(8192, 8192, 8192), h200)
    r_sparse = sk.roofline(ops.matmul(8192, 8192, 8192), h200, sparse=True)
    assert r_sparse.t_compute == pytest.approx(2 * 8192**3 / 1979e12)
    assert r_dense.t_compute / r_sparse.t_compute == pytest.approx(1979 / 989.4)


def test_sol_fraction(h200):
    """A GEMV measured at 40 us: 27.97 us / 40 us = 0.699."""
    w = ops.matmul(1, 8192, 8192)
    assert sk.sol_fraction(w, h200, 40e-6) == pytest.approx(134_250_496 / 4.8e12 / 40e-6)  # 0.6992


def test_mfu_and_hfu(h200):
    """1e15 model FLOP in 2 s on one H200: 1e15 / (989.4e12 * 2) = 0.5054; on 8 GPUs 0.0632."""
    assert sk.mfu(1e15, 2.0, h200) == pytest.approx(1e15 / (989.4e12 * 2))
    assert sk.mfu(1e15, 2.0, h200, n_gpus=8) == pytest.approx(1e15 / (989.4e12 * 2 * 8))
    assert sk.mfu(1e15, 2.0, "h200", dtype="fp8") == pytest.approx(1e15 / (1978.9e12 * 2))


def test_hfu_counts_executed_flops(h200):
    """Naive causal attention executes every pair: HFU uses 4*b*h*d*sq*skv, MFU the unmasked half."""
    b, h, s, d = 1, 8, 1024, 64
    w = ops.attention(b, h, s, head_dim=d, causal=True, impl="naive")
    executed_mm = 4 * b * h * d * s * s  # 2,147,483,648
    softmax = 5 * b * h * s * s  # 41,943,040
    pairs = s * s - s * (s - 1) // 2  # 524,800
    model = 4 * b * h * d * pairs  # 1,074,790,400
    assert sk.hfu(w, 1e-3, h200) == pytest.approx((executed_mm + softmax) / (989.4e12 * 1e-3))
    assert sk.mfu(w, 1e-3, h200) == pytest.approx(model / (989.4e12 * 1e-3))


def test_achieved_rates():
    """8192^3 GEMM in 1.4 ms: 1.0995e12 / 1.4e-3 = 785.4 TFLOP/s; 402,653,184 B / 1.4e-3 = 287.6 GB/s."""
    w = ops.matmul(8192, 8192, 8192)
    assert sk.achieved_flops(w, 1.4e-3) == pytest.approx(2 * 8192**3 / 1.4e-3)
    assert sk.achieved_bandwidth(w, 1.4e-3) == pytest.approx(402_653_184 / 1.4e-3)


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan"), float("inf")])
def test_bad_seconds(h200, seconds):
    """Measured seconds must be positive and finite."""
    with pytest.raises(MeasurementError, match="seconds"):
        sk.mfu(1e12, seconds, h200)
    with pytest.raises(ValueError, match="measured_seconds"):
        sk.sol_fraction(ops.matmul(8, 8, 8), h200, seconds)


@pytest.mark.parametrize("n", [0, -2, 1.5])
def test_bad_n_gpus(h200, n):
    """n_gpus must be an integer >= 1."""
    with pytest.raises(MeasurementError, match="n_gpus"):
        sk.mfu(1e12, 1.0, h200, n_gpus=n)


def test_roofline_rejects_non_workload(h200):
    """A wrong object is a type error, not an attribute error."""
    with pytest.raises(ArgumentTypeError):
        sk.roofline("matmul", h200)


def test_array_error_names_first_bad_index():
    """An array with a bad element reports its index."""
    with pytest.raises(ShapeError, match=r"m must be a positive integer, got -3 at index 2"):
        ops.matmul(np.array([4, 8, -3, 0]), 8, 8)


def test_to_dict_is_plain(h200):
    """to_dict gives JSON-ready values."""
    import json

    d = sk.roofline(ops.matmul(np.array([1, 2]), 8, 8), h200).to_dict()
    json.dumps(d)
    assert d["gpu"] == "h200-sxm" and len(d["t_sol"]) == 2


dims = st.integers(min_value=1, max_value=1 << 16)


@settings(max_examples=200, deadline=None)
@given(m=dims, n=dims, k=dims, grow=st.integers(min_value=1, max_value=1 << 10))
def test_t_sol_never_falls_when_work_grows(m, n, k, grow):
    """Growing any GEMM dimension never lowers T_SOL."""
    gpu = sk.load_gpu("h200")
    base = sk.roofline(ops.matmul(m, n, k), gpu).t_sol
    for w in (ops.matmul(m + grow, n, k), ops.matmul(m, n + grow, k), ops.matmul(m, n, k + grow)):
        assert sk.roofline(w, gpu).t_sol >= base


@settings(max_examples=200, deadline=None)
@given(
    mf=st.floats(min_value=0, max_value=1e18),
    vf=st.floats(min_value=0, max_value=1e15),
    nb=st.floats(min_value=1, max_value=1e13),
    extra=st.floats(min_value=0, max_value=1e15),
)
def test_t_sol_monotone_in_flops_and_bytes(mf, vf, nb, extra):
    """Adding FLOPs or bytes to a kernel never lowers its T_SOL."""
    gpu = sk.load_gpu("h200")
    t = lambda a, b, c: sk.roofline(Kernel("k", "gemm", "bf16", matrix_flops=a, vector_flops=b, bytes_read=c), gpu).t_sol  # noqa: E731
    base = t(mf, vf, nb)
    assert t(mf + extra, vf, nb) >= base
    assert t(mf, vf + extra, nb) >= base
    assert t(mf, vf, nb + extra) >= base


@settings(max_examples=200, deadline=None)
@given(m=dims, n=dims, k=dims, slack=st.floats(min_value=1.0, max_value=1e3),
       dtype=st.sampled_from(["bf16", "fp16", "fp8", "int8", "tf32", "fp32", "fp64"]))
def test_mfu_at_most_one_at_or_above_t_sol(m, n, k, slack, dtype):
    """A run no faster than T_SOL has MFU <= 1 (model FLOPs <= executed, at the matrix peak of its precision)."""
    gpu = sk.load_gpu("h200")
    w = ops.matmul(m, n, k, dtype=dtype)
    seconds = sk.roofline(w, gpu).t_sol * slack
    assert sk.mfu(w, seconds, gpu, dtype=dtype) <= 1.0 + 1e-12
    assert sk.sol_fraction(w, gpu, seconds) <= 1.0 + 1e-12


def test_errors_share_a_base():
    """Every raised error is a SolkitError and the fitting builtin."""
    with pytest.raises(SolkitError):
        ops.matmul(0, 1, 1)
    with pytest.raises(TypeError):
        ops.matmul(True, 1, 1)
    with pytest.raises(TypeError):
        ops.matmul("8", 1, 1)
    with pytest.raises(ValueError, match="got nan"):
        ops.matmul(math.nan, 1, 1)
    with pytest.raises(ValueError, match="got 2.5"):
        ops.matmul(2.5, 1, 1)
    with pytest.raises(TypeError):
        Workload("empty", ())


def test_mfu_refuses_a_precision_mismatch(h200):
    """An fp8 workload measured against the bf16 peak would read MFU 2.0: it is an error naming dtype."""
    from solkit.errors import OptionError

    w = ops.matmul(8192, 8192, 8192, dtype="fp8")
    with pytest.raises(OptionError, match="dtype is 'bf16' but the workload's matrix kernels run in fp8"):
        sk.mfu(w, 1e-3, h200)
    # 2*8192^3 / (1978.9e12 * 1e-3) = 0.5556
    assert sk.mfu(w, 1e-3, h200, dtype="fp8") == pytest.approx(2 * 8192**3 / (1978.9e12 * 1e-3))


# ---- the breakdown, repeated kernels, arrays and errors ------------------------------------------


def test_repeated_kernels_and_rows(h200):
    """A 1x8192x8192 GEMV run 3 times: T_SOL 3 x 27.97 us; one row per distinct kernel, its figures per launch."""
    gemv = ops.matmul(1, 8192, 8192)
    r = sk.roofline(gemv.repeat(3), h200)
    assert r.t_sol == pytest.approx(3 * 134_250_496 / 4.8e12)  # 83.9 us
    assert r.t_memory == pytest.approx(3 * 134_250_496 / 4.8e12) and r.t_compute == pytest.approx(3 * 2 * 8192**2 / 989.4e12)
    (row,) = r.kernels
    assert (row.count, row.bound, row.bytes) == (3, "memory", 134_250_496)
    assert row.t_sol == pytest.approx(134_250_496 / 4.8e12)
    assert row.intensity == pytest.approx(2 * 8192 * 8192 / 134_250_496)  # 1.0 FLOP/B
    assert (r.flops, r.bytes) == (3 * 2 * 8192**2, 3 * 134_250_496)
    with pytest.raises(AttributeError, match="immutable"):
        r.t_sol = 0


def test_a_kernel_without_bytes_has_intensity_zero(h200):
    """A kernel that moves no bytes (hand-built, or absent in a sweep) has intensity 0, never inf or nan."""
    r = sk.roofline(Kernel("pure", "gemm", "bf16", matrix_flops=989.4e12), h200)
    assert r.kernels[0].intensity == 0.0 and r.intensity == 0.0
    assert r.t_sol == pytest.approx(1.0) and r.bound == "compute"  # 989.4e12 FLOP at 989.4 TFLOP/s
    sweep = sk.roofline(ops.conv2d(2, 16, 8, 8, 16, kernel=np.array([1, 3]), padding=np.array([0, 1]), layout="nchw"), h200)
    to_nhwc = sweep.kernels[0]
    assert list(to_nhwc.intensity) == [0.0, 0.0] and list(to_nhwc.bytes) == [0, 2 * 2 * 16 * 8 * 8 * 2]
    assert list(to_nhwc.bound) == ["compute", "memory"]  # no work at the 1x1 element: 0 >= 0


def test_bound_of_a_sweep_follows_the_larger_share(h200):
    """The sweep's bound per element: memory where the memory-bound kernels hold more of T_SOL."""
    r = sk.roofline(ops.matmul(np.array([1, 8192]), 8192, 8192, bias=True), h200)
    assert list(r.bound) == ["memory", "compute"]
    assert list(r.kernels[0].bound) == ["memory", "compute"]


def test_work_in_a_precision_without_a_peak(h200):
    """fp4 work on an H200 (no fp4 peak) is an error; none of it (an all-zero sweep figure) needs no peak."""
    from solkit.errors import UnsupportedPrecisionError

    with pytest.raises(UnsupportedPrecisionError, match="h200-sxm has no matrix peak for precision 'fp4'"):
        sk.roofline(Kernel("fp4 gemm", "gemm", "fp4", matrix_flops=1e12, bytes_read=1.0), h200)
    idle = Kernel("idle", "gemm", "fp4", matrix_flops=np.zeros(2), bytes_read=np.array([4.8e12, 9.6e12]))
    assert list(sk.roofline(idle, h200).t_sol) == [1.0, 2.0]  # bytes only: 4.8e12 B at 4.8 TB/s
    with pytest.raises(UnsupportedPrecisionError):
        sk.roofline(Kernel("some", "gemm", "fp4", matrix_flops=np.array([0.0, 1.0]), bytes_read=1.0), h200)


def test_rates_and_fractions_take_arrays(h200):
    """achieved_flops/bandwidth and sol_fraction broadcast over seconds; shapes that do not broadcast are named."""
    w = ops.matmul(8192, 8192, 8192)
    seconds = np.array([1.4e-3, 2.8e-3])
    assert sk.achieved_flops(w, seconds) == pytest.approx([2 * 8192**3 / 1.4e-3, 2 * 8192**3 / 2.8e-3])
    assert sk.achieved_bandwidth(w, seconds) == pytest.approx([402_653_184 / 1.4e-3, 402_653_184 / 2.8e-3])
    assert sk.sol_fraction(w, h200, seconds) == pytest.approx([1.1113e-3 / 1.4e-3, 1.1113e-3 / 2.8e-3], rel=1e-4)
    sweep = ops.matmul(np.array([1, 2, 3]), 8, 8)
    with pytest.raises(ShapeError, match=r"measured_seconds of shape \(2,\) does not broadcast with the workload's shape \(3,\)"):
        sk.sol_fraction(sweep, h200, np.array([1.0, 2.0]))
    for f in (sk.achieved_flops, sk.achieved_bandwidth):
        with pytest.raises(MeasurementError, match="seconds must be a positive finite number, got 0"):
            f(w, 0.0)
        with pytest.raises(MeasurementError, match="seconds gives a non-finite result"):
            f(w, 5e-324)


def test_mfu_of_vector_only_work_and_arrays(h200):
    """A workload with no matrix kernels takes any dtype; MFU broadcasts over seconds and GPU counts."""
    w = ops.layernorm(8192, 4096)  # 268,435,456 vector FLOPs, counted as model FLOPs
    assert sk.mfu(w, 1e-3, h200, dtype="fp8") == pytest.approx(268_435_456 / (1978.9e12 * 1e-3))
    got = sk.mfu(0.5e15, np.array([1.0, 2.0]), h200, n_gpus=np.array([1, 8]))
    # 0.5e15 / (989.4e12 x 1 s x 1) = 0.5054; / (989.4e12 x 2 s x 8) = 0.0316
    assert got == pytest.approx([0.5e15 / 989.4e12, 0.5e15 / (989.4e12 * 16)])
    assert sk.hfu(ops.matmul(64, 64, 64), 1.0, h200) == pytest.approx(2 * 64**3 / 989.4e12)


def test_multi_kernel_sums_and_ties(h200):
    """Two kernels of 1 s each, one compute-bound, one memory-bound: T_SOL 2 s, t_compute 1 s, t_memory 1 s; a tie is 'compute'."""
    compute = Kernel("c", "gemm", "bf16", matrix_flops=989.4e12)  # 1 s at 989.4 TFLOP/s, no bytes
    memory = Kernel("m", "copy", "bf16", bytes_read=2.4e12, bytes_written=2.4e12)  # 1 s at 4.8 TB/s
    r = sk.roofline(Workload("both", (compute, memory)), h200)
    assert (r.t_sol, r.t_compute, r.t_memory) == pytest.approx((2.0, 1.0, 1.0))
    assert r.bound == "compute"  # the compute share (1 s) is not below half of T_SOL (2 s)
    r3 = sk.roofline(Workload("more memory", (compute, memory, memory)), h200)
    assert r3.bound == "memory" and r3.t_memory == pytest.approx(2.0)


def test_a_sweep_dimension_that_moves_nothing_keeps_the_shape(h200):
    """An embedding swept over vocab (which costs nothing): every figure still has the sweep's shape."""
    r = sk.roofline(ops.embedding(8, np.array([100, 200, 300]), 16), h200)
    assert np.shape(r.t_sol) == np.shape(r.t_memory) == np.shape(r.t_compute) == (3,)
    assert list(r.t_sol) == [(8 * 8 + 2 * 8 * 16 * 2) / 4.8e12] * 3  # ids + rows read + rows written: 576 B
    assert list(r.bound) == ["memory"] * 3
