"""``compare`` reports the calibrated prediction beside T_SOL: Python, the HTML view, the CLI and its JSON."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import solkit as sk
from solkit import ops
from solkit.cli import main

# the issue's example: x [T=128, d=768] projected to q, k, v (N = 3d = 2304), bf16 (e = 2)
T, D, E = 128, 768, 2
# unfused: three GEMMs, each (T*d + d*d + T*d)*e = (98,304 + 589,824 + 98,304)*2 = 1,572,864 bytes -> 4,718,592
BYTES_UNFUSED = 3 * (T * D + D * D + T * D) * E
# fused: one GEMM, (T*d + d*3d + T*3d)*e = (98,304 + 1,769,472 + 294,912)*2 = 4,325,376 bytes
BYTES_FUSED = (T * D + D * 3 * D + T * 3 * D) * E
# both memory-bound on the H200 (4.8 TB/s; FLOPs 2*128*768*2304 = 452,984,832 / 989.4e12 = 0.458 us < 0.901 us)
H200_BANDWIDTH = 4.8e12


def _pair(tokens=T):
    return ops.qkv_projection(tokens, D, fused=False), ops.qkv_projection(tokens, D, fused=True)


def test_the_predicted_speedup_is_the_ratio_of_the_two_predictions(h200):
    """predicted_speedup = predict(before).seconds / predict(after).seconds, each side predicted on its own."""
    before, after = _pair()
    c = sk.compare(before, after, h200)
    p_before, p_after = sk.predict(before, h200).seconds, sk.predict(after, h200).seconds
    assert c.predicted_before == p_before and c.predicted_after == p_after
    assert c.predicted_speedup == pytest.approx(p_before / p_after, rel=1e-12)


def test_the_issues_example_predicts_what_t_sol_misses(h200):
    """qkv T=128, d=768 on the H200: T_SOL ratio 4,718,592 / 4,325,376 = 1.09x; predicted > 2x (the H200 measured
    2.39x, issue 30), because the unfused side pays three launches of latency-bound GEMMs that T_SOL leaves out."""
    c = sk.compare(*_pair(), h200)
    assert c.bytes_baseline == BYTES_UNFUSED and c.bytes_variant == BYTES_FUSED
    assert c.t_sol_baseline == pytest.approx(BYTES_UNFUSED / H200_BANDWIDTH)  # 0.983 us
    assert c.speedup == pytest.approx(BYTES_UNFUSED / BYTES_FUSED)  # 1.0909
    assert c.predicted_speedup > 2.0
    assert c.predicted_speedup > c.speedup
    text = str(c)
    assert f"({c.predicted_speedup:.2f}x)" in text and "predicted" in text


def test_a_gpu_without_a_calibration_says_so_and_predicts_nothing():
    """The A100's spec has no measured: section: predicted_* are None (not T_SOL), the note names the GPU."""
    c = sk.compare(*_pair(), "a100")
    assert (c.predicted_before, c.predicted_after, c.predicted_speedup) == (None, None, None)
    assert "a100-sxm4-80gb has no calibration" in c.predicted_note
    assert "predicted n/a: a100-sxm4-80gb has no calibration" in str(c)
    d = c.to_dict()
    assert (d["predicted_before_s"], d["predicted_after_s"], d["predicted_speedup"]) == (None, None, None)
    assert d["predicted_note"] == c.predicted_note
    assert "n/a" in c._repr_html_()


def test_to_dict_names_the_predicted_times_in_seconds(h200):
    """to_dict: predicted_before_s / predicted_after_s hold the attributes predicted_before / predicted_after, whose
    ratio is predicted_speedup; every other key is the attribute's own name."""
    c = sk.compare(*_pair(), h200)
    d = c.to_dict()
    assert d["predicted_before_s"] == c.predicted_before and d["predicted_after_s"] == c.predicted_after
    assert d["predicted_speedup"] == pytest.approx(d["predicted_before_s"] / d["predicted_after_s"], rel=1e-12)
    assert {"predicted_before", "predicted_after"}.isdisjoint(d)
    assert d["t_sol_baseline"] == pytest.approx(BYTES_UNFUSED / H200_BANDWIDTH)  # 4,718,592 B / 4.8 TB/s = 0.983 us


def test_a_calibrated_comparison_has_no_note(h200):
    """On the H200 the prediction is there and predicted_note is None."""
    c = sk.compare(*_pair(), h200)
    assert c.predicted_note is None and c.to_dict()["predicted_note"] is None


def test_a_sweep_predicts_every_point(h200):
    """tokens = [128, 4096]: predicted_speedup per point equals the two sweeps' predictions divided."""
    tokens = np.array([128, 4096])
    before, after = _pair(tokens)
    c = sk.compare(before, after, h200)
    ratio = np.asarray(sk.predict(before, h200).seconds) / np.asarray(sk.predict(after, h200).seconds)
    assert np.shape(c.predicted_speedup) == (2,)
    np.testing.assert_allclose(c.predicted_speedup, ratio, rtol=1e-12)
    assert c.to_dict()["predicted_speedup"] == pytest.approx(list(ratio))


def test_the_html_view_has_a_predicted_column(h200):
    """The table carries predicted us per side and the caption the predicted ratio."""
    c = sk.compare(*_pair(), h200)
    page = c._repr_html_()
    assert "predicted us" in page
    assert f"predicted {c.predicted_speedup:.2f}x" in page
    assert f'<td style="text-align:right">{c.predicted_before * 1e6:.4g}</td>' in page  # 18.99 us, 4 digits
    assert f'<td style="text-align:right">{c.predicted_after * 1e6:.4g}</td>' in page


def test_the_representation_carries_the_prediction(h200):
    """repr(c) states both predicted times and the predicted ratio."""
    c = sk.compare(*_pair(), h200)
    assert f"({c.predicted_speedup:.2f}x)" in repr(c) and "predicted" in repr(c)


def test_measured_and_predicted_sit_side_by_side(h200):
    """With measured times the measured speed-up is 20 us / 8 us = 2.5x, beside the predicted one."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # both times are above T_SOL: no impossible-measurement warning
        c = sk.compare(*_pair(), h200, measured=(20e-6, 8e-6))
    assert c.measured_speedup == pytest.approx(2.5)  # 20 / 8
    assert c.predicted_speedup is not None
    text = str(c)
    assert text.index("predicted") < text.index("measured")


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, out


def test_the_cli_prints_a_predicted_column_and_says_n_a_without_a_calibration(capsys):
    """solkit compare qkv_projection ... --gpu a100 --gpu h200: the H200's row ends with its predicted ratio, the
    A100's with n/a, and a line below says why."""
    code, out = _cli(capsys, "compare", "qkv_projection", "--tokens", "128", "--d-model", "768", "--baseline",
                     "fused=false", "--variant", "fused=true", "--gpu", "a100", "--gpu", "h200")
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("gpu"))
    assert header.split()[-2:] == ["predicted", "ratio"]
    expected = sk.predict(ops.qkv_projection(T, D, fused=False), "h200").seconds / sk.predict(
        ops.qkv_projection(T, D, fused=True), "h200").seconds
    h200_row = next(line for line in out.splitlines() if line.startswith("h200-sxm"))
    assert h200_row.split()[-1] == f"{expected:.2f}"
    a100_row = next(line for line in out.splitlines() if line.startswith("a100-sxm4-80gb"))
    assert a100_row.split()[-3:] == ["n/a", "n/a", "n/a"]
    assert "predicted n/a on a100-sxm4-80gb: a100-sxm4-80gb has no calibration" in out


def test_the_cli_json_carries_the_prediction(capsys):
    """--json: predicted_before_s / predicted_after_s (times end in _s) / predicted_speedup per GPU, None where
    uncalibrated; the attributes' old spellings are no keys."""
    code, out = _cli(capsys, "compare", "qkv_projection", "--tokens", "128", "--d-model", "768", "--baseline",
                     "fused=false", "--variant", "fused=true", "--gpu", "h200", "--gpu", "a100", "--json")
    assert code == 0
    h200, a100 = json.loads(out)["comparisons"]
    before = sk.predict(ops.qkv_projection(T, D, fused=False), "h200").seconds
    after = sk.predict(ops.qkv_projection(T, D, fused=True), "h200").seconds
    assert h200["predicted_before_s"] == pytest.approx(before) and h200["predicted_after_s"] == pytest.approx(after)
    assert "predicted_before" not in h200 and "predicted_after" not in h200
    assert h200["predicted_speedup"] == pytest.approx(before / after)
    assert a100["predicted_speedup"] is None and "no calibration" in a100["predicted_note"]


def test_compare_predicts_quietly(h200):
    """A misaligned GEMM (k = 8: 16 bytes is 8 bf16, n = 7 is not): compare warns nothing; its prediction still carries
    the slowdown (equal to predict's, which warns)."""
    before, after = ops.matmul(64, 7, 8, batch=3), ops.matmul(64, 7, 8, batch=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = sk.compare(before, after, h200)
    with pytest.warns(sk.errors.PerformanceWarning):
        alone = sk.predict(before, h200).seconds
    assert c.predicted_before == alone and c.predicted_speedup == 1.0


def test_comparison_frame_by_hand():
    """Llama-3-8B's residual add + LayerNorm at 8192 tokens: unfused 3·T·d·2 + (2·T·d + 2·d)·2 = 201,326,592 +
    134,234,112 = 335,560,704 B in 2 kernel runs, fused (4·T·d + 2·d)·2 = 268,451,840 B in 1; the predictions are
    predict()'s, the measured times the ones given (110 and 73.2 us)."""
    unfused, fused = ops.layernorm_residual(8192, 4096, fused=False), ops.layernorm_residual(8192, 4096)
    frame = sk.compare(unfused, fused, "h200", measured=(110e-6, 73.2e-6)).to_frame()
    assert list(frame["side"]) == ["baseline", "variant"]
    assert list(frame["bytes"]) == [335_560_704, 268_451_840] and list(frame["runs"]) == [2, 1]
    assert list(frame["predicted_s"]) == [sk.predict(unfused, "h200").seconds, sk.predict(fused, "h200").seconds]
    assert list(frame["measured_s"]) == pytest.approx([110e-6, 73.2e-6])
