"""The data folder and its manifest (``data/manifest.yaml``): what each measurement file is to the model.

Each file of the data folder has one entry: its role (fit, bank, validation, test, spent, repeat, profiled, trace,
record, reference, report; the file's header defines each), what it measures, its draw's seed, the commit after which
it was measured, the protocol, the date and the GPUs. The calibration asks the manifest for its files
(``manifest().files(role="fit", measures="steps")``) instead of naming them. ``load_manifest`` checks what it
reads: the schema, each entry's rules (a test draw is in no fit, not in the neighbour bank, and names its commit and
date) and that every file named exists; ``check_folder`` adds that every file of the folder is named (the suite runs
it: a stray file, an editor's backup or a ``.DS_Store``, never stops an import or a command). A problem is a
``SpecError`` naming the file and the field.

The folder ships inside the package (``solkit/data``; in a source checkout a link to the repository's ``data/``),
but for the profiler traces (``shipped: false``: fixtures of ``solkit.profile``'s tests, which the calibration never
reads).
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from pathlib import Path
from typing import Any, Literal, Optional, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import OptionError, SpecError

__all__ = ["ROLES", "MEASURES", "FITS", "DataFile", "Manifest", "MANIFEST_NAME", "data_dir", "data_path", "source_checkout",
           "load_manifest", "check_folder", "manifest"]

Role = Literal["fit", "bank", "validation", "test", "spent", "repeat", "profiled", "trace", "record", "reference",
               "report"]
Measures = Literal["kernels", "steps", "captured_steps", "launches", "parallel_steps", "collectives", "host", "traces",
                   "flop_counts", "mutation", "published", "serving", "tune_configs"]
Fit = Literal["kernels", "host", "fsdp_host", "links", "link_misaligned", "link_hop", "generate_host", "captured_host",
              "op_host_weight", "tune", "efficient_attention"]

#: the roles a file can have (defined in the manifest's header)
ROLES: tuple[str, ...] = get_args(Role)
#: what a file can measure
MEASURES: tuple[str, ...] = get_args(Measures)
#: the fits a file can shape (``fits``): which parameters are fitted on it
FITS: tuple[str, ...] = get_args(Fit)
#: the manifest's file name in the data folder
MANIFEST_NAME = "manifest.yaml"
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


class DataFile(BaseModel):
    """One file of the data folder: what it is to the model, and how it was measured."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    file: str  # the path in the data folder
    role: Role
    measures: Measures
    family: Optional[str] = None  # the draw's stream or the grid it is (the newest test of a family is the one to report)
    seed: Optional[int] = None  # the sampler's seed, where drawn
    after: Optional[str] = None  # the commit that froze the model it was measured after, where known
    added: Optional[str] = None  # the commit that first committed it
    date: Optional[str] = None  # when it was measured (UTC, ISO 8601), where known
    gpu: Optional[str] = None
    gpus: Optional[int] = None  # GPUs the measurement ran on
    protocol: Optional[str] = None  # how it was measured: a key of the manifest's ``protocols``
    fits: tuple[Fit, ...] = ()  # the fits that read it (role fit only)
    bank: bool = False  # its cases are in the neighbour bank
    shipped: bool = True  # in the wheel (the profiler traces are not)
    note: Optional[str] = None

    def describe(self) -> str:
        """'seed 2042, measured after commit be3dbc7; its note', as far as the entry says (a note may hold a colon)."""
        return "; ".join(part for part in (", ".join(([f"seed {self.seed}"] if self.seed is not None else []) +
                                                     ([f"measured after commit {self.after}"] if self.after else [])),
                                           self.note or "") if part)


class Manifest(BaseModel):
    """The ways files were measured, the data folder's files (in the order the calibration reads them) and the files
    planned but not yet measured."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    protocols: dict[str, str] = {}
    entries: tuple[DataFile, ...] = Field(alias="files")
    planned: tuple[DataFile, ...] = ()

    def entry(self, name: str) -> DataFile:
        """The entry of the file ``name`` (a path in the data folder; ``data/`` before it is allowed)."""
        key = _name(name)
        for e in self.entries:
            if e.file == key:
                return e
        raise OptionError(f"data file {name!r} is not in the data manifest ({MANIFEST_NAME})")

    def select(self, **where: Any) -> tuple[DataFile, ...]:
        """The entries whose fields equal ``where``'s values (``fits``: the entry's fits include it), in manifest order."""
        fields = DataFile.model_fields
        for field, value in where.items():
            if field not in fields:
                raise OptionError(f"manifest field must be one of {', '.join(fields)}, got {field!r}")
            known = {"role": ROLES, "measures": MEASURES, "fits": FITS}.get(field)
            if known is not None and value not in known:
                raise OptionError(f"{field} must be one of {', '.join(known)}, got {value!r}")
        return tuple(e for e in self.entries
                     if all((value in e.fits) if field == "fits" else getattr(e, field) == value
                            for field, value in where.items()))

    def files(self, **where: Any) -> tuple[str, ...]:
        """The names of the files ``select`` gives: e.g. ``files(role="fit", measures="steps")``."""
        return tuple(e.file for e in self.select(**where))

    def first(self, **where: Any) -> DataFile:
        """The first entry ``select`` gives; none is a ``SpecError`` naming what was asked for."""
        found = self.select(**where)
        if not found:
            asked = ", ".join(f"{field}={value!r}" for field, value in where.items())
            raise SpecError(f"data manifest ({MANIFEST_NAME}): no file with {asked}; the calibration needs one")
        return found[0]

    def newest_test(self, measures: str, family: Optional[str] = None, gpu: Optional[str] = None) -> Optional[DataFile]:
        """The frozen test draw of ``measures`` (and ``family``, and measured on ``gpu``) measured last: the one every
        predictor change reports on."""
        where: dict[str, Any] = {"role": "test", "measures": measures}
        if family is not None:
            where["family"] = family
        if gpu is not None:
            where["gpu"] = gpu
        tests = [e for e in self.select(**where) if e.date]
        return max(tests, key=lambda e: e.date or "") if tests else None


def data_dir() -> Path:
    """The data folder shipped in the package (``solkit/data``; in a source checkout, the repository's ``data/``)."""
    return (Path(__file__).resolve().parents[1] / "data").resolve()


def source_checkout() -> Optional[Path]:
    """The repository root where solkit runs from a source checkout (its data folder is the repository's ``data/``, beside
    ``pyproject.toml``), else None (an installed wheel: the data folder is the package's own)."""
    root = data_dir().parent
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "solkit").is_dir() else None


def _name(name: Any) -> str:
    """A data file's path in the data folder, from the name or from 'data/NAME'."""
    text = Path(str(name)).as_posix()
    return text[len("data/"):] if text.startswith("data/") else text


def data_path(name: Any) -> Path:
    """A data file: ``name`` itself where that path exists, else the file of that name in the data folder."""
    path = Path(name)
    return path if path.exists() else data_dir() / _name(name)


def _where(entry: Any, index: int) -> str:
    """How a message names an entry: its file, else its place."""
    return f"entry {entry['file']!r}" if isinstance(entry, dict) and "file" in entry else f"entry {index}"


def _check_entry(path: Path, section: str, e: DataFile, protocols: dict[str, str]) -> None:
    """One entry's own rules (its fields against its role and the manifest's protocols)."""
    def bad(field: str, why: str) -> SpecError:
        return SpecError(f"{path}: {section} entry {e.file!r}, field '{field}': {why}")

    for field in ("after", "added"):
        value = getattr(e, field)
        if value is not None and not _COMMIT.fullmatch(value):
            raise bad(field, f"expected a commit hash (7-40 hex digits), got {value!r}")
    if e.date is not None:
        try:
            _dt.datetime.fromisoformat(e.date)
        except ValueError:
            raise bad("date", f"expected an ISO 8601 date or time, got {e.date!r}") from None
    if e.protocol is not None and e.protocol not in protocols:
        raise bad("protocol", f"expected a key of 'protocols' ({', '.join(protocols)}), got {e.protocol!r}")
    if e.gpus is not None and e.gpus < 1:
        raise bad("gpus", f"expected a positive count, got {e.gpus}")
    if e.role == "fit" and not e.fits:
        raise bad("fits", "a fit file names the fits that read it (one of " + ", ".join(FITS) + ")")
    if e.role != "fit" and e.fits:
        raise bad("fits", f"only a fit file is fitted on, this one's role is {e.role!r}")
    if e.role == "test":
        if e.bank:
            raise bad("bank", "a frozen test draw is never in the neighbour bank")
        if e.after is None:
            raise bad("after", "a frozen test draw names the commit after which it was measured")
    if e.role in ("test", "spent") and e.date is None and section == "files":
        # the newest test of a family is found by date: an undated draw would be passed over silently
        raise bad("date", f"a {e.role} draw names when it was measured (an ISO 8601 date or time)")
    if not e.shipped and e.role != "trace":
        raise bad("shipped", "only the profiler traces stay out of the wheel")


def _file(path: Any) -> Path:
    """The manifest file: ``path``, default the data folder's."""
    return Path(path) if path is not None else data_dir() / MANIFEST_NAME


def load_manifest(path: Any = None) -> Manifest:
    """Load and check a manifest (default: the data folder's): its schema, each entry's rules and that every file it
    names exists beside it (``check_folder`` also refuses files it does not name); problems raise ``SpecError``."""
    file = _file(path)
    try:
        raw = yaml.load(file.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except FileNotFoundError:
        raise SpecError(f"{file}: no data manifest (solkit cannot find its data folder; reinstall solkit)") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{file}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{file}: expected a mapping with 'files' (and 'planned'), got {type(raw).__name__}")
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = list(first["loc"])
        where = ""
        if len(loc) >= 2 and loc[0] in ("files", "planned") and isinstance(loc[1], int):
            entries = raw.get(loc[0]) or []
            where = f"{loc[0]} {_where(entries[loc[1]] if loc[1] < len(entries) else None, loc[1])}, "
            loc = loc[2:]
        field = ".".join(str(x) for x in loc) or "(top level)"
        raise SpecError(f"{file}: {where}field '{field}': {first['msg']}, got {first.get('input')!r}") from None
    folder = file.parent
    seen: set[str] = set()
    for section, entries in (("files", manifest.entries), ("planned", manifest.planned)):
        for e in entries:
            if e.file in seen:
                raise SpecError(f"{file}: {section} entry {e.file!r}, field 'file': named twice")
            seen.add(e.file)
            _check_entry(file, section, e, manifest.protocols)
            present = (folder / e.file).is_file()
            if section == "planned" and present:
                raise SpecError(f"{file}: planned entry {e.file!r}, field 'file': the file exists now; move its entry to "
                                "'files'")
            # a file kept out of the wheel must be there wherever its folder is (a source checkout)
            if section == "files" and not present and (e.shipped or (folder / e.file).parent.is_dir()):
                raise SpecError(f"{file}: entry {e.file!r}, field 'file': no such file in {folder}")
    return manifest


def _stray(manifest: Manifest, folder: Path) -> tuple[str, ...]:
    """The files of ``folder`` (and its subfolders) that ``manifest`` does not name, sorted (``__pycache__`` aside)."""
    named = {e.file for e in manifest.entries} | {MANIFEST_NAME}
    return tuple(sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
                        and "__pycache__" not in p.parts and p.relative_to(folder).as_posix() not in named))


def check_folder(path: Any = None) -> Manifest:
    """Load a manifest (``load_manifest``) and refuse any file of its folder that it does not name (``SpecError``)."""
    file = _file(path)
    manifest = load_manifest(file)
    stray = _stray(manifest, file.parent)
    if stray:
        raise SpecError(f"{file}: field 'files': {len(stray)} file(s) of {file.parent} not in the manifest: "
                        f"{', '.join(stray)}")
    return manifest


@functools.lru_cache(maxsize=1)
def manifest() -> Manifest:
    """The shipped data folder's manifest, loaded and checked once."""
    return load_manifest()
