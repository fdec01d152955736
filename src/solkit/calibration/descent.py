"""The fit's model of every training kernel at once, and its coordinate descent, one coordinate at a time.

``KernelArrays.predicted`` is ``solkit.prediction.combine`` for every training case at once. ``descend`` is
coordinate descent over grids: for each (parameter, key) in turn it tries every grid value and keeps a value whose
loss is lower than the best so far by more than 1e-12 (in grid order: the last such value wins). A value of one
table's entry moves only the kernels that resolve to that entry, so only they and the cases holding them are
recomputed, for every grid value at once. Each number is computed by the same operations on the same operands, in
the same order, as a whole evaluation of the trial calibration (sums of a case's kernels in kernel order, means over
the same arrays), so the descent's result is bit for bit that of evaluating every trial in full.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from ..hardware.parameters import Calibration
from ..prediction import KernelTerms, soft_max

__all__ = ["KernelArrays", "TABLES", "descend", "with_value"]

#: the per-key tables the descent fits, each with its value for a kernel that no entry covers
TABLES: dict[str, float] = {"compute_efficiency": 1.0, "memory_efficiency": 1.0, "block_bandwidth": math.inf,
                            "kstep_latency": 0.0, "kernel_latency": 0.0, "wave_latency": 0.0}


class KernelArrays:
    """Every kernel of the training cases as arrays (in case order), to evaluate a calibration on all of them at once."""

    def __init__(self, terms: list[tuple[int, KernelTerms, int]], n_cases: int) -> None:
        self.n_cases = n_cases
        self.case = np.array([c for c, _, _ in terms], dtype=np.int64)
        self.count = np.array([float(n) for _, _, n in terms])
        rows = [t for _, t, _ in terms]

        def column(name: str, dtype: Any = float) -> np.ndarray:
            return np.array([getattr(t, name) for t in rows], dtype=dtype)

        self.t_compute, self.t_memory, self.launches = column("t_compute"), column("t_memory"), column("launches")
        self.present = column("present", bool)
        self.waves, self.block_bytes, self.k_steps = column("waves"), column("block_bytes"), column("k_steps")
        self.helper_bytes = column("helper_bytes")
        self.keys: list[str] = sorted({t.op for t in rows} | {t.kind for t in rows} |
                                      {f"{t.op}_{name}" for t in rows for name, _ in t.variants})
        index = {k: i for i, k in enumerate(self.keys)}
        self.op = np.array([index[t.op] for t in rows], dtype=np.int64)
        self.kind = np.array([index[t.kind] for t in rows], dtype=np.int64)
        # every kernel of a fit is one shape: a variant applies or not; -1 (an absent entry) where none does
        depth = max((len(t.variants) for t in rows), default=0)
        self.variant_keys = [np.array([index[f"{t.op}_{t.variants[i][0]}"] if i < len(t.variants) and
                                       bool(np.all(t.variants[i][1])) else -1 for t in rows], dtype=np.int64)
                             for i in range(depth)]
        launches = np.bincount(self.case, np.where(self.present, self.launches, 0.0) * self.count, n_cases)
        self.gaps = np.maximum(launches - 1.0, 0.0)  # each case's launches after its first (each pays the kernel gap)

    def lookup(self, table: Any, default: float) -> np.ndarray:
        """Each kernel's entry: its key's, else its kind's, else ``default``; its variant's where that applies."""
        values = np.array([table.get(k, np.nan) for k in self.keys] + [np.nan])
        by_op, by_kind = values[self.op], values[self.kind]
        value = np.where(np.isnan(by_op), np.where(np.isnan(by_kind), default, by_kind), by_op)
        for keys in self.variant_keys:  # in order: a later variant's entry wins
            by_variant = values[keys]
            value = np.where(np.isnan(by_variant), value, by_variant)
        return value

    def lookups(self, cal: Calibration) -> dict[str, np.ndarray]:
        """Each table's entry for every kernel under ``cal``."""
        return {table: self.lookup(getattr(cal, table), default) for table, default in TABLES.items()}

    def bodies(self, cal: Calibration, at: Any, lookups: dict[str, np.ndarray]) -> np.ndarray:
        """Body x count of the kernels ``at`` (an index array or a slice) under ``cal``'s scalars and the tables' entries
        ``lookups`` of those kernels (one of them may be 2-D, a row per trial value: the result is then 2-D)."""
        compute = self.t_compute[at] / lookups["compute_efficiency"]
        memory_efficiency = lookups["memory_efficiency"]
        memory = self.t_memory[at] / memory_efficiency
        body = soft_max(compute, memory, cal.overlap_exponent)
        waves = self.waves[at]
        stream = waves * np.maximum(self.block_bytes[at] / lookups["block_bandwidth"],
                                    self.k_steps[at] * lookups["kstep_latency"])
        body = lookups["kernel_latency"] + waves * lookups["wave_latency"] + \
            np.maximum(body, stream) + self.helper_bytes[at] / (cal.copy_bandwidth * memory_efficiency)
        return np.where(self.present[at], body, 0.0) * self.count[at]  # type: ignore[no-any-return]

    def totals(self, cal: Calibration, body: np.ndarray) -> np.ndarray:
        """Each case's launch floor plus its kernels' bodies, summed in kernel order (no gaps)."""
        return cal.launch_floor + np.bincount(self.case, body, self.n_cases)  # type: ignore[no-any-return]

    def predicted(self, cal: Calibration) -> np.ndarray:
        """Predicted seconds of every case (``solkit.prediction.combine`` for all at once)."""
        total = self.totals(cal, self.bodies(cal, slice(None), self.lookups(cal)))
        return total + cal.kernel_gap * self.gaps  # type: ignore[no-any-return]


def with_value(cal: Calibration, parameter: str, key: Optional[str], value: float) -> Calibration:
    """``cal`` with one parameter (a scalar, or a table's entry ``key``) set to ``value``."""
    if key is None:
        return cal.replace(**{parameter: float(value)})
    return cal.replace(**{parameter: {**getattr(cal, parameter), key: float(value)}})


#: the per-case error of predicted seconds (a 1-D array over the cases ``at``, or 2-D: a row per trial value)
Errors = Callable[[np.ndarray, Any], np.ndarray]


class _State:
    """A calibration with its loss and what evaluating it left: each table's entry per kernel, bodies, case totals,
    predictions and errors."""

    def __init__(self, kernels: KernelArrays, cal: Calibration, errors: Errors, groups: Sequence[np.ndarray]) -> None:
        self.kernels, self.errors, self.groups = kernels, errors, groups
        self.cal = cal
        self.look = kernels.lookups(cal)
        self.body = kernels.bodies(cal, slice(None), self.look)
        self.total = kernels.totals(cal, self.body)
        self.pred = self.total + cal.kernel_gap * kernels.gaps
        self.err = errors(self.pred, slice(None))
        self.best = self.loss(self.err)

    def loss(self, err: np.ndarray) -> float:
        """The mean over the groups of each group's mean error."""
        return float(np.mean([np.mean(err[g]) for g in self.groups]))

    def losses(self, cases: Any, err: np.ndarray) -> list[float]:
        """The loss of each row of ``err``, the errors of ``cases`` (the other cases' as they stand)."""
        out = []
        for row in err:
            full = self.err.copy()
            full[cases] = row
            out.append(self.loss(full))
        return out

    def chosen(self, losses: Sequence[float]) -> Optional[int]:
        """The grid index trying the values in order keeps (each kept when below the best so far by 1e-12), or None."""
        best, index = self.best, None
        for i, value_loss in enumerate(losses):
            if value_loss < best - 1e-12:
                best, index = value_loss, i
        return index

    def scan_gap(self, values: np.ndarray) -> None:
        """Try every kernel gap: only the gaps' share of each case moves."""
        pred = self.total[None, :] + values[:, None] * self.kernels.gaps[None, :]
        err = self.errors(pred, slice(None))
        losses = [self.loss(row) for row in err]
        i = self.chosen(losses)
        if i is not None:
            self.cal = with_value(self.cal, "kernel_gap", None, values[i])
            self.pred, self.err, self.best = pred[i].copy(), err[i].copy(), losses[i]

    def scan_scalar(self, parameter: str, values: np.ndarray) -> None:
        """Try every value of a scalar that every kernel's body reads (each a whole evaluation)."""
        for value in values:
            trial = with_value(self.cal, parameter, None, value)
            body = self.kernels.bodies(trial, slice(None), self.look)
            total = self.kernels.totals(trial, body)
            pred = total + trial.kernel_gap * self.kernels.gaps
            err = self.errors(pred, slice(None))
            value_loss = self.loss(err)
            if value_loss < self.best - 1e-12:
                self.cal, self.body, self.total, self.pred, self.err, self.best = trial, body, total, pred, err, value_loss

    def scan_entry(self, table: str, key: str, values: np.ndarray) -> None:
        """Try every value of one table's entry: only the kernels that resolve to it, and their cases, move."""
        k = self.kernels
        marks = {name: 0.0 for name in getattr(self.cal, table)}
        marks[key] = 1.0
        moved = k.lookup(marks, 0.0) == 1.0  # the kernels whose entry this is, once the table holds it
        if not moved.any():
            return  # no kernel reads it: every value leaves every prediction as it is
        cases = np.unique(k.case[moved])
        at = np.flatnonzero(np.isin(k.case, cases))  # every kernel of those cases, in order
        local = np.searchsorted(cases, k.case[at])
        look = {name: entries[at] for name, entries in self.look.items()}
        look[table] = np.where(moved[at][None, :], values[:, None], look[table][None, :])
        body = k.bodies(self.cal, at, look)
        n = len(cases)
        sums = np.bincount((local[None, :] + n * np.arange(len(values))[:, None]).ravel(), body.ravel(), n * len(values))
        total = self.cal.launch_floor + sums.reshape(len(values), n)
        pred = total + self.cal.kernel_gap * k.gaps[cases]
        err = self.errors(pred, cases)
        losses = self.losses(cases, err)
        i = self.chosen(losses)
        if i is not None:
            self.cal = with_value(self.cal, table, key, values[i])
            self.look[table] = np.where(moved, values[i], self.look[table])
            self.body[at] = body[i]
            self.total[cases], self.pred[cases], self.err[cases] = total[i], pred[i], err[i]
            self.best = losses[i]


def descend(kernels: KernelArrays, cal: Calibration, coordinates: Sequence[tuple[str, Optional[str]]],
            grids: dict[str, np.ndarray], errors: Errors, groups: Sequence[np.ndarray], passes: int,
            key_grids: Optional[Mapping[tuple[str, str], np.ndarray]] = None) -> tuple[Calibration, float]:
    """(calibration, loss) after ``passes`` of coordinate descent from ``cal`` over ``coordinates`` (parameter, table
    key or None), each tried at every value of its grid (``key_grids``' for a (parameter, key) it names, else
    ``grids``' for the parameter); the loss is the mean over ``groups`` (case indices) of the mean of ``errors`` (of
    predicted seconds) over the group's cases."""
    state = _State(kernels, cal, errors, groups)
    own = key_grids or {}
    for _ in range(passes):
        for parameter, key in coordinates:
            grid = own.get((parameter, key)) if key is not None else None
            values = np.asarray(grids[parameter] if grid is None else grid, dtype=float)
            if parameter == "kernel_gap":
                state.scan_gap(values)
            elif key is None:
                state.scan_scalar(parameter, values)
            else:
                state.scan_entry(parameter, key, values)
    return state.cal, state.best
