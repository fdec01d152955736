"""Error metrics: each case beside its bound and prediction, summaries per group, measured variant pairs, run to run.

Errors are symmetric: ``error = exp(|log(pred/meas)|) - 1`` (0.10 is 10% too fast or too slow).
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import SpecError
from ..hardware import as_gpu
from ..prediction import predict
from ..sol import roofline
from .data import MeasuredCase, MeasurementSet, group_of, is_holdout, workload_of

__all__ = ["CaseResult", "GroupSummary", "evaluate", "summarize", "format_summary", "MeasuredPair", "measured_pairs",
           "run_to_run", "log_error"]


def log_error(predicted: Any, measured: Any) -> Any:
    """|log(predicted / measured)|: the symmetric error the fit minimizes (exp of it, minus 1, is the reported error)."""
    return np.abs(np.log(np.asarray(predicted) / np.asarray(measured)))


def apart(a: float, b: float) -> float:
    """exp(|log(a / b)|) - 1: how far two positive figures are apart, either way (the reported error)."""
    return float(np.expm1(log_error(a, b)))


def median_p90(values: Sequence[float]) -> tuple[float, float]:
    """(median, p90) of ``values`` (NaN, NaN where there are none)."""
    if len(values) == 0:
        return math.nan, math.nan
    return float(np.median(values)), float(np.percentile(values, 90))


@dataclass(frozen=True)
class CaseResult:
    """A case set beside its bound and prediction."""

    id: str
    group: str
    holdout: bool
    measured: float
    t_sol: float
    predicted: float

    @property
    def sol_fraction(self) -> float:
        """T_SOL / measured."""
        return self.t_sol / self.measured

    @property
    def error(self) -> float:
        """exp(|log(predicted / measured)|) - 1."""
        return float(np.expm1(log_error(self.predicted, self.measured)))


def evaluate(mset: MeasurementSet, gpu: Any) -> list[CaseResult]:
    """Bound and prediction of every successful case on ``gpu``."""
    g = as_gpu(gpu)
    out = []
    for case in mset.cases:
        if not case.ok or case.seconds is None:
            continue
        w = workload_of(case)
        out.append(
            CaseResult(
                id=case.id,
                group=group_of(case),
                holdout=is_holdout(case.id),
                measured=case.seconds,
                t_sol=float(roofline(w, g).t_sol),
                predicted=float(predict(w, g, warn=False).seconds),
            )
        )
    return out


@dataclass(frozen=True)
class GroupSummary:
    """Accuracy of one group of cases."""

    group: str
    n: int
    median_error: float
    p90_error: float
    median_log_ratio: float
    sol_median: float
    sol_max: float


def _summary(group: str, rows: Sequence[CaseResult]) -> GroupSummary:
    errors = np.array([r.error for r in rows])
    logs = np.log(np.array([r.predicted / r.measured for r in rows]))
    sol = np.array([r.sol_fraction for r in rows])
    return GroupSummary(group, len(rows), float(np.median(errors)), float(np.percentile(errors, 90)),
                        float(np.median(logs)), float(np.median(sol)), float(sol.max()))


def summarize(results: Iterable[CaseResult]) -> list[GroupSummary]:
    """One summary per group, then 'all'."""
    rows = list(results)
    groups = sorted({r.group for r in rows})
    out = [_summary(g, [r for r in rows if r.group == g]) for g in groups]
    if rows:
        out.append(_summary("all", rows))
    return out


def format_summary(summaries: Sequence[GroupSummary]) -> str:
    """A Markdown table of group summaries."""
    lines = [
        "| group | cases | median error | p90 error | median log(pred/meas) | median SOL fraction | max SOL fraction |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.group} | {s.n} | {s.median_error:.1%} | {s.p90_error:.1%} | {s.median_log_ratio:+.3f} | "
            f"{s.sol_median:.3f} | {s.sol_max:.3f} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class MeasuredPair:
    """Two measured variants of one op at the same shape (e.g. unfused vs fused), with the model's view."""

    op: str
    shape: str
    baseline_seconds: float
    variant_seconds: float
    t_sol_ratio: float
    predicted_ratio: float

    @property
    def measured_ratio(self) -> float:
        """baseline / variant: how much faster the variant ran."""
        return self.baseline_seconds / self.variant_seconds


def measured_pairs(mset: MeasurementSet, gpu: Any, key: str, baseline: Any, variant: Any) -> list[MeasuredPair]:
    """Primary cases that differ only in ``key`` (baseline vs variant value), matched by their other params."""
    g = as_gpu(gpu)
    by_rest: dict[tuple, dict[Any, MeasuredCase]] = {}
    for c in mset.cases:
        if not (c.ok and c.primary and c.seconds and key in c.params):
            continue
        rest = tuple(sorted((k, str(v)) for k, v in c.params.items() if k != key))
        by_rest.setdefault((c.op, rest), {})[c.params[key]] = c
    pairs = []
    for (op, rest), variants in sorted(by_rest.items(), key=lambda kv: str(kv[0])):
        if baseline in variants and variant in variants:
            a, b = variants[baseline], variants[variant]
            wa, wb = workload_of(a), workload_of(b)
            pa, pb = predict(wa, g, warn=False), predict(wb, g, warn=False)
            pairs.append(MeasuredPair(
                op=op,
                shape=", ".join(f"{k}={v}" for k, v in rest if k not in ("dtype",)),
                baseline_seconds=float(a.seconds or 0.0),  # cases without seconds were left out above
                variant_seconds=float(b.seconds or 0.0),
                t_sol_ratio=float(roofline(wa, g).t_sol / roofline(wb, g).t_sol),
                predicted_ratio=float(pa.seconds / pb.seconds),
            ))
    return pairs


def run_to_run(first: MeasurementSet, second: MeasurementSet) -> tuple[int, float, float, float]:
    """(cases, median, p90, max) of exp|log(t2/t1)| - 1 over the cases both runs measured: the noise floor."""
    a = {c.id: c.seconds for c in first.cases if c.ok and c.seconds}
    b = {c.id: c.seconds for c in second.cases if c.ok and c.seconds}
    common = sorted(set(a) & set(b))
    if not common:
        raise SpecError("the two measurement files share no case")
    spread = np.expm1(np.abs(np.log(np.array([b[i] / a[i] for i in common]))))
    return len(common), float(np.median(spread)), float(np.percentile(spread, 90)), float(spread.max())
