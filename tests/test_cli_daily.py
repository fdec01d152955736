"""The command line of a kernel engineer's daily loop: --measured, per-op help, boolean flags, sweep, completion."""

from __future__ import annotations

import csv
import json

import pytest

from solkit import ops
from solkit._cli_measured import parse_seconds
from solkit.cli import main
from solkit.errors import CLIError

# H200 SXM datasheet (hardware_specs/h200-sxm.yaml): 989.4 TFLOP/s dense bf16, 4.8 TB/s
BF16_PEAK, BANDWIDTH = 989.4e12, 4.8e12


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("text, seconds", [("180us", 180e-6), ("0.2ms", 0.2e-3), ("1.5e-4s", 1.5e-4), ("950ns", 950e-9),
                                           ("180 us", 180e-6), ("180us,200us,190us", 190e-6), ("1ms,3ms", 2e-3)])
def test_times_take_units_and_lists_their_median(text, seconds):
    """TIME with a unit; a comma list is several runs: their median (of 180, 190, 200 us: 190 us)."""
    assert parse_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["1.6", "180 sec", "-3us", "0us", "", "fast"])
def test_times_without_a_unit_or_positive_value_are_refused(text):
    """A bare number is ambiguous, a non-positive time impossible: a CLIError naming --measured."""
    with pytest.raises(CLIError, match="--measured"):
        parse_seconds(text)


def test_measured_matmul_by_hand(capsys):
    """The issue's case: 8192^3 bf16 measured at 1.6 ms is 0.694 of T_SOL on the H200's dense peak.

    T_SOL = 2 x 8192^3 / 989.4e12 = 1,099,511,627,776 / 989.4e12 = 1.111291e-3 s; 1.111291e-3 / 1.6e-3 = 0.69456;
    achieved 1.0995e12 / 1.6e-3 = 687.2 TFLOP/s (MFU 69.46%); bytes 3 x 8192^2 x 2 = 402,653,184 / 1.6e-3 = 0.2517 TB/s.
    """
    code, out, err = run(capsys, "op", "matmul", "--m", "8192", "--n", "8192", "--k", "8192", "--measured", "1.6ms",
                         "--json")
    assert code == 0 and err == ""
    m = json.loads(out)["measured"]
    t_sol = 2 * 8192**3 / BF16_PEAK
    assert m["sol_fraction"] == pytest.approx(t_sol / 1.6e-3) and m["sol_fraction"] == pytest.approx(0.69456, abs=1e-5)
    assert m["achieved_flop_per_s"] == pytest.approx(2 * 8192**3 / 1.6e-3) and m["measured_s"] == pytest.approx(1.6e-3)
    assert m["mfu"] == pytest.approx(0.69456, abs=1e-5) and m["hfu"] == pytest.approx(m["mfu"])
    assert m["achieved_bytes_per_s"] == pytest.approx(3 * 8192**2 * 2 / 1.6e-3)
    assert m["headroom_to_sol"] == pytest.approx(1.6e-3 / t_sol)  # 1.4398
    assert m["verdict"].startswith("compute-bound at 69.5% of T_SOL")
    code, out, _ = run(capsys, "op", "matmul", "--m", "8192", "--n", "8192", "--k", "8192", "--measured", "1.6ms")
    assert "SOL fraction 0.695" in out and "687.2 TFLOP/s of 989.4" in out and "verdict: compute-bound" in out


def test_measured_below_t_sol_is_impossible_exit_1(capsys):
    """LayerNorm 8192 x 4096 bf16: (2 x 8192 x 4096 + 2 x 4096) x 2 B = 134,234,112 B / 4.8e12 = 27.97 us; 10 us is impossible."""
    code, out, err = run(capsys, "op", "layernorm", "--tokens", "8192", "--d-model", "4096", "--measured", "10us")
    assert code == 1
    assert "faster than the speed of light" in out and err.startswith("warning: measured_seconds = 10 us is below T_SOL")
    assert "27.97 us" in err


def test_a_launch_bound_kernel_gets_that_verdict(capsys):
    """A 1-element add measured at 10 us: the predictor's limiter is launch/latency, and the verdict says so."""
    code, out, _ = run(capsys, "op", "add", "--elements", "1", "--measured", "10us", "--json")
    assert code == 0 and json.loads(out)["measured"]["verdict"].split("; ")[1].startswith("launch-bound")


def test_bad_measured_is_one_line_exit_2(capsys):
    """A time without a unit: one line on stderr, exit 2, nothing on stdout."""
    code, out, err = run(capsys, "op", "matmul", "--m", "64", "--n", "64", "--k", "64", "--measured", "1.6")
    assert code == 2 and out == "" and err.count("\n") == 1 and "add a unit" in err


def test_compare_measured_scales_the_variant_by_the_baseline_gap(capsys):
    """The variant is expected as far from its prediction as the measured baseline is from its own."""
    code, out, _ = run(capsys, "compare", "layernorm_residual", "--tokens", "8192", "--d-model", "4096",
                       "--baseline", "fused=false", "--variant", "fused=true", "--measured", "120us", "--json")
    assert code == 0
    m = json.loads(out)["measured"][0]
    import solkit as sk

    unfused = sk.predict(ops.layernorm_residual(8192, 4096, fused=False), "h200").seconds
    fused = sk.predict(ops.layernorm_residual(8192, 4096, fused=True), "h200").seconds
    # expected variant time = fused predicted x (120 us / unfused predicted): the speedup is unfused / fused predicted
    assert m["expected_speedup"] == pytest.approx(unfused / fused)
    # at most: 120 us over the fused T_SOL, (4 x 8192 x 4096 + 2 x 4096) x 2 B / 4.8e12 = 55.93 us
    assert m["sol_speedup"] == pytest.approx(120e-6 / ((4 * 8192 * 4096 + 2 * 4096) * 2 / 4.8e12))


def test_booleans_are_flags_and_values(capsys):
    """--causal, --causal true, --no-causal and --causal false; causal 128 queries: 128 x 129 / 2 = 8,256 pairs."""
    base = ("op", "attention", "--batch", "1", "--heads", "8", "--seq-q", "128", "--json")
    flops = {}
    for flags in (("--causal",), ("--causal", "true"), ("--no-causal",), ("--causal", "false"), ("--causal=yes",)):
        code, out, _ = run(capsys, *base, *flags)
        assert code == 0, flags
        flops[flags] = json.loads(out)["model_flops"]
    causal = 4 * 1 * 8 * 128 * (128 * 129 / 2)  # 4 b h d pairs = 33,816,576
    full = 4 * 1 * 8 * 128 * 128 * 128  # 67,108,864
    assert flops[("--causal",)] == flops[("--causal", "true")] == flops[("--causal=yes",)] == pytest.approx(causal)
    assert flops[("--no-causal",)] == flops[("--causal", "false")] == pytest.approx(full)
    code, _, err = run(capsys, *base, "--no-heads")
    assert code == 2 and "heads is not a boolean" in err


@pytest.mark.parametrize("name", ops.OPERATORS)
def test_op_help_lists_every_registered_parameter(capsys, name):
    """`solkit op OP --help` is generated from the registry: every parameter, its meaning and default."""
    code, out, _ = run(capsys, "op", name, "--help")
    assert code == 0 and out.startswith(f"usage: solkit op {name}")
    for p in ops.REGISTRY[name].params:
        assert f"--{p.name.replace('_', '-')}" in out and p.help.splitlines()[0][:40] in out.replace("\n      ", " ")


def test_ops_lists_every_operator(capsys):
    """`solkit ops`: one line per registered operator."""
    code, out, _ = run(capsys, "ops")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines()[2:] if line.strip() and not line.startswith("`")]
    assert listed == list(ops.OPERATORS)


def test_sweep_by_hand_with_csv(capsys, tmp_path):
    """matmul m = 1:4 (both ends), n = k = 64, bf16: memory-bound; at m = 4 bytes (4x64 + 64x64 + 4x64) x 2 = 9,216 B."""
    path = tmp_path / "m.csv"
    code, out, _ = run(capsys, "sweep", "matmul", "--m", "1:4", "--n", "64", "--k", "64", "--csv", str(path))
    assert code == 0 and "4 points per GPU" in out
    rows = list(csv.DictReader(path.open()))
    assert [float(r["m"]) for r in rows] == [1.0, 2.0, 3.0, 4.0]
    assert float(rows[3]["t_sol_s"]) == pytest.approx(9_216 / BANDWIDTH)  # 1.92e-9 s
    assert all(r["bound"] == "memory" and r["gpu"] == "h200-sxm" for r in rows)
    assert all(float(r["predicted_s"]) >= float(r["t_sol_s"]) for r in rows)


def test_sweep_two_parameters_and_gpus(capsys, tmp_path):
    """A grid of m (3 values, a:b:step) by k (a list of 2) on two GPUs: 6 points each, 12 CSV rows."""
    path = tmp_path / "grid.csv"
    code, out, _ = run(capsys, "sweep", "matmul", "--m", "64:192:64", "--n", "128", "--k", "64,128", "--gpu", "h200",
                       "--gpu", "a100", "--csv", str(path))
    assert code == 0 and "6 points per GPU" in out
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 12 and {r["gpu"] for r in rows} == {"h200-sxm", "a100-sxm4-80gb"}
    assert sorted({float(r["m"]) for r in rows}) == [64.0, 128.0, 192.0]


@pytest.mark.parametrize("argv, words", [
    (("sweep", "matmul", "--m", "8:1", "--n", "4", "--k", "4"), "a <= b"),
    (("sweep", "matmul", "--m", "1:4", "--n", "1:4", "--k", "1:4"), "one or two swept parameters"),
    (("sweep", "matmul", "--m", "64", "--n", "4", "--k", "4"), "needs a range"),
    (("sweep", "matmul", "--m", "1:2000000", "--n", "4", "--k", "4"), "more than 1,000,000"),
    (("sweep", "matmul", "--m", "1:x", "--n", "4", "--k", "4"), "integers"),
])
def test_sweep_errors_are_one_line(capsys, argv, words):
    """Bad ranges: exit 2 with one line naming the problem."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and words in err and err.count("\n") == 1


def test_sweep_plot_draws_both_curves_per_gpu(tmp_path, capsys):
    """--plot: T_SOL dashed and predicted solid for each GPU (solkit.plot.sweep, which also takes sk.sweep's frame)."""
    pytest.importorskip("matplotlib")
    import solkit as sk

    out_file = tmp_path / "m.png"
    code, out, _ = run(capsys, "sweep", "matmul", "--m", "1:256", "--n", "512", "--k", "512", "--gpu", "h200", "--gpu",
                       "a100", "--plot", str(out_file))
    assert code == 0 and out_file.exists() and out_file.stat().st_size > 0
    pytest.importorskip("pandas")
    fig = sk.plot.sweep(sk.sweep(ops.matmul, "h200", m=list(range(1, 65)), n=512, k=512))
    gids = {line.get_gid() for line in fig.axes[0].lines}
    assert gids == {"t_sol:all", "predicted:all"}


def test_completion_names_commands_ops_and_gpus(capsys):
    """A bash script completing the commands, every registered op and every GPU name and alias."""
    code, out, _ = run(capsys, "completion", "bash")
    assert code == 0 and "complete -o default -F _solkit solkit" in out
    assert all(name in out for name in ops.OPERATORS) and "h200-sxm" in out and " h200 " in out and "sweep" in out
    code, out, _ = run(capsys, "completion", "zsh")
    assert code == 0 and out.startswith("autoload -U +X bashcompinit")
