"""The sampling protocol (benchmarks/measuring/sampling.py): deterministic, disjoint sets, inside the declared space."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from measuring import builders, sampling  # noqa: E402
from measuring.cases import rough_kernel_seconds  # noqa: E402

N = 320


@pytest.fixture(scope="module")
def sets() -> dict[str, list]:
    return {name: sampling.sample_set(name, N) for name in sampling.SETS}


def test_deterministic() -> None:
    a = [c.id for c in sampling.sample_set("fit", 60, seed=7)]
    b = [c.id for c in sampling.sample_set("fit", 60, seed=7)]
    assert a == b
    assert a != [c.id for c in sampling.sample_set("fit", 60, seed=8)]
    # drawing more extends the list; it never reorders or drops a case
    assert [c.id for c in sampling.sample_set("fit", 90, seed=7)][:60] == a


def test_sets_disjoint_and_sized(sets: dict[str, list]) -> None:
    ids = {name: {c.id for c in cs} for name, cs in sets.items()}
    for name, cs in sets.items():
        assert len(cs) == N and len(ids[name]) == N
        assert all(sampling.set_of(i) == name for i in ids[name])
    assert not ids["fit"] & ids["validation"]
    assert not ids["fit"] & ids["test"]
    assert not ids["validation"] & ids["test"]


def test_inside_declared_space(sets: dict[str, list]) -> None:
    for cs in sets.values():
        for c in cs:
            assert sampling.check_case(c) == [], c.id
            assert c.impl in builders.BUILDERS
            assert c.tier == 1 and c.primary and c.variant == ""
            if c.params["dtype"] == "fp8_e4m3":
                assert c.impl == "scaled_mm" and c.params["k"] % 16 == 0 and c.params["n"] % 16 == 0
            if c.params["dtype"] == "int8":
                assert c.impl == "int_mm" and c.params["m"] > 16 and c.params["k"] % 8 == 0 and c.params["n"] % 8 == 0
            if c.family == "bmm":
                assert c.params["batch"] > 1


def test_unaligned_share(sets: dict[str, list]) -> None:
    mm = [c for c in sets["fit"] if c.family in ("matmul", "bmm")]
    share = sum(1 for c in mm if c.params["k"] % 8 or c.params["n"] % 8) / len(mm)
    assert 0.15 <= share <= 0.35, share


def test_every_family_represented(sets: dict[str, list]) -> None:
    counts = Counter(c.family for c in sets["fit"])
    for fam in sampling.SPACE:
        assert counts[fam] >= 10, (fam, counts)
    dtypes = {c.params["dtype"] for c in sets["fit"] if c.family == "matmul"}
    assert {"bf16", "fp16", "tf32", "fp32", "fp8_e4m3", "int8"} <= dtypes
    assert any(c.params["kv_heads"] < c.params["heads"] for c in sets["fit"] if c.family == "decode")
    assert any(c.params["groups"] > 1 for c in sets["fit"] if c.family == "conv2d")
    assert {c.params["layout"] for c in sets["fit"] if c.family == "conv2d"} == {"nhwc", "nchw"}


def test_caps(sets: dict[str, list]) -> None:
    for cs in sets.values():
        for c in cs:
            assert rough_kernel_seconds(c) <= sampling.MAX_KERNEL_S
            assert sampling.footprint_bytes(c) <= sampling.MAX_BYTES
            if c.check:
                assert sampling.reference_bytes(c) <= sampling.CHECK_MAX_BYTES
    checks = sum(c.check for c in sets["fit"])
    assert 3 <= checks <= 40


def test_dry_run_sample() -> None:
    res = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "measure_h200.py"), "--dry-run",
                          "--sample", "fit", "--sample-n", str(N)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    total = re.search(r"^total\s+(\d+)\s+([\d.]+)", res.stdout, re.M)
    assert total and int(total.group(1)) == N
    est = re.search(r"estimated device time: \d+ s for the cases \+ ~\d+ s fixed .* = ~(\d+) s", res.stdout)
    assert est and int(est.group(1)) < 420, est


def test_solkit_rebuilds_every_case(sets: dict[str, list]) -> None:
    import solkit.ops

    for cs in sets.values():
        for c in cs:
            getattr(solkit.ops, c.op)(**c.params)


def test_extra_families_are_drawn_only_when_asked() -> None:
    """SDPA-default cases come from their own stream: the default draw never holds one and is unchanged by them."""
    default = sampling.sample_set("fit", 200, seed=2027)
    assert not any(c.family == "sdpa" for c in default)
    assert "sdpa" not in sampling.SPACE and "sdpa" in sampling.EXTRA_SPACE
    sdpa = sampling.sample_set("fit", 120, seed=2027, families=["sdpa"])
    assert len(sdpa) == 120 and all(c.family == "sdpa" and c.impl == "sdpa_default" for c in sdpa)
    assert all(sampling.check_case(c) == [] for c in sdpa)
    decode = [c for c in sdpa if c.params["seq_q"] == 1]
    assert decode and all(not c.params["causal"] for c in decode)  # one query: no mask
    assert {c.params["dtype"] for c in sdpa} == {"bf16", "fp16", "fp32"}
    # the committed SDPA file is exactly this draw's fit set
    from solkit.calibration import load_measurements

    committed = load_measurements(os.path.join(ROOT, "data", "h200_sdpa_fit_seed2027.json"))
    assert sorted(c.id for c in committed.cases) == sorted(c.id for c in sampling.sample_set("fit", 300, 2027, ["sdpa"]))
