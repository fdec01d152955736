"""Timeline aggregates of GPU records: kernel time, span, busy and idle time, launch gaps.

Every function takes an iterable of ``KernelRecord`` (anything with ``kind``, ``start`` and ``seconds``) and
``kinds``, the record kinds it counts: by default only kernels (``("kernel",)``), as ``kernel_seconds`` is "the
sum of kernel durations" and the span runs "from the first kernel start to the last kernel end". Pass
``kinds=None`` to count memcpys and memsets too (then their time is busy, not idle). Streams and devices are
pooled: busy time is the union of the intervals ``[start, start + seconds)`` across all of them.

NB: Chrome traces give ``ts`` to the nanosecond and the records hold absolute seconds (about 5e6 s on the
fixtures' clock, where a float's step is about 1 ns), so span, idle and gaps carry about 1 ns of rounding each.
Busy time is computed as the kernel time minus the overlaps, so on one stream it equals the kernel time exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple

import numpy as np

__all__ = [
    "KERNEL_KINDS", "ALL_KINDS", "Gap", "LaunchGaps", "kernel_seconds", "span_seconds", "busy_seconds",
    "idle_seconds", "busy_intervals", "launch_gaps",
]

KERNEL_KINDS: tuple[str, ...] = ("kernel",)
ALL_KINDS: tuple[str, ...] = ("kernel", "memcpy", "memset")


class Gap(NamedTuple):
    """An idle interval between two busy ones: where it starts (s, the records' clock) and how long it lasts (s)."""

    start: float
    seconds: float


@dataclass(frozen=True, slots=True)
class LaunchGaps:
    """The idle gaps between consecutive busy intervals, largest first."""

    gaps: tuple[Gap, ...]

    @property
    def count(self) -> int:
        """How many gaps."""
        return len(self.gaps)

    @property
    def total(self) -> float:
        """Their summed length (s): the idle time inside the span."""
        return math.fsum(g.seconds for g in self.gaps)

    @property
    def largest(self) -> float:
        """The longest gap (s); 0.0 when there is none."""
        return self.gaps[0].seconds if self.gaps else 0.0


def _arrays(records: Iterable[Any], kinds: Iterable[str] | None) -> tuple[np.ndarray, np.ndarray]:
    """(starts, durations) of the records of the given kinds, sorted by start (then by duration)."""
    keep = None if kinds is None else frozenset(kinds)
    pairs = [(r.start, r.seconds) for r in records if keep is None or r.kind in keep]
    if not pairs:
        return np.empty(0), np.empty(0)
    arr = np.asarray(pairs, dtype=np.float64)
    order = np.lexsort((arr[:, 1], arr[:, 0]))
    return arr[order, 0], arr[order, 1]


def kernel_seconds(records: Iterable[Any], kinds: Iterable[str] | None = KERNEL_KINDS) -> float:
    """The sum of the durations of the records of ``kinds`` (default: kernels only), in seconds."""
    keep = None if kinds is None else frozenset(kinds)
    return math.fsum(r.seconds for r in records if keep is None or r.kind in keep)


def span_seconds(records: Iterable[Any], kinds: Iterable[str] | None = KERNEL_KINDS) -> float:
    """First start to last end (s) of the records of ``kinds``; 0.0 when there are none."""
    starts, durs = _arrays(records, kinds)
    if starts.size == 0:
        return 0.0
    return float(np.max(starts + durs) - starts[0])


def _sweep(starts: np.ndarray, durs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(overlap of each interval with those before it, previous running end, whether it opens a new busy interval)."""
    ends = starts + durs
    prev_end = np.empty_like(ends)
    prev_end[0] = -np.inf
    np.maximum.accumulate(ends[:-1], out=prev_end[1:])
    overlap = np.clip(prev_end - starts, 0.0, durs)
    opens = starts > prev_end
    return overlap, prev_end, opens


def busy_seconds(records: Iterable[Any], kinds: Iterable[str] | None = KERNEL_KINDS) -> float:
    """The length (s) of the union of ``[start, start + seconds)`` over the records of ``kinds``, across streams."""
    starts, durs = _arrays(records, kinds)
    if starts.size == 0:
        return 0.0
    overlap, _, _ = _sweep(starts, durs)
    return math.fsum(durs) - math.fsum(overlap)


def idle_seconds(records: Iterable[Any], kinds: Iterable[str] | None = KERNEL_KINDS) -> float:
    """Span minus busy time (s): when no record of ``kinds`` runs on any stream; never negative."""
    recs = list(records)
    return max(span_seconds(recs, kinds) - busy_seconds(recs, kinds), 0.0)


def busy_intervals(records: Iterable[Any], kinds: Iterable[str] | None = KERNEL_KINDS) -> np.ndarray:
    """The merged busy intervals as an array [k, 2] of (start, end) in seconds, in time order."""
    starts, durs = _arrays(records, kinds)
    if starts.size == 0:
        return np.empty((0, 2))
    ends = starts + durs
    _, prev_end, opens = _sweep(starts, durs)
    first = np.flatnonzero(opens)  # the first interval opens (prev_end = -inf)
    last_end = np.maximum.accumulate(ends)[np.append(first[1:] - 1, ends.size - 1)]
    return np.column_stack((starts[first], last_end))


def launch_gaps(
    records: Iterable[Any], kinds: Iterable[str] | None = KERNEL_KINDS, min_seconds: float = 0.0
) -> LaunchGaps:
    """The idle gaps longer than ``min_seconds`` between consecutive busy intervals, largest first."""
    iv = busy_intervals(records, kinds)
    if len(iv) < 2:
        return LaunchGaps(())
    starts, lengths = iv[:-1, 1], iv[1:, 0] - iv[:-1, 1]
    keep = lengths > min_seconds
    order = np.argsort(-lengths[keep], kind="stable")
    return LaunchGaps(tuple(Gap(float(s), float(g)) for s, g in zip(starts[keep][order], lengths[keep][order])))
