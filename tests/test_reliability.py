"""Reliability (issue 5): every bad input answered clearly, no figure silently wrong.

Three parts:

- a census of bad inputs over every public operator and the roofline/MFU/predict/spec entry
  points: each must raise a ``SolkitError`` that is also the fitting builtin (``TypeError`` for a
  wrong type, ``ValueError`` for a bad value, ``LookupError`` for an unknown GPU), naming the
  argument and what came (arrays: the first bad index);
- numbers: no int64 wrap-around, huge shapes exact where float64 can hold them, figures finite;
- hypothesis properties over all ops: FLOPs and bytes never fall when a dimension grows, and a
  vectorized call equals element-by-element scalar calls.

A known library bug would be listed in ``KNOWN_BUGS`` (census, none today) and xfail'd strictly, so
that fixing it fails the census until the entry is removed.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit import models, ops
from solkit.errors import MeasurementError, ShapeError, SolkitError

H200 = sk.load_gpu("h200")
W = ops.matmul(64, 32, 16)
NAN, INF = float("nan"), float("inf")

# =========================================================================================
# Part 1: the bad-input census
# =========================================================================================


@dataclass(frozen=True)
class Bad:
    """One bad input: the call, the builtin its error must also be, and what the message must say."""

    id: str
    call: Callable[[], Any]
    builtin: type
    names: tuple[str, ...]  # argument names the message must contain, as whole words
    shows: str = ""  # the bad value as the message must show it
    index: str = ""  # arrays: "index 1" or "index (1, 1)"


def _shape_values(minimum: int, optional: bool) -> list[tuple[str, Any, type, str, str]]:
    """(label, value, builtin, shown, index) of the bad values for an integer argument >= ``minimum``."""
    vals: list[tuple[str, Any, type, str, str]] = []
    if minimum >= 1:
        vals.append(("0", 0, ValueError, "0", ""))
    vals += [
        ("-3", -3, ValueError, "-3", ""),
        ("2.5", 2.5, ValueError, "2.5", ""),
        ("nan", NAN, ValueError, "nan", ""),
        ("inf", INF, ValueError, "inf", ""),
        ("True", True, TypeError, "True", ""),
        ("'8'", "8", TypeError, "'8'", ""),
    ]
    if not optional:  # None is the documented default of an optional argument
        vals.append(("None", None, TypeError, "None", ""))
    vals.append(("array[4,-1,8]", np.array([4, -1, 8]), ValueError, "-1", "index 1"))
    last = 0 if minimum >= 1 else -1  # 0 is a valid padding/inputs, so the 2-D array holds -1 there
    vals.append((f"array[[1,2],[3,{last}]]", np.array([[1, 2], [3, last]]), ValueError, str(last), "index (1, 1)"))
    return vals


def _real_values() -> list[tuple[str, Any, type, str, str]]:
    """Bad values of a positive finite real (seconds, FLOPs): 2.5 is fine there, -1 and 0 are not."""
    return [
        ("0", 0, ValueError, "0", ""),
        ("-1", -1, ValueError, "-1", ""),
        ("-3", -3, ValueError, "-3", ""),
        ("nan", NAN, ValueError, "nan", ""),
        ("inf", INF, ValueError, "inf", ""),
        ("True", True, TypeError, "True", ""),
        ("'8'", "8", TypeError, "'8'", ""),
        ("None", None, TypeError, "None", ""),
        ("array[4,-1,8]", np.array([4, -1, 8]), ValueError, "-1", "index 1"),
        ("array[[1,2],[3,0]]", np.array([[1, 2], [3, 0]]), ValueError, "0", "index (1, 1)"),
    ]


#: census base calls: small valid shapes (the registry's examples are large); an op without one uses its example
SMALL_CALLS: dict[str, dict[str, Any]] = {
    "matmul": dict(m=64, n=32, k=16, batch=2),
    "qkv_projection": dict(tokens=64, d_model=512, heads=8, kv_heads=2, head_dim=64),
    "conv2d": dict(batch=2, in_channels=8, height=16, width=16, out_channels=8, kernel=3, stride=1, padding=1,
                   dilation=1, groups=1),
    "im2col": dict(batch=2, in_channels=8, height=16, width=16, kernel=3, stride=1, padding=1, dilation=1),
    "pool2d": dict(batch=2, channels=8, height=16, width=16, kernel=3, stride=2, padding=1),
    "attention": dict(batch=2, heads=8, seq_q=64, seq_kv=128, head_dim=64, kv_heads=2),
}


def _census_rows() -> list[tuple[str, Callable[..., Any], dict[str, Any], dict[str, int], tuple[str, ...], dict[str, str],
                                 tuple[str, ...], tuple[str, ...]]]:
    """(op, function, base call, {dimension: minimum}, optional dimensions, {option: an unknown value}, flags, texts), from the registry."""
    rows = []
    for name, op in ops.REGISTRY.items():
        base = {**op.example, **SMALL_CALLS.get(name, {})}
        dims = {p.name: p.minimum for p in op.params if p.kind in ("dim", "pair")}
        optional = tuple(p.name for p in op.params if p.optional and p.kind == "dim")
        unknown = {p.name: {"option": "bogus", "dtype": "bf17"}[p.kind] for p in op.params if p.kind in ("option", "dtype")}
        flags = tuple(p.name for p in op.params if p.kind == "flag")
        texts = tuple(p.name for p in op.params if p.kind == "text")
        rows.append((name, op.function, base, dims, optional, unknown, flags, texts))
    return rows


OPS_TABLE = _census_rows()

FLAG_VALUES = [("'no'", "no", "'no'"), ("1", 1, "1")]  # a truthy string that reads as false; an int
GPU_VALUES = [("'h2000'", "h2000", LookupError, "'h2000'"), ("42", 42, TypeError, "42"), ("None", None, TypeError, "None")]
WORKLOAD_VALUES = [("0", 0), ("'matmul'", "matmul"), ("None", None), ("True", True), ("array[1,2]", np.array([1, 2]))]


def _case(fname: str, fn: Callable[..., Any], base: dict[str, Any], arg: str, label: str, value: Any, builtin: type,
          names: tuple[str, ...], shows: str = "", index: str = "") -> Bad:
    return Bad(f"{fname}.{arg}={label}", functools.partial(fn, **{**base, arg: value}), builtin, names, shows, index)


def _op_cases() -> list[Bad]:
    cases = []
    for fname, fn, base, shapes, optional, options, flags, texts in OPS_TABLE:
        for arg, minimum in shapes.items():
            for label, value, builtin, shown, index in _shape_values(minimum, arg in optional):
                cases.append(_case(fname, fn, base, arg, label, value, builtin, (arg,), shown, index))
        for opt, unknown in options.items():
            cases.append(_case(fname, fn, base, opt, repr(unknown), unknown, ValueError, (opt,), repr(unknown)))
            cases.append(_case(fname, fn, base, opt, "3", 3, TypeError, (opt,), "3"))
        for flag in flags:
            for label, value, shown in FLAG_VALUES:
                cases.append(_case(fname, fn, base, flag, label, value, TypeError, (flag,), shown))
        for text in texts:
            cases.append(_case(fname, fn, base, text, "3", 3, TypeError, (text,), "3"))
    return cases


def _api_cases() -> list[Bad]:
    cases: list[Bad] = []
    mfu_base = dict(flops=1e12, seconds=1e-3, gpu=H200)
    entries = [
        ("roofline", sk.roofline, dict(workload=W, gpu=H200), ("workload", "gpu"), (), ()),
        ("sol_fraction", sk.sol_fraction, dict(workload=W, gpu=H200, measured_seconds=1e-3), ("workload", "gpu"),
         ("measured_seconds",), ()),
        ("mfu", sk.mfu, mfu_base, ("gpu",), ("flops", "seconds"), ("n_gpus",)),
        ("hfu", sk.hfu, mfu_base, ("gpu",), ("flops", "seconds"), ("n_gpus",)),
        ("predict", sk.predict, dict(workload=W, gpu=H200), ("workload", "gpu"), (), ()),
    ]
    for fname, fn, base, objs, reals, counts in entries:
        if "workload" in objs:
            for label, value in WORKLOAD_VALUES:
                cases.append(_case(fname, fn, base, "workload", label, value, TypeError, ("workload",)))
        for label, value, builtin, shown in GPU_VALUES:
            cases.append(_case(fname, fn, base, "gpu", label, value, builtin, ("gpu",), shown))
        for arg in reals:
            for label, value, builtin, shown, index in _real_values():
                cases.append(_case(fname, fn, base, arg, label, value, builtin, (arg,), shown, index))
        for arg in counts:  # n_gpus: an integer >= 1, so also 1.5
            for label, value, builtin, shown, index in _shape_values(1, optional=False) + [("1.5", 1.5, ValueError, "1.5", "")]:
                cases.append(_case(fname, fn, base, arg, label, value, builtin, (arg,), shown, index))
        if fname in ("mfu", "hfu"):
            cases.append(_case(fname, fn, base, "dtype", "'bf17'", "bf17", ValueError, ("dtype",), "'bf17'"))
            cases.append(_case(fname, fn, base, "dtype", "3", 3, TypeError, ("dtype",), "3"))
        flag = "warn" if fname == "predict" else "sparse"
        for label, value, shown in FLAG_VALUES:
            cases.append(_case(fname, fn, base, flag, label, value, TypeError, (flag,), shown))
    # load_gpu: the message speaks of the "gpu" being looked up (DESIGN: sk.load_gpu("h200"))
    for label, value, builtin, shown in GPU_VALUES + [("True", True, TypeError, "True")]:
        cases.append(_case("load_gpu", sk.load_gpu, {}, "name", label, value, builtin, ("gpu",), shown))
    cases.append(_case("load_gpu", sk.load_gpu, dict(name="h200"), "spec_path", "3", 3, TypeError, ("spec_path",), "3"))
    missing = "/nonexistent/solkit-specs"
    cases.append(_case("load_gpu", sk.load_gpu, dict(name="h200"), "spec_path", repr(missing), missing, ValueError,
                       ("spec folder",), missing))
    # gpu.peak_flops(precision, unit, sparse)
    pk = H200.peak_flops
    cases.append(_case("peak_flops", pk, {}, "precision", "'bf17'", "bf17", ValueError, ("precision",), "'bf17'"))
    cases.append(_case("peak_flops", pk, {}, "precision", "3", 3, TypeError, ("precision",), "3"))
    cases.append(_case("peak_flops", pk, {}, "unit", "'tensor'", "tensor", ValueError, ("unit",), "'tensor'"))
    cases.append(_case("peak_flops", pk, {}, "unit", "3", 3, TypeError, ("unit",), "3"))
    for label, value, shown in FLAG_VALUES:
        cases.append(_case("peak_flops", pk, {}, "sparse", label, value, TypeError, ("sparse",), shown))
    return cases


def _consistency_cases() -> list[Bad]:
    """Arguments each fine alone but wrong together: heads/kv_heads/head_dim, conv kernel vs input, groups."""
    q = functools.partial
    qkv = q(ops.qkv_projection, 64, 512)
    conv = q(ops.conv2d, 2, 8)
    return [
        Bad("qkv.heads=8,kv_heads=3", q(qkv, heads=8, kv_heads=3), ValueError, ("heads", "kv_heads"), "3"),
        Bad("qkv.heads=8,kv_heads=16", q(qkv, heads=8, kv_heads=16), ValueError, ("heads", "kv_heads"), "16"),
        Bad("qkv.d_model=512,heads=7", q(qkv, heads=7), ValueError, ("d_model", "heads"), "7"),
        Bad("qkv.heads=None,kv_heads=2", q(qkv, kv_heads=2), ValueError, ("heads", "kv_heads"), "2"),
        Bad("qkv.heads=None,head_dim=64", q(qkv, head_dim=64), ValueError, ("heads", "head_dim"), "64"),
        Bad("qkv.kv_heads=array[2,3,4] of heads=8", q(qkv, heads=8, kv_heads=np.array([2, 3, 4])), ValueError,
            ("heads", "kv_heads"), "3", "index 1"),
        Bad("qkv.kv_heads=array[2,16,4] of heads=8", q(qkv, heads=8, kv_heads=np.array([2, 16, 4])), ValueError,
            ("heads", "kv_heads"), "16", "index 1"),
        Bad("attention.heads=8,kv_heads=3", q(ops.attention, 2, 8, 64, kv_heads=3), ValueError, ("heads", "kv_heads"), "3"),
        Bad("attention.heads=8,kv_heads=16", q(ops.attention, 2, 8, 64, kv_heads=16), ValueError, ("heads", "kv_heads"), "16"),
        Bad("attention.kv_heads=array[2,3,4] of heads=8", q(ops.attention, 2, 8, 64, kv_heads=np.array([2, 3, 4])),
            ValueError, ("heads", "kv_heads"), "3", "index 1"),
        Bad("attention.kv_heads=array[2,16,4] of heads=8", q(ops.attention, 2, 8, 64, kv_heads=np.array([2, 16, 4])),
            ValueError, ("heads", "kv_heads"), "16", "index 1"),
        # kernel 7 on a 4x4 input: 4 + 2*0 = 4 < 7
        Bad("conv2d.kernel=7 on 4x4", q(conv, 4, 4, 8, kernel=7), ValueError, ("kernel", "height"), "7"),
        # kernel (3, 7) on 4x4: the width 4 < 7 fails, the height 4 >= 3 is fine
        Bad("conv2d.kernel=(3,7) on 4x4", q(conv, 4, 4, 8, kernel=(3, 7)), ValueError, ("kernel", "width"), "7"),
        # padding 1: 4 + 2*1 = 6 < 7
        Bad("conv2d.kernel=7,padding=1 on 4x4", q(conv, 4, 4, 8, kernel=7, padding=1), ValueError, ("kernel", "height"), "6"),
        # dilation 4: extent 4*(3 - 1) + 1 = 9 > 8
        Bad("conv2d.kernel=3,dilation=4 on 8x8", q(conv, 8, 8, 8, kernel=3, dilation=4), ValueError, ("kernel", "height"), "9"),
        Bad("conv2d.height=array[16,2,16],kernel=3", q(conv, np.array([16, 2, 16]), 16, 8), ValueError,
            ("kernel", "height"), "2", "index 1"),
        Bad("conv2d.height=array[[16,16],[16,2]],kernel=3", q(conv, np.array([[16, 16], [16, 2]]), 16, 8), ValueError,
            ("kernel", "height"), "2", "index (1, 1)"),
        Bad("conv2d.in_channels=8,groups=3", q(conv, 16, 16, 9, groups=3), ValueError, ("in_channels", "groups"), "8"),
        Bad("conv2d.out_channels=8,groups=3", q(ops.conv2d, 2, 9, 16, 16, 8, groups=3), ValueError,
            ("out_channels", "groups"), "8"),
        Bad("conv2d.kernel=(3,3,3)", q(conv, 16, 16, 8, kernel=(3, 3, 3)), TypeError, ("kernel",), "(3, 3, 3)"),
        Bad("conv2d.kernel=(3,-1)", q(conv, 16, 16, 8, kernel=(3, -1)), ValueError, ("kernel[1]",), "-1"),
    ]


CASES: list[Bad] = _op_cases() + _api_cases() + _consistency_cases()

#: census cases the library gets wrong (none today): id -> what happens and what should; each is xfail'd, strictly
KNOWN_BUGS: dict[str, str] = {}


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")


def judge(case: Bad) -> str | None:
    """None if the case is handled clearly, else what went wrong."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case.call()
    except SolkitError as exc:
        error: BaseException = exc
    except Exception as exc:  # noqa: BLE001 - a raw error is exactly what the census looks for
        return f"raised a non-solkit {type(exc).__module__}.{type(exc).__name__}: {exc}"
    else:
        return "raised nothing"
    message = str(error)
    problems = []
    if not isinstance(error, case.builtin):
        bases = ", ".join(b.__name__ for b in type(error).__mro__[1:-2])
        problems.append(f"{type(error).__name__} ({bases}) is not a {case.builtin.__name__}")
    problems += [f"does not name {n!r}" for n in case.names if not _word(n).search(message)]
    if case.shows and case.shows not in message:
        problems.append(f"does not show {case.shows!r}")
    if case.index and case.index not in message:
        problems.append(f"does not say {case.index!r}")
    return "; ".join(problems) + f" -- message: {message[:200]}" if problems else None


def _param(case: Bad) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[case.id])] if case.id in KNOWN_BUGS else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input_is_answered_clearly(case: Bad):
    """The bad input raises a SolkitError that is also the fitting builtin, naming the argument and the value."""
    problem = judge(case)
    assert problem is None, f"{case.id}: {problem}"


def test_bad_input_census():
    """Count the bad inputs tried and handled; the unhandled ones are exactly KNOWN_BUGS."""
    unhandled = {c.id: p for c in CASES if (p := judge(c)) is not None}
    tried, handled = len(CASES), len(CASES) - len(unhandled)
    print(f"\nbad inputs: {tried} tried, {handled} handled clearly")
    if unhandled:
        print(f"known library bugs ({len(unhandled)} inputs, xfail'd in test_bad_input_is_answered_clearly):")
        for cid, problem in unhandled.items():
            print(f"  {cid}: {problem}")
    assert len({c.id for c in CASES}) == tried, "census ids must be unique"
    assert tried >= 500
    newly_broken = sorted(set(unhandled) - set(KNOWN_BUGS))
    fixed = sorted(set(KNOWN_BUGS) - set(unhandled))
    assert not newly_broken, f"unhandled bad inputs not in KNOWN_BUGS: {newly_broken}"
    assert not fixed, f"fixed, remove from KNOWN_BUGS: {fixed}"
    assert handled == tried - len(KNOWN_BUGS)



def test_sparse_string_does_not_silently_halve_t_sol():
    """roofline(8192^3 bf16 GEMM, h200, sparse='no') is an ArgumentTypeError, not the 2:4 sparse bound."""
    w = ops.matmul(8192, 8192, 8192)
    # dense: 2*8192**3 / 989.4e12 = 1.0995e12 / 989.4e12 = 1.1113e-3 s; sparse='no' is truthy: / 1979e12 = 5.556e-4 s
    assert sk.roofline(w, H200).t_sol == pytest.approx(2 * 8192**3 / 989.4e12)
    with pytest.raises(TypeError, match="sparse"):
        sk.roofline(w, H200, sparse="no")

def test_sparse_one_is_refused_even_after_sparse_true():
    """1 == True in Python: after a sparse=True call has filled the peak cache, sparse=1 is still a TypeError."""
    assert H200.peak_flops("bf16", sparse=True) == 1979e12  # datasheet: 1,979 TFLOP/s bf16 with sparsity
    with pytest.raises(TypeError, match="sparse must be True or False, got 1"):
        H200.peak_flops("bf16", sparse=1)
    with pytest.raises(TypeError, match="sparse"):
        sk.mfu(1e12, 1e-3, H200, sparse=1)


# =========================================================================================
# Part 2: numbers (no wrap-around, exact where float64 can be, always finite)
# =========================================================================================

E = 2  # bf16 bytes per element


def _exact(op: str, d: dict[str, int]) -> tuple[int | Fraction, int | Fraction]:
    """(model FLOPs, bytes) of one bf16 shape in exact integer arithmetic, from DESIGN.md's table."""
    if op == "matmul":
        b, m, n, k = d["batch"], d["m"], d["n"], d["k"]
        return 2 * b * m * n * k, (b * m * k + b * k * n + b * m * n) * E
    if op == "qkv_projection":
        t, dm, width = d["tokens"], d["d_model"], (d["heads"] + 2 * d["kv_heads"]) * d["head_dim"]
        return 2 * t * dm * width, (t * dm + dm * width + t * width) * E
    if op in ("layernorm", "rmsnorm", "layernorm_residual"):
        t, dm = d["tokens"], d["d_model"]
        return {"layernorm": (8 * t * dm, (2 * t * dm + 2 * dm) * E), "rmsnorm": (4 * t * dm, (2 * t * dm + dm) * E),
                "layernorm_residual": (9 * t * dm, (4 * t * dm + 2 * dm) * E)}[op]
    if op == "softmax":
        return 5 * d["rows"] * d["cols"], 2 * d["rows"] * d["cols"] * E
    if op == "conv2d":  # kernel 3, stride 1, padding 0, groups 1: Ho = H - 2
        n, c, k, ho, wo = d["batch"], d["in_channels"], d["out_channels"], d["height"] - 2, d["width"] - 2
        return 2 * n * k * ho * wo * c * 9, (n * c * d["height"] * d["width"] + k * c * 9 + n * k * ho * wo) * E
    if op == "attention":  # causal, sq <= skv: pairs = sq*skv - sq*(sq - 1)/2
        b, h, kv, hd, sq, skv = d["batch"], d["heads"], d["kv_heads"], d["head_dim"], d["seq_q"], d["seq_kv"]
        pairs = Fraction(sq * skv) - Fraction(sq * (sq - 1), 2) if sq <= skv else Fraction(skv * (skv + 1), 2)
        return 4 * b * h * hd * pairs, (2 * b * h * sq * hd + 2 * b * kv * skv * hd) * E
    if op in ("add", "gelu", "silu", "copy"):
        n = d["elements"]
        return {"add": 1, "gelu": 8, "silu": 4, "copy": 0}[op] * n, (3 if op == "add" else 2) * n * E
    if op == "elementwise":
        n = d["elements"]
        return d["flops_per_element"] * n, (d["inputs"] + d["outputs"]) * n * E
    if op == "embedding":
        # ids, the distinct rows read (at most min(tokens, vocab)), the output written
        return 0, d["tokens"] * 8 + (min(d["tokens"], d["vocab"]) + d["tokens"]) * d["d_model"] * E
    if op == "im2col":  # kernel 3, stride 1, padding 0: Ho = H - 2; columns [N*Ho*Wo, C*9]
        n, c, h, w = d["batch"], d["in_channels"], d["height"], d["width"]
        return 0, (n * c * h * w + n * (h - 2) * (w - 2) * c * 9) * E
    if op == "layout_transform":
        return 0, 2 * d["elements"] * E
    if op == "pool2d":  # kernel 3, stride 1, padding 0: Ho = H - 2; 9 compares per output
        n, c, h, w = d["batch"], d["channels"], d["height"], d["width"]
        return 9 * n * c * (h - 2) * (w - 2), (n * c * h * w + n * c * (h - 2) * (w - 2)) * E
    if op == "pointwise":  # bf16 in and out
        n, i, o = d["out_elements"], d["in_elements"], d["other_elements"]
        return d["flops_per_element"] * n, (i + o + n) * E
    if op == "reduce":  # out_elements fixed at 1
        return d["in_elements"], (d["in_elements"] + d["out_elements"]) * E
    if op == "fill":
        return 0, d["elements"] * E
    if op == "concat":
        return 0, 2 * d["elements"] * E
    if op == "gather":
        return 0, d["index_elements"] * 8 + 2 * d["elements"] * E
    if op == "batchnorm":  # training: x, y and 8 per-channel vectors
        x = d["batch"] * d["channels"] * d["height"] * d["width"]
        return 6 * x, (2 * x + 8 * d["channels"]) * E
    if op == "dropout":  # y and a 1-byte mask written; no model FLOPs
        return 0, d["elements"] * (2 * E + 1)
    if op == "nll_loss":  # mean: the loss and the total weight written
        return d["rows"], d["rows"] * (8 + E) + 2 * E
    if op == "adamw":  # fp32: p, g, m, v read, p, m, v written
        return 0, 7 * 4 * d["elements"]
    if op == "foreach":  # fp32, no model FLOPs
        return 0, (d["inputs"] + d["outputs"]) * d["elements"] * 4
    if op == "grouped_matmul":  # groups of 3, 0 and 5 rows (FIXED): 8 rows, 2 experts' B read
        n, k = d["n"], d["k"]
        return 2 * 8 * n * k, (8 * k + 2 * k * n + 8 * n) * E
    raise AssertionError(op)


HUGE_DIMS: dict[str, tuple[str, ...]] = {
    "matmul": ("m", "n", "k", "batch"),
    "qkv_projection": ("tokens", "d_model", "kv_heads", "head_dim"),  # heads = 4*kv_heads
    "layernorm": ("tokens", "d_model"),
    "rmsnorm": ("tokens", "d_model"),
    "layernorm_residual": ("tokens", "d_model"),
    "softmax": ("rows", "cols"),
    "conv2d": ("batch", "in_channels", "height", "width", "out_channels"),
    "attention": ("batch", "kv_heads", "seq_q", "seq_kv", "head_dim"),  # heads = 4*kv_heads
    "add": ("elements",),
    "gelu": ("elements",),
    "silu": ("elements",),
    "copy": ("elements",),
    "elementwise": ("elements", "inputs", "outputs", "flops_per_element"),
    "embedding": ("tokens", "vocab", "d_model"),
    "im2col": ("batch", "in_channels", "height", "width"),
    "layout_transform": ("elements",),
    "pool2d": ("batch", "channels", "height", "width"),
    "pointwise": ("out_elements", "in_elements", "other_elements", "flops_per_element"),
    "reduce": ("in_elements",),
    "fill": ("elements",),
    "concat": ("elements",),
    "gather": ("elements", "index_elements"),
    "batchnorm": ("batch", "channels", "height", "width"),
    "dropout": ("elements",),
    "nll_loss": ("rows", "classes"),
    "adamw": ("elements",),
    "foreach": ("elements", "inputs", "outputs", "flops_per_element"),
    "grouped_matmul": ("n", "k"),
}
FIXED = {"conv2d": dict(kernel=3), "attention": dict(causal=True), "im2col": dict(kernel=3),
         "pool2d": dict(kernel=3, stride=1), "reduce": dict(out_elements=1), "grouped_matmul": dict(group_sizes=[3, 0, 5])}


@pytest.mark.parametrize("op", sorted(HUGE_DIMS))
def test_huge_shapes_exact_and_never_wrapped(op):
    """int64 arrays of dims in [2**21, 2**31]: figures finite, >= 0, exact at powers of two, else within 4 ulps."""
    # an int64 product would wrap: 2*m*n*k at m = n = k = 2**21 is 2**64, which int64 holds as 0
    rng = np.random.default_rng(5)
    names = HUGE_DIMS[op]
    cols = {name: rng.integers(2**21, 2**31, size=40, dtype=np.int64) for name in names}
    for name in names:  # row 0: every dim 2**21; row 1: every dim 2**31 (the products are powers of two)
        cols[name][0], cols[name][1] = 2**21, 2**31
    if op == "attention":
        cols["seq_kv"] = np.maximum(cols["seq_kv"], cols["seq_q"])  # keep the causal sq <= skv branch
    kwargs: dict[str, Any] = dict(cols, **FIXED.get(op, {}))
    if op in ("qkv_projection", "attention"):
        kwargs["heads"] = 4 * cols["kv_heads"]
    w = getattr(ops, op)(**kwargs)
    for figure in (w.flops, w.executed_flops, w.bytes):
        assert figure.dtype == np.float64 and figure.shape == (40,)
        assert np.all(np.isfinite(figure)) and np.all(figure >= 0)
    for i in range(40):
        row = {k: int(np.broadcast_to(v, (40,))[i]) for k, v in kwargs.items() if not isinstance(v, (bool, list))}
        flops, nbytes = _exact(op, row)
        for got, want in ((w.flops[i], flops), (w.bytes[i], nbytes)):
            assert got == pytest.approx(float(want), rel=4 * 2.0**-52, abs=0), (op, i, row)
            if i < 2:  # rows of powers of two: every intermediate fits float64's 53 bits, so exact
                assert got == want, (op, i, row)
    t_sol = np.asarray(sk.roofline(w, H200).t_sol)
    assert np.all(np.isfinite(t_sol)) and np.all(t_sol > 0)
    seconds = np.asarray(sk.predict(w, H200, warn=False).seconds)
    assert np.all(np.isfinite(seconds)) and np.all(seconds > 0)


def test_cubic_gemm_at_2_pow_21_does_not_wrap():
    """m = n = k = 2**21: FLOPs 2*2**21*2**21*2**21 = 2**64 = 1.8447e19 (int64 would give 0), bytes 3*2**42*2 = 2.6388e13."""
    dims = np.array([2**21], dtype=np.int64)
    with np.errstate(over="ignore"):
        assert int(np.int64(2) * dims[0] * dims[0] * dims[0]) == 0  # what int64 arithmetic would say
    w = ops.matmul(dims, dims, dims)
    assert w.flops[0] == 2.0**64  # 18,446,744,073,709,551,616
    assert w.bytes[0] == 3 * 2**42 * 2  # 26,388,279,066,624
    # 2**31 - 1 per dim: 2*(2**31 - 1)**3 = 1.9807e28, far past int64's 9.2234e18
    big = np.array([2**31 - 1], dtype=np.int64)
    assert ops.matmul(big, big, big).flops[0] == pytest.approx(2 * (2**31 - 1) ** 3, rel=1e-15)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # numpy may not report the overflow: solkit refuses it first
@pytest.mark.parametrize(
    "make, names",
    [
        pytest.param(lambda: ops.matmul(1e200, 1e200, 1e200), ("m=1e+200", "n=1e+200", "k=1e+200"),
                     id="matmul(1e200,1e200,1e200)"),
        pytest.param(lambda: ops.copy(1e308), ("elements=1e+308",), id="copy(1e308)"),
        pytest.param(lambda: ops.matmul(np.array([8.0, 1e200]), 1e200, 1e200), ("m=1e+200",), id="matmul sweep"),
        pytest.param(lambda: ops.layernorm(np.array([1.0, 1e306]), 1000), ("tokens=1e+306",), id="layernorm sweep"),
    ],
)
def test_overflowing_shapes_are_refused(make, names):
    """A shape whose FLOPs or bytes overflow float64 is a ShapeError naming its dimensions, never an inf figure."""
    # matmul(1e200, 1e200, 1e200): 2*1e600 overflows float64; copy(1e308): bytes 2*1e308*2 = 4e308 > 1.8e308
    with pytest.raises(ShapeError, match="is too large") as info:
        make()
    for name in names:
        assert name in str(info.value)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: sk.mfu(1e12, 5e-324, H200), id="mfu(1e12 FLOPs, 5e-324 s)"),
        pytest.param(lambda: sk.sol_fraction(W, H200, 5e-324), id="sol_fraction(5e-324 s)"),
    ],
)
def test_tiny_seconds_are_refused(make):
    """mfu = 1e12 / (989.4e12 * 5e-324) = 2e311 overflows: a MeasurementError naming seconds, not inf."""
    with pytest.raises(MeasurementError) as info:
        make()
    assert "seconds" in str(info.value)


def test_python_int_beyond_int64():
    """m = 2**64 does not fit int64: float64 holds it exactly (a power of two), FLOPs 2*2**64*8*8 = 2**71."""
    assert ops.matmul(2**64, 8, 8).flops == 2.0**71
    assert ops.matmul([2**64, 2**65], 8, 8).flops.tolist() == [2.0**71, 2.0**72]  # an object array of big ints


def test_integers_beyond_float64_are_shape_errors():
    """10**400 is an integer no float64 holds: a ShapeError naming the argument, scalar, list or object array."""
    for value in (10**400, [10**400], [1.0, 10**400], np.array([10**400], dtype=object)):
        with pytest.raises(ShapeError, match="^m must .*float64 can hold"):
            ops.matmul(value, 8, 8)


def test_layer_count_typos_stay_cheap():
    """10**12 layers hold one layer with a count: roofline and predict visit the same distinct kernels as 1 layer."""
    one = models.transformer(1, 1000, 1, 128, 512, 8)
    typo = models.transformer(10**12, 1000, 1, 128, 512, 8)
    assert [k.name for k, _ in typo.counted] == [k.name for k, _ in one.counted]  # 13 distinct kernels either way
    assert [n for _, n in typo.counted] == [1] + [10**12] * 10 + [1, 1]  # embedding, 10 per layer, norm, head
    assert len(sk.roofline(typo, H200).kernels) == len(sk.predict(typo, H200, warn=False).kernels) == 13
    layer = sk.roofline(models.decoder_layer(1, 128, 512, 8), H200).t_sol
    # T(10**12 layers) - T(1 layer) = (10**12 - 1) x T(layer)
    assert sk.roofline(typo, H200).t_sol - sk.roofline(one, H200).t_sol == pytest.approx((10**12 - 1) * layer, rel=1e-9)
    with pytest.raises(ShapeError, match="layers=100,000,000,000,000,000,000 is too many"):
        models.transformer(10**20, 1000, 1, 128, 512, 8)  # 10 x 1e20 launches > 2**53


# =========================================================================================
# Part 3: hypothesis properties over every op
# =========================================================================================

SMALL = st.integers(min_value=1, max_value=4096)
DTYPES = st.sampled_from(["bf16", "fp16", "fp32", "tf32", "fp8", "int8", "fp64"])  # all have an H200 peak


def _divisors_above(n: int, k: int) -> list[int]:
    return [d for d in range(k + 1, n + 1) if n % d == 0]


def _grow_kv(s: dict[str, Any], g: int) -> dict[str, Any] | None:
    """kv_heads up to a larger divisor of heads (heads unchanged), if there is one."""
    bigger = _divisors_above(s["heads"], s["kv_heads"])
    return {**s, "kv_heads": bigger[g % len(bigger)]} if bigger else None


def _plus(name: str, step: str | None = None) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    """Grow ``name`` by g (times ``s[step]``, to keep a divisibility)."""
    return lambda s, g: {**s, name: s[name] + g * (s[step] if step else 1)}


@st.composite
def _qkv_shapes(draw: Any, mode: str) -> dict[str, Any]:
    s = dict(tokens=draw(SMALL))
    if mode == "default":
        return {**s, "d_model": draw(SMALL)}
    kv, group, hd = draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.integers(1, 256))
    s.update(heads=kv * group, kv_heads=kv)
    if mode == "heads":  # head_dim = d_model / heads
        return {**s, "d_model": kv * group * hd}
    return {**s, "d_model": draw(SMALL), "head_dim": hd}


@st.composite
def _conv_shapes(draw: Any) -> dict[str, Any]:
    groups, r, dil, pad = draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 2)), draw(st.integers(0, 2))
    span = dil * (r - 1) + 1
    fit = max(1, span - 2 * pad)  # the smallest input the dilated kernel fits once padded
    return dict(batch=draw(st.integers(1, 8)), in_channels=groups * draw(st.integers(1, 32)),
                height=fit + draw(st.integers(0, 48)), width=fit + draw(st.integers(0, 48)),
                out_channels=groups * draw(st.integers(1, 32)), kernel=r, stride=draw(st.integers(1, 3)),
                padding=pad, dilation=dil, groups=groups)


@st.composite
def _window_shapes(draw: Any, channels: str, dilated: bool) -> dict[str, Any]:
    """A window over an input it fits once padded (im2col, pool2d)."""
    r, pad = draw(st.integers(1, 5)), draw(st.integers(0, 2))
    dil = draw(st.integers(1, 2)) if dilated else 1
    fit = max(1, dil * (r - 1) + 1 - 2 * pad)
    shapes = dict(batch=draw(st.integers(1, 8)), height=fit + draw(st.integers(0, 48)), width=fit + draw(st.integers(0, 48)),
                  kernel=r, stride=draw(st.integers(1, 3)), padding=pad, **{channels: draw(st.integers(1, 64))})
    return {**shapes, "dilation": dil} if dilated else shapes


@st.composite
def _attention_shapes(draw: Any) -> dict[str, Any]:
    kv, group = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    return dict(batch=draw(st.integers(1, 8)), heads=kv * group, kv_heads=kv, seq_q=draw(st.integers(1, 2048)),
                seq_kv=draw(st.integers(1, 2048)), head_dim=draw(st.integers(1, 256)))


@dataclass(frozen=True)
class Model:
    """An op under test: option and shape strategies, and how each dimension grows validly."""

    fn: Callable[..., Any]
    options: Any  # strategy of non-shape keyword arguments ("_mode" is ours, not the op's)
    shapes: Callable[[dict[str, Any]], Any]  # options -> strategy of shape keyword arguments
    grows: dict[str, Callable[[dict[str, Any], int], dict[str, Any] | None]]


def _simple(fn: Callable[..., Any], *names: str, **extra_options: Any) -> Model:
    shape = st.fixed_dictionaries({n: SMALL for n in names})
    options = st.fixed_dictionaries({"dtype": DTYPES, **extra_options})
    return Model(fn, options, lambda o: shape, {n: _plus(n) for n in names})


_QKV_GROWS = {
    "default": {"tokens": _plus("tokens"), "d_model": _plus("d_model")},
    "heads": {"tokens": _plus("tokens"), "d_model": _plus("d_model", "heads")},
    "explicit": {"tokens": _plus("tokens"), "d_model": _plus("d_model"), "head_dim": _plus("head_dim"),
                 "heads": _plus("heads", "kv_heads"), "kv_heads": _grow_kv},
}

MODELS: dict[str, Model] = {
    "matmul": Model(
        ops.matmul,
        st.fixed_dictionaries({"dtype": DTYPES, "bias": st.booleans(),
                               "epilogue": st.sampled_from(["none", "relu", "gelu", "silu"])}),
        lambda o: st.fixed_dictionaries({"m": SMALL, "n": SMALL, "k": SMALL, "batch": st.integers(1, 64)}),
        {n: _plus(n) for n in ("m", "n", "k", "batch")},
    ),
    "qkv_projection": Model(
        ops.qkv_projection,
        st.fixed_dictionaries({"dtype": DTYPES, "fused": st.booleans(), "_mode": st.sampled_from(sorted(_QKV_GROWS))}),
        lambda o: _qkv_shapes(o["_mode"]),
        {},  # per mode, see _grows
    ),
    "layernorm": _simple(ops.layernorm, "tokens", "d_model"),
    "rmsnorm": _simple(ops.rmsnorm, "tokens", "d_model"),
    "softmax": _simple(ops.softmax, "rows", "cols"),
    "layernorm_residual": _simple(ops.layernorm_residual, "tokens", "d_model", fused=st.booleans()),
    "conv2d": Model(
        ops.conv2d,
        st.fixed_dictionaries({"dtype": DTYPES, "layout": st.sampled_from(["nhwc", "nchw", "im2col"])}),
        lambda o: _conv_shapes(),
        # NB: kernel, stride and dilation are not "sizes": a larger stride or kernel shrinks the output
        {"batch": _plus("batch"), "in_channels": _plus("in_channels", "groups"), "height": _plus("height"),
         "width": _plus("width"), "out_channels": _plus("out_channels", "groups"), "padding": _plus("padding")},
    ),
    "attention": Model(
        ops.attention,
        st.fixed_dictionaries({"dtype": DTYPES, "causal": st.booleans(), "impl": st.sampled_from(["flash", "naive"])}),
        lambda o: _attention_shapes(),
        {"batch": _plus("batch"), "heads": _plus("heads", "kv_heads"), "kv_heads": _grow_kv, "seq_q": _plus("seq_q"),
         "seq_kv": _plus("seq_kv"), "head_dim": _plus("head_dim")},
    ),
    "add": _simple(ops.add, "elements"),
    "gelu": _simple(ops.gelu, "elements"),
    "silu": _simple(ops.silu, "elements"),
    "copy": _simple(ops.copy, "elements"),
    "elementwise": Model(
        ops.elementwise,
        st.fixed_dictionaries({"dtype": DTYPES}),
        lambda o: st.fixed_dictionaries({"elements": st.integers(1, 1 << 20), "inputs": st.integers(0, 4),
                                         "outputs": st.integers(1, 4), "flops_per_element": st.integers(0, 16)}),
        {n: _plus(n) for n in ("elements", "inputs", "outputs", "flops_per_element")},
    ),
    "embedding": _simple(ops.embedding, "tokens", "vocab", "d_model"),
    "layout_transform": _simple(ops.layout_transform, "elements"),
    "im2col": Model(
        ops.im2col,
        st.fixed_dictionaries({"dtype": DTYPES}),
        lambda o: _window_shapes("in_channels", dilated=True),
        {"batch": _plus("batch"), "in_channels": _plus("in_channels"), "height": _plus("height"),
         "width": _plus("width"), "padding": _plus("padding")},
    ),
    "pool2d": Model(
        ops.pool2d,
        st.fixed_dictionaries({"dtype": DTYPES, "mode": st.sampled_from(["max", "avg"])}),
        lambda o: _window_shapes("channels", dilated=False),
        {"batch": _plus("batch"), "channels": _plus("channels"), "height": _plus("height"), "width": _plus("width"),
         "padding": _plus("padding")},
    ),
    "pointwise": Model(
        ops.pointwise,
        st.fixed_dictionaries({"dtype": DTYPES, "out_dtype": st.sampled_from([None, "fp32", "bf16"])}),
        lambda o: st.fixed_dictionaries({"out_elements": SMALL, "in_elements": st.integers(0, 4096),
                                         "other_elements": st.integers(0, 4096), "flops_per_element": st.integers(0, 8)}),
        {n: _plus(n) for n in ("out_elements", "in_elements", "other_elements", "flops_per_element")},
    ),
    "reduce": Model(
        ops.reduce,
        st.fixed_dictionaries({"dtype": DTYPES}),
        lambda o: st.fixed_dictionaries({"out_elements": st.integers(1, 64), "in_elements": st.integers(64, 4096)}),
        {"in_elements": _plus("in_elements")},  # out_elements may not pass in_elements
    ),
    "fill": _simple(ops.fill, "elements"),
    "concat": _simple(ops.concat, "elements"),
    "gather": _simple(ops.gather, "elements", "index_elements"),
    "batchnorm": _simple(ops.batchnorm, "batch", "channels", "height", "width", training=st.booleans()),
    "dropout": _simple(ops.dropout, "elements"),
    "nll_loss": _simple(ops.nll_loss, "rows", "classes", reduction=st.sampled_from(["mean", "sum", "none"])),
    "adamw": _simple(ops.adamw, "elements"),
    "foreach": Model(
        ops.foreach,
        st.fixed_dictionaries({"dtype": DTYPES}),
        lambda o: st.fixed_dictionaries({"elements": st.integers(1, 1 << 20), "inputs": st.integers(0, 4),
                                         "outputs": st.integers(1, 4), "flops_per_element": st.integers(0, 16)}),
        {n: _plus(n) for n in ("elements", "inputs", "outputs", "flops_per_element")},
    ),
}
MODELS["grouped_matmul"] = Model(  # the groups are one list per call (an option here): n and k sweep
    ops.grouped_matmul,
    st.fixed_dictionaries({"dtype": DTYPES, "group_sizes": st.lists(st.integers(0, 4096), min_size=1, max_size=8).map(
        lambda g: [*g[:-1], g[-1] + 1])}),
    lambda o: st.fixed_dictionaries({"n": SMALL, "k": SMALL}),
    {"n": _plus("n"), "k": _plus("k")},
)
OP_NAMES = sorted(MODELS)


def _grows(op: str, options: dict[str, Any]) -> dict[str, Callable[[dict[str, Any], int], dict[str, Any] | None]]:
    return _QKV_GROWS[options["_mode"]] if op == "qkv_projection" else MODELS[op].grows


def _call(op: str, options: dict[str, Any], shapes: dict[str, Any]) -> Any:
    kwargs = {k: v for k, v in options.items() if not k.startswith("_")}
    return MODELS[op].fn(**kwargs, **shapes)


def _figures(w: Any) -> dict[str, np.ndarray]:
    return {"flops": np.asarray(w.flops), "executed_flops": np.asarray(w.executed_flops), "bytes": np.asarray(w.bytes),
            "t_sol": np.asarray(sk.roofline(w, H200).t_sol)}


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_op_has_a_model():
    """The property tests and the census cover every registered operator."""
    assert set(MODELS) == {row[0] for row in OPS_TABLE} == set(HUGE_DIMS) == set(ops.REGISTRY)


@pytest.mark.parametrize("op", OP_NAMES)
@PROPERTY
@given(data=st.data())
def test_figures_finite_for_valid_shapes(op, data):
    """Valid shapes give finite FLOPs and bytes >= 0, and a finite T_SOL > 0 on the H200."""
    options = data.draw(MODELS[op].options, label="options")
    shapes = data.draw(MODELS[op].shapes(options), label="shapes")
    f = _figures(_call(op, options, shapes))
    for name in ("flops", "executed_flops", "bytes"):
        assert np.isfinite(f[name]) and f[name] >= 0, name
    assert f["executed_flops"] >= f["flops"]
    assert np.isfinite(f["t_sol"]) and f["t_sol"] > 0


@pytest.mark.parametrize("op", OP_NAMES)
@PROPERTY
@given(data=st.data())
def test_figures_never_fall_when_a_dimension_grows(op, data):
    """Growing any one size (others kept valid) never lowers model FLOPs, executed FLOPs, bytes or T_SOL."""
    options = data.draw(MODELS[op].options, label="options")
    shapes = data.draw(MODELS[op].shapes(options), label="shapes")
    g = data.draw(st.integers(1, 1024), label="growth")
    before = _figures(_call(op, options, shapes))
    for dim_name, grow in _grows(op, options).items():
        bigger = grow(shapes, g)
        if bigger is None:
            continue
        after = _figures(_call(op, options, bigger))
        for name, value in before.items():
            assert after[name] >= value, f"{op}: {name} fell when {dim_name} grew {shapes} -> {bigger}"


@pytest.mark.parametrize("op", OP_NAMES)
@PROPERTY
@given(data=st.data())
def test_vectorized_equals_scalar(op, data):
    """One call with arrays of shapes equals the scalar calls element by element (FLOPs, bytes, T_SOL)."""
    options = data.draw(MODELS[op].options, label="options")
    rows = data.draw(st.lists(MODELS[op].shapes(options), min_size=1, max_size=6), label="rows")
    arrays = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    vec = _figures(_call(op, options, arrays))
    for i, row in enumerate(rows):
        one = _figures(_call(op, options, row))
        for name, value in one.items():
            assert np.shape(vec[name]) == (len(rows),), name
            assert vec[name][i] == pytest.approx(float(value), rel=1e-12, abs=0), f"{op} {name} row {i}: {row}"


@pytest.mark.parametrize("op", OP_NAMES)
@PROPERTY
@given(data=st.data())
def test_vectorized_predict_equals_scalar(op, data):
    """sk.predict on arrays of shapes equals the scalar predictions element by element."""
    options = data.draw(MODELS[op].options, label="options")
    rows = data.draw(st.lists(MODELS[op].shapes(options), min_size=1, max_size=6), label="rows")
    arrays = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    vec = np.asarray(sk.predict(_call(op, options, arrays), H200, warn=False).seconds)
    assert vec.shape == (len(rows),)
    for i, row in enumerate(rows):
        one = sk.predict(_call(op, options, row), H200, warn=False).seconds
        assert vec[i] == pytest.approx(one, rel=1e-12, abs=0), f"{op} row {i}: {row}"


def test_vectorized_predict_mixed_split_kv():
    """A decode row (b=1, sq=1) beside a prefill row (b=64, sq=4096) in one sweep predicts as each alone."""
    # decode: ceil(1*32/32/128)*1*32 = 32 work items < 132 SMs (split-KV); prefill: ceil(4096/128)*64*32 = 65,536:
    # each element takes its own variant's latency and efficiency
    batch, seq_q = np.array([1, 64]), np.array([1, 4096])
    sweep = sk.predict(ops.attention(batch, 32, seq_q, 4096), H200, warn=False).seconds
    alone = [sk.predict(ops.attention(int(b), 32, int(q), 4096), H200, warn=False).seconds for b, q in zip(batch, seq_q)]
    assert sweep == pytest.approx(alone, rel=1e-12)
