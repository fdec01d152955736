"""The data the solkit command writes: one JSON naming scheme, integers that stay integers, ncu files without NVTX, the
L2 marker on its rows, --help and --gpu alike in every command, notes and warnings once (issue 30)."""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

import solkit as sk
from solkit import ops
from solkit.cli import DEFAULT_GPU, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
NCU = str(ROOT / "data" / "profiles" / "ncu_ops.csv.gz")
DECODE = str(ROOT / "data" / "profiles" / "llama_decode.json.gz")
BF16_PEAK = 989.4e12  # H200 SXM dense bf16, FLOP/s
BANDWIDTH = 4.8e12  # H200 SXM HBM3e, bytes/s
#: keys the scheme replaced (docs/cli.md, "JSON"): none may come back in any --json
OLD_KEYS = {"t_sol", "t_compute", "t_memory", "t_link", "t_matrix", "t_vector", "predicted_seconds", "sol_seconds",
            "kernel_seconds", "span_seconds", "idle_seconds", "modeled_seconds", "measured_seconds", "seconds", "flops",
            "count", "intensity", "ridge_point", "achieved_flops", "peak_flops", "achieved_bandwidth",
            "memory_bandwidth", "peak_flops_per_gpu", "achieved_flops_per_gpu"}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def keys(obj: object, where: str = "") -> list[tuple[str, str, object]]:
    """(path, key, value) of every key of a JSON value, nested."""
    out: list[tuple[str, str, object]] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((where, k, v))
            out += keys(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for v in obj:
            out += keys(v, f"{where}[]")
    return out


def assert_scheme(data: dict) -> None:
    """No replaced key anywhere, ``kernels`` only ever a list, every ``bytes`` an int."""
    for where, k, v in keys(data):
        assert k not in OLD_KEYS, f"{where}.{k}"
        if k == "kernels":
            assert isinstance(v, list), f"{where}.kernels is {v!r}"
        if k == "bytes":
            assert type(v) is int, f"{where}.bytes is {v!r}"


# ---- 1. one JSON naming scheme ---------------------------------------------------------------------------------------

def test_op_json_follows_the_scheme_by_hand(capsys):
    """matmul 4096 x 14336 x 4096 bf16: bytes (4096*4096 + 4096*14336 + 4096*14336)*2 = 268,435,456 (an int);
    T_SOL = 2*4096*14336*4096 / 989.4e12 = 481,036,337,152 / 989.4e12 = 4.8619e-4 s; one kernel, one launch."""
    code, out, _ = run(capsys, "op", "matmul", "--m", "4096", "--n", "14336", "--k", "4096", "--json", "--measured", "600us")
    assert code == 0
    data = json.loads(out)
    assert_scheme(data)
    assert data["bytes"] == 268_435_456
    assert data["model_flops"] == 2 * 4096 * 14336 * 4096
    assert data["t_sol_s"] == pytest.approx(2 * 4096 * 14336 * 4096 / BF16_PEAK)
    assert data["n_kernels"] == 1 and data["launches"] == 1 and data["kernels"][0]["launches"] == 1
    assert data["params"] == {"m": 4096, "n": 14336, "k": 4096}
    assert data["predicted_s"] >= data["t_sol_s"]
    m = data["measured"]
    assert m["measured_s"] == pytest.approx(600e-6)
    assert m["achieved_flop_per_s"] == pytest.approx(2 * 4096 * 14336 * 4096 / 600e-6)  # 801.7 TFLOP/s
    assert m["achieved_bytes_per_s"] == pytest.approx(268_435_456 / 600e-6)  # 0.447 TB/s
    assert m["memory_bytes_per_s"] == BANDWIDTH and m["peak_flop_per_s"] == BF16_PEAK


def test_mfu_json_follows_the_scheme_by_hand(capsys):
    """3.2e18 FLOP in 3600 s on 8 GPUs: 3.2e18 / 3600 / 8 = 1.1111e14 FLOP/s per GPU; / 989.4e12 = MFU 0.11230."""
    code, out, _ = run(capsys, "mfu", "--flops", "3.2e18", "--seconds", "3600", "--gpu", "h200", "--n-gpus", "8", "--json")
    assert code == 0
    data = json.loads(out)
    assert_scheme(data)
    assert data["mfu"] == pytest.approx(3.2e18 / 3600 / 8 / BF16_PEAK) and data["mfu"] == pytest.approx(0.11230, abs=1e-5)
    assert data["achieved_flop_per_s"] == pytest.approx(3.2e18 / 3600 / 8)
    assert (data["model_flops"], data["measured_s"], data["n_gpus"], data["peak_flop_per_s"]) == (3.2e18, 3600, 8, BF16_PEAK)


def test_profile_json_follows_the_scheme(capsys):
    """The decode trace: launches = its 206 "cat": "kernel" events; times end in _s; groups count launches."""
    code, out, _ = run(capsys, "profile", DECODE, "--json", "--top", "3")
    assert code == 0
    data = json.loads(out)
    assert_scheme(data)
    assert data["launches"] == 206 == sum(g["launches"] for g in data["groups"])
    assert data["kernel_s"] == pytest.approx(sum(g["measured_s"] for g in data["groups"]))
    assert data["coverage_note"] is None and 0 < data["coverage"] <= 1 and data["launch_gaps"]["n_gaps"] == 205


# ---- 2. integers stay integers ---------------------------------------------------------------------------------------

def test_sweep_table_and_csv_keep_integers(capsys, tmp_path):
    """--m 1,64,4096 prints m as 1, 64 and 4096 (never 1.0); the CSV's m cells are integers; at m = 1 the GEMV moves
    (1*4096 + 4096*4096 + 1*4096)*2 = 33,570,816 B: 33,570,816 / 4.8e12 = 6.99392e-6 s."""
    out_csv = tmp_path / "m.csv"
    code, out, _ = run(capsys, "sweep", "matmul", "--m", "1,64,4096", "--n", "4096", "--k", "4096", "--csv", str(out_csv))
    assert code == 0
    rows = out.splitlines()
    table = rows[rows.index(next(r for r in rows if r.startswith("----"))) + 1:][:3]
    assert [r.split()[0] for r in table] == ["1", "64", "4096"]
    assert ".0 " not in out
    with open(out_csv, newline="") as f:
        cells = list(csv.DictReader(f))
    assert [c["m"] for c in cells] == ["1", "64", "4096"]
    assert float(cells[0]["t_sol_s"]) == pytest.approx(33_570_816 / BANDWIDTH)


def test_a_range_is_integers_and_a_fraction_stays_a_float(capsys, tmp_path):
    """--m 8:10 holds 8, 9 and 10, written as integers."""
    out_csv = tmp_path / "r.csv"
    code, out, _ = run(capsys, "sweep", "matmul", "--m", "8:10", "--n", "64", "--k", "64", "--csv", str(out_csv))
    assert code == 0
    with open(out_csv, newline="") as f:
        assert [c["m"] for c in csv.DictReader(f)] == ["8", "9", "10"]


def test_python_sweep_keeps_integers_and_whole_bytes():
    """sk.sweep: m an int64 column; bytes at m = 1, n = 14336, k = 4096 bf16 = (4096 + 4096*14336 + 14336)*2 = 117,477,376."""
    pytest.importorskip("pandas")
    frame = sk.sweep(ops.matmul, "h200", m=[1, 64], n=14336, k=4096)
    assert frame["m"].dtype.kind == "i" and frame["m"].tolist() == [1, 64]
    assert frame["bytes"].dtype.kind == "i" and frame["bytes"].iloc[0] == 117_477_376
    assert frame["model_flops"].iloc[0] == pytest.approx(2 * 14336 * 4096)  # FLOPs stay floats (they pass int64)


def test_sweep_chart_legends_name_the_parameter():
    """Two values of n: the legend reads 'T_SOL n=1024', not 'T_SOL 1024.0'."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    fig = sk.plot.sweep(sk.sweep(ops.matmul, "h200", m=[1, 16, 256], n=[1024, 4096], k=4096))
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts == ["T_SOL n=1024", "predicted n=1024", "T_SOL n=4096", "predicted n=4096"]


# ---- 3. ncu files -------------------------------------------------------------------------------------------------------

SOL_SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
SOL_MEM = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
NVTX = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def ncu_csv(path: Path, rows: list[tuple[str, int, str, str, str]], sol: bool = True) -> str:
    """An ``ncu --csv --page raw`` file: rows of (kernel, ns, SM %, memory %, NVTX range or ''); ``sol``: with the
    two SOL columns."""
    header = ["ID", "Kernel Name", NVTX, "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
              SOL_SM, SOL_MEM]
    units = ["", "", "", "nsecond", "byte", "byte", "%", "%"]
    width = len(header) if sol else len(header) - 2
    lines = [header[:width], units[:width]]
    for i, (name, ns, sm, mem, nvtx) in enumerate(rows):
        cell = f'1  "<default domain>:{nvtx}:none:none:none:none:none:none"' if nvtx else ""
        lines.append([str(i), name, cell, f"{ns:,}", "1,000", "1,000", sm, mem][:width])
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(lines)
    return str(path)


def test_ncu_without_nvtx_says_na_not_zero(capsys, tmp_path):
    """Rows that name no op: coverage, T_SOL, the prediction and MFU are n/a (None in JSON), not 0 and 0.0%."""
    path = ncu_csv(tmp_path / "plain.csv", [("k_a", 3000, "80", "20", ""), ("k_b", 1000, "40", "60", "")])
    code, out, _ = run(capsys, "profile", path)
    assert code == 0
    assert "coverage n/a: rows name no op, pass nvtx={range name: workload} to solkit.load_profile" in out
    assert "MFU n/a" in out and "coverage 0.0%" not in out and "MFU 0.0%" not in out
    code, out, _ = run(capsys, "profile", path, "--json")
    data = json.loads(out)
    assert (data["coverage"], data["t_sol_s"], data["predicted_s"], data["mfu"]) == (None, None, None, None)
    assert data["coverage_note"].startswith("n/a: rows name no op")


def test_ncu_ranges_not_in_nvtx_are_named(capsys):
    """The shipped ncu file has NVTX ranges; without nvtx= the note names them."""
    code, out, _ = run(capsys, "profile", NCU)
    assert code == 0 and "no NVTX range is in nvtx= (ranges 'mm_bf16_4096x4096x4096'" in out


def test_ncu_sol_columns_are_shown_weighted_by_time(capsys, tmp_path):
    """Two launches of one kernel, 3,000 ns at SM 80% / memory 20% and 1,000 ns at 40% / 60%: the group's SM
    (80*3000 + 40*1000) / 4000 = 70%, memory (20*3000 + 60*1000) / 4000 = 30%."""
    path = ncu_csv(tmp_path / "sol.csv", [("k_a", 3000, "80", "20", ""), ("k_a", 1000, "40", "60", "")])
    prof = sk.load_profile(path, "h200")
    (row,) = prof.groups()
    assert row["ncu_sm_pct"] == pytest.approx(70.0) and row["ncu_memory_pct"] == pytest.approx(30.0)
    code, out, _ = run(capsys, "profile", path)
    header = next(line for line in out.splitlines() if line.startswith("op group") and "ncu SM %" in line)
    line = out.splitlines()[out.splitlines().index(header) + 2]
    assert "70%" in line.split() and "30%" in line.split()


def test_ncu_without_sol_columns_shows_none(tmp_path):
    """A file without ncu's SOL metrics: None in the rows and no ncu SOL columns; the shipped file has both."""
    path = ncu_csv(tmp_path / "nosol.csv", [("k_a", 3000, "80", "20", "")], sol=False)
    prof = sk.load_profile(path, "h200")
    assert prof.groups()[0]["ncu_sm_pct"] is None and "ncu SM %" not in prof.report()
    shipped = sk.load_profile(NCU, "h200")
    assert all(r["ncu_sm_pct"] is not None for r in shipped.groups()) and "ncu SM %" in shipped.report()


def test_the_l2_marker_is_on_its_rows(tmp_path):
    """A layernorm 8192 x 4096 call has T_SOL (2*8192*4096 + 2*4096)*2 / 4.8e12 = 134,234,112 / 4.8e12 = 27.97 us.
    Two calls under the range 'ln', 10 us (below it: L2-resident) and 200 us: the group's SOL is
    2 * 27.97 / 210 = 26.6%, its row reads '27%, 1 L2*'; a group of the 10 us call alone reads 'L2*'."""
    workload = ops.layernorm(8192, 4096)
    both = ncu_csv(tmp_path / "l2.csv", [("ln_kernel", 10_000, "50", "50", "ln"), ("other", 1000, "1", "1", "x"),
                                         ("ln_kernel", 200_000, "50", "50", "ln")])
    prof = sk.load_profile(both, "h200", nvtx={"ln": workload})
    row = next(r for r in prof.groups() if r["modeled"])
    assert row["calls"] == 2 and row["faster_than_dram_sol"] == 1
    assert row["sol_fraction"] == pytest.approx(2 * 134_234_112 / BANDWIDTH / 210e-6)
    line = next(line for line in prof.report().splitlines() if line.startswith(row["group"] + " "))
    assert "27%, 1 L2*" in line
    alone = ncu_csv(tmp_path / "l2a.csv", [("ln_kernel", 10_000, "50", "50", "ln")])
    prof = sk.load_profile(alone, "h200", nvtx={"ln": workload})
    line = next(line for line in prof.report().splitlines() if line.startswith(prof.groups()[0]["group"] + " "))
    assert " L2* " in line and "L2*: faster than DRAM SOL" in prof.report()


def test_ncu_with_nvtx_has_a_coverage(tmp_path):
    """Mapped rows: coverage is their time over all: 200 / (200 + 1) us = 0.99502."""
    path = ncu_csv(tmp_path / "cov.csv", [("ln_kernel", 200_000, "50", "50", "ln"), ("other", 1000, "1", "1", "x")])
    data = sk.load_profile(path, "h200", nvtx={"ln": ops.layernorm(8192, 4096)}).to_dict()
    assert data["coverage"] == pytest.approx(200 / 201) and data["coverage_note"] is None and data["mfu"] is not None


# ---- 4. --help and --gpu ---------------------------------------------------------------------------------------------

def subparsers() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("command", ["compare", "mfu", "profile", "sweep", "plot", "op", "table"])
def test_every_option_has_a_description(command):
    """compare, mfu, profile (and the rest): every argument's --help line says what it is."""
    for action in subparsers()[command]._actions:
        assert action.help and action.help.strip(), f"{command} {action.option_strings or action.dest}"


def test_gpu_is_optional_and_defaults_alike():
    """--gpu: no command requires it; a single GPU defaults to h200 (table's overview adds a100; repeatable ones
    default in the command)."""
    for name, parser in subparsers().items():
        for action in parser._actions:
            if "--gpu" in action.option_strings:
                assert not action.required, name
                assert action.default in (DEFAULT_GPU, None), name
                assert "default h200" in action.help, name


def test_mfu_and_plot_run_without_gpu(capsys, tmp_path):
    """mfu without --gpu is on h200: 3.2e18 / 3600 / 8 / 989.4e12 = 11.23%."""
    code, out, _ = run(capsys, "mfu", "--flops", "3.2e18", "--seconds", "3600", "--n-gpus", "8")
    assert code == 0 and out.startswith("MFU 11.23%") and "8 x h200-sxm" in out


# ---- 5. notes and warnings once --------------------------------------------------------------------------------------

def test_neighbour_note_once_and_factors_on_the_rows(capsys):
    """solkit op prints the neighbour note once, without the per-kernel list, which is the table's 'nbr x' column;
    --json keeps each kernel's neighbour_factor and the whole note."""
    argv = ("op", "conv2d", "--batch", "32", "--in-channels", "64", "--height", "56", "--width", "56", "--out-channels",
            "64", "--kernel", "3", "--padding", "1", "--layout", "nchw")
    code, out, _ = run(capsys, *argv)
    assert code == 0
    notes = [line for line in out.splitlines() if line.startswith("note: neighbour correction")]
    assert len(notes) == 1 and "nbr x" in notes[0] and "x1." not in notes[0]
    code, js, _ = run(capsys, *argv, "--json")
    data = json.loads(js)
    header = next(line for line in out.splitlines() if line.startswith("kernel "))
    column = header.split().index("nbr")  # 'nbr x' is two words; the kernel names before it have spaces too
    for k in data["kernels"]:
        row = next(line for line in out.splitlines() if line.startswith(k["name"] + "  "))
        shown = "-" if k["neighbour_factor"] == 1.0 else f"{k['neighbour_factor']:.2f}"
        assert f"  {shown}  " in row, (row, column)
    assert any(n.startswith("neighbour correction from") and " x1." in n for n in data["notes"])


SCRIPT = """
import warnings
import solkit as sk
from solkit import ops
g = sk.load_gpu("h200")
for _ in range(3):
    sk.predict(ops.matmul(64, 64, 7), g)   # k = 7 bf16 = 14 bytes: misaligned
sk.predict(ops.matmul(64, 64, 7), g)       # the same message from another line
sk.predict(ops.matmul(64, 7, 64), g)       # n = 7: the same text (the workload's and kernel's names)
sk.predict(ops.matmul(64, 64, 7).renamed("lm head", kernels=True), g)   # another text: shown once too
sk.predict(ops.matmul(64, 64, 7).renamed("lm head", kernels=True), g)
for _ in range(2):
    sk.sol_fraction(ops.matmul(64, 64, 64), g, 1e-12)   # impossible: every time
"""


@pytest.mark.parametrize("flags, performance, impossible", [((), 5, 2), (("-W", "always"), 7, 2)])
def test_performance_warning_once_per_call_site(flags, performance, impossible, tmp_path):
    """Python's default filter, which solkit leaves alone: the misaligned-GEMM PerformanceWarning once per line and text
    (the loop's three calls once, then four more lines: 5), an impossible measurement every time; -W always: all
    seven."""
    script = tmp_path / "warns.py"  # a file: `python -c` trips the impossible warning's source lookup (reported)
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, *flags, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("PerformanceWarning:") == performance, proc.stderr
    assert proc.stderr.count("ImpossibleMeasurementWarning:") == impossible, proc.stderr


def test_launches_count_what_the_cpu_issues(capsys):
    """An im2col conv over a batch of 8 unfolds image by image: 8 launches of its im2col kernel in one run, then 1 GEMM:
    2 distinct kernels, 8 + 1 = 9 launches (each kernel runs once: runs 1 and 1), in the repr and in --json."""
    import json

    import solkit as sk

    w = sk.ops.conv2d(8, 64, 56, 56, 64, layout="im2col")
    assert "2 distinct kernels, 9 launches" in repr(sk.roofline(w, "h200")) and sk.predict(w, "h200").launches == 9
    code, out, _ = run(capsys, "op", "conv2d", "--batch", "8", "--in-channels", "64", "--height", "56", "--width", "56",
                       "--out-channels", "64", "--layout", "im2col", "--json")
    assert code == 0
    data = json.loads(out)
    assert (data["n_kernels"], data["launches"]) == (2, 9)
    assert [(k["runs"], k["launches"]) for k in data["kernels"]] == [(1, 8), (1, 1)]


def test_profile_reads_the_gpu_its_trace_names(capsys):
    """llama_decode.json.gz's deviceProperties name 'NVIDIA H200': without --gpu it is read on h200-sxm, quietly; with
    --gpu a100 on the A100, with one warning naming both (exit 0: a warning, not an impossible number); an ncu CSV names
    no GPU: read on the default h200, saying so."""
    code, out, err = run(capsys, "profile", DECODE)
    assert code == 0 and out.splitlines()[0].startswith(f"{DECODE} on h200-sxm") and "warning" not in err
    code, out, err = run(capsys, "profile", DECODE, "--gpu", "a100")
    assert code == 0 and " on a100-sxm4-80gb " in out.splitlines()[0]
    assert "warning: the trace ran on 'NVIDIA H200' (h200-sxm), read as --gpu a100 (a100-sxm4-80gb)" in err
    code, out, err = run(capsys, "profile", NCU)
    assert code == 0 and " on h200-sxm " in out.splitlines()[0] and "names no GPU: read as h200 (pass --gpu)" in err


def test_device_names_map_to_specs():
    """Profiler device names: 'NVIDIA H200' -> the h200 alias (h200-sxm), 'NVIDIA A100-SXM4-80GB' -> its own spec,
    'NVIDIA H100 80GB HBM3' -> the h100 alias (h100-sxm); a GPU solkit has no spec of -> None."""
    from solkit._cli_profile import _gpu_named

    assert _gpu_named("NVIDIA H200").name == "h200-sxm"
    assert _gpu_named("NVIDIA A100-SXM4-80GB").name == "a100-sxm4-80gb"
    assert _gpu_named("NVIDIA H100 80GB HBM3").name == "h100-sxm"
    assert _gpu_named("NVIDIA GeForce RTX 4090") is None
    assert _gpu_named("NVIDIA A100 80GB PCIe").name == "a100-pcie-80gb"  # its words hold a100, pcie, 80gb
    assert _gpu_named("NVIDIA H200 NVL").name == "h200-nvl"
    assert _gpu_named("/tmp/h200-sxm.yaml") is None  # a name, never a path to load


def test_device_properties_late_in_a_trace_are_found(tmp_path, capsys):
    """A trace whose deviceProperties come after 2 MB of events, naming an A100 SXM4 80GB: read on that GPU."""
    import json

    events = [{"ph": "X", "cat": "kernel", "name": "k", "ts": i, "dur": 1, "pid": 0, "tid": 7, "args": {}}
              for i in range(40_000)]
    trace = {"traceEvents": events, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]}
    path = tmp_path / "late.json"
    path.write_text(json.dumps(trace))
    assert path.stat().st_size > 2_000_000
    from solkit._cli_profile import _trace_gpu

    assert _trace_gpu(str(path), None).name == "a100-sxm4-80gb"


def test_a_sweeps_launches_are_per_point():
    """An im2col conv over batches 1, 8, 64 issues 1 + 1, 8 + 1, 64 + 1 launches (its im2col one per image, then a GEMM):
    'from 2 to 65' in the repr, [2, 9, 65] as the prediction's; an eager ResNet-50 sweep over batches 1 and 64 predicts
    each point as the point alone does (its host time spread over that point's launches, not the largest's)."""
    import numpy as np

    import solkit as sk
    from solkit import models

    w = sk.ops.conv2d(np.array([1, 8, 64]), 64, 56, 56, 64, layout="im2col")
    assert "2 distinct kernels, 2 to 65 launches" in repr(w)
    assert list(sk.predict(w, "h200", warn=False).launches) == [2, 9, 65]
    swept = sk.predict(models.resnet50(np.array([1, 64]), layout="im2col"), "h200", warn=False).seconds
    alone = [sk.predict(models.resnet50(b, layout="im2col"), "h200", warn=False).seconds for b in (1, 64)]
    assert list(swept) == pytest.approx(alone, rel=1e-12)
