"""How evaluate.py and pooled.py score a ranking of one shape's configs against their measured times, ties explicit.

Ties. Two times tie when, sorted, they lie within ``RTOL`` (relative) of their neighbour: on the committed tune files
the predictions (solkit.tune's and Triton's model's) that are meant to be equal (configs alike but for num_warps) are
equal exactly or differ by the last bit or two (at most 4e-16 relative), while the closest distinct predictions lie
5e-7 apart and the closest distinct measured times 3e-8; 1e-9 sits between. The same rule
holds for both sides.

Scores. A config that could not launch is left out of the measured side and must be NaN on the predicted side.

- **top-1**: whether the predicted best runs within ``TOP1_WITHIN`` of the measured best. Where several configs tie
  for the predicted best, the shape scores the chance over a uniformly random tie-break: the share of the tied
  configs that are within it; the range over tie-breaks is 0 or 1 at each end.
- **quarter**: whether the predicted best quarter holds a config within ``QUARTER_WITHIN`` of the measured best. The
  quarter is ``Ranking.prune(keep=0.25)``'s rule over the configs that ran: ceil(n / 4) of them, the fastest
  predicted, exactly equal times across its boundary kept in the list's order (a stable sort; prune also counts
  configs a draw left untimed, so its quarter can be one larger: no committed score changes by it); where no tie straddles the boundary that set is
  the same for every order and is scored as it is; where one does, the shape scores the chance that a uniformly
  random order of the tied configs puts one within 5% into the quarter (hypergeometric), the range 0 or 1 at each end.
  Top-1 is the same rule with one config kept.
- **Spearman**: Pearson's correlation of the average ranks (a tie shares the mean of the ranks it spans) of the
  predicted and measured times; NaN where either side is one tie.
- **saved**: the share of the measured benchmarking time of every config that timing only the quarter saves (its
  expectation over the boundary's tie-breaks).
"""

from __future__ import annotations

import math

import numpy as np

#: two sorted neighbours within this relative distance tie
RTOL = 1e-9
#: top-1: the predicted best within 10% of the measured best; quarter: a config within 5% of it
TOP1_WITHIN, QUARTER_WITHIN = 1.10, 1.05


def _times(x: object, name: str) -> np.ndarray:
    """``x`` as a 1-D float array of finite values; ValueError naming ``name`` otherwise."""
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or not len(a):
        raise ValueError(f"{name} must be a non-empty 1-D sequence of times, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} holds {int((~np.isfinite(a)).sum())} non-finite values: drop them first")
    return a


def tie_groups(x: object, rtol: float = RTOL) -> np.ndarray:
    """Each value's tie group, 0 for the smallest: sorted neighbours within ``rtol`` (relative) share a group."""
    a = _times(x, "x")
    order = np.argsort(a, kind="stable")
    s = a[order]
    new = np.abs(np.diff(s)) > rtol * np.maximum(np.abs(s[:-1]), np.abs(s[1:]))
    groups = np.empty(len(a), int)
    groups[order] = np.concatenate([[0], np.cumsum(new)])
    return groups


def average_ranks(x: object, rtol: float = RTOL) -> np.ndarray:
    """1-based ranks, the values of a tie sharing the mean of the ranks they span."""
    groups = tie_groups(x, rtol)
    counts = np.bincount(groups)
    below = np.cumsum(counts) - counts
    return (below + (counts + 1) / 2)[groups]


def spearman(a: object, b: object, rtol: float = RTOL) -> float:
    """Spearman's rank correlation of ``a`` and ``b`` with average ranks; NaN where either is one tie."""
    ra, rb = average_ranks(a, rtol), average_ranks(b, rtol)
    if len(ra) != len(rb) or len(ra) < 2:
        raise ValueError(f"spearman needs two sequences of one length, at least 2, got {len(ra)} and {len(rb)}")
    if np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def _keep(keep: object, n: int) -> int:
    """``keep`` as a count of configs in 1..n; ValueError otherwise."""
    if isinstance(keep, bool) or not isinstance(keep, (int, np.integer)) or not 1 <= keep <= n:
        raise ValueError(f"keep must be a whole count of configs in 1..{n}, got {keep!r}")
    return int(keep)


def kept_shares(predicted: object, keep: object, rtol: float = RTOL) -> np.ndarray:
    """Each config's chance to be among the ``keep`` fastest predicted, ties broken uniformly at random."""
    groups = tie_groups(predicted, rtol)
    k = _keep(keep, len(groups))
    counts = np.bincount(groups)
    below = np.cumsum(counts) - counts
    return np.clip((k - below) / counts, 0.0, 1.0)[groups]


def hit_chance(predicted: object, good: object, keep: object, rtol: float = RTOL) -> tuple[float, int, int]:
    """(chance, worst, best) over uniformly random tie-breaks that the ``keep`` fastest predicted hold a ``good`` one."""
    groups = tie_groups(predicted, rtol)
    hit = np.asarray(good, dtype=bool)
    if hit.shape != groups.shape:
        raise ValueError(f"good must flag each of the {len(groups)} configs, got shape {hit.shape}")
    k = _keep(keep, len(groups))
    counts = np.bincount(groups)
    below = np.cumsum(counts) - counts
    inside = below + counts <= k  # groups kept whole
    if hit[inside[groups]].any():
        return 1.0, 1, 1
    edge = np.flatnonzero((below < k) & ~inside)  # the group the boundary cuts, if any
    if not len(edge):
        return 0.0, 0, 0
    tied, draws = int(counts[edge[0]]), int(k - below[edge[0]])
    good_tied = int(hit[groups == edge[0]].sum())
    chance = 1 - math.comb(tied - good_tied, draws) / math.comb(tied, draws)
    return chance, int(tied - good_tied < draws), int(good_tied > 0)


def shape_scores(pred: np.ndarray, meas: np.ndarray) -> dict[str, float]:
    """One shape's scores over the configs that ran (a config NaN on one side is dropped from both)."""
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    if pred.shape != meas.shape:
        raise ValueError(f"predicted and measured times must pair up, got shapes {pred.shape} and {meas.shape}")
    ok = np.isfinite(meas) & np.isfinite(pred)
    if not ok.any():
        raise ValueError("no config has both a predicted and a measured time")
    p, m = pred[ok], meas[ok]
    ratio = m / m.min()
    keep = max(1, math.ceil(len(p) / 4))
    top, quarter = hit_chance(p, ratio <= TOP1_WITHIN, 1), hit_chance(p, ratio <= QUARTER_WITHIN, keep)
    first, kept = kept_shares(p, 1), kept_shares(p, keep)
    return {"top1": top[0], "top1_worst": top[1], "top1_best": top[2],
            "quarter": quarter[0], "quarter_worst": quarter[1], "quarter_best": quarter[2],
            "spearman": spearman(p, m) if len(p) > 1 else math.nan,
            "saved": float(1 - (kept * m).sum() / m.sum()),
            "top1_ratio": float((first * ratio).sum()), "top1_worst_ratio": float(ratio[first > 0].max()),
            "tied_best": int((first > 0).sum()), "log_err": float(np.mean(np.abs(np.log(p / m))))}


def count(scores: list[dict[str, float]], name: str) -> tuple[float, int, int]:
    """(the expected count of hits, the fewest, the most) of ``name`` ("top1" or "quarter") over shapes' scores."""
    return (float(sum(s[name] for s in scores)), int(sum(s[f"{name}_worst"] for s in scores)),
            int(sum(s[f"{name}_best"] for s in scores)))


def _half_up(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals, a half rounded up (57.5 -> 58, where float formatting gives 57)."""
    scaled = math.floor(x * 10**digits + 0.5 + 1e-9)
    return f"{scaled / 10**digits:.{digits}f}"


def counted(expected: float, worst: int, best: int, n: int) -> str:
    """A count of shapes as a report prints it: "28 / 48 (58%)", or "25.2 / 48 (52.4%; 21-29 by tie-break)" (the share is
    of the unrounded expectation: 25.17 / 48)."""
    if worst == best:
        return f"{worst} / {n} ({_half_up(100 * worst / n, 0)}%)"
    return f"{_half_up(expected, 1)} / {n} ({_half_up(100 * expected / n, 1)}%; {worst}-{best} by tie-break)"


def cells(scores: list[dict[str, float]]) -> str:
    """A report's cells for some shapes' scores: best within 10% | quarter within 5% | median Spearman."""
    n = len(scores)
    return (f"{counted(*count(scores, 'top1'), n)} | {counted(*count(scores, 'quarter'), n)} | "
            f"{np.nanmedian([s['spearman'] for s in scores]):.3f}")
