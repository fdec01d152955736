"""The captured-steps report (solkit.calibration.captured): steps rebuilt from their configs, errors by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="captured programs need PyTorch (pip install torch==2.13.0, the CPU build)")
pytest.importorskip("transformers", reason="captured programs need transformers")

from solkit.calibration.captured import CapturedStep, captured_files, captured_steps, captured_summary, captured_workload  # noqa: E402
from solkit.calibration.programs import load_steps  # noqa: E402
from solkit.capture.hf import hf_model  # noqa: E402
from solkit.workload import issued_launches  # noqa: E402

DEV = "h200_captured_steps_dev_seed2044.json"
DATA = Path(__file__).resolve().parents[1] / "data"


def _row(family: str, measured: float, predicted: float, memory: tuple[int, int]) -> CapturedStep:
    return CapturedStep("x", family, "train", measured, predicted, 1.0, None, memory[0], memory[1])


def test_errors_and_summary_by_hand():
    """exp(|log(p / m)|) - 1 per step; per family the median and p90 of those, and the median memory error."""
    rows = [_row("a", 10e-3, 11e-3, (100, 110)), _row("a", 10e-3, 8e-3, (100, 100)), _row("b", 4e-3, 4e-3, (50, 40))]
    assert rows[0].error == pytest.approx(0.1) and rows[1].error == pytest.approx(0.25)  # 11/10 - 1; 10/8 - 1
    assert rows[0].memory_error == pytest.approx(0.1) and rows[2].memory_error == pytest.approx(0.2)  # 10/100; 10/50
    s = captured_summary(rows)
    assert s["a"] == (2, pytest.approx(0.175), pytest.approx(0.1 + 0.9 * 0.15), pytest.approx(0.05))  # p90 0.235
    assert s["all"][0] == 3 and s["all"][1] == pytest.approx(0.1)  # the median of 0.1, 0.25, 0.0


def test_the_manifest_names_the_captured_files():
    """The seed-2044 draw shaped capture and is fitted on (the captured host parameters): never a frozen test."""
    assert DEV in captured_files("fit") and DEV not in captured_files("test")


def test_a_case_is_rebuilt_from_its_own_config():
    """A measured step's program is its config's captured program at its shape: the same launches as hf_model's."""
    steps = load_steps(DEV)
    case = next(c for c in steps.cases if c.id == "d2044-mistral-prefill-s1063-b3")
    direct = hf_model(case.hf_config, case.family).prefill(batch=3, seq=1063)
    assert issued_launches(captured_workload(case)) == issued_launches(direct)
    raw = next(c for c in json.loads((DATA / DEV).read_text())["cases"] if c["id"] == case.id)
    assert raw["params"] == hf_model(case.hf_config).params  # transformers' count on the GPU = the meta model's


def test_captured_steps_predict_and_hold_memory():
    """Three steps of three modes: each predicted (finite, positive), its memory peak within 10% of the measured one."""
    steps = load_steps(DEV)
    ids = ("d2044-mistral-prefill-s1063-b3", "d2044-qwen3-train-s181-b1", "d2044-bert-large-infer_amp-s132-b6")
    rows = captured_steps(steps, only=ids)
    assert sorted(r.id for r in rows) == sorted(ids)
    for r in rows:
        assert math.isfinite(r.predicted) and r.predicted > 0 and r.memory_captured > 0
        assert r.memory_error is not None and r.memory_error < 0.10  # measured: 2.5%, 5.3%, 4.5% at commit time


def test_the_docs_quote_the_newest_frozen_tests_report():
    """README's and accuracy.md's captured-programs figures are the generated report's (data/h200_captured.md) row
    for the newest frozen test: per family and all, median / p90 and the memory median."""
    if not captured_files("test"):
        pytest.skip("no frozen captured-steps test: seed 2050 is spent and fitted on, seed 2051 not yet measured")
    newest = captured_files("test")[-1]
    report = (DATA / "h200_captured.md").read_text().split(f"## {newest}: test", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip(" *"): [c.strip() for c in line.split("|")[3:7]]
            for line in report.splitlines() if line.startswith("| **")}
    n, median, p90, memory = rows["all"]
    seed = newest.split("seed")[1].split(".")[0]
    readme = (DATA.parent / "README.md").read_text()
    assert f"({n} cases, seed {seed}) | {median} / {p90} (peak memory {memory} median) |" in readme
    accuracy = (DATA.parent / "docs" / "accuracy.md").read_text().split(f"frozen test, seed {seed} |", 1)[1]
    assert f"| **all** | {n} | **{median} / {p90}** | **{memory}** |" in accuracy.split("\n\n", 1)[0]
    names = {"bert-large": "BERT-large", "gemma": "Gemma-2B", "gpt2-medium": "GPT-2 medium", "mistral": "Mistral (4 layers)",
             "mixtral": "Mixtral-shaped MoE", "qwen2": "Qwen2.5-0.5B", "qwen3": "Qwen3-0.6B"}
    for family, name in names.items():
        n, median, p90, memory = rows[family]
        assert f"| {name} | {n} | {median} / {p90} | {memory} |" in accuracy.split("\n\n", 1)[0], family


def test_accuracy_md_quotes_the_reports_repeat_figures():
    """docs/accuracy.md's "Two timings of one program" figures are the generated report's paragraph for the repeat
    (data/h200_captured.md): the same fourteen percentages in the same order (step time median, p90; host time; host
    time over each timing's probe; the midway time against each; the same at the probes; the model against the first
    timing; against the second) and the 55 CPU-bound steps; the step-time and midway figures recomputed here from the
    two raw files (median and linear p90 of exp(|log(a / b)|) - 1 and of exp(|log(a / b)| / 2) - 1)."""
    import re

    import numpy as np

    report = (DATA / "h200_captured.md").read_text()
    name = captured_files("repeat")[0]
    section = report.split(f"## {name}: repeat", 1)[1].split("\n## ", 1)[0]
    paragraph = next(p for p in section.split("\n\n") if p.startswith("Two timings of the same"))
    page = " ".join((DATA.parent / "docs" / "accuracy.md").read_text().split())
    docs = page.split("**Two timings of one program.**", 1)[1].split("\n\n", 1)[0]
    figures = re.findall(r"\d+\.\d%", paragraph)
    assert len(figures) == 14 and re.findall(r"\d+\.\d%", docs)[:14] == figures
    cpu = re.search(r"the (\d+) CPU-bound in both", paragraph)
    assert cpu is not None and f"the {cpu.group(1)} steps CPU-bound in both" in docs
    raw = [{c["id"]: c["wall_ms"] for c in json.loads((DATA / n).read_text())["cases"] if c["status"] == "ok"}
           for n in ("h200_captured_steps_test_seed2050.json", name)]
    logs = np.array([abs(math.log(raw[0][i] / raw[1][i])) for i in raw[0] if i in raw[1]])
    apart, midway = np.expm1(logs), np.expm1(logs / 2)
    assert figures[:2] == [f"{np.median(apart):.1%}", f"{np.percentile(apart, 90):.1%}"]
    assert figures[6:8] == [f"{np.median(midway):.1%}", f"{np.percentile(midway, 90):.1%}"]
    readme = " ".join((DATA.parent / "README.md").read_text().split())
    assert f"differ by {figures[0]} / {figures[1]} in step time" in readme


def test_the_probe_reading_figures_docs_quote_are_the_reports():
    """docs/accuracy.md's and the manifest's seed-2060 figures (the reading before -> within, median and p90) and the
    seed-2052 figures at the probe before the block are the generated report's (data/h200_captured.md): its "all" row
    of each file, at the chosen reading, and its line at the probe before each reported block."""
    import re

    from solkit.calibration.manifest import manifest

    report = (DATA / "h200_captured.md").read_text()

    def figures(name: str) -> tuple[str, str, str, str]:
        section = report.split(f"## {name}:", 1)[1].split("\n## ", 1)[0]
        row = next(line for line in section.splitlines() if line.startswith("| **all** |"))
        median, p90 = (c.strip() for c in row.split("|")[4:6])
        before = re.search(r"median (\d+\.\d%), p90 (\d+\.\d%)\.", section)
        assert before is not None, name
        return median, p90, before.group(1), before.group(2)

    within, within_p90, before, before_p90 = figures("h200_captured_steps_validation_seed2060.json")
    page = " ".join((DATA.parent / "docs" / "accuracy.md").read_text().split())
    assert f"read `before` {before} / {before_p90} (median / p90), `within` {within} / {within_p90}," in page
    note = " ".join(manifest().entry("h200_captured_steps_validation_seed2060.json").note.split())
    assert f"(p90 {before_p90} -> {within_p90}, median {before} -> {within})" in note
    _, _, before, before_p90 = figures("h200_captured_steps_test_seed2052.json")
    assert f"the same steps read {before} / {before_p90} (`data/h200_captured.md` gives both)" in page
