"""GPU specs: strict pydantic models of ``hardware_specs/*.yaml``, ``load_gpu`` and ``list_gpus``.

Files use human units (TFLOP/s, TB/s, GB, MB); the Python API returns SI units (FLOP/s,
bytes/s, bytes). Peaks are dense unless ``sparse=True`` is asked for.

Unit rules (see ``hardware_specs/README.md``):

- ``unit="matrix"`` is the tensor-core (matrix-core) rate. A precision with no matrix entry
  but a vector entry falls back to the vector rate, because such matmuls run on CUDA cores:
  plain fp32 matmul (no tf32) runs at the fp32 vector rate; fp64 matmul on a part without
  FP64 tensor cores runs at the fp64 vector rate.
- ``unit="vector"`` is the CUDA-core (SIMD) rate; it has no fallback.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import warnings
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from .errors import ArgumentTypeError, UnknownSourceError, SpecConsistencyWarning, SpecError, UnknownGPUError, UnsupportedPrecisionError
from .precision import RATE_CLASSES, normalize, rate_class
from ._validate import choice, flag

__all__ = [
    "GPU",
    "Peak",
    "Memory",
    "Chip",
    "Interconnect",
    "Source",
    "Measured",
    "load_gpu",
    "list_gpus",
    "spec_dirs",
    "SPEC_PATH_ENV",
    "consistency_issues",
]

#: environment variable holding extra spec folders (os.pathsep-separated); they take precedence
SPEC_PATH_ENV = "SOLKIT_SPEC_PATH"

TERA = 1e12
GIGA = 1e9
MIB = 2**20

_FROZEN = ConfigDict(frozen=True, extra="forbid")

#: what a kernel is, for the predictor's efficiency model: GEMMs, implicit-GEMM convolutions,
#: fused attention, elementwise maps, row reductions (norms, softmax), plain copies, gathers
#: (embedding), layout transforms (NCHW <-> NHWC) and im2col unfolds
KERNEL_KINDS: tuple[str, ...] = ("gemm", "conv", "attention", "elementwise", "reduction", "copy", "gather", "layout", "im2col")

#: keys a calibration table may use: kernel kinds, then the operators kernels name in ``Kernel.op``
#: (a test checks that every operator in solkit.ops emits only these)
CALIBRATION_KEYS: tuple[str, ...] = KERNEL_KINDS + (
    "matmul", "conv2d", "conv2d_depthwise", "flash_attention", "flash_attention_splitkv", "layernorm", "rmsnorm", "layernorm_residual",
    "softmax", "add", "gelu", "silu", "embedding",
)

#: a figure in human units: a real number (not a bool or a string), finite, positive and below 1e9
Figure = Annotated[float, Strict(), Field(gt=0, lt=1e9, allow_inf_nan=False)]
Count = Annotated[int, Strict(), Field(gt=0, le=1_000_000)]
NonNegativeFigure = Annotated[float, Strict(), Field(ge=0, lt=1e9, allow_inf_nan=False)]
Flag = Annotated[bool, Strict()]

RateClass = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"]
Unit = Literal["matrix", "vector"]


class Source(BaseModel):
    """A document a figure comes from."""

    model_config = _FROZEN
    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    url: str = Field(pattern=r"^https?://")
    preliminary: Flag = False


class Chip(BaseModel):
    """Compute units, clock, L2 and power."""

    model_config = _FROZEN
    compute_units: Count
    compute_unit_name: Literal["SM", "CU"]
    boost_clock_mhz: Figure
    l2_cache_mb: Figure
    tdp_w: Figure
    source: str


class Memory(BaseModel):
    """Device memory: type, capacity and datasheet bandwidth."""

    model_config = _FROZEN
    type: str
    capacity_gb: Figure
    bandwidth_tb_s: Figure
    source: str


class Interconnect(BaseModel):
    """GPU-to-GPU link and host link (bidirectional totals per GPU)."""

    model_config = _FROZEN
    name: str
    bandwidth_gb_s: Union[Figure, None]
    pcie: str
    pcie_bandwidth_gb_s: Figure
    source: str


class Peak(BaseModel):
    """One datasheet peak: precision, unit, dense TFLOP/s (TOPS for int8), optional stated sparse figure."""

    model_config = _FROZEN
    precision: RateClass
    unit: Unit
    tflops: Figure
    sparse_tflops: Union[Figure, None] = None
    source: str
    note: Union[str, None] = None


class Measured(BaseModel):
    """Ceilings measured on a real part, with the date, the method and the software stack.

    ``matmul_tflops``, ``copy_bandwidth_tb_s``, ``read_bandwidth_tb_s`` and ``launch_floor_us``
    are direct measurements. The rest are fitted on the training split of the measured cases
    (see ``solkit.predict`` for the model): ``kernel_gap_us`` per further launch,
    ``kernel_latency_us`` per kernel kind, ``compute_efficiency`` and ``memory_efficiency``
    per kernel kind or operator (an operator's key wins) as fractions of the ceilings,
    ``overlap_exponent`` p of the soft maximum (t_c**p + t_m**p)**(1/p) (inf: a plain max),
    ``misaligned_gemm_penalty`` for GEMM leading
    dimensions not multiples of 16 bytes, ``small_channel_penalty`` for convs with fewer.
    """

    model_config = _FROZEN
    date: _dt.date
    method: str
    stack: dict[str, str]
    matmul_tflops: dict[RateClass, Figure]
    copy_bandwidth_tb_s: Figure
    read_bandwidth_tb_s: Union[Figure, None] = None
    launch_floor_us: Figure
    kernel_gap_us: NonNegativeFigure = 0.0
    kernel_latency_us: dict[str, NonNegativeFigure] = Field(default_factory=dict)
    compute_efficiency: dict[str, Figure] = Field(default_factory=dict)
    memory_efficiency: dict[str, Figure] = Field(default_factory=dict)
    overlap_exponent: Union[Figure, Literal["inf"]] = "inf"
    misaligned_gemm_penalty: Figure = 1.0
    small_channel_penalty: Figure = 1.0
    fit: Union[str, None] = None

    @model_validator(mode="after")
    def _check_keys(self) -> "Measured":
        for table in ("kernel_latency_us", "compute_efficiency", "memory_efficiency"):
            for key in getattr(self, table):
                if key not in CALIBRATION_KEYS:
                    raise ValueError(f"{table}: {key!r} is neither a kernel kind nor an operator; "
                                     f"known: {', '.join(CALIBRATION_KEYS)}")
        return self


class GPU(BaseModel):
    """One GPU SKU. Figures in the file's human units; accessors return SI units."""

    model_config = _FROZEN
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

    @model_validator(mode="after")
    def _check_references(self) -> "GPU":
        ids = [s.id for s in self.sources]
        if len(set(ids)) != len(ids):
            raise ValueError(f"sources: duplicate id in {ids}")
        cited = {"chip": self.chip.source, "memory": self.memory.source, "interconnect": self.interconnect.source}
        cited.update({f"peaks[{i}]": p.source for i, p in enumerate(self.peaks)})
        for where, sid in cited.items():
            if sid not in ids:
                raise ValueError(f"{where}.source: {sid!r} is not one of the listed sources {ids}")
        seen: set[tuple[str, str]] = set()
        for i, p in enumerate(self.peaks):
            key = (p.precision, p.unit)
            if key in seen:
                raise ValueError(f"peaks[{i}]: {p.precision} {p.unit} is listed twice")
            seen.add(key)
            if p.sparse_tflops is not None and not self.structured_sparsity:
                raise ValueError(f"peaks[{i}].sparse_tflops: given, but structured_sparsity is false")
            if p.sparse_tflops is not None and p.sparse_tflops < p.tflops:
                raise ValueError(
                    f"peaks[{i}]: sparse_tflops {p.sparse_tflops} is below the dense tflops {p.tflops};"
                    " was a sparse figure entered as dense?"
                )
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
        return f"GPU({self.name!r}: {self.full_name}, {self.sm_count} {self.chip.compute_unit_name}s, " \
               f"{self.memory.bandwidth_tb_s:g} TB/s{peak}{measured})"

    def _repr_html_(self) -> str:
        from ._display import html_table

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


# ---- consistency of a spec's figures ------------------------------------------------------

#: dense bf16 matrix FLOP per clock per SM/CU by architecture (a multiply-add is 2):
#: A100 whitepaper 1024 FMA/clk/SM; H100 whitepaper 2048; Ada (L40S) 512; CDNA 3 1024 per CU;
#: Blackwell (B200) 4096, as its 2.25 PFLOP/s over 148 SMs at ~1.9 GHz implies
MATRIX_BF16_FLOP_PER_CLOCK: dict[str, int] = {"ampere": 2048, "ada": 1024, "hopper": 4096, "blackwell": 8192, "cdna3": 2048}

#: dense matrix peak of a rate class relative to bf16, where the architecture has it
MATRIX_RATIO_TO_BF16: dict[str, float] = {"fp16": 1.0, "tf32": 0.5, "fp8": 2.0, "int8": 2.0, "fp4": 4.0}

#: the implied per-clock rate may fall this far below the table (peaks quoted at a lower clock
#: than the max boost: H100 SXM tensor figures at 1830 MHz of 1980) and no further; a sparse
#: figure entered as dense lands at about 2x
PER_CLOCK_TOLERANCE = (0.7, 1.15)
RATIO_TOLERANCE = 0.12


def consistency_issues(gpu: GPU) -> list[str]:
    """Figures that disagree with the part's own SM count and clock, or with each other.

    Catches a sparse figure entered as dense: the bf16 matrix peak against SM count x boost
    clock x the architecture's per-SM rate, and each other matrix precision against bf16.
    """
    issues: list[str] = []
    bf16 = gpu._peak("bf16", "matrix")
    if bf16 is None:
        return issues
    expected = MATRIX_BF16_FLOP_PER_CLOCK.get(gpu.architecture.lower())
    if expected is not None:
        implied = bf16.tflops * TERA / (gpu.chip.compute_units * gpu.chip.boost_clock_mhz * 1e6)
        low, high = PER_CLOCK_TOLERANCE
        if not low * expected <= implied <= high * expected:
            issues.append(
                f"{gpu.name}: bf16 matrix peak {bf16.tflops:g} TFLOP/s implies {implied:.0f} FLOP/clock/"
                f"{gpu.chip.compute_unit_name} at {gpu.chip.boost_clock_mhz:g} MHz on {gpu.chip.compute_units} "
                f"{gpu.chip.compute_unit_name}s; {gpu.architecture} does {expected} (a sparse figure entered as dense?)"
            )
    for rate, ratio in MATRIX_RATIO_TO_BF16.items():
        peak = gpu._peak(rate, "matrix")
        if peak is None:
            continue
        actual = peak.tflops / bf16.tflops
        if abs(actual / ratio - 1.0) > RATIO_TOLERANCE:
            issues.append(
                f"{gpu.name}: {rate} matrix peak {peak.tflops:g} is {actual:.3g} x bf16 ({bf16.tflops:g}); "
                f"expected {ratio:g} x (a sparse figure entered as dense, or a typo?)"
            )
    return issues


# ---- finding and loading spec files -----------------------------------------------------


def _shipped_dir() -> Path:
    """The spec folder inside the installed package, or the top-level one of a source checkout."""
    packaged = Path(__file__).resolve().parent / "hardware_specs"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "hardware_specs"
    if checkout.is_dir():
        return checkout
    raise SpecError(f"solkit cannot find its spec folder: looked in {packaged} and {checkout}")


def spec_dirs(extra: Any = None) -> tuple[Path, ...]:
    """Spec folders in search order: ``extra`` (a path or list), then $SOLKIT_SPEC_PATH, then the shipped one."""
    dirs: list[Path] = []
    if extra is not None:
        if isinstance(extra, (str, os.PathLike)):
            items = [extra]
        elif isinstance(extra, (list, tuple)) and all(isinstance(p, (str, os.PathLike)) for p in extra):
            items = list(extra)
        else:
            raise ArgumentTypeError(f"spec_path must be a folder path or a list of folder paths, got {extra!r}")
        dirs.extend(Path(p) for p in items)
    env = os.environ.get(SPEC_PATH_ENV, "")
    dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    for d in dirs:
        if not d.is_dir():
            raise SpecError(f"spec folder {d} does not exist or is not a folder")
    dirs.append(_shipped_dir())
    return tuple(dirs)


def _format_validation(path: Path, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        got = e.get("input")
        shown = "" if isinstance(got, (dict, list)) else f" (got {got!r})"
        lines.append(f"field '{loc}': {e['msg']}{shown}")
    return f"{path}: " + "; ".join(lines)


class _SpecLoader(yaml.SafeLoader):
    """Safe YAML that leaves dates as text (pydantic parses and names them) and rejects duplicate keys."""


_SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _mapping_without_duplicates(loader: _SpecLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_SpecLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


@functools.lru_cache(maxsize=256)
def _load_text_cached(path: str, raw: bytes) -> GPU:
    p = Path(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = yaml.load(text, Loader=_SpecLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(f"{p}: YAML syntax error{where}: {problem}") from None
    except RecursionError:
        raise SpecError(f"{p}: YAML nested too deeply to be a spec") from None
    if not isinstance(data, dict):
        raise SpecError(f"{p}: expected a mapping of spec fields at the top level, got {type(data).__name__}")
    try:
        gpu = GPU.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_format_validation(p, exc)) from None
    issues = consistency_issues(gpu)
    if issues:
        warnings.warn(f"{p}: " + "; ".join(issues), SpecConsistencyWarning, stacklevel=4)
    return gpu


def load_spec_file(path: Any) -> GPU:
    """Load and validate one spec file; any problem raises ``SpecError`` naming the file and field."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"{p}: no such spec file")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise SpecError(f"{p}: cannot read the spec file ({exc.strerror or exc})") from None
    # keyed by content, so an edit is always seen, whatever the file system's timestamps
    return _load_text_cached(str(p.resolve()), raw)


def _index(extra: Any = None) -> dict[str, Path]:
    """Map of every canonical name and alias (lower case) to its file; earlier folders win.

    Cached on the folders' listing and each file's modification time and size, so a lookup by
    name costs a directory scan, not a parse of every spec.
    """
    files = tuple(
        (str(f), st.st_mtime_ns, st.st_size)
        for d in reversed(spec_dirs(extra))
        for f in sorted(d.glob("*.yaml"))
        for st in (f.stat(),)
    )
    return dict(_index_cached(files))


@functools.lru_cache(maxsize=64)
def _index_cached(files: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, Path], ...]:
    index: dict[str, Path] = {}
    for name, _, _ in files:
        f = Path(name)
        gpu = load_spec_file(f)
        if gpu.name != f.stem:
            raise SpecError(f"{f}: field 'name' is {gpu.name!r} but the file is named {f.stem!r}.yaml")
        for key in (gpu.name, *gpu.aliases):
            index[key.lower()] = f
    return tuple(index.items())


def list_gpus(spec_path: Any = None) -> list[str]:
    """Canonical names of the available specs (shipped, $SOLKIT_SPEC_PATH, ``spec_path``), sorted."""
    return sorted({p.stem for p in _index(spec_path).values()})


def load_gpu(name: Any, spec_path: Any = None) -> GPU:
    """A GPU by canonical name, alias (case-insensitive) or path to a YAML file."""
    if isinstance(name, GPU):
        return name
    if isinstance(name, os.PathLike) or (isinstance(name, str) and name.endswith((".yaml", ".yml"))):
        return load_spec_file(name)
    if not isinstance(name, str):
        raise ArgumentTypeError(f"gpu name must be a string (a GPU name, alias or path to a .yaml file) or a GPU, got {name!r}")
    index = _index(spec_path)
    key = name.strip().lower()
    if key not in index:
        names = sorted({p.stem for p in index.values()})
        aliases = sorted(k for k, p in index.items() if k != p.stem)
        raise UnknownGPUError(
            f"gpu {name!r} is not a known GPU; known names: {', '.join(names)}; aliases: {', '.join(aliases)}"
        )
    return load_spec_file(index[key])


def as_gpu(gpu: Any) -> GPU:
    """A GPU object from a GPU, a name, an alias or a path."""
    if isinstance(gpu, GPU):
        return gpu
    if not isinstance(gpu, (str, os.PathLike)):
        raise ArgumentTypeError(f"gpu must be a GPU name, alias, GPU object or path to a .yaml file, got {gpu!r}")
    return load_gpu(gpu)
