"""One validation path (issue 29, classes 4, 5, 11): ``checked_call``'s keyword errors, ``suggest``'s did-you-mean, the
ZeRO stage and DDP bucket checks, and warnings that still point at the caller's line through the wrapper."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit import models, ops, planning, plot
from solkit._validate import checked_call, choice, did_you_mean, suggest
from solkit.errors import ArgumentTypeError, OptionError, PerformanceWarning, SolkitError
from solkit.models.presets import preset_names
from solkit.models.split import DDP_BUCKET_MB, MAX_BUCKET_MB, MIN_BUCKET_MB, ZERO_STAGES, split_of
from solkit.precision import PRECISIONS
from solkit.profile import host_probe

DECODE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "llama_decode.json.gz"
W = ops.matmul(64, 64, 64)
GPT2 = models.preset("gpt2")

#: every public entry point this path guards: (label, the function, a call of it with extra keywords)
ENTRY_POINTS: list[tuple[str, Callable[..., Any], Callable[[dict[str, Any]], Any]]] = [
    ("predict", sk.predict, lambda kw: sk.predict(W, "h200", **kw)),
    ("inference", planning.inference, lambda kw: planning.inference(GPT2, "h200", **kw)),
    ("Kernel", sk.Kernel, lambda kw: sk.Kernel("k", "gemm", "bf16", **kw)),
    ("load_profile", sk.load_profile, lambda kw: sk.load_profile(DECODE, "h200", **kw)),
    ("host_probe", host_probe, lambda kw: host_probe(**kw)),
    ("load_gpu", sk.load_gpu, lambda kw: sk.load_gpu("h200", **kw)),
    ("list_gpus", sk.list_gpus, lambda kw: sk.list_gpus(**kw)),
    ("training_step", models.training_step, lambda kw: models.training_step(W, **kw)),
    ("matmul", ops.matmul, lambda kw: ops.matmul(8, 8, 8, **kw)),
    ("get", ops.get, lambda kw: ops.get("matmul", **kw)),
    ("roofline", plot.roofline, lambda kw: plot.roofline(W, "h200", **kw)),
    ("sweep", plot.sweep, lambda kw: plot.sweep({"m": [1, 2], "t_sol_s": [1e-6, 2e-6]}, **kw)),
    ("profile_roofline", plot.profile_roofline, lambda kw: plot.profile_roofline(None, **kw)),
    ("time_breakdown", plot.time_breakdown, lambda kw: plot.time_breakdown(None, **kw)),
]


def _parameters(function: Callable[..., Any]) -> set[str]:
    return set(inspect.signature(function).parameters)


@pytest.mark.parametrize("label, function, call", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
@settings(max_examples=40, deadline=None)
@given(keyword=st.text(min_size=1, max_size=24))
def test_any_unknown_keyword_is_an_argument_type_error(label: str, function: Callable[..., Any],
                                                       call: Callable[[dict[str, Any]], Any], keyword: str) -> None:
    """Any keyword a function does not take (any text at all) is an ArgumentTypeError naming it and what it takes, and
    every name it suggests is one the function takes; never a foreign exception."""
    accepted = _parameters(function)
    if keyword in accepted:
        return
    with pytest.raises(ArgumentTypeError) as info:
        call({keyword: 1})
    message = str(info.value)
    assert repr(keyword) in message and "; it takes: " in message
    takes, _, hint = message.split("; it takes: ")[-1].partition("; did you mean ")  # the lists follow the keyword
    assert {t.lstrip("*") for t in takes.split(", ")} == accepted - {"cls", "self"}
    if hint:
        assert {n.strip("'") for n in hint.rstrip("?").split(" or ")} <= accepted


def test_unknown_keyword_message_in_full():
    """The message: the call, the keyword, the keywords taken in signature order, then the near miss."""
    with pytest.raises(ArgumentTypeError) as info:
        sk.predict(W, "h200", probe_us=8)
    assert str(info.value) == ("predict(): got an unexpected keyword argument 'probe_us'; it takes: workload, gpu, warn, "
                               "neighbours, host_probe_us; did you mean 'host_probe_us'?")


def test_checked_call_keeps_the_signature_and_inner_type_errors():
    """The wrapper has the function's signature; a TypeError raised inside a correct call passes through unchanged."""

    def inner(a: int, b: int = 2) -> int:
        raise TypeError("from inside")

    wrapped = checked_call(inner)
    assert inspect.signature(wrapped) == inspect.signature(inner)
    with pytest.raises(TypeError, match="from inside") as info:
        wrapped(1)
    assert not isinstance(info.value, SolkitError)
    with pytest.raises(ArgumentTypeError, match=r"inner\(\): got an unexpected keyword argument 'c'; it takes: a, b$"):
        wrapped(1, c=3)
    with pytest.raises(ArgumentTypeError, match=r"inner\(\): missing a required argument: 'a'; it takes: a, b"):
        wrapped()


def test_checked_call_on_a_method_lists_no_self():
    """A method's message lists its arguments, not ``self``; a label renames the call (``Kernel()`` for ``__new__``)."""
    with pytest.raises(ArgumentTypeError, match=r"forward\(\): got an unexpected keyword argument 'sequence'; it takes: "
                                                r"batch, seq, "):
        GPT2.forward(sequence=64)
    with pytest.raises(ArgumentTypeError, match=r"^Kernel\(\): got an unexpected keyword argument 'flops'; it takes: name, "
                                                r"kind, precision, .*did you mean 'model_flops' or 'matrix_flops' or "
                                                r"'vector_flops'\?$"):
        sk.Kernel("k", "gemm", "bf16", flops=1.0)


def test_a_wrapped_entry_point_warns_at_the_callers_line():
    """predict's PerformanceWarning names this file, not the wrapper's (checked_call adds a frame)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sk.predict(ops.matmul(8, 8, 7), "h200")  # k = 7 bf16 elements = 14 bytes: not a multiple of 16
    ours = [w for w in caught if issubclass(w.category, PerformanceWarning)]
    assert ours and Path(ours[0].filename).resolve() == Path(__file__).resolve()


# ---- suggest: the did-you-mean of every name lookup -----------------------------------------------------------

NAME_LISTS = {
    "operators": tuple(ops.REGISTRY),
    "presets": preset_names(),
    "gpus": tuple(sk.list_gpus()),
    "precisions": tuple(PRECISIONS),
}


@pytest.mark.parametrize("kind", NAME_LISTS)
def test_every_one_letter_slip_is_suggested(kind: str):
    """Each name with any one character dropped (a name of 3 or more characters, the slip not itself a name) has the
    name among its suggestions: difflib's ratio of such a slip is 2(n-1)/(2n-1) >= 0.8 for n >= 3, above NEAR = 0.6."""
    names = NAME_LISTS[kind]
    tried = 0
    for name in names:
        if len(name) < 3:
            continue
        for i in range(len(name)):
            slip = name[:i] + name[i + 1:]
            if slip.lower() in {n.lower() for n in names}:
                continue
            tried += 1
            assert name in suggest(slip, names, n=len(names)), (slip, name)
    assert tried > 3 * len(names)


@pytest.mark.parametrize("name, allowed, expected", [
    ("layer_norm", tuple(ops.REGISTRY), ["layernorm"]),  # the same name but for a separator: it alone
    ("llama-3-8b", preset_names(), ["llama3-8b"]),
    ("h20", tuple(sk.list_gpus()) + ("h200",), ["h200"]),  # difflib: 2*3/7 = 0.857 against h200, 2*3/11 against h200-sxm
    ("flops", ("matrix_flops", "vector_flops", "model_flops"), ["model_flops", "matrix_flops", "vector_flops"]),
    ("zero_stage", ("dp", "zero", "overlap"), ["zero"]),  # a name that is one of its words
    ("qqqq", ("matmul", "softmax"), []),  # near nothing: nothing invented
    ("", ("matmul",), []),
])
def test_suggest_by_hand(name: str, allowed: tuple[str, ...], expected: list[str]):
    """Hand-picked slips and what they suggest, nearest first."""
    assert suggest(name, allowed) == expected


@settings(max_examples=200, deadline=None)
@given(value=st.text(max_size=30), allowed=st.lists(st.text(min_size=1, max_size=12), max_size=8))
def test_suggest_only_names_allowed_ones(value: str, allowed: list[str]):
    """Suggestions are allowed names, at most three, never the value itself; did_you_mean is empty exactly when none."""
    near = suggest(value, allowed)
    assert set(near) <= set(allowed) and len(near) <= 3
    assert value.strip().lower() not in {n.lower() for n in near}
    assert (did_you_mean(value, allowed) == "") == (near == [])


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.text(max_size=12), st.integers(), st.none(), st.booleans(), st.floats()))
def test_choice_returns_an_allowed_value_or_says_why(value: Any):
    """choice() returns one of the allowed values, or raises OptionError (a string) or ArgumentTypeError (anything else)."""
    allowed = ("nhwc", "nchw", "im2col")
    try:
        out = choice("layout", value, allowed)
    except OptionError as exc:
        assert isinstance(value, str) and "layout must be one of" in str(exc)
    except ArgumentTypeError:
        assert not isinstance(value, str)
    else:
        assert out in allowed and value.strip().lower() == out


# ---- class 5 and 11: the ZeRO stage and DDP's bucket ----------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(zero=st.one_of(st.integers(-10, 10), st.floats(), st.booleans(), st.text(max_size=3), st.none(),
                      st.integers(-10, 10).map(np.int64), st.booleans().map(np.bool_)))
def test_zero_is_an_integer_stage(zero: Any):
    """zero: an integer (Python's or numpy's) among 0..3 is that stage; another integer an OptionError; any other type
    (a bool, a float, a string, None) an ArgumentTypeError."""
    integer = isinstance(zero, (int, np.integer)) and not isinstance(zero, (bool, np.bool_))
    try:
        split = split_of(dp=2, zero=zero)
    except OptionError:
        assert integer and int(zero) not in ZERO_STAGES
    except ArgumentTypeError:
        assert not integer
    else:
        assert integer and split.zero == int(zero) and type(split.zero) is int


@settings(max_examples=200, deadline=None)
@given(mb=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**70, 2**70),
                    st.integers(1, 10**6).map(np.int64), st.floats(1e-3, 1e6).map(np.float32)))
def test_bucket_mb_is_a_finite_size_in_range(mb: Any):
    """bucket_mb: a number (numpy's too) from 2**-10 to 2**30 MiB is taken as that float; inf, NaN, <= 0 or out of
    range is an OptionError naming bucket_mb."""
    value = float(mb)
    try:
        split = split_of(dp=2, bucket_mb=mb)
    except OptionError as exc:
        assert "bucket_mb" in str(exc) and not MIN_BUCKET_MB <= value <= MAX_BUCKET_MB
    else:
        assert MIN_BUCKET_MB <= value <= MAX_BUCKET_MB and split.bucket_mb == value and type(split.bucket_mb) is float


def test_bucket_mb_default_and_types():
    """The default is DDP's 25 MiB; a string, a bool or None is an ArgumentTypeError naming bucket_mb."""
    assert split_of(dp=2).bucket_mb == DDP_BUCKET_MB == 25
    for bad in ("25", True, None, b"25"):
        with pytest.raises(ArgumentTypeError, match="bucket_mb"):
            split_of(dp=2, bucket_mb=bad)


#: the public modules whose functions (their ``__all__``) take user arguments
PUBLIC_MODULES = ("solkit", "solkit.models", "solkit.comm", "solkit.splits", "solkit.planning", "solkit.profile",
                  "solkit.plot", "solkit.fusion", "solkit.capture", "solkit.prediction", "solkit.hardware", "solkit.ops",
                  "solkit.cost")


def _public_functions() -> list[tuple[str, Callable[..., Any]]]:
    import importlib

    found: dict[int, tuple[str, Callable[..., Any]]] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value) or (callable(value) and inspect.isfunction(inspect.unwrap(value))):
                found.setdefault(id(value), (f"{module_name}.{name}", value))
    return sorted(found.values(), key=lambda item: item[0])


PUBLIC_FUNCTIONS = _public_functions()


def test_the_walk_finds_the_public_functions():
    """The walk below reaches the entry points of each public module (a walk that found none would pass vacuously)."""
    names = {name for name, _ in PUBLIC_FUNCTIONS}
    assert {"solkit.mfu", "solkit.roofline", "solkit.comm.all_reduce", "solkit.load_system", "solkit.models.from_hf_config",
            "solkit.splits.candidates", "solkit.splits.search", "solkit.ops.matmul"} <= names  # search: planning.search_splits too
    assert len(names) > 100


@pytest.mark.parametrize("label, function", PUBLIC_FUNCTIONS, ids=[name for name, _ in PUBLIC_FUNCTIONS])
def test_every_public_function_answers_an_unknown_keyword(label: str, function: Callable[..., Any]) -> None:
    """Every function of every public module's __all__: an unknown keyword is an ArgumentTypeError naming it (checked
    before any other argument, so no other argument is needed), never Python's plain TypeError; a function that takes
    any keyword (``**kwargs``) names the argument it misses instead."""
    takes_any = any(p.kind is p.VAR_KEYWORD for p in inspect.signature(function).parameters.values())
    with pytest.raises(ArgumentTypeError, match="missing a required argument" if takes_any else "zzq_bogus"):
        function(zzq_bogus=1)


def test_too_many_positional_arguments_name_what_the_call_takes():
    """roofline(workload, gpu, sparse) given a fourth positional: an ArgumentTypeError listing its parameters."""
    with pytest.raises(ArgumentTypeError, match=r"roofline\(\).*it takes: workload, gpu, sparse"):
        sk.roofline(W, "h200", False, 5)
