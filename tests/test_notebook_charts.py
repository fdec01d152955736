"""Charts in a notebook: every chart is a matplotlib Figure whose ``_repr_png_`` is the PNG ``plot.save`` writes, which
IPython's own display formatter picks up; ``plot.profile`` is the profile's chart."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

import solkit as sk  # noqa: E402
from solkit import ops, plot  # noqa: E402
from solkit.errors import ArgumentTypeError, OptionError  # noqa: E402

DECODE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "llama_decode.json.gz"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, after checking the signature."""
    assert png[:8] == PNG_MAGIC and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


@pytest.fixture(scope="module")
def prof():
    return sk.load_profile(DECODE, gpu="h200")


def test_roofline_is_a_figure_with_a_png_view(tmp_path):
    """plot.roofline returns a Figure whose _repr_png_ is a 9 x 6 in chart at 150 dpi (1350 x 900 px), byte for byte
    the file plot.save writes."""
    fig = plot.roofline(ops.matmul(4096, 4096, 4096), "h200")
    assert isinstance(fig, Figure)
    png = fig._repr_png_()
    assert _png_size(png) == (1350, 900)  # 9 in * 150 dpi, 6 in * 150 dpi
    assert Path(plot.save(fig, tmp_path / "roofline.png")).read_bytes() == png


def test_sweep_chart_has_a_png_view():
    """plot.sweep's figure too: 9 x 6 in at matplotlib's default 100 dpi = 900 x 600 px."""
    fig = plot.sweep({"m": [256, 512, 1024], "t_sol_s": [1e-6, 2e-6, 4e-6]})
    assert isinstance(fig, Figure)
    assert _png_size(fig._repr_png_()) == (9 * 100, 6 * 100)


def test_profile_charts_have_a_png_view(prof):
    """The decode trace has 9 op groups: the breakdown is 2.1 + 0.34 * (9 bars + idle) = 5.5 in tall (825 px at 150
    dpi), the profile roofline 6.5 in (975 px), plot.profile both stacked: 825 + 975 = 1800 px."""
    assert len(prof.groups()) == 9
    assert _png_size(plot.time_breakdown(prof)._repr_png_()) == (1350, 825)  # 5.5 in * 150 dpi
    assert _png_size(plot.profile_roofline(prof)._repr_png_()) == (1350, 975)  # 6.5 in * 150 dpi
    assert _png_size(plot.profile(prof)._repr_png_()) == (1350, 1800)


def test_ipython_displays_the_chart_as_png():
    """IPython's own DisplayFormatter (what a kernel runs on a cell's value) gives image/png without %matplotlib."""
    formatters = pytest.importorskip("IPython.core.formatters")
    data, _ = formatters.DisplayFormatter().format(plot.roofline(ops.layernorm(4096, 4096), "h200"))
    assert _png_size(data["image/png"]) == (1350, 900)
    assert data["text/plain"].startswith("<ChartFigure size 1350x900")


def test_charts_change_nothing_global():
    """Drawing and rendering a chart imports no pyplot (so no backend is chosen) and leaves matplotlib's rcParams as
    they were."""
    code = ("import matplotlib, sys; rc = lambda: {k: matplotlib.rcParams[k] for k in matplotlib.rcParams if k != 'backend'}; "
            "before = rc(); import solkit as sk; from solkit import ops, plot; "
            "fig = plot.roofline(ops.matmul(64, 64, 64), 'h200'); fig._repr_png_(); "
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'; "
            "assert rc() == before, 'rcParams changed'")  # reading 'backend' would resolve it (importing pyplot)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_plot_profile_is_callable_and_draws_both_charts(prof):
    """plot.profile(prof): the breakdown (its idle bar) above the op groups on the roofline (their achieved points)."""
    fig = plot.profile(prof)
    upper, lower = fig.subfigs
    assert [a.get_gid() for a in upper.axes[0].patches if a.get_gid() == "bar:idle:idle"] == ["bar:idle:idle"]
    assert any(c.get_gid() == "points:measured" for c in lower.axes[0].collections)
    assert len(fig.axes) == 2


@pytest.mark.parametrize("chart, gid", [("breakdown", "bar:idle:idle"), ("roofline", "points:measured")])
def test_plot_profile_draws_one_chart(prof, chart, gid):
    """chart='breakdown' is time_breakdown's figure, chart='roofline' profile_roofline's: one axes each."""
    fig = plot.profile(prof, chart=chart)
    (ax,) = fig.axes
    assert any(a.get_gid() == gid for a in ax.get_children())


def test_plot_profile_top_reaches_each_chart(prof):
    """top=3: the breakdown shows 3 groups, 'other (6 groups)' and idle; the roofline 3 groups' gaps."""
    fig = plot.profile(prof, top=3)
    upper, lower = fig.subfigs
    labels = [t.get_text() for t in upper.axes[0].get_yticklabels()]
    assert labels[3:] == ["other (6 groups)", "idle"] and len(labels) == 5
    assert len([a for a in lower.axes[0].get_lines() if (a.get_gid() or "").startswith("gap:")]) == 3


def test_plot_profile_refuses_bad_arguments(prof):
    """A misspelt chart is an OptionError (a ValueError) with the near name; a non-profile or a bad top a type error."""
    with pytest.raises(OptionError, match="chart") as info:
        plot.profile(prof, chart="roofline_")
    assert isinstance(info.value, ValueError) and "'roofline'" in str(info.value)
    with pytest.raises(ArgumentTypeError, match="profile must be a solkit Profile"):
        plot.profile("trace.json")
    with pytest.raises(ArgumentTypeError, match="top must be"):
        plot.profile(prof, top=2.5)
    with pytest.raises(OptionError, match="top must be"):
        plot.profile(prof, top=0)
