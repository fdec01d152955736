"""Label placement in display pixels: boxes, segments and a greedy placer (no matplotlib).

Everything here is plain geometry on numbers the caller measured: the axes area as a ``Box``,
markers and lines as pixel coordinates, a text's size in pixels and ``px_per_pt`` (the figure's
dpi / 72) to turn offsets in points into pixels. ``solkit.plot.charts`` feeds it from matplotlib.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Optional, Sequence

__all__ = ["Box", "Segment", "Spot", "Placement", "Placer", "clip_length", "crosses", "align", "relpos", "chain"]

#: a segment (x0, y0, x1, y1) in pixels
Segment = tuple[float, float, float, float]


@dataclass
class Box:
    """An axis-aligned box in display pixels."""

    x0: float
    y0: float
    x1: float
    y1: float

    @classmethod
    def around(cls, x: float, y: float, r: float) -> "Box":
        """The square of half-side r centred on (x, y)."""
        return cls(x - r, y - r, x + r, y + r)

    def overlap(self, o: "Box") -> float:
        """Area shared with o."""
        w = min(self.x1, o.x1) - max(self.x0, o.x0)
        h = min(self.y1, o.y1) - max(self.y0, o.y0)
        return w * h if w > 0 and h > 0 else 0.0

    def outside(self, o: "Box") -> float:
        """Area of self not inside o."""
        return (self.x1 - self.x0) * (self.y1 - self.y0) - self.overlap(o)

    def distance(self, x: float, y: float) -> float:
        """Distance from the point (x, y) to the box (0 inside)."""
        return math.hypot(max(self.x0 - x, 0.0, x - self.x1), max(self.y0 - y, 0.0, y - self.y1))

    def pad(self, p: float) -> "Box":
        """The box grown by p on every side."""
        return Box(self.x0 - p, self.y0 - p, self.x1 + p, self.y1 + p)


def clip_length(seg: Segment, b: Box) -> float:
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


def _orient(ax: float, ay: float, bx: float, by: float, cx: float, cy: float) -> float:
    """Twice the signed area of the triangle a, b, c: > 0 when c lies left of a -> b."""
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)


def crosses(s: Segment, t: Segment) -> bool:
    """Whether two segments cross properly (touching ends do not count)."""
    d1 = _orient(t[0], t[1], t[2], t[3], s[0], s[1])
    d2 = _orient(t[0], t[1], t[2], t[3], s[2], s[3])
    d3 = _orient(s[0], s[1], s[2], s[3], t[0], t[1])
    d4 = _orient(s[0], s[1], s[2], s[3], t[2], t[3])
    return d1 * d2 < 0 and d3 * d4 < 0


def align(angle: float) -> tuple[str, str]:
    """Text alignment (ha, va) for a label put in direction ``angle`` (degrees) from its point."""
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    ha = "left" if c > 0.3 else "right" if c < -0.3 else "center"
    va = "bottom" if s > 0.3 else "top" if s < -0.3 else "center"
    return ha, va


def relpos(ha: str, va: str) -> tuple[float, float]:
    """Where on the label box its leader attaches (fractions of the box): the side facing the point."""
    rx = {"left": 0.0, "right": 1.0, "center": 0.5}[ha]
    ry = {"bottom": 0.0, "top": 1.0, "center": 0.5}[va]
    if rx != 0.5 and ry != 0.5:  # a diagonal: attach at the middle of the vertical side
        ry = 0.5
    return rx, ry


def chain(cx: float, cy: float, w: float, h: float, angle: float) -> list[Box]:
    """A w x h text centred on (cx, cy), turned by ``angle`` degrees, as a chain of h x h squares along it (padded by 1)."""
    rad = math.radians(angle)
    n = max(1, math.ceil(w / h))
    boxes = []
    for i in range(n):
        t = (i + 0.5) / n - 0.5
        x, y = cx + t * w * math.cos(rad), cy + t * w * math.sin(rad)
        boxes.append(Box.around(x, y, h / 2).pad(1))
    return boxes


class Spot(NamedTuple):
    """One candidate position of a label: its cost, offset in points, alignment, box and leader."""

    cost: float
    dx: float
    dy: float
    ha: str
    va: str
    box: Box
    leader: Optional[Segment]


class Placement(NamedTuple):
    """Where a label went: the anchor's index, the offset in points, ha, va and whether it needs a leader."""

    anchor: int
    dx: float
    dy: float
    ha: str
    va: str
    leader: bool


class Placer:
    """Greedy label placement in display pixels: each label takes the cheapest of a ring of offsets."""

    ANGLES = (0, 20, -20, 45, -45, 70, -70, 90, -90, 110, -110, 135, -135, 160, -160, 180)
    RADII = (5, 12, 20, 30, 42, 56, 72, 90)
    LEADER_FROM = 12  # points: a label further than this gets a leader line

    def __init__(self, area: Box, px_per_pt: float) -> None:
        self.area = area  # the axes: labels stay inside
        self.px_per_pt = px_per_pt
        self.labels: list[Box] = []  # placed text: never overlap
        self.marks: list[Box] = []  # markers: avoid
        self.segments: list[Segment] = []  # lines: avoid crossing
        self.leaders: list[Segment] = []  # placed leaders: never cross
        self.centres: list[tuple[float, float]] = []  # labelled points

    def add_mark(self, px: float, py: float, size_pt: float, point: bool = False) -> None:
        """A marker of ``size_pt`` points at pixel (px, py); ``point``: a labelled point (no label may seem to name it)."""
        self.marks.append(Box.around(px, py, size_pt * self.px_per_pt / 2))
        if point:
            self.centres.append((px, py))

    def add_line(self, pts: Sequence[tuple[float, float]]) -> None:
        """A polyline through the pixel points ``pts``, which labels and leaders avoid."""
        for (a, b), (c, d) in zip(pts, pts[1:]):
            self.segments.append((a, b, c, d))

    def reserve(self, *boxes: Box) -> None:
        """Keep labels off already drawn text (roof labels, the legend)."""
        self.labels.extend(boxes)

    def clear_of(self, box: Box) -> bool:
        """Whether the box overlaps no marker and no reserved text."""
        return not any(box.overlap(o) for o in self.marks + self.labels)

    def is_free(self, boxes: Sequence[Box]) -> bool:
        """Whether the boxes stay inside the area and clear of markers and reserved text."""
        return all(b.outside(self.area) == 0 and self.clear_of(b) for b in boxes)

    def place(self, anchors: Sequence[tuple[float, float]], size: tuple[float, float]) -> Placement:
        """The cheapest spot for a text of ``size`` (w, h pixels) next to one of ``anchors`` (pixels); reserves it.

        Cost: distance, plus heavy penalties for covering placed text, markers or lines, for
        leaving the area, for a leader that crosses text, markers, lines or other leaders, and
        for a label without a leader that sits nearer to another point than to its own.
        Ties go to the first anchor, then the first spot in ``RADII`` x ``ANGLES`` order.
        """
        w, h = size
        i, best = min(((i, s) for i, (px, py) in enumerate(anchors) for s in self.candidates(px, py, w, h)),
                      key=lambda c: c[1].cost)
        box = best.box
        self.labels.append(Box(box.x0 - 5, box.y0 - 1, box.x1 + 5, box.y1 + 1))  # keep words of two labels apart
        if best.leader is not None:
            self.leaders.append(best.leader)
        return Placement(i, best.dx, best.dy, best.ha, best.va, best.leader is not None)

    def candidates(self, px: float, py: float, w: float, h: float) -> Iterable[Spot]:
        """Every spot for a w x h text around the pixel (px, py), with its cost."""
        own = Box.around(px, py, 3)
        marks = [b for b in self.marks if b.overlap(own) == 0]
        others = [c for c in self.centres if abs(c[0] - px) > 3 or abs(c[1] - py) > 3]
        for r in self.RADII:
            for a in self.ANGLES:
                dx = r * math.cos(math.radians(a))
                dy = r * math.sin(math.radians(a))
                ha, va = align(a)
                ax_ = px + dx * self.px_per_pt
                ay_ = py + dy * self.px_per_pt
                x0 = ax_ if ha == "left" else ax_ - w if ha == "right" else ax_ - w / 2
                y0 = ay_ if va == "bottom" else ay_ - h if va == "top" else ay_ - h / 2
                box = Box(x0, y0, x0 + w, y0 + h)
                padded = box.pad(2)
                cost = 3.0 * r + (0.0 if a in (0, 90, -90, 180) else 4.0)
                cost += 40.0 * padded.outside(self.area)
                cost += 30.0 * sum(padded.overlap(b) for b in self.labels)
                cost += 30.0 * sum(padded.overlap(b) for b in marks)
                cost += 20.0 * sum(clip_length(s, padded) for s in self.segments + self.leaders)
                leader = None
                if r >= self.LEADER_FROM:
                    rx, ry = relpos(ha, va)
                    leader = (px, py, box.x0 + rx * w, box.y0 + ry * h)
                    cost += 20.0 * sum(clip_length(leader, b.pad(1)) for b in self.labels)
                    cost += 10.0 * sum(clip_length(leader, b) for b in marks)
                    cost += 150.0 * sum(crosses(leader, s) for s in self.segments)
                    cost += 600.0 * sum(crosses(leader, s) for s in self.leaders)
                else:
                    d_own = box.distance(px, py)
                    if any(box.distance(cx, cy) < d_own + 8 for cx, cy in others):
                        cost += 300.0  # ambiguous: the label is as near another point
                yield Spot(cost, dx, dy, ha, va, box, leader)
