"""A program's summary (solkit.summary) and the ``solkit model`` command: groups, shares, launches, MFU by hand."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

import solkit as sk
from solkit import models, ops
from solkit.cli import main
from solkit.errors import OptionError
from solkit.summary import group_of, program_summary

H200_BF16 = 989.4e12  # dense bf16 matrix peak of the H200 SXM (NVIDIA H200 datasheet)


def test_groups_share_launches_and_top_by_hand():
    """Two GEMMs and a LayerNorm: two groups; the shares are each group's predicted kernel time over the sum."""
    a, b = ops.matmul(4096, 4096, 4096), ops.matmul(1024, 1024, 1024)
    norm = ops.layernorm(8192, 4096)
    w = sk.chain("program", a, b, norm)
    s = program_summary(w, "h200", top=2)
    p = sk.predict(w, "h200")
    big, small, layernorm = (float(k.seconds) for k in p.kernels)  # in program order: a, b, norm (one run each)
    busy = big + small + layernorm
    groups = {g.group: g for g in s.groups}
    assert set(groups) == {"matmul", "layernorm"}
    assert groups["matmul"].kernels == 2 and groups["matmul"].launches == 2.0  # two distinct GEMMs, one launch each
    assert groups["matmul"].share == pytest.approx((big + small) / busy)
    assert math.fsum(g.share for g in s.groups) == pytest.approx(1)
    assert [k.predicted for k in s.top] == sorted((big, small, layernorm), reverse=True)[:2]  # the two slowest first
    assert s.seconds == pytest.approx(float(p.seconds)) and s.launches == 3.0 and s.distinct == 3


def test_a_training_step_groups_backward_apart():
    """A GEMM's dgrad and wgrad are 'matmul backward', its forward 'matmul' (as the profile report groups them)."""
    step = models.training_step(ops.matmul(512, 512, 512), optimizer=None)
    names = {group_of(k) for k, _ in step.counted}
    assert names == {"matmul", "matmul backward"}


def test_mfu_and_error_against_a_measured_time_by_hand():
    """MFU = model FLOPs / (dense bf16 peak x measured); the prediction's error = predicted / measured - 1."""
    w = ops.matmul(8192, 8192, 8192)  # 2 * 8192**3 = 1.0995e12 FLOP
    s = program_summary(w, "h200", measured=2e-3)
    assert s.mfu == pytest.approx(2 * 8192**3 / (H200_BF16 * 2e-3))  # 1.0995e12 / 1.9788e9 = 0.5557
    d = s.to_dict()
    assert d["prediction_error"] == pytest.approx(s.seconds / 2e-3 - 1) and d["sol_fraction"] == pytest.approx(s.t_sol / 2e-3)


def test_a_sweep_or_a_bad_top_is_refused():
    """A summary needs one shape and a positive top."""
    import numpy as np

    with pytest.raises(OptionError, match="one shape"):
        program_summary(ops.matmul(np.arange(1, 4), 64, 64), "h200")
    with pytest.raises(OptionError, match="top must be a positive integer"):
        program_summary(ops.matmul(64, 64, 64), "h200", top=0)


def test_solkit_model_prints_the_summary(capsys):
    """`solkit model PRESET --train`: the model's source line, then the Prediction's own summary (its head, what it
    assumes, the pace, the groups, the top 3 kernels) with the MFU at a measured time and the memory."""
    assert main(["model", "gpt2", "--train", "--batch", "2", "--seq", "256", "--measured", "100ms", "--top", "3"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert out.startswith("gpt2: ") and lines[1].startswith("Prediction('gpt2 training step' on h200-sxm: ")
    assert lines[2].startswith("assumes an eager PyTorch program") and lines[3].startswith("host ")
    assert "matmul backward" in out and "measured 100 ms: MFU" in out and "memory " in out
    assert any(line.startswith("top 3 of ") for line in lines) and "detail: .table()" not in out


def test_solkit_model_json_and_refusals(capsys):
    """--json is one object with the groups; a bad shape or --train with a decode is one line and exit 2."""
    assert main(["model", "bert-base", "--batch", "1", "--seq", "128", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["program"] == "bert-base forward" and data["groups"] and data["launches"] > 0
    assert main(["model", "gpt2", "--batch", "0"]) == 2
    assert "--batch must be a positive integer" in capsys.readouterr().err
    assert main(["model", "gpt2", "--train", "--mode", "decode"]) == 2
    assert main(["model", "gtp2"]) == 2  # an unknown preset: one line


def test_the_summary_is_the_predictions_with_the_model_lines():
    """ProgramSummary.text() is Prediction.summary with its top kernels, every note and the model lines (FLOPs, MFU at
    the prediction: the model FLOPs over the predicted seconds at 989.4 TFLOP/s) after the pace."""
    w = sk.chain("program", *(ops.matmul(n, n, n) for n in (1024, 2048, 4096, 8192)), *(
        ops.layernorm(t, 4096) for t in (1024, 2048, 4096, 8192, 16384)))  # 9 distinct kernels: a summary
    s = program_summary(w, "h200", top=2)
    p = sk.predict(w, "h200")
    assert s.assumptions == p.assumptions and s.prediction is not None
    gemms = 2 * (1024**3 + 2048**3 + 4096**3 + 8192**3)  # 1.2566e12
    norms = sum(8 * t * 4096 for t in (1024, 2048, 4096, 8192, 16384))  # LayerNorm 8*T*d: 1.0133e9
    assert s.flops == pytest.approx(gemms + norms, rel=1e-12)
    mfu_line = f"model FLOPs {s.flops:.4g}; MFU {s.flops / (H200_BF16 * float(p.seconds)):.1%} at the prediction"
    assert s.lines()[0] == mfu_line
    text = s.text().splitlines()
    assert text[0] == repr(p).splitlines()[0] and text[1].startswith("assumes ")  # the prediction's head, then its assumptions
    assert text[4] == mfu_line  # after the head, the assumptions, the pace and the limiters
    assert sum(line.startswith("matmul") or line.startswith("layernorm") for line in text) >= 2  # the top 2 kernels


def test_to_dict_follows_the_json_scheme():
    """Times end in _s, FLOPs are model_flops, distinct kernels n_kernels, launches launches; the old keys are gone."""
    w = sk.Workload.of("program", ((ops.matmul(4096, 4096, 4096), 2), (ops.layernorm(8192, 4096), 1)))
    s = program_summary(w, "h200", measured=1e-3)
    d = s.to_dict()
    assert {"seconds", "kernel_seconds", "host_seconds", "t_sol", "flops", "distinct", "measured"}.isdisjoint(d)
    assert (d["predicted_s"], d["kernel_s"], d["host_s"], d["t_sol_s"]) == (s.seconds, s.kernel_seconds,
                                                                             s.host_seconds, s.t_sol)
    assert d["model_flops"] == 2 * 2 * 4096**3 + 8 * 8192 * 4096  # two 4096^3 GEMMs + LayerNorm 8*T*d: 2.7515e11
    assert d["n_kernels"] == 2 and d["launches"] == 3.0  # one GEMM shape run twice, one LayerNorm: 2 + 1 launches
    assert d["measured_s"] == 1e-3 and d["assumptions"] == s.assumptions
    mm = next(g for g in d["groups"] if g["group"] == "matmul")
    assert (mm["launches"], mm["n_kernels"]) == (2.0, 1) and {"t_sol_s", "predicted_s", "share"} <= set(mm)
    assert mm["t_sol_s"] == pytest.approx(2 * 2 * 4096**3 / H200_BF16)  # 2 x 138.9 us, compute-bound
    top = d["top_kernels"][0]
    assert set(top) == {"name", "count", "predicted_each_s", "predicted_s", "t_sol_s", "limiter"}
    assert top["predicted_s"] == pytest.approx(top["predicted_each_s"] * top["count"])


def test_solkit_model_json_states_its_assumptions(capsys):
    """--json carries the assumptions line and the scheme's keys."""
    assert main(["model", "bert-base", "--batch", "1", "--seq", "128", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["assumptions"].startswith("assumes an eager PyTorch program")
    assert data["predicted_s"] > data["kernel_s"] > 0 and "seconds" not in data and data["n_kernels"] > 0


def test_a_summary_without_its_prediction_says_so():
    """A hand-built ProgramSummary holds no prediction: text() says so (a ValueError), to_dict still works."""
    s = program_summary(ops.matmul(64, 64, 64), "h200")
    bare = dataclasses.replace(s, prediction=None)
    with pytest.raises(OptionError, match="holds no prediction"):
        bare.text()
    assert bare.to_dict()["predicted_s"] == s.seconds
