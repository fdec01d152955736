"""The neighbour bank file (``measured.neighbours``, beside the spec): its schema and its loading into ``Neighbours``.

A bank lists, per key (``neighbours.bank_key`` with its variants), the quantized log2 features of measured
kernels (integer rows, each as wide as its tag says) and their residuals (log of measured over modelled), and ``off``:
the calibration keys (``calibration_key``) whose correction the validation draws turned off (it did worse there than
the physical model alone), whose entries are not loaded.
``python -m solkit.calibration fit --write`` writes it; a problem with the file is a ``SpecError`` naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Mapping, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from .._validate import did_you_mean
from ..errors import SpecError
from .neighbours import Neighbours

__all__ = ["MAX_RESIDUAL", "WIDTHS", "BankEntry", "NeighbourBank", "load_neighbours", "calibration_key"]

#: the largest |residual| a bank may hold (e^10: 22,026 times off; the builder's are at least log 1/4)
MAX_RESIDUAL = 10.0
#: how many features each tag of ``neighbours.features`` has (a bank key's last field before its variants)
WIDTHS: Mapping[str, int] = {"conv": 6, "gemm": 4, "rows": 3, "flat": 2}


class BankEntry(BaseModel):
    """One key of a neighbour bank: quantized log2 features (rows of integers) and residuals, one per row."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    features: list[list[Annotated[StrictInt, Field(ge=-(1 << 20), le=1 << 20)]]]
    residuals: list[Annotated[float, Field(ge=-MAX_RESIDUAL, le=MAX_RESIDUAL, allow_inf_nan=False)]]


class NeighbourBank(BaseModel):
    """A neighbour bank file: the GPU it was measured on, how, and its keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    gpu: StrictStr
    source: StrictStr
    cases: StrictInt = 0
    off: list[StrictStr] = []
    keys: dict[str, BankEntry]


def calibration_key(key: str) -> str:
    """The calibration key of a bank key ``op|kind|precision|layout|tag|v1+v2``: its op and its last variant (``op_v2``)."""
    fields = key.split("|")
    variants = fields[5] if len(fields) == 6 else ""
    return fields[0] + ("_" + variants.split("+")[-1] if variants else "")


def load_neighbours(path: Any, gpu: Optional[str] = None) -> Neighbours:
    """Load and check a bank file (``measured.neighbours``) of ``gpu``; problems raise ``SpecError`` naming the file.

    Checked: JSON text; ``gpu`` (the spec name it was measured for, equal to ``gpu`` when given), ``source``
    and ``keys``; under each key as many integer feature rows, each as wide as its tag says (``WIDTHS``),
    as residuals, each finite and at most ``MAX_RESIDUAL`` in size; each name in ``off`` the calibration key of
    some entry.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{p}: no such neighbour bank (measured.neighbours names it)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: not a readable neighbour bank: {exc}") from None
    try:
        doc = NeighbourBank.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(the file)"
        came = f"; got {first['input']!r}"[:120] if first.get("type") != "json_invalid" else ""
        raise SpecError(f"{p}: field '{where}': {first['msg']}{came}") from None
    if gpu is not None and doc.gpu != gpu:
        raise SpecError(f"{p}: field 'gpu': this bank was measured on {doc.gpu!r}, not on {gpu!r}; give the spec its "
                        f"own bank or drop its measured.neighbours")
    banks = {}
    off = set(doc.off)
    for key, entry in doc.keys.items():
        tag = key.split("|")[4] if key.count("|") == 5 else ""
        width = WIDTHS.get(tag)
        if width is None:
            raise SpecError(f"{p}: field 'keys.{key}': a key is op|kind|precision|layout|tag|variants with tag one of "
                            f"{', '.join(WIDTHS)}; got {key!r}")
        rows = entry.features
        if not rows or any(len(row) != width for row in rows) or len(entry.residuals) != len(rows):
            raise SpecError(f"{p}: field 'keys.{key}': expected n >= 1 rows of {width} features (tag {tag!r}) and n "
                            f"residuals; got {len(entry.features)} rows of widths "
                            f"{sorted({len(r) for r in entry.features})} and {len(entry.residuals)} residuals")
        if calibration_key(key) not in off:
            banks[key] = (np.array(rows, dtype=np.int64), np.array(entry.residuals, dtype=float))
    present = {calibration_key(key) for key in doc.keys}
    for name in doc.off:  # a switch names a calibration key of this bank (a typo would leave its correction on)
        if name not in present:
            raise SpecError(f"{p}: field 'off': {name!r} is the calibration key of no entry of this bank (an op and its "
                            f"last variant, e.g. 'matmul_skinny'){did_you_mean(name, sorted(present))}")
    return Neighbours(doc.source, banks, doc.gpu)
