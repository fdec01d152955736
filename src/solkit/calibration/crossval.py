"""Parsimony shown, not claimed: k-fold cross-validation of the fit beside two simpler baselines.

The sampled fit set is cut into ``K`` folds by a hash of each case id (``fold_of``). For each fold
the full model is refitted on the other folds and the catalogue's training cases, then predicts
the fold it never saw; the baselines are fitted (or not) the same way:

- ``roofline + floor``: the launch floor plus the workload's T_SOL on the datasheet (no parameter
  but the measured floor; what most roofline calculators report);
- ``global pair``: the floor plus, per kernel, max(t_compute / e_c, t_memory / e_m) from the
  datasheet roofline, with one compute and one memory efficiency for every kernel (2 parameters),
  fitted by grid search on the same objective.

Every model is scored on the held-out folds (each case predicted once, by the fit that did not
see it) and on the validation set. ``python -m solkit.calibration cv`` writes the table.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..hardware.parameters import PARAMETERS, Calibration
from ..prediction import combine, kernel_terms
from ..sol import roofline
from .data import MeasuredCase, MeasurementSet, fit_cases, workload_of
from .fitting import SCALARS, ceilings, fit
from .metrics import log_error

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU

__all__ = ["K", "fold_of", "parameter_count", "predict_cases", "roofline_baseline", "GlobalPair", "fit_global_pair",
           "ModelScore", "cross_validate", "format_scores"]

#: folds of the cross-validation
K = 5
#: the efficiencies the global pair is tried at
PAIR_GRID = np.geomspace(0.05, 1.0, 60)


def fold_of(case_id: str, k: int = K) -> int:
    """The fold of a case: sha256("fold:" + id) mod k (independent of the fit/validation/test hash)."""
    return int(hashlib.sha256(f"fold:{case_id}".encode()).hexdigest(), 16) % k


def parameter_count(cal: Calibration) -> int:
    """Fitted numbers in a calibration: every entry of a fitted table and the fitted scalars (``fitting.SCALARS``)."""
    return sum(len(getattr(cal, p.name)) for p in PARAMETERS if p.fitted and p.keyed) + len(SCALARS)


def predict_cases(cases: Sequence[MeasuredCase], gpu: "GPU", cal: Calibration) -> np.ndarray:
    """Predicted seconds of each case under ``cal`` (never below its T_SOL), as ``solkit.predict`` computes them."""
    out = []
    for c in cases:
        w = workload_of(c)
        terms = [(kernel_terms(k, gpu, cal), n) for k, n in w.counted]
        out.append(max(float(combine(terms, cal)), float(roofline(w, gpu).t_sol)))
    return np.array(out)


def roofline_baseline(cases: Sequence[MeasuredCase], gpu: "GPU", launch_floor: float) -> np.ndarray:
    """The launch floor plus each case's datasheet T_SOL."""
    return np.array([launch_floor + float(roofline(workload_of(c), gpu).t_sol) for c in cases])


class _KernelTimes:
    """Every kernel of some cases as arrays: its case, count and datasheet t_compute, t_memory."""

    def __init__(self, cases: Sequence[MeasuredCase], gpu: "GPU") -> None:
        rows = [(i, float(k.t_compute), float(k.t_memory), float(k.count))
                for i, c in enumerate(cases) for k in roofline(workload_of(c), gpu).kernels]
        self.n_cases = len(cases)
        self.case = np.array([r[0] for r in rows], dtype=int)
        self.t_compute, self.t_memory, self.count = (np.array([r[j] for r in rows]) for j in (1, 2, 3))

    def seconds(self, e_c: float, e_m: float, floor: float) -> np.ndarray:
        """floor + sum over each case's kernels of count * max(t_compute / e_c, t_memory / e_m)."""
        body = self.count * np.maximum(self.t_compute / e_c, self.t_memory / e_m)
        return floor + np.bincount(self.case, body, self.n_cases)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class GlobalPair:
    """One compute and one memory efficiency for every kernel, and the launch floor."""

    compute_efficiency: float
    memory_efficiency: float
    launch_floor: float

    def predict(self, cases: Sequence[MeasuredCase], gpu: "GPU") -> np.ndarray:
        """floor + sum over kernels of count * max(t_compute / e_c, t_memory / e_m)."""
        return _KernelTimes(cases, gpu).seconds(self.compute_efficiency, self.memory_efficiency, self.launch_floor)


def _objective(predicted: np.ndarray, measured: np.ndarray) -> float:
    err = log_error(predicted, measured)
    return float(np.mean(err) + np.percentile(err, 90))


def fit_global_pair(cases: Sequence[MeasuredCase], gpu: "GPU", launch_floor: float) -> GlobalPair:
    """The efficiency pair that minimizes mean + p90 of |log error| over ``cases`` (a grid search: two numbers)."""
    times = _KernelTimes(cases, gpu)
    measured = np.array([c.seconds for c in cases], dtype=float)
    best = min(((e_c, e_m) for e_c in PAIR_GRID for e_m in PAIR_GRID),
               key=lambda pair: _objective(times.seconds(pair[0], pair[1], launch_floor), measured))
    return GlobalPair(float(best[0]), float(best[1]), launch_floor)


@dataclass(frozen=True)
class ModelScore:
    """A model's parameter count and its errors: on the held-out folds and on the validation set."""

    model: str
    parameters: int
    cv_median: float
    cv_p90: float
    validation_median: float
    validation_p90: float


def _median_p90(predicted: np.ndarray, measured: np.ndarray) -> tuple[float, float]:
    err = log_error(predicted, measured)
    return float(np.expm1(np.median(err))), float(np.expm1(np.percentile(err, 90)))


def cross_validate(sample: MeasurementSet, catalogue: MeasurementSet, validation: MeasurementSet, gpu: "GPU",
                   full: Calibration, k: int = K) -> list[ModelScore]:
    """The full model, the global pair and the roofline + floor, each scored by k-fold CV and on ``validation``.

    ``full`` is the committed calibration (fitted on every fold): the validation column of the full
    model uses it; its CV column refits it k times without the held-out fold.
    """
    cases, _ = fit_cases(sample)
    held_val = fit_cases(validation)[1]
    measured = np.array([c.seconds for c in cases], dtype=float)
    val_measured = np.array([c.seconds for c in held_val], dtype=float)
    floor = ceilings(sample)["launch_floor"]
    folds = np.array([fold_of(c.id, k) for c in cases])
    full_cv, pair_cv = np.empty(len(cases)), np.empty(len(cases))
    cat_train = fit_cases(catalogue)[0]
    for f in range(k):
        train = [c for c, g in zip(cases, folds) if g != f]
        held = [c for c, g in zip(cases, folds) if g == f]
        fitted = fit([sample.model_copy(update={"cases": tuple(train)}), catalogue], gpu).calibration
        full_cv[folds == f] = predict_cases(held, gpu, fitted)
        pair_cv[folds == f] = fit_global_pair(train + cat_train, gpu, floor).predict(held, gpu)
    pair = fit_global_pair(cases + cat_train, gpu, floor)
    rows = [
        ("roofline + floor", 0, roofline_baseline(cases, gpu, floor), roofline_baseline(held_val, gpu, floor)),
        ("global efficiency pair", 2, pair_cv, pair.predict(held_val, gpu)),
        ("solkit predictor", parameter_count(full), full_cv, predict_cases(held_val, gpu, full)),
    ]
    return [ModelScore(name, n, *_median_p90(cv, measured), *_median_p90(val, val_measured))
            for name, n, cv, val in rows]


def format_scores(scores: Sequence[ModelScore], k: int = K) -> str:
    """A Markdown table of the scores."""
    lines = [f"| model | fitted parameters | {k}-fold CV median | CV p90 | validation median | validation p90 |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {s.model} | {s.parameters} | {s.cv_median:.1%} | {s.cv_p90:.1%} | {s.validation_median:.1%} | "
              f"{s.validation_p90:.1%} |" for s in scores]
    return "\n".join(lines)
