"""The Figure every solkit chart returns: a matplotlib ``Figure`` that a notebook shows as its cell's value.

solkit draws without pyplot (no backend chosen, no global figure list), so IPython's PNG formatter for
``Figure``, which ``%matplotlib inline`` registers, is never set up and a chart would print as
``<Figure size 1350x900 with 1 Axes>``. ``ChartFigure`` carries its own ``_repr_png_``, the rich-display
method IPython asks of any object: a fresh kernel shows the chart, nothing in matplotlib or IPython is
changed, and with ``%matplotlib inline`` IPython's own formatter (registered for ``Figure``) still wins.

This module imports matplotlib: the charts import it inside their functions, after ``require_matplotlib``.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure

__all__ = ["ChartFigure"]


class ChartFigure(Figure):
    """A matplotlib Figure with a PNG view for Jupyter (``_repr_png_``); in every other way a plain ``Figure``."""

    def _repr_png_(self) -> bytes:
        """The figure as PNG bytes at its own size and dpi, on white: the image ``solkit.plot.save`` writes."""
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", facecolor="white")
        return buffer.getvalue()
