"""Adversarial cases: api (see adversarial.py).

Bad and edge inputs to the Python API outside the measurement functions: shapes that do not
broadcast, integers and figures beyond float64, numpy scalar types and 0-d arrays, odd arrays
(empty, NaN, object, ragged), dtype spellings, hand-built kernels, workload arithmetic
(repeat, chain, +), the models' arguments and keywords, sweep, plot.save's paths, layer counts
that are typos (10**12) and threads. A ``works`` case checks its number by hand arithmetic or
against the plain-int call, raising AssertionError (judged ``foreign``) if it differs.
"""

from __future__ import annotations

import decimal
import fractions
import functools
import os
import pathlib
import sys
import tempfile
import threading
from typing import Any, Callable

import numpy as np

import solkit as sk
from adversarial import Adv
from solkit import models, ops
from solkit.errors import (
    ArgumentTypeError,
    OptionError,
    ShapeError,
    UnknownGPUError,
    UnknownPrecisionError,
)
from solkit.workload import Gemm, Kernel, Workload, chain

# ---- helpers ------------------------------------------------------------------------------------


def R(w: Any, gpu: Any = "h200") -> Any:
    """T_SOL of ``w`` on ``gpu``."""
    return sk.roofline(w, gpu).t_sol


def P(w: Any, gpu: Any = "h200") -> Any:
    """The calibrated prediction of ``w`` (no performance notes)."""
    return sk.predict(w, gpu, warn=False).seconds


def same(a: Any, b: Any) -> None:
    """Raise AssertionError unless ``a`` and ``b`` are equal figures of the same shape (type float for scalars)."""
    if np.shape(a) != np.shape(b) or not np.allclose(a, b, rtol=1e-12, atol=0):
        raise AssertionError(f"{a!r} != {b!r}")
    if np.ndim(a) == 0 and type(a) is not float:
        raise AssertionError(f"a scalar result must be a float, got {type(a).__name__}")


def finite(x: Any) -> Any:
    """``x`` if every element is finite, else AssertionError (an inf or NaN figure is never a result)."""
    if not np.all(np.isfinite(x)):
        raise AssertionError(f"non-finite figure {x!r}")
    return x


def check(condition: bool, what: str) -> None:
    """AssertionError unless ``condition``."""
    if not condition:
        raise AssertionError(what)


def mm(m: Any = 64, n: Any = 64, k: Any = 64, **kw: Any) -> Any:
    """T_SOL of a matmul on the H200."""
    return R(ops.matmul(m, n, k, **kw))


MM64 = 2 * 64**3 / 989.4e12  # 2*64*64*64 = 524,288 FLOP; memory 3*64*64*2 B = 24,576 B / 4.8e12 = 5.12e-9 s (bound)
MM64_T = 3 * 64 * 64 * 2 / 4.8e12  # memory-bound: 5.12e-9 s


def kern(**figures: Any) -> Kernel:
    """A hand-built GEMM kernel named 'mine' with the given figures."""
    return Kernel("mine", "gemm", "bf16", **figures)


def small() -> Workload:
    """A one-kernel workload: 2 FLOPs, 8 bytes."""
    return Workload("w", (Kernel("a", "elementwise", "bf16", vector_flops=2.0, bytes_read=8.0),))


def tiny_model(**kw: Any) -> Workload:
    """A 2-layer transformer: vocab 1000, 1 x 128 tokens, d 512, 8 heads (overridable)."""
    args: dict[str, Any] = dict(layers=2, vocab=1000, batch=1, seq=128, d_model=512, heads=8)
    args.update(kw)
    return models.transformer(**args)


@functools.lru_cache(maxsize=1)
def figure() -> Any:
    """One roofline chart to save (drawn once)."""
    from solkit import plot

    return plot.roofline({"mm": ops.matmul(4096, 4096, 4096)}, "h200")


def plot_save(path: Any, fig: Any = "chart", **kw: Any) -> str:
    """solkit.plot.save of the chart (or of ``fig``) to ``path``."""
    from solkit import plot

    return plot.save(figure() if fig == "chart" else fig, path, **kw)


def chart(workloads: Any) -> Any:
    """A roofline chart of ``workloads`` on the H200 (a plain Figure, no pyplot state)."""
    from solkit import plot

    return plot.roofline(workloads, "h200")


def in_temp(job: Callable[[str], Any]) -> Any:
    """``job(folder)`` in a fresh temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="solkit-adv-") as folder:
        return job(folder)


def save(name: str, make_dir: Callable[[str], str] = lambda d: d, **kw: Any) -> str:
    """plot.save of the chart at ``name`` in a fresh temporary folder (``make_dir`` may turn it into another)."""
    return in_temp(lambda d: plot_save(os.path.join(make_dir(d), name), **kw))


def saved_exactly(name: str, written_name: str) -> None:
    """save returns the exact path it wrote (``name`` -> ``written_name``) and the file is there."""

    def job(folder: str) -> None:
        path = plot_save(os.path.join(folder, name))
        check(path == os.path.join(folder, written_name), f"save returned {path!r}")
        check(os.path.getsize(path) > 1000, f"{path} is missing or empty")

    in_temp(job)


def big_model() -> Workload:
    """A transformer whose layer count is a typo: 10**12 layers."""
    return tiny_model(layers=10**12)


def scale_roofline() -> None:
    """10**12 layers: T_SOL = embedding + 10**12 x one layer + final norm + LM head, by the counts."""
    one, many = sk.roofline(tiny_model(layers=1), "h200"), sk.roofline(big_model(), "h200")
    layer = R(models.decoder_layer(1, 128, 512, 8))
    # T(L) = T(1) + (L - 1) * T(layer): (10**12 - 1) layers more than the 1-layer model
    check(np.isclose(many.t_sol, one.t_sol + (10**12 - 1) * layer, rtol=1e-9), f"{many.t_sol} vs layers")
    check(len(many.kernels) == len(one.kernels), "the breakdown lists distinct kernels, not launches")


def scale_flops() -> None:
    """10**12 layers: model FLOPs are exactly 10**12 x a layer's, plus the rest."""
    one = tiny_model(layers=1).flops
    layer = models.decoder_layer(1, 128, 512, 8).flops
    check(np.isclose(big_model().flops, one + (10**12 - 1) * layer, rtol=1e-12), "model FLOPs")


def threads(job: Callable[[int], Any], n: int = 8) -> None:
    """Run ``job(i)`` in ``n`` threads at once; each result must equal the single-threaded one."""
    expected = [job(i) for i in range(n)]
    got: list[Any] = [None] * n
    errors: list[BaseException] = []
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible

    def run(i: int) -> None:
        try:
            got[i] = job(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    try:
        pool = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    finally:
        sys.setswitchinterval(previous)
    if errors:
        raise errors[0]
    check(got == expected, "a thread got another result than the single-threaded call")


GPUS = ("h200", "a100", "b200", "mi300x", "h100", "l40s", "h100-pcie", "a100-40gb")
SHAPES = ((1, 4096, 4096), (64, 8192, 128), (4096, 4096, 4096), (8192, 128, 8192))


def _rooflines(i: int) -> list[tuple[float, float, str]]:
    """Thread job: roofline and prediction of several matmuls on one GPU per thread."""
    g = GPUS[i % len(GPUS)]
    out = []
    for m, n, k in SHAPES:
        w = ops.matmul(m, n, k)
        r = sk.roofline(w, g)
        out.append((r.t_sol, P(w, g), r.bound))
    return out


def _same_gpu(i: int) -> list[float]:
    """Thread job: every thread on the H200, by name and by object."""
    return [R(ops.matmul(m, n, k), "h200" if i % 2 else sk.load_gpu("h200")) for m, n, k in SHAPES]


_SHARED: list[Workload] = []


def _shared(i: int) -> tuple[float, float, float, int]:
    """Thread job: one Workload object shared by every thread (its lazy parts built by whichever comes first)."""
    if not _SHARED:
        _SHARED.append(tiny_model(layers=32))
    w = _SHARED[0]
    return R(w, GPUS[i % 3]), P(w, GPUS[i % 3]), w.flops, len(w.counted)


def _models(i: int) -> tuple[float, float]:
    """Thread job: a model and its training step per thread, on alternating GPUs."""
    w = tiny_model(layers=1 + i % 3)
    g = GPUS[i % 2]
    return R(models.training_step(w, optimizer=None), g), P(w, g)


def _sweeps(i: int) -> list[float]:
    """Thread job: a 1000-shape sweep per thread."""
    m = np.arange(1, 1001) * (1 + i % 2)
    return list(np.asarray(P(ops.matmul(m, 4096, 4096), GPUS[i % 4])))


# ---- cases --------------------------------------------------------------------------------------

CASES: list[Adv] = [
    # integers and figures beyond float64 (about 1.8e308)
    Adv("api-overflow: matmul m=10**400", lambda: ops.matmul(10**400, 2, 2), ShapeError, ValueError, ("m must", "float64")),
    Adv("api-overflow: matmul n=10**400", lambda: ops.matmul(2, 10**400, 2), ShapeError, ValueError, ("n",)),
    Adv("api-overflow: matmul m=-10**400", lambda: ops.matmul(-(10**400), 2, 2), ShapeError, ValueError, ("m must",)),
    Adv("api-overflow: matmul m=[10**400] list", lambda: ops.matmul([10**400], 8, 8), ShapeError, ValueError, ("m must",)),
    Adv("api-overflow: matmul m=[1.0, 10**400] mixed list", lambda: ops.matmul([1.0, 10**400], 8, 8), ShapeError,
        ValueError, ("m must",)),
    Adv("api-overflow: matmul m object array of 10**400", lambda: ops.matmul(np.array([10**400], dtype=object), 8, 8),
        ShapeError, ValueError, ("m must",)),
    Adv("api-overflow: matmul 10**300 x 10**300 figures overflow", lambda: ops.matmul(10**300, 10**300, 2), ShapeError,
        ValueError, ("m=1e+300", "n=1e+300", "too large")),
    Adv("api-overflow: matmul 1e200 x 1e200 floats", lambda: ops.matmul(1e200, 1e200, 2.0), ShapeError, ValueError,
        ("m=", "n=")),
    Adv("api-overflow: matmul m=float max", lambda: ops.matmul(1.7976931348623157e308, 1, 1), ShapeError, ValueError,
        ("m=",)),
    Adv("api-overflow: matmul sweep with one huge element", lambda: ops.matmul(np.array([1.0, 1e200]), 1e200, 8),
        ShapeError, ValueError, ("m=", "n=")),
    Adv("api-overflow: matmul batch 1e300", lambda: ops.matmul(1e5, 1e5, 1e5, batch=1e300), ShapeError, ValueError,
        ("batch=",)),
    Adv("api-overflow: attention seq_q 10**200", lambda: ops.attention(1, 32, 10**200), ShapeError, ValueError,
        ("seq_q=",)),
    Adv("api-overflow: conv2d batch 1e305", lambda: ops.conv2d(1e305, 64, 56, 56, 64), ShapeError, ValueError,
        ("batch=",)),
    Adv("api-overflow: layernorm tokens 10**307", lambda: ops.layernorm(10**307, 1000), ShapeError, ValueError,
        ("tokens=",)),
    Adv("api-overflow: softmax rows 1e308", lambda: ops.softmax(1e308, 10), ShapeError, ValueError, ("rows=",)),
    Adv("api-overflow: elementwise elements 1e308", lambda: ops.elementwise(1e308, flops_per_element=2),
        ShapeError, ValueError, ("elements=",)),
    Adv("api-overflow: im2col in_channels 1e305 sweep", lambda: ops.im2col(np.array([1, 2]), 1e305, 32, 32),
        ShapeError, ValueError, ("in_channels=",)),
    Adv("api-overflow: hand-built kernel matrix_flops=10**400", lambda: kern(matrix_flops=10**400), ShapeError,
        ValueError, ("matrix_flops", "float64")),
    Adv("api-overflow: hand-built kernel bytes_read=[10**400]", lambda: kern(bytes_read=[10**400]), ShapeError,
        ValueError, ("bytes_read",)),
    Adv("api-overflow: repeat(10**400)", lambda: small().repeat(10**400), ShapeError, ValueError, ("count",)),
    Adv("api-overflow: repeat beyond 2**53 launches", lambda: small().repeat(2**53 + 1), ShapeError, ValueError,
        ("count", "2**53")),
    Adv("api-overflow: nested repeats 10**8 x 10**8", lambda: small().repeat(10**8).repeat(10**8), ShapeError,
        ValueError, ("count",)),
    Adv("api-overflow: repeat whose bytes leave float64",
        lambda: Workload("big", (Kernel("k", "copy", "bf16", bytes_read=1e300),)).repeat(10**9), ShapeError,
        ValueError, ("count", "bytes_read")),
    Adv("api-overflow: chain of two 1e308-byte kernels",
        lambda: chain("c", Kernel("h", "copy", "bf16", bytes_read=1e308), Kernel("h", "copy", "bf16", bytes_read=1e308)),
        ShapeError, ValueError, ("workloads", "bytes_read")),
    Adv("api-overflow: Workload of two 1e308-byte kernels",
        lambda: Workload("w", [Kernel("h", "copy", "bf16", bytes_read=1e308)] * 2), ShapeError, ValueError,
        ("kernels", "bytes_read")),
    Adv("api-overflow: transformer layers=10**20", lambda: tiny_model(layers=10**20), ShapeError, ValueError,
        ("layers",)),
    Adv("api-overflow: preset layers=10**400", lambda: models.preset("llama3-8b").with_(layers=10**400).forward(),
        ShapeError, ValueError, ("layers",)),
    Adv("api-overflow: preset seq=10**300", lambda: models.preset("llama3-8b").forward(seq=10**300), ShapeError,
        ValueError, ("seq=",)),
    Adv("api-overflow: transformer d_model 1e306", lambda: tiny_model(seq=1, d_model=10**306), ShapeError, ValueError,
        ("d_model",)),
    Adv("api-overflow: transformer batch sweep to 1.7e308", lambda: tiny_model(batch=np.array([1.0, 1.7e308])),
        ShapeError, ValueError, ("batch",)),
    Adv("api-overflow: resnet50 batch 10**306", lambda: models.resnet50(10**306), ShapeError, ValueError, ("batch",)),
    Adv("api-overflow: resnet50 image 10**160", lambda: models.resnet50(1, image=10**160), ShapeError, ValueError,
        ("image",)),
    Adv("api-overflow: seq 10**100 stays finite (1e190 s)", lambda: finite(P(models.preset("llama3-8b").forward(seq=10**100))),
        None),
    Adv("api-overflow: training step of seq 10**100 stays finite",
        lambda: finite(R(models.training_step(models.preset("llama3-8b").forward(seq=10**100)))), None),
    Adv("api-overflow: matmul 2**64 (beyond int64) is exact in float64",
        lambda: same(sk.roofline(ops.matmul(2**64, 8, 8), "h200").flops, 2.0 * 2**64 * 8 * 8), None),

    # numpy scalar types, 0-d arrays and other spellings of a number: the same answer as plain ints
    Adv("api-scalar: numpy int64/int32/uint16 dimensions",
        lambda: same(mm(np.int64(64), np.int32(64), np.uint16(64)), mm()), None),
    Adv("api-scalar: numpy float64 dimension", lambda: same(mm(np.float64(64.0)), mm()), None),
    Adv("api-scalar: numpy float32 dimension", lambda: same(mm(np.float32(64)), mm()), None),
    Adv("api-scalar: 0-d array dimension", lambda: same(mm(np.array(64)), mm()), None),
    Adv("api-scalar: 0-d object array dimension", lambda: same(mm(np.array(64, dtype=object)), mm()), None),
    Adv("api-scalar: float 64.0 dimension", lambda: same(mm(64.0), mm()), None),
    Adv("api-scalar: uint64 2**63", lambda: finite(mm(np.uint64(2**63))), None),
    Adv("api-scalar: matmul 64^3 is memory-bound by hand", lambda: same(mm(), MM64_T), None),
    Adv("api-scalar: numpy int64 layer count", lambda: same(R(tiny_model(layers=np.int64(2))), R(tiny_model())), None),
    Adv("api-scalar: 0-d array layer count", lambda: same(R(tiny_model(layers=np.array(2))), R(tiny_model())), None),
    Adv("api-scalar: float 2.0 layer count", lambda: same(R(tiny_model(layers=2.0)), R(tiny_model())), None),
    Adv("api-scalar: repeat(np.int64(3))", lambda: check(small().repeat(np.int64(3)).flops == 6.0, "3 x 2 FLOPs"), None),
    Adv("api-scalar: repeat(np.uint8(3))", lambda: check(len(small().repeat(np.uint8(3))) == 3, "3 launches"), None),
    Adv("api-scalar: kernel figure np.float32", lambda: check(type(kern(matrix_flops=np.float32(1.5)).matrix_flops) is float,
                                                              "float"), None),
    Adv("api-scalar: kernel figure 0-d array", lambda: check(kern(matrix_flops=np.array(5.0)).matrix_flops == 5.0, "5"),
        None),
    Adv("api-scalar: resnet50 batch numpy int", lambda: same(R(models.resnet50(np.int64(2))), R(models.resnet50(2))),
        None),

    # types where a number, a flag or a name belongs
    Adv("api-types: matmul m=True", lambda: ops.matmul(True, 8, 8), ArgumentTypeError, TypeError, ("m must", "bool")),
    Adv("api-types: matmul m=np.bool_", lambda: ops.matmul(np.bool_(True), 8, 8), ArgumentTypeError, TypeError, ("m must",)),
    Adv("api-types: matmul m='8'", lambda: ops.matmul("8", 8, 8), ArgumentTypeError, TypeError, ("m must", "string")),
    Adv("api-types: matmul m=None", lambda: ops.matmul(None, 8, 8), ArgumentTypeError, TypeError, ("m must",)),
    Adv("api-types: matmul m=1j", lambda: ops.matmul(1j, 8, 8), ArgumentTypeError, TypeError, ("m must",)),
    Adv("api-types: matmul m=Decimal", lambda: ops.matmul(decimal.Decimal(8), 8, 8), ArgumentTypeError, TypeError,
        ("m must",)),
    Adv("api-types: matmul m=Fraction", lambda: ops.matmul(fractions.Fraction(8, 1), 8, 8), ArgumentTypeError,
        TypeError, ("m must",)),
    Adv("api-types: matmul m=object()", lambda: ops.matmul(object(), 8, 8), ArgumentTypeError, TypeError, ("m must",)),
    Adv("api-types: matmul m array of strings", lambda: ops.matmul(np.array(["8"]), 8, 8), ArgumentTypeError, TypeError,
        ("m must",)),
    Adv("api-types: matmul m array of bools", lambda: ops.matmul(np.array([True, False]), 8, 8), ArgumentTypeError,
        TypeError, ("m must", "bools")),
    Adv("api-types: matmul m ragged list", lambda: ops.matmul([[1, 2], [3]], 8, 8), ArgumentTypeError, TypeError,
        ("m must",)),
    Adv("api-types: matmul m object array with None", lambda: ops.matmul(np.array([1, None], dtype=object), 8, 8),
        ArgumentTypeError, TypeError, ("m must",)),
    Adv("api-types: matmul bias=1", lambda: ops.matmul(8, 8, 8, bias=1), ArgumentTypeError, TypeError, ("bias",)),
    Adv("api-types: matmul bias='yes'", lambda: ops.matmul(8, 8, 8, bias="yes"), ArgumentTypeError, TypeError,
        ("bias",)),
    Adv("api-types: matmul epilogue=None", lambda: ops.matmul(8, 8, 8, epilogue=None), ArgumentTypeError, TypeError,
        ("epilogue",)),
    Adv("api-types: matmul epilogue='GELU' (case)", lambda: same(mm(epilogue="GELU"), mm(epilogue="gelu")), None),
    Adv("api-types: conv2d kernel='3'", lambda: ops.conv2d(1, 8, 32, 32, 8, kernel="3"), ArgumentTypeError, TypeError,
        ("kernel",)),
    Adv("api-types: conv2d kernel=(3, 3, 3)", lambda: ops.conv2d(1, 8, 32, 32, 8, kernel=(3, 3, 3)), ArgumentTypeError,
        TypeError, ("kernel",)),
    Adv("api-types: attention causal=1", lambda: ops.attention(1, 8, 128, causal=1), ArgumentTypeError, TypeError,
        ("causal",)),
    Adv("api-types: chain of a string", lambda: chain("x", "matmul"), ArgumentTypeError, TypeError, ("workloads[0]",)),
    Adv("api-types: chain name 5", lambda: chain(5, small()), ArgumentTypeError, TypeError, ("name",)),
    Adv("api-types: repeat name 5", lambda: small().repeat(2, name=5), ArgumentTypeError, TypeError, ("name",)),
    Adv("api-types: renamed(5)", lambda: small().renamed(5), ArgumentTypeError, TypeError, ("name",)),
    Adv("api-types: Workload of a string", lambda: Workload("w", "abc"), ArgumentTypeError, TypeError, ("kernels",)),
    Adv("api-types: workload + 1", lambda: small() + 1, ArgumentTypeError, TypeError, ("operand",)),
    Adv("api-types: 'x' + workload", lambda: "x" + small(), ArgumentTypeError, TypeError, ("operand",)),
    Adv("api-types: sum() of workloads", lambda: check(sum([small(), small(), small()]).flops == 6.0, "3 x 2 FLOPs"),
        None),

    # dtype spellings
    Adv("api-dtype: numpy float16", lambda: same(mm(dtype=np.float16), mm(dtype="fp16")), None),
    Adv("api-dtype: numpy dtype object", lambda: same(mm(dtype=np.dtype("float32")), mm(dtype="fp32")), None),
    Adv("api-dtype: ' BF16 ' with spaces and case", lambda: same(mm(dtype=" BF16 "), mm()), None),
    Adv("api-dtype: 'torch.bfloat16' spelling", lambda: same(mm(dtype="torch.bfloat16"), mm()), None),
    Adv("api-dtype: 'float8_e4m3fn' spelling", lambda: same(mm(dtype="float8_e4m3fn"), mm(dtype="fp8")), None),
    Adv("api-dtype: numpy bool dtype", lambda: ops.matmul(8, 8, 8, dtype=np.bool_), UnknownPrecisionError, ValueError,
        ("dtype",)),
    Adv("api-dtype: numpy complex dtype", lambda: ops.matmul(8, 8, 8, dtype=np.complex64), UnknownPrecisionError,
        ValueError, ("dtype",)),
    Adv("api-dtype: empty string", lambda: ops.matmul(8, 8, 8, dtype=""), UnknownPrecisionError, ValueError, ("dtype",)),
    Adv("api-dtype: full-width 'ｂｆ16'", lambda: ops.matmul(8, 8, 8, dtype="ｂｆ16"), UnknownPrecisionError, ValueError,
        ("dtype",)),
    Adv("api-dtype: dtype=5", lambda: ops.matmul(8, 8, 8, dtype=5), ArgumentTypeError, TypeError, ("dtype",)),
    Adv("api-dtype: dtype=['bf16']", lambda: ops.matmul(8, 8, 8, dtype=["bf16"]), ArgumentTypeError, TypeError,
        ("dtype",)),

    # arrays: empty, NaN, infinite, negative, fractional, -0.0, lists, tuples, broadcasting
    Adv("api-arrays: empty array", lambda: ops.matmul(np.array([]), 8, 8), ShapeError, ValueError, ("m must", "empty")),
    Adv("api-arrays: empty list", lambda: ops.attention([], 8, 128), ShapeError, ValueError, ("batch", "empty")),
    Adv("api-arrays: NaN element", lambda: ops.matmul([1, np.nan], 8, 8), ShapeError, ValueError, ("m must", "nan",
                                                                                                  "index 1")),
    Adv("api-arrays: inf element", lambda: ops.matmul([1, np.inf], 8, 8), ShapeError, ValueError, ("m must", "inf")),
    Adv("api-arrays: negative element", lambda: ops.matmul([1, -1], 8, 8), ShapeError, ValueError, ("m must", "-1")),
    Adv("api-arrays: fractional element", lambda: ops.matmul([1, 0.5], 8, 8), ShapeError, ValueError, ("m must", "0.5")),
    Adv("api-arrays: negative zero", lambda: ops.matmul(-0.0, 8, 8), ShapeError, ValueError, ("m must",)),
    Adv("api-arrays: negative zero in an array", lambda: ops.matmul([1, -0.0], 8, 8), ShapeError, ValueError, ("m must",)),
    Adv("api-arrays: tuple equals list", lambda: same(mm((1, 2), 8, 8), mm([1, 2], 8, 8)), None),
    Adv("api-arrays: range", lambda: same(mm(range(1, 4), 8, 8), mm(np.array([1, 2, 3]), 8, 8)), None),
    Adv("api-arrays: float16 array", lambda: same(mm(np.array([1, 2], dtype=np.float16), 8, 8), mm([1, 2], 8, 8)), None),
    Adv("api-arrays: 2-d list", lambda: check(mm([[1, 2], [3, 4]], 8, 8).shape == (2, 2), "shape (2, 2)"), None),
    Adv("api-arrays: 7-d array", lambda: check(mm(np.ones((1, 1, 1, 1, 1, 1, 2)), 8, 8).shape == (1,) * 6 + (2,),
                                               "shape"), None),
    Adv("api-arrays: (2,1) x (3,) grid", lambda: check(mm(np.array([[1], [2]]), [1, 2, 3], 8).shape == (2, 3), "(2, 3)"),
        None),
    Adv("api-broadcast: matmul m (2,) with n (3,)", lambda: ops.matmul([1, 2], [1, 2, 3], 8), ShapeError, ValueError,
        ("m (2,)", "n (3,)")),
    Adv("api-broadcast: conv2d batch (2,) with height (3,)", lambda: ops.conv2d([1, 2], 8, [8, 16, 32], 8, 8),
        ShapeError, ValueError, ("batch", "height")),
    Adv("api-broadcast: attention batch (2,) with heads (3,)", lambda: ops.attention([1, 2], [8, 16, 32], 128),
        ShapeError, ValueError, ("batch", "heads")),
    Adv("api-broadcast: chain of (2,) and (3,) sweeps", lambda: chain("c", ops.matmul([1, 2], 8, 8),
                                                                      ops.matmul([1, 2, 3], 8, 8)),
        ShapeError, ValueError, ("workloads", "(2,)", "(3,)")),
    Adv("api-broadcast: workload + workload of other shapes", lambda: ops.matmul([1, 2], 8, 8) + ops.matmul([1, 2, 3], 8, 8),
        ShapeError, ValueError, ("workloads",)),
    Adv("api-broadcast: chain of (2,) and (3, 1) broadcasts to (3, 2)",
        lambda: check(R(chain("c", ops.matmul([1, 2], 8, 8), ops.matmul([[1], [2], [3]], 8, 8))).shape == (3, 2),
                      "(3, 2)"), None),
    Adv("api-broadcast: hand-built kernel figures (2,) and (3,)",
        lambda: kern(matrix_flops=np.ones(2), bytes_read=np.ones(3)), ShapeError, ValueError,
        ("matrix_flops (2,)", "bytes_read (3,)")),
    Adv("api-broadcast: transformer batch (2,) with seq (3,)", lambda: tiny_model(batch=[1, 2], seq=[128, 256, 512]),
        ShapeError, ValueError, ("batch (2,)", "seq (3,)")),
    Adv("api-broadcast: transformer vocab (2,) with batch (3,)", lambda: tiny_model(vocab=[1000, 2000], batch=[1, 2, 4]),
        ShapeError, ValueError, ("vocab", "batch")),
    Adv("api-broadcast: decoder_layer d_model (3,) with heads (2,)",
        lambda: models.decoder_layer(1, 128, [512, 1024, 2048], [8, 16]), ShapeError, ValueError, ("d_model", "heads")),
    Adv("api-broadcast: resnet50 batch (2,) with image (3,)", lambda: models.resnet50([1, 2], image=[224, 112, 56]),
        ShapeError, ValueError, ("batch", "image")),
    Adv("api-broadcast: transformer batch (2,1) with seq (3,) works",
        lambda: check(R(tiny_model(batch=[[1], [2]], seq=[128, 256, 512])).shape == (2, 3), "(2, 3)"), None),

    # hand-built kernels are refused when built
    Adv("api-kernel: model FLOPs above executed", lambda: kern(matrix_flops=1.0, model_flops=2.0), ShapeError,
        ValueError, ("model_flops", "exceed")),
    Adv("api-kernel: model FLOPs above executed in a sweep",
        lambda: kern(matrix_flops=np.array([1.0, 2.0]), model_flops=np.array([1.0, 3.0])), ShapeError, ValueError,
        ("model_flops",)),
    Adv("api-kernel: negative bytes", lambda: kern(bytes_read=-1.0), ShapeError, ValueError, ("bytes_read",)),
    Adv("api-kernel: negative bytes in an array", lambda: kern(bytes_written=np.array([1.0, -2.0])), ShapeError,
        ValueError, ("bytes_written", "negative")),
    Adv("api-kernel: NaN FLOPs", lambda: kern(matrix_flops=float("nan")), ShapeError, ValueError, ("matrix_flops",)),
    Adv("api-kernel: NaN in an array", lambda: kern(vector_flops=np.array([1.0, np.nan])), ShapeError, ValueError,
        ("vector_flops", "nan")),
    Adv("api-kernel: inf bytes", lambda: kern(bytes_read=float("inf")), ShapeError, ValueError, ("bytes_read",)),
    Adv("api-kernel: negative model FLOPs", lambda: kern(matrix_flops=1.0, model_flops=-1.0), ShapeError, ValueError,
        ("model_flops",)),
    Adv("api-kernel: launches 0", lambda: kern(launches=0), ShapeError, ValueError, ("launches",)),
    Adv("api-kernel: launches 2.5", lambda: kern(launches=2.5), ShapeError, ValueError, ("launches", "whole")),
    Adv("api-kernel: launches NaN", lambda: kern(launches=float("nan")), ShapeError, ValueError, ("launches",)),
    Adv("api-kernel: launches True", lambda: kern(launches=True), ArgumentTypeError, TypeError, ("launches",)),
    Adv("api-kernel: launches array with 0", lambda: kern(launches=np.array([1.0, 0.0])), ShapeError, ValueError,
        ("launches",)),
    Adv("api-kernel: empty figure array", lambda: kern(matrix_flops=np.array([])), ShapeError, ValueError,
        ("matrix_flops", "empty")),
    Adv("api-kernel: figure '1' string", lambda: kern(matrix_flops="1"), ArgumentTypeError, TypeError, ("matrix_flops",)),
    Adv("api-kernel: figure complex", lambda: kern(matrix_flops=1j), ArgumentTypeError, TypeError, ("matrix_flops",)),
    Adv("api-kernel: figure object array [None]", lambda: kern(matrix_flops=np.array([None])), ArgumentTypeError,
        TypeError, ("matrix_flops",)),
    Adv("api-kernel: kind as a list", lambda: Kernel("mine", ["gemm"], "bf16"), ArgumentTypeError, TypeError, ("kind",)),
    Adv("api-kernel: unknown kind", lambda: Kernel("mine", "tensor", "bf16"), OptionError, ValueError, ("kind",)),
    Adv("api-kernel: unknown precision", lambda: Kernel("mine", "gemm", "bf17"), UnknownPrecisionError, ValueError,
        ("precision",)),
    Adv("api-kernel: precision as a list", lambda: Kernel("mine", "gemm", ["bf16"]), ArgumentTypeError, TypeError,
        ("precision",)),
    Adv("api-kernel: gemm=5", lambda: kern(gemm=5), ArgumentTypeError, TypeError, ("gemm",)),
    Adv("api-kernel: op=3", lambda: kern(op=3), ArgumentTypeError, TypeError, ("op",)),
    Adv("api-kernel: empty name", lambda: Kernel("", "gemm", "bf16"), ArgumentTypeError, TypeError, ("name",)),
    Adv("api-kernel: name None", lambda: Kernel(None, "gemm", "bf16"), ArgumentTypeError, TypeError, ("name",)),
    Adv("api-kernel: a Gemm record is taken", lambda: check(kern(gemm=Gemm(1.0, 1.0, 1.0)).gemm.m == 1.0, "gemm"), None),
    Adv("api-kernel: all-zero kernel: T_SOL 0 and intensity 0, no warning",
        lambda: check(sk.roofline(kern(), "h200").t_sol == 0.0 and sk.roofline(kern(), "h200").intensity == 0.0, "zeros"),
        None),
    Adv("api-kernel: negative zero bytes is zero", lambda: check(R(kern(bytes_read=-0.0)) == 0.0, "0 s"), None),

    # workload arithmetic
    Adv("api-workload: repeat(0)", lambda: small().repeat(0), ShapeError, ValueError, ("count", "0")),
    Adv("api-workload: repeat(-1)", lambda: small().repeat(-1), ShapeError, ValueError, ("count", "-1")),
    Adv("api-workload: repeat(2.5)", lambda: small().repeat(2.5), ShapeError, ValueError, ("count", "2.5")),
    Adv("api-workload: repeat(np.float64(2.0))", lambda: small().repeat(np.float64(2.0)), ShapeError, ValueError,
        ("count",)),
    Adv("api-workload: repeat(True)", lambda: small().repeat(True), ArgumentTypeError, TypeError, ("count", "True")),
    Adv("api-workload: repeat('3')", lambda: small().repeat("3"), ArgumentTypeError, TypeError, ("count",)),
    Adv("api-workload: repeat(None)", lambda: small().repeat(None), ArgumentTypeError, TypeError, ("count",)),
    Adv("api-workload: chain of nothing", lambda: chain("x"), ArgumentTypeError, TypeError, ("chain", "workload")),
    Adv("api-workload: Workload of no kernels", lambda: Workload("w", []), ArgumentTypeError, TypeError, ("kernels",)),
    Adv("api-workload: kernels of 10**8 launches", lambda: small().repeat(10**8).kernels, ShapeError, ValueError,
        ("kernels", "counted", "len(w)")),
    Adv("api-workload: repeat 3 of 2 kernels: 6 launches, FLOPs by hand",
        lambda: check((len(chain("c", small(), small()).repeat(3)), chain("c", small(), small()).repeat(3).flops) ==
                      (6, 12.0), "3 x (2 + 2) = 12 FLOPs"), None),

    # the models' arguments and keywords
    Adv("api-models: transformer unknown keyword", lambda: tiny_model(foo=1), ArgumentTypeError, TypeError,
        ("foo", "transformer")),
    Adv("api-models: forward unknown keyword", lambda: models.preset("llama3-8b").forward(foo=1), ArgumentTypeError,
        TypeError, ("foo", "forward")),
    Adv("api-models: the old preset(name, batch=, seq=) shows the new call",
        lambda: models.preset("llama3-8b", batch=2, seq=512), ArgumentTypeError, TypeError,
        ("preset('llama3-8b').forward(batch=2, seq=512)",)),
    Adv("api-models: resnet50 unknown keyword", lambda: models.resnet50(1, foo=1), ArgumentTypeError, TypeError,
        ("foo", "resnet50")),
    Adv("api-models: training_step of ops needs params for its optimizer",
        lambda: models.training_step(ops.matmul(8, 8, 8), optimizer="adamw"), OptionError, ValueError,
        ("optimizer", "params=N", "optimizer=None")),
    Adv("api-models: backward unknown keyword", lambda: models.backward(ops.matmul(8, 8, 8), foo=1), ArgumentTypeError,
        TypeError, ("foo",)),
    Adv("api-models: decoder_layer unknown keyword", lambda: models.decoder_layer(1, 128, 512, 8, foo=1),
        ArgumentTypeError, TypeError, ("foo",)),
    Adv("api-models: transformer missing heads", lambda: models.transformer(2, 1000, 1, 128, 512), ArgumentTypeError,
        TypeError, ("heads",)),
    Adv("api-models: layers as a list", lambda: tiny_model(layers=[1, 2]), ArgumentTypeError, TypeError, ("layers",)),
    Adv("api-models: layers as an array", lambda: tiny_model(layers=np.array([1, 2])), ArgumentTypeError, TypeError,
        ("layers",)),
    Adv("api-models: layers=0", lambda: tiny_model(layers=0), ShapeError, ValueError, ("layers",)),
    Adv("api-models: layers=-3", lambda: tiny_model(layers=-3), ShapeError, ValueError, ("layers",)),
    Adv("api-models: layers=2.5", lambda: tiny_model(layers=2.5), ShapeError, ValueError, ("layers",)),
    Adv("api-models: layers=True", lambda: tiny_model(layers=True), ArgumentTypeError, TypeError, ("layers",)),
    Adv("api-models: layers='32'", lambda: tiny_model(layers="32"), ArgumentTypeError, TypeError, ("layers",)),
    Adv("api-models: preset('gpt5')", lambda: models.preset("gpt5"), OptionError, ValueError, ("name", "llama3-8b")),
    Adv("api-models: preset(5)", lambda: models.preset(5), ArgumentTypeError, TypeError, ("name",)),
    Adv("api-models: preset(' LLAMA3-8B ') works", lambda: same(R(models.preset(" LLAMA3-8B ").forward()),
                                                                R(models.preset("llama3-8b").forward())), None),
    Adv("api-models: a Transformer where a workload goes", lambda: R(models.preset("llama3-8b")), ArgumentTypeError,
        TypeError, ("Transformer", "forward(batch=, seq=)")),
    Adv("api-models: norm='RMSNorm' is rmsnorm", lambda: same(R(tiny_model(norm="RMSNorm")), R(tiny_model())), None),
    Adv("api-models: norm='batchnorm'", lambda: tiny_model(norm="batchnorm"), OptionError, ValueError, ("norm",)),
    Adv("api-models: mlp=5", lambda: tiny_model(mlp=5), ArgumentTypeError, TypeError, ("mlp",)),
    Adv("api-models: fused_norm with rmsnorm", lambda: tiny_model(fused_norm=True), OptionError, ValueError,
        ("fused_norm", "norm")),
    Adv("api-models: heads 7 do not divide d_model 512", lambda: tiny_model(heads=7), ShapeError, ValueError,
        ("d_model", "heads")),
    Adv("api-models: kv_heads 3 do not divide heads 8", lambda: tiny_model(kv_heads=3), ShapeError, ValueError,
        ("heads", "kv_heads")),
    Adv("api-models: lm_head=1", lambda: tiny_model(lm_head=1), ArgumentTypeError, TypeError, ("lm_head",)),
    Adv("api-models: resnet50 image=0", lambda: models.resnet50(1, image=0), ShapeError, ValueError, ("image",)),
    Adv("api-models: resnet50 classes=0", lambda: models.resnet50(1, classes=0), ShapeError, ValueError, ("classes",)),
    Adv("api-models: resnet50 batchnorm='no'", lambda: models.resnet50(1, batchnorm="no"), ArgumentTypeError, TypeError,
        ("batchnorm",)),
    Adv("api-models: resnet50 layout 'NCHW' (case) works", lambda: finite(R(models.resnet50(2, layout="NCHW"))), None),
    Adv("api-models: training_step of a string", lambda: models.training_step("x"), ArgumentTypeError, TypeError,
        ("forward",)),
    Adv("api-models: training_step of a hand-built kernel", lambda: models.training_step(kern(matrix_flops=1.0), optimizer=None),
        OptionError, ValueError, ("forward", "mine")),
    Adv("api-models: training step is 3x the forward's model FLOPs",
        lambda: check(np.isclose(models.training_step(tiny_model(), optimizer=None).flops, 3 * tiny_model().flops,
                                 rtol=1e-12), "3x"),
        None),

    # signatures of the generated operator functions
    Adv("api-signature: matmul unknown keyword", lambda: ops.matmul(8, 8, 8, foo=1), ArgumentTypeError, TypeError,
        ("foo", "matmul")),
    Adv("api-signature: matmul missing k", lambda: ops.matmul(8, 8), ArgumentTypeError, TypeError, ("'k'",)),
    Adv("api-signature: matmul m twice", lambda: ops.matmul(8, 8, 8, m=3), ArgumentTypeError, TypeError, ("'m'",)),
    Adv("api-signature: matmul too many positional",
        lambda: ops.matmul(8, 8, 8, "bf16", 1, None, False, "none", None, 5), ArgumentTypeError, TypeError,
        ("positional", "weight_dtype")),
    Adv("api-signature: attention without batch", lambda: ops.attention(heads=8, seq_q=128), ArgumentTypeError,
        TypeError, ("'batch'",)),
    Adv("api-signature: conv2d misspelt out_channel", lambda: ops.conv2d(1, 8, 32, 32, out_channel=8),
        ArgumentTypeError, TypeError, ("unexpected keyword argument 'out_channel'",)),

    # sweep
    Adv("api-sweep: missing k", lambda: sk.sweep(ops.matmul, "h200", m=[1, 2], n=8), ArgumentTypeError, TypeError,
        ("'k'",)),
    Adv("api-sweep: unknown parameter", lambda: sk.sweep(ops.matmul, "h200", m=[1, 2], n=8, k=8, foo=[1]),
        ArgumentTypeError, TypeError, ("foo",)),
    Adv("api-sweep: no parameters", lambda: sk.sweep(ops.matmul, "h200"), ArgumentTypeError, TypeError, ("'m'",)),
    Adv("api-sweep: empty list", lambda: sk.sweep(ops.matmul, "h200", m=[], n=8, k=8), OptionError, ValueError,
        ("m is an empty list",)),
    Adv("api-sweep: op=None", lambda: sk.sweep(None, "h200", m=[1]), ArgumentTypeError, TypeError, ("op",)),
    Adv("api-sweep: op by name", lambda: check(len(sk.sweep("matmul", "h200", m=[64, 128], n=64, k=64)) == 2, "2 rows"),
        None),
    Adv("api-sweep: predicted=1", lambda: sk.sweep(ops.matmul, "h200", predicted=1, m=[1], n=8, k=8), ArgumentTypeError,
        TypeError, ("predicted",)),
    Adv("api-sweep: a list passed positionally lands on predicted", lambda: sk.sweep(ops.matmul, "h200", [1, 2]),
        ArgumentTypeError, TypeError, ("predicted",)),
    Adv("api-sweep: 10**400 in a list", lambda: sk.sweep(ops.matmul, "h200", m=[1, 10**400], n=8, k=8), ShapeError,
        ValueError, ("m must",)),
    Adv("api-sweep: 0 in a list", lambda: sk.sweep(ops.matmul, "h200", m=[0, 1], n=8, k=8), ShapeError, ValueError,
        ("m must",)),
    Adv("api-sweep: a string in a list", lambda: sk.sweep(ops.matmul, "h200", m=[1, "a"], n=8, k=8), ArgumentTypeError,
        TypeError, ("m must",)),
    Adv("api-sweep: unknown GPU", lambda: sk.sweep(ops.matmul, "h9000", m=[1], n=8, k=8), UnknownGPUError, LookupError,
        ("h9000",)),
    Adv("api-sweep: a function that returns no workload", lambda: sk.sweep(lambda m: 5, "h200", m=[1, 2]),
        ArgumentTypeError, TypeError, ("workload",)),
    Adv("api-sweep: a model with a layer option list",
        lambda: check(len(sk.sweep(models.transformer, "h200", layers=2, vocab=1000, batch=[1, 2], seq=128, d_model=512,
                                   heads=8, dtype=["bf16", "fp16"])) == 4, "2 x 2 rows"), None),
    Adv("api-sweep: a model with an unknown keyword",
        lambda: sk.sweep(models.transformer, "h200", layers=2, vocab=1000, batch=[1], seq=128, d_model=512, heads=8,
                         foo=[1]), ArgumentTypeError, TypeError, ("foo",)),
    Adv("api-sweep: T_SOL of each row by hand",
        lambda: same(list(sk.sweep(ops.matmul, "h200", predicted=False, m=[64, 8192], n=8192, k=8192)["t_sol_s"]),
                     [(64 * 8192 + 8192 * 8192 + 64 * 8192) * 2 / 4.8e12,  # memory: 135,266,304 B / 4.8e12 = 2.818e-5 s
                      2 * 8192**3 / 989.4e12]),  # compute: 1.0995e12 FLOP / 989.4e12 = 1.111e-3 s
        None),

    # plot.save's path
    Adv("api-plot: unknown extension .xyz", lambda: save("roof.xyz"), OptionError, ValueError, ("path", ".xyz", ".png",
                                                                                               ".svg")),
    Adv("api-plot: path is a folder", lambda: in_temp(plot_save), OptionError,
        ValueError, ("path", "folder", ".png")),
    Adv("api-plot: path ends in a slash", lambda: save("sub/"), OptionError, ValueError, ("path", "folder")),
    Adv("api-plot: a folder that is a file", lambda: save("x.png", make_dir=lambda d: _file_in(d)), OptionError,
        ValueError, ("path", "is a file", ".png")),
    Adv("api-plot: a folder that cannot be created (/proc)", lambda: plot_save("/proc/solkit-no/x.png"), OptionError,
        ValueError, ("path", "/proc/solkit-no", ".png")),
    Adv("api-plot: file name too long", lambda: save("x" * 300 + ".png"), OptionError, ValueError, ("path", ".png")),
    Adv("api-plot: empty path", lambda: plot_save(""), OptionError, ValueError,
        ("path", ".png")),
    Adv("api-plot: NUL in the path", lambda: save("a\0b.png"), OptionError, ValueError, ("path",)),
    Adv("api-plot: path=5", lambda: plot_save(5), ArgumentTypeError, TypeError, ("path",)),
    Adv("api-plot: path as bytes", lambda: plot_save(b"x.png"), ArgumentTypeError,
        TypeError, ("path",)),
    Adv("api-plot: fig=None", lambda: plot_save("x.png", fig=None), ArgumentTypeError, TypeError,
        ("fig",)),
    Adv("api-plot: dpi=0", lambda: save("a.png", dpi=0), OptionError, ValueError, ("dpi",)),
    Adv("api-plot: dpi=True", lambda: save("a.png", dpi=True), ArgumentTypeError, TypeError, ("dpi",)),
    Adv("api-plot: dpi=10**6", lambda: save("a.png", dpi=10**6), OptionError, ValueError, ("dpi", "1200")),
    Adv("api-plot: no suffix gets .png, returned exactly", lambda: saved_exactly("roof", "roof.png"), None),
    Adv("api-plot: .svg kept", lambda: saved_exactly("roof.svg", "roof.svg"), None),
    Adv("api-plot: upper-case .PDF", lambda: saved_exactly("roof.PDF", "roof.PDF"), None),
    Adv("api-plot: unicode name", lambda: saved_exactly("ünï ☃.png", "ünï ☃.png"), None),
    Adv("api-plot: new nested folders", lambda: saved_exactly("a/b/c/roof.png", "a/b/c/roof.png"), None),
    Adv("api-plot: pathlib.Path", lambda: check(in_temp(lambda d: plot_save(pathlib.Path(d) / "r.png")).endswith("r.png"),
                                                "a str path"), None),

    # scale: a layer count that is a typo must neither hang nor eat the memory
    Adv("api-scale: roofline of 10**12 layers", scale_roofline, None, seconds=5),
    Adv("api-scale: model FLOPs of 10**12 layers", scale_flops, None, seconds=5),
    Adv("api-scale: predict of 10**12 layers", lambda: finite(P(big_model())), None, seconds=5),
    Adv("api-scale: training step of 10**12 layers", lambda: finite(R(models.training_step(big_model(), optimizer=None))), None,
        seconds=5),
    Adv("api-scale: predict of a training step of 10**12 layers", lambda: finite(P(models.training_step(big_model(), optimizer=None))),
        None, seconds=5),
    Adv("api-scale: llama3-8b with layers=10**12", lambda: finite(P(models.preset("llama3-8b").with_(layers=10**12).forward())), None,
        seconds=5),
    Adv("api-scale: len() of 10**12 layers", lambda: check(len(big_model()) == 10 * 10**12 + 3, "10 kernels a layer + 3"),
        None, seconds=5),
    Adv("api-scale: kernels of 10**12 layers", lambda: big_model().kernels, ShapeError, ValueError,
        ("kernels", "counted"), seconds=5),
    Adv("api-scale: repr and HTML of 10**12 layers", lambda: (repr(big_model()), big_model()._repr_html_(),
                                                            repr(sk.roofline(big_model(), "h200"))), None, seconds=5),
    Adv("api-scale: roofline to_dict rows are distinct kernels",
        lambda: check(len(sk.roofline(big_model(), "h200").to_dict()["kernels"]) == 13, "13 distinct kernels"), None,
        seconds=5),
    Adv("api-scale: roofline table of 10**12 layers",
        lambda: check("10000000000003" in sk.report.roofline_table({"x": big_model()}, ["h200"]), "launch count"), None,
        seconds=5),
    Adv("api-scale: roofline chart of 10**12 layers", lambda: chart({"x": big_model()}), None,
        seconds=8),
    Adv("api-scale: sweep of a 10**12-layer model",
        lambda: check(len(sk.sweep(models.transformer, "h200", layers=10**12, vocab=1000, batch=[1, 2], seq=128,
                                   d_model=512, heads=8)) == 2, "2 rows"), None, seconds=5),
    Adv("api-scale: compare of a 10**12-layer model", lambda: sk.compare(big_model(), big_model(), "h200"), None,
        seconds=5),
    Adv("api-scale: layers=10**20 refused fast", lambda: tiny_model(layers=10**20), ShapeError, ValueError, ("layers",),
        seconds=2),
    Adv("api-scale: 1000-layer llama3-70b", lambda: finite(P(models.training_step(models.preset("llama3-70b").with_(layers=1000)
                                                                          .forward()))),
        None, seconds=5),

    # threads: the caches give every thread the single-threaded answer
    Adv("api-threads: roofline and predict on 8 GPUs at once", lambda: threads(_rooflines), None, seconds=30),
    Adv("api-threads: one GPU by name and by object", lambda: threads(_same_gpu, 12), None, seconds=30),
    Adv("api-threads: one shared workload object", lambda: (_SHARED.clear(), threads(_shared)), None, seconds=30),
    Adv("api-threads: models and training steps", lambda: threads(_models), None, seconds=30),
    Adv("api-threads: sweeps", lambda: threads(_sweeps, 4), None, seconds=30),
]


def _file_in(folder: str) -> str:
    """A regular file inside ``folder``, returned as the folder to write into (so the chart's folder is a file)."""
    path = os.path.join(folder, "plain-file")
    with open(path, "w") as f:
        f.write("x")
    return path
