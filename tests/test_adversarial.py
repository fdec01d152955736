"""Adversarial suite (issue 10): bad and edge inputs across the API, spec files, caches and the CLI.

Each case must end as declared (``adversarial.Adv``): the exact solkit error (also the right
builtin, naming the argument), the flag of an impossible number, or simply working. The census
prints the tally per category and fails on any foreign exception or warning, silent impossible
number, wrong error or hang.
"""

from __future__ import annotations

from collections import Counter

import pytest

import importlib
from pathlib import Path

from adversarial import BAD_OUTCOMES, OUTCOMES, Adv, judge

#: every case file beside this one (adversarial_*.py: each exports CASES), in name order
CASE_FILES = sorted(p.stem for p in Path(__file__).parent.glob("adversarial_*.py"))
CASES: list[Adv] = [case for name in CASE_FILES for case in importlib.import_module(name).CASES]


@pytest.fixture(scope="module")
def verdicts() -> dict[str, tuple[str, str]]:
    """Each case judged once in this module: the census reads the verdicts the cases' own tests reached."""
    return {}


def _verdict(case: Adv, verdicts: dict[str, tuple[str, str]]) -> tuple[str, str]:
    if case.id not in verdicts:
        verdicts[case.id] = judge(case)
    return verdicts[case.id]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_adversarial_case(case: Adv, verdicts):
    """The input ends exactly as declared: its solkit error, its flag, or a plain result."""
    outcome, detail = _verdict(case, verdicts)
    assert outcome not in BAD_OUTCOMES, f"{case.id}: {outcome}: {detail}"


def test_adversarial_census(verdicts):
    """Tally every case by category and outcome; no foreign error, silent number, wrong error or hang."""
    results = {c.id: _verdict(c, verdicts) for c in CASES}
    assert len(results) == len(CASES), "case ids must be unique"
    tally: Counter[tuple[str, str]] = Counter((c.category, results[c.id][0]) for c in CASES)
    categories = sorted({c.category for c in CASES})
    width = max(len(c) for c in categories)
    print(f"\n{'category':<{width}}  " + "  ".join(f"{o:>7}" for o in OUTCOMES))
    for cat in categories:
        print(f"{cat:<{width}}  " + "  ".join(f"{tally[cat, o]:>7}" for o in OUTCOMES))
    totals = Counter(outcome for outcome, _ in results.values())
    print(f"{'all':<{width}}  " + "  ".join(f"{totals[o]:>7}" for o in OUTCOMES))
    bad = {cid: r for cid, r in results.items() if r[0] in BAD_OUTCOMES}
    for cid, (outcome, detail) in bad.items():
        print(f"  {outcome}: {cid}: {detail}")
    assert len(CASES) >= 300
    assert not bad, f"{len(bad)} cases ended badly: {sorted(bad)[:10]}"
