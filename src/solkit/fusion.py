"""Set two variants of an operator side by side: bytes, kernels, T_SOL and the predicted time saved.

``compare(baseline, variant, gpu)`` answers "what does fusing (or a layout change, or flash
attention) buy on this GPU?" with the compulsory-traffic figures, the T_SOL ratio and, on a calibrated
GPU, the calibrated prediction of each (``predicted_before``, ``predicted_after``, ``predicted_speedup``:
launches, latencies and waves, which T_SOL leaves out, often decide what a small fusion buys). On a GPU
without a calibration the predicted figures are None and ``predicted_note`` says why (no T_SOL stands in).
With ``measured=(baseline seconds, variant seconds)`` also the measured speed-up and how far each run is
from its bound (a time below its T_SOL is flagged, as in ``sol_fraction``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._dir import public_dir
from ._display import fmt_seconds, html_table, plain
from ._impossible import below_bound
from ._optional import require_pandas
from ._validate import checked_call, as_result, flag, positive
from .errors import ArgumentTypeError, ShapeError
from .hardware import as_gpu
from .prediction import calibration, predict
from .sol import roofline
from .workload import Workload, as_workload

__all__ = ["Comparison", "compare"]


@dataclass(frozen=True)
class Comparison:
    """Baseline vs variant on one GPU. Fractions are of the baseline; ``speedup`` = T_SOL ratio, ``predicted_speedup`` the
    calibrated prediction's (None on a GPU without a calibration: ``predicted_note`` says so)."""

    baseline: str
    variant: str
    gpu: str
    bytes_baseline: Any
    bytes_variant: Any
    bytes_read_baseline: Any
    bytes_read_variant: Any
    kernels_baseline: int
    kernels_variant: int
    t_sol_baseline: Any
    t_sol_variant: Any
    flops_baseline: Any
    flops_variant: Any
    measured_baseline: Any = None  # seconds, when measured
    measured_variant: Any = None
    predicted_before: Any = None  # calibrated expected seconds of the baseline (None: the GPU has no calibration)
    predicted_after: Any = None  # ... of the variant
    predicted_note: Optional[str] = None  # why there is no prediction (None where there is one)

    @property
    def kernels_saved(self) -> int:
        """Launches the variant saves."""
        return self.kernels_baseline - self.kernels_variant

    @property
    def bytes_saved(self) -> Any:
        """DRAM bytes the variant saves (negative: it moves more)."""
        return as_result(np.asarray(self.bytes_baseline) - np.asarray(self.bytes_variant))

    @property
    def bytes_saved_fraction(self) -> Any:
        """bytes_saved / bytes_baseline (0 where neither moves a byte; a ShapeError where only the variant does)."""
        return _share_saved("bytes_saved_fraction", "moves", self.bytes_baseline, self.bytes_variant)

    @property
    def bytes_read_saved_fraction(self) -> Any:
        """The share of the baseline's DRAM reads the variant saves (0 where neither reads; a ShapeError where only the
        variant does)."""
        return _share_saved("bytes_read_saved_fraction", "reads", self.bytes_read_baseline, self.bytes_read_variant)

    @property
    def speedup(self) -> Any:
        """T_SOL ratio baseline / variant (the bound's speed-up; > 1: the variant is faster; 1.0 where neither does any
        work: equal)."""
        return _ratio(self.t_sol_baseline, self.t_sol_variant)

    @property
    def predicted_speedup(self) -> Any:
        """Predicted time baseline / variant (> 1: the variant is faster; None where the GPU has no calibration)."""
        if self.predicted_before is None or self.predicted_after is None:
            return None
        return _ratio(self.predicted_before, self.predicted_after)

    @property
    def measured_speedup(self) -> Any:
        """Measured time baseline / variant (None when not measured)."""
        if self.measured_baseline is None:
            return None
        return as_result(np.asarray(self.measured_baseline) / np.asarray(self.measured_variant))

    @property
    def sol_fraction_baseline(self) -> Any:
        """T_SOL / measured time of the baseline (None when not measured)."""
        return None if self.measured_baseline is None else as_result(np.asarray(self.t_sol_baseline) / self.measured_baseline)

    @property
    def sol_fraction_variant(self) -> Any:
        """T_SOL / measured time of the variant (None when not measured)."""
        return None if self.measured_variant is None else as_result(np.asarray(self.t_sol_variant) / self.measured_variant)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (None for a share of bytes saved that is undefined: the baseline moves none); the predicted
        times as ``predicted_before_s``, ``predicted_after_s`` (the CLI's scheme: a time ends in ``_s``)."""
        out = {_KEYS.get(k, k): plain(v) for k, v in self.__dict__.items()}
        for name in ("kernels_saved", "bytes_saved", "bytes_saved_fraction", "bytes_read_saved_fraction", "speedup",
                     "predicted_speedup", "measured_speedup", "sol_fraction_baseline", "sol_fraction_variant"):
            try:
                out[name] = plain(getattr(self, name))
            except ShapeError:
                out[name] = None
        return out

    def _saved_text(self) -> str:
        """The share of bytes saved as the summaries print it ("n/a" where the baseline moves none)."""
        try:
            return f"{0.0 - 100 * self.bytes_saved_fraction:+.1f}%"
        except ShapeError:
            return "n/a: the baseline moves no bytes"

    def __repr__(self) -> str:
        return f"Comparison({self})"

    def to_frame(self) -> Any:
        """A pandas DataFrame (``pip install pandas``): a row each for the baseline and the variant (a sweep: a row per
        side and point, with a ``point`` column): its bytes, kernel runs (``kernels_baseline``), model FLOPs, T_SOL,
        prediction and measured time (NaN where there is none)."""
        pd = require_pandas()
        sides = (("baseline", self.baseline, self.bytes_baseline, self.kernels_baseline, self.flops_baseline,
                  self.t_sol_baseline, self.predicted_before, self.measured_baseline),
                 ("variant", self.variant, self.bytes_variant, self.kernels_variant, self.flops_variant,
                  self.t_sol_variant, self.predicted_after, self.measured_variant))
        shape = np.broadcast_shapes(*(np.shape(x) for side in sides for x in side[2:] if x is not None))
        points = int(np.prod(shape)) if shape else 1

        def column(x: Any) -> Any:
            return np.broadcast_to(np.asarray(np.nan if x is None else x, dtype=np.float64), shape).ravel()

        blocks = [{"side": [side] * points, "workload": [name] * points, "bytes": column(b), "runs": column(k),
                   "model_flops": column(f), "t_sol_s": column(t), "predicted_s": column(p), "measured_s": column(m)}
                  for side, name, b, k, f, t, p, m in sides]
        frame = pd.concat([pd.DataFrame(b) for b in blocks], ignore_index=True)
        if shape:
            frame.insert(0, "point", np.tile(np.arange(points), 2))
        return frame

    def _repr_html_(self) -> str:
        if np.ndim(self.speedup):
            return f"<p>{self}</p>"
        predicted = self.predicted_speedup is not None
        rows = [
            (self.baseline, self.kernels_baseline, self.bytes_baseline / 1e6, self.flops_baseline / 1e9, self.t_sol_baseline * 1e6,
             self.predicted_before * 1e6 if predicted else "n/a"),
            (self.variant, self.kernels_variant, self.bytes_variant / 1e6, self.flops_variant / 1e9, self.t_sol_variant * 1e6,
             self.predicted_after * 1e6 if predicted else "n/a"),
        ]
        caption = (f"on {self.gpu}: bytes {self._saved_text()}, T_SOL ratio {self.speedup:.2f}x, predicted "
                   f"{self._predicted_text()}")
        return html_table(("variant", "kernels", "MB", "model GFLOP", "T_SOL us", "predicted us"), rows, caption)

    def _predicted_text(self) -> str:
        """The predicted speed-up as the summaries print it ("n/a: why" where the GPU has no calibration)."""
        if self.predicted_speedup is None:
            return f"n/a: {self.predicted_note}"
        return f"{self.predicted_speedup:.2f}x"

    def __str__(self) -> str:
        if np.ndim(self.speedup):
            return f"Comparison({self.baseline!r} -> {self.variant!r} on {self.gpu}, shape {np.shape(self.speedup)})"
        text = (
            f"{self.baseline} -> {self.variant} on {self.gpu}: bytes {self.bytes_baseline:.4g} -> "
            f"{self.bytes_variant:.4g} ({self._saved_text()}), kernels "
            f"{self.kernels_baseline} -> {self.kernels_variant}, T_SOL {self.t_sol_baseline * 1e6:.2f} us -> "
            f"{self.t_sol_variant * 1e6:.2f} us ({self.speedup:.2f}x), predicted "
        )
        if self.predicted_speedup is None:
            text += self._predicted_text()
        else:
            text += (f"{fmt_seconds(self.predicted_before)} -> {fmt_seconds(self.predicted_after)} "
                     f"({self.predicted_speedup:.2f}x)")
        if self.measured_baseline is not None:
            text += (f"; measured {self.measured_baseline * 1e6:.2f} us -> {self.measured_variant * 1e6:.2f} us "
                     f"({self.measured_speedup:.2f}x), SOL fraction {self.sol_fraction_baseline:.2f} -> "
                     f"{self.sol_fraction_variant:.2f}")
        return text


#: the JSON keys (``to_dict``) that differ from the attributes' names
_KEYS = {"predicted_before": "predicted_before_s", "predicted_after": "predicted_after_s"}


def _ratio(before: Any, after: Any) -> Any:
    """before / after, 1.0 where both are 0 (no work either side: equal); ``compare`` refuses after = 0 < before."""
    b, a = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    none = (b == 0) & (a == 0)
    if not none.any():
        return as_result(b / a)
    return as_result(np.where(none, 1.0, b / np.where(none, 1.0, a)))


def _share_saved(name: str, verb: str, before: Any, after: Any) -> Any:
    """1 - after / before: the share of the baseline's bytes the variant saves; 0 where neither has any."""
    b, a = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    if ((b == 0) & (a > 0)).any():
        raise ShapeError(f"{name} is undefined: the baseline {verb} no DRAM bytes and the variant {verb} "
                         f"{float(np.max(a)):,.0f}; compare the bytes themselves (bytes_baseline, bytes_variant)")
    zero = b == 0
    return as_result(np.where(zero, 0.0, 1.0 - a / np.where(zero, 1.0, b)))


def _measured_pair(measured: Any) -> tuple[Any, Any]:
    """(baseline seconds, variant seconds) of ``measured``, each validated."""
    if isinstance(measured, (str, bytes)) or not hasattr(measured, "__len__") or len(measured) != 2:
        raise ArgumentTypeError(f"measured must be a pair (baseline seconds, variant seconds), got {measured!r}")
    return positive("measured[0] (baseline seconds)", measured[0]), positive("measured[1] (variant seconds)", measured[1])


@checked_call
def compare(baseline: Workload, variant: Workload, gpu: Any, measured: Optional[Any] = None, strict: bool = False) -> Comparison:
    """Compare two workloads that do the same job (e.g. unfused vs fused) on ``gpu``.

    Two workloads that do no work (hand-built kernels of no FLOPs and no bytes) are equal: ``speedup`` 1.0, no bytes
    saved; a variant that does none where the baseline does some is a ShapeError (an unbounded speed-up).

    ``measured``: optional (baseline seconds, variant seconds); a time below its workload's T_SOL
    is flagged (``ImpossibleMeasurementWarning``, or ``ImpossibleMeasurementError`` with ``strict=True``).
    On a calibrated GPU each side is also predicted (``sk.predict(..., warn=False)``: a misaligned GEMM's slowdown is in
    its time, its warning is ``predict``'s to give); on one without a calibration
    ``predicted_before``, ``predicted_after`` and ``predicted_speedup`` are None and ``predicted_note`` says why.
    """
    baseline = as_workload(baseline, "baseline")
    variant = as_workload(variant, "variant")
    g = as_gpu(gpu)
    strict = flag("strict", strict)
    try:
        np.broadcast_shapes(baseline.shape, variant.shape)
    except ValueError:
        raise ShapeError(f"baseline of shape {baseline.shape} and variant of shape {variant.shape} do not broadcast "
                         f"together (sweep both over the same shapes)") from None
    rb, rv = roofline(baseline, g), roofline(variant, g)
    idle = (np.asarray(rv.t_sol) == 0) & (np.asarray(rb.t_sol) > 0)
    if idle.any():
        raise ShapeError(f"variant {variant.name!r} does no work (no FLOPs, no bytes: T_SOL 0) where baseline "
                         f"{baseline.name!r} does (T_SOL {float(np.max(rb.t_sol)):.4g} s): the speed-up over it is "
                         "unbounded; compare two workloads that do the same job")
    mb = mv = None
    if measured is not None:
        mb, mv = _measured_pair(measured)
        for name, m, r in (("measured[0] (baseline seconds)", mb, rb), ("measured[1] (variant seconds)", mv, rv)):
            try:
                np.broadcast_shapes(np.shape(m), np.shape(r.t_sol))
            except ValueError:
                raise ShapeError(f"{name} of shape {np.shape(m)} does not broadcast with the workload's shape "
                                 f"{np.shape(r.t_sol)}") from None
        try:
            np.broadcast_shapes(np.shape(mb), np.shape(mv))
        except ValueError:
            raise ShapeError(f"measured[0] of shape {np.shape(mb)} and measured[1] of shape {np.shape(mv)} do not "
                             f"broadcast together") from None
        below_bound("measured[0] (baseline seconds)", mb, rb.t_sol, lambda: f"{rb.workload!r} on {rb.gpu}", strict)
        below_bound("measured[1] (variant seconds)", mv, rv.t_sol, lambda: f"{rv.workload!r} on {rv.gpu}", strict)
    cal = calibration(g)
    pb = pv = note = None
    if cal.calibrated:
        pb, pv = predict(baseline, g, warn=False).seconds, predict(variant, g, warn=False).seconds
    else:
        note = f"{g.name} has no calibration (its spec has no measured: section); compare T_SOL only"
    return Comparison(
        baseline=baseline.name,
        variant=variant.name,
        gpu=g.name,
        bytes_baseline=rb.bytes,
        bytes_variant=rv.bytes,
        bytes_read_baseline=as_result(baseline.bytes_read),
        bytes_read_variant=as_result(variant.bytes_read),
        kernels_baseline=len(baseline),  # kernel entries, counted without listing them
        kernels_variant=len(variant),
        t_sol_baseline=rb.t_sol,
        t_sol_variant=rv.t_sol,
        flops_baseline=rb.flops,
        flops_variant=rv.flops,
        measured_baseline=mb,
        measured_variant=mv,
        predicted_before=pb,
        predicted_after=pv,
        predicted_note=note,
    )


def __dir__() -> list[str]:
    """``__all__``, the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
