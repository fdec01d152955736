"""Adversarial cases: keywords, choices, wrong types and plot arguments (issue 29 classes 4, 5, 9, 11; see adversarial.py).

- kw-unknown: an unknown keyword to each public entry point, with a near miss (the message names the keyword, what the
  function takes and a did-you-mean) and without one (no suggestion invented);
- kw-positional: a missing, repeated or extra argument, and arguments swapped;
- kw-names: a near-miss name for each lookup (GPUs, operators and their parameters, presets, dtypes, options);
- kw-types: a wrong type where the contract says TypeError (a model's name for a model, ZeRO's stage as a bool or a
  float, amp as a string or a number), beside a wrong value (a ValueError) and the valid numpy spellings;
- kw-bucket: DDP's ``bucket_mb``: numpy numbers taken, inf/NaN/bools/strings/out-of-range refused by name;
- kw-plot, kw-sweep, kw-profile-plot: the charts' arguments.

A ``works`` case checks its figure against the plain-int call, raising AssertionError (judged ``foreign``) if it differs.
"""

from __future__ import annotations

import decimal
import functools
from pathlib import Path
from typing import Any, Callable

import numpy as np

import solkit as sk
from adversarial import Adv
from solkit import comm, models, ops, planning, plot
from solkit.errors import (
    ArgumentTypeError,
    MeasurementError,
    OptionError,
    ShapeError,
    SolkitError,
    UnknownGPUError,
    UnknownPrecisionError,
)
from solkit.profile import host_probe

PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"
DECODE = PROFILES / "llama_decode.json.gz"
W = ops.matmul(64, 64, 64)
DYM = "did you mean"


@functools.lru_cache(maxsize=None)
def model() -> Any:
    """GPT-2 small (a preset with a closed form)."""
    return models.preset("gpt2")


@functools.lru_cache(maxsize=None)
def fwd() -> Any:
    """GPT-2's forward over 1 x 64 tokens."""
    return model().forward(batch=1, seq=64)


@functools.lru_cache(maxsize=None)
def prof() -> Any:
    """The Llama decode trace on the H200 (data/profiles)."""
    return sk.load_profile(DECODE, "h200")


def step(**kw: Any) -> Any:
    """GPT-2's training step over 2 data-parallel GPUs (``kw`` overrides)."""
    return models.training_step(fwd(), **{"dp": 2, **kw})


def step_seconds(**kw: Any) -> float:
    """The predicted seconds of ``step(**kw)`` on the H200."""
    return float(sk.predict(step(**kw), "h200", warn=False).seconds)


def same_step(kw: dict[str, Any], plain: dict[str, Any]) -> Callable[[], None]:
    """A case call: the step with ``kw`` predicts exactly the seconds of the step with the plain-Python ``plain``."""

    def call() -> None:
        a, b = step_seconds(**kw), step_seconds(**plain)
        if a != b:
            raise AssertionError(f"{kw} gives {a!r} s, {plain} gives {b!r} s")

    return call


def axes() -> Any:
    """Fresh matplotlib Axes (headless)."""
    from matplotlib.figure import Figure

    return Figure().add_subplot(1, 1, 1)


def roof(**kw: Any) -> Any:
    """plot.roofline of the 64^3 matmul on the H200 (``kw`` overrides)."""
    return plot.roofline(W, "h200", **kw)


SWEEP = {"m": [64, 128, 256], "t_sol_s": [1e-6, 2e-6, 4e-6], "predicted_s": [2e-6, 3e-6, 5e-6]}


def sweep_of(**columns: Any) -> Any:
    """plot.sweep of the small SWEEP table with ``columns`` replaced or added."""
    return plot.sweep({**SWEEP, **columns})


def unknown(id: str, call: Callable[[], Any], keyword: str, *near: str, where: str = "") -> Adv:
    """An unknown keyword: an ArgumentTypeError naming it, the call and what it takes, and each near miss (if any)."""
    words = (repr(keyword), "it takes", *(where and (where,)), *((DYM, *map(repr, near)) if near else ()))
    return Adv(f"kw-unknown: {id}", call, ArgumentTypeError, TypeError, words)


def plain(id: str, call: Callable[[], Any], keyword: str) -> Adv:
    """An unknown keyword with no near miss: the error names it, and suggests nothing (``no_suggestion`` checks)."""
    return Adv(f"kw-unknown: {id} (no near miss)", no_dym(call), ArgumentTypeError, TypeError,
               (repr(keyword), "it takes"))


def no_dym(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call``, whose solkit error must not invent a did-you-mean (AssertionError if it does)."""

    def checked() -> Any:
        try:
            return call()
        except SolkitError as exc:
            if DYM in str(exc):
                raise AssertionError(f"a suggestion for a keyword near nothing: {exc}") from None
            raise

    return checked


CASES: list[Adv] = [
    # ---- class 4: unknown keywords, each entry point -------------------------------------------------------
    unknown("predict probe_us", lambda: sk.predict(W, "h200", probe_us=8), "probe_us", "host_probe_us",
            where="predict()"),
    unknown("predict gpus", lambda: sk.predict(W, gpus="h200"), "gpus", "gpu"),
    unknown("predict warnings", lambda: sk.predict(W, "h200", warnings=False), "warnings", "warn"),
    unknown("predict neighbors (US spelling)", lambda: sk.predict(W, "h200", neighbors=False), "neighbors", "neighbours"),
    plain("predict colour", lambda: sk.predict(W, "h200", colour="red"), "colour"),
    unknown("inference prompt_len", lambda: planning.inference(model(), "h200", batch=1, prompt_len=2048, output=8),
            "prompt_len", "prompt", where="inference()"),
    unknown("inference outputs", lambda: planning.inference(model(), "h200", outputs=8), "outputs", "output"),
    unknown("inference kv_cache_dtype", lambda: planning.inference(model(), "h200", kv_cache_dtype="fp8"),
            "kv_cache_dtype", "kv_dtype"),
    Adv("kw-names: inference engine 'vllm' (engine= names hf-eager, hf-static, fused)",
        lambda: planning.inference(model(), "h200", engine="vllm"), OptionError, ValueError,
        ("engine", "'hf-eager'", "'fused'", "'vllm'")),
    unknown("Kernel flops", lambda: sk.Kernel("k", "gemm", "bf16", flops=1e9), "flops", "model_flops", "matrix_flops",
            "vector_flops", where="Kernel()"),
    unknown("Kernel byte_read", lambda: sk.Kernel("k", "copy", "bf16", byte_read=8.0), "byte_read", "bytes_read"),
    plain("Kernel colour", lambda: sk.Kernel("k", "copy", "bf16", colour=1), "colour"),
    unknown("load_profile gpux", lambda: sk.load_profile(DECODE, gpux="h200"), "gpux", "gpu", where="load_profile()"),
    unknown("load_profile paths", lambda: sk.load_profile(paths=DECODE, gpu="h200"), "paths", "path"),
    plain("load_profile ranks", lambda: sk.load_profile(DECODE, "h200", ranks=2), "ranks"),
    unknown("host_probe launch", lambda: host_probe(launch=100), "launch", "launches", where="host_probe()"),
    unknown("host_probe repeat", lambda: host_probe(repeat=3), "repeat", "repeats"),
    plain("host_probe device", lambda: host_probe(device="cuda:1"), "device"),
    unknown("load_gpu spec", lambda: sk.load_gpu("h200", spec="x"), "spec", "spec_path", where="load_gpu()"),
    unknown("list_gpus path", lambda: sk.list_gpus(path="."), "path", "spec_path", where="list_gpus()"),
    unknown("training_step bucket", lambda: step(bucket=25), "bucket", "bucket_mb", where="training_step()"),
    unknown("training_step zero_stage", lambda: step(zero_stage=1), "zero_stage", "zero"),
    unknown("training_step optimiser", lambda: step(optimiser="sgd"), "optimiser", "optimizer"),
    unknown("training_step micro_batches", lambda: step(micro_batches=2), "micro_batches", "microbatches"),
    plain("training_step grad_accum", lambda: step(grad_accum=2), "grad_accum"),
    unknown("matmul dtyp", lambda: ops.matmul(8, 8, 8, dtyp="bf16"), "dtyp", "dtype", where="matmul()"),
    plain("matmul transpose", lambda: ops.matmul(8, 8, 8, transpose=True), "transpose"),
    unknown("ops.get nme", lambda: ops.get(nme="matmul"), "nme", "name", where="get()"),
    unknown("forward seq_len", lambda: model().forward(batch=1, seq_len=64), "seq_len", "seq", where="forward()"),
    unknown("plot.roofline precision", lambda: roof(precision="bf16"), "precision", "precisions", where="roofline()"),
    unknown("plot.roofline measure", lambda: roof(measure={"matmul": 1e-3}), "measure", "measured"),
    unknown("plot.roofline axes", lambda: roof(axes=None), "axes", "ax"),
    unknown("plot.sweep titel", lambda: plot.sweep(SWEEP, titel="m"), "titel", "title", where="sweep()"),
    plain("plot.sweep colour", lambda: plot.sweep(SWEEP, colour="red"), "colour"),
    unknown("plot.save dpis", lambda: plot.save(roof(), "chart.png", dpis=100), "dpis", "dpi", where="save()"),
    unknown("plot.profile_roofline tops", lambda: plot.profile_roofline(prof(), tops=3), "tops", "top",
            where="profile_roofline()"),
    unknown("plot.time_breakdown axes", lambda: plot.time_breakdown(prof(), axes=None), "axes", "ax",
            where="time_breakdown()"),
    Adv("kw-unknown: two unknown keywords are both named", lambda: sk.predict(W, "h200", probe_us=8, warnings=False),
        ArgumentTypeError, TypeError, ("'probe_us'", "'warnings'", "'host_probe_us' for 'probe_us'", "'warn' for 'warnings'")),
    Adv("kw-unknown: the listed keywords leave out self", lambda: model().forward(sq=64), ArgumentTypeError, TypeError,
        ("it takes: batch, seq",)),
    Adv("kw-unknown: preset(name, batch=) shows the new call", lambda: models.preset("gpt2", batch=1, seq=64),
        ArgumentTypeError, TypeError, ("preset('gpt2').forward(batch=1, seq=64)",)),
    # ---- class 4: positional misuse -----------------------------------------------------------------------
    Adv("kw-positional: predict without a gpu", lambda: sk.predict(W), ArgumentTypeError, TypeError,
        ("predict()", "missing", "'gpu'")),
    Adv("kw-positional: predict with six positionals", lambda: sk.predict(W, "h200", True, True, None, 5),
        ArgumentTypeError, TypeError, ("predict()", "too many positional")),
    Adv("kw-positional: predict with the workload twice", lambda: sk.predict(W, "h200", workload=W), ArgumentTypeError,
        TypeError, ("multiple values", "'workload'")),
    Adv("kw-positional: predict(gpu, workload) swapped", lambda: sk.predict("h200", W), ArgumentTypeError, TypeError,
        ("workload",)),
    Adv("kw-positional: inference without a gpu", lambda: planning.inference(model()), ArgumentTypeError, TypeError,
        ("inference()", "'gpu'")),
    Adv("kw-positional: inference(gpu, model) swapped", lambda: planning.inference("h200", model()), ArgumentTypeError,
        TypeError, ("model must be a solkit.models.Transformer", "'h200'")),
    Adv("kw-positional: Kernel without a kind", lambda: sk.Kernel("k"), ArgumentTypeError, TypeError,
        ("Kernel()", "missing", "'kind'")),
    Adv("kw-positional: Kernel with fifteen positionals", lambda: sk.Kernel("k", "gemm", "bf16", *([0.0] * 12)),
        ArgumentTypeError, TypeError, ("Kernel()", "too many positional")),
    Adv("kw-positional: Kernel with the kind twice", lambda: sk.Kernel("k", "gemm", "bf16", kind="gemm"),
        ArgumentTypeError, TypeError, ("multiple values", "'kind'")),
    Adv("kw-positional: load_profile without a gpu", lambda: sk.load_profile(DECODE), ArgumentTypeError, TypeError,
        ("load_profile()", "'gpu'")),
    Adv("kw-positional: load_profile()", lambda: sk.load_profile(), ArgumentTypeError, TypeError, ("'path'",)),
    Adv("kw-positional: host_probe with three positionals", lambda: host_probe(100, 3, 1), ArgumentTypeError, TypeError,
        ("host_probe()", "too many positional")),
    Adv("kw-positional: measure without gpu=", lambda: sk.measure(print), ArgumentTypeError, TypeError,
        ("measure()", "'gpu'")),
    Adv("kw-positional: load_gpu()", lambda: sk.load_gpu(), ArgumentTypeError, TypeError, ("load_gpu()", "'name'")),
    Adv("kw-positional: preset()", lambda: models.preset(), ArgumentTypeError, TypeError, ("preset()", "'name'")),
    Adv("kw-positional: training_step()", lambda: models.training_step(), ArgumentTypeError, TypeError,
        ("training_step()", "'forward'")),
    Adv("kw-positional: plot.roofline without a gpu", lambda: plot.roofline(W), ArgumentTypeError, TypeError,
        ("roofline()", "'gpu'")),
    Adv("kw-positional: plot.sweep()", lambda: plot.sweep(), ArgumentTypeError, TypeError, ("sweep()", "'result'")),
    Adv("kw-positional: time_breakdown's title is keyword-only",
        lambda: plot.time_breakdown(prof(), 3, None, "a title"), ArgumentTypeError, TypeError,
        ("time_breakdown()", "too many positional")),
    # ---- class 4: near-miss names -------------------------------------------------------------------------
    Adv("kw-names: gpu 'h20'", lambda: sk.load_gpu("h20"), UnknownGPUError, LookupError, ("'h20'", DYM, "'h200'")),
    Adv("kw-names: gpu 'mi300'", lambda: sk.load_gpu("mi300"), UnknownGPUError, LookupError, (DYM, "'mi300x'")),
    Adv("kw-names: gpu 'H200 SXM'", lambda: sk.load_gpu("H200 SXM"), UnknownGPUError, LookupError, (DYM, "'h200-sxm'")),
    Adv("kw-names: gpu 'h20' through predict", lambda: sk.predict(W, "h20"), UnknownGPUError, LookupError,
        (DYM, "'h200'")),
    Adv("kw-names: gpu 'tpu-v5' (near nothing)", lambda: sk.load_gpu("tpu-v5"), UnknownGPUError, LookupError,
        ("'tpu-v5'", "known names")),
    Adv("kw-names: op 'layer_norm'", lambda: ops.get("layer_norm"), OptionError, ValueError,
        ("'layer_norm'", DYM, "'layernorm'")),
    Adv("kw-names: op 'layer-norm'", lambda: ops.get("layer-norm"), OptionError, ValueError, (DYM, "'layernorm'")),
    Adv("kw-names: op 'Matmul' (any case) works", lambda: ops.get("Matmul"), None),
    Adv("kw-names: op 'MatMull'", lambda: ops.get("MatMull"), OptionError, ValueError, (DYM, "'matmul'")),
    Adv("kw-names: op 'conv'", lambda: ops.get("conv"), OptionError, ValueError, (DYM, "'conv2d'")),
    Adv("kw-names: op 5", lambda: ops.get(5), ArgumentTypeError, TypeError, ("op", "5")),
    Adv("kw-names: op 'layer_norm' through sk.sweep", lambda: sk.sweep("layer_norm", "h200", tokens=[8, 16], d_model=64),
        OptionError, ValueError, (DYM, "'layernorm'")),
    Adv("kw-names: an operator's parameter 'dtyp'", lambda: ops.get("matmul").param("dtyp"), OptionError, ValueError,
        ("'dtyp'", DYM, "'dtype'")),
    Adv("kw-names: preset 'llama-3-8b'", lambda: models.preset("llama-3-8b"), OptionError, ValueError,
        ("'llama-3-8b'", DYM, "'llama3-8b'")),
    Adv("kw-names: preset 'gpt-2'", lambda: models.preset("gpt-2"), OptionError, ValueError, (DYM, "'gpt2'")),
    Adv("kw-names: preset 'llama3'", lambda: models.preset("llama3"), OptionError, ValueError, (DYM, "'llama3-8b'")),
    Adv("kw-names: preset 'Llama3-8B' (any case) works", lambda: models.preset("Llama3-8B"), None),
    Adv("kw-names: dtype 'bfloa16'", lambda: ops.matmul(8, 8, 8, dtype="bfloa16"), UnknownPrecisionError, ValueError,
        ("dtype", "'bfloa16'", DYM, "'bfloat16'")),
    Adv("kw-names: dtype 'fp8e4'", lambda: ops.matmul(8, 8, 8, dtype="fp8e4"), UnknownPrecisionError, ValueError,
        (DYM, "'fp8_e4m3'")),
    Adv("kw-names: dtype 'bfloat16' (an alias) works", lambda: ops.matmul(8, 8, 8, dtype="bfloat16"), None),
    Adv("kw-names: dtype 'torch.bfloat16' works", lambda: ops.matmul(8, 8, 8, dtype="torch.bfloat16"), None),
    Adv("kw-names: layout 'nhcw'", lambda: ops.conv2d(1, 8, 8, 8, 8, layout="nhcw"), OptionError, ValueError,
        ("layout", "'nhcw'", DYM, "'nhwc'")),
    Adv("kw-names: impl 'flsh'", lambda: ops.attention(1, 8, 64, impl="flsh"), OptionError, ValueError,
        ("impl", DYM, "'flash'")),
    Adv("kw-names: optimizer 'adam'", lambda: step(optimizer="adam"), OptionError, ValueError,
        ("optimizer", DYM, "'adamw'")),
    Adv("kw-names: kernels 'fusd'", lambda: model().forward(kernels="fusd"), OptionError, ValueError,
        ("kernels", DYM, "'fused'")),
    Adv("kw-names: collective algorithm 'rng'", lambda: comm.all_reduce(2**20, 8, algorithm="rng"), OptionError,
        ValueError, ("algorithm", DYM, "'ring'")),
    Adv("kw-names: unit 'vectr'", lambda: sk.load_gpu("h200").peak_flops("fp32", unit="vectr"), OptionError, ValueError,
        ("unit", DYM, "'vector'")),
    Adv("kw-names: an option far from every choice suggests nothing",
        no_dym(lambda: ops.conv2d(1, 8, 8, 8, 8, layout="zzzz")), OptionError, ValueError, ("layout", "'zzzz'")),
    # ---- class 5: wrong types ------------------------------------------------------------------------------
    Adv("kw-types: inference of a preset's name", lambda: planning.inference("llama3-8b", "h200"), ArgumentTypeError,
        TypeError, ("model", "'llama3-8b'", "models.preset('llama3-8b')")),
    Adv("kw-types: inference of a forward Workload", lambda: planning.inference(fwd(), "h200"), ArgumentTypeError,
        TypeError, ("model", "Workload")),
    Adv("kw-types: inference of None", lambda: planning.inference(None, "h200"), ArgumentTypeError, TypeError,
        ("model", "None")),
    Adv("kw-types: inference of 5", lambda: planning.inference(5, "h200"), ArgumentTypeError, TypeError, ("model", "5")),
    Adv("kw-types: inference prompt '2048'", lambda: planning.inference(model(), "h200", prompt="2048"),
        ArgumentTypeError, TypeError, ("prompt", "'2048'")),
    Adv("kw-types: inference prompt True", lambda: planning.inference(model(), "h200", prompt=True), ArgumentTypeError,
        TypeError, ("prompt", "True")),
    Adv("kw-types: inference prompt 64.5 (a value)", lambda: planning.inference(model(), "h200", prompt=64.5),
        ShapeError, ValueError, ("prompt", "64.5")),
    Adv("kw-types: inference with numpy ints works", lambda: planning.inference(
        model(), "h200", batch=np.int64(2), prompt=np.int64(64), output=np.int32(8)), None),
    Adv("kw-types: training_step zero=True", lambda: step(zero=True), ArgumentTypeError, TypeError,
        ("zero", "bool", "True")),
    Adv("kw-types: training_step zero=False", lambda: step(zero=False), ArgumentTypeError, TypeError,
        ("zero", "False")),
    Adv("kw-types: training_step zero=1.0", lambda: step(zero=1.0), ArgumentTypeError, TypeError, ("zero", "1.0")),
    Adv("kw-types: training_step zero='1'", lambda: step(zero="1"), ArgumentTypeError, TypeError, ("zero", "'1'")),
    Adv("kw-types: training_step zero=None", lambda: step(zero=None), ArgumentTypeError, TypeError, ("zero", "None")),
    Adv("kw-types: training_step zero=[1]", lambda: step(zero=[1]), ArgumentTypeError, TypeError, ("zero", "[1]")),
    Adv("kw-types: training_step zero=np.bool_(True)", lambda: step(zero=np.bool_(True)), ArgumentTypeError, TypeError,
        ("zero",)),
    Adv("kw-types: training_step zero=4 (a value)", lambda: step(zero=4), OptionError, ValueError,
        ("zero", "0, 1, 2, 3", "4")),
    Adv("kw-types: training_step zero=-1 (a value)", lambda: step(zero=-1), OptionError, ValueError, ("zero", "-1")),
    Adv("kw-types: training_step zero=np.int64(1) is zero=1", same_step({"zero": np.int64(1)}, {"zero": 1}), None),
    Adv("kw-types: training_step amp='on'", lambda: step(amp="on"), ArgumentTypeError, TypeError, ("amp", "'on'")),
    Adv("kw-types: training_step amp='true'", lambda: step(amp="true"), ArgumentTypeError, TypeError, ("amp", "'true'")),
    Adv("kw-types: training_step amp=1", lambda: step(amp=1), ArgumentTypeError, TypeError, ("amp", "1")),
    Adv("kw-types: training_step amp=0", lambda: step(amp=0), ArgumentTypeError, TypeError, ("amp", "0")),
    Adv("kw-types: training_step amp=[]", lambda: step(amp=[]), ArgumentTypeError, TypeError, ("amp", "[]")),
    Adv("kw-types: training_step amp=np.bool_(True) is amp=True", same_step({"amp": np.bool_(True)}, {"amp": True}),
        None),
    Adv("kw-types: training_step amp=True on an fp32 forward (a value)",
        lambda: models.training_step(model().forward(batch=1, seq=64, dtype="fp32"), amp=True), OptionError, ValueError,
        ("amp=True", "fp32")),
    Adv("kw-types: training_step dp=True", lambda: step(dp=True), ArgumentTypeError, TypeError, ("dp", "True")),
    Adv("kw-types: training_step dp='2'", lambda: step(dp="2"), ArgumentTypeError, TypeError, ("dp", "'2'")),
    Adv("kw-types: training_step dp=2.5 (a value)", lambda: step(dp=2.5), ShapeError, ValueError, ("dp", "2.5")),
    Adv("kw-types: training_step dp=np.int64(2) is dp=2", same_step({"dp": np.int64(2)}, {"dp": 2}), None),
    Adv("kw-types: training_step microbatches='2'", lambda: step(microbatches="2"), ArgumentTypeError, TypeError,
        ("microbatches", "'2'")),
    Adv("kw-types: training_step overlap='no'", lambda: step(overlap="no"), ArgumentTypeError, TypeError,
        ("overlap", "'no'")),
    Adv("kw-types: training_step optimizer=5", lambda: step(optimizer=5), ArgumentTypeError, TypeError,
        ("optimizer", "5")),
    Adv("kw-types: host_probe launches '100'", lambda: host_probe("100"), ArgumentTypeError, TypeError,
        ("launches", "'100'")),
    Adv("kw-types: host_probe repeats True", lambda: host_probe(100, True), ArgumentTypeError, TypeError,
        ("repeats", "True")),
    Adv("kw-types: host_probe launches 0 (a value)", lambda: host_probe(0), ShapeError, ValueError, ("launches", "0")),
    Adv("kw-types: host_probe's work is bounded", lambda: host_probe(10**9), OptionError, ValueError,
        ("launches x repeats", "1,000,000,000")),
    # ---- class 11: bucket_mb --------------------------------------------------------------------------------
    Adv("kw-bucket: np.int64(25) is 25", same_step({"bucket_mb": np.int64(25)}, {"bucket_mb": 25}), None),
    Adv("kw-bucket: np.float32(25.5) is 25.5", same_step({"bucket_mb": np.float32(25.5)}, {"bucket_mb": 25.5}), None),
    Adv("kw-bucket: a 0-d array np.array(25) is 25", same_step({"bucket_mb": np.array(25)}, {"bucket_mb": 25}), None),
    Adv("kw-bucket: 25.0 is 25", same_step({"bucket_mb": 25.0}, {"bucket_mb": 25}), None),
    Adv("kw-bucket: 1 KiB (2**-10 MiB, the least) works", lambda: step(bucket_mb=2**-10), None),
    Adv("kw-bucket: 1 PiB (2**30 MiB, the most) works", lambda: step(bucket_mb=2**30), None),
    Adv("kw-bucket: inf", lambda: step(bucket_mb=float("inf")), OptionError, ValueError, ("bucket_mb", "inf")),
    Adv("kw-bucket: 1e400 (inf)", lambda: step(bucket_mb=1e400), OptionError, ValueError, ("bucket_mb", "inf")),
    Adv("kw-bucket: -inf", lambda: step(bucket_mb=-float("inf")), OptionError, ValueError, ("bucket_mb", "-inf")),
    Adv("kw-bucket: NaN", lambda: step(bucket_mb=float("nan")), OptionError, ValueError, ("bucket_mb", "nan")),
    Adv("kw-bucket: np.float64 NaN", lambda: step(bucket_mb=np.float64("nan")), OptionError, ValueError,
        ("bucket_mb", "nan")),
    Adv("kw-bucket: 0", lambda: step(bucket_mb=0), OptionError, ValueError, ("bucket_mb", "0")),
    Adv("kw-bucket: -25", lambda: step(bucket_mb=-25), OptionError, ValueError, ("bucket_mb", "-25")),
    Adv("kw-bucket: 1e-300 (below a byte)", lambda: step(bucket_mb=1e-300), OptionError, ValueError,
        ("bucket_mb", "1e-300", "1 KiB")),
    Adv("kw-bucket: 1e300", lambda: step(bucket_mb=1e300), OptionError, ValueError, ("bucket_mb", "1e+300", "1 PiB")),
    Adv("kw-bucket: 10**400 (beyond float64)", lambda: step(bucket_mb=10**400), OptionError, ValueError,
        ("bucket_mb", "float64", "401 digits")),
    Adv("kw-bucket: 10**5000 (beyond Python's printing limit)", lambda: step(bucket_mb=10**5000), OptionError,
        ValueError, ("bucket_mb", "float64", "5001 digits")),
    Adv("kw-bucket: [10**400]", lambda: step(bucket_mb=[10**400]), OptionError, ValueError, ("bucket_mb", "float64")),
    Adv("kw-bucket: '25'", lambda: step(bucket_mb="25"), ArgumentTypeError, TypeError, ("bucket_mb", "'25'")),
    Adv("kw-bucket: True", lambda: step(bucket_mb=True), ArgumentTypeError, TypeError, ("bucket_mb", "True")),
    Adv("kw-bucket: False", lambda: step(bucket_mb=False), ArgumentTypeError, TypeError, ("bucket_mb", "False")),
    Adv("kw-bucket: np.bool_(True)", lambda: step(bucket_mb=np.bool_(True)), ArgumentTypeError, TypeError,
        ("bucket_mb",)),
    Adv("kw-bucket: None", lambda: step(bucket_mb=None), ArgumentTypeError, TypeError, ("bucket_mb", "None")),
    Adv("kw-bucket: a complex number", lambda: step(bucket_mb=25j), ArgumentTypeError, TypeError, ("bucket_mb",)),
    Adv("kw-bucket: a Decimal", lambda: step(bucket_mb=decimal.Decimal(25)), ArgumentTypeError, TypeError,
        ("bucket_mb",)),
    Adv("kw-bucket: a list [25]", lambda: step(bucket_mb=[25]), OptionError, ValueError, ("bucket_mb", "one number")),
    Adv("kw-bucket: an array of two", lambda: step(bucket_mb=np.array([25, 50])), OptionError, ValueError,
        ("bucket_mb", "one number")),
    # ---- class 9: plot.roofline ----------------------------------------------------------------------------
    Adv("kw-plot: precisions=5", lambda: roof(precisions=5), ArgumentTypeError, TypeError, ("precisions", "5")),
    Adv("kw-plot: precisions=5.0", lambda: roof(precisions=5.0), ArgumentTypeError, TypeError, ("precisions", "5.0")),
    Adv("kw-plot: precisions=True", lambda: roof(precisions=True), ArgumentTypeError, TypeError,
        ("precisions", "True")),
    Adv("kw-plot: precisions=[5]", lambda: roof(precisions=[5]), ArgumentTypeError, TypeError, ("precisions", "5")),
    Adv("kw-plot: precisions=('bf16', 5)", lambda: roof(precisions=("bf16", 5)), ArgumentTypeError, TypeError,
        ("precisions", "5")),
    Adv("kw-plot: precisions a dict", lambda: roof(precisions={"bf16": 1}), ArgumentTypeError, TypeError,
        ("precisions", "dict")),
    Adv("kw-plot: precisions bytes", lambda: roof(precisions=b"bf16"), ArgumentTypeError, TypeError,
        ("precisions", "bytes")),
    Adv("kw-plot: precisions=[] (a value)", lambda: roof(precisions=[]), OptionError, ValueError,
        ("precisions", "at least one")),
    Adv("kw-plot: precisions 'bf17'", lambda: roof(precisions="bf17"), UnknownPrecisionError, ValueError,
        ("'bf17'",)),
    Adv("kw-plot: precisions 'fp32:vectr'", lambda: roof(precisions="fp32:vectr"), OptionError, ValueError,
        ("unit", DYM, "'vector'")),
    Adv("kw-plot: precisions 'bf16' works", lambda: roof(precisions="bf16"), None),
    Adv("kw-plot: precisions ['bf16', ('fp32', 'vector')] works", lambda: roof(precisions=["bf16", ("fp32", "vector")]),
        None),
    Adv("kw-plot: measured=[1e-3]", lambda: roof(measured=[1e-3]), ArgumentTypeError, TypeError, ("measured", "list")),
    Adv("kw-plot: measured=1e-3", lambda: roof(measured=1e-3), ArgumentTypeError, TypeError, ("measured", "float")),
    Adv("kw-plot: measured='1e-3'", lambda: roof(measured="1e-3"), ArgumentTypeError, TypeError, ("measured", "str")),
    Adv("kw-plot: measured {5: 1e-3}", lambda: roof(measured={5: 1e-3}), ArgumentTypeError, TypeError,
        ("measured", "5")),
    Adv("kw-plot: measured {'matmull': 1e-3}", lambda: roof(measured={"matmull": 1e-3}), OptionError, ValueError,
        ("measured", "'matmull'", DYM, "'matmul'")),
    Adv("kw-plot: measured seconds '1e-3'", lambda: roof(measured={"matmul": "1e-3"}), ArgumentTypeError, TypeError,
        ("measured['matmul']", "'1e-3'")),
    Adv("kw-plot: measured seconds 0", lambda: roof(measured={"matmul": 0}), MeasurementError, ValueError,
        ("measured['matmul']", "0")),
    Adv("kw-plot: measured {} works", lambda: roof(measured={}), None),
    Adv("kw-plot: measured 1 ms works", lambda: roof(measured={"matmul": 1e-3}), None),
    Adv("kw-plot: ax='notaxes'", lambda: roof(ax="notaxes"), ArgumentTypeError, TypeError, ("ax", "'notaxes'")),
    Adv("kw-plot: ax=5", lambda: roof(ax=5), ArgumentTypeError, TypeError, ("ax", "5")),
    Adv("kw-plot: ax a Figure, not Axes", lambda: roof(ax=axes().figure), ArgumentTypeError, TypeError,
        ("ax", "Figure")),
    Adv("kw-plot: ax real Axes works", lambda: roof(ax=axes()), None),
    Adv("kw-plot: title=5", lambda: roof(title=5), ArgumentTypeError, TypeError, ("title", "5")),
    Adv("kw-plot: title='' works", lambda: roof(title=""), None),
    Adv("kw-plot: show_measured_ceilings='yes'", lambda: roof(show_measured_ceilings="yes"), ArgumentTypeError,
        TypeError, ("show_measured_ceilings", "'yes'")),
    Adv("kw-plot: strict=1", lambda: roof(strict=1), ArgumentTypeError, TypeError, ("strict", "1")),
    Adv("kw-plot: workloads None", lambda: plot.roofline(None, "h200"), ArgumentTypeError, TypeError,
        ("workloads", "NoneType")),
    Adv("kw-plot: workloads a str", lambda: plot.roofline("matmul", "h200"), ArgumentTypeError, TypeError,
        ("workloads", "str")),
    Adv("kw-plot: gpu None", lambda: plot.roofline(W, None), ArgumentTypeError, TypeError, ("gpu", "None")),
    Adv("kw-plot: save dpi [100, 200]", lambda: plot.save(roof(), "chart.png", dpi=[100, 200]), OptionError, ValueError,
        ("dpi", "one number")),
    Adv("kw-plot: save dpi '150'", lambda: plot.save(roof(), "chart.png", dpi="150"), ArgumentTypeError, TypeError,
        ("dpi", "'150'")),
    Adv("kw-plot: save of None", lambda: plot.save(None, "chart.png"), ArgumentTypeError, TypeError, ("fig",)),
    # ---- class 9: plot.sweep -------------------------------------------------------------------------------
    Adv("kw-sweep: sweep(None)", lambda: plot.sweep(None), ArgumentTypeError, TypeError, ("result", "None")),
    Adv("kw-sweep: sweep(5)", lambda: plot.sweep(5), ArgumentTypeError, TypeError, ("result", "5")),
    Adv("kw-sweep: sweep('table')", lambda: plot.sweep("table"), ArgumentTypeError, TypeError, ("result", "'table'")),
    Adv("kw-sweep: sweep of a list", lambda: plot.sweep([1e-6, 2e-6]), ArgumentTypeError, TypeError,
        ("result", "list")),
    Adv("kw-sweep: sweep of a workload", lambda: plot.sweep(W), ArgumentTypeError, TypeError, ("result", "Workload")),
    Adv("kw-sweep: sweep({})", lambda: plot.sweep({}), OptionError, ValueError, ("t_sol_s",)),
    Adv("kw-sweep: columns of two lengths", lambda: sweep_of(t_sol_s=[1e-6]), ShapeError, ValueError,
        ("one length", "m 3", "t_sol_s 1")),
    Adv("kw-sweep: a column of one number", lambda: sweep_of(t_sol_s=1e-6), ShapeError, ValueError,
        ("result['t_sol_s']", "1-d")),
    Adv("kw-sweep: a 2-d column", lambda: sweep_of(t_sol_s=[[1e-6]] * 3), ShapeError, ValueError,
        ("result['t_sol_s']", "(3, 1)")),
    Adv("kw-sweep: t_sol_s text", lambda: sweep_of(t_sol_s=["a", "b", "c"]), ArgumentTypeError, TypeError,
        ("result['t_sol_s']", "numbers")),
    Adv("kw-sweep: t_sol_s bools", lambda: sweep_of(t_sol_s=[True, False, True]), ArgumentTypeError, TypeError,
        ("result['t_sol_s']", "numbers")),
    Adv("kw-sweep: t_sol_s NaN", lambda: sweep_of(t_sol_s=[1e-6, float("nan"), 4e-6]), OptionError, ValueError,
        ("result['t_sol_s']", "nan", "index 1")),
    Adv("kw-sweep: t_sol_s inf", lambda: sweep_of(t_sol_s=[1e-6, 2e-6, float("inf")]), OptionError, ValueError,
        ("result['t_sol_s']", "inf")),
    Adv("kw-sweep: predicted_s negative", lambda: sweep_of(predicted_s=[1e-6, -2e-6, 4e-6]), OptionError, ValueError,
        ("result['predicted_s']", "-2e-06")),
    Adv("kw-sweep: x NaN", lambda: sweep_of(m=[64, float("nan"), 256]), OptionError, ValueError, ("result['m']", "nan")),
    Adv("kw-sweep: numbers held in an object column work",
        lambda: sweep_of(m=np.array([64, 128, 256], dtype=object)), None),
    Adv("kw-sweep: x beyond float64", lambda: sweep_of(m=[64, 128, 10**400]), ShapeError, ValueError,
        ("result['m']", "float64")),
    Adv("kw-sweep: a column of dicts", lambda: sweep_of(layout=[{}, {}, {}]), ArgumentTypeError, TypeError,
        ("result['layout']",)),
    Adv("kw-sweep: x=5", lambda: plot.sweep(SWEEP, x=5), ArgumentTypeError, TypeError, ("x", "5")),
    Adv("kw-sweep: x 'mm'", lambda: plot.sweep(SWEEP, x="mm"), OptionError, ValueError, ("x", "'mm'", DYM, "'m'")),
    Adv("kw-sweep: x a column of names", lambda: plot.sweep({**SWEEP, "layout": ["nhwc", "nchw", "nhwc"]}, x="layout"),
        OptionError, ValueError, ("x", "'layout'", "names")),
    Adv("kw-sweep: only names swept", lambda: plot.sweep({"layout": ["nhwc", "nchw"], "t_sol_s": [1e-6, 2e-6]}),
        OptionError, ValueError, ("numeric swept parameter",)),
    Adv("kw-sweep: title=5", lambda: plot.sweep(SWEEP, title=5), ArgumentTypeError, TypeError, ("title", "5")),
    Adv("kw-sweep: a swept text parameter is a series (works)", lambda: sweep_of(layout=["nhwc", "nchw", "nhwc"]), None),
    Adv("kw-sweep: sk.sweep's DataFrame works",
        lambda: plot.sweep(sk.sweep(ops.matmul, "h200", m=[64, 128, 256], n=128, k=128)), None),
    # ---- class 9: the profile charts ------------------------------------------------------------------------
    Adv("kw-profile-plot: profile_roofline(None)", lambda: plot.profile_roofline(None), ArgumentTypeError, TypeError,
        ("profile", "NoneType")),
    Adv("kw-profile-plot: profile_roofline top=0", lambda: plot.profile_roofline(prof(), top=0), OptionError,
        ValueError, ("top", "0")),
    Adv("kw-profile-plot: profile_roofline top=True", lambda: plot.profile_roofline(prof(), top=True),
        ArgumentTypeError, TypeError, ("top", "True")),
    Adv("kw-profile-plot: profile_roofline top=2.0", lambda: plot.profile_roofline(prof(), top=2.0), ArgumentTypeError,
        TypeError, ("top", "2.0")),
    Adv("kw-profile-plot: profile_roofline top=np.int64(2) works", lambda: plot.profile_roofline(prof(), top=np.int64(2)),
        None),
    Adv("kw-profile-plot: profile_roofline ax='x'", lambda: plot.profile_roofline(prof(), ax="x"), ArgumentTypeError,
        TypeError, ("ax", "'x'")),
    Adv("kw-profile-plot: profile_roofline title=5", lambda: plot.profile_roofline(prof(), title=5), ArgumentTypeError,
        TypeError, ("title", "5")),
    Adv("kw-profile-plot: profile_roofline show_measured_ceilings=1",
        lambda: plot.profile_roofline(prof(), show_measured_ceilings=1), ArgumentTypeError, TypeError,
        ("show_measured_ceilings", "1")),
    Adv("kw-profile-plot: profile_roofline precisions=5", lambda: plot.profile_roofline(prof(), precisions=5),
        ArgumentTypeError, TypeError, ("precisions", "5")),
    Adv("kw-profile-plot: time_breakdown of a path", lambda: plot.time_breakdown(str(DECODE)), ArgumentTypeError,
        TypeError, ("profile", "str")),
    Adv("kw-profile-plot: time_breakdown top='3'", lambda: plot.time_breakdown(prof(), top="3"), ArgumentTypeError,
        TypeError, ("top", "'3'")),
    Adv("kw-profile-plot: time_breakdown top=-1", lambda: plot.time_breakdown(prof(), top=-1), OptionError, ValueError,
        ("top", "-1")),
    Adv("kw-profile-plot: time_breakdown ax=5", lambda: plot.time_breakdown(prof(), ax=5), ArgumentTypeError,
        TypeError, ("ax", "5")),
    Adv("kw-profile-plot: time_breakdown title=[]", lambda: plot.time_breakdown(prof(), title=[]), ArgumentTypeError,
        TypeError, ("title", "[]")),
    Adv("kw-profile-plot: time_breakdown top=np.int64(3) works", lambda: plot.time_breakdown(prof(), top=np.int64(3)),
        None),
]
