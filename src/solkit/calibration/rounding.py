"""Values rounded as a spec file keeps them: each parameter in its file unit, to its ``PARAMETERS`` digits."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..hardware.parameters import PARAMETERS, UNIT_FACTORS, Calibration

__all__ = ["rounded", "round_calibration"]


def rounded(value: float, parameter: str) -> float:
    """``value`` (SI) rounded as the spec keeps ``parameter`` (in its file unit); a non-finite value as it is."""
    p = next(p for p in PARAMETERS if p.name == parameter)
    factor = UNIT_FACTORS[p.unit]
    return float(round(value / factor, p.digits) * factor) if np.isfinite(value) else float(value)


def round_calibration(cal: Calibration) -> Calibration:
    """Every fitted parameter rounded as the spec keeps it (what the committed file holds)."""
    changes: dict[str, Any] = {}
    for p in PARAMETERS:
        if p.fitted:
            value = getattr(cal, p.name)
            changes[p.name] = {k: rounded(v, p.name) for k, v in value.items()} if p.keyed else rounded(value, p.name)
    return cal.replace(**changes)
