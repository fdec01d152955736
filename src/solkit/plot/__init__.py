"""Roofline charts: workloads as points under a GPU's compute and memory roofs (needs matplotlib).

A sweep (``sk.sweep``'s DataFrame, or ``solkit sweep``'s columns) is drawn by ``solkit.plot.sweep``: T_SOL and the
prediction against the swept parameter. A measured profile has two charts of its own in ``solkit.plot.profile_charts``:
``profile_roofline`` (its op groups, bound and achieved, on the roofline) and ``time_breakdown`` (where the time goes);
``solkit.plot.profile(prof)`` draws both in one figure (``chart=`` picks one); see there.

Every chart returns a ``matplotlib.figure.Figure`` (a ``ChartFigure``, ``solkit.plot.figure``), which a Jupyter
notebook shows as the cell's value without ``%matplotlib inline``; ``save`` writes the same image to a file.

matplotlib is the optional extra ``plot`` (``pip install 'solkit[plot]'``). It is imported
inside the functions, never at module import, so ``import solkit`` and ``import solkit.plot``
work without it; calling ``roofline`` without it raises ``PlotDependencyError``. The chart is
drawn in ``solkit.plot.charts``; its label placement is plain pixel geometry in
``solkit.plot.layout``, which never imports matplotlib.

What the chart shows, on log-log axes:

- x: arithmetic intensity, executed FLOPs per compulsory DRAM byte (``sk.roofline(w, gpu).intensity``);
  y: attainable performance, executed FLOPs / T_SOL, in TFLOP/s.
- The datasheet roofs: one horizontal compute roof per precision (dense peaks) starting at its
  ridge point, and the memory roof y = bandwidth * x up to the highest ridge; each ridge point
  is marked with its intensity.
- The GPU's measured ceilings (``measured:`` in its spec: the bf16 matmul rate and the copy
  bandwidth) as dashed lines.
- One point per workload at (intensity, executed FLOPs / T_SOL), coloured by the roof behind
  the larger share of its T_SOL. A single-kernel workload sits on its roof; a multi-kernel one
  sits at its aggregate intensity, on or under the roofs (NB: its kernels may each be bound by
  a different roof, so it can sit below both).
- With ``measured``: a hollow marker at the achieved rate (executed FLOPs / measured seconds),
  joined to the bound point, and the SOL fraction (T_SOL / measured) in the label.

Artists carry a ``gid`` so that code (and the tests) can find them: ``"roof:<precision>:<unit>"``,
``"roof:memory"``, ``"measured:<precision>:matrix"``, ``"measured:copy"``, ``"ridge"``,
``"points:compute"``, ``"points:memory"``, ``"points:measured"``, ``"gap:<label>"``, ``"label:<label>"``.
"""

from __future__ import annotations

from .._dir import public_dir
from ..errors import PlotDependencyError
from .charts import DEFAULT_PRECISIONS, INSTALL_HINT, roofline, save
from .profile_charts import profile, profile_roofline, time_breakdown
from .sweep import sweep

__all__ = ["PlotDependencyError", "roofline", "save", "profile", "profile_roofline", "time_breakdown", "sweep",
           "DEFAULT_PRECISIONS", "INSTALL_HINT"]


def __dir__() -> list[str]:
    """``__all__`` (lazy names included), the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
