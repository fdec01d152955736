"""``solkit tune``: the ranked table, --configs files, --json, and one-line errors."""

from __future__ import annotations

import json

import pytest

from solkit import cli, tune


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_matmul_table(capsys):
    """The usual space ranked: a header naming the shape, --top lines fastest first, then the configs that cannot
    launch, each with its reason."""
    code, out, err = run(capsys, "tune", "matmul", "--m", "4096", "--n", "4096", "--k", "4096", "--top", "3")
    lines = out.splitlines()
    assert code == 0 and err == ""
    assert lines[0] == "triton_matmul on h200-sxm (bf16), m=4096, n=4096, k=4096: 336 configs, 302 can launch"
    assert [line.split(".")[0].strip() for line in lines[1:4]] == ["1", "2", "3"]
    assert len([line for line in lines if "cannot launch:" in line]) == 3  # --top of the 336 - 302 = 34
    assert lines[-1] == "   -  and 31 more that cannot launch (to_frame() or --json lists them)"
    best = tune.rank("triton_matmul", tune.triton_matmul_space(), m=4096, n=4096, k=4096)
    assert " ".join(f"{k}={v}" for k, v in best.best.items()) in lines[1]


def test_configs_file_and_json(capsys, tmp_path):
    """--configs reads a JSON list; --json is one object with the ranked configs (predicted_s) and the reasons."""
    path = tmp_path / "configs.json"
    path.write_text(json.dumps([{"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3},
                                {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 8, "num_stages": 3}]))
    code, out, _ = run(capsys, "tune", "matmul", "--m", "2048", "--n", "2048", "--k", "2048", "--configs", str(path),
                       "--json")
    data = json.loads(out)
    assert code == 0 and data["shape"] == {"m": 2048, "n": 2048, "k": 2048} and data["n_configs"] == 2
    assert [r["BLOCK_M"] for r in data["ranked"]] == [64] and data["ranked"][0]["predicted_s"] > 0
    assert "needs 294,912 B of shared memory" in data["cannot_launch"][0]["reason"]


def test_row_and_attention_kernels(capsys):
    """layernorm takes --rows/--cols, attention --batch/--heads/--seq-q and --causal."""
    code, out, _ = run(capsys, "tune", "layernorm", "--rows", "8192", "--cols", "4096", "--top", "1")
    assert code == 0 and out.startswith("triton_layernorm on h200-sxm (bf16), rows=8192, cols=4096: 27 configs")
    code, out, _ = run(capsys, "tune", "attention", "--batch", "2", "--heads", "16", "--seq-q", "2048", "--causal",
                       "--top", "1")
    assert code == 0 and "seq_q=2048, seq_kv=2048, head_dim=128, causal=True: 48 configs" in out.splitlines()[0]


@pytest.mark.parametrize("argv, message", [
    (["tune", "matmul", "--m", "64", "--n", "64"], "missing a required argument: 'k'"),
    (["tune", "matmul", "--m", "64", "--n", "64", "--k", "64", "--rows", "3"], "--rows is not a shape of matmul"),
    (["tune", "matmul", "--m", "-1", "--n", "64", "--k", "64"], "m must be a positive integer, got -1"),
    (["tune", "matmul", "--m", "64", "--n", "64", "--k", "64", "--top", "0"], "--top must be a positive integer"),
    (["tune", "layernorm", "--rows", "64", "--cols", "64", "--causal"], "--causal is not an option of layernorm"),
    (["tune", "matmul", "--m", "64", "--n", "64", "--k", "64", "--configs", "nowhere.json"], "cannot read"),
])
def test_errors_are_one_line(capsys, argv, message):
    """Bad input: exit 2, one 'solkit: error:' line naming the problem, nothing on stdout."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.startswith("solkit: error:") and message in err
    assert len(err.strip().splitlines()) == 1


def test_configs_file_must_hold_a_list(capsys, tmp_path):
    """A configs file of another shape is refused with what it holds."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"BLOCK_M": 64}))
    code, _, err = run(capsys, "tune", "matmul", "--m", "64", "--n", "64", "--k", "64", "--configs", str(path))
    assert code == 2 and "must hold a list of configs" in err
