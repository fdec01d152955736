"""The records of a spec file: strict, frozen pydantic models of its sections (chip, memory, links, peaks, sources,
``measured:``), and the model base whose every constructor raises ``SpecError`` naming the field.

Files use human units (TFLOP/s, TB/s, GB, MB, us); ``schema.GPU`` assembles the records and converts to SI units.
The ``measured:`` section holds the predictor's parameters. Each has one name (``PARAMETERS``): the file spells it
with its unit as a suffix (``launch_floor_us``), Python without it, in SI units (``Calibration.launch_floor``,
seconds), converted once, at load.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Annotated, Any, Literal, Mapping, TypeVar, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, ValidationError

from ..errors import ArgumentTypeError, SpecError
from .parameters import PARAMETERS, UNIT_FACTORS, Calibration, ReadOnlyTable

__all__ = ["SpecModel", "Source", "Chip", "Memory", "Interconnect", "Peak", "Measured", "RETIRED", "describe_validation",
           "TensorCore", "SMLimits", "TuneFit",
           "Figure", "Count", "NonNegativeFigure", "Flag", "RateClass", "Unit", "GIGA", "MIB"]

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
    name: ("retired in solkit 0.3 (the fit had kept it at 1 since the 'misaligned' GEMM variant's efficiencies and the "
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


class TensorCore(SpecModel):
    """The matrix instruction a compiler issues for 16-bit operands, and its shape (``m x n x k``, per instruction)."""

    instruction: Literal["wgmma", "mma.sync", "mfma"]
    m: Count  # rows of one instruction (wgmma: 64 per warpgroup; mma.sync m16n8k16: 16)
    n: Count  # columns (wgmma: the largest n, 256; mma.sync: 8)
    k: Count  # depth for 16-bit operands (16)
    warps: Count  # warps that issue one instruction together (wgmma: a warpgroup of 4; mma.sync: 1)
    fallback: Union[Literal["mma.sync"], None] = None  # the instruction used where this one's shape does not fit


class SMLimits(SpecModel):
    """What one multiprocessor (and one thread block on it) may use: the launch and occupancy limits.

    Units as the sources print them: shared memory in KB (1 KB = 1024 B), registers as 32-bit registers.
    """

    compute_capability: Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+$")]
    shared_memory_per_sm_kb: Figure
    shared_memory_per_block_kb: Figure  # the most one block may opt in to (dynamic shared memory)
    reserved_shared_memory_per_block_kb: NonNegativeFigure = 0.0  # what the system takes per resident block
    registers_per_sm: Count
    registers_per_block: Count
    registers_per_thread: Count
    register_allocation_unit: Count  # registers per warp are allocated in units of this many
    threads_per_sm: Count
    threads_per_block: Count
    blocks_per_sm: Count
    warps_per_sm: Count
    sfu_per_sm_per_clock: Count  # exp2, rsqrt and the like: results per clock per SM
    fp32_per_sm_per_clock: Count  # fp32 add/multiply/fma results per clock per SM
    tensor_core: TensorCore
    source: str
    note: Union[str, None] = None


class TuneFit(SpecModel):
    """``measured.tune``: ``solkit.tune``'s fitted parameters (tile-level models of Triton kernels) and where they come
    from: the date, the method, the data files and the software stack they were measured with."""

    date: _dt.date
    method: str
    stack: TextTable
    data: str
    wgmma_efficiency: Annotated[float, Strict(), Field(gt=0, le=1)]  # share of the SM's tensor peak wgmma issue reaches
    mma_sync_efficiency: Annotated[float, Strict(), Field(gt=0, le=1)]  # the same for mma.sync
    l2_bandwidth_tb_s: Figure  # what all SMs together load from L2
    load_latency_us: Figure  # one k-step's global-to-shared load, issue to use
    kstep_us: NonNegativeFigure  # a k-loop step's fixed cost (address arithmetic, barriers), GEMM and attention
    program_us: NonNegativeFigure  # a program's fixed cost: prologue, epilogue's latency, scheduling
    row_latency_us: Figure  # one dependent chunk of a row kernel: load issue to use
    softmax_cycles: Figure  # SM cycles per score element of flash attention's online softmax, beyond the MMAs
    thread_cycles: Figure  # a row kernel's cycles per element one thread holds (its dependent work), per chunk
    row_cycles: Figure  # SM cycles per element of a row kernel's block, per pass (masked lanes too)
    scalar_loads_per_clock: Figure  # elements one SM loads per clock one by one (an operand not known 16-aligned)
    fit: str


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
    host_captured_launch_us: NonNegativeFigure = 0.0
    host_captured_launch_training_us: NonNegativeFigure = 0.0
    host_captured_call_us: NonNegativeFigure = 0.0
    host_captured_module_us: NonNegativeFigure = 0.0
    host_captured_program_us: NonNegativeFigure = 0.0
    op_host_weight: FigureTable = Field(default_factory=dict)
    host_fsdp_group_us: NonNegativeFigure = 0.0
    host_probe_us: NonNegativeFigure = 0.0
    link_latency_us: LatencyTable = Field(default_factory=dict)
    link_efficiency: FigureTable = Field(default_factory=dict)
    link_misaligned: FigureTable = Field(default_factory=dict)
    link_hop_us: NonNegativeFigure = 0.0
    network_hop_us: NonNegativeFigure = 0.0
    neighbours: Union[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*\.json$")], None] = None
    fit: Union[str, None] = None
    tune: Union[TuneFit, None] = None  # solkit.tune's tile models (their own date, method and stack)

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
