"""The output files: JSON-safe values, short error strings, the atomic write of the JSON and its log."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any


def _finite(x: Any) -> Any:
    """JSON-safe value: NaN and inf become None, recursively."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def short_error(exc: BaseException) -> str:
    """Exception type and the first lines of its message."""
    msg = " ".join(str(exc).split("\n")[:3]).strip()
    return f"{type(exc).__name__}: {msg}"[:600]


def write_outputs(path: str, doc: dict[str, Any], log_lines: Sequence[str]) -> None:
    """Write the JSON (atomically) and the log next to it."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(_finite(doc), fh, indent=1, sort_keys=False)
        fh.write("\n")
    os.replace(tmp, path)
    with open(os.path.splitext(path)[0] + ".log", "w") as fh:
        fh.write("\n".join(log_lines) + "\n")
