"""Roofline charts: workloads as points under a GPU's compute and memory roofs (needs matplotlib).

matplotlib is the optional extra ``plot`` (``pip install 'solkit[plot]'``). It is imported
inside the functions, never at module import, so ``import solkit`` and ``import solkit.plot``
work without it; calling ``roofline`` without it raises ``PlotDependencyError``.

What the chart shows, on log-log axes:

- x: arithmetic intensity, executed FLOPs per compulsory DRAM byte (``sk.roofline(w, gpu).intensity``);
  y: attainable performance, executed FLOPs / T_SOL, in TFLOP/s.
- The datasheet roofs: one horizontal compute roof per precision (dense peaks) starting at its
  ridge point, and the memory roof y = bandwidth * x up to the highest ridge; each ridge point
  is marked with its intensity.
- The GPU's measured ceilings (``measured:`` in its spec: the bf16 matmul rate and the copy
  bandwidth) as dashed lines.
- One point per workload at (intensity, executed FLOPs / T_SOL), coloured by the roof behind
  the larger share of its T_SOL. A single-kernel workload sits on its roof; a multi-kernel one
  sits at its aggregate intensity, on or under the roofs (NB: its kernels may each be bound by
  a different roof, so it can sit below both).
- With ``measured``: a hollow marker at the achieved rate (executed FLOPs / measured seconds),
  joined to the bound point, and the SOL fraction (T_SOL / measured) in the label.

Artists carry a ``gid`` so that code (and the tests) can find them: ``"roof:<precision>:<unit>"``,
``"roof:memory"``, ``"measured:<precision>:matrix"``, ``"measured:copy"``, ``"ridge"``,
``"points:compute"``, ``"points:memory"``, ``"points:measured"``, ``"gap:<label>"``, ``"label:<label>"``.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from ._validate import positive
from .errors import (
    ArgumentTypeError,
    MeasurementError,
    OptionalDependencyError,
    OptionError,
    PlotDependencyError,
    SolkitWarning,
    UnsupportedPrecisionError,
)
from .hardware import as_gpu
from .sol import roofline as _roofline
from .workload import Kernel, Workload, as_workload

if TYPE_CHECKING:  # pragma: no cover
    from .hardware.schema import GPU
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["PlotDependencyError", "roofline", "save", "DEFAULT_PRECISIONS", "INSTALL_HINT"]

#: what to run when matplotlib is missing
INSTALL_HINT = "pip install 'solkit[plot]'"

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


def _require_matplotlib() -> None:
    """Import matplotlib or raise ``PlotDependencyError`` with the install hint."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotDependencyError(
            f"solkit.plot needs matplotlib, which is not installed ({exc}); install it with: {INSTALL_HINT}"
        ) from exc


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


def _roof_specs(gpu: GPU, precisions: Any) -> list[tuple[str, str, float]]:
    """(precision, unit actually used, FLOP/s) of each compute roof to draw, highest first, no repeats."""
    if precisions is None:
        wanted: list[tuple[str, str]] = list(DEFAULT_PRECISIONS)
        optional = True
    else:
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
            elif isinstance(item, tuple) and len(item) == 2:
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


# ---- label placement ---------------------------------------------------------------------


@dataclass
class _Box:
    """An axis-aligned box in display pixels."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlap(self, o: "_Box") -> float:
        """Area shared with o."""
        w = min(self.x1, o.x1) - max(self.x0, o.x0)
        h = min(self.y1, o.y1) - max(self.y0, o.y0)
        return w * h if w > 0 and h > 0 else 0.0

    def outside(self, o: "_Box") -> float:
        """Area of self not inside o."""
        return (self.x1 - self.x0) * (self.y1 - self.y0) - self.overlap(o)

    def distance(self, x: float, y: float) -> float:
        """Distance from the point (x, y) to the box (0 inside)."""
        return math.hypot(max(self.x0 - x, 0.0, x - self.x1), max(self.y0 - y, 0.0, y - self.y1))

    def pad(self, p: float) -> "_Box":
        """The box grown by p on every side."""
        return _Box(self.x0 - p, self.y0 - p, self.x1 + p, self.y1 + p)


def _clip_length(seg: tuple[float, float, float, float], b: _Box) -> float:
    """Length of the segment inside the box (Liang-Barsky)."""
    x0, y0, x1, y1 = seg
    dx, dy = x1 - x0, y1 - y0
    t0, t1 = 0.0, 1.0
    for p, q in ((-dx, x0 - b.x0), (dx, b.x1 - x0), (-dy, y0 - b.y0), (dy, b.y1 - y0)):
        if p == 0:
            if q < 0:
                return 0.0
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return 0.0
    return (t1 - t0) * math.hypot(dx, dy)


class _Placer:
    """Greedy label placement in display pixels: each label takes the cheapest of a ring of offsets."""

    ANGLES = (0, 20, -20, 45, -45, 70, -70, 90, -90, 110, -110, 135, -135, 160, -160, 180)
    RADII = (5, 12, 20, 30, 42, 56, 72, 90)
    LEADER_FROM = 12  # points: a label further than this gets a leader line

    def __init__(self, fig: Any, ax: Any) -> None:
        from matplotlib.backends.backend_agg import RendererAgg

        self.ax = ax
        self.px_per_pt = fig.dpi / 72.0
        self.renderer = RendererAgg(int(fig.bbox.width) or 1, int(fig.bbox.height) or 1, fig.dpi)
        self.area = _Box(*ax.bbox.extents)
        self.labels: list[_Box] = []  # placed text: never overlap
        self.marks: list[_Box] = []  # markers: avoid
        self.segments: list[tuple[float, float, float, float]] = []  # lines: avoid crossing
        self.leaders: list[tuple[float, float, float, float]] = []  # placed leaders: never cross
        self.centres: list[tuple[float, float]] = []  # labelled points (pixels)

    def to_px(self, x: float, y: float) -> tuple[float, float]:
        px, py = self.ax.transData.transform((x, y))
        return float(px), float(py)

    def text_size(self, text: str, fontsize: float) -> tuple[float, float]:
        from matplotlib.font_manager import FontProperties

        prop = FontProperties(size=fontsize)
        w = h = 0.0
        for line in text.split("\n"):
            lw, lh, _ = self.renderer.get_text_width_height_descent(line, prop, ismath=False)
            w, h = max(w, lw), h + lh * 1.2
        return w, h

    def add_mark(self, x: float, y: float, size_pt: float, point: bool = False) -> None:
        """A marker to keep text off; ``point``: a labelled point, which labels must not seem to belong to."""
        px, py = self.to_px(x, y)
        r = size_pt * self.px_per_pt / 2
        self.marks.append(_Box(px - r, py - r, px + r, py + r))
        if point:
            self.centres.append((px, py))

    def add_line(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        pts = [self.to_px(x, y) for x, y in zip(xs, ys)]
        for (a, b), (c, d) in zip(pts, pts[1:]):
            self.segments.append((a, b, c, d))

    def add_text_box(self, artist: Any) -> None:
        """Reserve the space of an already drawn text (roof labels, the legend)."""
        bb = artist.get_window_extent(renderer=self.renderer)
        self.labels.append(_Box(bb.x0, bb.y0, bb.x1, bb.y1).pad(2))

    def slanted_boxes(self, artist: Any) -> list[_Box]:
        """A rotated text as a chain of squares along it (its bounding box would cover a whole corner)."""
        bb = artist.get_window_extent(renderer=self.renderer)
        w, h = self.text_size(artist.get_text(), artist.get_fontsize())
        angle = math.radians(artist.get_rotation())
        n = max(1, math.ceil(w / h))
        cx, cy = (bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2
        boxes = []
        for i in range(n):
            t = (i + 0.5) / n - 0.5
            x, y = cx + t * w * math.cos(angle), cy + t * w * math.sin(angle)
            boxes.append(_Box(x - h / 2, y - h / 2, x + h / 2, y + h / 2).pad(1))
        return boxes

    def is_free(self, boxes: Sequence[_Box]) -> bool:
        """Whether the boxes stay inside the axes and clear of markers and reserved text."""
        return all(b.outside(self.area) == 0 and not any(b.overlap(o) for o in self.marks + self.labels) for b in boxes)

    @staticmethod
    def align(angle: float) -> tuple[str, str]:
        """Text alignment for a label put in direction ``angle`` (degrees) from its point."""
        c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        ha = "left" if c > 0.3 else "right" if c < -0.3 else "center"
        va = "bottom" if s > 0.3 else "top" if s < -0.3 else "center"
        return ha, va

    @staticmethod
    def relpos(ha: str, va: str) -> tuple[float, float]:
        """Where on the label box its leader attaches (fractions of the box): the side facing the point."""
        rx = {"left": 0.0, "right": 1.0, "center": 0.5}[ha]
        ry = {"bottom": 0.0, "top": 1.0, "center": 0.5}[va]
        if rx != 0.5 and ry != 0.5:  # a diagonal: attach at the middle of the vertical side
            ry = 0.5
        return rx, ry

    def place(
        self, anchors: Sequence[tuple[float, float]], text: str, fontsize: float
    ) -> tuple[int, float, float, str, str, bool]:
        """The cheapest spot for ``text`` next to one of ``anchors`` (data coordinates).

        Returns the anchor's index, the offset in points, ha, va and whether it needs a leader.
        Cost: distance, plus heavy penalties for covering placed text, markers or lines, for
        leaving the axes, for a leader that crosses text, markers, lines or other leaders, and
        for a label without a leader that sits nearer to another point than to its own.
        """
        w, h = self.text_size(text, fontsize)
        best: Any = None
        for i, (x, y) in enumerate(anchors):
            px, py = self.to_px(x, y)
            for cand in self._candidates(px, py, w, h):
                if best is None or cand[0] < best[0]:
                    best = (cand[0], (i,) + cand[1], cand[2], cand[3])
        _, choice, box, leader = best
        self.labels.append(_Box(box.x0 - 5, box.y0 - 1, box.x1 + 5, box.y1 + 1))  # keep words of two labels apart
        if leader is not None:
            self.leaders.append(leader)
        return choice

    def _candidates(self, px: float, py: float, w: float, h: float) -> Iterable[tuple[float, tuple[Any, ...], _Box, Any]]:
        """(cost, (dx, dy, ha, va, leader?), box, leader segment) of every spot around the pixel (px, py)."""
        own = _Box(px - 3, py - 3, px + 3, py + 3)
        marks = [b for b in self.marks if b.overlap(own) == 0]
        others = [c for c in self.centres if abs(c[0] - px) > 3 or abs(c[1] - py) > 3]
        for r in self.RADII:
            for a in self.ANGLES:
                dx = r * math.cos(math.radians(a))
                dy = r * math.sin(math.radians(a))
                ha, va = self.align(a)
                ax_ = px + dx * self.px_per_pt
                ay_ = py + dy * self.px_per_pt
                x0 = ax_ if ha == "left" else ax_ - w if ha == "right" else ax_ - w / 2
                y0 = ay_ if va == "bottom" else ay_ - h if va == "top" else ay_ - h / 2
                box = _Box(x0, y0, x0 + w, y0 + h)
                padded = box.pad(2)
                cost = 3.0 * r + (0.0 if a in (0, 90, -90, 180) else 4.0)
                cost += 40.0 * padded.outside(self.area)
                cost += 30.0 * sum(padded.overlap(b) for b in self.labels)
                cost += 30.0 * sum(padded.overlap(b) for b in marks)
                cost += 20.0 * sum(_clip_length(s, padded) for s in self.segments + self.leaders)
                leader = None
                if r >= self.LEADER_FROM:
                    rx, ry = self.relpos(ha, va)
                    leader = (px, py, box.x0 + rx * w, box.y0 + ry * h)
                    cost += 20.0 * sum(_clip_length(leader, b.pad(1)) for b in self.labels)
                    cost += 10.0 * sum(_clip_length(leader, b) for b in marks)
                    cost += 150.0 * sum(_crosses(leader, s) for s in self.segments)
                    cost += 600.0 * sum(_crosses(leader, s) for s in self.leaders)
                else:
                    d_own = box.distance(px, py)
                    if any(box.distance(cx, cy) < d_own + 8 for cx, cy in others):
                        cost += 300.0  # ambiguous: the label is as near another point
                yield cost, (dx, dy, ha, va, leader is not None), box, leader


def _crosses(s: tuple[float, float, float, float], t: tuple[float, float, float, float]) -> bool:
    """Whether two segments cross properly (touching ends do not count)."""

    def orient(ax: float, ay: float, bx: float, by: float, cx: float, cy: float) -> float:
        return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)

    d1 = orient(t[0], t[1], t[2], t[3], s[0], s[1])
    d2 = orient(t[0], t[1], t[2], t[3], s[2], s[3])
    d3 = orient(s[0], s[1], s[2], s[3], t[0], t[1])
    d4 = orient(s[0], s[1], s[2], s[3], t[2], t[3])
    return d1 * d2 < 0 and d3 * d4 < 0


def _slanted(placer: _Placer, x_lo: float, slope: float, lift: float, text: str, color: str, va: str, gid: str) -> Any:
    """Text along the line y = slope * x, ``lift`` times above (or below) it, as far left as it is clear of points.

    On log-log axes the line runs along the data direction (x, y) at any point (x, y), so a
    rotation of atan2(y, x) in data space, turned by the transform, follows the line whatever
    the axes' final size.
    """
    chosen = None
    for k in range(16):
        x = x_lo * 1.6 * 1.5**k
        y = slope * x * lift
        t = placer.ax.text(x, y, text, rotation=math.degrees(math.atan2(y, x)), transform_rotates_text=True,
                           rotation_mode="anchor", ha="left", va=va, fontsize=ROOF_FONTSIZE, color=color, clip_on=True)
        boxes = placer.slanted_boxes(t)
        if placer.is_free(boxes):
            chosen = (t, boxes)
            break
        t.remove()
    if chosen is None:  # nowhere clear: the lower-left end
        x = x_lo * 1.6
        y = slope * x * lift
        t = placer.ax.text(x, y, text, rotation=math.degrees(math.atan2(y, x)), transform_rotates_text=True,
                           rotation_mode="anchor", ha="left", va=va, fontsize=ROOF_FONTSIZE, color=color, clip_on=True)
        chosen = (t, placer.slanted_boxes(t))
    t, boxes = chosen
    t.set_gid(gid)
    placer.labels.extend(boxes)
    return t


# ---- the chart ---------------------------------------------------------------------------


@dataclass
class _Point:
    """One workload on the chart: its bound point and, if measured, its achieved rate (TFLOP/s)."""

    label: str
    x: float
    y: float
    bound: str
    measured_y: Optional[float] = None
    sol_fraction: Optional[float] = None


def _points(workloads: dict[str, Workload], gpu: GPU, measured: Optional[Mapping[str, Any]]) -> list[_Point]:
    """The chart's points: (intensity, executed FLOPs / T_SOL) of each scalar workload, with its measured rate."""
    measured = dict(measured or {})
    unknown = [k for k in measured if k not in workloads]
    if unknown:
        raise OptionError(f"measured has label(s) {unknown} that are not among the workloads {list(workloads)}")
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
                stacklevel=3,
            )
            continue
        p = _Point(label, x, flops / t_sol / TERA, str(r.bound))
        if label in measured:
            seconds_arr = positive(f"measured[{label!r}]", measured[label])
            if seconds_arr.shape != ():
                raise MeasurementError(f"measured[{label!r}] must be one number of seconds, got an array of shape {seconds_arr.shape}")
            seconds = float(seconds_arr)
            p.measured_y = flops / seconds / TERA
            p.sol_fraction = t_sol / seconds
        points.append(p)
    return points


def roofline(
    workloads: Any,
    gpu: Any,
    precisions: Any = None,
    measured: Optional[Mapping[str, Any]] = None,
    ax: Optional["Axes"] = None,
    title: Optional[str] = None,
    show_measured_ceilings: bool = True,
) -> "Figure":
    """A roofline chart of ``workloads`` on ``gpu``; returns the matplotlib Figure (never shows it).

    - ``workloads``: a dict label -> Workload, one Workload (labelled by its name) or a list of
      them. Scalar shapes only: a sweep raises ``OptionError`` naming its label. A workload with
      no FLOPs or no bytes (a gather, a copy) cannot sit on log axes: a ``SolkitWarning``, and it is left out.
    - ``gpu``: a GPU, name, alias or spec path (``UnknownGPUError`` if unknown).
    - ``precisions``: compute roofs to draw, each ``"bf16"`` (matrix unit), ``"fp32:vector"`` or
      ``("fp32", "vector")``; default: fp8 (if the part has it), bf16, tf32 matrix and fp32 vector.
    - ``measured``: label -> measured seconds; adds the achieved point and the SOL fraction.
    - ``ax``: draw into these axes (their figure is returned); default: a new 9 x 6 in Figure at
      150 dpi, built without pyplot so it works headless.
    - ``show_measured_ceilings``: draw the spec's measured bf16 matmul rate and copy bandwidth.

    Labels are placed greedily, in display space, to avoid each other, the markers and the
    lines (with a leader line when they move away); points that coincide share one label.
    NB: placement uses the axes' size at call time; a layout engine that later shrinks the axes
    (``layout="constrained"`` on a crowded figure) can bring labels closer than planned.
    """
    _require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogLocator, NullFormatter

    g = as_gpu(gpu)
    items = _labelled(workloads)
    roofs = _roof_specs(g, precisions)
    points = _points(items, g, measured)

    if ax is None:
        fig = Figure(figsize=FIGSIZE, dpi=DPI)
        ax = fig.add_subplot(1, 1, 1)
        fig.subplots_adjust(left=0.085, right=0.975, bottom=0.09, top=0.93)
    else:
        fig = ax.figure

    bw = g.memory_bandwidth  # bytes/s
    bw_t = bw / TERA  # TFLOP/s per FLOP/byte
    top = roofs[0][2] / TERA
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
        axis.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10)))
        axis.set_minor_formatter(NullFormatter())

    placer = _Placer(fig, ax)
    size = 46  # marker area, points^2
    for p in points:  # the points first: roof labels keep off them too
        placer.add_mark(p.x, p.y, math.sqrt(size) + 2, point=True)
        if p.measured_y is not None:
            placer.add_mark(p.x, p.measured_y, math.sqrt(size) + 2, point=True)

    # datasheet roofs: memory up to the highest ridge, each compute roof from its ridge. Their
    # labels sit in the unattainable corner above the memory roof, left of each ridge point.
    ridge_hi = top / bw_t
    (mem,) = ax.plot([x_lo, ridge_hi], [bw_t * x_lo, top], color=ROOF_COLOR, lw=1.8, solid_capstyle="butt")
    mem.set_gid("roof:memory")
    mem.set_label(f"{g.memory.type} {g.memory.bandwidth_tb_s:g} TB/s")
    placer.add_line(mem.get_xdata(), mem.get_ydata())
    t = _slanted(placer, x_lo, bw_t, 1.25, f"{g.memory.type} {g.memory.bandwidth_tb_s:g} TB/s", ROOF_COLOR, "bottom",
                 "label:roof:memory")
    t.set_fontweight("bold")

    ridge_x, ridge_y = [], []
    for prec, unit, flops in roofs:
        peak = flops / TERA
        ridge = peak / bw_t
        name = f"{prec} vector" if unit == "vector" else prec
        (line,) = ax.plot([ridge, x_hi], [peak, peak], color=ROOF_COLOR, lw=1.8 if unit == "matrix" else 1.3,
                          solid_capstyle="butt")
        line.set_gid(f"roof:{prec}:{unit}")
        line.set_label(f"{name} {_fmt_rate(flops)} {_unit_word(prec)}")
        placer.add_line(line.get_xdata(), line.get_ydata())
        t = ax.annotate(f"{name}  {_fmt_rate(flops)} {_unit_word(prec)}   ridge {_fmt_intensity(ridge)} FLOP/B",
                        (ridge, peak), xytext=(-8, 0), textcoords="offset points", ha="right", va="center",
                        fontsize=ROOF_FONTSIZE, color=ROOF_COLOR)
        t.set_gid(f"label:roof:{prec}:{unit}")
        placer.add_text_box(t)
        ridge_x.append(ridge)
        ridge_y.append(peak)
    ridges = ax.scatter(ridge_x, ridge_y, marker="D", s=18, color=RIDGE_COLOR, zorder=4, label="ridge point")
    ridges.set_gid("ridge")
    for x, y in zip(ridge_x, ridge_y):
        placer.add_mark(x, y, 5)

    # measured ceilings (dashed): the copy bandwidth and the bf16 matmul rate
    ceiling_handles: list[Any] = []
    m = g.measured
    if show_measured_ceilings and m is not None:
        copy_t = m.copy_bandwidth_tb_s
        mm_prec = "bf16" if "bf16" in m.matmul_rate_tflops else None
        mm = m.matmul_rate_tflops[mm_prec] if mm_prec else None
        mem_top = mm if mm is not None else top
        dashes = (0, (5, 3))
        (ml,) = ax.plot([x_lo, mem_top / copy_t], [copy_t * x_lo, mem_top], color=MEASURED_COLOR, lw=1.2, ls=dashes)
        ml.set_gid("measured:copy")
        ml.set_label(f"measured copy {copy_t:.3g} TB/s")
        placer.add_line(ml.get_xdata(), ml.get_ydata())
        _slanted(placer, x_lo, copy_t, 1 / 1.25, f"measured copy {copy_t:.3g} TB/s", MEASURED_COLOR, "top",
                 "label:measured:copy")
        if mm is not None:
            (hl,) = ax.plot([mm / copy_t, x_hi], [mm, mm], color=MEASURED_COLOR, lw=1.2, ls=dashes)
            hl.set_gid(f"measured:{mm_prec}:matrix")
            hl.set_label(f"measured {mm_prec} matmul {mm:g} TFLOP/s")
            placer.add_line(hl.get_xdata(), hl.get_ydata())
            t = ax.annotate(f"measured {mm_prec} matmul  {mm:g} TFLOP/s", (mm / bw_t, mm), xytext=(-8, 0),
                            textcoords="offset points", ha="right", va="center", fontsize=ROOF_FONTSIZE, color=MEASURED_COLOR)
            t.set_gid(f"label:measured:{mm_prec}:matrix")
            placer.add_text_box(t)
        ceiling_handles.append(Line2D([], [], color=MEASURED_COLOR, lw=1.2, ls=dashes, label=f"measured ceilings ({m.date})"))

    # the workloads
    handles: list[Any] = []
    for bound in ("compute", "memory"):
        sel = [p for p in points if p.bound == bound]
        sc = ax.scatter([p.x for p in sel], [p.y for p in sel], s=size, color=BOUND_COLORS[bound], edgecolors="white",
                        linewidths=0.8, zorder=6, label=f"{bound}-bound (at T_SOL)")
        sc.set_gid(f"points:{bound}")
        if sel:
            handles.append(sc)
    meas = [p for p in points if p.measured_y is not None]
    if meas:
        for p in meas:
            (gap,) = ax.plot([p.x, p.x], [p.y, p.measured_y], color=BOUND_COLORS[p.bound], lw=1.0, alpha=0.7, zorder=5)
            gap.set_gid(f"gap:{p.label}")
            placer.add_line([p.x, p.x], [p.y, p.measured_y])
        hs = ax.scatter([p.x for p in meas], [p.measured_y for p in meas], s=size * 0.8, facecolors="white",
                        edgecolors=[BOUND_COLORS[p.bound] for p in meas], linewidths=1.4, zorder=6)
        hs.set_gid("points:measured")
        handles.append(Line2D([], [], marker="o", ls="-", color="0.35", markerfacecolor="white", markersize=6,
                              label="measured: achieved rate, % of SOL"))
    handles.append(Line2D([], [], color=ROOF_COLOR, lw=1.8, label="datasheet roofs (dense)"))
    handles.extend(ceiling_handles)
    handles.append(ridges)

    legend = None
    for loc in ("lower right", "upper left", "center right", "lower center"):
        if legend is not None:
            legend.remove()
        legend = ax.legend(handles=handles, loc=loc, fontsize=7.5, framealpha=0.95, borderpad=0.7)
        legend.set_zorder(10)
        lb = legend.get_window_extent(renderer=placer.renderer)
        box = _Box(lb.x0, lb.y0, lb.x1, lb.y1).pad(3)
        if not any(box.overlap(b) for b in placer.marks + placer.labels):
            break
    placer.labels.append(box)

    # labels: points that coincide on screen share one label; crowded points are placed first
    groups: list[list[_Point]] = []
    for p in points:
        px, py = placer.to_px(p.x, p.y)
        for grp in groups:
            qx, qy = placer.to_px(grp[0].x, grp[0].y)
            if math.hypot(px - qx, py - qy) < 3 and grp[0].measured_y is None and p.measured_y is None:
                grp.append(p)
                break
        else:
            groups.append([p])

    def crowd(grp: list[_Point]) -> int:
        """Points within 90 px: the crowded get the first pick of the space."""
        px, py = placer.to_px(grp[0].x, grp[0].y)
        return sum(1 for q in points if math.dist(placer.to_px(q.x, q.y), (px, py)) < 90)

    for grp in sorted(groups, key=lambda grp: (-crowd(grp), grp[0].x)):
        p = grp[0]
        text = "\n".join(q.label for q in grp)
        if p.sol_fraction is not None:
            text += f"  ({p.sol_fraction:.0%} of SOL)"
        anchors = [(p.x, p.y)] + ([(p.x, p.measured_y)] if p.measured_y is not None else [])
        i, dx, dy, ha, va, lead = placer.place(anchors, text, LABEL_FONTSIZE)
        arrow = dict(arrowstyle="-", color="0.45", lw=0.6, shrinkA=0, shrinkB=3.5, relpos=placer.relpos(ha, va))
        ann = ax.annotate(
            text, anchors[i], xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=LABEL_FONTSIZE,
            color="0.1", zorder=7, linespacing=1.1, arrowprops=arrow if lead else None,
            bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8),
        )
        ann.set_gid("label:" + " / ".join(q.label for q in grp))
    return fig


def save(fig: "Figure", path: Union[str, os.PathLike], dpi: int = DPI) -> str:
    """Write ``fig`` to ``path`` (format from the suffix) at ``dpi``, creating the folder; returns the path."""
    _require_matplotlib()
    p = os.fspath(path)
    folder = os.path.dirname(p)
    if folder:
        os.makedirs(folder, exist_ok=True)
    fig.savefig(p, dpi=dpi, facecolor="white")
    return p
