"""The roofline chart drawn with matplotlib (imported inside the functions); placement geometry is in ``layout``."""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from .._typing import GPUOnly
from .._impossible import below_bound
from .._optional import PLOT_INSTALL_HINT, require_matplotlib
from .._validate import checked_call, did_you_mean, flag, positive, shown, user_stacklevel
from ..errors import (
    ArgumentTypeError,
    MeasurementError,
    OptionError,
    SolkitWarning,
    UnsupportedPrecisionError,
)
from ..hardware import as_gpu
from ..sol import roofline as _roofline
from ..workload import Kernel, Workload, as_workload
from .layout import Box, Placement, Placer, chain, relpos

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

__all__ = ["roofline", "save", "DEFAULT_PRECISIONS", "INSTALL_HINT"]

#: what to run when matplotlib is missing
INSTALL_HINT = PLOT_INSTALL_HINT

#: compute roofs drawn when ``precisions`` is None: matrix peaks (if the GPU has them), then the fp32 vector peak
DEFAULT_PRECISIONS: tuple[tuple[str, str], ...] = (("fp8", "matrix"), ("bf16", "matrix"), ("tf32", "matrix"), ("fp32", "vector"))

TERA = 1e12
FIGSIZE = (9.0, 6.0)
DPI = 150

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies
BOUND_COLORS = {"compute": "#D55E00", "memory": "#0072B2"}
ROOF_COLOR = "0.20"
MEASURED_COLOR = "#009E73"
RIDGE_COLOR = "0.20"
LABEL_FONTSIZE = 7.5
ROOF_FONTSIZE = 7.5
MARKER_AREA = 46  # workload markers, points^2


# ---- arguments ---------------------------------------------------------------------------


def _labelled(workloads: Any) -> dict[str, Workload]:
    """label -> Workload from a dict, a single Workload/Kernel, or a sequence of them (labels: names)."""
    if isinstance(workloads, (Workload, Kernel)):
        return {workloads.name: as_workload(workloads, f"workloads[{workloads.name!r}]")}
    if isinstance(workloads, Mapping):
        out: dict[str, Workload] = {}
        for label, w in workloads.items():
            if not isinstance(label, str):
                raise ArgumentTypeError(f"workloads keys must be str labels, got {label!r}")
            out[label] = as_workload(w, f"workloads[{label!r}]")
        return out
    if isinstance(workloads, (str, bytes)) or not isinstance(workloads, Iterable):
        raise ArgumentTypeError(
            f"workloads must be a Workload, a list of Workloads or a dict label -> Workload, got {type(workloads).__name__}"
        )
    out = {}
    for i, w in enumerate(workloads):
        wl = as_workload(w, f"workloads['#{i}']")
        label, n = wl.name, 2
        while label in out:  # two workloads of one name: "name (2)"
            label, n = f"{wl.name} ({n})", n + 1
        out[label] = wl
    return out


def check_axes(ax: Any) -> Optional["Axes"]:
    """``ax``: None (a new figure) or matplotlib Axes; anything else is an ArgumentTypeError."""
    from matplotlib.axes import Axes

    if ax is not None and not isinstance(ax, Axes):
        raise ArgumentTypeError(f"ax must be matplotlib Axes (e.g. fig.add_subplot()) or None, got the "
                                f"{type(ax).__name__} {shown(ax)}")
    return ax


def check_title(title: Any) -> Optional[str]:
    """``title``: None or a string; anything else is an ArgumentTypeError."""
    if title is not None and not isinstance(title, str):
        raise ArgumentTypeError(f"title must be a string or None, got the {type(title).__name__} {shown(title)}")
    return title


def _check_measured(measured: Any) -> Optional[Mapping[str, Any]]:
    """``measured``: None or a mapping label -> seconds; a list, a number or a string is an ArgumentTypeError."""
    if measured is not None and not isinstance(measured, Mapping):
        raise ArgumentTypeError(f"measured must be a dict label -> measured seconds (e.g. {{'matmul': 1.2e-3}}) or None, "
                                f"got the {type(measured).__name__} {shown(measured)}")
    return measured


def roof_specs(gpu: GPU, precisions: Any) -> list[tuple[str, str, float]]:
    """(precision, unit actually used, FLOP/s) of each compute roof to draw, highest first, no repeats."""
    if precisions is None:
        wanted: list[tuple[str, str]] = list(DEFAULT_PRECISIONS)
        optional = True
    else:
        if isinstance(precisions, (bytes, Mapping)) or not isinstance(precisions, (str, Iterable)):
            raise ArgumentTypeError(
                f"precisions must be a precision name ('bf16'), 'precision:unit' ('fp32:vector'), a (precision, unit) "
                f"pair or a list of them, got the {type(precisions).__name__} {shown(precisions)}"
            )
        single = isinstance(precisions, str) or (
            isinstance(precisions, tuple) and len(precisions) == 2 and precisions[1] in ("matrix", "vector")
        )
        items = [precisions] if single else list(precisions)
        wanted = []
        for item in items:
            if isinstance(item, str):
                prec, unit = item, "matrix"
                if ":" in item:
                    prec, unit = (s.strip() for s in item.split(":", 1))
            elif isinstance(item, tuple) and len(item) == 2 and all(isinstance(s, str) for s in item):
                prec, unit = item
            else:
                raise ArgumentTypeError(
                    f"precisions entries must be a precision name ('bf16'), 'precision:unit' ('fp32:vector') or a"
                    f" (precision, unit) pair, got {item!r}"
                )
            wanted.append((prec, unit))
        optional = False
    roofs: list[tuple[str, str, float]] = []
    for prec, unit in wanted:
        try:
            record = gpu.peak_record(prec, unit)
        except UnsupportedPrecisionError:
            if optional:
                continue  # a default precision the part lacks (fp8 before Hopper)
            raise
        entry = (record.precision, record.unit, record.tflops * TERA)
        if all((p, u) != entry[:2] for p, u, _ in roofs):
            roofs.append(entry)
    if not roofs:
        raise OptionError(f"precisions must name at least one compute roof of {gpu.name}, got {precisions!r}")
    return sorted(roofs, key=lambda r: -r[2])


def _fmt_rate(flops: float) -> str:
    """989.4 TFLOP/s, 67 TFLOP/s, 4.8 TFLOP/s."""
    t = flops / TERA
    return f"{t:.1f}".rstrip("0").rstrip(".") if t >= 100 or t < 10 else f"{t:.3g}"


def _fmt_intensity(x: float) -> str:
    """206, 14, 9.6, 0.5 (FLOP/B)."""
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def _unit_word(precision: str) -> str:
    """int8 peaks are integer ops."""
    return "TOPS" if precision == "int8" else "TFLOP/s"


# ---- the axes in pixels, for the placer ----------------------------------------------------


class Scene:
    """The axes seen by ``layout.Placer``: data -> pixel transform and text extents from an Agg renderer."""

    def __init__(self, fig: Any, ax: Any) -> None:
        from matplotlib.backends.backend_agg import RendererAgg

        self.ax = ax
        self.renderer = RendererAgg(int(fig.bbox.width) or 1, int(fig.bbox.height) or 1, fig.dpi)
        self.placer = Placer(Box(*ax.bbox.extents), fig.dpi / 72.0)

    def to_px(self, x: float, y: float) -> tuple[float, float]:
        """The data point (x, y) in display pixels."""
        px, py = self.ax.transData.transform((x, y))
        return float(px), float(py)

    def text_size(self, text: str, fontsize: float) -> tuple[float, float]:
        """(width, height) in pixels of an unrotated text, 1.2 line heights a line."""
        from matplotlib.font_manager import FontProperties

        prop = FontProperties(size=fontsize)
        w = h = 0.0
        for line in text.split("\n"):
            lw, lh, _ = self.renderer.get_text_width_height_descent(line, prop, ismath=False)
            w, h = max(w, lw), h + lh * 1.2
        return w, h

    def extent(self, artist: Any) -> Box:
        """The artist's bounding box in pixels."""
        bb = artist.get_window_extent(renderer=self.renderer)
        return Box(bb.x0, bb.y0, bb.x1, bb.y1)

    def mark(self, x: float, y: float, size_pt: float, point: bool = False) -> None:
        """A marker at data (x, y) to keep text off; ``point``: a labelled point."""
        self.placer.add_mark(*self.to_px(x, y), size_pt, point)

    def line(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        """A polyline through data points that labels avoid."""
        self.placer.add_line([self.to_px(x, y) for x, y in zip(xs, ys)])

    def reserve_text(self, artist: Any) -> None:
        """Reserve the space of an already drawn text (roof labels)."""
        self.placer.reserve(self.extent(artist).pad(2))

    def slanted_boxes(self, artist: Any) -> list[Box]:
        """A rotated text as a chain of squares along it (its bounding box would cover a whole corner)."""
        bb = self.extent(artist)
        w, h = self.text_size(artist.get_text(), artist.get_fontsize())
        return chain((bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2, w, h, artist.get_rotation())

    def place(self, anchors: Sequence[tuple[float, float]], text: str, fontsize: float) -> Placement:
        """The cheapest spot for ``text`` next to one of ``anchors`` (data coordinates); see ``Placer.place``."""
        return self.placer.place([self.to_px(x, y) for x, y in anchors], self.text_size(text, fontsize))


def _slanted(scene: Scene, x_lo: float, slope: float, lift: float, text: str, color: str, va: str, gid: str) -> Any:
    """Text along the line y = slope * x, ``lift`` times above (or below) it, as far left as it is clear of points.

    On log-log axes the line runs along the data direction (x, y) at any point (x, y), so a
    rotation of atan2(y, x) in data space, turned by the transform, follows the line whatever
    the axes' final size.
    """

    def put(x: float) -> Any:
        """The text at x, on the lifted line."""
        y = slope * x * lift
        return scene.ax.text(x, y, text, rotation=math.degrees(math.atan2(y, x)), transform_rotates_text=True,
                             rotation_mode="anchor", ha="left", va=va, fontsize=ROOF_FONTSIZE, color=color, clip_on=True)

    for k in range(16):
        t = put(x_lo * 1.6 * 1.5**k)
        boxes = scene.slanted_boxes(t)
        if scene.placer.is_free(boxes):
            break
        t.remove()
    else:  # nowhere clear: the lower-left end
        t = put(x_lo * 1.6)
        boxes = scene.slanted_boxes(t)
    t.set_gid(gid)
    scene.placer.reserve(*boxes)
    return t


def _roof_line(scene: Scene, xs: list[float], ys: list[float], gid: str, label: str, **style: Any) -> "Line2D":
    """A roof or ceiling line in ``style`` (matplotlib's line keywords), known to the placer."""
    (line,) = scene.ax.plot(xs, ys, **style)
    line.set_gid(gid)
    line.set_label(label)
    scene.line(line.get_xdata(), line.get_ydata())
    return line


def _roof_label(scene: Scene, text: str, xy: tuple[float, float], color: str, gid: str) -> None:
    """A roof's label, left of its start at ``xy``, reserved in the placer."""
    t = scene.ax.annotate(text, xy, xytext=(-8, 0), textcoords="offset points", ha="right", va="center",
                          fontsize=ROOF_FONTSIZE, color=color)
    t.set_gid(gid)
    scene.reserve_text(t)


# ---- the chart ---------------------------------------------------------------------------


@dataclass
class Point:
    """One workload on the chart: its bound point and, if measured, its achieved rate (TFLOP/s)."""

    label: str
    x: float
    y: float
    bound: str
    measured_y: Optional[float] = None
    sol_fraction: Optional[float] = None


def _points(workloads: dict[str, Workload], gpu: GPU, measured: Optional[Mapping[str, Any]], strict: bool) -> list[Point]:
    """The chart's points: (intensity, executed FLOPs / T_SOL) of each scalar workload, with its measured rate.

    A measured time below the workload's T_SOL is flagged (a point above the roof: impossible).
    """
    measured = dict(measured or {})
    for k in measured:
        if not isinstance(k, str):
            raise ArgumentTypeError(f"measured keys must be str labels of the workloads {list(workloads)}, got {shown(k)}")
    unknown = [k for k in measured if k not in workloads]
    if unknown:
        raise OptionError(f"measured has label(s) {unknown} that are not among the workloads {list(workloads)}"
                          f"{did_you_mean(unknown[0], workloads)}")
    points = []
    for label, w in workloads.items():
        if w.shape != ():
            raise OptionError(
                f"workload {label!r} is a sweep of shape {w.shape}; solkit.plot.roofline plots scalar shapes only:"
                " pass one workload per shape (a dict label -> workload)"
            )
        r = _roofline(w, gpu)
        flops, t_sol, x = float(r.executed_flops), float(r.t_sol), float(r.intensity)
        if not (flops > 0 and float(r.bytes) > 0 and t_sol > 0):
            warnings.warn(
                f"workload {label!r} has {flops:g} FLOPs and {float(r.bytes):g} bytes: it has no place on a log-log"
                " roofline and is left out of the chart",
                SolkitWarning,
                stacklevel=user_stacklevel(),
            )
            continue
        p = Point(label, x, flops / t_sol / TERA, str(r.bound))
        if label in measured:
            seconds_arr = positive(f"measured[{label!r}]", measured[label])
            if np.shape(seconds_arr) != ():  # a 0-d array or a float: one number
                raise MeasurementError(
                    f"measured[{label!r}] must be one number of seconds, got an array of shape {np.shape(seconds_arr)}"
                )
            seconds = float(seconds_arr)
            below_bound(f"measured[{label!r}]", seconds, t_sol, lambda: f"{w.name!r} on {gpu.name}", strict,
                        stacklevel=user_stacklevel())
            p.measured_y = flops / seconds / TERA
            p.sol_fraction = t_sol / seconds
        points.append(p)
    return points


@checked_call
def roofline(
    workloads: Any,
    gpu: GPUOnly,
    precisions: Any = None,
    measured: Optional[Mapping[str, Any]] = None,
    ax: Optional["Axes"] = None,
    title: Optional[str] = None,
    show_measured_ceilings: bool = True,
    strict: bool = False,
) -> "Figure":
    """A roofline chart of ``workloads`` on ``gpu``; returns the matplotlib Figure (never shows it).

    - ``workloads``: a dict label -> Workload, one Workload (labelled by its name) or a list of
      them. Scalar shapes only: a sweep raises ``OptionError`` naming its label. A workload with
      no FLOPs or no bytes (a gather, a copy) cannot sit on log axes: a ``SolkitWarning``, and it is left out.
    - ``gpu``: a GPU, name, alias or spec path (``UnknownGPUError`` if unknown).
    - ``precisions``: compute roofs to draw, each ``"bf16"`` (matrix unit), ``"fp32:vector"`` or
      ``("fp32", "vector")``; default: fp8 (if the part has it), bf16, tf32 matrix and fp32 vector.
    - ``measured``: label -> measured seconds; adds the achieved point and the SOL fraction. A
      time below the workload's T_SOL (a point above its roof) is impossible: an
      ``ImpossibleMeasurementWarning``, or with ``strict=True`` an ``ImpossibleMeasurementError``.
    - ``ax``: draw into these axes (their figure is returned); default: a new 9 x 6 in Figure at
      150 dpi, built without pyplot so it works headless.
    - ``show_measured_ceilings``: draw the spec's measured bf16 matmul rate and copy bandwidth.

    Labels are placed greedily, in display space, to avoid each other, the markers and the
    lines (with a leader line when they move away); points that coincide share one label.
    NB: placement uses the axes' size at call time; a layout engine that later shrinks the axes
    (``layout="constrained"`` on a crowded figure) can bring labels closer than planned.
    """
    require_matplotlib()
    from .figure import ChartFigure

    g = as_gpu(gpu)
    items = _labelled(workloads)
    roofs = roof_specs(g, precisions)
    ax, title = check_axes(ax), check_title(title)
    ceilings_too = flag("show_measured_ceilings", show_measured_ceilings)
    points = _points(items, g, _check_measured(measured), flag("strict", strict))

    if ax is None:
        fig = ChartFigure(figsize=FIGSIZE, dpi=DPI)
        ax = fig.add_subplot(1, 1, 1)
        fig.subplots_adjust(left=0.085, right=0.975, bottom=0.09, top=0.93)
    else:
        fig = ax.figure  # type: ignore[assignment]  # a SubFigure draws the same

    bw_t = g.memory_bandwidth / TERA  # TFLOP/s per FLOP/byte
    top = roofs[0][2] / TERA
    x_lo, x_hi = draw_frame(ax, g, points, bw_t, top, title)
    scene = Scene(fig, ax)
    for p in points:  # the points first: roof labels keep off them too
        scene.mark(p.x, p.y, math.sqrt(MARKER_AREA) + 2, point=True)
        if p.measured_y is not None:
            scene.mark(p.x, p.measured_y, math.sqrt(MARKER_AREA) + 2, point=True)
    ridges = datasheet_roofs(scene, g, roofs, bw_t, top, x_lo, x_hi)
    ceilings = measured_ceilings(scene, g, bw_t, top, x_lo, x_hi) if ceilings_too else []
    handles = _workload_points(scene, points)
    handles.append(line2d(color=ROOF_COLOR, lw=1.8, label="datasheet roofs (dense)"))
    draw_legend(scene, handles + ceilings + [ridges])
    point_labels(scene, points)
    return fig


def line2d(**style: Any) -> "Line2D":
    """A line drawn nowhere: a legend handle."""
    from matplotlib.lines import Line2D

    return Line2D([], [], **style)


def draw_frame(ax: "Axes", g: GPU, points: list[Point], bw_t: float, top: float, title: Optional[str]) -> tuple[float, float]:
    """Log-log axes around the roofs and the points, with labels, title and grid; returns the x limits."""
    from matplotlib.ticker import LogLocator, NullFormatter

    xs = [p.x for p in points]
    ys = [p.y for p in points] + [p.measured_y for p in points if p.measured_y is not None]
    x_lo = min([0.1] + [x / 2.5 for x in xs])
    x_hi = max([1e4] + [x * 2.5 for x in xs])
    y_hi = max([top * 1.3] + [y * 1.3 for y in ys])
    y_lo = min([bw_t * x_lo] + [y / 2.0 for y in ys])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (TFLOP/s)")
    ax.set_title(title if title is not None else f"Roofline: {g.full_name} (dense peaks)")
    ax.grid(True, which="major", color="0.85", linewidth=0.7)
    ax.grid(True, which="minor", color="0.93", linewidth=0.4)
    ax.set_axisbelow(True)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_locator(LogLocator(base=10, subs=[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]))
        axis.set_minor_formatter(NullFormatter())
    return x_lo, x_hi


def datasheet_roofs(scene: Scene, g: GPU, roofs: list[tuple[str, str, float]], bw_t: float, top: float,
                     x_lo: float, x_hi: float) -> Any:
    """The memory roof up to the highest ridge, each compute roof from its ridge, and the ridge markers (returned).

    The labels sit in the unattainable corner above the memory roof, left of each ridge point.
    """
    memory = f"{g.memory.type} {g.memory.bandwidth_tb_s:g} TB/s"
    _roof_line(scene, [x_lo, top / bw_t], [bw_t * x_lo, top], "roof:memory", memory, color=ROOF_COLOR, lw=1.8,
               solid_capstyle="butt")
    _slanted(scene, x_lo, bw_t, 1.25, memory, ROOF_COLOR, "bottom", "label:roof:memory").set_fontweight("bold")
    ridge_x, ridge_y = [], []
    for prec, unit, flops in roofs:
        peak = flops / TERA
        ridge = peak / bw_t
        name = f"{prec} vector" if unit == "vector" else prec
        rate = f"{_fmt_rate(flops)} {_unit_word(prec)}"
        _roof_line(scene, [ridge, x_hi], [peak, peak], f"roof:{prec}:{unit}", f"{name} {rate}", color=ROOF_COLOR,
                   lw=1.8 if unit == "matrix" else 1.3, solid_capstyle="butt")
        _roof_label(scene, f"{name}  {rate}   ridge {_fmt_intensity(ridge)} FLOP/B",
                    (ridge, peak), ROOF_COLOR, f"label:roof:{prec}:{unit}")
        ridge_x.append(ridge)
        ridge_y.append(peak)
    ridges = scene.ax.scatter(ridge_x, ridge_y, marker="D", s=18, color=RIDGE_COLOR, zorder=4, label="ridge point")
    ridges.set_gid("ridge")
    for x, y in zip(ridge_x, ridge_y):
        scene.mark(x, y, 5)
    return ridges


def measured_ceilings(scene: Scene, g: GPU, bw_t: float, top: float, x_lo: float, x_hi: float) -> list[Any]:
    """The spec's measured copy bandwidth and bf16 matmul rate as dashed lines; returns their legend handle (if any)."""
    m = g.measured
    if m is None:
        return []
    copy_t = m.copy_bandwidth_tb_s
    mm_prec = "bf16" if "bf16" in m.matmul_rate_tflops else None
    mm = m.matmul_rate_tflops["bf16"] if mm_prec else None
    mem_top = mm if mm is not None else top
    dashed = dict(color=MEASURED_COLOR, lw=1.2, ls=(0, (5, 3)))
    copy = f"measured copy {copy_t:.3g} TB/s"
    _roof_line(scene, [x_lo, mem_top / copy_t], [copy_t * x_lo, mem_top], "measured:copy", copy, **dashed)
    _slanted(scene, x_lo, copy_t, 1 / 1.25, copy, MEASURED_COLOR, "top", "label:measured:copy")
    if mm is not None:
        _roof_line(scene, [mm / copy_t, x_hi], [mm, mm], f"measured:{mm_prec}:matrix",
                   f"measured {mm_prec} matmul {mm:g} TFLOP/s", **dashed)
        _roof_label(scene, f"measured {mm_prec} matmul  {mm:g} TFLOP/s", (mm / bw_t, mm), MEASURED_COLOR,
                    f"label:measured:{mm_prec}:matrix")
    return [line2d(**dashed, label=f"measured ceilings ({m.date})")]


def _workload_points(scene: Scene, points: list[Point]) -> list[Any]:
    """The points at their bound, coloured by it, and the measured ones with their gap lines; returns legend handles."""
    ax = scene.ax
    handles = bound_points(scene, points, "bound (at T_SOL)")
    meas = [p for p in points if p.measured_y is not None]
    if meas:
        achieved = [float(p.measured_y or 0.0) for p in meas]  # every one of them was measured
        gap_lines(scene, meas, achieved)
        hs = ax.scatter([p.x for p in meas], achieved, s=MARKER_AREA * 0.8, facecolors="white",
                        edgecolors=[BOUND_COLORS[p.bound] for p in meas], linewidths=1.4, zorder=6)
        hs.set_gid("points:measured")
        handles.append(line2d(marker="o", ls="-", color="0.35", markerfacecolor="white", markersize=6,
                               label="measured: achieved rate, % of SOL"))
    return handles


def bound_points(scene: Scene, points: list[Point], what: str) -> list[Any]:
    """The points at their bound, one scatter per bound coloured by it (``what`` ends its legend label); the handles of
    the bounds that have points."""
    handles: list[Any] = []
    for bound in ("compute", "memory"):
        sel = [p for p in points if p.bound == bound]
        sc = scene.ax.scatter([p.x for p in sel], [p.y for p in sel], s=MARKER_AREA, color=BOUND_COLORS[bound],
                              edgecolors="white", linewidths=0.8, zorder=6, label=f"{bound}-{what}")
        sc.set_gid(f"points:{bound}")
        if sel:
            handles.append(sc)
    return handles


def gap_lines(scene: Scene, points: list[Point], achieved: list[float]) -> None:
    """A line from each point at its bound down to its achieved rate, in its bound's colour (reserved in the placer)."""
    for p, y in zip(points, achieved):
        (gap,) = scene.ax.plot([p.x, p.x], [p.y, y], color=BOUND_COLORS[p.bound], lw=1.0, alpha=0.7, zorder=5)
        gap.set_gid(f"gap:{p.label}")
        scene.line([p.x, p.x], [p.y, y])


def draw_legend(scene: Scene, handles: list[Any]) -> None:
    """The legend in the first corner where it covers no point or text (else the last tried), reserved in the placer."""
    legend = None
    for loc in ("lower right", "upper left", "center right", "lower center"):
        if legend is not None:
            legend.remove()
        legend = scene.ax.legend(handles=handles, loc=loc, fontsize=7.5, framealpha=0.95, borderpad=0.7)
        legend.set_zorder(10)
        box = scene.extent(legend).pad(3)
        if scene.placer.clear_of(box):
            break
    scene.placer.reserve(box)


def point_labels(scene: Scene, points: list[Point]) -> None:
    """Label the points: those that coincide on screen share one label; crowded points are placed first."""
    groups: list[list[Point]] = []
    for p in points:
        px, py = scene.to_px(p.x, p.y)
        for grp in groups:
            qx, qy = scene.to_px(grp[0].x, grp[0].y)
            if math.hypot(px - qx, py - qy) < 3 and grp[0].measured_y is None and p.measured_y is None:
                grp.append(p)
                break
        else:
            groups.append([p])

    def crowd(grp: list[Point]) -> int:
        """Points within 90 px: the crowded get the first pick of the space."""
        px, py = scene.to_px(grp[0].x, grp[0].y)
        return sum(1 for q in points if math.dist(scene.to_px(q.x, q.y), (px, py)) < 90)

    for grp in sorted(groups, key=lambda grp: (-crowd(grp), grp[0].x)):
        p = grp[0]
        text = "\n".join(q.label for q in grp)
        if p.sol_fraction is not None:
            text += f"  ({p.sol_fraction:.0%} of SOL)"
        anchors = [(p.x, p.y)] + ([(p.x, p.measured_y)] if p.measured_y is not None else [])
        i, dx, dy, ha, va, lead = scene.place(anchors, text, LABEL_FONTSIZE)
        arrow = dict(arrowstyle="-", color="0.45", lw=0.6, shrinkA=0, shrinkB=3.5, relpos=relpos(ha, va))
        ann = scene.ax.annotate(
            text, anchors[i], xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=LABEL_FONTSIZE,
            color="0.1", zorder=7, linespacing=1.1, arrowprops=arrow if lead else None,
            bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8),
        )
        ann.set_gid("label:" + " / ".join(q.label for q in grp))


@checked_call
def save(fig: "Figure", path: Union[str, os.PathLike], dpi: Any = DPI) -> str:
    """Write ``fig`` to ``path`` at ``dpi``, creating the folder; returns the exact path written.

    The format is the path's suffix (``.png``, ``.svg``, ``.pdf``, ... as matplotlib supports);
    a path without a suffix gets ``.png`` added. An unknown suffix, a folder, or a path that
    cannot be written is an OptionError naming ``path`` (and the allowed suffixes); ``dpi`` is
    a number in (0, 1200].
    """
    require_matplotlib()
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise ArgumentTypeError(f"fig must be a matplotlib Figure (from solkit.plot.roofline), got {type(fig).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentTypeError(f"path must be a file path (str or os.PathLike), got {path!r}")
    try:
        p = os.fspath(path)
    except TypeError as exc:
        raise ArgumentTypeError(f"path must be a file path (str or os.PathLike), got {path!r} ({exc})") from None
    if not isinstance(p, str):
        raise ArgumentTypeError(f"path must be a str path, got {p!r}")
    resolution = positive("dpi", dpi, OptionError)
    if type(resolution) is not float:
        raise OptionError(f"dpi must be one number in (0, 1200], got an array of shape {np.shape(resolution)}")
    if resolution > 1200:
        raise OptionError(f"dpi must be a number in (0, 1200], got {dpi!r}")
    formats = sorted(fig.canvas.get_supported_filetypes())
    allowed = ", ".join(f".{f}" for f in formats)
    if not p.strip() or "\0" in p:
        raise OptionError(f"path must name a file ending in one of {allowed}, got {p!r}")
    if p.endswith(("/", os.sep)) or os.path.isdir(p):
        raise OptionError(f"path {p!r} is a folder; give a file name ending in one of {allowed}")
    suffix = os.path.splitext(p)[1]
    if not suffix:
        p += ".png"
    elif suffix[1:].lower() not in formats:
        raise OptionError(f"path {p!r} ends in {suffix!r}, not a chart format; allowed extensions: {allowed}")
    if os.path.isdir(p):
        raise OptionError(f"path {p!r} is a folder; give a file name ending in one of {allowed}")
    folder = os.path.dirname(p)

    def unwritable(why: Any) -> OptionError:
        return OptionError(f"path {p!r} cannot be written: {why} (allowed extensions: {allowed})")

    try:
        if folder:
            os.makedirs(folder, exist_ok=True)
    except FileExistsError:
        raise unwritable(f"a part of its folder {folder!r} is a file") from None
    except OSError as exc:
        raise unwritable(f"cannot create its folder {folder!r}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a name the file system cannot hold
        raise unwritable(exc) from None
    try:
        fig.savefig(p, dpi=resolution, facecolor="white", format=os.path.splitext(p)[1][1:].lower())
    except OSError as exc:
        raise unwritable(exc.strerror or exc) from None
    except ValueError as exc:  # a name the file system cannot hold, or an image too large
        raise unwritable(exc) from None
    return p
