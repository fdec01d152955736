"""A GPU of the H200's chip borrows its neighbour bank (prediction.gpu.same_chip), and the H100 draws that chose it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import solkit as sk
from solkit import ops
from solkit.calibration import evaluate, load_measurements, summarize
from solkit.calibration.data import workload_of
from solkit.calibration.manifest import manifest
from solkit.prediction.gpu import same_chip
from solkit.sol import roofline

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
H100_DRAWS = ("h100_weak_test_seed2070.json", "h100_sample_test_seed2070.json", "h100_sdpa_test_seed2070.json",
              "h100_weak_test_seed2071.json", "h100_sample_test_seed2071.json", "h100_sdpa_test_seed2071.json",
              "h100_conv_test_seed2071.json", "h100_weak_test_seed2072.json", "h100_sample_test_seed2072.json",
              "h100_sdpa_test_seed2072.json", "h100_conv_test_seed2072.json")


@pytest.mark.parametrize("name, borrows", [
    ("h100-sxm", True),    # hopper, 132 SMs (the whitepaper's H100 SXM5), as the H200 SXM
    ("h100-nvl", True),    # hopper, 132 SMs
    ("h200-nvl", True),    # hopper, 132 SMs
    ("h100-pcie", False),  # hopper, 114 SMs: cuBLAS's heuristics see another SM count
    ("a100", False),       # ampere
    ("b200", False),       # blackwell
])
def test_the_bank_goes_where_the_chip_is_the_same(name, borrows):
    """Architecture and SM count decide; the note says so where the bank is borrowed."""
    gpu, ref = sk.load_gpu(name), sk.load_gpu("h200")
    assert same_chip(gpu, ref) is borrows
    notes = sk.predict(ops.matmul(4096, 4096, 4096), gpu).notes
    assert ("its neighbour bank (" in notes[0]) is borrows
    assert any(n.startswith("neighbour correction from") and "on h200-sxm" in n for n in notes) is borrows


def test_a_borrowed_bank_puts_the_h200s_factor_on_the_h100s_physical_kernel():
    """A 4096^3 bf16 GEMM: the factor is the H200's for the same shape (the bank's features are shapes alone), and the
    H100's kernel is its own physical kernel times that factor; without the bank (neighbours=False) the factor is 1."""
    w = ops.matmul(4096, 4096, 4096)
    h100, h200 = sk.predict(w, "h100").kernels[0], sk.predict(w, "h200").kernels[0]
    physical = sk.predict(w, "h100", neighbours=False).kernels[0]
    assert h100.neighbour == h200.neighbour != 1.0
    assert physical.neighbour == 1.0
    assert h100.seconds == pytest.approx(physical.seconds * h100.neighbour, rel=1e-12)
    assert sk.predict(w, "h100-pcie").kernels[0].neighbour == 1.0


@pytest.mark.parametrize("name", H100_DRAWS)
def test_t_sol_is_below_every_h100_timing(name):
    """The H100 SXM's datasheet (hardware_specs/h100-sxm.yaml) bounds every measured kernel: T_SOL <= measured."""
    mset = load_measurements(DATA / name)
    assert mset.meta["gpu_name"] == "NVIDIA H100 80GB HBM3"
    gpu = sk.load_gpu("h100-sxm")
    timed = [c for c in mset.cases if c.ok and c.seconds and c.primary]
    assert len(timed) == mset.meta["cases_listed"] == {"weak": 350, "sample": 600, "sdpa": 120, "conv": 150}[
        name.split("_")[1]]  # every listed case ran
    assert max(float(roofline(workload_of(c), gpu).t_sol) / c.seconds for c in timed) < 1.0


@pytest.mark.parametrize("report, name, n, section", [
    ("h100_test_seed2070_frozen.md", "h100_weak_test_seed2070.json", 350, "## Issue 31's weak families"),
    ("h100_test_seed2070_frozen.md", "h100_sample_test_seed2070.json", 600, "## The default mix"),
    ("h100_test_seed2070_frozen.md", "h100_sdpa_test_seed2070.json", 120, "## SDPA as users call it"),
    ("h100_test_seed2071_frozen.md", "h100_weak_test_seed2071.json", 350, "## Issue 31's weak families"),
    ("h100_test_seed2071_frozen.md", "h100_sample_test_seed2071.json", 600, "## The default mix"),
    ("h100_test_seed2071_frozen.md", "h100_sdpa_test_seed2071.json", 120, "## SDPA as users call it"),
    ("h100_test_seed2071_frozen.md", "h100_conv_test_seed2071.json", 150, "## Convolutions, dense and grouped"),
    ("h100_test_seed2072_frozen.md", "h100_weak_test_seed2072.json", 350, "## Issue 31's weak families"),
    ("h100_test_seed2072_frozen.md", "h100_sample_test_seed2072.json", 600, "## The default mix"),
    ("h100_test_seed2072_frozen.md", "h100_sdpa_test_seed2072.json", 120, "## SDPA as users call it"),
    ("h100_test_seed2072_frozen.md", "h100_conv_test_seed2072.json", 150, "## Convolutions, dense and grouped")])
def test_the_h100_reports_are_todays_model_on_their_data(report, name, n, section, monkeypatch):
    """An H100 report's 'all' row of each draw is today's h100-sxm model on the file, to the printed 0.1%, and its
    physical columns are the model without a bank (39c5bec's, which seed 2070 was frozen for)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.chdir("/")  # the report's paths are its own, not the working folder's
    import frozen_report

    text = (DATA / report).read_text()
    block = text[text.index(section):]
    cells = [c.strip() for c in next(line for line in block.splitlines() if line.startswith("| **all**")).split("|")]
    overall = summarize(evaluate(load_measurements(DATA / name), "h100-sxm"))[-1]
    assert overall.group == "all" and overall.n == n == int(cells[2])
    assert (f"{overall.median_error:.1%}", f"{overall.p90_error:.1%}") == (cells[3], cells[4])
    rows = frozen_report.rows(str(DATA / name), sk.load_gpu("h100-sxm"))
    expected = frozen_report.table(rows).splitlines()[-1]
    assert expected.split("|")[5:7] == block.split("| **all**", 1)[1].split("\n", 1)[0].split("|")[4:6]


@pytest.mark.parametrize("report, draws, section, quoted", [
    # README, CHANGELOG, docs/accuracy.md and prediction/gpu.py quote these: shipped / physical, median / p90
    ("h100_test_seed2070_frozen.md", ("weak", "sample", "sdpa"), "## All three draws",
     ("8.6%", "36.2%", "13.0%", "49.7%")),
    ("h100_test_seed2071_frozen.md", ("weak", "sample", "sdpa", "conv"), "## All four draws",
     ("9.7%", "38.8%", "13.2%", "52.2%")),
    ("h100_test_seed2072_frozen.md", ("weak", "sample", "sdpa", "conv"), "## All four draws",
     ("8.8%", "44.7%", "12.4%", "53.7%"))])
def test_the_quoted_h100_figures_are_the_reports_all_draws_rows(report, draws, section, quoted, monkeypatch):
    """The headline figures are each report's every-draw row, and that row is today's model on the draws together."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import frozen_report

    seed = report.split("seed")[1][:4]
    rows = [r for d in draws for r in frozen_report.rows(str(DATA / f"h100_{d}_test_seed{seed}.json"),
                                                          sk.load_gpu("h100"))]
    cells = [c.strip() for c in frozen_report.table(rows).splitlines()[-1].split("|")]
    assert tuple(cells[3:7]) == quoted
    text = (DATA / report).read_text()
    row = next(line for line in text[text.index(section):].splitlines() if line.startswith("| **all**"))
    assert [c.strip() for c in row.split("|")][3:7] == list(quoted)


def test_the_physical_model_of_a_borrowing_gpu_names_no_bank():
    """predict(..., neighbours=False) on the H100: no bank applied, and its note says so (no 'neighbour bank')."""
    w = ops.matmul(4096, 4096, 4096)
    shipped, physical = sk.predict(w, "h100").notes, sk.predict(w, "h100", neighbours=False).notes
    assert "its neighbour bank (" in shipped[0] and "neighbour bank" not in physical[0]
    assert len(physical) == 1 and physical[0].endswith("floor (4 us) and its kernel efficiencies and latencies")


def test_the_reports_commands_parse_their_arguments(tmp_path):
    """frozen_report.py takes a GPU name for --spec and refuses an unknown one with a did-you-mean; heldout_families.py
    --help prints its usage and writes no file (it had written one named '--help')."""
    def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=tmp_path,
                              capture_output=True, text=True)

    conv = str(DATA / "h100_conv_test_seed2071.json")
    bad = run("frozen_report.py", "--spec", "h10", conv)
    assert bad.returncode == 2 and "did you mean 'h100'?" in bad.stderr
    good = run("frozen_report.py", "--spec", "h100", conv)
    text = (DATA / "h100_test_seed2071_frozen.md").read_text()
    reported = next(line for line in text[text.index("## Convolutions"):].splitlines() if line.startswith("| **all**"))
    assert good.returncode == 0 and good.stdout.splitlines()[-1] == reported  # the report's conv row
    helped = run("heldout_families.py", "--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: heldout_families.py")
    assert not list(tmp_path.iterdir())
    bare = run("heldout_families.py")
    assert bare.returncode == 2 and "give OUT.json" in bare.stderr


def test_the_bank_and_the_fits_are_the_fit_gpus():
    """Every kernel file the fit reads or the bank holds was measured on the fit's GPU (the H200): another GPU's draws
    are reported, never fitted or banked."""
    kernels = manifest().select(measures="kernels")
    used = [e for e in kernels if e.bank or e.fits]
    assert len(used) > 10 and {e.gpu for e in used} == {"NVIDIA H200"}


def test_another_gpus_draws_stay_out_of_the_h200s_reports():
    """The sampled report and the newest frozen test are the H200's draws: an H100 file is neither."""
    from solkit.calibration.__main__ import SAMPLED_SETS, frozen_test

    shown = {Path(path).name for _, path in SAMPLED_SETS}
    assert shown and shown.isdisjoint(H100_DRAWS)
    assert manifest().entry(Path(frozen_test()).name).gpu == "NVIDIA H200"
    for name in H100_DRAWS:
        e = manifest().entry(name)
        seed, after, role = {"2070": (2070, "39c5bec", "spent"), "2071": (2071, "3b5dd64", "test"),
                             "2072": (2072, "9a326bf", "test")}[name.split("seed")[1][:4]]
        h100 = "NVIDIA H100 80GB HBM3"
        assert (e.gpu, e.seed, e.after, e.role, e.bank, e.fits) == (h100, seed, after, role, False, ())
        meta = json.loads((DATA / name).read_text())["meta"]
        assert meta["args"]["sample_seed"] == seed and meta["gpu_name"] == e.gpu
        frozen = {"39c5bec": "2026-12-04T23:35:13", "3b5dd64": "2026-12-06T07:52:28",
                  "9a326bf": "2026-12-06T20:30:33"}  # the commits' dates (UTC)
        assert (e.date or "") > frozen[after]


def test_the_seed_2072_repeat_is_the_reports_run_to_run_floor():
    """data/h100_test_seed2072_frozen.md's run to run: the default mix timed twice differs per case by 3.4% / 12.8%
    median / p90, at most 193.8% (exp(|log(second / first)|) - 1 over the 600 cases), the largest an NHWC depthwise
    conv of 183 channels; every case of both runs ran."""
    first, second = (json.loads((DATA / f"h100_sample_{kind}_seed2072.json").read_text()) for kind in ("test", "repeat"))
    a = {c["id"]: c["seconds"] for c in first["cases"] if c["ok"]}
    b = {c["id"]: c["seconds"] for c in second["cases"] if c["ok"]}
    assert len(a) == len(b) == 600 and a.keys() == b.keys()
    change = {i: math.expm1(abs(math.log(b[i] / a[i]))) for i in a}
    values = np.array(list(change.values()))
    assert (f"{np.median(values):.1%}", f"{np.percentile(values, 90):.1%}", f"{values.max():.1%}") == ("3.4%", "12.8%",
                                                                                                      "193.8%")
    worst = max(change, key=change.get)
    assert "in_channels=183" in worst and "groups=183" in worst and "layout=nhwc" in worst
    text = (DATA / "h100_test_seed2072_frozen.md").read_text()
    assert "differ by **3.4% / 12.8%** median / p90" in text


@pytest.mark.parametrize("report, run, before", [
    ("h100_test_seed2071_frozen.md", "h100_weak_test_seed2071.json", "h100_sample_test_seed2070.json"),
    ("h100_test_seed2072_frozen.md", "h100_weak_test_seed2072.json", "h100_weak_test_seed2071.json")])
def test_the_h100_reports_ceilings_are_their_runs_over_the_datasheet(report, run, before):
    """An H100 report's ceilings table: each measured ceiling of its weak run, its share of the H100 SXM's datasheet
    (hardware_specs/h100-sxm.yaml: 3.35 TB/s; 989.4 TFLOP/s bf16 and fp16, 1978.9 fp8 and int8, 494.7 tf32), the
    previous run's share and the H200 spec's measured share of its own datasheet (4.8 TB/s, the same tensor peaks)."""
    import yaml

    sheet = {"copy bandwidth": 3.35e12, "bf16": 989.4e12, "fp16": 989.4e12, "fp8_e4m3": 1978.9e12, "int8": 1978.9e12,
             "tf32": 494.7e12}
    h200 = yaml.safe_load((ROOT / "hardware_specs" / "h200-sxm.yaml").read_text())["measured"]
    borrowed = {"copy bandwidth": h200["copy_bandwidth_tb_s"] / 4.8,
                **{p: h200["matmul_rate_tflops"][p.split("_")[0]] * 1e12 / sheet[p] for p in sheet if p != "copy bandwidth"}}

    def measured(name: str) -> dict[str, float]:
        c = json.loads((DATA / name).read_text())["ceilings"]
        return {"copy bandwidth": c["copy_bandwidth_bytes_per_s"], "launch": c["launch_floor_s"],
                **{p: c["matmul_flops_per_s"][p] for p in sheet if p != "copy bandwidth"}}

    now, then = measured(run), measured(before)
    text = (DATA / report).read_text()
    table = text[text.index("## The ceilings"):].split("\n## ", 1)[0]
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")]
                                              for line in table.splitlines() if line.startswith("| ") and "---" not in line)}
    for name, peak in sheet.items():
        cells = rows[name if name == "copy bandwidth" else f"{name} matmul"]
        value = f"{now[name] / 1e12:.2f} TB/s" if name == "copy bandwidth" else f"{now[name] / 1e12:.1f} TFLOP/s"
        assert cells == [value, f"{now[name] / peak:.1%}", f"{then[name] / peak:.1%}", f"{borrowed[name]:.1%}"], name
    assert rows["launch floor (do_bench)"] == [f"{now['launch'] * 1e6:.2f} us", "", f"{then['launch'] * 1e6:.2f} us",
                                               f"{h200['launch_floor_us']:.2f} us"]
