"""Reading a file a user names: regular files only, under a size cap, UTF-8, JSON nested at most so deep.

Every entry point that reads a path it was given (a Hugging Face config, a profile, a measurement or step file)
opens it here, so each refuses the same things the same way, quickly, with the caller's solkit error naming the
file: a path that is empty or holds a NUL byte, a missing file, a folder, anything that is not a regular file
(a named pipe would block ``open`` until a writer came; a device such as /dev/zero never ends), a file over the
caller's cap (checked on the size before reading, and again while reading, for a file that grows), bytes that
are not UTF-8 and JSON nested deeper than ``MAX_JSON_DEPTH``. ``stat`` before opening, then the file opened
without blocking and checked again on its descriptor, so a file swapped for a pipe in between is still refused;
the spec loader (``hardware.loader.read_spec_bytes``) opens its files here too.
"""

from __future__ import annotations

import json
import os
import stat
from typing import IO, Any, Optional

from .errors import ArgumentTypeError, SolkitError

__all__ = ["MAX_JSON_DEPTH", "file_path", "open_regular", "read_bytes", "utf8", "parse_json", "read_json"]

#: the deepest JSON nesting a file may have (the top object or list is level 1); a config.json nests 3 or 4 deep
MAX_JSON_DEPTH = 64
_CHUNK = 16 * 2**20
#: open flags that keep ``open`` from blocking on a pipe (or taking a terminal); 0 where the OS lacks one
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


def file_path(path: Any, what: str, error: type[SolkitError]) -> str:
    """``path`` (a str or a str PathLike) as a str; a bytes path or another type is an ArgumentTypeError, an empty
    path or one holding a NUL byte ``error``."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise ArgumentTypeError(f"{what} path must be a str or os.PathLike, got {type(path).__name__} {path!r}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise ArgumentTypeError(f"{what} path must be a str or os.PathLike of str, got the bytes path {text!r}")
    if not text:
        raise error(f"{what} path must name a file, got an empty string")
    if "\x00" in text:
        raise error(f"{what} path {_short(text)} holds a NUL byte, which no file name can")
    return text


def _short(path: str) -> str:
    text = repr(path)
    return text if len(text) <= 200 else text[:120] + "..." + text[-60:]


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _refuse_kind(st: os.stat_result, path: str, what: str, error: type[SolkitError]) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{what} {_short(path)} is a folder (a directory), not a file")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{what} {_short(path)} is not a regular file (a named pipe, a device or a socket); solkit reads "
                    "regular files only")


def open_regular(path: Any, what: str, error: type[SolkitError]) -> tuple[IO[bytes], str, int]:
    """(the open binary file, its path as a str, its size) of a regular file; anything else ``error`` naming it."""
    p = file_path(path, what, error)
    try:
        _refuse_kind(os.stat(p), p, what, error)
        fd = os.open(p, _FLAGS)
    except FileNotFoundError:
        raise error(f"cannot read {what} {_short(p)}: No such file or directory (it does not exist)") from None
    except OSError as exc:
        raise error(f"cannot read {what} {_short(p)}: {_why(exc)}") from None
    try:
        st = os.fstat(fd)
        _refuse_kind(st, p, what, error)  # swapped for a pipe since the stat
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), p, st.st_size


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def read_bytes(path: Any, what: str, limit: int, error: type[SolkitError]) -> tuple[bytes, str]:
    """(every byte, the path as a str) of a regular file of at most ``limit`` bytes; else ``error`` naming it."""
    f, p, size = open_regular(path, what, error)
    too_big = f"{what} {_short(p)} is over the {_mib(limit)} limit of a {what}"
    with f:
        if size > limit:
            raise error(f"{too_big}: {size:,} bytes")
        try:
            data = read_capped(f, limit)
        except OSError as exc:
            raise error(f"cannot read {what} {_short(p)}: {_why(exc)}") from None
        if data is None:
            raise error(f"{too_big}: it grew past it while being read")
    return data, p


def read_capped(f: Any, limit: int) -> Optional[bytes]:
    """Every byte of the binary stream ``f`` read in chunks, or None once it holds more than ``limit`` (never all read)."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = f.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            return None
        chunks.append(chunk)


def utf8(raw: bytes, path: str, what: str, error: type[SolkitError]) -> str:
    """The UTF-8 text of a file's bytes (a leading BOM dropped); other bytes ``error`` naming the file."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {_short(path)} is not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") \
            from None


def parse_json(text: str, path: str, what: str, error: type[SolkitError], max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value of a file's text; invalid JSON, an empty file or nesting deeper than ``max_depth`` ``error``.

    Python's parser recurses once a level: a file nested thousands deep is a RecursionError there, caught here;
    a nesting it can parse is then measured (iteratively) unless the text holds too few brackets to reach the limit.
    """
    if not text.strip():
        raise error(f"{what} {_short(path)} is empty; expected a JSON document")
    deep = f"{what} {_short(path)} nests JSON deeper than {max_depth} levels; refused"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{what} {_short(path)} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") \
            from None
    except RecursionError:
        raise error(deep) from None
    except ValueError as exc:  # an integer of more digits than int() takes, and the like
        raise error(f"{what} {_short(path)} is not valid JSON: {exc}") from None
    if text.count("[") + text.count("{") > max_depth and _depth(value) > max_depth:
        raise error(deep)
    return value


def _depth(value: Any) -> int:
    """The nesting depth of a parsed JSON value (a scalar 0, ``[]`` 1), walked without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def read_json(path: Any, what: str, limit: int, error: type[SolkitError], max_depth: int = MAX_JSON_DEPTH) \
        -> tuple[Any, str]:
    """(the JSON value, the path as a str) of a regular UTF-8 file of at most ``limit`` bytes (``read_bytes``,
    ``utf8``, ``parse_json``)."""
    raw, p = read_bytes(path, what, limit, error)
    return parse_json(utf8(raw, p, what, error), p, what, error, max_depth), p
