"""The neighbour bank (``prediction.neighbours`` corrects with it): each measured case's miss under the fitted physical model,
on its main kernel.

``bank_rows`` evaluates every measured primary case of the bank files with the physical model (the
fitted ``measured:`` section, no correction), puts the case's whole miss on its main kernel (the
longest modelled body) and files it under that kernel's key with its quantized features.
``holdout_by_set`` scores the correction honestly: each file's cases against a bank of the others; ``switched_off``
turns it off, per calibration key, where it did worse than the physical model on the validation draws so scored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..hardware.parameters import Calibration
from ..prediction import kernel_seconds, kernel_terms
from ..prediction.bank import calibration_key
from ..prediction.kernel import combined
from ..prediction.neighbours import STEP, Neighbours, bank_key, features, residual, variant_key
from ..sol import roofline
from .data import MeasurementSet, fit_cases, group_of, sample_set_of, workload_of
from .fitting import floor_shift
from .manifest import manifest
from .metrics import log_error

__all__ = ["BANK_DATA", "bank_files", "BankRow", "bank_rows", "bank_document", "bank_of", "holdout_by_set", "bank_file",
           "predicted", "write_bank", "switched_off", "validation_files", "MIN_SWITCH_CASES"]
#: a calibration key's correction is judged on the validation draws only where they hold at least this many of its cases
MIN_SWITCH_CASES = 10
# ``bank_files()`` by its old name, read from the manifest on use (``__getattr__``: importing this module reads no data)
BANK_DATA: tuple[str, ...]


def bank_files() -> tuple[str, ...]:
    """The measured sets in the bank (``data/NAME``), in the order it is built (``data/manifest.yaml``'s ``bank: true``):
    every sampled set measured so far (fit, validation, the spent test draws), SDPA as users call it, casts, the conv/bmm
    fit draw and the catalogue's training two thirds (its held-out third stays out, so the validation report's held-out
    rows stay unseen). Never a frozen test draw (the manifest refuses one with ``bank: true``)."""
    return tuple(f"data/{name}" for name in manifest().files(bank=True))


def __getattr__(name: str) -> tuple[str, ...]:
    """``BANK_DATA``, read from the manifest when asked for."""
    if name == "BANK_DATA":
        return bank_files()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class BankRow:
    """One measured case under the physical model: its main kernel's key, features and residual, and its parts."""

    id: str
    group: str
    key: str
    features: tuple[int, ...]
    residual: float
    main: float  # the main kernel's modelled seconds (body x count)
    rest: float  # the case's other modelled seconds (launch floor, other kernels, gaps)
    measured: float  # seconds, shifted to the spec's launch floor
    workload: Any = field(default=None, compare=False, repr=False)  # the case's workload (for holdout_by_set)


def bank_rows(mset: MeasurementSet, gpu: Any, cal: Calibration, holdout: bool = False) -> list[BankRow]:
    """The bank rows of a file's measured primary cases (a catalogue's training two thirds; ``holdout``: its held-out third)."""
    physical = cal.replace(neighbours=None)
    shift = floor_shift(mset, physical.launch_floor)  # each machine's own launch floor (some files measured none)
    if sample_set_of(mset) is None:
        cases = fit_cases(mset)[1 if holdout else 0]
    else:
        cases = [c for c in mset.cases if c.ok and c.seconds and c.primary]
    rows = []
    for c in cases:
        w = workload_of(c)
        terms, bodies, total = _modelled(w, gpu, physical)
        i = int(np.argmax([float(b) * n for b, (_, n) in zip(bodies, terms)]))
        main = float(bodies[i]) * terms[i][1]
        if not main > 0:
            continue
        kernel, t = w.counted[i][0], terms[i][0]
        tag, layout, feats = features(kernel)
        key = variant_key(bank_key(t.op, kernel.kind, kernel.precision, layout, tag), [n for n, m in t.variants if m])
        measured = float(c.seconds or 0.0) - shift  # fit-usable cases are measured
        rows.append(BankRow(c.id, group_of(c), key, tuple(int(round(f * STEP)) for f in feats),
                            residual(measured, main, total - main), main, total - main, measured, w))
    return rows


def _modelled(w: Any, gpu: Any, cal: Calibration) -> tuple[list[Any], list[Any], float]:
    """(terms with counts, bodies, seconds) of a workload as ``predict`` sums one: floored at T_SOL."""
    terms = [(kernel_terms(k, gpu, cal), n) for k, n in w.counted]
    bodies = [kernel_seconds(t, cal)[0] for t, _ in terms]
    return terms, bodies, max(float(combined(terms, bodies, cal)), float(roofline(w, gpu).t_sol))


def _keyed(rows: Sequence[BankRow]) -> list[tuple[str, list[BankRow]]]:
    """The rows grouped by key, keys sorted."""
    keyed: dict[str, list[BankRow]] = {}
    for r in rows:
        keyed.setdefault(r.key, []).append(r)
    return sorted(keyed.items())


def bank_of(rows: Sequence[BankRow], source: str = "") -> Neighbours:
    """A loaded bank of ``rows`` (residuals rounded as the file keeps them)."""
    return Neighbours(source, {k: (np.array([r.features for r in v], dtype=np.int64),
                                   np.array([round(r.residual, 4) for r in v])) for k, v in _keyed(rows)})


def validation_files() -> tuple[str, ...]:
    """The banked validation draws (``data/NAME``): what ``switched_off`` judges the correction on."""
    return tuple(f"data/{name}" for name in manifest().files(bank=True, role="validation"))


def switched_off(named: Sequence[tuple[str, list[BankRow]]], validation: Sequence[str], gpu: Any, cal: Calibration
                 ) -> list[str]:
    """The calibration keys whose correction did worse than the physical model on the ``validation`` sets of ``named``
    (matched by file name, whatever folder either names).

    Each validation set's cases are predicted with a bank of every other set (``holdout_by_set``'s rule) and filed
    under their main kernel's calibration key; a key with at least MIN_SWITCH_CASES such cases whose mean
    |log(predicted / measured)| corrected exceeds the physical model's is switched off.
    """
    physical = cal.replace(neighbours=None)
    before: dict[str, list[float]] = {}
    after: dict[str, list[float]] = {}
    judged = {Path(v).name for v in validation}  # by file name: "data/x.json", "./data/x.json" and a full path alike
    for i, (name, rows) in enumerate(named):
        if Path(name).name not in judged:
            continue
        held = physical.replace(neighbours=bank_of([r for j, (_, other) in enumerate(named) if j != i for r in other]))
        for r in rows:
            key = calibration_key(r.key)
            before.setdefault(key, []).append(float(log_error(r.rest + r.main, r.measured)))
            after.setdefault(key, []).append(float(log_error(predicted(r, gpu, held), r.measured)))
    return sorted(k for k in before if len(before[k]) >= MIN_SWITCH_CASES and np.mean(after[k]) > np.mean(before[k]))


def bank_document(rows: Sequence[BankRow], gpu: str, files: Sequence[str], off: Sequence[str] = ()) -> dict[str, Any]:
    """The bank file's contents (``prediction.bank.load_neighbours`` reads it); ``off``: ``switched_off``'s keys."""
    source = (f"python -m solkit.calibration fit --write: {len(rows)} measured cases on {gpu} ({', '.join(files)}), "
              f"each case's log(measured / modelled) on its main kernel under this spec's measured: section")
    return {"gpu": gpu, "source": source, "cases": len(rows), "off": sorted(off),
            "keys": {k: {"features": [list(r.features) for r in v], "residuals": [round(r.residual, 4) for r in v]}
                     for k, v in _keyed(rows)}}


def write_bank(path: Any, document: dict[str, Any]) -> None:
    """Write a bank file: one line per key's features, so that a diff shows what changed."""
    lines = ["{", f'  "gpu": {json.dumps(document["gpu"])},', f'  "source": {json.dumps(document["source"])},',
             f'  "cases": {document["cases"]},', f'  "off": {json.dumps(document.get("off", []))},', '  "keys": {']
    items = list(document["keys"].items())
    for i, (key, entry) in enumerate(items):
        lines.append(f"    {json.dumps(key)}: {{")
        lines.append(f'      "features": {json.dumps(entry["features"], separators=(",", ":"))},')
        lines.append(f'      "residuals": {json.dumps(entry["residuals"], separators=(",", ":"))}')
        lines.append("    }" + ("," if i < len(items) - 1 else ""))
    lines += ["  }", "}", ""]
    Path(path).write_text("\n".join(lines), encoding="utf-8")


def predicted(row: BankRow, gpu: Any, cal: Calibration) -> float:
    """A bank row's case as ``predict`` gives it under ``cal`` (its bank, if any): every kernel, floored at T_SOL."""
    return _modelled(row.workload, gpu, cal)[2]


def holdout_by_set(named: Sequence[tuple[str, list[BankRow]]], gpu: Any, cal: Calibration
                   ) -> list[tuple[str, int, float, float, float, float]]:
    """Per set: (name, cases, median and p90 error of the physical model, the same corrected by a bank of every other set).

    Each case is predicted as ``predict`` does (every kernel corrected, the bound as a floor) under ``cal``'s
    physical parameters and a bank that holds none of its set's cases.
    """
    physical = cal.replace(neighbours=None)
    out = []
    for i, (name, rows) in enumerate(named):
        held = physical.replace(neighbours=bank_of([r for j, (_, other) in enumerate(named) if j != i for r in other]))
        measured = [r.measured for r in rows]
        before = log_error([r.rest + r.main for r in rows], measured)
        after = log_error([predicted(r, gpu, held) for r in rows], measured)
        a, b, c, d = (float(np.expm1(np.percentile(e, q))) for e in (before, after) for q in (50, 90))
        out.append((name, len(rows), a, b, c, d))
    return out


def bank_file(gpu: str) -> str:
    """The name of a GPU's bank file, written beside its spec: ``{gpu}.neighbours.json``."""
    return f"{gpu}.neighbours.json"
