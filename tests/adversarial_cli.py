"""Adversarial cases: cli (see adversarial.py).

Each case runs ``solkit.cli.main`` in-process with stdout and stderr captured, through ``cli``,
which turns the outcome into the contract the judge reads:

- exit 2 (bad input): stderr must be exactly one ``solkit: error: ...`` line and stdout empty;
  the helper then raises ``CLIError`` with that line, so the case names what the line must say;
- exit 1 (an impossible measured number): the result is on stdout and every stderr line is a
  ``warning: ...``; the helper re-emits them as ``ImpossibleMeasurementWarning`` (judged flagged);
- exit 0: stderr must be empty; the helper returns stdout (``expect=None``).

A traceback, a Python-formatted warning, or any other exit code is an AssertionError, which the
judge reports as ``foreign``.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import warnings
from contextlib import redirect_stderr, redirect_stdout
from typing import Any, Callable, Sequence

from adversarial import Adv
from solkit.cli import main
from solkit.errors import CLIError, ImpossibleMeasurementWarning

ERROR = "solkit: error: "
WARNING = "warning: "


def cli(args: Sequence[str], code: int, shows: Sequence[str] = ()) -> str:
    """Run ``solkit ARGS`` in-process; check the exit code and the shape of stderr (see the module docstring)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        got = main(list(args))
    stdout, stderr = out.getvalue(), err.getvalue()
    if "Traceback" in stderr or "Warning:" in stderr:
        raise AssertionError(f"a traceback or a Python warning reached stderr: {stderr[:300]!r}")
    if got != code:
        raise AssertionError(f"exit code {got}, expected {code}; stderr {stderr[:300]!r}")
    for text in shows:
        if text not in stdout:
            raise AssertionError(f"stdout does not show {text!r}: {stdout[:300]!r}")
    lines = stderr.splitlines()
    if code == 2:
        if len(lines) != 1 or not stderr.startswith(ERROR) or not stderr.endswith("\n") or stdout:
            raise AssertionError(f"an error must be one '{ERROR}' line and no output; got {stderr!r} / {stdout[:100]!r}")
        raise CLIError(lines[0][len(ERROR):])
    if code == 1:
        if not lines or any(not line.startswith(WARNING) for line in lines) or not stdout:
            raise AssertionError(f"exit 1 needs the result and '{WARNING}' lines; got {stderr!r} / {stdout[:100]!r}")
        for line in lines:
            warnings.warn(line[len(WARNING):], ImpossibleMeasurementWarning, stacklevel=2)
        return stdout
    if stderr:
        raise AssertionError(f"exit 0 with something on stderr: {stderr[:300]!r}")
    return stdout


def bad(*args: str) -> Any:
    """``solkit ARGS`` must fail with exit 2."""
    return lambda: cli(args, 2)


def ok(*args: str, shows: Sequence[str] = ()) -> Any:
    """``solkit ARGS`` must succeed with exit 0 and show ``shows``."""
    return lambda: cli(args, 0, shows)


def impossible(*args: str, shows: Sequence[str] = ()) -> Any:
    """``solkit ARGS`` must print its result and exit 1 with a warning."""
    return lambda: cli(args, 1, shows)


def check(condition: bool, what: str) -> None:
    """AssertionError unless ``condition``."""
    if not condition:
        raise AssertionError(what)


MMP = ("matmul", "--n", "64", "--k", "64")  # add --m
MM = ("op", *MMP)
H200 = ("--gpu", "h200")


def op_json(*args: str) -> dict[str, Any]:
    """``solkit op ... --json`` parsed."""
    return json.loads(cli(("op", *args, "--json"), 0))


def mfu_json(*args: str) -> dict[str, Any]:
    """``solkit mfu ... --json`` parsed."""
    return json.loads(cli(("mfu", *args, "--json"), 0))


def in_temp(job: Callable[[str], Any]) -> Any:
    """``job(folder)`` in a fresh temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="solkit-adv-cli-") as folder:
        return job(folder)


def plot_to(name: str, written: str) -> None:
    """``solkit plot --out folder/NAME`` prints the exact file written (folder/WRITTEN), and it is there."""

    def job(base: str) -> None:
        out = cli(("plot", "--gpu", "h200", "--out", os.path.join(base, name)), 0)
        path = os.path.join(base, written)
        check(out == f"wrote {path}\n", f"printed {out!r}, expected 'wrote {path}'")
        check(os.path.getsize(path) > 1000, f"{path} is missing or empty")

    in_temp(job)


def plot_bad(path: str) -> Any:
    """``solkit plot --out PATH`` must fail with exit 2."""
    return lambda: cli(("plot", "--gpu", "h200", "--out", path), 2)


def plot_bad_in_temp(make: Callable[[str], str]) -> Any:
    """``solkit plot --out make(folder)`` must fail with exit 2, in a fresh temporary folder."""
    return lambda: in_temp(lambda base: cli(("plot", "--gpu", "h200", "--out", make(base)), 2))


def file_as_folder(base: str) -> str:
    """A path in ``base`` whose folder is a regular file."""
    with open(os.path.join(base, "plain"), "w") as f:
        f.write("x")
    return os.path.join(base, "plain", "roof.png")


CASES: list[Adv] = [
    # arguments of `solkit op`
    Adv("cli-args: unknown op", bad("op", "nosuch", "--m", "8"), CLIError, ValueError, ("op must be one of", "matmul")),
    Adv("cli-args: unicode op name", bad("op", "mätmul"), CLIError, ValueError, ("op must be one of", "mätmul")),
    Adv("cli-args: op without a name", bad("op"), CLIError, ValueError, ("op",)),
    Adv("cli-args: missing --k", bad("op", "matmul", "--m", "8", "--n", "8"), CLIError, ValueError, ("--k",)),
    Adv("cli-args: m=0", bad(*MM, "--m", "0"), CLIError, ValueError, ("m must be a positive integer, got 0",)),
    Adv("cli-args: m=-3", bad(*MM, "--m", "-3"), CLIError, ValueError, ("m must", "-3")),
    Adv("cli-args: m=1e400", bad(*MM, "--m", "1e400"), CLIError, ValueError, ("m must", "inf")),
    Adv("cli-args: m=nan", bad(*MM, "--m", "nan"), CLIError, ValueError, ("m must", "nan")),
    Adv("cli-args: m=0x10", bad(*MM, "--m", "0x10"), CLIError, ValueError, ("m must", "0x10")),
    Adv("cli-args: m=1:8192 (no ranges in op)", bad(*MM, "--m", "1:8192"), CLIError, ValueError, ("m must", "1:8192")),
    Adv("cli-args: m=''", bad(*MM, "--m", ""), CLIError, ValueError, ("m must",)),
    Adv("cli-args: m=true", bad(*MM, "--m", "true"), CLIError, ValueError, ("m must", "bool")),
    Adv("cli-args: m with 401 digits", bad(*MM, "--m", "1" + "0" * 400), CLIError, ValueError, ("m must", "float64")),
    Adv("cli-args: m=1e300 n=1e300: figures beyond float64",
        bad("op", "matmul", "--m", "1e300", "--n", "1e300", "--k", "8"), CLIError, ValueError, ("m=", "n=", "too large")),
    Adv("cli-args: m=① (a unicode digit sign)", bad(*MM, "--m", "①"), CLIError, ValueError, ("m must",)),
    Adv("cli-args: --m given twice", bad(*MM, "--m", "8", "--m", "16"), CLIError, ValueError, ("--m", "twice")),
    Adv("cli-args: --=5", bad(*MM, "--m", "8", "--=5"), CLIError, ValueError, ("--=5",)),
    Adv("cli-args: a stray word", bad(*MM, "--m", "8", "extra"), CLIError, ValueError, ("extra",)),
    Adv("cli-args: unknown parameter --q", bad(*MM, "--m", "8", "--q", "3"), CLIError, ValueError, ("'q'",)),
    Adv("cli-args: --he is no abbreviation of --help", bad(*MM, "--m", "8", "--he", "1"), CLIError, ValueError, ("'he'",)),
    Adv("cli-args: --m without a value", bad(*MM, "--m"), CLIError, ValueError, ("--m needs a value",)),
    Adv("cli-args: unknown dtype (unicode)", bad(*MM, "--m", "8", "--dtype", "ünicode"), CLIError, ValueError,
        ("dtype", "ünicode")),
    Adv("cli-args: unknown GPU (unicode)", bad(*MM, "--m", "8", "--gpu", "ünicode"), CLIError, ValueError,
        ("ünicode", "not a known GPU")),
    Adv("cli-args: fp8 on an A100", bad(*MM, "--m", "8", "--dtype", "fp8", "--gpu", "a100"), CLIError, ValueError,
        ("fp8",)),
    Adv("cli-args: epilogue=5", bad(*MM, "--m", "8", "--epilogue", "5"), CLIError, ValueError, ("epilogue",)),
    Adv("cli-args: bias=maybe", bad(*MM, "--m", "8", "--bias", "maybe"), CLIError, ValueError, ("bias", "maybe")),
    Adv("cli-args: batch=0", bad(*MM, "--m", "8", "--batch", "0"), CLIError, ValueError, ("batch",)),
    Adv("cli-args: conv kernel 3,3,3", bad("op", "conv2d", "--batch", "1", "--in-channels", "3", "--height", "8",
                                           "--width", "8", "--out-channels", "4", "--kernel", "3,3,3"),
        CLIError, ValueError, ("kernel",)),
    Adv("cli-args: conv kernel ','", bad("op", "conv2d", "--batch", "1", "--in-channels", "3", "--height", "8",
                                         "--width", "8", "--out-channels", "4", "--kernel", ","),
        CLIError, ValueError, ("kernel",)),
    Adv("cli-args: conv kernel larger than the input", bad("op", "conv2d", "--batch", "1", "--in-channels", "3",
                                                           "--height", "8", "--width", "8", "--out-channels", "4",
                                                           "--kernel", "9"),
        CLIError, ValueError, ("kernel",)),
    Adv("cli-args: empty kernel name", bad("op", "elementwise", "--elements", "10", "--name", ""), CLIError, ValueError,
        ("name",)),
    Adv("cli-args: attention impl=xformers", bad("op", "attention", "--batch", "1", "--heads", "8", "--seq-q", "16",
                                                 "--impl", "xformers"), CLIError, ValueError, ("impl",)),
    Adv("cli-args: a 10,000-character value", bad(*MM, "--m", "9" * 10_000), CLIError, ValueError, ("m must",)),
    Adv("cli-args: m=1_000 reads as 1000", lambda: check(op_json(*MMP, "--m", "1_000")["params"]["m"] == 1000, "m=1000"),
        None),
    Adv("cli-args: ' 64 ' with spaces reads as 64",
        lambda: check(op_json("matmul", "--m", " 64 ", "--n", "64", "--k", "64")["model_flops"] == 2 * 64**3, "2*64^3"), None),
    Adv("cli-args: --m=8192 form, T_SOL by hand",
        lambda: check(abs(op_json("matmul", "--m=8192", "--n=8192", "--k=8192", *H200)["t_sol_s"]
                          - 2 * 8192**3 / 989.4e12) < 1e-15, "2*8192^3 / 989.4e12 = 1.1113e-3 s"), None),
    Adv("cli-args: 10**12-cubed matmul is finite (2e36 FLOP)",
        lambda: check(op_json("matmul", "--m", "1e12", "--n", "1e12", "--k", "1e12")["model_flops"] == 2e36, "2e36"), None),
    Adv("cli-args: --help exits 0", lambda: cli(("--help",), 0, ("usage: solkit",)), None),
    Adv("cli-args: op --help exits 0", lambda: cli(("op", "--help"), 0, ("usage: solkit op",)), None),

    # other commands' arguments
    Adv("cli-args: gpus with an extra word", bad("gpus", "extra"), CLIError, ValueError, ("unrecognized", "extra")),
    Adv("cli-args: unknown command", bad("frobnicate"), CLIError, ValueError, ("invalid choice", "frobnicate")),
    Adv("cli-args: unknown option", bad("--bogus"), CLIError, ValueError, ("--bogus",)),
    Adv("cli-args: table on an unknown GPU", bad("table", "--gpu", "h9000"), CLIError, ValueError, ("h9000",)),
    Adv("cli-args: gpu unknown", bad("gpu", "h9000"), CLIError, ValueError, ("h9000", "not a known GPU")),
    Adv("cli-args: gpu spec path that is missing", bad("gpu", "/nonexistent/solkit.yaml"), CLIError, ValueError,
        ("/nonexistent/solkit.yaml",)),
    Adv("cli-args: compare m=", bad("compare", *MMP, "--m", "8", "--baseline", "m=", "--variant", "m=16"), CLIError,
        ValueError, ("m must",)),
    Adv("cli-args: compare =5", bad("compare", *MMP, "--m", "8", "--baseline", "=5", "--variant", "m=16"), CLIError,
        ValueError, ("KEY=VALUE", "=5")),
    Adv("cli-args: compare m=5=6", bad("compare", *MMP, "--m", "8", "--baseline", "m=5=6", "--variant", "m=16"), CLIError,
        ValueError, ("m must", "5=6")),
    Adv("cli-args: compare foo=5", bad("compare", *MMP, "--m", "8", "--baseline", "foo=5", "--variant", "m=16"), CLIError,
        ValueError, ("foo",)),
    Adv("cli-args: compare m twice in a variant", bad("compare", *MMP, "--m", "8", "--baseline", "m=1|m=2", "--variant",
                                                      "m=16"), CLIError, ValueError, ("m is given twice",)),
    Adv("cli-args: compare m=1e400", bad("compare", *MMP, "--m", "8", "--baseline", "m=8", "--variant", "m=1e400"),
        CLIError, ValueError, ("m must", "inf")),
    Adv("cli-args: compare with nothing to compare", bad("compare", *MMP, "--m", "8"), CLIError, ValueError,
        ("compare needs",)),
    Adv("cli-args: compare across GPUs without --k", bad("compare", "matmul", "--m", "8", "--n", "8", "--gpu", "h200",
                                                         "--gpu", "a100"), CLIError, ValueError, ("--k",)),
    Adv("cli-args: compare fused vs unfused by hand (20.0% of the bytes)",
        lambda: check(abs(json.loads(cli(("compare", "layernorm_residual", "--tokens", "8192", "--d-model", "4096",
                                          "--baseline", "fused=false", "--variant", "fused=true", "--json"), 0))
                          ["comparisons"][0]["bytes_saved_fraction"] - 67_108_864 / 335_560_704) < 1e-12, "0.19999"),
        None),
    Adv("cli-args: plot parameters without --op", bad("plot", "--gpu", "h200", "--m", "10", "--out", "x.png"), CLIError,
        ValueError, ("--op",)),
    Adv("cli-args: plot --op with a missing parameter", bad("plot", "--gpu", "h200", "--op", "matmul", "--m", "10",
                                                            "--out", "x.png"), CLIError, ValueError, ("--n", "--k")),
    Adv("cli-args: mfu --flops abc", bad("mfu", "--flops", "abc", "--seconds", "1", "--gpu", "h200"), CLIError,
        ValueError, ("--flops", "abc")),
    Adv("cli-args: mfu without --flops", bad("mfu", "--seconds", "1", "--gpu", "h200"), CLIError, ValueError,
        ("--flops",)),
    Adv("cli-args: mfu --n-gpus 1.5", bad("mfu", "--flops", "1e12", "--seconds", "1", "--gpu", "h200", "--n-gpus", "1.5"),
        CLIError, ValueError, ("--n-gpus", "1.5")),
    Adv("cli-args: mfu --n-gpus 0", bad("mfu", "--flops", "1e12", "--seconds", "1", "--gpu", "h200", "--n-gpus", "0"),
        CLIError, ValueError, ("n_gpus",)),
    Adv("cli-args: mfu --dtype xyz", bad("mfu", "--flops", "1e12", "--seconds", "1", "--gpu", "h200", "--dtype", "xyz"),
        CLIError, ValueError, ("dtype", "xyz")),
    Adv("cli-args: mfu fp8 on an A100", bad("mfu", "--flops", "1e12", "--seconds", "1", "--gpu", "a100", "--dtype",
                                            "fp8"), CLIError, ValueError, ("fp8",)),

    # measured numbers: bad ones exit 2, impossible ones exit 1 with the result and a warning
    Adv("cli-measured: seconds 0", bad("mfu", "--flops", "1e12", "--seconds", "0", "--gpu", "h200"), CLIError,
        ValueError, ("seconds", "0")),
    Adv("cli-measured: seconds -1", bad("mfu", "--flops", "1e12", "--seconds", "-1", "--gpu", "h200"), CLIError,
        ValueError, ("seconds", "-1")),
    Adv("cli-measured: seconds nan", bad("mfu", "--flops", "1e12", "--seconds", "nan", "--gpu", "h200"), CLIError,
        ValueError, ("seconds", "nan")),
    Adv("cli-measured: seconds inf", bad("mfu", "--flops", "1e12", "--seconds", "inf", "--gpu", "h200"), CLIError,
        ValueError, ("seconds", "inf")),
    Adv("cli-measured: seconds 1e-320 (divides to inf)", bad("mfu", "--flops", "1e15", "--seconds", "1e-320", "--gpu",
                                                             "h200"), CLIError, ValueError, ("seconds",)),
    Adv("cli-measured: flops 0", bad("mfu", "--flops", "0", "--seconds", "1", "--gpu", "h200"), CLIError, ValueError,
        ("flops",)),
    Adv("cli-measured: flops -1e15", bad("mfu", "--flops", "-1e15", "--seconds", "1", "--gpu", "h200"), CLIError,
        ValueError, ("flops",)),
    Adv("cli-measured: flops 1e400", bad("mfu", "--flops", "1e400", "--seconds", "1", "--gpu", "h200"), CLIError,
        ValueError, ("flops", "inf")),
    Adv("cli-measured: MFU 1.0107 is impossible: printed, warned, exit 1",
        impossible("mfu", "--flops", "1e15", "--seconds", "1", "--gpu", "h200", shows=("MFU 101.07%",)),
        ImpossibleMeasurementWarning, names=("mfu", "above 1")),  # 1e15 / 989.4e12 = 1.0107
    Adv("cli-measured: MFU 1e9 (seconds 1e-9): exit 1",
        impossible("mfu", "--flops", "1e15", "--seconds", "1e-9", "--gpu", "h200"), ImpossibleMeasurementWarning,
        names=("mfu",)),
    Adv("cli-measured: --json above 1 still prints the JSON",
        impossible("mfu", "--flops", "1e15", "--seconds", "1", "--gpu", "h200", "--json", shows=('"mfu": 1.0107',)),
        ImpossibleMeasurementWarning, names=("mfu",)),  # 1e15 / 989.4e12 = 1.01071...
    Adv("cli-measured: exactly the peak is possible (MFU 1.0)",
        ok("mfu", "--flops", "989.4e12", "--seconds", "1", "--gpu", "h200", shows=("MFU 100.00%",)), None),
    Adv("cli-measured: 8 GPUs: 1e15 / (989.4e12 x 8) = 12.63%",
        ok("mfu", "--flops", "1e15", "--seconds", "1", "--gpu", "h200", "--n-gpus", "8", shows=("MFU 12.63%",)), None),
    Adv("cli-measured: 3.2e18 FLOP in 3600 s on 8 H100 = 11.23%",
        lambda: check(abs(mfu_json("--flops", "3.2e18", "--seconds", "3600", "--gpu", "h100", "--n-gpus", "8")["mfu"]
                          - 3.2e18 / (989.4e12 * 3600 * 8)) < 1e-12, "0.1123"), None),
    Adv("cli-measured: huge but possible (1e30 FLOP in 1e18 s)",  # 1e30 / 1e18 = 1e12 FLOP/s of 989.4e12: 0.10%
        ok("mfu", "--flops", "1e30", "--seconds", "1e18", "--gpu", "h200", shows=("MFU 0.10%",)), None),

    # --out: the exact file written, or one line naming the problem
    Adv("cli-out: unknown extension .xyz", plot_bad(os.path.join(tempfile.gettempdir(), "solkit-adv.xyz")), CLIError,
        ValueError, ("--out", ".xyz", ".png")),
    Adv("cli-out: a folder", plot_bad_in_temp(lambda base: base), CLIError, ValueError,
        ("--out", "folder")),
    Adv("cli-out: a folder that is a file", plot_bad_in_temp(file_as_folder),
        CLIError, ValueError, ("--out", "is a file")),
    Adv("cli-out: a folder that cannot be created", plot_bad("/proc/solkit-no/roof.png"), CLIError, ValueError,
        ("--out", "/proc/solkit-no")),
    Adv("cli-out: an empty path", plot_bad(""), CLIError, ValueError, ("--out", ".png")),
    Adv("cli-out: NUL in the path", plot_bad("roof\0.png"), CLIError, ValueError, ("--out",)),
    Adv("cli-out: a name too long", plot_bad_in_temp(lambda base: os.path.join(base, "r" * 300 + ".png")),
        CLIError, ValueError, ("--out",)),
    Adv("cli-out: no suffix: .png added, the exact file printed", lambda: plot_to("roof", "roof.png"), None),
    Adv("cli-out: .svg printed as given", lambda: plot_to("roof.svg", "roof.svg"), None),
    Adv("cli-out: new nested folders", lambda: plot_to("a/b/roof.pdf", "a/b/roof.pdf"), None),
    Adv("cli-out: unicode file name", lambda: plot_to("rööf ☃.png", "rööf ☃.png"), None),
]
