"""The solkit command: every subcommand, JSON output, one-line errors with exit code 2."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from solkit.cli import main, parse_value


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_default_is_the_standard_table(capsys):
    """No arguments: the standard operators on H200 and A100."""
    code, out, _ = run(capsys)
    assert code == 0
    assert "gemm 8192^3" in out and "h200-sxm" in out and "a100-sxm4-80gb" in out


def test_gpus_and_gpu(capsys):
    """gpus lists all 11 specs; gpu shows figures with sources and the measured section."""
    code, out, _ = run(capsys, "gpus")
    assert code == 0 and "mi300x" in out and "989.4" in out
    code, out, _ = run(capsys, "gpu", "h200")
    assert code == 0
    assert "h200-page" in out and "https://www.nvidia.com/en-us/data-center/h200/" in out
    assert "measured 2026-11-30" in out


def test_op_json_has_t_sol_in_seconds(capsys):
    """--json: one object, t_sol_s at the top level: 2*8192^3 / 989.4e12 = 1.1113e-3 s; bytes 3*8192^2*2 = 402,653,184."""
    code, out, _ = run(capsys, "op", "matmul", "--m", "8192", "--n", "8192", "--k", "8192", "--gpu", "h200", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["t_sol_s"] == pytest.approx(2 * 8192**3 / 989.4e12)
    assert data["bound"] == "compute"
    assert data["kernels"][0]["limiter"] in ("compute", "wave quantization")
    assert data["predicted_s"] > data["t_sol_s"]
    assert data["bytes"] == 402_653_184 and type(data["bytes"]) is int


def test_op_table_with_dashes_and_pairs(capsys):
    """Parameters take dashes; a conv kernel takes 'r,s'; dtype is an option."""
    argv = ["op", "conv2d", "--batch", "1", "--in-channels", "128", "--height", "17", "--width", "17",
            "--out-channels", "128", "--kernel", "1,7", "--padding", "0,3", "--dtype", "fp16"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "conv (implicit gemm)" in out and "T_SOL" in out
    code, out, _ = run(capsys, *argv, "--json")
    data = json.loads(out)
    assert data["params"]["kernel"] == [1, 7]
    assert data["model_flops"] == 2 * 128 * 17 * 17 * 128 * 7  # 66,289,664: a 1x7 kernel, output 17x17


def test_compare_variants_and_gpus(capsys):
    """Fused vs unfused LN+residual: 20.0% of the bytes, T_SOL ratio 1.25 (335,560,704 / 268,451,840)."""
    code, out, _ = run(capsys, "compare", "layernorm_residual", "--tokens", "8192", "--d-model", "4096",
                       "--baseline", "fused=false", "--variant", "fused=true", "--gpu", "a100", "--gpu", "h200", "--json")
    assert code == 0
    data = json.loads(out)
    assert [c["gpu"] for c in data["comparisons"]] == ["a100-sxm4-80gb", "h200-sxm"]
    for c in data["comparisons"]:
        assert c["bytes_saved_fraction"] == pytest.approx(67_108_864 / 335_560_704)  # 0.19999
        assert c["speedup"] == pytest.approx(335_560_704 / 268_451_840)
    code, out, _ = run(capsys, "compare", "matmul", "--m", "8192", "--n", "8192", "--k", "8192", "--gpu", "a100",
                       "--gpu", "h200", "--json")
    a100, h200 = json.loads(out)["gpus"]
    assert a100["t_sol"] / h200["t_sol"] == pytest.approx(989.4 / 312)  # 3.171: both compute-bound


def test_mfu(capsys):
    """3.2e18 FLOP in 3600 s on 8 H100: 3.2e18 / (989.4e12 * 3600 * 8) = 11.23%."""
    code, out, _ = run(capsys, "mfu", "--flops", "3.2e18", "--seconds", "3600", "--gpu", "h100", "--n-gpus", "8", "--json")
    assert code == 0
    assert json.loads(out)["mfu"] == pytest.approx(3.2e18 / (989.4e12 * 3600 * 8))


def test_plot(capsys, tmp_path):
    """plot writes a PNG of the standard operators (or of one op)."""
    pytest.importorskip("matplotlib")
    out_file = tmp_path / "roof.png"
    code, out, err = run(capsys, "plot", "--gpu", "h200", "--out", str(out_file))
    assert code == 0, err
    assert out_file.stat().st_size > 10_000
    one = tmp_path / "one.png"
    code, _, err = run(capsys, "plot", "--gpu", "a100", "--op", "attention", "--batch", "1", "--heads", "8",
                       "--seq-q", "4096", "--out", str(one))
    assert code == 0, err
    assert one.stat().st_size > 10_000


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["op", "nope"], "op must be one of"),
        (["op", "matmul", "--m", "4"], "matmul needs --n, --k (--n: columns of B and C, a positive integer; --k:"),
        (["op", "matmul", "--m", "0", "--n", "4", "--k", "4"], "m must be a positive integer, got 0"),
        (["op", "matmul", "--m", "4", "--n", "4", "--k", "4", "--q", "3"], "matmul has no parameter 'q'"),
        (["op", "attention", "--batch", "1", "--heads", "8", "--seq-q", "16", "--impl", "xformers"], "impl must be one of"),
        (["gpu", "h2000"], "is not a known GPU"),
        (["mfu", "--flops", "1e12", "--seconds", "0", "--gpu", "h200"], "seconds must be a positive finite number"),
        (["mfu", "--flops", "1e12", "--seconds", "1", "--gpu", "h200", "--n-gpus", "0"], "n_gpus must be a positive integer"),
        (["frob"], "invalid choice"),
        (["compare", "matmul", "--m", "4", "--n", "4", "--k", "4"], "compare needs --baseline/--variant"),
    ],
)
def test_errors_are_one_line_exit_2(capsys, argv, expected):
    """Each mistake: exit code 2, one line on stderr naming the problem, nothing on stdout."""
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert expected in err
    assert err.count("\n") == 1 and err.startswith("solkit: error: ")
    assert out == ""


def test_module_and_console_script():
    """python -m solkit works and never prints a traceback on an error."""
    proc = subprocess.run([sys.executable, "-m", "solkit", "op", "matmul", "--m", "-3", "--n", "1", "--k", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "m must be a positive integer, got -3" in proc.stderr


@pytest.mark.parametrize("text, value", [("8", 8), ("2.5", 2.5), ("true", True), ("False", False), ("none", None),
                                         ("3,3", (3, 3)), ("bf16", "bf16")])
def test_parse_value(text, value):
    """Command-line values become ints, floats, bools, None, pairs or strings."""
    assert parse_value(text) == value


def test_impossible_mfu_prints_the_result_warns_and_exits_1(capsys):
    """1e15 FLOP in 1 s on one H200 is MFU 1e15 / 989.4e12 = 1.0107 > 1: printed, one warning line, exit 1."""
    code, out, err = run(capsys, "mfu", "--flops", "1e15", "--seconds", "1", "--gpu", "h200")
    assert code == 1
    assert out.startswith("MFU 101.07%")
    assert err.startswith("warning: mfu = 1.011 is above 1") and err.count("\n") == 1
    code, out, err = run(capsys, "mfu", "--flops", "989.4e12", "--seconds", "1", "--gpu", "h200")
    assert (code, err) == (0, "") and out.startswith("MFU 100.00%")  # exactly the peak is possible


def test_plot_out_reports_the_exact_file(capsys, tmp_path):
    """--out without a suffix writes NAME.png and says so; a folder or an unknown suffix is one error line, exit 2."""
    pytest.importorskip("matplotlib")
    code, out, err = run(capsys, "plot", "--gpu", "h200", "--out", str(tmp_path / "roof"))
    assert (code, err) == (0, "")
    assert out == f"wrote {tmp_path / 'roof.png'}\n" and (tmp_path / "roof.png").stat().st_size > 10_000
    assert not (tmp_path / "roof").exists()
    for target, says in ((tmp_path, "is a folder"), (tmp_path / "r.xyz", "allowed extensions: .avif, .eps")):
        code, out, err = run(capsys, "plot", "--gpu", "h200", "--out", str(target))
        assert code == 2 and out == "" and err.startswith("solkit: error: --out: path ") and says in err
        assert err.count("\n") == 1


def test_repeated_and_empty_parameter_names(capsys):
    """--m twice and --=5 are mistakes, not silently the last value."""
    for argv, says in ((["--m", "8", "--m", "16"], "--m is given twice"), (["--m", "8", "--=5"], "got '--=5'")):
        code, out, err = run(capsys, "op", "matmul", "--n", "8", "--k", "8", *argv)
        assert code == 2 and says in err and out == ""


def test_help_returns_0(capsys):
    """--help prints the usage and returns 0 from main() (no SystemExit leaks to a caller)."""
    code, out, _ = run(capsys, "op", "--help")
    assert code == 0 and out.startswith("usage: solkit op")


def _solkit(*argv: str, python_flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *python_flags, "-m", "solkit", *argv], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("argv, says", [
    (["op", "matmul", "--m", "1e300", "--n", "1e300", "--k", "8"], "matmul: m=1e+300, n=1e+300, k=8, batch=1 is too large"),
    (["op", "matmul", "--m", "1" + "0" * 400, "--n", "8", "--k", "8"], "m must be a positive integer that float64 can hold"),
    (["mfu", "--flops", "1e15", "--seconds", "1e-320", "--gpu", "h200"], "seconds gives a non-finite result"),
    (["plot", "--gpu", "h200", "--out", "/proc/solkit-no/roof.png"], "cannot create its folder '/proc/solkit-no'"),
])
def test_subprocess_bad_input_is_one_line_without_traceback(argv, says):
    """A real `python -W error -m solkit`: one line on stderr, exit 2, even with warnings turned into errors."""
    proc = _solkit(*argv, python_flags=("-W", "error"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("solkit: error: ") and proc.stderr.count("\n") == 1 and says in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_subprocess_impossible_measurement_is_a_warning_line_and_exit_1():
    """A real run: the result on stdout, `warning: ...` on stderr (not Python's file:line warning format), exit 1."""
    proc = _solkit("mfu", "--flops", "1e15", "--seconds", "1", "--gpu", "h200")
    assert proc.returncode == 1
    assert proc.stdout.startswith("MFU 101.07%")  # 1e15 / 989.4e12 = 1.0107
    assert proc.stderr.startswith("warning: mfu = 1.011 is above 1") and proc.stderr.count("\n") == 1
    assert "ImpossibleMeasurementWarning" not in proc.stderr and "cli.py" not in proc.stderr


def test_subprocess_plot_prints_the_exact_path(tmp_path):
    """A real run of plot --out NAME: the file written is NAME.png and the command prints that path."""
    pytest.importorskip("matplotlib")
    proc = _solkit("plot", "--gpu", "a100", "--out", str(tmp_path / "roof"))
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == f"wrote {tmp_path / 'roof.png'}\n" and (tmp_path / "roof.png").is_file()


def test_subprocess_closed_pipe_is_quiet():
    """`solkit gpus | true`: the reader is gone before solkit writes (plain Python prints a BrokenPipeError traceback)."""
    proc = subprocess.Popen([sys.executable, "-m", "solkit", "gpus"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before solkit has even imported: its first write meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert err == ""


# ---- solkit profile -------------------------------------------------------------------------

DECODE = str(Path(__file__).resolve().parents[1] / "data" / "profiles" / "llama_decode.json.gz")


def test_profile_prints_the_report(capsys):
    """profile TRACE --gpu h200: the report of the decode step, every kernel mapped (coverage 100.0%), exit 0."""
    code, out, err = run(capsys, "profile", DECODE, "--gpu", "h200", "--top", "3")
    assert (code, err) == (0, "")
    assert "coverage 100.0%" in out and out.startswith(f"{DECODE} on h200-sxm (chrome): 206 kernels")
    assert "top 3 opportunities" in out


def test_profile_json_counts_the_traces_kernels(capsys):
    """--json is one object; its `launches` is the number of "cat": "kernel" events in the raw trace (206)."""
    with gzip.open(DECODE, "rt") as f:
        n_kernels = sum(1 for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel")
    code, out, err = run(capsys, "profile", DECODE, "--gpu", "h200", "--json", "--top", "2")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["launches"] == n_kernels == 206 and "kernels" not in data
    assert data["coverage"] == pytest.approx(1.0) and len(data["opportunities"]) == 2 and "plots" not in data


def test_profile_plot_writes_two_charts_and_prints_their_paths(capsys, tmp_path):
    """--plot OUT: OUT.png (time breakdown) and OUT-roofline.png; a suffix is kept; --json lists them under "plots"."""
    pytest.importorskip("matplotlib")
    code, out, err = run(capsys, "profile", DECODE, "--gpu", "h200", "--plot", str(tmp_path / "dec"))
    assert (code, err) == (0, "")
    bars, roof = tmp_path / "dec.png", tmp_path / "dec-roofline.png"
    assert out.endswith(f"\nwrote {bars}\nwrote {roof}\n")
    assert bars.stat().st_size > 10_000 and roof.stat().st_size > 10_000 and not (tmp_path / "dec").exists()
    code, out, err = run(capsys, "profile", DECODE, "--gpu", "h200", "--json", "--plot", str(tmp_path / "sub" / "d.svg"))
    assert (code, err) == (0, "")
    assert json.loads(out)["plots"] == [str(tmp_path / "sub" / "d.svg"), str(tmp_path / "sub" / "d-roofline.svg")]
    assert (tmp_path / "sub" / "d-roofline.svg").is_file()


def test_profile_several_traces_are_ranks(capsys):
    """Two files are two ranks: the report is the slowest's and lists both."""
    other = DECODE.replace("llama_decode", "llama_prefill")
    code, out, err = run(capsys, "profile", DECODE, other, "--gpu", "h200", "--json")
    assert (code, err) == (0, "")
    assert [r["path"] for r in json.loads(out)["ranks"]] == [DECODE, other]


@pytest.mark.parametrize("argv, says", [
    (["profile", "/nonexistent/trace.json.gz", "--gpu", "h200"], "cannot read profile '/nonexistent/trace.json.gz'"),
    (["profile", __file__, "--gpu", "h200"], "is neither a torch.profiler Chrome trace"),
    (["profile", DECODE, "--gpu", "h2000"], "is not a known GPU"),
    (["profile", DECODE, "--gpu", "h200", "--top", "0"], "--top must be a positive integer, got 0"),
    (["profile", DECODE, "--gpu", "h200", "--top", "-1"], "--top must be a positive integer, got -1"),
    (["profile", DECODE, "--gpu", "h200", "--top", "x"], "argument --top: invalid int value"),
    (["profile", "--gpu", "h200"], "the following arguments are required: TRACE"),
    (["profile", DECODE, "--gpu", "h200", "--plot", "/tmp/p.xyz"], "--plot: path '/tmp/p.xyz' ends in '.xyz'"),
])
def test_profile_bad_input_is_one_line_exit_2(capsys, argv, says):
    """A missing or malformed trace, no --gpu, a bad --top or --plot: exit 2, one line, nothing on stdout."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("solkit: error: ") and err.count("\n") == 1 and says in err


def test_profile_without_gpu_reads_the_trace_on_h200(capsys):
    """--gpu defaults to h200 as in every command, and the report's first line names it."""
    code, out, err = run(capsys, "profile", DECODE)
    assert (code, err) == (0, "") and out.splitlines()[0].endswith("on h200-sxm (chrome): 206 kernels in 182 op calls")


def test_profile_help_has_an_example(capsys):
    """profile --help shows the usage and an example."""
    code, out, _ = run(capsys, "profile", "--help")
    assert code == 0 and out.startswith("usage: solkit profile")
    assert "solkit profile trace.json.gz --gpu h200" in out


def test_subprocess_profile():
    """A real `python -W error -m solkit profile`: the report on stdout, nothing on stderr, exit 0."""
    proc = _solkit("profile", DECODE, "--gpu", "h200", python_flags=("-W", "error"))
    assert proc.returncode == 0 and proc.stderr == ""
    assert "coverage 100.0%" in proc.stdout
