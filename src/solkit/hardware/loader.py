"""Finding and loading spec files: ``load_gpu``, ``list_gpus``, the name index and the cache.

Spec folders are searched in order: a ``spec_path`` argument, then ``$SOLKIT_SPEC_PATH``, then
the folder shipped inside the package (read through ``importlib.resources``). Earlier folders win.

The cache holds one parsed spec per file, keyed on the file's (inode, ctime_ns, size): a call
costs one ``stat``, and an edited file (which changes its ctime) is read again. A name resolves
through an index of the folders, built once; a name it lacks, a removed file or an alias that
moved rebuilds it, and so does ``list_gpus()`` (NB: a new file that shadows a name already
resolved is seen after ``list_gpus()`` or ``clear_cache()``). The objects handed out are
read-only (frozen models, read-only tables). ``clear_cache()`` forgets everything.
The pydantic schema is imported on the first load, not with ``import solkit``.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..errors import ArgumentTypeError, SpecConsistencyWarning, SpecError, UnknownGPUError

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import ValidationError

    from .schema import GPU

__all__ = ["load_gpu", "list_gpus", "as_gpu", "load_spec_file", "spec_dirs", "shipped_dir", "clear_cache", "SPEC_PATH_ENV"]

#: environment variable holding extra spec folders (os.pathsep-separated); they take precedence
SPEC_PATH_ENV = "SOLKIT_SPEC_PATH"

_SCHEMA = __name__.rsplit(".", 1)[0] + ".schema"


@functools.lru_cache(maxsize=1)
def shipped_dir() -> Path:
    """The spec folder shipped inside the package (``solkit/hardware_specs``)."""
    import importlib.resources  # here, not at import: it costs milliseconds

    folder = importlib.resources.files("solkit").joinpath("hardware_specs")
    if not isinstance(folder, Path) or not folder.is_dir():
        raise SpecError(f"solkit cannot find its shipped spec folder (looked for {folder}); reinstall solkit")
    return folder


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
    dirs.append(shipped_dir())
    return tuple(dirs)


# ---- YAML ------------------------------------------------------------------------------------


def _mapping_without_duplicates(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


def _spec_loader(base: type) -> type:
    """Safe YAML that leaves dates as text (pydantic parses and names them) and rejects duplicate keys."""
    loader = type(f"_Spec{base.__name__}", (base,), {})
    loader.yaml_implicit_resolvers = {  # type: ignore[attr-defined]
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)  # type: ignore[attr-defined]
    return loader


#: libyaml's parser where PyYAML has it (fast); the pure-Python one words the errors (the same everywhere)
_FAST_LOADER = _spec_loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
_WORDING_LOADER = _spec_loader(yaml.SafeLoader)


def _yaml(path: str, text: str) -> Any:
    """The YAML document of a spec file; a syntax error is a SpecError worded by the pure-Python parser."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError as fast_error:
        try:
            yaml.load(text, Loader=_WORDING_LOADER)
        except yaml.YAMLError as exc:
            fast_error = exc
        except RecursionError:  # the pure-Python parser recurses where libyaml does not: keep libyaml's words
            pass
        mark = getattr(fast_error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(fast_error, "problem", None) or str(fast_error)
        raise SpecError(f"{path}: YAML syntax error{where}: {problem}") from None
    except RecursionError:
        raise SpecError(f"{path}: YAML nested too deeply to be a spec") from None


def _format_validation(path: str, err: "ValidationError") -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        got = e.get("input")
        shown = "" if isinstance(got, (dict, list)) else f" (got {got!r})"
        lines.append(f"field '{loc}': {e['msg']}{shown}")
    return f"{path}: " + "; ".join(lines)


def _parse(path: str, raw: bytes) -> "GPU":
    """Validate one file's bytes as a GPU spec; every problem is a SpecError naming the file (and field)."""
    from pydantic import ValidationError

    from .consistency import consistency_issues
    from .schema import GPU

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    data = _yaml(path, text)
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of spec fields at the top level, got {type(data).__name__}")
    try:
        gpu = GPU.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_format_validation(path, exc)) from None
    gpu._path = path
    issues = consistency_issues(gpu)
    if issues:
        warnings.warn(f"{path}: " + "; ".join(issues), SpecConsistencyWarning, stacklevel=4)
    return gpu


# ---- the cache -------------------------------------------------------------------------------


class _Cache:
    """Parsed specs by file, keyed on (inode, ctime_ns, size); name indexes by folder list."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[tuple[int, int, int], "GPU", frozenset[str]]] = {}
        self.indexes: dict[Any, dict[str, str]] = {}
        self.names: dict[tuple[str, str], str] = {}  # (name as given, $SOLKIT_SPEC_PATH) -> file, for the fast path

    def clear(self) -> None:
        self.files.clear()
        self.indexes.clear()
        self.names.clear()


_CACHE = _Cache()


def clear_cache() -> None:
    """Forget every parsed spec, name index and figure derived from a spec (the next call reads the files again)."""
    for _, gpu, _ in _CACHE.files.values():
        gpu.memo.clear()  # a GPU object someone still holds derives its peaks and calibration afresh
    _CACHE.clear()


def _load(path: str) -> tuple["GPU", frozenset[str]]:
    """(GPU, its lower-case names) of an absolute path: one stat, a parse only if the file changed."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec file ({exc.strerror or exc})") from None
    key = (st.st_ino, st.st_ctime_ns, st.st_size)
    hit = _CACHE.files.get(path)
    if hit is not None and hit[0] == key:
        return hit[1], hit[2]
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec file ({exc.strerror or exc})") from None
    gpu = _parse(path, raw)
    names = frozenset(n.lower() for n in (gpu.name, *gpu.aliases))
    _CACHE.files[path] = (key, gpu, names)
    return gpu, names


def load_spec_file(path: Any) -> "GPU":
    """Load and validate one spec file; any problem raises ``SpecError`` naming the file and field."""
    p = os.path.abspath(os.fspath(path))
    if not os.path.isfile(p):
        raise SpecError(f"{p}: no such spec file")
    return _load(p)[0]


def _build_index(dirs: tuple[Path, ...]) -> dict[str, str]:
    """Every canonical name and alias (lower case) -> its file; earlier folders win."""
    index: dict[str, str] = {}
    for d in reversed(dirs):
        for f in sorted(d.glob("*.yaml")):
            path = os.path.abspath(f)
            gpu, names = _load(path)
            if gpu.name != f.stem:
                raise SpecError(f"{path}: field 'name' is {gpu.name!r} but the file is named {f.stem!r}.yaml")
            index.update(dict.fromkeys(names, path))
    return index


def _index(extra: Any, refresh: bool) -> dict[str, str]:
    """The name index of the folders ``extra`` and $SOLKIT_SPEC_PATH name (cached; ``refresh`` rebuilds it)."""
    if extra is None:
        key: Any = None
    elif isinstance(extra, (str, os.PathLike)):
        key = os.fspath(extra)
    elif isinstance(extra, (list, tuple)) and all(isinstance(p, (str, os.PathLike)) for p in extra):
        key = tuple(os.fspath(p) for p in extra)
    else:
        key = spec_dirs(extra)  # raises the type error
    key = (key, os.environ.get(SPEC_PATH_ENV, ""))
    index = None if refresh else _CACHE.indexes.get(key)
    if index is None:
        index = _CACHE.indexes[key] = _build_index(spec_dirs(extra))
        _CACHE.names.clear()  # the names resolve afresh through the new index
    return index


def list_gpus(spec_path: Any = None) -> list[str]:
    """Canonical names of the available specs (shipped, $SOLKIT_SPEC_PATH, ``spec_path``), sorted."""
    return sorted({Path(p).stem for p in _index(spec_path, refresh=True).values()})


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


def _load_gpu(name: Any, spec_path: Any) -> "GPU":
    schema = sys.modules.get(_SCHEMA)
    if schema is not None and isinstance(name, schema.GPU):
        return name
    if isinstance(name, os.PathLike) or (isinstance(name, str) and name.endswith((".yaml", ".yml"))):
        return load_spec_file(name)
    if not isinstance(name, str):
        raise ArgumentTypeError(f"gpu name must be a string (a GPU name, alias or path to a .yaml file) or a GPU, got {name!r}")
    key = name.strip().lower()
    path = _index(spec_path, refresh=False).get(key)
    if path is not None:
        try:
            gpu, names = _load(path)
        except SpecError:  # removed since the index was built: read the folders again
            names = frozenset()
        if key in names:
            return gpu
    # a miss, a removed file, or an edited alias: read the folders again before giving up
    index = _index(spec_path, refresh=True)
    if key not in index:
        names_ = sorted({Path(p).stem for p in index.values()})
        aliases = sorted(k for k, p in index.items() if k != Path(p).stem)
        raise UnknownGPUError(
            f"gpu {name!r} is not a known GPU; known names: {', '.join(names_)}; aliases: {', '.join(aliases)}"
        )
    return _load(index[key])[0]


def as_gpu(gpu: Any) -> "GPU":
    """A GPU object from a GPU, a name, an alias or a path."""
    if type(gpu) is str:
        return load_gpu(gpu)
    schema = sys.modules.get(_SCHEMA)
    if schema is not None and isinstance(gpu, schema.GPU):
        return gpu
    if not isinstance(gpu, (str, os.PathLike)):
        raise ArgumentTypeError(f"gpu must be a GPU name, alias, GPU object or path to a .yaml file, got {gpu!r}")
    return load_gpu(gpu)
