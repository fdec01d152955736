"""solkit.plot.layout: label-placement geometry in display pixels, tested without matplotlib. Expected values by hand."""

from __future__ import annotations

import subprocess
import sys

import pytest

from solkit.plot.layout import Box, Placement, Placer, align, chain, clip_length, crosses, relpos


def _placer() -> Placer:
    """An empty 200 x 200 px area at 72 dpi (1 px per point)."""
    return Placer(Box(0.0, 0.0, 200.0, 200.0), px_per_pt=1.0)


def test_layout_imports_no_matplotlib():
    """solkit.plot.layout imports, and places a label, with matplotlib blocked; importing it leaves matplotlib out."""
    blocked = (
        "import sys; sys.modules['matplotlib'] = None\n"  # any import of matplotlib now raises ImportError
        "import solkit.plot.layout as L\n"
        "print(L.Placer(L.Box(0, 0, 100, 100), 1.0).place([(50, 50)], (20, 10)))\n"
    )
    subprocess.run([sys.executable, "-c", blocked], check=True, capture_output=True)
    alone = "import solkit.plot.layout, sys; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", alone], check=True)


def test_box_overlap_area():
    """Boxes [0,10]^2 and [5,15]^2 share 5 * 5 = 25 px^2; the other 100 - 25 = 75 px^2 lie outside."""
    a, b = Box(0, 0, 10, 10), Box(5, 5, 15, 15)
    assert a.overlap(b) == b.overlap(a) == 25.0
    assert a.outside(b) == 75.0
    assert a.overlap(Box(2, 3, 4, 8)) == 10.0  # contained: 2 * 5 = 10
    assert a.outside(Box(-1, -1, 11, 11)) == 0.0  # inside: 100 - 100 = 0


def test_box_touching_or_apart_do_not_overlap():
    """Boxes that share only an edge, or are apart, overlap by 0."""
    a = Box(0, 0, 10, 10)
    assert a.overlap(Box(10, 0, 20, 10)) == 0.0  # width 10 - 10 = 0
    assert a.overlap(Box(20, 20, 30, 30)) == 0.0
    assert a.outside(Box(20, 20, 30, 30)) == 100.0  # 10 * 10 - 0


def test_box_distance_pad_around():
    """Distance to a box is 0 inside and Euclidean outside (3-4-5); pad grows every side; around is a square."""
    a = Box(0, 0, 10, 10)
    assert a.distance(5, 5) == 0.0
    assert a.distance(13, 14) == 5.0  # hypot(13 - 10, 14 - 10) = hypot(3, 4) = 5
    assert a.distance(-2, 5) == 2.0
    assert a.pad(2) == Box(-2, -2, 12, 12)
    assert Box.around(100, 50, 3) == Box(97, 47, 103, 53)


def test_clip_length_horizontal_segment():
    """A segment (0,5)-(20,5) through a box x in [5,15] has 15 - 5 = 10 px inside."""
    assert clip_length((0, 5, 20, 5), Box(5, 0, 15, 10)) == pytest.approx(10.0)
    assert clip_length((20, 5, 0, 5), Box(5, 0, 15, 10)) == pytest.approx(10.0)  # either direction


def test_clip_length_diagonal_inside_and_outside():
    """(0,0)-(30,40) is 50 long; x in [0,15] keeps t in [0, 0.5]: 0.5 * 50 = 25 px; wholly inside: its length; missing: 0."""
    assert clip_length((0, 0, 30, 40), Box(0, 0, 15, 100)) == pytest.approx(25.0)
    assert clip_length((6, 5, 9, 5), Box(5, 0, 15, 10)) == pytest.approx(3.0)  # 9 - 6 = 3, all inside
    assert clip_length((0, 20, 20, 20), Box(5, 0, 15, 10)) == 0.0  # parallel, above: y = 20 > 10
    assert clip_length((0, 0, 4, 4), Box(5, 5, 15, 15)) == 0.0  # stops short of the corner (5, 5)


def test_crosses_proper_crossing():
    """The two diagonals of a square cross."""
    assert crosses((0, 0, 10, 10), (0, 10, 10, 0))
    assert crosses((0, 10, 10, 0), (0, 0, 10, 10))


def test_crosses_not_when_apart_or_parallel():
    """Parallel segments and segments that would meet only beyond an end do not cross."""
    assert not crosses((0, 0, 10, 0), (0, 1, 10, 1))  # parallel, 1 px apart
    assert not crosses((0, 0, 10, 0), (5, 1, 5, 10))  # the vertical starts 1 px above the horizontal
    assert not crosses((0, 0, 1, 1), (5, 0, 6, -3))


def test_crosses_not_when_touching():
    """Touching at an end, or an end on the other segment (a T), is not a crossing."""
    assert not crosses((0, 0, 10, 0), (10, 0, 10, 10))  # shared end (10, 0)
    assert not crosses((0, 0, 10, 0), (5, 0, 5, 10))  # T: (5, 0) lies on the first
    assert not crosses((0, 0, 10, 0), (0, 0, 10, 0))  # the same segment: collinear


@pytest.mark.parametrize(
    "angle, expected",
    [
        (0, ("left", "center")),  # cos 0 = 1 > 0.3, sin 0 = 0
        (90, ("center", "bottom")),  # cos 90 = 0, sin 90 = 1 > 0.3
        (180, ("right", "center")),  # cos 180 = -1 < -0.3, sin 180 = 0
        (-45, ("left", "top")),  # cos -45 = 0.707, sin -45 = -0.707 < -0.3
        (20, ("left", "bottom")),  # cos 20 = 0.940, sin 20 = 0.342 > 0.3
    ],
)
def test_align(angle, expected):
    """A label put in direction ``angle`` is aligned by its side facing the point."""
    assert align(angle) == expected


def test_relpos():
    """The leader attaches to the side facing the point; on a diagonal, mid-height of the vertical side."""
    assert relpos("left", "center") == (0.0, 0.5)
    assert relpos("center", "bottom") == (0.5, 0.0)
    assert relpos("center", "top") == (0.5, 1.0)
    assert relpos("right", "top") == (1.0, 0.5)  # diagonal: ry 1.0 -> 0.5
    assert relpos("center", "center") == (0.5, 0.5)


def test_chain_of_squares():
    """A 30 x 10 text at (50, 50), level: ceil(30 / 10) = 3 squares of 10 (+1 pad) centred at x = 40, 50, 60."""
    boxes = chain(50, 50, 30, 10, 0)
    assert len(boxes) == 3
    for b, cx in zip(boxes, (40, 50, 60)):  # 50 + 30 * (-1/3, 0, 1/3)
        assert (b.x0, b.y0, b.x1, b.y1) == pytest.approx((cx - 6, 44, cx + 6, 56))  # 5 + 1 pad each side
    up = chain(50, 50, 30, 10, 90)  # turned upright: along y
    assert [(b.x0 + b.x1) / 2 for b in up] == pytest.approx([50, 50, 50])
    assert [(b.y0 + b.y1) / 2 for b in up] == pytest.approx([40, 50, 60])


def test_marks_lines_and_reserved_text():
    """A 6 pt mark at 2 px/pt is a 6 * 2 = 12 px square; a polyline of 3 points is 2 segments; is_free checks both."""
    p = Placer(Box(0, 0, 200, 200), px_per_pt=2.0)
    p.add_mark(100, 100, 6)  # half side 6 * 2 / 2 = 6 px
    assert p.marks == [Box(94, 94, 106, 106)] and p.centres == []
    p.add_mark(50, 50, 6, point=True)
    assert p.centres == [(50, 50)]
    p.add_line([(0, 0), (10, 0), (10, 10)])
    assert p.segments == [(0, 0, 10, 0), (10, 0, 10, 10)]
    p.reserve(Box(150, 150, 160, 160))
    assert p.is_free([Box(10, 10, 20, 20)])
    assert not p.is_free([Box(10, 10, 20, 20), Box(100, 100, 110, 110)])  # covers the mark
    assert not p.is_free([Box(155, 155, 158, 158)])  # on the reserved text
    assert not p.is_free([Box(195, 10, 205, 20)])  # 5 px past the area's right edge
    assert p.clear_of(Box(195, 10, 205, 20))  # clear of marks and text, though outside


def test_placer_nearest_spot_in_an_empty_scene():
    """Alone, a 20 x 10 label sits 5 pt right of its point (cost 3 * 5 = 15, first of the four ties), with no leader."""
    p = _placer()
    assert p.place([(100, 100)], (20, 10)) == Placement(0, 5.0, 0.0, "left", "center", False)
    assert p.labels == [Box(100, 94, 130, 106)]  # box [105,125] x [95,105], +5 px sideways and +1 px up/down
    assert p.leaders == []


def test_placer_picks_free_spot_over_covered_one():
    """With text just right of the point, the label goes above it: the covered spot costs 15 + 30 * 120 = 3615 > 15."""
    p = _placer()
    p.reserve(Box(115, 95, 140, 105))
    # right (0 deg, r 5): padded box [103,127] x [93,107] covers (127 - 115) * (105 - 95) = 120 px^2
    # above (90 deg, r 5): box [90,110] x [105,115], padded [88,112] x [103,117], clear of x >= 115: cost 15
    i, dx, dy, ha, va, lead = p.place([(100, 100)], (20, 10))
    assert (i, ha, va, lead) == (0, "center", "bottom", False)
    assert (dx, dy) == pytest.approx((0.0, 5.0))
    assert p.labels[-1] == Box(85, 104, 115, 116)  # [90,110] x [105,115] grown by 5 sideways, 1 up and down


def test_placer_avoids_a_neighbouring_point():
    """A point 15 px to the right: the label goes left (cost 15), not right (15 + 30 * 4 + 300 = 435) nor above (315)."""
    p = _placer()
    p.add_mark(100, 100, 2, point=True)  # its own mark: [99,101]^2, ignored for its own label
    p.add_mark(115, 100, 2, point=True)  # the neighbour's: [114,116] x [99,101]
    # right: padded [103,127] x [93,107] covers the neighbour's 2 * 2 = 4 px^2, and the box [105,125] x [95,105]
    #   is 0 px from the neighbour, less than 5 (its own distance) + 8: ambiguous, + 300
    # above: box [90,110] x [105,115] is hypot(5, 5) = 7.1 px from the neighbour, < 5 + 8: + 300
    # left: box [75,95] x [95,105] is 115 - 95 = 20 px from it, >= 13: cost 3 * 5 = 15
    assert p.place([(100, 100)], (20, 10)) == Placement(0, -5.0, pytest.approx(0.0), "right", "center", False)


def test_placer_takes_the_cheaper_anchor():
    """Of two anchors, the label goes next to the one whose ring is free; the index says which."""
    p = _placer()
    p.reserve(Box(0, 0, 200, 100))  # the whole lower half, anchor (100, 50) inside it
    i, _, _, _, _, _ = p.place([(100, 50), (100, 150)], (20, 10))
    assert i == 1


def test_placer_moves_far_with_a_leader():
    """Boxed in by text to 30 px around: it goes out to 42 pt with a leader, cost 3 * 42 + 20 * 31 = 746."""
    p = _placer()
    p.reserve(Box(70, 70, 130, 130))
    # r 30 right: padded [128,152] still covers 2 * 14 = 28 px^2 (+840); r 42 right: box [142,162] x [95,105], clear;
    # its leader (100,100)-(142,100) runs 131 - 100 = 31 px through the text grown by 1: 20 * 31 = 620
    assert p.place([(100, 100)], (20, 10)) == Placement(0, 42.0, 0.0, "left", "center", True)
    assert p.leaders == [(100, 100, 142.0, 100.0)]  # to the middle of the box's left side: (142, 95 + 10 / 2)


def test_placer_leaders_do_not_cross():
    """A leader across a placed one costs 600 more (746 + 600 = 1346): the label takes the next direction, up."""
    p = _placer()
    p.reserve(Box(70, 70, 130, 130))
    p.leaders.append((120.0, 90.0, 120.0, 110.0))  # a placed leader, right of the point, inside the text
    # r 42 right, up, down and left all cost 3 * 42 + 20 * (131 - 100) = 746 plus nothing else, but the
    # leader to the right, (100,100)-(142,100), crosses the placed one at (120, 100): + 600
    i, dx, dy, ha, va, lead = p.place([(100, 100)], (20, 10))
    assert (i, ha, va, lead) == (0, "center", "bottom", True)
    assert (dx, dy) == pytest.approx((0.0, 42.0))
    assert p.leaders[-1] == pytest.approx((100, 100, 100, 142))  # to the middle of the box's bottom side
    assert not crosses(p.leaders[-1], p.leaders[0])
