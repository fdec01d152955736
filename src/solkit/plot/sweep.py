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

from ..errors import OptionError
from .._optional import require_matplotlib
from .charts import FIGSIZE

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["sweep", "RESULT_COLUMNS", "MAX_SERIES"]

#: columns that are results, not parameters (sk.sweep's and the CLI's)
RESULT_COLUMNS = frozenset({"gpu", "t_sol_s", "t_compute_s", "t_memory_s", "t_link_s", "bound", "intensity_flop_per_byte",
                            "model_flops", "executed_flops", "bytes", "predicted_s", "sol_fraction", "dtype"})
MAX_SERIES = 8
_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


def sweep(result: Any, x: Optional[str] = None, title: Optional[str] = None) -> "Figure":
    """A figure of T_SOL (dashed) and predicted time (solid) against ``x`` (default: the first swept parameter)."""
    require_matplotlib()
    from matplotlib.figure import Figure

    names = [str(k) for k in result.keys()]
    varied = [k for k in names if len(set(np.asarray(result[k]).tolist())) > 1]  # constant columns are not series
    params = [k for k in names if k not in RESULT_COLUMNS and k in varied]
    if "t_sol_s" not in names or not params:
        raise OptionError(f"sweep needs a sweep's columns (a swept parameter and t_sol_s), got {names}")
    x = x or params[0]
    if x not in params:
        raise OptionError(f"x must be one of the swept parameters {params}, got {x!r}")
    xs = np.asarray(result[x], dtype=np.float64)
    keys = [np.asarray(result[k]) for k in (*[p for p in params if p != x], *(["gpu"] if "gpu" in varied else []))]
    labels = [" ".join(str(v) for v in row) for row in zip(*keys)] if keys else [""] * len(xs)
    series = list(dict.fromkeys(labels))
    if len(series) > MAX_SERIES:
        raise OptionError(f"the sweep has {len(series)} series besides {x!r}, more than {MAX_SERIES}: sweep fewer values")
    fig = Figure(figsize=FIGSIZE)
    ax = fig.add_subplot(111)
    t_sol = np.asarray(result["t_sol_s"], dtype=np.float64) * 1e6
    predicted = np.asarray(result["predicted_s"], dtype=np.float64) * 1e6 if "predicted_s" in names else None
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
