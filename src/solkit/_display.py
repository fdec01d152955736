"""Formatting helpers shared by the reprs, the tables and the CLI (no dependencies)."""

from __future__ import annotations

import html
from typing import Any, Sequence

import numpy as np

__all__ = ["fmt_seconds", "fmt_bytes", "fmt_value", "whole", "html_table", "plain", "is_scalar"]


def is_scalar(x: Any) -> bool:
    """True for a Python/numpy scalar or a 0-d array."""
    return np.ndim(x) == 0


def fmt_seconds(seconds: Any) -> str:
    """'1.111 ms', '27.97 us', '5.2 ns'; an array as its shape."""
    if not is_scalar(seconds):
        return f"array{np.shape(seconds)} s"
    s = float(seconds)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if abs(s) >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def fmt_bytes(nbytes: Any) -> str:
    """'512 B', '25.17 MB', '1.59 TB' (decimal units, as the specs' GB and TB/s); an array as its shape."""
    if not is_scalar(nbytes):
        return f"array{np.shape(nbytes)} B"
    b = float(nbytes)
    for scale, unit in ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if abs(b) >= scale:
            return f"{b / scale:.4g} {unit}"
    return f"{b:.4g} B"


def whole(x: Any) -> Any:
    """``x`` as a Python int where it is a whole finite number (1024.0, np.int64(8)), else ``x`` unchanged (bools too)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    f = float(x)
    return int(f) if np.isfinite(f) and f == int(f) and abs(f) < 2.0**63 else f


def fmt_value(x: Any) -> str:
    """A parameter's value as a person writes it: 1024 (never 1024.0), 0.5, 1e+20, True, bf16, (3, 3)."""
    x = whole(x)
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, tuple):
        return "(" + ", ".join(fmt_value(v) for v in x) + ")"
    return str(x)


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> str:
    """A small HTML table, numbers right-aligned, every cell escaped."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for c in row:
            align = ' style="text-align:right"' if isinstance(c, (int, float, np.floating, np.integer)) else ""
            text = f"{c:.4g}" if isinstance(c, (float, np.floating)) else str(c)
            cells.append(f"<td{align}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def plain(x: Any) -> Any:
    """JSON-ready: arrays to lists, numpy scalars to Python, mappings and sequences recursively."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x
