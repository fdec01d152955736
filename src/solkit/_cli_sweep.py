"""``solkit sweep``: T_SOL and the calibrated prediction of one op over a range of one or two parameters.

A range ``a:b`` holds every integer from a to b, both ends (DESIGN); ``a:b:step`` every step-th from a; a
comma list its values. Numeric values broadcast into one call per GPU (a sweep of a million shapes is one
call). The columns (``sweep_columns``): the swept parameters (integers stay int64: ``m 1024``, never ``1024.0``),
``gpu``, ``t_sol_s``, ``predicted_s``, ``bound``; ``solkit.plot.sweep`` draws them, as it draws ``sk.sweep``'s DataFrame.
"""

from __future__ import annotations

import csv
import math
from typing import Any, Sequence

import numpy as np

from .errors import CLIError

__all__ = ["parse_axis", "sweep_columns", "write_csv", "sample_rows", "MAX_POINTS"]

#: the most points one sweep computes (per GPU)
MAX_POINTS = 1_000_000


def parse_axis(name: str, value: Any) -> Any:
    """The values of a swept parameter: a range a:b (both ends) or a:b:step, a tuple from a comma list; else None.

    A range, and a list of integers, is an int64 array; a list holding a fraction is float64."""
    if isinstance(value, tuple):
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise CLIError(f"--{name.replace('_', '-')} list must hold numbers (a sweep is numeric), got {','.join(map(str, value))!r}")
        if all(type(v) is int and abs(v) < 2**63 for v in value):
            return np.asarray(value, dtype=np.int64)
        return np.asarray(value, dtype=np.float64)
    if not (isinstance(value, str) and ":" in value):
        return None
    parts = value.split(":")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        raise CLIError(f"--{name.replace('_', '-')} range must be integers a:b or a:b:step, got {value!r}") from None
    if len(numbers) not in (2, 3) or numbers[0] > numbers[1] or (len(numbers) == 3 and numbers[2] < 1):
        raise CLIError(f"--{name.replace('_', '-')} range must be a:b with a <= b, or a:b:step with step >= 1, got {value!r}")
    start, stop = numbers[0], numbers[1]
    if max(abs(start), abs(stop)) >= 2**53:
        raise CLIError(f"--{name.replace('_', '-')} range must lie below 2**53 (9.0e15), got {value!r}")
    step = numbers[2] if len(numbers) == 3 else 1
    count = (stop - start) // step + 1
    if count > MAX_POINTS:
        raise CLIError(f"--{name.replace('_', '-')} {value} is {count:,} points, more than {MAX_POINTS:,}: add a step (a:b:step)")
    return np.arange(start, stop + 1, step, dtype=np.int64)


def sweep_columns(op: Any, params: dict[str, Any], gpus: Sequence[Any]) -> dict[str, Any]:
    """Columns over every GPU: the swept parameters (one or two, as a grid), gpu, t_sol_s, predicted_s, bound."""
    from .prediction import predict
    from .sol import roofline

    pairs = {p.name for p in op.params if p.kind in ("pair", "lengths")}  # a conv's kernel 3,3 is one value, not a list
    axes = {k: a for k, v in params.items() if k not in pairs and (a := parse_axis(k, v)) is not None}
    if not axes:
        raise CLIError("sweep needs a range (--m 1:8192) or a list (--m 1,64,4096) for one or two parameters")
    if len(axes) > 2:
        raise CLIError(f"sweep takes one or two swept parameters, got {len(axes)}: {', '.join(axes)}")
    names = list(axes)
    points = math.prod(a.size for a in axes.values())  # before the grid is built: 1:10**6 x 1:10**6 is 8 TB of it
    if points > MAX_POINTS:
        sizes = " x ".join(f"--{k.replace('_', '-')} {a.size:,}" for k, a in axes.items())
        raise CLIError(f"the sweep is {sizes} = {points:,} points, more than {MAX_POINTS:,}: add a step (a:b:step) "
                       "or narrow a range")
    grids = np.meshgrid(*axes.values(), indexing="ij")
    flat = {k: g.reshape(-1) for k, g in zip(names, grids)}
    fixed = {k: v for k, v in params.items() if k not in axes}
    w = op.function(**fixed, **flat)
    columns: dict[str, list[Any]] = {k: [] for k in (*names, "gpu", "t_sol_s", "predicted_s", "bound")}
    for g in gpus:
        r = roofline(w, g)
        p = predict(w, g, warn=False)
        n = flat[names[0]].size
        for k in names:
            columns[k].extend(flat[k].tolist())
        columns["gpu"].extend([g.name] * n)
        columns["t_sol_s"].extend(np.broadcast_to(r.t_sol, (n,)).tolist())
        columns["predicted_s"].extend(np.broadcast_to(p.seconds, (n,)).tolist())
        columns["bound"].extend(np.broadcast_to(r.bound, (n,)).tolist())
    return {k: np.asarray(v) for k, v in columns.items()}


def write_csv(columns: dict[str, Any], path: str) -> str:
    """Every point as a CSV row (header: the column names); returns the path."""
    try:
        with open(path, "w", newline="", encoding="utf-8") as f:
            out = csv.writer(f)
            out.writerow(list(columns))
            out.writerows(zip(*(columns[k].tolist() for k in columns)))
    except OSError as exc:
        raise CLIError(f"--csv: cannot write {path!r}: {exc.strerror or exc}") from None
    return path


def sample_rows(columns: dict[str, Any], rows: int) -> list[int]:
    """Indices of ``rows`` (>= 1) points spread evenly over the first GPU's sweep (its first and, from 2 rows, its last)."""
    if type(rows) is not int or rows < 1:
        raise CLIError(f"--rows must be a positive integer (rows of the printed table), got {rows!r}")
    gpu = columns["gpu"]
    n = int(np.sum(gpu == gpu[0]))
    if rows >= n:
        return list(range(n))
    return sorted({int(round(i)) for i in np.linspace(0, n - 1, rows)})
