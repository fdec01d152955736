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
    (max(8, 313 // 32) = 9, max(4, 24 // 8) = 4), and generate makes exactly those 4 tokens."""
    doc = _run(tmp_path, "--only", "gpt2-hf-eager-b1-p313", "--fresh-process", "hf-eager")
    assert doc["fresh_process"] == ["hf-eager"] and doc["only"] == "gpt2-hf-eager-b1-p313"
    timed = {k: c for k, c in doc["cases"].items() if c["status"] != "skipped (--only)"}
    assert list(timed) == ["d3006-gpt2-hf-eager-b1-p313-o24"] and len(doc["cases"]) == 24
    case = timed["d3006-gpt2-hf-eager-b1-p313-o24"]
    assert case["status"] == "ok" and case["process"] == "fresh"
    assert (case["batch"], case["prompt"], case["output"], case["tokens_made"]) == (1, 9, 4, 4)
    assert case["tpot_s"] > 0 and case["ttft_s"] > 0


def test_fresh_process_refuses_an_unknown_engine(tmp_path):
    """An engine generate.py does not time is refused by name (argparse's error, exit 2)."""
    run = subprocess.run([sys.executable, str(SCRIPT), "--draw", "3006", "--out", str(tmp_path), "--fresh-process",
                          "hf-statc"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "--fresh-process takes engines of hf-eager, hf-static, got 'hf-statc'" in run.stderr
