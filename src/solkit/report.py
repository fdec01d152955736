"""Tables of roofline results: plain text for terminals, pandas DataFrames for sweeps."""

from __future__ import annotations

import inspect
import itertools
import math
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ._optional import require_pandas
from ._validate import checked_call, flag
from .errors import ArgumentTypeError, OptionError, ShapeError
from .hardware import as_gpu
from .sol import Roofline, roofline
from .workload import Workload

__all__ = ["roofline_rows", "format_table", "roofline_table", "sweep", "MAX_SWEEP_POINTS"]

#: the most rows one ``sweep`` computes (the numeric grid's points x the option lists' combinations): a guard against a
#: typo (two ranges of a million are a grid of 10**12, terabytes), checked before anything is allocated
MAX_SWEEP_POINTS = 10_000_000

COLUMNS = ("op", "gpu", "kernels", "GFLOP", "MB", "FLOP/B", "t_compute us", "t_memory us", "t_sol us", "bound",
           "predicted us")


def _row(label: str, r: Roofline, n_kernels: int, predicted: Any = None) -> tuple[str, ...]:
    if np.ndim(r.t_sol):
        raise OptionError(f"{label}: a table row needs scalar shapes; use solkit.sweep() for sweeps")
    return (
        label,
        r.gpu,
        str(n_kernels),
        f"{r.executed_flops / 1e9:,.2f}",
        f"{r.bytes / 1e6:,.2f}",
        f"{r.intensity:,.1f}",
        f"{r.t_compute * 1e6:,.2f}",
        f"{r.t_memory * 1e6:,.2f}",
        f"{r.t_sol * 1e6:,.2f}",
        r.bound,
        "" if predicted is None else (f"{predicted.seconds * 1e6:,.2f}" + ("" if predicted.calibrated else " ~")),
    )


def roofline_rows(workloads: dict[str, Workload], gpus: Iterable[Any]) -> list[tuple[str, ...]]:
    """One row per (workload, GPU), GPUs varying fastest; predicted times end in ' ~' where uncalibrated."""
    from .prediction import predict

    specs = [as_gpu(g) for g in gpus]
    return [_row(label, roofline(w, g), len(w), predict(w, g, warn=False)) for label, w in workloads.items()
            for g in specs]


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str] = COLUMNS) -> str:
    """Align columns: text left, numbers right."""
    table = [tuple(header), *map(tuple, rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    numeric = [all(_is_number(r[i]) for r in table[1:]) for i in range(len(header))]
    lines = []
    for j, r in enumerate(table):
        cells = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def roofline_table(workloads: dict[str, Workload], gpus: Iterable[Any]) -> str:
    """A text table of each workload's roofline on each GPU."""
    return format_table(roofline_rows(workloads, gpus))


@checked_call
def sweep(op: Callable[..., Workload], gpu: Any, predicted: bool = True, **params: Any) -> Any:
    """A pandas DataFrame of ``op`` over every combination of the list-valued ``params``.

    Numeric lists form a broadcast grid (one call); lists of strings or bools (dtype, layout,
    impl, fused, causal) are looped over. One row per configuration; columns are the
    parameters, then ``t_sol_s``, ``t_compute_s``, ``t_memory_s``, ``bound``,
    ``intensity_flop_per_byte``, ``model_flops``, ``executed_flops``, ``bytes`` (int64 where whole) and, with
    ``predicted``, ``predicted_s`` and ``sol_fraction`` (T_SOL / predicted).
    Example: ``sweep(ops.matmul, "h200", m=[1, 64, 4096], n=4096, k=4096, dtype=["bf16", "fp8"])``. At most
    ``MAX_SWEEP_POINTS`` rows (checked before anything is allocated: a ShapeError naming each list's length).
    """
    from .prediction import predict as _predict

    pd = require_pandas()
    op = _callable(op)
    g = as_gpu(gpu)
    predicted = flag("predicted", predicted)
    numeric = {k: _grid_axis(k, v) for k, v in params.items() if _is_numeric_list(v)}
    signature = inspect.signature(op)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())  # it checks its own keywords
    for key, value in params.items():
        if key not in signature.parameters and not takes_any:
            raise ArgumentTypeError(f"{getattr(op, '__name__', op)} has no parameter {key!r}; it takes: "
                                    f"{', '.join(signature.parameters)}")
        if isinstance(value, (list, range, np.ndarray)) and len(value) == 0:
            raise OptionError(f"{key} is an empty list: a sweep needs at least one value")
    options = {k: list(v) for k, v in params.items() if isinstance(v, list) and k not in numeric}
    fixed = {k: v for k, v in params.items() if k not in numeric and k not in options}
    points = math.prod(int(np.size(v)) for v in numeric.values()) * math.prod(len(v) for v in options.values())
    if points > MAX_SWEEP_POINTS:
        lengths = {**{k: int(np.size(v)) for k, v in numeric.items()}, **{k: len(v) for k, v in options.items()}}
        sizes = " x ".join(f"{k} {n:,}" for k, n in lengths.items())
        raise ShapeError(f"the sweep is {sizes} = {points:,} rows, more than {MAX_SWEEP_POINTS:,}: sweep fewer values "
                         "(or call the op itself on arrays, which broadcasts without a table)")
    grids = np.meshgrid(*numeric.values(), indexing="ij") if numeric else []
    flat = {k: grid.reshape(-1) for k, grid in zip(numeric, grids)}
    frames = []
    for combo in itertools.product(*options.values()):
        chosen = dict(zip(options, combo))
        w = op(**fixed, **chosen, **flat)
        r = roofline(w, g)
        n = max(1, int(np.prod(np.shape(r.t_sol))))
        cols: dict[str, Any] = {k: np.broadcast_to(v, (n,)) for k, v in flat.items()}
        cols.update({k: [v] * n for k, v in {**fixed, **chosen}.items()})
        frame = pd.DataFrame(cols)
        result = r.to_frame().drop(columns=["workload", "gpu"])
        frame = pd.concat([frame, result.reset_index(drop=True)], axis=1)
        if predicted:
            p = _predict(w, g, warn=False)
            frame["predicted_s"] = np.broadcast_to(np.asarray(p.seconds), (n,))
            frame["sol_fraction"] = frame["t_sol_s"] / frame["predicted_s"]
        frame.insert(0, "gpu", g.name)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out["bytes"] = _whole_column(out["bytes"].to_numpy())
    return out


def _whole_column(values: np.ndarray) -> np.ndarray:
    """``values`` as int64 when every one is a whole number below 2**53 (byte counts), else unchanged (FLOPs of whole
    programs pass int64, so only bytes are made ints)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size and bool(np.all(np.isfinite(v) & (v == np.round(v)) & (np.abs(v) < 2.0**53))):
        return v.astype(np.int64)
    return values


def _callable(op: Any) -> Callable[..., Workload]:
    """The function to sweep: a callable, or the name of a registered operator."""
    if isinstance(op, str):
        from .ops import get

        return get(op).function
    if not callable(op):
        raise ArgumentTypeError(f"op must be a function returning a Workload (e.g. solkit.ops.matmul) or an operator "
                                f"name, got {op!r}")
    return op


def _grid_axis(name: str, values: Any) -> np.ndarray:
    """One numeric axis of the grid: int64 when every value is an integer (the table shows ``m 1024``, not ``1024.0``),
    else float64 (ints beyond float64 are a ShapeError naming it)."""
    if isinstance(values, np.ndarray):
        return values
    if all(isinstance(v, (int, np.integer)) and abs(int(v)) < 2**63 for v in values):
        return np.asarray(values, dtype=np.int64)
    try:
        return np.asarray(values, dtype=np.float64)
    except OverflowError:
        raise ShapeError(f"{name} must hold numbers that float64 can hold (below 1.8e308), got {values!r:.60}") from None


def _is_numeric_list(v: Any) -> bool:
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "iuf"
    if isinstance(v, (list, range)):  # a tuple is a fixed value (a conv kernel (3, 1)), never an axis
        return len(v) > 0 and all(isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) for x in v)
    return False
