"""benchmarks/serving/generate.py on the CPU with tiny configs (--small): --only and --fresh-process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="generate.py times Hugging Face generate (pip install torch==2.13.0, the CPU build)")
pytest.importorskip("transformers", reason="generate.py needs transformers")

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "serving" / "generate.py"


def _run(tmp_path: Path, *extra: str) -> dict:
    subprocess.run([sys.executable, str(SCRIPT), "--draw", "3006", "--count", "24", "--static-cases", "8", "--small",
                    "--out", str(tmp_path), *extra], check=True, capture_output=True, text=True, timeout=300)
    return json.loads((tmp_path / "serving.json").read_text())


def test_only_and_a_fresh_process(tmp_path):
    """--only times the one matching case (the other 23 recorded as skipped); --fresh-process hf-eager times it in a
    child process, whose record comes back marked so: --small cuts GPT-2's batch 1 x 313 + 24 tokens to 1 x 9 + 4
    (max(8, 313 // 32) = 9, max(4, 24 // 8) = 4), generate makes exactly those 4 tokens, and TPOT is the time past the
    first token over the 3 after it."""
    doc = _run(tmp_path, "--only", "gpt2-hf-eager-b1-p313", "--fresh-process", "hf-eager")
    assert doc["fresh_process"] == ["hf-eager"] and doc["only"] == "gpt2-hf-eager-b1-p313"
    timed = {k: c for k, c in doc["cases"].items() if c["status"] != "skipped (--only)"}
    assert list(timed) == ["d3006-gpt2-hf-eager-b1-p313-o24"] and len(doc["cases"]) == 24
    case = timed["d3006-gpt2-hf-eager-b1-p313-o24"]
    assert case["status"] == "ok" and case["process"] == "fresh"
    assert (case["batch"], case["prompt"], case["output"], case["tokens_made"]) == (1, 9, 4, 4)
    # TPOT is (time of all 4 tokens - time of the first) / 3, each the median of its timed calls; it is not asserted
    # positive: on a loaded CPU the 1-token calls' median can exceed the 4-token calls' (this test once failed so)
    assert case["ttft_s"] > 0 and case["t_n_s"] > 0
    assert case["tpot_s"] == (case["t_n_s"] - case["ttft_s"]) / 3


def test_fresh_process_refuses_an_unknown_engine(tmp_path):
    """An engine generate.py does not time is refused by name (argparse's error, exit 2)."""
    run = subprocess.run([sys.executable, str(SCRIPT), "--draw", "3006", "--out", str(tmp_path), "--fresh-process",
                          "hf-statc"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "--fresh-process takes engines of hf-eager, hf-static, got 'hf-statc'" in run.stderr


def _module(name: str, path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_timed_probes_are_read_just_before_each_timed_block():
    """measure() reads its probe twice: after the warmup (an eager case's 3 untimed calls: N, N, then 1 token) and
    before the 3 timed TTFT calls, then after those and before the 3 timed calls of all N tokens; a stub probe that
    returns how many generate calls ran before it gives 3 and then 3 + 3 = 6 (recorded in us: 3e-6 s -> 3.0)."""
    import torch

    gen = _module("generate_for_test", SCRIPT)
    model, _ = gen.build(torch, "gpt2", "cpu", True)
    calls = []
    real = model.generate
    model.generate = lambda *a, **k: calls.append(k["max_new_tokens"]) or real(*a, **k)
    case = {"batch": 1, "prompt": 313, "output": 24, "engine": "hf-eager"}
    rec = gen.measure(torch, model, case, "cpu", 3, True, probe=lambda: len(calls) * 1e-6)
    assert calls == [4, 4, 1] + [1] * 3 + [4] * 3  # warmup N, N, 1; 3 timed TTFT; 3 timed N (--small: N = 4)
    assert (rec["ttft_probe_us"], rec["t_n_probe_us"]) == (pytest.approx(3.0), pytest.approx(6.0))
    assert gen.measure(torch, model, case, "cpu", 1, True)["ttft_probe_us"] is None  # no probe given: none recorded


def test_evaluate_reads_ttft_and_tpot_at_their_own_probes():
    """evaluate.py --timed-probe predicts TTFT at ttft_probe_us and TPOT at t_n_probe_us: a case whose two probes
    are 6 and 12 us reads TTFT as the same case wholly at 6 us does, and TPOT as at 12 us; a case without them is
    refused by name; two readings at once are refused."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        ev = _module("evaluate_for_test", SCRIPT.parent / "evaluate.py")
    finally:
        sys.path.remove(str(SCRIPT.parent))
    doc = json.loads((Path(__file__).resolve().parents[1] / "data" / "h200_serving_test_seed3007.json").read_text())
    one = {k: c for k, c in doc["cases"].items() if k == "d3007-llama-hf-eager-b1-p385-o77"}
    case = one["d3007-llama-hf-eager-b1-p385-o77"]
    at = {probe: ev.predictions({"cases": {"x": {**case, "case_probe_us": probe}}}, False, True)[0] for probe in (6.0, 12.0)}
    timed = ev.predictions({"cases": {"x": {**case, "ttft_probe_us": 6.0, "t_n_probe_us": 12.0}}}, False,
                           timed_probe=True)[0]
    assert timed["ttft_pred"] == at[6.0]["ttft_pred"] and timed["tpot_pred"] == at[12.0]["tpot_pred"]
    assert at[6.0]["tpot_pred"] < at[12.0]["tpot_pred"]  # the probe moves the eager TPOT: the test can tell them apart
    with pytest.raises(SystemExit, match="x: --timed-probe reads ttft_probe_us and t_n_probe_us"):
        ev.predictions({"cases": {"x": case}}, False, timed_probe=True)
    with pytest.raises(SystemExit):
        ev.main([str(Path(__file__).resolve().parents[1] / "data" / "h200_serving_test_seed3007.json"), "--case-probe",
                 "--timed-probe"])
