"""solkit.plot.profile_roofline and time_breakdown on the real H200 Llama prefill trace (data/profiles)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

import solkit as sk  # noqa: E402
from solkit import errors, plot  # noqa: E402
from solkit.plot.profile_charts import MAX_AREA  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PREFILL = ROOT / "data" / "profiles" / "llama_prefill.json.gz"
H200_BW_TB_S = 4.8  # datasheet: 4.8 TB/s
H200_BF16_TFLOPS = 989.4  # datasheet: 989.4 TFLOP/s bf16 dense


@pytest.fixture(scope="module")
def prof():
    """The Llama prefill step on the H200."""
    return sk.load_profile(PREFILL, gpu="h200")


@pytest.fixture(scope="module")
def raw_kernels() -> list[dict]:
    """The trace's "cat": "kernel" events, read with json alone, in time order."""
    with gzip.open(PREFILL, "rt") as f:
        events = json.load(f)["traceEvents"]
    return sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])


@pytest.fixture(scope="module")
def breakdown(prof) -> Figure:
    return plot.time_breakdown(prof)


@pytest.fixture(scope="module")
def roof(prof) -> Figure:
    return plot.profile_roofline(prof)


def _gids(fig: Figure) -> list[str]:
    return [str(a.get_gid()) for a in fig.axes[0].get_children() if a.get_gid()]


def _artist(fig: Figure, gid: str):
    found = [a for a in fig.axes[0].get_children() if a.get_gid() == gid]
    assert len(found) == 1, (gid, _gids(fig))
    return found[0]


def _bar_us(fig: Figure, label: str) -> dict[str, float]:
    """kind -> width (us) of the segments of one bar (gid "bar:<kind>:<label>")."""
    out = {}
    for a in fig.axes[0].patches:
        gid = str(a.get_gid())
        if gid.startswith("bar:") and gid.split(":", 2)[2] == label:
            out[gid.split(":", 2)[1]] = a.get_width()
    return out


def _group_calls(prof, group: str):
    return [c for c in prof.calls if c.group == group]


# ---- time_breakdown -------------------------------------------------------------------------


def test_breakdown_is_a_figure_with_a_bar_per_group_and_idle(prof, breakdown):
    """Nine op groups (fewer than top=12, so no "other") and the idle bar, largest group on top."""
    assert isinstance(breakdown, Figure) and len(breakdown.axes) == 1
    groups = [r["group"] for r in prof.groups()]
    assert len(groups) == 9
    ticks = [t.get_text() for t in breakdown.axes[0].get_yticklabels()]
    assert ticks == groups + ["idle"]
    for g in groups:
        assert f"value:{g}" in _gids(breakdown)
    assert "bar:idle:idle" in _gids(breakdown) and "value:idle" in _gids(breakdown)
    assert breakdown.axes[0].get_xlabel() == "time (us)"


def test_largest_bar_is_the_groups_measured_time(prof, raw_kernels, breakdown):
    """The matmul bar (the largest group) is as long as its calls' seconds, which are its kernels' raw `dur` sum."""
    group = prof.groups()[0]["group"]
    assert group == "matmul"
    calls = _group_calls(prof, group)
    calls_us = math.fsum(c.seconds for c in calls) * 1e6
    # the same kernels' durations, read from the raw trace: kernels and raw events pair up in time order
    assert [k.name for k in prof.kernels] == [e["name"] for e in raw_kernels]
    raw_us = math.fsum(raw_kernels[i]["dur"] for c in calls for i in c.kernels)
    assert calls_us == pytest.approx(raw_us, rel=1e-12)
    assert sum(_bar_us(breakdown, group).values()) == pytest.approx(raw_us, rel=1e-9)  # 4,853.6 us


def test_all_group_bars_sum_to_the_raw_kernel_time(prof, raw_kernels, breakdown):
    """Every group bar together is the trace's kernel time: sum of `dur` = 7,433.947 us."""
    total = sum(sum(_bar_us(breakdown, r["group"]).values()) for r in prof.groups())
    assert total == pytest.approx(math.fsum(e["dur"] for e in raw_kernels), rel=1e-9)
    assert total == pytest.approx(7433.947, abs=1e-6)  # manifest.json kernel_dur_us of llama_prefill, summed on the H200


def test_segments_are_floor_prediction_and_excess(prof, breakdown):
    """matmul: T_SOL 3,830.8 us, then up to the measured 4,853.6 (the prediction, 5,767.4, is above it); pointwise:
    T_SOL 688.7, prediction 1,107.3 - 688.7 = 418.6, measured above it 1,286.5 - 1,107.3 = 179.2 us."""
    rows = {r["group"]: r for r in prof.groups()}
    mm = rows["matmul"]
    assert mm["predicted_s"] > mm["measured_s"] > mm["t_sol_s"]
    assert _bar_us(breakdown, "matmul") == pytest.approx(
        {"sol": mm["t_sol_s"] * 1e6, "predicted": (mm["measured_s"] - mm["t_sol_s"]) * 1e6})
    pw = rows["pointwise"]
    assert pw["measured_s"] > pw["predicted_s"] > pw["t_sol_s"]
    assert _bar_us(breakdown, "pointwise") == pytest.approx(
        {"sol": pw["t_sol_s"] * 1e6, "predicted": (pw["predicted_s"] - pw["t_sol_s"]) * 1e6,
         "above": (pw["measured_s"] - pw["predicted_s"]) * 1e6})
    assert _bar_us(breakdown, "pointwise")["above"] == pytest.approx(pw["above_prediction_s"] * 1e6)


def test_idle_bar_and_title(prof, breakdown):
    """The idle bar is span minus busy time (11.007 - 7.434 ms); the title gives span, coverage and MFU."""
    assert _bar_us(breakdown, "idle") == pytest.approx({"idle": (prof.span_seconds - prof.busy_seconds) * 1e6})
    title = breakdown.axes[0].get_title()
    assert "span 11.007 ms" in title and "coverage 100.0%" in title and f"MFU {prof.mfu:.1%}" in title
    assert "MFU 34.1%" in title


def test_top_folds_the_rest_into_other(prof):
    """top=3: matmul, pointwise, attention, then "other (6 groups)" holding the rest's measured time."""
    fig = plot.time_breakdown(prof, top=3)
    rows = prof.groups()
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert ticks == [r["group"] for r in rows[:3]] + ["other (6 groups)", "idle"]
    rest = math.fsum(r["measured_s"] for r in rows[3:]) * 1e6
    assert sum(_bar_us(fig, "other (6 groups)").values()) == pytest.approx(rest)


def test_unmodeled_groups_are_grey(prof):
    """A group with no solkit operator is one grey 'unmodeled' segment of its measured time."""
    calls = tuple(dataclasses.replace(c, operator=None, workload=None, t_sol=None, predicted=None, reason="test")
                  if c.op == "aten::cat" else c for c in prof.calls)
    fig = plot.time_breakdown(dataclasses.replace(prof, calls=calls))
    cat_s = math.fsum(c.seconds for c in calls if c.op == "aten::cat")
    assert _bar_us(fig, "aten::cat (unmodeled)") == pytest.approx({"unmodeled": cat_s * 1e6})
    assert _artist(fig, "value:aten::cat (unmodeled)").get_text().endswith("unmodeled")


@pytest.mark.parametrize("top, error", [(0, errors.OptionError), (-1, errors.OptionError), (2.5, errors.ArgumentTypeError),
                                        (True, errors.ArgumentTypeError), (None, errors.ArgumentTypeError)])
def test_breakdown_top_must_be_positive(prof, top, error):
    """top is a positive integer."""
    with pytest.raises(error, match="top must be a positive integer"):
        plot.time_breakdown(prof, top=top)


# ---- profile_roofline ---------------------------------------------------------------------


def _drawable(prof) -> dict[str, tuple[float, float, float, float]]:
    """group -> (executed FLOPs, bytes, T_SOL, measured s), its calls summed, for groups with FLOPs and bytes."""
    out: dict[str, list[float]] = {}
    for c in prof.calls:
        if c.workload is None:
            continue
        acc = out.setdefault(c.group, [0.0, 0.0, 0.0, 0.0])
        acc[0] += float(c.workload.executed_flops)
        acc[1] += float(c.workload.bytes)
        acc[2] += float(c.t_sol)
        acc[3] += c.seconds
    return {g: (f, b, t, s) for g, (f, b, t, s) in out.items() if f > 0 and b > 0}


def test_roofline_has_roofs_points_and_note(prof, roof):
    """Memory roof and the bf16 (mfu_precision) roof, bound and achieved points, and a note of what is left out."""
    assert isinstance(roof, Figure) and len(roof.axes) == 1
    gids = _gids(roof)
    for gid in ("roof:memory", "roof:bf16:matrix", "ridge", "points:compute", "points:memory", "points:measured",
                "note:left-out", "gap:matmul", "measured:copy", "measured:bf16:matrix"):
        assert gid in gids
    assert not [g for g in gids if g.startswith("roof:") and g not in ("roof:memory", "roof:bf16:matrix")]
    assert np.asarray(_artist(roof, "roof:bf16:matrix").get_ydata(), float) == pytest.approx([H200_BF16_TFLOPS] * 2)


def test_one_point_pair_per_group_with_flops_and_bytes(prof, roof):
    """matmul, pointwise, attention, reduce, silu: 5 groups; copy, concat, gather, fill (no FLOPs) are noted, largest first."""
    drawable = _drawable(prof)
    assert sorted(drawable) == ["attention", "matmul", "pointwise", "reduce", "silu"]
    measured = np.asarray(_artist(roof, "points:measured").get_offsets())
    bound = np.concatenate([np.asarray(_artist(roof, f"points:{b}").get_offsets()) for b in ("compute", "memory")])
    assert len(measured) == len(bound) == 5
    note = _artist(roof, "note:left-out").get_text()
    assert note.startswith("Not on the chart: 4 group(s) without FLOPs or bytes (copy, concat, gather, fill)")  # by time
    left = math.fsum(c.seconds for c in prof.calls if c.group not in drawable) / prof.kernel_seconds
    assert f"{left:.1%} of the kernel time" in note


def test_matmul_point_is_its_calls_summed(prof, roof):
    """matmul sits at its executed FLOPs / bytes, bound at FLOPs / T_SOL, achieved at FLOPs / measured (TFLOP/s)."""
    flops, nbytes, t_sol, seconds = _drawable(prof)["matmul"]
    x = flops / nbytes
    bound = np.asarray(_artist(roof, "points:compute").get_offsets())
    hit = bound[np.isclose(bound[:, 0], x)]
    assert hit[:, 1] == pytest.approx([flops / t_sol / 1e12])
    assert flops / t_sol / 1e12 <= H200_BF16_TFLOPS  # on or under the roof
    measured = _artist(roof, "points:measured")
    offsets = np.asarray(measured.get_offsets())
    i = int(np.flatnonzero(np.isclose(offsets[:, 0], x))[0])
    assert offsets[i, 1] == pytest.approx(flops / seconds / 1e12)
    assert measured.get_sizes()[i] == pytest.approx(MAX_AREA)  # the group with the most time has the largest marker
    assert _artist(roof, "label:matmul").get_text() == f"matmul  ({t_sol / seconds:.0%} of SOL)" == "matmul  (79% of SOL)"


def test_marker_area_follows_measured_time(prof, roof):
    """Areas are proportional to the group's measured time (floored at a visible minimum)."""
    drawable = _drawable(prof)
    offsets = np.asarray(_artist(roof, "points:measured").get_offsets())
    sizes = _artist(roof, "points:measured").get_sizes()
    biggest = max(s for *_, s in drawable.values())
    for (flops, nbytes, _t, seconds) in drawable.values():
        i = int(np.flatnonzero(np.isclose(offsets[:, 0], flops / nbytes))[0])
        assert sizes[i] == pytest.approx(max(14.0, MAX_AREA * seconds / biggest))


def test_roofline_top(prof):
    """top=2 draws the two groups with the most time (matmul, pointwise) and says how many there were."""
    fig = plot.profile_roofline(prof, top=2)
    assert len(_artist(fig, "points:measured").get_offsets()) == 2
    assert "gap:matmul" in _gids(fig) and "gap:pointwise" in _gids(fig) and "gap:attention" not in _gids(fig)
    assert _artist(fig, "note:left-out").get_text().startswith("The 2 groups with the most time of 5 that have FLOPs")
    with pytest.raises(errors.OptionError, match="top must be a positive integer or None, got 0"):
        plot.profile_roofline(prof, top=0)


def test_faster_than_dram_sol_is_marked_l2(prof):
    """A group measured below its T_SOL gets "(L2*)", no fraction above 1, and the note explains it."""
    calls = tuple(dataclasses.replace(c, seconds=c.t_sol / 2) if c.group == "silu" else c for c in prof.calls)
    fig = plot.profile_roofline(dataclasses.replace(prof, calls=calls))
    assert _artist(fig, "label:silu (L2*)").get_text() == "silu (L2*)"
    assert "likely L2-resident" in _artist(fig, "note:left-out").get_text()
    bars = plot.time_breakdown(dataclasses.replace(prof, calls=calls))
    assert _artist(bars, "value:silu").get_text().endswith("L2*")


def test_precisions_and_axes(prof):
    """precisions picks the roofs; ax draws into a given axes and returns its figure."""
    fig = Figure()
    ax1, ax2 = fig.subplots(1, 2)
    assert plot.profile_roofline(prof, ax=ax1, precisions=["bf16", "fp32:vector"]) is fig
    assert plot.time_breakdown(prof, ax=ax2) is fig
    assert sorted(str(a.get_gid()) for a in ax1.lines if str(a.get_gid()).startswith("roof:")) == [
        "roof:bf16:matrix", "roof:fp32:vector", "roof:memory"]
    assert any(str(p.get_gid()) == "bar:idle:idle" for p in ax2.patches)


def test_not_a_profile():
    """A workload is not a profile: ArgumentTypeError naming profile."""
    for chart in (plot.profile_roofline, plot.time_breakdown):
        with pytest.raises(errors.ArgumentTypeError, match="profile must be a solkit Profile"):
            chart(sk.ops.matmul(8, 8, 8))


@pytest.mark.parametrize("source", ["llama_decode.json.gz", "bert_train.json.gz", "ncu_ops.csv.gz"])
def test_other_fixtures_draw(source):
    """The decode step, a training step (unmodeled groups) and an all-unmodeled ncu file draw without warnings."""
    p = sk.load_profile(ROOT / "data" / "profiles" / source, gpu="h200")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot.time_breakdown(p)
        fig = plot.profile_roofline(p)
    if source == "ncu_ops.csv.gz":  # no group maps: nothing to draw, the note says why
        assert len(_artist(fig, "points:measured").get_offsets()) == 0
        assert "7 unmodeled" in _artist(fig, "note:left-out").get_text()


def test_save_png(prof, roof, breakdown, tmp_path):
    """Both charts save as non-empty PNGs."""
    for name, fig in (("roof.png", roof), ("bars.png", breakdown)):
        written = plot.save(fig, tmp_path / name)
        assert written == str(tmp_path / name)
        data = Path(written).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_missing_matplotlib(monkeypatch, prof):
    """Without matplotlib: PlotDependencyError with the install hint, from both charts."""
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.setitem(sys.modules, name, None)
    for chart in (plot.profile_roofline, plot.time_breakdown):
        with pytest.raises(plot.PlotDependencyError, match=r"pip install 'solkit\[plot\]'"):
            chart(prof)


def test_exports_and_lazy_imports():
    """solkit.plot exports both charts; importing it loads neither matplotlib nor the profile readers."""
    assert {"profile_roofline", "time_breakdown"} <= set(plot.__all__)
    code = ("import solkit, solkit.plot, sys; assert 'matplotlib' not in sys.modules; "
            "assert 'solkit.profile' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
