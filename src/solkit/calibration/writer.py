"""Writing a spec's ``measured:`` section: the fitted calibration in the file's units, emitted by PyYAML.

The section is replaced in place: PyYAML's parser locates its text (the rest of the file, its
comments included, is kept byte for byte) and its emitter writes the new one.
"""

from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path
from typing import Any, Optional

import yaml

from ..errors import SpecError
from ..hardware import load_spec_file
from ..hardware.parameters import PARAMETERS, UNIT_FACTORS, Calibration
from .data import MeasurementSet
from .fitting import TAIL_START, TAIL_WEIGHT, FitResult
from .rounding import round_calibration

__all__ = ["measured_section", "section_text", "write_measured", "METHOD"]

#: how the ceilings were measured (``benchmarks/measure_h200.py``), as the spec states it
METHOD = (
    "benchmarks/measure_h200.py: triton.testing.do_bench (median, L2 flushed before every call) on random data; "
    "matmul ceilings are the best median of 8192^3 and 16384^3 (torch.matmul, _scaled_mm for fp8, _int_mm for "
    "int8); copy = dst.copy_(src) of 4.3 GB, bytes read + written; read = sum of 4.3 GB fp32; launch floor = "
    "do_bench of a one-element add. Raw data: {data}."
)


def _file_value(value: Any, unit: str, digits: int) -> Any:
    factor = UNIT_FACTORS[unit]
    if isinstance(value, dict) or hasattr(value, "items"):
        return {k: _file_value(v, unit, digits) for k, v in sorted(value.items())}
    if value == float("inf"):
        return "inf"
    return round(value / factor, digits)


def measured_section(mset: MeasurementSet, result: FitResult, data: str, neighbours: Optional[str] = None) -> dict[str, Any]:
    """The ``measured:`` mapping of a fit, in the file's units and rounding (``PARAMETERS``' digits).

    ``neighbours``: the file name of the bank of measured kernels written beside the spec (``prediction.bank`` reads it).
    """
    meta = mset.meta
    cal: Calibration = round_calibration(result.calibration)
    section: dict[str, Any] = {
        "date": _dt.date.fromisoformat(meta["date_utc"][:10]),
        "method": METHOD.format(data=data),
        "stack": {
            "gpu": meta["gpu_name"],
            "driver": meta["nvidia_smi"].split(",")[0].strip(),
            "cuda": str(meta["cuda_version"]),
            "torch": meta["torch_version"],
            "triton": meta["triton_version"],
            "cudnn": str(meta["cudnn_version"]),
        },
    }
    for p in PARAMETERS:
        section[p.file_key] = _file_value(getattr(cal, p.name), p.unit, p.digits)
    if neighbours:
        section["neighbours"] = neighbours
    section["fit"] = (f"python -m solkit.calibration fit: {result.train_cases} training cases, {result.holdout_cases} "
                      f"held out; loss (mean of e + {TAIL_WEIGHT:g} max(e - log {math.exp(TAIL_START):g}, 0), e = |log(pred/meas)|) "
                      f"= {result.objective:.4f}")
    return section


class _Dumper(yaml.SafeDumper):
    """Flow style for the tables, block style for the section, folded style for long texts."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=">" if len(value) > 80 else None)


_Dumper.add_representer(str, _text)


def section_text(section: dict[str, Any]) -> str:
    """The ``measured:`` section as the spec file holds it (YAML text)."""
    text = yaml.dump({"measured": section}, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=110,
                     allow_unicode=True)
    return text


def write_measured(spec: Any, section: dict[str, Any]) -> str:
    """Replace the ``measured:`` section of the spec file ``spec`` (or append one); return the new text.

    The file is validated after writing (a ``SpecError`` names any problem).
    """
    path = Path(spec)
    text = path.read_text(encoding="utf-8")
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        raise SpecError(f"{path}: expected a mapping of spec fields at the top level")
    start = end = None
    for key, value in root.value:
        if key.value == "measured":
            start, end = key.start_mark.index, value.end_mark.index
    if start is not None and "tune" not in section:  # solkit.tune's own fit (measured.tune) is kept as it stands
        kept = (yaml.safe_load(text) or {}).get("measured", {}).get("tune")
        if kept is not None:
            section = {**section, "tune": kept}
    new = section_text(section)
    if start is None:
        updated = text.rstrip() + "\n\n" + new
    else:
        rest = text[end:].lstrip("\n")
        updated = text[:start] + new + ("\n" + rest if rest else "")
    path.write_text(updated, encoding="utf-8")
    load_spec_file(path)  # validates
    return updated
