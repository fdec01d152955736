"""benchmarks/tune/scoring.py, the scorer of solkit.tune's rankings: ties, average ranks and the expected hits, by hand."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

TUNE = Path(__file__).resolve().parents[1] / "benchmarks" / "tune"
sys.path.insert(0, str(TUNE))  # evaluate.py and pooled.py import scoring by name
import scoring  # noqa: E402

# Three made-up shapes (seconds). A: configs 1 and 2 tie for the predicted best, configs 0 and 3 for the measured
# best. B: the predicted best is unique, and configs 1-3 tie across the quarter's boundary (5 configs keep 2).
# C: no ties.
A = ([2.0, 1.0, 1.0, 3.0, 4.0], [10.0, 12.0, 10.4, 10.0, 20.0])
B = ([1.0, 2.0, 2.0, 2.0, 9.0], [13.0, 10.0, 15.0, 16.0, 11.0])
C = ([1.0, 2.0, 3.0, 4.0], [10.8, 10.0, 12.0, 14.0])


def test_average_ranks_share_a_tie():
    """A's predicted 2, 1, 1, 3, 4: the two 1s span ranks 1 and 2, so each is 1.5; A's measured 10, 12, 10.4, 10, 20:
    the two 10s are 1.5 each, 10.4 is 3, 12 is 4, 20 is 5."""
    assert scoring.average_ranks(A[0]).tolist() == [3.0, 1.5, 1.5, 4.0, 5.0]
    assert scoring.average_ranks(A[1]).tolist() == [1.5, 4.0, 3.0, 1.5, 5.0]
    # B's predicted 1, 2, 2, 2, 9: the three 2s span ranks 2-4, (2 + 3 + 4) / 3 = 3 each
    assert scoring.average_ranks(B[0]).tolist() == [1.0, 3.0, 3.0, 3.0, 5.0]


def test_ties_within_a_part_in_a_billion():
    """1 and the next double (1 + 2.2e-16) tie; 1 and 1 + 1e-6 do not; 1 + 2e-9 chains to neither."""
    nxt = float(np.nextafter(1.0, 2.0))
    assert scoring.tie_groups([1.0 + 1e-6, nxt, 1.0]).tolist() == [1, 0, 0]
    assert scoring.tie_groups([1.0, 1.0 + 2e-9]).tolist() == [0, 1]


def test_spearman_by_hand():
    """Pearson's r of the average ranks.
    A: predicted ranks 3, 1.5, 1.5, 4, 5 and measured 1.5, 4, 3, 1.5, 5, both of mean 3; deviations 0, -1.5, -1.5, 1, 2
    and -1.5, 1, 0, -1.5, 2: sum of products 0 - 1.5 + 0 - 1.5 + 4 = 1, sums of squares 9.5 and 9.5: r = 1 / 9.5 = 2 / 19
    = 0.1053.
    B: predicted 1, 3, 3, 3, 5, measured (10 < 11 < 13 < 15 < 16) 3, 1, 4, 5, 2, means 3; deviations -2, 0, 0, 0, 2 and
    0, -2, 1, 2, -1: products sum to -2, squares 8 and 10: r = -2 / sqrt(80) = -0.2236.
    C: no ties, ranks 1, 2, 3, 4 and 2, 1, 3, 4: d^2 sums to 2, r = 1 - 6 x 2 / (4 x (16 - 1)) = 1 - 12 / 60 = 0.8."""
    assert scoring.spearman(*A) == pytest.approx(2 / 19)
    assert scoring.spearman(*B) == pytest.approx(-2 / math.sqrt(80))
    assert scoring.spearman(*C) == pytest.approx(0.8)
    assert math.isnan(scoring.spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))  # one tie: no ranking to correlate


def test_spearman_agrees_with_scipy_where_installed():
    """scipy.stats.spearmanr also takes average ranks (skipped without scipy, which solkit does not depend on)."""
    stats = pytest.importorskip("scipy.stats")
    for p, m in (A, B, C):
        assert scoring.spearman(p, m) == pytest.approx(stats.spearmanr(p, m)[0])


def test_top1_and_quarter_by_hand():
    """A: measured best 10; the tied predicted best are config 1 (12 / 10 = 1.2, a miss) and config 2 (10.4 / 10 = 1.04,
    within 10%): expected hit 1 / 2, 0 or 1 by tie-break. Its quarter (ceil(5 / 4) = 2 configs) is configs 1 and 2
    whole, and 2 is within 5%: 1.
    B: measured best 10 (config 1); the predicted best, config 0, runs 13 / 10 = 1.3: top-1 0. Its quarter is config 0
    and one of the three tied at 2 (configs 1, 2, 3), of which only config 1 is within 5% (15 / 10 and 16 / 10 are
    not; config 4's 1.1 is outside the quarter): 1 - C(2, 1) / C(3, 1) = 1 / 3, 0 or 1 by tie-break.
    C: the predicted best runs 10.8 / 10 = 1.08: top-1 1; its quarter is that one config, not within 5%: 0."""
    scores = [scoring.shape_scores(np.array(p), np.array(m)) for p, m in (A, B, C)]
    assert [(s["top1"], s["top1_worst"], s["top1_best"]) for s in scores] == [(0.5, 0, 1), (0.0, 0, 0), (1.0, 1, 1)]
    assert [s["quarter"] for s in scores] == pytest.approx([1.0, 1 / 3, 0.0])
    assert [(s["quarter_worst"], s["quarter_best"]) for s in scores] == [(1, 1), (0, 1), (0, 0)]
    assert [s["tied_best"] for s in scores] == [2, 1, 1]
    # pooled: top-1 0.5 + 0 + 1 = 1.5 of 3 (1 to 2 by tie-break), quarter 1 + 1/3 + 0 = 1.33 of 3 (1 to 2)
    assert scoring.count(scores, "top1") == (1.5, 1, 2)
    assert scoring.counted(*scoring.count(scores, "top1"), 3) == "1.5 / 3 (50.0%; 1-2 by tie-break)"
    assert scoring.counted(*scoring.count(scores, "quarter"), 3) == "1.3 / 3 (44.4%; 1-2 by tie-break)"
    assert scoring.counted(1.0, 1, 1, 3) == "1 / 3 (33%)"  # no tie moves it: a whole count


def test_time_saved_expects_the_boundarys_tie_break():
    """B: the quarter keeps config 0 and each of configs 1-3 a third of the time: (13 + (10 + 15 + 16) / 3) of the
    65 measured = (39 + 41) / 195 = 80 / 195, so timing the quarter saves 115 / 195 = 23 / 39 = 0.590."""
    assert scoring.shape_scores(np.array(B[0]), np.array(B[1]))["saved"] == pytest.approx(23 / 39)


def test_a_tie_across_the_boundary_is_hypergeometric():
    """8 configs keep ceil(8 / 4) = 2; four tie for the predicted best, so the quarter draws 2 of those 4. One good of
    the four: misses when both draws are among the 3 others, C(3, 2) / C(4, 2) = 3 / 6: chance 1 / 2 (0 to 1).
    Three good: a miss needs 2 of the 1 other, impossible: 1 (1 to 1)."""
    p = [1.0, 1.0, 1.0, 1.0, 5.0, 6.0, 7.0, 8.0]
    assert scoring.hit_chance(p, [1, 0, 0, 0, 0, 0, 0, 0], 2) == (0.5, 0, 1)
    assert scoring.hit_chance(p, [1, 1, 0, 1, 0, 0, 0, 0], 2) == (1.0, 1, 1)
    assert scoring.kept_shares(p, 2).tolist() == [0.5, 0.5, 0.5, 0.5, 0, 0, 0, 0]
    assert scoring.hit_chance(p, [0, 0, 0, 0, 1, 0, 0, 0], 2) == (0.0, 0, 0)


def test_configs_that_did_not_run_are_left_out():
    """A config NaN on either side is dropped before scoring: C with a fifth config that could not launch scores as C."""
    p, m = np.array([*C[0], np.nan]), np.array([*C[1], np.nan])
    assert scoring.shape_scores(p, m) == scoring.shape_scores(np.array(C[0]), np.array(C[1]))


@pytest.mark.parametrize("call, message", [
    (lambda: scoring.spearman([1.0, 2.0], [1.0, 2.0, 3.0]), "one length"),
    (lambda: scoring.spearman([1.0], [1.0]), "at least 2"),
    (lambda: scoring.average_ranks([1.0, np.nan]), "non-finite"),
    (lambda: scoring.tie_groups([]), "non-empty"),
    (lambda: scoring.tie_groups([[1.0, 2.0]]), "1-D"),
    (lambda: scoring.kept_shares([1.0, 2.0], 3), "1..2"),
    (lambda: scoring.kept_shares([1.0, 2.0], 0.5), "whole count"),
    (lambda: scoring.hit_chance([1.0, 2.0], [True], 1), "each of the 2"),
    (lambda: scoring.shape_scores(np.array([1.0, 2.0]), np.array([1.0])), "pair up"),
    (lambda: scoring.shape_scores(np.array([np.nan]), np.array([1.0])), "no config"),
])
def test_bad_input_is_refused(call, message):
    """Each scorer function says what is wrong with its input."""
    with pytest.raises(ValueError, match=message):
        call()


def test_evaluate_and_pooled_score_with_it():
    """The scripts take the scorer's functions, not copies of their own."""
    for name in ("evaluate", "pooled"):
        spec = importlib.util.spec_from_file_location(f"tune_{name}_for_test", TUNE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.shape_scores is scoring.shape_scores


def test_the_predicted_bests_measured_ratio_by_hand():
    """A: configs 1 and 2 tie for the predicted best; they run 12.0 and 10.4 against the measured best 10.0, ratios 1.2
    and 1.04, each picked with chance 1/2: expected ratio (1.2 + 1.04) / 2 = 1.12, the worst 1.2 (evaluate.py's
    median_top1 and worst_top1). C: the unique predicted best (config 0) runs 10.8 against 10.0: 1.08 both."""
    a, c = scoring.shape_scores(np.array(A[0]), np.array(A[1])), scoring.shape_scores(np.array(C[0]), np.array(C[1]))
    assert a["top1_ratio"] == pytest.approx(1.12) and a["top1_worst_ratio"] == pytest.approx(1.2) and a["tied_best"] == 2
    assert c["top1_ratio"] == pytest.approx(1.08) and c["top1_worst_ratio"] == pytest.approx(1.08) and c["tied_best"] == 1
