"""Measurement files: the schema of ``data/*_measurements.json``, the split of its cases, and the workload of a case.

A measurement file (written by ``benchmarks/measure_h200.py`` on the GPU) lists cases, each
naming the registered operator and the keyword arguments that model it and the median
measured seconds. The split: a fixed third of the cases, chosen by a hash of the case id, is
held out of every fit (``is_holdout``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, PositiveFloat, ValidationError

from .._files import read_json
from ..errors import SpecError
from ..ops.registry import REGISTRY
from ..workload import Workload

__all__ = ["KernelRecord", "MeasuredCase", "MeasurementSet", "load_measurements", "is_holdout", "group_of",
           "workload_of", "fit_cases", "sample_set_of", "MAX_DATA_BYTES"]

#: the largest measurement or step file read (the largest shipped is about 1.6 MB)
MAX_DATA_BYTES = 256 * 2**20

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class KernelRecord(BaseModel):
    """One kernel the profiler saw during a case (name, launches, total microseconds)."""

    model_config = _FROZEN
    name: str
    count: int
    us: float


class MeasuredCase(BaseModel):
    """One measured case: what ran, the solkit op that models it, and its median time."""

    model_config = _FROZEN
    id: str
    family: str
    op: str
    params: dict[str, Any]
    impl_note: str
    seconds: Optional[PositiveFloat] = None
    q20: Optional[float] = None
    q80: Optional[float] = None
    mean_s: Optional[float] = None
    min_s: Optional[float] = None
    n_reps: Optional[int] = None
    rep_ms: Optional[float] = None
    wall_s: Optional[float] = None
    ok: bool
    error: Optional[str] = None
    extra_kernels: int = 0
    tier: int = 0
    primary: bool = True
    check: Optional[dict[str, Any]] = None
    kernels: Optional[tuple[KernelRecord, ...]] = None
    n_kernels: Optional[int] = None


class MeasurementSet(BaseModel):
    """A measurement file: how it was made (meta), the ceilings, the cases."""

    model_config = _FROZEN
    meta: dict[str, Any]
    ceilings: dict[str, Any]
    cases: tuple[MeasuredCase, ...]


def load_measurements(path: Any) -> MeasurementSet:
    """Load and validate a measurement file; problems raise ``SpecError`` naming the file."""
    p = Path(path)
    if not os.path.lexists(p):
        raise SpecError(f"{p}: no such measurement file")
    data, _ = read_json(p, "measurement file", MAX_DATA_BYTES, SpecError)  # a regular UTF-8 file, capped, not too deep
    if not isinstance(data, dict):
        raise SpecError(f"{p}: a measurement file must hold a JSON object, got a {type(data).__name__}")
    try:
        return MeasurementSet.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise SpecError(f"{p}: field '{loc}': {first['msg']}") from None


def is_holdout(case_id: str) -> bool:
    """A fixed third of the cases, chosen by hash of the id, never used in fitting."""
    return hashlib.sha256(case_id.encode()).digest()[0] % 3 == 0


def group_of(case: MeasuredCase) -> str:
    """Reporting group: the family, split by layout for conv2d and by impl for attention."""
    if case.family == "conv2d":
        return f"conv2d/{case.params.get('layout', 'nhwc')}"
    if case.family == "attention":
        return f"attention/{case.params.get('impl', 'flash')}"
    return case.family


#: families whose cases ran SDPA with no backend forced: modelled with impl="sdpa" (their rows carry the sampler's
#: case template's impl="flash", which stays so that their ids, and so their sets, stay as measured)
SDPA_FAMILIES = frozenset({"sdpa"})


def workload_of(case: MeasuredCase) -> Workload:
    """The solkit workload that models a case: its registered operator called with its params."""
    op = REGISTRY.get(case.op)
    if op is None:
        raise SpecError(f"case {case.id}: op {case.op!r} is not a registered operator ({', '.join(REGISTRY)})")
    if case.family in SDPA_FAMILIES:
        return op.function(**{**case.params, "impl": "sdpa"})
    return op.function(**case.params)


def sample_set_of(mset: MeasurementSet) -> Optional[str]:
    """The sampled set a file holds ("fit", "validation" or "test"), or None for the hand-picked catalogue."""
    args = mset.meta.get("args") or {}
    return args.get("sample") or None


def fit_cases(mset: MeasurementSet) -> tuple[list[MeasuredCase], list[MeasuredCase]]:
    """(training, held out) cases: measured, primary (one implementation per shape).

    A sampled fit set trains on every case; a sampled validation or test set is all held out; the
    hand-picked catalogue is split by ``is_holdout``.
    """
    cases = [c for c in mset.cases if c.ok and c.seconds and c.primary]
    role = sample_set_of(mset)
    if role == "fit":
        return cases, []
    if role is not None:
        return [], cases
    return [c for c in cases if not is_holdout(c.id)], [c for c in cases if is_holdout(c.id)]
