"""A program's summary (solkit.summary) and the ``solkit model`` command: groups, shares, launches, MFU by hand."""

from __future__ import annotations

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
    """`solkit model PRESET --train`: the model's source line, the step's launches, groups and MFU at a measured time."""
    assert main(["model", "gpt2", "--train", "--batch", "2", "--seq", "256", "--measured", "100ms", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gpt2: ") and "gpt2 training step on h200-sxm" in out
    assert "matmul backward" in out and "measured 100 ms: MFU" in out and "memory " in out


def test_solkit_model_json_and_refusals(capsys):
    """--json is one object with the groups; a bad shape or --train with a decode is one line and exit 2."""
    assert main(["model", "bert-base", "--batch", "1", "--seq", "128", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["program"] == "bert-base forward" and data["groups"] and data["launches"] > 0
    assert main(["model", "gpt2", "--batch", "0"]) == 2
    assert "--batch must be a positive integer" in capsys.readouterr().err
    assert main(["model", "gpt2", "--train", "--mode", "decode"]) == 2
    assert main(["model", "gtp2"]) == 2  # an unknown preset: one line
