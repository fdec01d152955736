"""benchmarks/heldout_families.py: the held-out-by-set comparison docs/accuracy.md quotes for the seed-2054 draws."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from heldout_families import compare  # noqa: E402


def test_compare_prints_each_familys_median_before_and_after():
    """One family of one file, its cases 1.10x and 1.30x off before (median 20.0%, p90 28.0% by numpy's linear
    percentile: 10% + 0.9 * 20%) and 1.02x and 1.06x after (median 4.0%); the physical model 1.50x (50.0%) both times."""
    log = math.log
    before = {"data/x.json|conv2d/nhwc/grouped": [(log(1.10), log(1.5)), (log(1.30), log(1.5))]}
    after = {"data/x.json|conv2d/nhwc/grouped": [(log(1.02), log(1.5)), (log(1.06), log(1.5))]}
    text = compare(before, after)
    row = next(line for line in text.splitlines() if line.startswith("conv2d/nhwc/grouped"))
    assert row.split()[1:] == ["2", "before", "20.0%", "28.0%", "after", "4.0%", "5.6%", "physical", "50.0%", "50.0%"]
    assert any(line.startswith("x.json ") for line in text.splitlines())  # the same, per file
    assert text.splitlines()[-1] == "all 2: before 20.0% / 28.0%, after 4.0% / 5.6%"
