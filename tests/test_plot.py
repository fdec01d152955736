"""solkit.plot: the roofline chart. Expected values typed from the H200 datasheet (4.8 TB/s, 989.4 TFLOP/s bf16 dense)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

import solkit as sk  # noqa: E402
from solkit import errors, ops, plot  # noqa: E402
from solkit.standard import standard_workloads  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

H200_BW_TB_S = 4.8  # datasheet: 4.8 TB/s
H200_BF16_TFLOPS = 989.4  # datasheet: 989.4 TFLOP/s bf16 dense (1,979 sparse / 2)
H200_FP8_TFLOPS = 1978.9
H200_FP32_VECTOR_TFLOPS = 67.0


def _artist(fig: Figure, gid: str):
    """The one artist of the chart with this gid."""
    found = [a for a in fig.axes[0].get_children() if a.get_gid() == gid]
    assert len(found) == 1, (gid, [a.get_gid() for a in fig.axes[0].get_children() if a.get_gid()])
    return found[0]


def _n_points(fig: Figure) -> int:
    """Workload markers drawn at their bound (compute- plus memory-bound)."""
    ax = fig.axes[0]
    return sum(len(c.get_offsets()) for c in ax.collections if c.get_gid() in ("points:compute", "points:memory"))


@pytest.fixture(scope="module")
def standard_fig() -> Figure:
    """The standard operators on the H200."""
    return plot.roofline(standard_workloads(), "h200")


def test_returns_figure(standard_fig):
    """roofline returns a matplotlib Figure of one axes."""
    assert isinstance(standard_fig, Figure)
    assert len(standard_fig.axes) == 1


def test_axes_log_log_with_units(standard_fig):
    """Both axes are logarithmic and name their units."""
    ax = standard_fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "arithmetic intensity (FLOP/byte)"
    assert ax.get_ylabel() == "performance (TFLOP/s)"
    assert ax.get_title() == "Roofline: NVIDIA H200 SXM 141GB (dense peaks)"


def test_axis_ranges(standard_fig):
    """x spans 0.1 to 10^4 FLOP/B; y reaches 1.3x the top roof (fp8: 1.3 * 1978.9 = 2572.6 TFLOP/s)."""
    ax = standard_fig.axes[0]
    assert ax.get_xlim() == pytest.approx((0.1, 1e4))
    assert ax.get_ylim()[1] == pytest.approx(1.3 * H200_FP8_TFLOPS)
    assert ax.get_ylim()[0] == pytest.approx(0.1 * H200_BW_TB_S)  # the memory roof at x = 0.1: 0.48 TFLOP/s


def test_one_point_per_workload(standard_fig):
    """Each of the 16 standard operators is one marker."""
    assert _n_points(standard_fig) == len(standard_workloads()) == 16


def test_memory_roof_through_bandwidth(standard_fig):
    """The memory roof is y = 4.8 x (TFLOP/s): at 1 FLOP/B it reads 4.8 TFLOP/s."""
    line = _artist(standard_fig, "roof:memory")
    x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    assert y / x == pytest.approx(np.full(len(x), H200_BW_TB_S))
    # on log-log axes the straight segment through its ends, read at x = 1
    y_at_1 = np.exp(np.interp(0.0, np.log(x), np.log(y)))
    assert y_at_1 == pytest.approx(H200_BW_TB_S)
    # it runs up to the highest ridge: fp8 1978.9 / 4.8 = 412.27 FLOP/B
    assert x.max() == pytest.approx(H200_FP8_TFLOPS / H200_BW_TB_S)


@pytest.mark.parametrize(
    "gid, tflops",
    [("roof:bf16:matrix", H200_BF16_TFLOPS), ("roof:fp8:matrix", H200_FP8_TFLOPS), ("roof:tf32:matrix", 494.7),
     ("roof:fp32:vector", H200_FP32_VECTOR_TFLOPS)],
)
def test_compute_roofs(standard_fig, gid, tflops):
    """Each default compute roof is horizontal at its dense datasheet peak and starts at its ridge (peak / 4.8)."""
    line = _artist(standard_fig, gid)
    assert np.asarray(line.get_ydata(), float) == pytest.approx(np.full(2, tflops))
    assert min(line.get_xdata()) == pytest.approx(tflops / H200_BW_TB_S)  # bf16: 989.4 / 4.8 = 206.1 FLOP/B


def test_roof_and_ridge_labels(standard_fig):
    """The bf16 roof's label gives its value and its ridge point: 989.4 / 4.8 = 206 FLOP/B; the memory roof 'HBM3e 4.8 TB/s'."""
    assert _artist(standard_fig, "label:roof:bf16:matrix").get_text() == "bf16  989.4 TFLOP/s   ridge 206 FLOP/B"
    assert _artist(standard_fig, "label:roof:memory").get_text() == "HBM3e 4.8 TB/s"
    ridges = _artist(standard_fig, "ridge").get_offsets()
    assert sorted(np.asarray(ridges)[:, 0]) == pytest.approx(sorted(t / H200_BW_TB_S for t in (1978.9, 989.4, 494.7, 67)))


def test_measured_ceilings(standard_fig):
    """The H200's measured ceilings are dashed: bf16 matmul 708.5 TFLOP/s, copy 4.296 TB/s (hardware_specs/h200-sxm.yaml)."""
    mm = _artist(standard_fig, "measured:bf16:matrix")
    assert np.asarray(mm.get_ydata(), float) == pytest.approx([708.5, 708.5])
    copy = _artist(standard_fig, "measured:copy")
    assert np.asarray(copy.get_ydata(), float) / np.asarray(copy.get_xdata(), float) == pytest.approx([4.296, 4.296])
    assert mm.get_linestyle() == copy.get_linestyle() == "--"


def test_measured_ceilings_can_be_hidden():
    """show_measured_ceilings=False draws none; a GPU without measurements has none."""
    for fig in (plot.roofline(ops.matmul(4096, 4096, 4096), "h200", show_measured_ceilings=False),
                plot.roofline(ops.matmul(4096, 4096, 4096), "a100")):
        assert not [a for a in fig.axes[0].get_children() if str(a.get_gid()).startswith("measured:")]


def test_points_at_bound(standard_fig):
    """gemm 8192^3 sits at intensity 2*8192^3 / (3*8192^2*2 B) = 2730.7 FLOP/B and the bf16 roof, compute-coloured."""
    offsets = np.asarray(_artist(standard_fig, "points:compute").get_offsets())
    hit = offsets[np.isclose(offsets[:, 0], 2 * 8192**3 / (3 * 8192**2 * 2))]
    assert hit[:, 1] == pytest.approx([H200_BF16_TFLOPS])
    # rmsnorm 8192 x 4096 bf16: ~1 FLOP/B, memory-bound, on the memory roof
    mem = np.asarray(_artist(standard_fig, "points:memory").get_offsets())
    assert mem[:, 1] / mem[:, 0] == pytest.approx(np.full(len(mem), H200_BW_TB_S), rel=0.25)


def test_default_roofs_skip_missing_precisions():
    """An A100 has no fp8: the default roofs are bf16 312, tf32 156 and fp32 vector 19.5 TFLOP/s."""
    fig = plot.roofline(ops.matmul(4096, 4096, 4096), "a100")
    gids = sorted(a.get_gid() for a in fig.axes[0].lines if str(a.get_gid()).startswith("roof:"))
    assert gids == ["roof:bf16:matrix", "roof:fp32:vector", "roof:memory", "roof:tf32:matrix"]
    assert np.asarray(_artist(fig, "roof:bf16:matrix").get_ydata(), float) == pytest.approx([312.0, 312.0])


def test_precisions_argument():
    """precisions picks the roofs: a name is the matrix unit, 'fp32:vector' or a pair names the unit."""
    fig = plot.roofline(ops.matmul(4096, 4096, 4096), "h200", precisions=["bf16", "fp32:vector"])
    gids = sorted(a.get_gid() for a in fig.axes[0].lines if str(a.get_gid()).startswith("roof:"))
    assert gids == ["roof:bf16:matrix", "roof:fp32:vector", "roof:memory"]
    fig = plot.roofline(ops.matmul(4096, 4096, 4096), "h200", precisions=("fp16", "matrix"))
    assert np.asarray(_artist(fig, "roof:fp16:matrix").get_ydata(), float) == pytest.approx([989.4, 989.4])
    with pytest.raises(errors.UnsupportedPrecisionError):
        plot.roofline(ops.matmul(4096, 4096, 4096), "a100", precisions=["fp8"])


def test_measured_points_and_gap():
    """A measured time adds a hollow marker at executed FLOPs / seconds, a gap line, and the SOL fraction."""
    w = ops.matmul(8192, 8192, 8192)  # 2*8192^3 = 1.0995e12 FLOP; T_SOL = 1.0995e12 / 989.4e12 = 1.1113 ms
    fig = plot.roofline({"gemm": w}, "h200", measured={"gemm": 1.40e-3})
    hollow = np.asarray(_artist(fig, "points:measured").get_offsets())
    assert hollow[0, 1] == pytest.approx(2 * 8192**3 / 1.40e-3 / 1e12)  # 785.4 TFLOP/s
    gap = _artist(fig, "gap:gemm")
    assert np.asarray(gap.get_ydata(), float) == pytest.approx([H200_BF16_TFLOPS, 2 * 8192**3 / 1.40e-3 / 1e12])
    assert _artist(fig, "label:gemm").get_text() == "gemm  (79% of SOL)"  # 1.1113 / 1.40 = 0.794
    assert _n_points(fig) == 1


def test_measured_errors():
    """measured must name plotted labels and hold positive seconds."""
    w = {"gemm": ops.matmul(1024, 1024, 1024)}
    with pytest.raises(errors.OptionError, match="'gmem'"):
        plot.roofline(w, "h200", measured={"gmem": 1e-3})
    with pytest.raises(errors.MeasurementError, match="positive"):
        plot.roofline(w, "h200", measured={"gemm": 0.0})


def test_workloads_forms():
    """One Workload (labelled by its name), a list (duplicates numbered) and a dict all plot one point each."""
    a, b = ops.matmul(4096, 4096, 4096), ops.rmsnorm(8192, 4096)
    assert _n_points(plot.roofline(a, "h200")) == 1
    fig = plot.roofline([a, b, a], "h200")
    assert _n_points(fig) == 3
    # coinciding points share one label, "label:matmul / matmul (2)"
    gids = [t.get_gid() for t in fig.axes[0].texts if str(t.get_gid()).startswith("label:")]
    names = {n for gid in gids for n in gid[len("label:"):].split(" / ")}
    assert {"matmul", "matmul (2)", "rmsnorm"} <= names
    assert _n_points(plot.roofline({"x": a, "y": b}, "h200")) == 2


def test_sweep_raises_option_error():
    """A sweep is not a point: OptionError naming the label."""
    sweep = ops.matmul(np.array([1024, 2048]), 4096, 4096)
    with pytest.raises(errors.OptionError, match="'wide'.*sweep"):
        plot.roofline({"wide": sweep}, "h200")


def test_unknown_gpu():
    """An unknown GPU name raises UnknownGPUError (a LookupError)."""
    with pytest.raises(errors.UnknownGPUError):
        plot.roofline(ops.matmul(1024, 1024, 1024), "h2000")


def test_wrong_workload_type():
    """A number where a workload belongs is an ArgumentTypeError naming it."""
    with pytest.raises(errors.ArgumentTypeError, match="'x'"):
        plot.roofline({"x": 3}, "h200")


def test_zero_flop_workload_warns_and_is_left_out():
    """An embedding gather (0 FLOPs) has no place on log axes: a SolkitWarning, and no point."""
    with pytest.warns(errors.SolkitWarning, match="'emb'"):
        fig = plot.roofline({"emb": ops.embedding(8192, 128256, 4096), "mm": ops.matmul(4096, 4096, 4096)}, "h200")
    assert _n_points(fig) == 1


def test_draw_into_given_axes():
    """With ax, the chart goes into those axes and their figure comes back."""
    fig = Figure()
    ax1, ax2 = fig.subplots(1, 2)
    out = plot.roofline(ops.matmul(4096, 4096, 4096), "h200", ax=ax2, title="mine")
    assert out is fig
    assert ax2.get_title() == "mine" and ax2.get_xscale() == "log"
    assert ax1.get_xscale() == "linear"


def test_save_png(tmp_path, standard_fig):
    """save writes a non-empty PNG (creating the folder) at 150 dpi: 9 x 6 in -> 1350 x 900 px."""
    path = plot.save(standard_fig, tmp_path / "sub" / "chart.png")
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1350, 900)


def test_labels_readable(standard_fig):
    """Every text lies inside the figure, and no two workload labels overlap."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    fig = standard_fig
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    fb = fig.bbox
    boxes = []
    for t in ax.texts:
        bb = Text.get_window_extent(t, renderer)  # the text alone, not an annotation's leader
        assert fb.x0 <= bb.x0 and bb.x1 <= fb.x1 and fb.y0 <= bb.y0 and bb.y1 <= fb.y1, t.get_text()
        assert ax.bbox.x0 - 1 <= bb.x0 and bb.x1 <= ax.bbox.x1 + 1, t.get_text()
        if not str(t.get_gid()).startswith("label:roof") and not str(t.get_gid()).startswith("label:measured"):
            boxes.append((t.get_text(), bb))
    assert len(boxes) >= 15  # gemv and rmsnorm coincide and may share one label
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1:]:
            assert not a.overlaps(b), (ta, tb)
    legend = ax.get_legend().get_window_extent(renderer)
    points = ax.transData.transform(np.concatenate([np.asarray(c.get_offsets()) for c in ax.collections]))
    assert not any(legend.contains(x, y) for x, y in points)


def test_missing_matplotlib(monkeypatch):
    """Without matplotlib: PlotDependencyError, both a SolkitError and an ImportError, with the install hint."""
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(plot.PlotDependencyError, match=r"pip install 'solkit\[plot\]'") as info:
        plot.roofline(ops.matmul(1024, 1024, 1024), "h200")
    assert isinstance(info.value, sk.SolkitError) and isinstance(info.value, ImportError)


def test_import_solkit_does_not_import_matplotlib():
    """import solkit (and import solkit.plot) leaves matplotlib unimported."""
    code = "import solkit, solkit.plot, sys; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_example_writes_png(tmp_path):
    """examples/roofline_chart.py runs headless and writes out_dir/roofline_h200.png."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "roofline_chart.py"), str(tmp_path)],
        check=True, capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "DISPLAY"},
    )
    png = tmp_path / "roofline_h200.png"
    assert out.stdout.strip() == str(png)
    assert png.stat().st_size > 10_000
