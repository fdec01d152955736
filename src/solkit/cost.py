"""What GPU time costs: GPU-hours, an energy bound at the board power, and a price at the user's $/GPU-hour.

Pure functions of seconds (wall time of a step, a token, a request or a job) and the GPUs that run them:

- GPU-hours = seconds x n_gpus / 3600;
- energy bound (joules) = seconds x n_gpus x tdp_w, the spec's board power (``chip.tdp_w``, sourced per SKU:
  the H200 SXM's 700 W is its product page's "up to 700 W"). NB: an upper bound of the boards' energy (a GPU
  draws at most its configured power limit, and less when it waits on memory or the host); the host, the
  network and the cooling are not counted;
- price = GPU-hours x ``usd_per_gpu_hour``. There is no default price: without one the price is None.

``seconds`` may be an array (a sweep): every figure comes back as an array of its shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._dir import public_dir
from ._display import fmt_seconds, html_table, is_scalar
from ._num import result
from ._optional import require_pandas
from ._validate import checked_call, positive, whole
from .errors import ArgumentTypeError, OptionError, ShapeError
from .hardware import as_gpu
from .hardware.system import System

__all__ = ["Cost", "cost", "energy_bound", "gpu_hours", "price", "tdp_watts"]

_HOUR = 3600.0
#: joules per kilowatt-hour
_KWH = 3.6e6


@dataclass(frozen=True)
class Cost:
    """GPU-hours, the energy bound (J) and the price ($, None without a rate) of ``seconds`` on ``n_gpus`` GPUs."""

    what: str  # what the seconds are: "per step", "per token", "per request", ...
    seconds: Any  # wall seconds
    n_gpus: int
    gpu: str
    tdp_w: float  # the spec's board power per GPU
    gpu_hours: Any
    energy_j: Any  # upper bound: seconds x n_gpus x tdp_w
    usd_per_gpu_hour: float | None
    usd: Any  # gpu_hours x usd_per_gpu_hour, or None

    @property
    def energy_kwh(self) -> Any:
        """The energy bound in kilowatt-hours."""
        return result(np.asarray(self.energy_j) / _KWH) if not is_scalar(self.energy_j) else self.energy_j / _KWH

    def to_dict(self) -> dict[str, Any]:
        """Plain figures for a table or JSON (arrays as lists)."""
        out = {k: getattr(self, k) for k in ("what", "seconds", "n_gpus", "gpu", "tdp_w", "gpu_hours", "energy_j",
                                             "usd_per_gpu_hour", "usd")}
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in out.items()}

    def to_frame(self) -> Any:
        """A one-row pandas DataFrame (one row per shape of a sweep)."""
        pd = require_pandas("Cost.to_frame()")
        d = self.to_dict()
        rows = max(np.size(self.seconds), 1)
        return pd.DataFrame({k: (v if isinstance(v, list) else [v] * rows) for k, v in d.items()})

    def __str__(self) -> str:
        if not is_scalar(self.seconds):
            return f"cost {self.what}: a sweep of {np.size(self.seconds)} figures on {self.n_gpus} x {self.gpu}"
        money = "no price (pass usd_per_gpu_hour)" if self.usd is None else f"${self.usd:.4g}"
        return (f"cost {self.what}: {fmt_seconds(self.seconds)} on {self.n_gpus} x {self.gpu} = "
                f"{self.gpu_hours:.4g} GPU-hours, <= {_energy_text(self.energy_j)} at {self.tdp_w:g} W per GPU, "
                f"{money}")

    def __repr__(self) -> str:
        return f"Cost({self})"

    def _repr_html_(self) -> str:
        money = "n/a (no rate given)" if self.usd is None else self.usd
        rows = [("seconds", self.seconds), ("GPUs", f"{self.n_gpus} x {self.gpu}"), ("GPU-hours", self.gpu_hours),
                ("energy bound (J)", self.energy_j), ("board power per GPU (W)", self.tdp_w), ("price ($)", money)]
        if not is_scalar(self.seconds):
            rows = [(k, v if is_scalar(v) or isinstance(v, str) else f"array{np.shape(v)}") for k, v in rows]
        return html_table(("figure", "value"), rows, caption=f"cost {self.what}")


def _energy_text(joules: float) -> str:
    if joules >= _KWH / 10:
        return f"{joules / _KWH:.4g} kWh"
    return f"{joules:.4g} J"


def _count(n_gpus: Any) -> int:
    return whole("n_gpus", n_gpus, ShapeError)


def _seconds(seconds: Any) -> Any:
    return positive("seconds", seconds, ShapeError)


@checked_call
def tdp_watts(gpu: Any) -> float:
    """The board power (W) of ``gpu`` (a GPU, a name, or a System: its GPU) from its spec's ``chip.tdp_w``."""
    g = gpu.gpu_spec if isinstance(gpu, System) else as_gpu(gpu)
    return float(g.chip.tdp_w)


@checked_call
def gpu_hours(seconds: Any, n_gpus: Any = 1) -> Any:
    """GPU-hours of ``seconds`` of wall time on ``n_gpus`` GPUs: seconds x n_gpus / 3600."""
    return result(_seconds(seconds) * _count(n_gpus) / _HOUR)


@checked_call
def energy_bound(seconds: Any, gpu: Any, n_gpus: Any = 1) -> Any:
    """Joules at most: seconds x n_gpus x the spec's board power (``tdp_watts``); an upper bound of the boards' energy."""
    return result(_seconds(seconds) * _count(n_gpus) * tdp_watts(gpu))


@checked_call
def price(seconds: Any, usd_per_gpu_hour: Any, n_gpus: Any = 1) -> Any:
    """Dollars of ``seconds`` on ``n_gpus`` GPUs at ``usd_per_gpu_hour``: GPU-hours x the rate."""
    return result(_seconds(seconds) * _count(n_gpus) / _HOUR * _rate(usd_per_gpu_hour))


def _rate(usd_per_gpu_hour: Any) -> float:
    if isinstance(usd_per_gpu_hour, bool) or not isinstance(usd_per_gpu_hour, (int, float, np.integer, np.floating)):
        raise ArgumentTypeError(f"usd_per_gpu_hour must be a number of dollars per GPU-hour (e.g. 3.5), got "
                                f"{type(usd_per_gpu_hour).__name__} {usd_per_gpu_hour!r}")
    rate = float(usd_per_gpu_hour)
    if not (rate >= 0 and np.isfinite(rate)):
        raise OptionError(f"usd_per_gpu_hour must be a finite number of dollars >= 0, got {rate:g}")
    return rate


@checked_call
def cost(seconds: Any, gpu: Any, n_gpus: Any = 1, usd_per_gpu_hour: Any = None, what: str = "") -> Cost:
    """The ``Cost`` of ``seconds`` on ``n_gpus`` of ``gpu``: GPU-hours, energy bound, price at ``usd_per_gpu_hour``."""
    s = _seconds(seconds)
    n = _count(n_gpus)
    g = gpu.gpu_spec if isinstance(gpu, System) else as_gpu(gpu)
    watts = float(g.chip.tdp_w)
    rate = None if usd_per_gpu_hour is None else _rate(usd_per_gpu_hour)
    hours = result(s * n / _HOUR)
    usd = None if rate is None else result(s * n / _HOUR * rate)
    return Cost(str(what), result(s), n, g.name, watts, hours, result(s * n * watts), rate, usd)


def __dir__() -> list[str]:
    """``__all__``, the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
