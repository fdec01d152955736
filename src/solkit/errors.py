"""Errors raised by solkit: one base class, each subclass also the fitting builtin."""

from __future__ import annotations

__all__ = [
    "SolkitError",
    "CaptureError",
    "NotModelledError",
    "SpecError",
    "UnknownGPUError",
    "UnknownSourceError",
    "UnknownPrecisionError",
    "UnknownKernelError",
    "MissingFigureError",
    "UnsupportedPrecisionError",
    "ShapeError",
    "ArgumentTypeError",
    "OptionError",
    "MeasurementError",
    "ImpossibleMeasurementError",
    "OptionalDependencyError",
    "PlotDependencyError",
    "CLIError",
    "SolkitWarning",
    "PerformanceWarning",
    "SpecConsistencyWarning",
    "ImpossibleMeasurementWarning",
    "SpecFolderWarning",
]


class SolkitError(Exception):
    """Base class of every error solkit raises on purpose."""


class SpecError(SolkitError, ValueError):
    """A hardware spec file is malformed; the message names the file and the field."""


class UnknownGPUError(SolkitError, LookupError):
    """No spec matches the requested GPU name; the message lists the known names."""


class UnknownSourceError(SolkitError, LookupError):
    """A source id that the GPU spec does not list."""


class UnknownKernelError(SolkitError, LookupError):
    """A tunable kernel name ``solkit.tune`` has no model of; the message lists the known names."""


class MissingFigureError(SolkitError, LookupError):
    """A GPU spec lacks a figure a model needs (``solkit.tune``: its ``sm_limits``); the message names the field."""


class UnknownPrecisionError(SolkitError, ValueError):
    """A dtype/precision name solkit does not know."""


class UnsupportedPrecisionError(SolkitError, LookupError):
    """The GPU has no rate for this precision on this unit (e.g. fp8 on an A100)."""


class ShapeError(SolkitError, ValueError):
    """A shape argument has a bad value: non-positive, non-integer, NaN, inconsistent."""


class ArgumentTypeError(SolkitError, TypeError):
    """An argument has the wrong type (a bool or a string where a number belongs)."""


class OptionError(SolkitError, ValueError):
    """An option is not one of the allowed values (layout, impl, unit, ...)."""


class MeasurementError(SolkitError, ValueError):
    """A measured quantity is unusable: seconds <= 0, NaN, n_gpus < 1."""


class ImpossibleMeasurementError(MeasurementError):
    """``strict=True``: a measured time below T_SOL, or a utilization above 1 (see ``ImpossibleMeasurementWarning``)."""


class OptionalDependencyError(SolkitError, ImportError):
    """An optional extra (matplotlib, pandas, torch) is needed and missing; the message names the install."""


class PlotDependencyError(OptionalDependencyError):
    """matplotlib, needed for charts, is not installed; the message gives the install command."""


class NotModelledError(OptionError):
    """A model the closed form does not describe (a Hugging Face family or key it has no formula for); the message
    names what. ``models.from_hf_config`` answers it by capturing the model's own code."""


class CaptureError(SolkitError, RuntimeError):
    """A captured program needs what fake tensors cannot give (a value read on the host, a data-dependent shape) or
    failed inside torch; the message names the ATen op, the module path and what would get past it."""


class CLIError(SolkitError, ValueError):
    """A command-line mistake (unknown op, missing parameter, bad value)."""


class SolkitWarning(UserWarning):
    """Base class of solkit's warnings."""


class PerformanceWarning(SolkitWarning):
    """A shape that runs slower than its roofline suggests (e.g. a leading dimension not a multiple of 8)."""


class SpecConsistencyWarning(SolkitWarning):
    """A spec's figures disagree with each other (e.g. a sparse peak entered as dense)."""


class ImpossibleMeasurementWarning(SolkitWarning):
    """A measured time below T_SOL ("faster than light"), or an MFU/HFU above 1: a timing or model error.

    Emitted every time such a number is computed (the number is still returned, so a notebook
    keeps working); pass ``strict=True`` to raise ``ImpossibleMeasurementError`` instead. Usual
    causes: timing without ``torch.cuda.synchronize()``, data left in L2 between calls, a
    workload that does less than the kernel measured, or the wrong ``dtype``/``n_gpus``.
    """


class SpecFolderWarning(SolkitWarning):
    """A spec folder holds a file that was skipped (it does not load), that shadows another, or a name two files claim."""
