"""The host-speed input: ``predict(host_probe_us=)`` scales an eager program's host time by your launch probe over the
fit machine's, ``fit_host`` fits on probe-normalised host times, ``host_probe()`` measures the probe (needs torch)."""

from __future__ import annotations

import json
import statistics
import sys

import pytest

import solkit as sk
from solkit import models, ops
from solkit.calibration.programs import STEP_FIT_DATA, data_dir, fit_host, load_steps
from solkit.errors import ArgumentTypeError, OptionError, OptionalDependencyError, ShapeError
from solkit.prediction import calibration
from solkit.workload import issued_launches

GPT2_INFER = models.preset("gpt2").forward(batch=1, seq=64)  # a small eager program: CPU-bound on an H200


def test_the_spec_records_the_fit_machines_probe():
    # the median probe_us of the fitted step file's cases (data/h200_steps_fit_unprofiled.json), rounded to 0.01 us
    cases = json.loads((data_dir() / STEP_FIT_DATA[0]).read_text())["cases"]
    median = statistics.median(c["probe_us"] for c in cases if c.get("status") == "ok" and c.get("probe_us"))
    assert calibration(sk.load_gpu("h200")).host_probe == pytest.approx(round(median, 2) * 1e-6, rel=1e-12)


def test_probe_scales_host_time():
    # a probe twice the fit machine's: every host parameter doubles, so the CPU's issue time doubles
    # (host_program + layers x host_layer + launches x host_launch, each x 2)
    reference = calibration(sk.load_gpu("h200")).host_probe * 1e6  # us
    plain = sk.predict(GPT2_INFER, "h200")
    slow = sk.predict(GPT2_INFER, "h200", host_probe_us=2 * reference)
    assert float(slow.host_seconds) == pytest.approx(2 * float(plain.host_seconds), rel=1e-9)
    assert float(slow.seconds) > float(plain.seconds)  # the program is CPU-bound: the step slows with its host
    assert any("launch probe" in n for n in slow.notes)
    assert not any("launch probe" in n for n in sk.predict(ops.matmul(64, 64, 64), "h200", host_probe_us=9.0).notes)
    same = sk.predict(GPT2_INFER, "h200", host_probe_us=reference)
    assert float(same.seconds) == pytest.approx(float(plain.seconds), rel=1e-12)


def test_probe_leaves_kernels_alone():
    # a workload of kernels (no eager program) has no host time: the probe changes nothing
    w = ops.matmul(4096, 4096, 4096)
    assert float(sk.predict(w, "h200", host_probe_us=20.0).seconds) == float(sk.predict(w, "h200").seconds)


@pytest.mark.parametrize("value, error, words", [
    ("fast", ArgumentTypeError, "host_probe_us must be a number"),
    (True, ArgumentTypeError, "host_probe_us must be a number"),
    (0.0, OptionError, "positive finite"),
    (-3.0, OptionError, "positive finite"),
    (float("nan"), OptionError, "positive finite"),
    ([5.0, 6.0], ArgumentTypeError, "one number of microseconds"),
])
def test_bad_probe(value, error, words):
    with pytest.raises(error, match=words):
        sk.predict(GPT2_INFER, "h200", host_probe_us=value)
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(OptionError, ValueError)


def test_probe_needs_a_reference():
    # a calibration without a recorded probe (a spec whose steps were never measured) has nothing to scale against
    from solkit.prediction import host_scaled

    bare = calibration(sk.load_gpu("h200")).replace(host_probe=0.0)
    with pytest.raises(OptionError, match="records no launch probe"):
        host_scaled(bare, 6e-6, "h200-sxm")


def test_fit_normalises_host_time_by_the_probe():
    # the same cases with every probe and host time doubled (a machine twice as slow, measured so throughout) fit the
    # same parameters at twice the probe: host per launch over probe is what the fit learns
    fit = load_steps(STEP_FIT_DATA[0])
    slow = fit.model_copy(update={"cases": [c.model_copy(update={"probe_us": c.probe_us * 2, "host_ms": c.host_ms * 2,
                                                                 "wall_ms": c.wall_ms * 2})
                                            if c.ok and c.probe_us else c for c in fit.cases]})
    a, b = fit_host([fit]), fit_host([slow])
    assert b.host_probe == pytest.approx(2 * a.host_probe, rel=1e-9)
    for name in ("host_program", "host_layer", "host_launch", "host_launch_training"):
        assert getattr(b, name) == pytest.approx(2 * getattr(a, name), rel=2e-3), name  # the spec's rounding


def test_host_probe_needs_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails
    with pytest.raises(OptionalDependencyError, match="solkit\\[torch\\]"):
        sk.host_probe()
    with pytest.raises(ShapeError, match="launches"):
        sk.host_probe(launches=0)


def test_host_probe_is_the_protocol_steps_py_records():
    # the measuring scripts never import solkit, so steps.py keeps its own copy of the probe: the same tensors
    # (1,024 fp32 on the GPU), 100 untimed launches, 5 repeats of 2,000 timed ones, the median
    import inspect
    from pathlib import Path

    from solkit.profile import probe

    text = (Path(__file__).resolve().parents[1] / "benchmarks" / "programs" / "steps.py").read_text()
    assert "def launch_probe(torch: Any, launches: int = 2000, repeats: int = 5) -> float:" in text
    assert f"torch.ones({probe.PROBE_ELEMENTS}, device=\"cuda\")" in text
    assert f"for _ in range({probe.PROBE_WARMUP}):" in text and "statistics.median(per)" in text
    defaults = {k: v.default for k, v in inspect.signature(probe.host_probe).parameters.items()}
    assert defaults == {"launches": 2000, "repeats": 5}


def test_training_host_time_by_hand():
    # BERT-base's training step (batch 2 x 128): the CPU issues host_program + 12 x host_layer + launches x
    # host_launch_training, launches = what the step issues (eager autograd's included); with a probe of twice the
    # fit's, twice that
    cal = calibration(sk.load_gpu("h200"))
    step = models.training_step(models.preset("bert-base").forward(batch=2, seq=128))
    launches = issued_launches(step)
    host = cal.host_program + 12 * cal.host_layer + launches * cal.host_launch_training
    assert float(sk.predict(step, "h200").host_seconds) == pytest.approx(host, rel=1e-9)
    doubled = sk.predict(step, "h200", host_probe_us=2 * cal.host_probe * 1e6)
    assert float(doubled.host_seconds) == pytest.approx(2 * host, rel=1e-9)


def test_host_probe_arguments():
    with pytest.raises(ArgumentTypeError, match="launches must be one positive integer"):
        sk.host_probe(launches=[100, 200])
