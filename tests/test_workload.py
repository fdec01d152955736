"""Kernel and Workload: validation of hand-built kernels, repeated parts, names and sums, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from solkit import ops
from solkit.errors import ArgumentTypeError, OptionError, ShapeError
from solkit.workload import Kernel, Workload, as_workload, chain


@pytest.mark.parametrize("figure", ["matrix_flops", "vector_flops", "bytes_read", "bytes_written", "model_flops", "launches"])
@pytest.mark.parametrize("value, error, says", [
    (-1.0, ShapeError, "finite number >= 0, got -1"),
    (float("nan"), ShapeError, "finite number >= 0, got nan"),
    (float("inf"), ShapeError, "finite number >= 0, got inf"),
    (np.array([1.0, -2.0]), ShapeError, "must not be negative"),
    (np.array([1.0, np.inf]), ShapeError, "is not finite"),
    (np.array([1.0, np.nan]), ShapeError, "is not finite"),
    ("8", ArgumentTypeError, "must be a number or an array of numbers, got '8'"),
    (True, ArgumentTypeError, "got True"),
    (None, ArgumentTypeError, "got None"),
    ([[1.0], [2.0, 3.0]], ArgumentTypeError, "must be a number or an array"),
])
def test_bad_kernel_figures_are_refused(figure, value, error, says):
    """A hand-built kernel with a negative, non-finite or non-numeric figure is refused, naming the kernel and the figure."""
    if figure == "model_flops" and value is None:
        return  # None is model_flops' default: the executed FLOPs
    with pytest.raises(error) as info:
        Kernel("mine", "gemm", "bf16", **{"matrix_flops": 10.0, "bytes_read": 4.0, figure: value})
    assert "mine" in str(info.value) and figure in str(info.value) and says in str(info.value)


def test_kernel_rules():
    """Model FLOPs may not exceed the executed ones; launches are at least 1; arrays must broadcast; names and kinds checked."""
    with pytest.raises(ShapeError, match="mine: model_flops must not exceed the executed FLOPs"):
        Kernel("mine", "gemm", "bf16", matrix_flops=10.0, vector_flops=2.0, model_flops=12.5)
    assert Kernel("mine", "gemm", "bf16", matrix_flops=10.0, vector_flops=2.0, model_flops=12.0).flops == 12.0
    with pytest.raises(ShapeError, match="model_flops must not exceed"):
        Kernel("mine", "gemm", "bf16", matrix_flops=np.array([10.0, 1.0]), model_flops=np.array([10.0, 2.0]))
    with pytest.raises(ShapeError, match="launches must be a whole number >= 1, got 0.5"):
        Kernel("mine", "im2col", "bf16", bytes_read=1.0, launches=0.5)
    with pytest.raises(ShapeError, match="launches must be a whole number >= 1, got 2.5"):
        Kernel("mine", "im2col", "bf16", bytes_read=1.0, launches=2.5)
    with pytest.raises(ShapeError, match="launches must be a whole number >= 1"):
        Kernel("mine", "im2col", "bf16", bytes_read=1.0, launches=np.array([1.0, 0.0]))
    with pytest.raises(ShapeError, match="launches must be a whole number >= 1"):
        Kernel("mine", "im2col", "bf16", bytes_read=1.0, launches=np.array([1.0, 1.5]))
    assert Kernel("mine", "im2col", "bf16", bytes_read=1.0, launches=np.array([1.0, 8.0])).launches.tolist() == [1, 8]
    with pytest.raises(ShapeError, match=r"do not broadcast together \(matrix_flops \(2,\), vector_flops \(\), bytes_read \(3,\)"):
        Kernel("mine", "gemm", "bf16", matrix_flops=np.ones(2), bytes_read=np.ones(3))
    with pytest.raises(ArgumentTypeError, match="name must be a non-empty string, got ''"):
        Kernel("", "gemm", "bf16")
    with pytest.raises(OptionError, match="kind must be one of gemm, conv, .*, got 'tensor'"):
        Kernel("mine", "tensor", "bf16")
    with pytest.raises(ArgumentTypeError, match=r"kind must be one of gemm, .*, got \['gemm'\]"):
        Kernel("mine", ["gemm"], "bf16")
    with pytest.raises(ArgumentTypeError, match="gemm must be a solkit.workload.Gemm or None, got 5"):
        Kernel("mine", "gemm", "bf16", gemm=5)
    with pytest.raises(ArgumentTypeError, match="op must be a string"):
        Kernel("mine", "gemm", "bf16", op=3)
    k = Kernel("mine", "gemm", "bfloat16", matrix_flops=3, bytes_read=1, vector_precision="float16")
    assert (k.precision, k.vector_precision, k.op, k.matrix_flops, k.model_flops) == ("bf16", "fp16", "mine", 3.0, 3.0)
    assert type(k.matrix_flops) is float and k.shape == ()
    assert k.renamed("other").name == "other" and k.renamed("other").op == "mine"


def test_kernel_sums():
    """executed = matrix + vector; bytes = read + written; a sweep's shape is its figures' broadcast shape."""
    k = Kernel("k", "gemm", "bf16", matrix_flops=np.array([1.0, 2.0]), vector_flops=3.0, bytes_read=5.0,
               bytes_written=np.array([[7.0], [11.0]]))
    assert list(k.executed_flops) == [4.0, 5.0]
    assert k.bytes.tolist() == [[12.0], [16.0]]
    assert k.shape == (2, 2)


def _k(name: str, flops: float = 2.0, nbytes: float = 8.0) -> Kernel:
    return Kernel(name, "elementwise", "bf16", vector_flops=flops, bytes_read=nbytes)


def test_workload_parts_counts_and_sums():
    """A 3-kernel workload repeated 4 times, then one more kernel: 13 launches, 4 distinct kernels, sums by hand."""
    layer = Workload("layer", (_k("a", 1.0), _k("b", 2.0), _k("c", 3.0)))
    model = chain("model", layer.repeat(4, "layers"), _k("head", 10.0, 100.0))
    assert [(k.name, n) for k, n in model.counted] == [("a", 4), ("b", 4), ("c", 4), ("head", 1)]
    assert [k.name for k in model.kernels] == ["a", "b", "c"] * 4 + ["head"]
    assert len(model) == 13
    assert model.flops == 4 * (1.0 + 2.0 + 3.0) + 10.0  # 34
    assert model.bytes == 4 * 3 * 8.0 + 100.0  # 196
    assert model.repeat(2).flops == 68.0  # nested repeats multiply
    assert model.repeat(2).name == "model x 2"
    assert model.name == "model" and model.parts[0][1] == 1 and model.parts[0][0].name == "layers"


@pytest.mark.parametrize("count, error", [(0, ShapeError), (-1, ShapeError), (1.5, ShapeError), (2.0, ShapeError),
                                          (True, ArgumentTypeError), ("2", ArgumentTypeError), (None, ArgumentTypeError)])
def test_repeat_counts_must_be_positive_integers(count, error):
    """repeat(count) takes a positive int (numpy ints too): a bad number is a ShapeError, a non-number a type error."""
    with pytest.raises(error, match=f"count must be a positive integer, got {count!r}"):
        Workload("w", (_k("a"),)).repeat(count)


def test_repeat_cap_and_overflow():
    """At most 2**53 launches in all; a count whose totals leave float64 is refused naming count; 10**12 is fine."""
    w = Workload("w", (_k("a", 2.0, 8.0), _k("b", 2.0, 8.0)))  # 2 launches per repeat
    assert len(w.repeat(2**52)) == 2**53  # 2 * 2**52 = 9,007,199,254,740,992: exactly the cap
    with pytest.raises(ShapeError, match="count must keep the workload at most 9,007,199,254,740,992 launches"):
        w.repeat(2**52 + 1)
    with pytest.raises(ShapeError, match="count must keep"):
        w.repeat(10**400)
    big = Workload("big", (Kernel("k", "copy", "bf16", bytes_read=1e300),))
    with pytest.raises(ShapeError, match="count: the workload's bytes_read is beyond float64"):
        big.repeat(10**9)  # 1e300 * 1e9 = 1e309 > 1.8e308
    assert w.repeat(10**12).flops == 4e12  # (2 + 2) FLOPs x 10**12


def test_kernels_lists_at_most_ten_million_launches():
    """w.kernels builds one entry per launch: beyond 10**7 it is refused, naming counted and len."""
    w = Workload("w", (_k("a"),))
    assert len(w.repeat(10**7).kernels) == 10**7
    with pytest.raises(ShapeError, match=r"kernels would list 10,000,001 launches.*w\.counted.*len\(w\)"):
        w.repeat(10**7 + 1).kernels


def test_chain_shapes_must_broadcast():
    """chain of a (2,) sweep and a (3,) sweep is a ShapeError naming both shapes; (2,) with (3, 1) broadcasts to (3, 2)."""
    with pytest.raises(ShapeError, match=r"workloads: the workloads' shapes do not broadcast together: 'matmul' \(2,\), "
                                         r"'matmul' \(3,\)"):
        chain("c", ops.matmul([1, 2], 8, 8), ops.matmul([1, 2, 3], 8, 8))
    w = chain("c", ops.matmul([1, 2], 8, 8), ops.matmul([[1], [2], [3]], 8, 8))
    assert w.shape == (3, 2)
    assert w.flops.tolist()[2] == [2 * 1 * 8 * 8 + 2 * 3 * 8 * 8, 2 * 2 * 8 * 8 + 2 * 3 * 8 * 8]  # [512, 640]


def test_chain_totals_beyond_float64_are_refused():
    """Two kernels of 1e308 bytes each sum beyond float64: refused when chained, never an inf figure."""
    half = Kernel("half", "copy", "bf16", bytes_read=1e308)
    with pytest.raises(ShapeError, match="workloads: the workload's bytes_read is beyond float64"):
        chain("c", half, half)
    with pytest.raises(ShapeError, match="kernels: the workload's bytes_read is beyond float64"):
        Workload("w", (half, half))


def test_repeat_takes_numpy_ints():
    """A numpy integer count works like the int."""
    assert Workload("w", (_k("a"),)).repeat(np.int64(3)).counted[0][1] == 3


def test_names_add_and_rename():
    """a + b keeps both in order under 'a + b'; renamed(kernels=True) renames a one-kernel workload's kernel only."""
    a, b = Workload("a", (_k("ka"),)), Workload("b", (_k("kb"),))
    both = a + b
    assert both.name == "a + b" and [k.name for k in both.kernels] == ["ka", "kb"]
    with pytest.raises(ArgumentTypeError, match="the right operand of \\+ must be a solkit Workload or Kernel, got int"):
        a + 1
    with pytest.raises(ArgumentTypeError, match="the left operand of \\+ must be a solkit Workload or Kernel, got str"):
        "x" + a
    assert [k.name for k in sum([a, b, a]).kernels] == ["ka", "kb", "ka"]  # sum() starts from 0
    assert a.renamed("x").name == "x" and a.renamed("x").kernels[0].name == "ka"
    assert a.renamed("x", kernels=True).kernels[0].name == "x"
    assert both.renamed("y", kernels=True).kernels[0].name == "ka"  # two kernels: the kernels keep their names
    m = ops.matmul(8, 8, 8).renamed("o_proj", kernels=True)
    assert m.call.op == "matmul" and m.kernels[0].op == "matmul"  # the operator and its calibration key stay


def test_workload_and_chain_errors():
    """Bad parts are type errors naming what was expected."""
    with pytest.raises(ArgumentTypeError, match="kernels must be a non-empty sequence of Kernel"):
        Workload("w", ())
    with pytest.raises(ArgumentTypeError, match="kernels must be a non-empty sequence of Kernel"):
        Workload("w", _k("a"))
    with pytest.raises(ArgumentTypeError, match="kernels must be a non-empty sequence of Kernel"):
        Workload("w", [_k("a"), "b"])
    with pytest.raises(ArgumentTypeError, match="name must be a string, got 3"):
        Workload(3, (_k("a"),))
    with pytest.raises(ArgumentTypeError, match=r"workloads\[1\] must be a solkit Workload or Kernel, got str"):
        chain("c", _k("a"), "b")
    with pytest.raises(ArgumentTypeError, match="chain needs at least one workload"):
        chain("c")
    with pytest.raises(ArgumentTypeError, match="forward must be a solkit Workload or Kernel, got int"):
        as_workload(3, "forward")
    assert as_workload(_k("a")).name == "a" and as_workload(_k("a")).kernels[0].name == "a"
    with pytest.raises(AttributeError, match="immutable"):
        Workload("w", (_k("a"),)).name = "x"


def test_workload_figures_take_the_sweep_shape():
    """Figures of a sweep are arrays of the workload's shape, also those no dimension varies (a copy's FLOPs)."""
    w = ops.copy(np.array([10, 20, 30]))
    assert w.shape == (3,)
    assert w.flops.shape == (3,) and list(w.flops) == [0, 0, 0]
    assert list(w.bytes) == [40, 80, 120]  # read + write, bf16
    assert ops.copy(10).flops == 0.0 and type(ops.copy(10).bytes) is float
