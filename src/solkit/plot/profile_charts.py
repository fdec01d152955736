"""Charts of a measured profile (``solkit.load_profile``): its op groups on the roofline, and where the time goes.

matplotlib is imported inside the functions (as in ``charts``), so importing this module needs none;
calling a chart without it raises ``PlotDependencyError``. Both return a headless ``Figure``.

- ``profile_roofline``: one point pair per op group (``ProfiledCall.group``: an operator, its
  backward, ...), its calls summed: x = executed FLOPs / compulsory DRAM bytes, a filled marker at
  the bound (executed FLOPs / T_SOL, coloured by the roof behind the larger share of T_SOL) and a
  hollow one at the achieved rate (executed FLOPs / measured seconds), its area proportional to the
  measured time, joined by a line; the label gives the SOL fraction (T_SOL / measured). Roofs as in
  ``solkit.plot.roofline`` (default: the dense matrix peak of the profile's ``mfu_precision``). Groups with no FLOPs or no bytes (copies, fills, gathers) and unmodeled groups cannot sit
  on it: a note under the axes names them and their share of the kernel time.
- ``time_breakdown``: "where the time goes", one horizontal bar per op group, largest first (the rest
  summed as "other"), in microseconds. A modeled group's bar is its measured time split into T_SOL
  (the floor no kernel beats), the calibrated prediction above T_SOL (what a good kernel still
  takes) and the measured time above the prediction (recoverable), taken over the group's calls
  summed, as the report's table does: floor = min(T_SOL, measured), then min(predicted, measured)
  minus the floor, then the rest. An unmodeled group is one grey bar. A last bar is the idle time
  (span minus busy time). Title: span, coverage, MFU.

Gids: roofline: those of ``solkit.plot.roofline`` for roofs, ceilings and ridges, ``"points:compute"``,
``"points:memory"`` (bound), ``"points:measured"`` (achieved), ``"gap:<group>"``, ``"label:<group>"``,
``"note:left-out"``. Breakdown: each bar segment ``"bar:<kind>:<label>"`` with kind ``sol``,
``predicted``, ``above``, ``unmodeled`` or ``idle`` (label ``idle``), the value at a bar's end
``"value:<label>"``.
"""

from __future__ import annotations

import math
import numbers
import os
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from ..errors import ArgumentTypeError, OptionError
from ..sol import roofline as _roofline
from ..workload import chain
from .._optional import require_matplotlib
from .._validate import checked_call, choice, flag
from .._validate import shown as shown_value
from .charts import (
    BOUND_COLORS,
    bound_points,
    gap_lines,
    DPI,
    FIGSIZE,
    MARKER_AREA,
    ROOF_COLOR,
    TERA,
    check_axes,
    check_title,
    datasheet_roofs,
    draw_frame,
    draw_legend,
    line2d,
    measured_ceilings,
    Point,
    point_labels,
    roof_specs,
    Scene,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..profile.profile import Profile

__all__ = ["profile", "profile_roofline", "time_breakdown", "SEGMENT_COLORS", "CHARTS"]

#: colours of the breakdown's segments (Okabe-Ito, and greys for time no model covers)
SEGMENT_COLORS = {"sol": "#0072B2", "predicted": "#56B4E9", "above": "#D55E00", "unmodeled": "0.62", "idle": "0.90"}
SEGMENT_LABELS = {"sol": "T_SOL (the floor)", "predicted": "calibrated prediction above T_SOL",
                  "above": "measured above the prediction", "unmodeled": "unmodeled (no solkit operator)",
                  "idle": "idle (no kernel running)"}
MIN_AREA, MAX_AREA = 14.0, 420.0  # achieved markers, points^2: the largest group's is MAX_AREA
NOTE_FONTSIZE = 7.0
US = 1e6
#: the profile roofline's size (in) and margins: 0.5 in taller than ``solkit.plot.roofline``'s, for the note below
ROOFLINE_SIZE = (FIGSIZE[0], FIGSIZE[1] + 0.5)
ROOFLINE_MARGINS = {"left": 0.085, "right": 0.975, "bottom": 0.16, "top": 0.93}
#: the charts ``profile`` draws: where the time goes, the op groups on the roofline, or both in one figure
CHARTS = ("breakdown", "roofline", "both")


def _check_profile(profile: Any) -> "Profile":
    from ..profile.profile import Profile

    if not isinstance(profile, Profile):
        raise ArgumentTypeError(f"profile must be a solkit Profile (from solkit.load_profile), got {type(profile).__name__}")
    return profile


def _check_top(top: Any, expected: str = "a positive integer") -> int:
    """``top`` as a positive int (Python's or numpy's integers; a bool, a float or a string is a type error)."""
    if isinstance(top, (bool, np.bool_)) or not isinstance(top, numbers.Integral):
        raise ArgumentTypeError(f"top must be {expected}, got {type(top).__name__} {shown_value(top)}")
    if top < 1:
        raise OptionError(f"top must be {expected}, got {top}")
    return int(top)


def _name(profile: "Profile") -> str:
    return os.path.basename(profile.path) or profile.path


# ---- the roofline --------------------------------------------------------------------------


@dataclass
class _GroupPoint:
    point: Point
    seconds: float
    l2: bool  # measured below T_SOL: faster than the DRAM bound


@dataclass
class _Selection:
    drawn: list[_GroupPoint]
    flat: list[str]  # no FLOPs or no bytes
    unmodeled: list[str]
    left_s: float  # measured seconds of flat and unmodeled
    beyond_top: int  # drawable groups past ``top``


def _group_points(profile: "Profile", top: Optional[int]) -> _Selection:
    """The drawable groups (at most ``top``), the groups without FLOPs or bytes, the unmodeled ones, and their seconds."""
    drawn: list[_GroupPoint] = []
    beyond = 0
    flat: list[str] = []
    unmodeled: list[str] = []
    left_s = 0.0
    from ..profile.report import calls_by_group

    for name, calls in calls_by_group(profile):
        seconds = math.fsum(c.seconds for c in calls)
        workloads = [c.workload for c in calls if c.workload is not None]
        if not workloads:
            unmodeled.append(name)
            left_s += seconds
            continue
        r = _roofline(chain(name, *workloads), profile.gpu)
        flops, nbytes, t_sol = float(r.executed_flops), float(r.bytes), float(r.t_sol)
        if not (flops > 0 and nbytes > 0 and t_sol > 0 and seconds > 0):
            flat.append(name)
            left_s += seconds
            continue
        if top is not None and len(drawn) >= top:
            beyond += 1
            continue
        l2 = t_sol > seconds
        p = Point(name + (" (L2*)" if l2 else ""), flops / nbytes, flops / t_sol / TERA, str(r.bound),
                   flops / seconds / TERA, None if l2 else t_sol / seconds)
        drawn.append(_GroupPoint(p, seconds, l2))
    return _Selection(drawn, flat, unmodeled, left_s, beyond)


def _short(name: str, limit: int = 44) -> str:
    """A kernel name cut to ``limit`` characters (unmodeled ncu groups are whole C++ signatures)."""
    return name if len(name) <= limit else name[: limit - 3] + "..."


def _pct(fraction: float) -> str:
    """35%, 0.4%: one decimal below 1%."""
    return f"{fraction:.1%}" if 0 < fraction < 0.01 else f"{fraction:.0%}"


def _listed(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(_short(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _note(profile: "Profile", sel: _Selection) -> str:
    """What the chart leaves out, and why."""
    parts = []
    if sel.flat:
        parts.append(f"{len(sel.flat)} group(s) without FLOPs or bytes ({_listed(sel.flat)})")
    if sel.unmodeled:
        parts.append(f"{len(sel.unmodeled)} unmodeled ({_listed(sel.unmodeled)})")
    lines = []
    if sel.beyond_top:
        lines.append(f"The {len(sel.drawn)} groups with the most time of {len(sel.drawn) + sel.beyond_top} that have "
                     f"FLOPs and bytes.")
    if parts:
        share = sel.left_s / profile.kernel_seconds if profile.kernel_seconds > 0 else 0.0
        lines.append(f"Not on the chart: {'; '.join(parts)}: {share:.1%} of the kernel time.")
    if any(d.l2 for d in sel.drawn):
        lines.append("L2*: measured faster than its DRAM-bound T_SOL (likely L2-resident: no flush between kernels).")
    return "\n".join(textwrap.fill(line, 150) for line in lines)


@checked_call
def profile_roofline(
    profile: Any,
    top: Optional[int] = None,
    ax: Optional["Axes"] = None,
    *,
    precisions: Any = None,
    show_measured_ceilings: bool = True,
    title: Optional[str] = None,
) -> "Figure":
    """The profile's op groups on ``profile.gpu``'s roofline: bound and achieved rate per group; returns the Figure.

    - ``top``: draw only the ``top`` groups with the most measured time among those that have FLOPs
      and bytes (default: all of them).
    - ``precisions``: compute roofs as in ``solkit.plot.roofline`` (``["bf16", "fp32:vector"]``);
      default the dense matrix peak of the profile's ``mfu_precision``.
    - ``ax``: draw into these axes (their figure is returned); default a new 9 x 6 in Figure.

    A group's point pair uses its calls summed: executed FLOPs / bytes, executed FLOPs / T_SOL and
    executed FLOPs / measured seconds. NB: a group of many shapes sits at its aggregate intensity,
    on or under the roofs (its calls may each be bound by a different roof). A group measured
    below its T_SOL is marked L2* (likely L2-resident) rather than given a fraction above 1.
    """
    require_matplotlib()
    from matplotlib.transforms import offset_copy

    from .figure import ChartFigure

    prof = _check_profile(profile)
    n = None if top is None else _check_top(top, "a positive integer or None")
    ax, title = check_axes(ax), check_title(title)
    ceilings_too = flag("show_measured_ceilings", show_measured_ceilings)
    g = prof.gpu
    roofs = roof_specs(g, precisions if precisions is not None else [prof.mfu_precision])
    sel = _group_points(prof, n)
    drawn = sel.drawn
    points = [d.point for d in drawn]

    if ax is None:
        fig = ChartFigure(figsize=ROOFLINE_SIZE, dpi=DPI)
        ax = fig.add_subplot(1, 1, 1)
        fig.subplots_adjust(**ROOFLINE_MARGINS)
    else:
        fig = ax.figure  # type: ignore[assignment]  # a SubFigure draws the same

    bw_t = g.memory_bandwidth / TERA
    top_rate = roofs[0][2] / TERA
    shown = title if title is not None else f"{_name(prof)} on the roofline: {g.full_name} (dense peaks)"
    x_lo, x_hi = draw_frame(ax, g, points, bw_t, top_rate, shown)
    scene = Scene(fig, ax)
    biggest = max((d.seconds for d in drawn), default=1.0)
    areas = [max(MIN_AREA, MAX_AREA * d.seconds / biggest) for d in drawn]
    for d, area in zip(drawn, areas):
        scene.mark(d.point.x, d.point.y, math.sqrt(MARKER_AREA) + 2, point=True)
        scene.mark(d.point.x, float(d.point.measured_y or 0.0), math.sqrt(area) + 2, point=True)
    ridges = datasheet_roofs(scene, g, roofs, bw_t, top_rate, x_lo, x_hi)
    ceilings = measured_ceilings(scene, g, bw_t, top_rate, x_lo, x_hi) if ceilings_too else []

    handles = bound_points(scene, points, "bound group (at T_SOL)")
    achieved = [float(p.measured_y or 0.0) for p in points]  # every group point has its measured rate
    gap_lines(scene, points, achieved)
    hs = ax.scatter([p.x for p in points], achieved, s=areas, facecolors="none",
                    edgecolors=[BOUND_COLORS[p.bound] for p in points], linewidths=1.4, zorder=6)
    hs.set_gid("points:measured")
    if points:
        handles.append(line2d(marker="o", ls="-", color="0.35", markerfacecolor="white", markersize=7,
                               label="measured: achieved rate (area ~ time), % of SOL"))
    handles.append(line2d(color=ROOF_COLOR, lw=1.8, label="datasheet roofs (dense)"))
    draw_legend(scene, handles + ceilings + [ridges])
    point_labels(scene, points)

    note = _note(prof, sel)
    if note:
        under = offset_copy(ax.transAxes, fig=fig, y=-34, units="points")  # under the x label
        t = ax.text(0.0, 0.0, note, transform=under, ha="left", va="top", fontsize=NOTE_FONTSIZE, color="0.25")
        t.set_gid("note:left-out")
    return fig


# ---- where the time goes ---------------------------------------------------------------------


@dataclass
class _Bar:
    label: str
    sol: float = 0.0
    predicted: float = 0.0
    above: float = 0.0
    unmodeled: float = 0.0
    share: float = 0.0
    sol_fraction: Optional[float] = None
    l2: bool = False

    @property
    def total(self) -> float:
        return self.sol + self.predicted + self.above + self.unmodeled


def _bar(row: dict[str, Any]) -> _Bar:
    """A report row as segments (seconds): floor, prediction above it, measured above the prediction."""
    measured = float(row["measured_s"])
    b = _Bar(str(row["group"]), share=float(row["share"]), sol_fraction=row["sol_fraction"])
    if not row["modeled"]:
        b.unmodeled = measured
        return b
    t_sol, predicted = float(row["t_sol_s"]), float(row["predicted_s"])
    b.sol = min(t_sol, measured)
    b.predicted = max(min(predicted, measured) - b.sol, 0.0)
    b.above = max(measured - b.sol - b.predicted, 0.0)
    b.l2 = t_sol > measured or bool(row["faster_than_dram_sol"])
    return b


def _breakdown_ticks(profile: "Profile", top: int) -> list[str]:
    """The breakdown's bar labels as shown: the ``top`` groups, "other" if any are left, and idle."""
    return [_short(b.label) for b in _bars(profile, top)] + ["idle"]


def _breakdown_layout(ticks: list[str]) -> tuple[float, dict[str, float]]:
    """(height in inches, subplot margins) of a 9 in wide breakdown: the longest label on the left, the title above,
    the x label and the legend below."""
    height = 2.1 + 0.34 * len(ticks)
    left = min(0.42, (0.3 + 0.062 * max(len(s) for s in ticks)) / 9.0)
    return height, {"left": left, "right": 0.98, "top": 1 - 0.62 / height, "bottom": 1.05 / height}


def _bars(profile: "Profile", top: int) -> list[_Bar]:
    rows = profile.groups()
    bars = [_bar(r) for r in rows[:top]]
    rest = [_bar(r) for r in rows[top:]]
    if rest:
        other = _Bar(f"other ({len(rest)} groups)")
        for b in rest:
            other.sol += b.sol
            other.predicted += b.predicted
            other.above += b.above
            other.unmodeled += b.unmodeled
            other.share += b.share
        bars.append(other)
    return bars


@checked_call
def time_breakdown(profile: Any, top: int = 12, ax: Optional["Axes"] = None, *, title: Optional[str] = None) -> "Figure":
    """Where the time goes: a bar per op group (the ``top`` largest, the rest as "other") and one for idle time.

    Each modeled group's bar is its measured time (us) split into T_SOL, the calibrated prediction
    above T_SOL and the measured time above the prediction; an unmodeled group's is grey; the last
    bar is the idle time. The text at a bar's end: measured us, share of the kernel time, SOL fraction.
    """
    require_matplotlib()
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter
    from matplotlib.transforms import offset_copy

    prof = _check_profile(profile)
    n = _check_top(top)
    ax, title = check_axes(ax), check_title(title)
    bars = _bars(prof, n)
    idle = prof.idle_seconds
    labels = [b.label for b in bars] + ["idle"]
    ticks = [_short(label) for label in labels]

    if ax is None:
        from .figure import ChartFigure

        height, margins = _breakdown_layout(ticks)
        fig = ChartFigure(figsize=(9.0, height), dpi=DPI)
        ax = fig.add_subplot(1, 1, 1)
        fig.subplots_adjust(**margins)
    else:
        fig = ax.figure  # type: ignore[assignment]

    ys = list(range(len(labels)))
    for y, b in zip(ys, bars):
        left = 0.0
        for kind in ("sol", "predicted", "above", "unmodeled"):
            width = getattr(b, kind) * US
            if width <= 0:
                continue
            (rect,) = ax.barh([y], [width], left=[left], height=0.72, color=SEGMENT_COLORS[kind],
                              edgecolor="white", linewidth=0.4).patches
            rect.set_gid(f"bar:{kind}:{b.label}")
            left += width
    if idle > 0:
        (rect,) = ax.barh([ys[-1]], [idle * US], height=0.72, color=SEGMENT_COLORS["idle"], edgecolor="0.55",
                          hatch="///", linewidth=0.6).patches
        rect.set_gid("bar:idle:idle")

    longest = max([b.total * US for b in bars] + [idle * US, 1e-9])
    for y, b in zip(ys, bars):
        if b.unmodeled and not (b.sol or b.predicted or b.above):
            tail = "unmodeled"
        elif b.l2 and b.sol_fraction is None:
            tail = "L2*"
        else:
            tail = f"{_pct(b.sol_fraction)} of SOL" if b.sol_fraction is not None else ""
        text = f"{b.total * US:,.1f} us  {_pct(b.share)}" + (f"  {tail}" if tail else "")
        t = ax.text(b.total * US + longest * 0.01, y, text, va="center", ha="left", fontsize=7.5, color="0.15")
        t.set_gid(f"value:{b.label}")
    span = prof.span_seconds
    t = ax.text(idle * US + longest * 0.01, ys[-1], f"{idle * US:,.1f} us  {idle / span:.0%} of the span" if span > 0
                else f"{idle * US:,.1f} us", va="center", ha="left", fontsize=7.5, color="0.15")
    t.set_gid("value:idle")

    ax.set_yticks(ys)
    ax.set_yticklabels(ticks, fontsize=8)
    ax.set_ylim(len(labels) - 0.4, -0.6)  # largest on top
    ax.set_xlim(0, longest * 1.3)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.set_xlabel("time (us)")
    ax.grid(True, axis="x", color="0.88", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ranks = f" (slowest of {len(prof.ranks)} ranks)" if prof.ranks else ""
    ax.set_title(title if title is not None else
                 f"Where the time goes: {_name(prof)}{ranks} on {prof.gpu.name}\n"
                 f"span {span * 1e3:,.3f} ms, kernels {prof.kernel_seconds * 1e3:,.3f} ms, coverage "
                 f"{prof.coverage:.1%}, MFU {prof.mfu:.1%} (dense {prof.mfu_precision})", fontsize=10)
    used = [k for k in ("sol", "predicted", "above", "unmodeled") if any(getattr(b, k) > 0 for b in bars)]
    handles = [Patch(facecolor=SEGMENT_COLORS[k], edgecolor="white", label=SEGMENT_LABELS[k]) for k in used]
    if idle > 0:
        handles.append(Patch(facecolor=SEGMENT_COLORS["idle"], edgecolor="0.55", hatch="///", label=SEGMENT_LABELS["idle"]))
    below = offset_copy(ax.transAxes, fig=fig, y=-30, units="points")  # under the x label, whatever the axes' height
    legend = ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below,
                       ncol=3, fontsize=7.5, frameon=False)
    legend.set_gid("legend")
    return fig


# ---- the profile's chart ---------------------------------------------------------------------


@checked_call
def profile(profile: Any, chart: str = "both", top: Optional[int] = None, *, title: Optional[str] = None) -> "Figure":
    """The natural chart of a profile: where the time goes above its op groups on the roofline; returns the Figure.

    - ``chart``: "both" (default: one figure, ``time_breakdown`` above ``profile_roofline``), "breakdown" or
      "roofline" (the one chart, as that function draws it).
    - ``top``: the groups drawn, as each chart takes it (default: the breakdown's 12 largest, every group on the
      roofline).
    - ``title``: the title of the one chart ("both": of the breakdown; the roofline keeps its own).
    """
    require_matplotlib()
    from .figure import ChartFigure

    prof = _check_profile(profile)
    which = choice("chart", chart, CHARTS)
    n = None if top is None else _check_top(top, "a positive integer or None")
    if which == "breakdown":
        return time_breakdown(prof, 12 if n is None else n, title=title)
    if which == "roofline":
        return profile_roofline(prof, n, title=title)
    height, margins = _breakdown_layout(_breakdown_ticks(prof, 12 if n is None else n))
    fig = ChartFigure(figsize=(ROOFLINE_SIZE[0], height + ROOFLINE_SIZE[1]), dpi=DPI)
    upper, lower = fig.subfigures(2, 1, squeeze=False, height_ratios=[height, ROOFLINE_SIZE[1]])[:, 0]
    upper.subplots_adjust(**margins)
    lower.subplots_adjust(**ROOFLINE_MARGINS)
    time_breakdown(prof, 12 if n is None else n, upper.add_subplot(1, 1, 1), title=title)
    profile_roofline(prof, n, lower.add_subplot(1, 1, 1))
    return fig
