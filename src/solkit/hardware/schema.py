"""The spec schema: strict, frozen pydantic models of ``hardware_specs/*.yaml``.

Files use human units (TFLOP/s, TB/s, GB, MB, us); the accessors return SI units (FLOP/s,
bytes/s, bytes, seconds). Peaks are dense unless ``sparse=True`` is asked for.

Unit rules (see ``hardware_specs/README.md``):

- ``unit="matrix"`` is the tensor-core (matrix-core) rate. A precision with no matrix entry
  but a vector entry falls back to the vector rate, because such matmuls run on CUDA cores:
  plain fp32 matmul (no tf32) runs at the fp32 vector rate; fp64 matmul on a part without
  FP64 tensor cores runs at the fp64 vector rate.
- ``unit="vector"`` is the CUDA-core (SIMD) rate; it has no fallback.

The ``measured:`` section holds the predictor's parameters. Each has one name (``PARAMETERS``):
the file spells it with its unit as a suffix (``launch_floor_us``), Python without it, in SI
units (``Calibration.launch_floor``, seconds), converted once, at load.

Every way of building a model (``GPU(...)``, ``GPU.model_validate``, ``..._json``, ``..._strings``)
raises ``SpecError`` (a ValueError) naming the field, never pydantic's ValidationError; a ``GPU``
is then checked across fields (``consistency.spec_issues``: plausible ranges, measured ceilings
against the datasheet, per-clock rates). NB: ``model_copy(update=...)`` and ``model_construct``
skip validation, as in pydantic; they are not a way to build a spec.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal, Union

from pydantic import BaseModel, Field, PrivateAttr

from .._validate import choice, flag
from ..errors import SpecConsistencyWarning, SpecError, UnknownSourceError, UnsupportedPrecisionError
from ..precision import RATE_CLASSES, normalize, rate_class
from .consistency import spec_issues
from .parameters import PARAMETERS, TERA, UNIT_FACTORS, Calibration, Parameter
from .records import (GIGA, MIB, Chip, Flag, Interconnect, Measured, Memory, Peak, SMLimits, Source, SpecModel,
                      TensorCore, TuneFit, describe_validation)

__all__ = [
    "GPU", "Peak", "Memory", "Chip", "Interconnect", "Source", "Measured", "Calibration", "Parameter", "PARAMETERS",
    "UNIT_FACTORS", "describe_validation", "SpecModel", "GIGA", "MIB", "SMLimits", "TensorCore", "TuneFit",
]


# ---- the GPU ---------------------------------------------------------------------------------


class GPU(SpecModel):
    """One GPU SKU. Figures in the file's human units; accessors return SI units."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]*$")
    full_name: str
    vendor: Literal["nvidia", "amd"]
    architecture: str
    aliases: tuple[str, ...] = ()
    structured_sparsity: Flag
    chip: Chip
    memory: Memory
    interconnect: Interconnect
    peaks: tuple[Peak, ...] = Field(min_length=1)
    sources: tuple[Source, ...] = Field(min_length=1)
    sm_limits: Union[SMLimits, None] = None  # per-SM launch and occupancy limits (solkit.tune reads them)
    measured: Union[Measured, None] = None
    notes: Union[str, None] = None

    #: figures derived from the spec, filled as asked and never handed out mutable: peaks by
    #: (precision, unit, sparse), the predictor's calibration (``solkit.prediction.calibration``)
    _memo: dict[Any, Any] = PrivateAttr(default_factory=dict)
    #: the file the spec came from ("" when built in Python)
    _path: str = PrivateAttr(default="")

    def _checked(self, context: Any) -> "GPU":
        """Refuse a spec whose figures are implausible or contradict each other; warn on the odd ones."""
        issues = spec_issues(self)
        if not issues:
            return self
        where = self._where(context) if context else f"GPU {self.name!r}"
        errors = [str(i) for i in issues if i.error]
        if errors:
            raise SpecError(f"{where}: " + "; ".join(errors))
        warnings.warn(f"{where}: " + "; ".join(str(i) for i in issues), SpecConsistencyWarning, stacklevel=4)
        return self

    # ---- SI accessors -------------------------------------------------------------------
    @property
    def memory_bandwidth(self) -> float:
        """Datasheet DRAM bandwidth in bytes/s."""
        return self.memory.bandwidth_tb_s * TERA

    @property
    def memory_capacity(self) -> float:
        """DRAM capacity in bytes (decimal GB, as datasheets print)."""
        return self.memory.capacity_gb * GIGA

    @property
    def l2_cache(self) -> float:
        """L2 cache in bytes; vendors' cache "MB" are MiB (an H200 reports 62,914,560 B for its 60 MB)."""
        return self.chip.l2_cache_mb * MIB

    @property
    def sm_count(self) -> int:
        """Streaming multiprocessors (NVIDIA) or compute units (AMD)."""
        return self.chip.compute_units

    @property
    def precisions(self) -> tuple[str, ...]:
        """Rate classes with a matrix or vector peak on this part."""
        have = {p.precision for p in self.peaks}
        return tuple(r for r in RATE_CLASSES if r in have)

    @property
    def path(self) -> str:
        """The spec file this GPU was loaded from ("" for one built in Python)."""
        return self._path

    def _peak(self, rate: str, unit: str) -> Peak | None:
        for p in self.peaks:
            if p.precision == rate and p.unit == unit:
                return p
        return None

    def peak_record(self, precision: Any = "bf16", unit: str = "matrix") -> Peak:
        """The spec entry that gives ``peak_flops(precision, unit)`` (after the CUDA-core fallback)."""
        unit = choice("unit", unit, ("matrix", "vector"))
        rate = rate_class(precision, "precision")
        found = self._peak(rate, unit)
        if found is None and unit == "matrix":
            found = self._peak(rate, "vector")
        if found is None:
            have = ", ".join(f"{p.precision}/{p.unit}" for p in self.peaks)
            raise UnsupportedPrecisionError(
                f"{self.name} has no {unit} peak for precision {normalize(precision, 'precision')!r} (rate class {rate!r});"
                f" it lists: {have}"
            )
        return found

    def peak_flops(self, precision: Any = "bf16", unit: str = "matrix", sparse: bool = False) -> float:
        """Peak FLOP/s (OP/s for int8) of ``precision`` on ``unit``; dense unless ``sparse=True``.

        The sparse peak is the file's stated ``sparse_tflops``; a peak without one (fp64 tensor
        cores, vector units) has no sparse mode and raises ``UnsupportedPrecisionError``.
        """
        if type(precision) is str and type(unit) is str and type(sparse) is bool:  # 1 == True: only exact types hit
            memo = self.__pydantic_private__["_memo"]  # type: ignore[index]  # direct: pydantic's __getattr__ is slow
            key = ("peak", precision, unit, sparse)
            value = memo.get(key)
            if value is None:
                value = memo[key] = self._peak_flops(precision, unit, sparse)
            return value  # type: ignore[no-any-return]
        return self._peak_flops(precision, unit, sparse)

    def __copy__(self) -> "GPU":
        """pydantic's shallow copy (``copy.copy``, ``model_copy``) with a memo of its own: a copy's derived figures are
        never its original's (``model_copy(update=...)`` changes what they derive from)."""
        copied = super().__copy__()
        copied.__pydantic_private__["_memo"] = {}  # type: ignore[index]
        return copied

    def __eq__(self, other: object) -> bool:
        """Equal fields and file (pydantic's, but not the memo: what a spec derives is not what it is)."""
        if not isinstance(other, GPU):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__ and self._path == other._path

    __hash__ = BaseModel.__hash__  # frozen: pydantic's (defining __eq__ would otherwise drop it)

    @property
    def memo(self) -> dict[Any, Any]:
        """Figures derived from this spec by solkit's layers (peaks, the predictor's calibration); internal."""
        return self.__pydantic_private__["_memo"]  # type: ignore[index,no-any-return]

    def _peak_flops(self, precision: Any, unit: str, sparse: bool) -> float:
        record = self.peak_record(precision, unit)
        if not flag("sparse", sparse):
            return record.tflops * TERA
        if record.sparse_tflops is not None and record.unit == unit:
            return record.sparse_tflops * TERA
        raise UnsupportedPrecisionError(
            f"{self.name} states no 2:4 sparse {unit} rate for {normalize(precision, 'precision')!r}"
            " (sparse peaks are taken only from a stated sparse_tflops, never derived)"
        )

    def ridge_point(self, precision: Any = "bf16", unit: str = "matrix") -> float:
        """Arithmetic intensity (FLOP/byte) where the compute and memory roofs meet."""
        return self.peak_flops(precision, unit) / self.memory_bandwidth

    def source(self, source_id: str) -> Source:
        """The source record with this id."""
        for s in self.sources:
            if s.id == source_id:
                return s
        raise UnknownSourceError(f"{self.name} has no source {source_id!r}; it lists: {', '.join(s.id for s in self.sources)}")

    def __str__(self) -> str:
        return (
            f"{self.full_name} ({self.name}): {self.sm_count} {self.chip.compute_unit_name}s, "
            f"{self.memory.capacity_gb:g} GB {self.memory.type} at {self.memory.bandwidth_tb_s:g} TB/s"
        )

    def __repr__(self) -> str:
        bf16 = self._peak("bf16", "matrix")
        peak = f", bf16 {bf16.tflops:g} TFLOP/s dense" if bf16 else ""
        measured = f", measured {self.measured.date}" if self.measured else ""
        return (f"GPU({self.name!r}: {self.full_name}, {self.sm_count} {self.chip.compute_unit_name}s, "
                f"{self.memory.bandwidth_tb_s:g} TB/s{peak}{measured})")

    def _repr_html_(self) -> str:
        from .._display import html_table

        rows = [(p.precision, p.unit, p.tflops, p.sparse_tflops if p.sparse_tflops is not None else "-",
                 self.source(p.source).title) for p in self.peaks]
        facts = html_table(
            ("figure", "value", "source"),
            [
                ("compute units", f"{self.sm_count} {self.chip.compute_unit_name}s at {self.chip.boost_clock_mhz:g} MHz",
                 self.source(self.chip.source).title),
                ("memory", f"{self.memory.capacity_gb:g} GB {self.memory.type}, {self.memory.bandwidth_tb_s:g} TB/s",
                 self.source(self.memory.source).title),
                ("L2", f"{self.chip.l2_cache_mb:g} MB", self.source(self.chip.source).title),
                ("interconnect", f"{self.interconnect.name}, {self.interconnect.bandwidth_gb_s or '-'} GB/s",
                 self.source(self.interconnect.source).title),
            ],
            f"{self.full_name} ({self.name})",
        )
        peaks = html_table(("precision", "unit", "dense TFLOP/s", "sparse TFLOP/s", "source"), rows, "peaks")
        return facts + peaks

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per stated peak: the GPU, precision, unit, dense and sparse rate (FLOP/s; NaN
        where no sparse rate is stated), the ridge point (FLOP/byte, dense, on the datasheet bandwidth), the source."""
        from .._optional import require_pandas

        pd = require_pandas()
        return pd.DataFrame({
            "gpu": [self.name] * len(self.peaks),
            "precision": [p.precision for p in self.peaks],
            "unit": [p.unit for p in self.peaks],
            "peak_flops": [p.tflops * TERA for p in self.peaks],
            "sparse_peak_flops": [float("nan") if p.sparse_tflops is None else p.sparse_tflops * TERA for p in self.peaks],
            "ridge_flop_per_byte": [p.tflops * TERA / self.memory_bandwidth for p in self.peaks],
            "source": [self.source(p.source).title for p in self.peaks],
        })
