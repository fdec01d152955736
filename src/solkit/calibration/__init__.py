"""Calibration: the predictor's parameters measured and fitted, and checked against measurements.

- ``solkit.hardware.parameters``: the parameter schema (``PARAMETERS``: one name per parameter,
  its unit in the file, SI in Python; ``Calibration``), re-exported here; it lives with the spec
  schema because a spec file holds it, and the predictor reads it without this package.
- ``manifest``: the data folder (shipped in the package) and ``data/manifest.yaml``, each file's role.
- ``data``: the measurement files, the fit/held-out split, the workload of a case.
- ``metrics``: errors, per-group summaries, measured variant pairs, run-to-run spread.
- ``rounding``: values rounded as the spec file keeps them.
- ``fitting``: the measured ceilings and the coordinate-descent fit of the rest (``descent``: its evaluation).
- ``programs``, ``parallel``, ``collectives``: whole steps' host time, FSDP's, the links'; ``neighbours``: the bank.
- ``writer``: the spec's ``measured:`` section, emitted by PyYAML.
- ``report``: the validation report.

One command reproduces the committed calibration and report from the committed data::

    python -m solkit.calibration fit --write     # refit hardware_specs/h200-sxm.yaml from data/h200_measurements.json
    python -m solkit.calibration report          # rewrite data/h200_validation.md
"""

from __future__ import annotations

from ..hardware.parameters import PARAMETERS, Calibration, Parameter
from .data import (MeasuredCase, MeasurementSet, fit_cases, group_of, is_holdout, load_measurements, sample_set_of,
                   workload_of)
from .fitting import FitResult, ceilings, fit
from .manifest import data_dir, manifest
from .metrics import CaseResult, GroupSummary, evaluate, format_summary, log_error, measured_pairs, run_to_run, summarize
from .report import validation_report
from .rounding import round_calibration
from .writer import measured_section, write_measured

__all__ = [
    "PARAMETERS", "Parameter", "Calibration", "MeasuredCase", "MeasurementSet", "load_measurements", "is_holdout",
    "group_of", "workload_of", "fit_cases", "sample_set_of", "FitResult", "ceilings", "fit", "round_calibration", "CaseResult",
    "GroupSummary", "evaluate", "summarize", "format_summary", "log_error", "measured_pairs", "run_to_run",
    "validation_report", "measured_section", "write_measured", "data_dir", "manifest",
]
