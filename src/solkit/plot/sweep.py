"""``sweep``: T_SOL and the calibrated prediction against a swept parameter, one pair of curves per GPU (or series).

It draws ``sk.sweep``'s DataFrame as well as the CLI's columns (anything indexable by column name with
``keys()``): x is the first swept parameter (the first column that is not a result), y the time in us,
both on log axes when they span more than 20x. A second swept parameter with at most ``MAX_SERIES``
values gives one pair of curves per value. The prediction is drawn solid, T_SOL dashed in the same
colour; wave and tile quantization show as steps. Artists carry ``gid``s: ``"t_sol:<series>"``,
``"predicted:<series>"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .._display import fmt_value
from .._optional import require_matplotlib
from .._validate import checked_call, choice, first_bad, shown
from ..errors import ArgumentTypeError, OptionError, ShapeError
from .charts import FIGSIZE, check_title

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["sweep", "RESULT_COLUMNS", "MAX_SERIES"]

#: columns that are results, not parameters (sk.sweep's and the CLI's)
RESULT_COLUMNS = frozenset({"gpu", "t_sol_s", "t_compute_s", "t_memory_s", "t_link_s", "bound", "intensity_flop_per_byte",
                            "model_flops", "executed_flops", "bytes", "predicted_s", "sol_fraction", "dtype"})
MAX_SERIES = 8
_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


def _columns(result: Any) -> dict[str, np.ndarray]:
    """name -> the column's values (1-d, all one length) of a sweep's table (a DataFrame or a dict of columns)."""
    keys = getattr(result, "keys", None)
    if isinstance(result, (str, bytes)) or not callable(keys) or not hasattr(result, "__getitem__"):
        raise ArgumentTypeError(f"result must be a sweep's columns (sk.sweep's DataFrame, or a dict column name -> "
                                f"values), got the {type(result).__name__} {shown(result)}")
    columns: dict[str, np.ndarray] = {}
    for key in keys():
        name = str(key)
        try:
            values = np.asarray(result[key])
        except Exception as exc:  # ragged lists and the like
            raise ArgumentTypeError(f"result[{name!r}] must be a column of numbers or names, got {shown(result[key])}") \
                from exc
        if values.ndim != 1:
            raise ShapeError(f"result[{name!r}] must be one column of values (a 1-d list), got shape {values.shape}")
        if values.dtype == object and values.size and all(_real(v) for v in values):  # numbers held as objects
            try:
                values = values.astype(np.float64)
            except OverflowError:
                raise ShapeError(f"result[{name!r}] holds an integer beyond float64 (about 1.8e308)") from None
        columns[name] = values
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise ShapeError("the sweep's columns must be of one length, got "
                         + ", ".join(f"{k} {len(v)}" for k, v in columns.items()))
    return columns


def _real(value: Any) -> bool:
    """A real number that is not a bool (a cell of an object column)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _numbers(name: str, values: np.ndarray, seconds: bool = False) -> np.ndarray:
    """A column as float64, finite (and >= 0 for seconds); text or bools are an ArgumentTypeError naming it."""
    if values.dtype.kind not in "iuf":
        raise ArgumentTypeError(f"result[{name!r}] must hold numbers, got {shown(values.tolist())} (dtype {values.dtype})")
    out = values.astype(np.float64)
    expected = "a finite number of seconds >= 0" if seconds else "a finite number"
    first_bad(f"result[{name!r}]", out, ~np.isfinite(out) | ((out < 0) if seconds else False), expected, OptionError)
    return out


def _varied(name: str, values: np.ndarray) -> bool:
    """Whether a column takes more than one value (a constant column is no series)."""
    try:
        return len(set(values.tolist())) > 1
    except TypeError:  # unhashable cells (dicts, lists)
        raise ArgumentTypeError(f"result[{name!r}] must hold numbers or names, got {shown(values.tolist())}") from None


@checked_call
def sweep(result: Any, x: Optional[str] = None, title: Optional[str] = None) -> "Figure":
    """A figure of T_SOL (dashed) and predicted time (solid) against ``x`` (default: the first numeric swept parameter).

    A swept parameter that holds names (a layout, an impl) gives one series per value, as a second numeric one does.
    """
    require_matplotlib()
    from .figure import ChartFigure

    columns = _columns(result)
    title = check_title(title)
    names = list(columns)
    varied = [k for k in names if _varied(k, columns[k])]
    params = [k for k in names if k not in RESULT_COLUMNS and k in varied]
    if "t_sol_s" not in names or not params:
        raise OptionError(f"sweep needs a sweep's columns (a swept parameter and t_sol_s), got {names}")
    numeric = [k for k in params if columns[k].dtype.kind in "iuf"]
    if x is None:
        if not numeric:
            raise OptionError(f"sweep needs a numeric swept parameter for its x axis; {params} hold names")
        x = numeric[0]
    x = choice("x", x, params)
    if x not in numeric:
        raise OptionError(f"x must be a numeric swept parameter ({', '.join(numeric) or 'none'}); {x!r} holds names "
                          f"(it gives one series per value)")
    xs = _numbers(x, columns[x])
    named = [*[p for p in params if p != x], *(["gpu"] if "gpu" in varied else [])]
    keys = [columns[k] for k in named]
    labels = [" ".join(str(v) if k == "gpu" else f"{k}={fmt_value(v)}" for k, v in zip(named, row))
              for row in zip(*keys)] if keys else [""] * len(xs)  # m=1024 (a GPU by its name)
    series = list(dict.fromkeys(labels))
    if len(series) > MAX_SERIES:
        raise OptionError(f"the sweep has {len(series)} series besides {x!r}, more than {MAX_SERIES}: sweep fewer values")
    t_sol = _numbers("t_sol_s", columns["t_sol_s"], seconds=True) * 1e6
    predicted = _numbers("predicted_s", columns["predicted_s"], seconds=True) * 1e6 if "predicted_s" in names else None
    fig = ChartFigure(figsize=FIGSIZE)
    ax = fig.add_subplot(111)
    label_array = np.asarray(labels)
    for i, name in enumerate(series):
        mask = label_array == name
        order = np.argsort(xs[mask])
        color = _COLORS[i % len(_COLORS)]
        tag = name or "all"
        ax.plot(xs[mask][order], t_sol[mask][order], linestyle="--", color=color, gid=f"t_sol:{tag}",
                label=f"T_SOL {name}".strip())
        if predicted is not None:
            ax.plot(xs[mask][order], predicted[mask][order], linestyle="-", color=color, gid=f"predicted:{tag}",
                    label=f"predicted {name}".strip())
    if xs.min() > 0 and xs.max() / xs.min() > 20:
        ax.set_xscale("log", base=2)
    ys = t_sol if predicted is None else np.concatenate([t_sol, predicted])
    if ys.min() > 0 and ys.max() / ys.min() > 20:
        ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel("time per call (us)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
