"""Checks of a spec across fields: references, plausible ranges, measured ceilings against the datasheet, per-clock rates.

Every check yields an ``Issue`` naming a field by its dotted path (``peaks.4.tflops``,
``measured.copy_bandwidth_tb_s``); an error refuses the spec (``SpecError``), a warning
(``SpecConsistencyWarning``) lets it load. ``hardware_specs/README.md`` lists which is which.
No pydantic here: the checks read a validated spec's records (``SpecView``, which ``schema.GPU`` is).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple, Protocol, Union

from .parameters import PARAMETERS, TERA
from .plausibility import CEILING_SHARE, RANGES, SPARSE_RATIO, Range, out_of_range, peak_range, shown
from .._validate import checked_call

#: measured ceilings checked against the datasheet bandwidth: every bandwidth parameter (file unit TB/s)
BANDWIDTH_CEILINGS: tuple[str, ...] = tuple(p.file_key for p in PARAMETERS if p.unit == "tb_s")

if TYPE_CHECKING:  # pragma: no cover
    from .records import Chip, Interconnect, Measured, Memory, Peak, SMLimits, Source

__all__ = ["SpecView", "Issue", "spec_issues", "consistency_issues", "MATRIX_BF16_FLOP_PER_CLOCK", "MATRIX_RATIO_TO_BF16",
           "PER_CLOCK_TOLERANCE", "RATIO_TOLERANCE"]


#: dense bf16 matrix FLOP per clock per SM/CU by architecture (a multiply-add is 2):
#: A100 whitepaper 1024 FMA/clk/SM; H100 whitepaper 2048; Ada (L40S) 512; CDNA 3 1024 per CU;
#: Blackwell (B200) 4096, as its 2.25 PFLOP/s over 148 SMs at ~1.9 GHz implies
MATRIX_BF16_FLOP_PER_CLOCK: dict[str, int] = {"ampere": 2048, "ada": 1024, "hopper": 4096, "blackwell": 8192, "cdna3": 2048}

#: dense matrix peak of a rate class relative to bf16, where the architecture has it
MATRIX_RATIO_TO_BF16: dict[str, float] = {"fp16": 1.0, "tf32": 0.5, "fp8": 2.0, "int8": 2.0, "fp4": 4.0}

#: a peak's implied per-clock rate over the architecture's: above the top it is impossible (an error:
#: a sparse figure entered as dense lands at about 2x); below the bottom, odd (a warning: peaks
#: quoted at a lower clock than the max boost, as H100 SXM tensor figures at 1830 MHz of 1980, sit
#: at 0.92; GeForce parts run fp32-accumulate tensor math at half rate, 0.5)
PER_CLOCK_TOLERANCE = (0.7, 1.15)
#: an unknown architecture: a precision's ratio to bf16 may be this far off MATRIX_RATIO_TO_BF16 before a warning
RATIO_TOLERANCE = 0.12

_ALIAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class SpecView(Protocol):
    """What the checks read of a spec: its name, architecture and aliases, and its records (``schema.GPU`` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def architecture(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...
    @property
    def structured_sparsity(self) -> bool: ...
    @property
    def chip(self) -> "Chip": ...
    @property
    def memory(self) -> "Memory": ...
    @property
    def interconnect(self) -> "Interconnect": ...
    @property
    def peaks(self) -> tuple["Peak", ...]: ...
    @property
    def sources(self) -> tuple["Source", ...]: ...
    @property
    def sm_limits(self) -> Union["SMLimits", None]: ...
    @property
    def measured(self) -> Union["Measured", None]: ...


class Issue(NamedTuple):
    """One problem of a spec: the field (dotted path), what is wrong, and whether it refuses the spec."""

    field: str
    message: str
    error: bool = True

    def __str__(self) -> str:
        return f"field '{self.field}': {self.message}"


def spec_issues(gpu: SpecView) -> list[Issue]:
    """Every cross-field problem of a validated spec, errors and warnings, in file order."""
    issues = [*_references(gpu), *_aliases(gpu), *_peaks(gpu), *_ranges(gpu)]
    bad_fields = {i.field for i in issues if i.error}  # checks against a field already wrong would only add noise
    return [*issues, *_ceilings(gpu, bad_fields), *_per_clock(gpu, bad_fields)]


@checked_call
def consistency_issues(gpu: SpecView) -> list[str]:
    """Every problem of a validated spec as text (errors and warnings); ``[]`` for a sound spec."""
    return [str(i) for i in spec_issues(gpu)]


# ---- references and names --------------------------------------------------------------------


def _references(gpu: SpecView) -> Iterator[Issue]:
    ids = [s.id for s in gpu.sources]
    for i, sid in enumerate(ids):
        if sid in ids[:i]:
            yield Issue(f"sources.{i}.id", f"{sid!r} is listed twice (first as sources.{ids.index(sid)})")
    cited = {"chip.source": gpu.chip.source, "memory.source": gpu.memory.source,
             "interconnect.source": gpu.interconnect.source}
    cited.update({f"peaks.{i}.source": p.source for i, p in enumerate(gpu.peaks)})
    if gpu.sm_limits is not None:
        cited["sm_limits.source"] = gpu.sm_limits.source
    for where, sid in cited.items():
        if sid not in ids:
            yield Issue(where, f"{sid!r} is not one of the listed sources {ids}")


def _aliases(gpu: SpecView) -> Iterator[Issue]:
    seen = {gpu.name.lower(): "name"}
    for i, alias in enumerate(gpu.aliases):
        if not _ALIAS.fullmatch(alias) or alias.lower().endswith((".yaml", ".yml")):
            yield Issue(f"aliases.{i}", f"{alias!r} is not a GPU name: letters, digits, '.', '_' and '-', "
                                        "starting with a letter or digit, not ending in .yaml or .yml")
        elif alias.lower() in seen:
            yield Issue(f"aliases.{i}", f"{alias!r} repeats {seen[alias.lower()]} (names match case-insensitively)")
        seen.setdefault(alias.lower(), f"aliases.{i}")


def _peaks(gpu: SpecView) -> Iterator[Issue]:
    seen: dict[tuple[str, str], int] = {}
    low, high = SPARSE_RATIO
    for i, p in enumerate(gpu.peaks):
        key = (p.precision, p.unit)
        if key in seen:
            yield Issue(f"peaks.{i}", f"{p.precision} {p.unit} is listed twice (first as peaks.{seen[key]})")
        seen.setdefault(key, i)
        if p.sparse_tflops is None:
            continue
        if not gpu.structured_sparsity:
            yield Issue(f"peaks.{i}.sparse_tflops", "given, but structured_sparsity is false")
        elif p.sparse_tflops < p.tflops:
            yield Issue(f"peaks.{i}.sparse_tflops", f"sparse_tflops {shown(p.sparse_tflops)} is below the dense tflops "
                                                    f"{shown(p.tflops)}; was a sparse figure entered as dense?")
        elif not low <= p.sparse_tflops / p.tflops <= high:
            yield Issue(f"peaks.{i}.sparse_tflops",
                        f"sparse_tflops {shown(p.sparse_tflops)} is {p.sparse_tflops / p.tflops:.3g} x the dense tflops "
                        f"{shown(p.tflops)}; 2:4 structured sparsity doubles the dense rate (expected {low:g} to "
                        f"{high:g} x: was a sparse figure entered as dense, or half of it?)")


# ---- plausible ranges ------------------------------------------------------------------------


def _figure(field: str, value: Any, r: Range) -> Iterator[Issue]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        problem = out_of_range(value, r)
        if problem is not None:
            yield Issue(field, problem)


def _ranges(gpu: SpecView) -> Iterator[Issue]:
    for field, r in RANGES.items():
        section, _, rest = field.partition(".")
        owner = getattr(gpu, section)
        if owner is None:  # no measured: section
            continue
        key, _, star = rest.partition(".")
        value = getattr(owner, key)
        if star:  # a table: every entry
            for k, v in value.items():
                yield from _figure(f"{section}.{key}.{k}", v, r)
        elif value is not None and value != "inf":
            yield from _figure(field, value, r)
    for i, p in enumerate(gpu.peaks):
        r = peak_range(p.precision, p.unit)
        yield from _figure(f"peaks.{i}.tflops", p.tflops, r)
        if p.sparse_tflops is not None:
            yield from _figure(f"peaks.{i}.sparse_tflops", p.sparse_tflops, Range(2 * r.low, 2 * r.high, r.unit, r.slip))


# ---- measured ceilings against the datasheet -------------------------------------------------


def _ceiling(field: str, value: float, datasheet: float, what: str, unit: str) -> Iterator[Issue]:
    low, high = CEILING_SHARE
    if value > high * datasheet:
        yield Issue(field, f"{shown(value)} {unit} is above the datasheet's {what} {shown(datasheet)} {unit}: "
                           "a measured ceiling cannot exceed the datasheet (a figure 1000x off, or the wrong precision?)")
    elif value < low * datasheet:
        yield Issue(field, f"{shown(value)} {unit} is below {low:g} x the datasheet's {what} {shown(datasheet)} {unit}, "
                           f"the plausible range {shown(low * datasheet)} to {shown(datasheet)} {unit} "
                           "(a figure 1000x off, or a broken measurement?)")


def _ceilings(gpu: SpecView, bad_fields: set[str]) -> Iterator[Issue]:
    m = gpu.measured
    if m is None:
        return
    for p, rate in m.matmul_rate_tflops.items():
        field = f"measured.matmul_rate_tflops.{p}"
        index = _peak_index(gpu, p)
        if index is None:
            yield Issue(field, f"{shown(rate)} TFLOP/s measured, but peaks lists no dense {p} matrix figure to check it against")
            continue
        peak = gpu.peaks[index]
        if f"peaks.{index}.tflops" in bad_fields:
            continue
        yield from _ceiling(field, rate, peak.tflops, f"dense {p} {peak.unit} peak (peaks.{index}.tflops)", "TFLOP/s")
    bandwidth = gpu.memory.bandwidth_tb_s
    for key in BANDWIDTH_CEILINGS:
        value = getattr(m, key)
        if value is not None and "memory.bandwidth_tb_s" not in bad_fields:
            yield from _ceiling(f"measured.{key}", value, bandwidth, "memory bandwidth (memory.bandwidth_tb_s)", "TB/s")


def _peak_index(gpu: SpecView, precision: str) -> Union[int, None]:
    """The peak a matmul of ``precision`` runs at: its matrix entry, else its vector entry (CUDA cores)."""
    for unit in ("matrix", "vector"):
        for i, p in enumerate(gpu.peaks):
            if p.precision == precision and p.unit == unit:
                return i
    return None


# ---- per-clock rates -------------------------------------------------------------------------


def _per_clock(gpu: SpecView, bad_fields: set[str]) -> Iterator[Issue]:
    """Matrix peaks against SMs x boost clock x the architecture's rate (catches a sparse figure entered as dense)."""
    if {"chip.compute_units", "chip.boost_clock_mhz"} & bad_fields:
        return
    per_clock = MATRIX_BF16_FLOP_PER_CLOCK.get(gpu.architecture.lower())
    if per_clock is None:
        yield from _ratios(gpu, bad_fields)
        return
    chip = gpu.chip
    low, high = PER_CLOCK_TOLERANCE
    for i, p in enumerate(gpu.peaks):
        ratio = 1.0 if p.precision == "bf16" else MATRIX_RATIO_TO_BF16.get(p.precision)
        if p.unit != "matrix" or ratio is None or f"peaks.{i}.tflops" in bad_fields:
            continue
        expected = per_clock * ratio
        implied = p.tflops * TERA / (chip.compute_units * chip.boost_clock_mhz * 1e6)
        if low * expected <= implied <= high * expected:
            continue
        what = (f"{p.precision} matrix peak {shown(p.tflops)} TFLOP/s implies {implied:.0f} FLOP/clock/"
                f"{chip.compute_unit_name} at {shown(chip.boost_clock_mhz)} MHz on {chip.compute_units} "
                f"{chip.compute_unit_name}s; {gpu.architecture} does {expected:.0f}")
        if implied > high * expected:
            yield Issue(f"peaks.{i}.tflops", f"{what}, and no part runs faster than its architecture: a sparse figure "
                                             "entered as dense, or a wrong SM count or clock?")
        else:
            yield Issue(f"peaks.{i}.tflops", f"{what}: quoted at a lower clock, a part with half-rate tensor cores "
                                             "(GeForce fp32 accumulate), or a typo?", error=False)


def _ratios(gpu: SpecView, bad_fields: set[str]) -> Iterator[Issue]:
    """An architecture without a per-clock rate: each matrix precision's ratio to bf16 (a warning when off)."""
    bf16 = next((p for p in gpu.peaks if p.precision == "bf16" and p.unit == "matrix"), None)
    if bf16 is None:
        return
    for i, p in enumerate(gpu.peaks):
        ratio = MATRIX_RATIO_TO_BF16.get(p.precision)
        if p.unit != "matrix" or ratio is None or f"peaks.{i}.tflops" in bad_fields:
            continue
        actual = p.tflops / bf16.tflops
        if abs(actual / ratio - 1.0) > RATIO_TOLERANCE:
            yield Issue(f"peaks.{i}.tflops", f"{p.precision} matrix peak {shown(p.tflops)} is {actual:.3g} x bf16 "
                                             f"({shown(bf16.tflops)}); expected {ratio:g} x (a sparse figure entered "
                                             "as dense, or a typo?)", error=False)
