"""Finding and loading spec files: ``load_gpu``, ``list_gpus``, the name index and the cache.

Spec folders are searched in order: a ``spec_path`` argument, then ``$SOLKIT_SPEC_PATH``, then
the folder shipped inside the package (read through ``importlib.resources``). Earlier folders win.
Every ``*.yaml`` in a folder is a spec (hidden files and subfolders are not). A file of the same
name in an earlier folder shadows a later one, aliases included, with a ``SpecFolderWarning``; a
name or alias that two other files claim is refused (``SpecError`` naming both); a file that does
not load is skipped with a warning and its error raised when it is asked for by name or path.

The cache holds one parsed spec per file, keyed on the file's (inode, ctime_ns, size): a call
costs one ``stat``, and an edited file (which changes its ctime) is read again. A file changed
less than ``RACY_NS`` before it was read may change again within the file system's ctime tick
without changing its key, so such an entry is checked against the file's bytes until it is
older (git's "racily clean" rule). A name resolves through an index of the folders, built once;
a name it lacks, a removed file or an alias that moved rebuilds it, and so does ``list_gpus()``
(NB: a new file that shadows a name already resolved is seen after ``list_gpus()`` or
``clear_cache()``). The objects handed out are read-only (frozen models, read-only tables).
``clear_cache()`` forgets everything. The pydantic schema is imported on the first load, not
with ``import solkit``.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Union

import yaml

from .._files import open_regular
from .._validate import checked_call, did_you_mean, shown, user_stacklevel
from ..errors import ArgumentTypeError, SpecError, SpecFolderWarning, UnknownGPUError

if TYPE_CHECKING:  # pragma: no cover
    from .schema import GPU

__all__ = ["load_gpu", "list_gpus", "as_gpu", "load_spec_file", "spec_dirs", "shipped_dir", "clear_cache", "SPEC_PATH_ENV",
           "MAX_SPEC_BYTES", "MAX_SPEC_NODES", "SpecFolderWarning"]

#: environment variable holding extra spec folders (os.pathsep-separated); they take precedence
SPEC_PATH_ENV = "SOLKIT_SPEC_PATH"

#: a spec file is a few KB; a larger one is refused before it is read
MAX_SPEC_BYTES = 1 << 20

#: a spec is a few hundred YAML nodes (the H200's: 314); parsing stops past this many (PyYAML
#: builds 100,000 nodes a second, so 1 MiB of "1, 1, 1" would take seconds)
MAX_SPEC_NODES = 20_000

#: a file changed this recently when read is re-checked against its bytes (ctime ticks are coarse: 4 ms to 2 s)
RACY_NS = 2_000_000_000

#: the pure-Python parser re-reads a broken file to word its error up to this size (libyaml's words beyond)
_WORDING_LIMIT = 1 << 18

_SCHEMA = __name__.rsplit(".", 1)[0] + ".schema"


@functools.lru_cache(maxsize=1)
@checked_call
def shipped_dir() -> Path:
    """The spec folder shipped inside the package (``solkit/hardware_specs``)."""
    import importlib.resources  # here, not at import: it costs milliseconds

    folder = importlib.resources.files("solkit").joinpath("hardware_specs")
    if not isinstance(folder, Path) or not folder.is_dir():
        raise SpecError(f"solkit cannot find its shipped spec folder (looked for {folder}); reinstall solkit")
    return folder


# ---- paths and OS errors ---------------------------------------------------------------------


def _shown(path: Any) -> str:
    """A path as messages print it: as is, or quoted with escapes when it holds a NUL or other control character."""
    text = os.fsdecode(path) if isinstance(path, bytes) else str(path)
    return repr(text) if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in text) else text


def _why(exc: OSError) -> str:
    """'Permission denied (EACCES)', with a hint where the errno has a usual cause."""
    name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    hint = {errno.ELOOP: ": a symbolic link loop?", errno.ENAMETOOLONG: ": a name too long for the file system",
            errno.ENOTDIR: ": a part of the path is a file, not a folder"}.get(exc.errno or 0, "")
    return f"{exc.strerror or exc} ({name}){hint}"


def stat_spec(path: str, what: str) -> os.stat_result:
    """``os.stat(path)``; an OS error or an unusable path is a SpecError naming the path."""
    try:
        return os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise SpecError(f"{_shown(path)}: no such {what}") from None
        raise SpecError(f"{_shown(path)}: cannot read the {what}: {_why(exc)}") from None
    except ValueError as exc:  # a NUL byte, or a name the file system encoding cannot hold
        raise SpecError(f"{_shown(path)}: not a usable path for a {what} ({exc})") from None


def _as_path(path: Any, argument: str) -> str:
    """A str path from a str, bytes or os.PathLike ``argument``; anything else is an ArgumentTypeError."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ArgumentTypeError(f"{argument} must be a path (str or os.PathLike), got {path!r}")
    try:
        return os.fsdecode(os.fspath(path))
    except (TypeError, ValueError) as exc:
        raise ArgumentTypeError(f"{argument} must be a path (str or os.PathLike), got {path!r} ({exc})") from None


def _check_folder(folder: str) -> None:
    """A spec folder that is missing, not a folder or unusable is a SpecError naming it."""
    try:
        st = os.stat(folder)
    except OSError as exc:
        why = "does not exist" if exc.errno == errno.ENOENT else f"cannot be read: {_why(exc)}"
        raise SpecError(f"spec folder {_shown(folder)} {why}") from None
    except ValueError as exc:  # a NUL byte, or a name the file system encoding cannot hold
        raise SpecError(f"spec folder {_shown(folder)} is not a usable path ({exc})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise SpecError(f"spec folder {_shown(folder)} is a file, not a folder (a spec file loads by path: load_gpu(path))")


@checked_call
def spec_dirs(extra: Any = None) -> tuple[Path, ...]:
    """Spec folders in search order: ``extra`` (a path or list), then $SOLKIT_SPEC_PATH, then the shipped one."""
    dirs: list[str] = []
    if extra is not None:
        if isinstance(extra, (str, bytes, os.PathLike)):
            items = [extra]
        elif isinstance(extra, (list, tuple)) and all(isinstance(p, (str, bytes, os.PathLike)) for p in extra):
            items = list(extra)
        else:
            raise ArgumentTypeError(f"spec_path must be a folder path or a list of folder paths, got {extra!r}")
        dirs.extend(_as_path(p, "spec_path") for p in items)
    env = os.environ.get(SPEC_PATH_ENV, "")
    dirs.extend(p for p in env.split(os.pathsep) if p)
    for d in dirs:
        _check_folder(d)
    return (*(Path(d) for d in dirs), shipped_dir())


# ---- YAML ------------------------------------------------------------------------------------

_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_PLAIN_FLOAT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
#: YAML 1.2 reads 1e3 and 4.8e0 as numbers; PyYAML's YAML 1.1 resolver leaves them text
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$")
_BOOLS = frozenset(["true", "True", "TRUE", "false", "False", "FALSE"])
_TAG = "tag:yaml.org,2002:"


class _Yaml11:
    """A plain scalar that YAML 1.1 reads one way and YAML 1.2 (or a person) another: refused where it lands."""

    __slots__ = ("text", "kind", "value", "line")

    def __init__(self, text: str, kind: str, value: Any, line: int) -> None:
        self.text, self.kind, self.value, self.line = text, kind, value, line

    def __repr__(self) -> str:
        return self.text

    def problem(self, field: str) -> str:
        """What is wrong with the literal in ``field`` and what to write instead."""
        t, v = self.text, self.value
        if self.kind == "octal":
            return f"{t} is an octal number in YAML 1.1 (it reads as {v}): write it without the leading zero"
        if self.kind in ("hexadecimal", "binary"):
            return f"{t} is a {self.kind} number in YAML 1.1 (it reads as {v}): write {v}"
        if self.kind == "base-60":
            return f"{t} is a base-60 number in YAML 1.1 (it reads as {v}): quote it if it is text"
        if self.kind == "separators":
            return f"{t} has digit separators, which only YAML 1.1 reads (as {v}): write {v}"
        if self.kind == "non-finite":
            hint = ": write the word inf for a plain maximum" if field.endswith("overlap_exponent") else ""
            return f"{t} is not a finite number; a figure must be finite{hint}"
        return f"{t} is a boolean in YAML 1.1 ({str(v).lower()}) but text in YAML 1.2: write true or false, or quote it"


def _int_kind(text: str) -> str:
    t = text.lstrip("+-")
    if ":" in t:
        return "base-60"
    if t.startswith("0x"):
        return "hexadecimal"
    if t.startswith("0b"):
        return "binary"
    return "separators" if "_" in t else "octal"


def _construct_int(loader: Any, node: yaml.ScalarNode) -> Any:
    value = yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    if _PLAIN_INT.fullmatch(node.value):
        return value
    return loader.literal(node, _int_kind(node.value), value)


def _construct_float(loader: Any, node: yaml.ScalarNode) -> Any:
    value = yaml.constructor.SafeConstructor.construct_yaml_float(loader, node)
    if _PLAIN_FLOAT.fullmatch(node.value):
        return value
    kind = "base-60" if ":" in node.value else "separators" if "_" in node.value else "non-finite"
    return loader.literal(node, kind, value)


def _construct_bool(loader: Any, node: yaml.ScalarNode) -> Any:
    value = yaml.constructor.SafeConstructor.construct_yaml_bool(loader, node)
    return value if node.value in _BOOLS else loader.literal(node, "boolean", value)


class _KeyProblem(yaml.MarkedYAMLError):
    """A mapping key that is not a plain value (a list or a mapping), or a merge key."""


class _TooManyNodes(yaml.YAMLError):
    """More YAML nodes than any spec has (MAX_SPEC_NODES)."""

    def __str__(self) -> str:
        return f"more than {MAX_SPEC_NODES:,} YAML values: a spec has a few hundred"


def _mapping_without_duplicates(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _TAG + "merge":
            what = "a merge key (<<)" if isinstance(key_node, yaml.ScalarNode) else (
                "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping")
            raise _KeyProblem(None, None, f"a mapping key must be a plain name or value, not {what}", key_node.start_mark)
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


def _literal(self: Any, node: yaml.ScalarNode, kind: str, value: Any) -> _Yaml11:
    found = _Yaml11(node.value, kind, value, node.start_mark.line)
    self.literals.append(found)
    return found


def _spec_loader(base: type) -> type:
    """Safe YAML that leaves dates as text, reads 1e3 as a number, rejects duplicate and non-scalar keys, and
    marks YAML 1.1 surprises (octal 0132, base-60 1:30, yes/no/on/off, .inf/.nan, 1_000) for refusal."""

    def __init__(self: Any, stream: str) -> None:
        base.__init__(self, stream)  # type: ignore[misc]
        self.literals = []
        self.nodes = 0

    def resolve(self: Any, kind: type, value: Any, implicit: Any) -> str:
        self.nodes += 1  # every node the parser builds is resolved once (an alias is not a new node)
        if self.nodes > MAX_SPEC_NODES:
            raise _TooManyNodes()
        return base.resolve(self, kind, value, implicit)  # type: ignore[attr-defined,no-any-return]

    loader = type(f"_Spec{base.__name__}", (base,), {"__init__": __init__, "resolve": resolve, "literal": _literal})
    resolvers = {
        first: [(tag, regexp) for tag, regexp in items if tag != _TAG + "timestamp"]
        for first, items in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    for first in "0123456789+-.":
        resolvers.setdefault(first, []).append((_TAG + "float", _EXPONENT_FLOAT))
    loader.yaml_implicit_resolvers = resolvers  # type: ignore[attr-defined]
    loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)  # type: ignore[attr-defined]
    loader.add_constructor(_TAG + "int", _construct_int)  # type: ignore[attr-defined]
    loader.add_constructor(_TAG + "float", _construct_float)  # type: ignore[attr-defined]
    loader.add_constructor(_TAG + "bool", _construct_bool)  # type: ignore[attr-defined]
    return loader


#: libyaml's parser where PyYAML has it (fast); the pure-Python one words the errors (the same everywhere)
_FAST_LOADER = _spec_loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
_WORDING_LOADER = _spec_loader(yaml.SafeLoader)
_SYNTAX_ERRORS = (yaml.reader.ReaderError, yaml.scanner.ScannerError, yaml.parser.ParserError,
                  yaml.composer.ComposerError)


def _load_yaml(loader_class: type, text: str) -> tuple[Any, list[_Yaml11]]:
    loader = loader_class(text)
    try:
        return loader.get_single_data(), loader.literals
    finally:
        loader.dispose()


def _yaml(path: str, text: str) -> tuple[Any, list[_Yaml11]]:
    """The YAML document of a spec file and its YAML 1.1 surprises; a YAML error is a SpecError naming the file."""
    try:
        return _load_yaml(_FAST_LOADER, text)
    except yaml.YAMLError as fast_error:
        error: yaml.YAMLError = fast_error
        deep = "nesting depth" in str(fast_error)  # the pure-Python parser would take seconds to hit its recursion limit
        if len(text) <= _WORDING_LIMIT and not deep and not isinstance(fast_error, _TooManyNodes):
            try:
                _load_yaml(_WORDING_LOADER, text)
            except yaml.YAMLError as exc:
                error = exc
            except RecursionError:  # the pure-Python parser recurses where libyaml does not: keep libyaml's words
                pass
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        kind = "YAML syntax error" if isinstance(error, _SYNTAX_ERRORS) else "YAML error"
        raise SpecError(f"{path}: {kind}{where}: {problem}") from None
    except RecursionError:
        raise SpecError(f"{path}: YAML nested too deeply to be a spec") from None


def _literal_fields(data: Any) -> dict[int, str]:
    """id(literal) -> the dotted field where it sits (first found; shared anchors are walked once)."""
    fields: dict[int, str] = {}
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        prefix, node = stack.pop()
        if not isinstance(node, (dict, list)) or id(node) in seen:
            continue
        seen.add(id(node))
        for key, value in (node.items() if isinstance(node, dict) else enumerate(node)):
            field = f"{prefix}.{key}" if prefix else str(key)
            for item in (key, value):
                if isinstance(item, _Yaml11):
                    fields.setdefault(id(item), field)
            stack.append((field, value))
    return fields


def _refuse_literals(path: str, data: Any, literals: list[_Yaml11]) -> None:
    """A SpecError naming the field and the literal text of each YAML 1.1 surprise (the first five)."""
    fields = _literal_fields(data)
    placed = sorted((lit.line, fields[id(lit)], lit) for lit in literals if id(lit) in fields)
    if not placed:  # only inside a key of a key, or the whole document: name the line
        placed = [(lit.line, f"(line {lit.line + 1})", lit) for lit in literals]
    problems = [f"field '{field}': {lit.problem(field)}" for _, field, lit in placed[:5]]
    more = f"; and {len(placed) - 5} more" if len(placed) > 5 else ""
    raise SpecError(f"{path}: " + "; ".join(problems) + more)


# ---- reading and parsing ---------------------------------------------------------------------


def read_spec_bytes(path: str, st: os.stat_result) -> bytes:
    """The bytes of a regular file of at most MAX_SPEC_BYTES (checked before reading, and on the opened descriptor: a
    file swapped for a pipe since ``st`` is still refused)."""
    if stat.S_ISDIR(st.st_mode):
        raise SpecError(f"{_shown(path)}: is a folder, not a spec file (a folder of specs is a spec_path)")
    if not stat.S_ISREG(st.st_mode):
        raise SpecError(f"{_shown(path)}: not a regular file (a device, pipe or socket), so not a spec file")
    too_big = f"{_shown(path)}: over the {MAX_SPEC_BYTES:,}-byte (1 MiB) limit of a spec file (a spec is a few KB)"
    if st.st_size > MAX_SPEC_BYTES:
        raise SpecError(f"{too_big}: {st.st_size:,} bytes")
    try:
        f, _, _ = open_regular(path, "spec file", SpecError)  # without blocking, checked again on its descriptor
        with f:
            raw = f.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{_shown(path)}: cannot read the spec file: {_why(exc)}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{too_big}: it grew while being read")
    return raw


def document(path: str, raw: bytes) -> Any:
    """The YAML document of a file's bytes: UTF-8, YAML 1.2 literals only; every problem a SpecError naming the file."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    data, literals = _yaml(path, text)
    if literals:
        _refuse_literals(path, data, literals)
    return data


def _parse(path: str, raw: bytes) -> "GPU":
    """Validate one file's bytes as a GPU spec; every problem is a SpecError naming the file (and field)."""
    from .schema import GPU

    data = document(path, raw)
    if data is None:
        raise SpecError(f"{path}: the file is empty (no YAML document); expected a mapping of spec fields")
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of spec fields at the top level, got {type(data).__name__}")
    if data and not data.keys() & GPU.model_fields.keys():
        keys = ", ".join(str(k) for k in list(data)[:5]) + (", ..." if len(data) > 5 else "")
        raise SpecError(f"{path}: not a GPU spec: none of its top-level keys ({keys}) is a spec field "
                        f"(name, full_name, chip, memory, peaks, ...); every *.yaml in a spec folder is read as a spec")
    gpu = GPU.model_validate(data, context={"spec_file": path})
    gpu._path = path
    return gpu


# ---- the cache -------------------------------------------------------------------------------

_Key = tuple[int, int, int]


class _Cache:
    """Parsed specs by file, keyed on (inode, ctime_ns, size); name indexes by folder list."""

    def __init__(self) -> None:
        #: path -> (key, GPU, its lower-case names); the key is None while the entry is racy
        self.files: dict[str, tuple[Union[_Key, None], "GPU", frozenset[str]]] = {}
        #: path -> (key, bytes) of an entry read within RACY_NS of its change: checked against the bytes
        self.racy: dict[str, tuple[_Key, bytes]] = {}
        self.indexes: dict[Any, _Index] = {}
        self.names: dict[tuple[str, str], str] = {}  # (name as given, $SOLKIT_SPEC_PATH) -> file, for the fast path

    def clear(self) -> None:
        self.files.clear()
        self.racy.clear()
        self.indexes.clear()
        self.names.clear()

    def remember(self, path: str, key: _Key, gpu: "GPU", names: frozenset[str], raw: bytes) -> None:
        """Cache a parsed file; one changed within RACY_NS of now stays checked against its bytes."""
        if time.time_ns() - key[1] > RACY_NS:
            self.files[path] = (key, gpu, names)
            self.racy.pop(path, None)
        else:
            self.files[path] = (None, gpu, names)
            self.racy[path] = (key, raw)


class _Index(NamedTuple):
    """The names of a list of spec folders."""

    names: dict[str, str]  # lower-case canonical name or alias -> the file of a spec that loads
    canonical: frozenset[str]  # canonical names of the specs that load
    broken: dict[str, str]  # lower-case file stem -> a file that does not load (asked for, it raises its error)
    ambiguous: dict[str, tuple[str, ...]]  # lower-case name -> the files that claim it


_CACHE = _Cache()


@checked_call
def clear_cache() -> None:
    """Forget every parsed spec, name index and figure derived from a spec (the next call reads the files again)."""
    for _, gpu, _ in _CACHE.files.values():
        gpu.memo.clear()  # a GPU object someone still holds derives its peaks and calibration afresh
    _CACHE.clear()


def _load(path: str) -> tuple["GPU", frozenset[str]]:
    """(GPU, its lower-case names) of an absolute path: one stat, a parse only if the file changed."""
    st = stat_spec(path, "spec file")
    key = (st.st_ino, st.st_ctime_ns, st.st_size)
    hit = _CACHE.files.get(path)
    if hit is not None and hit[0] == key:
        return hit[1], hit[2]
    raw = read_spec_bytes(path, st)
    racy = _CACHE.racy.get(path)
    if hit is not None and racy is not None and racy[0] == key and racy[1] == raw:
        gpu, names = hit[1], hit[2]  # unchanged since a read too close to its change to trust the key alone
    else:
        gpu = _parse(path, raw)
        names = frozenset(n.lower() for n in (gpu.name, *gpu.aliases))
    _CACHE.remember(path, key, gpu, names, raw)
    return gpu, names


@checked_call
def load_spec_file(path: Any) -> "GPU":
    """Load and validate one spec file; any problem raises ``SpecError`` naming the file and field."""
    return _load(os.path.abspath(_as_path(path, "path")))[0]


# ---- the name index --------------------------------------------------------------------------


def _folder_files(folder: Path) -> list[tuple[str, str]]:
    """(stem, absolute path) of each ``*.yaml`` in ``folder``, sorted; hidden files are not specs."""
    try:
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".yaml") and not e.name.startswith("."))
    except OSError as exc:
        raise SpecError(f"spec folder {_shown(folder)}: cannot list it: {_why(exc)}") from None
    return [(n[: -len(".yaml")], os.path.abspath(os.path.join(folder, n))) for n in names]


def _folder_spec(path: str, stem: str) -> tuple["GPU", frozenset[str]]:
    """A spec found in a folder: it loads, and its ``name`` is its file's stem."""
    gpu, names = _load(path)
    if gpu.name != stem:
        raise SpecError(f"{path}: field 'name' is {gpu.name!r} but the file is named {stem!r}.yaml")
    return gpu, names


def _build_index(dirs: tuple[Path, ...]) -> _Index:
    """Names of the folders' specs; shadowed, skipped and ambiguous files are warned about (SpecFolderWarning)."""
    first: dict[str, str] = {}  # stem -> the file that has it (the earliest folder's)
    claims: dict[str, list[str]] = {}
    canonical: set[str] = set()
    broken: dict[str, str] = {}
    problems: list[str] = []
    for folder in dirs:
        for stem, path in _folder_files(folder):
            if stem in first:
                problems.append(f"{first[stem]} shadows {path}: a spec file of the same name in an earlier spec "
                                "folder replaces it, aliases included")
                continue
            first[stem] = path
            try:
                _, names = _folder_spec(path, stem)
            except SpecError as exc:
                broken[stem.lower()] = path
                problems.append(f"skipped {path} (it does not load; asking for {stem!r} raises this): {exc}")
                continue
            canonical.add(stem)
            for name in names:
                claims.setdefault(name, []).append(path)
    ambiguous = {n: tuple(paths) for n, paths in claims.items() if len(paths) > 1}
    problems += [f"{' and '.join(paths)} both claim the name {n!r}: loading {n!r} is refused until one drops it"
                 for n, paths in ambiguous.items()]
    for problem in problems:
        warnings.warn(problem, SpecFolderWarning, stacklevel=user_stacklevel())
    unique = {n: paths[0] for n, paths in claims.items() if len(paths) == 1}
    return _Index(unique, frozenset(canonical), broken, ambiguous)


def _index(extra: Any, refresh: bool) -> _Index:
    """The name index of the folders ``extra`` and $SOLKIT_SPEC_PATH name (cached; ``refresh`` rebuilds it)."""
    if extra is None:
        key: Any = None
    elif isinstance(extra, (str, os.PathLike)):
        key = os.fspath(extra)
    elif isinstance(extra, (list, tuple)) and all(isinstance(p, (str, os.PathLike)) for p in extra):
        key = tuple(os.fspath(p) for p in extra)
    else:
        key = spec_dirs(extra)  # raises the type error, or a bytes path's folder list
    key = (key, os.environ.get(SPEC_PATH_ENV, ""))
    index = None if refresh else _CACHE.indexes.get(key)
    if index is None:
        index = _CACHE.indexes[key] = _build_index(spec_dirs(extra))
        _CACHE.names.clear()  # the names resolve afresh through the new index
    return index


@checked_call
def list_gpus(spec_path: Any = None) -> list[str]:
    """Canonical names of the available specs (shipped, $SOLKIT_SPEC_PATH, ``spec_path``), sorted."""
    return sorted(_index(spec_path, refresh=True).canonical)


@checked_call
def load_gpu(name: Any, spec_path: Any = None) -> "GPU":
    """A GPU by canonical name, alias (case-insensitive) or path to a YAML file."""
    if type(name) is str and spec_path is None:  # the fast path: a name seen before, its file unchanged (one stat)
        path = _CACHE.names.get((name, os.environ.get(SPEC_PATH_ENV, "")))
        if path is not None:
            hit = _CACHE.files.get(path)
            if hit is not None:
                try:
                    st = os.stat(path)
                except OSError:
                    st = None
                if st is not None and hit[0] == (st.st_ino, st.st_ctime_ns, st.st_size):
                    return hit[1]
    gpu = _load_gpu(name, spec_path)
    if type(name) is str and spec_path is None and not name.endswith((".yaml", ".yml")):
        _CACHE.names[(name, os.environ.get(SPEC_PATH_ENV, ""))] = gpu.path
    return gpu


def _resolve(index: _Index, key: str, name: str, final: bool) -> Union["GPU", None]:
    """The GPU ``key`` names in ``index``; None where a fresh index may answer otherwise (or ``final`` raises)."""
    paths = index.ambiguous.get(key)
    if paths is not None:
        if not final:
            return None
        raise SpecError(f"gpu {name!r} is claimed by {len(paths)} spec files: {', '.join(paths)}; load one by its "
                        "canonical name or path, or drop the name from all but one")
    path = index.broken.get(key)
    if path is not None:
        _folder_spec(path, Path(path).stem)  # raises its error; if it loads now, the index is stale
        return None
    path = index.names.get(key)
    if path is None:
        return None
    try:
        gpu, names = _load(path)
    except SpecError:  # removed or broken since the index was built: read the folders again
        if final:
            raise
        return None
    return gpu if key in names else None


def _load_gpu(name: Any, spec_path: Any) -> "GPU":
    schema = sys.modules.get(_SCHEMA)
    if schema is not None and isinstance(name, schema.GPU):
        return name
    if isinstance(name, os.PathLike) or (isinstance(name, str) and name.endswith((".yaml", ".yml"))):
        return load_spec_file(name)
    if not isinstance(name, str):
        raise ArgumentTypeError(f"gpu name must be a string (a GPU name, alias or path to a .yaml file) or a GPU, got {name!r}")
    key = name.strip().lower()
    gpu = _resolve(_index(spec_path, refresh=False), key, name, final=False)
    if gpu is not None:
        return gpu
    # a miss, a removed file, or an edited alias: read the folders again before giving up
    index = _index(spec_path, refresh=True)
    gpu = _resolve(index, key, name, final=True)
    if gpu is None:
        aliases = sorted(k for k, p in index.names.items() if k != Path(p).stem)
        folder = " (a folder of specs is passed as spec_path=)" if os.sep in name and os.path.isdir(name) else ""
        known = sorted(index.canonical)
        raise UnknownGPUError(
            f"gpu {shown(name)} is not a known GPU{folder}; known names: {', '.join(known)}; "
            f"aliases: {', '.join(aliases)}{did_you_mean(name, [*known, *aliases])}"
        )
    return gpu


@checked_call
def as_gpu(gpu: Any) -> "GPU":
    """A GPU object from a GPU, a name, an alias or a path."""
    if type(gpu) is str:
        return load_gpu(gpu)
    schema = sys.modules.get(_SCHEMA)
    if schema is not None and isinstance(gpu, schema.GPU):
        return gpu
    if not isinstance(gpu, (str, os.PathLike)):
        got = (f"a System ({gpu.name}): pass its GPU, system.gpu_spec" if type(gpu).__name__ == "System"
               else shown(gpu))
        raise ArgumentTypeError(f"gpu must be a GPU name, alias, GPU object or path to a .yaml file, got {got}")
    return load_gpu(gpu)
