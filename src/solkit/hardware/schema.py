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

import datetime as _dt
import warnings
from typing import TYPE_CHECKING, Annotated, Any, Literal, Mapping, TypeVar, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, Strict, ValidationError

from .._validate import choice, flag
from ..errors import ArgumentTypeError, SpecConsistencyWarning, SpecError, UnknownSourceError, UnsupportedPrecisionError
from .consistency import spec_issues
from ..precision import RATE_CLASSES, normalize, rate_class
from .parameters import PARAMETERS, TERA, UNIT_FACTORS, Calibration, Parameter, ReadOnlyTable

__all__ = [
    "GPU", "Peak", "Memory", "Chip", "Interconnect", "Source", "Measured", "Calibration", "Parameter", "PARAMETERS",
    "UNIT_FACTORS", "describe_validation",
]

GIGA = 1e9
MIB = 2**20

_FROZEN = ConfigDict(frozen=True, extra="forbid")

#: a figure in human units: a real number (not a bool or a string), finite, positive and below 1e9
Figure = Annotated[float, Strict(), Field(gt=0, lt=1e9, allow_inf_nan=False)]
Count = Annotated[int, Strict(), Field(gt=0, le=1_000_000)]
NonNegativeFigure = Annotated[float, Strict(), Field(ge=0, lt=1e9, allow_inf_nan=False)]
Flag = Annotated[bool, Strict()]

RateClass = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"]
Unit = Literal["matrix", "vector"]


def _read_only(mapping: Mapping[Any, Any]) -> Mapping[Any, Any]:
    return ReadOnlyTable(mapping)


#: a table read from a file, handed out read-only (a caller cannot change the cached spec)
FigureTable = Annotated[Mapping[str, Figure], AfterValidator(_read_only)]
LatencyTable = Annotated[Mapping[str, NonNegativeFigure], AfterValidator(_read_only)]
RateTable = Annotated[Mapping[RateClass, Figure], AfterValidator(_read_only)]
TextTable = Annotated[Mapping[str, str], AfterValidator(_read_only)]


# ---- building a model: SpecError, never pydantic's ValidationError -----------------------------


#: keys a spec may no longer hold, and why (the message a file that still sets one gets)
RETIRED: Mapping[str, str] = {
    name: ("retired in solkit 0.4 (the fit had kept it at 1 since the 'misaligned' GEMM variant's efficiencies and the "
           "conv's per-tap channel padding model these slowdowns): delete the line")
    for name in ("misaligned_gemm_penalty", "small_channel_penalty")
}


def describe_validation(where: str, err: ValidationError) -> str:
    """``where: field 'a.b': problem (got value); ...``: one line per problem pydantic found."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        got = e.get("input")
        shown = "" if isinstance(got, (dict, list, tuple)) or e["type"] == "missing" else f" (got {got!r})"
        retired = RETIRED.get(str(e["loc"][-1])) if e["type"] == "extra_forbidden" and e["loc"] else None
        lines.append(f"field '{loc}': {retired or e['msg']}{shown}")
    return f"{where}: " + "; ".join(lines)


_M = TypeVar("_M", bound="SpecModel")


if TYPE_CHECKING:  # pragma: no cover
    from pydantic._internal._model_construction import ModelMetaclass as _PydanticMeta
else:
    _PydanticMeta = type(BaseModel)  # pydantic's metaclass, reached at run time without its private module


class _SpecMeta(_PydanticMeta):
    """Calling a spec model (``GPU(...)``) raises ``SpecError`` instead of pydantic's ValidationError."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if args:
            raise ArgumentTypeError(f"{cls.__name__}(...) takes its fields as keywords (name=..., chip=...), "
                                    f"got {len(args)} positional argument(s); a file loads with solkit.load_gpu(path)")
        try:
            model = super().__call__(*args, **kwargs)
        except ValidationError as exc:
            raise SpecError(describe_validation(cls.__name__, exc)) from None
        return model._checked(None)


class SpecModel(BaseModel, metaclass=_SpecMeta):
    """A frozen, strict model of file data whose every constructor raises ``SpecError`` naming the field.

    ``model_validate`` takes ``context={"spec_file": path}``: the messages then start with the file.
    """

    model_config = _FROZEN

    @classmethod
    def _where(cls, context: Any) -> str:
        path = context.get("spec_file") if isinstance(context, dict) else None
        return str(path) if path else cls.__name__

    @classmethod
    def model_validate(cls: type[_M], obj: Any, **kwargs: Any) -> _M:
        """Validate ``obj`` (a mapping); a problem is a ``SpecError`` naming the field."""
        try:
            model = super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise SpecError(describe_validation(cls._where(kwargs.get("context")), exc)) from None
        return model._checked(kwargs.get("context"))

    @classmethod
    def model_validate_json(cls: type[_M], json_data: Any, **kwargs: Any) -> _M:
        """Validate JSON text; a problem is a ``SpecError`` naming the field."""
        try:
            model = super().model_validate_json(json_data, **kwargs)
        except ValidationError as exc:
            raise SpecError(describe_validation(cls._where(kwargs.get("context")), exc)) from None
        return model._checked(kwargs.get("context"))

    @classmethod
    def model_validate_strings(cls: type[_M], obj: Any, **kwargs: Any) -> _M:
        """Validate a mapping of strings; a problem is a ``SpecError`` naming the field."""
        try:
            model = super().model_validate_strings(obj, **kwargs)
        except ValidationError as exc:
            raise SpecError(describe_validation(cls._where(kwargs.get("context")), exc)) from None
        return model._checked(kwargs.get("context"))

    def _checked(self: _M, context: Any) -> _M:
        """Checks across fields after validation (none but the GPU's)."""
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):  # private attributes: the loader records the file
            super().__setattr__(name, value)
            return
        raise SpecError(f"{type(self).__name__}.{name} is read-only: specs are shared by every load_gpu(); "
                        "build another with model_copy(update=...) or from a changed file")

    def __delattr__(self, name: str) -> None:
        raise SpecError(f"{type(self).__name__}.{name} is read-only: specs are shared by every load_gpu()")


class Source(SpecModel):
    """A document a figure comes from."""

    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    url: str = Field(pattern=r"^https?://")
    preliminary: Flag = False


class Chip(SpecModel):
    """Compute units, clock, L2 and power."""

    compute_units: Count
    compute_unit_name: Literal["SM", "CU"]
    boost_clock_mhz: Figure
    l2_cache_mb: Figure
    tdp_w: Figure
    source: str


class Memory(SpecModel):
    """Device memory: type, capacity and datasheet bandwidth."""

    type: str
    capacity_gb: Figure
    bandwidth_tb_s: Figure
    source: str


class Interconnect(SpecModel):
    """GPU-to-GPU link and host link (bidirectional totals per GPU)."""

    name: str
    bandwidth_gb_s: Union[Figure, None]
    pcie: str
    pcie_bandwidth_gb_s: Figure
    source: str


class Peak(SpecModel):
    """One datasheet peak: precision, unit, dense TFLOP/s (TOPS for int8), optional stated sparse figure."""

    precision: RateClass
    unit: Unit
    tflops: Figure
    sparse_tflops: Union[Figure, None] = None
    source: str
    note: Union[str, None] = None


class Measured(SpecModel):
    """The ``measured:`` section: ceilings measured on a real part and the predictor's fitted parameters.

    Its keys are ``PARAMETERS``' file keys plus where they come from: ``date``, ``method``,
    ``stack`` (the software) and ``fit`` (what the fit used), and ``neighbours``: the file name, beside the
    spec, of the bank of measured kernels the predictor's neighbour correction reads (``prediction.bank``).
    The loader checks ranges only; the
    calibration keys of the per-key tables come from the operator registry and are checked
    where they are used (``solkit.prediction.calibration``).
    """

    date: _dt.date
    method: str
    stack: TextTable
    matmul_rate_tflops: RateTable
    copy_bandwidth_tb_s: Figure
    read_bandwidth_tb_s: Union[Figure, None] = None
    launch_floor_us: Figure
    kernel_gap_us: NonNegativeFigure = 0.0
    kernel_latency_us: LatencyTable = Field(default_factory=dict)
    compute_efficiency: FigureTable = Field(default_factory=dict)
    memory_efficiency: FigureTable = Field(default_factory=dict)
    wave_latency_us: LatencyTable = Field(default_factory=dict)
    kstep_latency_us: LatencyTable = Field(default_factory=dict)
    block_bandwidth_gb_s: FigureTable = Field(default_factory=dict)
    overlap_exponent: Union[Figure, Literal["inf"]] = "inf"
    host_launch_us: NonNegativeFigure = 0.0
    host_launch_training_us: NonNegativeFigure = 0.0
    host_layer_us: NonNegativeFigure = 0.0
    host_program_us: NonNegativeFigure = 0.0
    host_fsdp_group_us: NonNegativeFigure = 0.0
    host_probe_us: NonNegativeFigure = 0.0
    link_latency_us: LatencyTable = Field(default_factory=dict)
    link_efficiency: FigureTable = Field(default_factory=dict)
    link_misaligned: FigureTable = Field(default_factory=dict)
    link_hop_us: NonNegativeFigure = 0.0
    network_hop_us: NonNegativeFigure = 0.0
    neighbours: Union[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*\.json$")], None] = None
    fit: Union[str, None] = None

    def calibration(self, gpu: str) -> "Calibration":
        """The parameters in SI units, converted once."""
        values: dict[str, Any] = {}
        for p in PARAMETERS:
            raw = getattr(self, p.file_key)
            factor = UNIT_FACTORS[p.unit]
            if p.keyed:
                values[p.name] = ReadOnlyTable({k: v * factor for k, v in raw.items()})
            elif raw is None or raw == "inf":
                values[p.name] = float("inf") if raw == "inf" else None
            else:
                values[p.name] = raw * factor
        return Calibration(gpu=gpu, calibrated=True, source=f"measured on {gpu} {self.date}: {self.method}", **values)


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
