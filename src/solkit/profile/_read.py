"""Profile files to text, format detection, and the record every reader produces.

``read_text`` opens a path (a regular file, plain or gzip, told apart by the magic bytes, not the extension) under
size caps; ``detect_format`` tells a torch.profiler Chrome trace from an Nsight Compute CSV by content; ``KernelRecord`` is
one GPU activity (a kernel, a memcpy or a memset) as ``chrome.read_chrome`` and ``ncu.read_ncu`` return it.
"""

from __future__ import annotations

import csv
import gzip
import os
import re
import zlib
from typing import Any, Literal, NamedTuple

from .._files import open_regular, read_capped
from ..errors import ArgumentTypeError, MeasurementError

__all__ = [
    "KernelRecord", "read_text", "detect_format", "Format", "MAX_FILE_BYTES", "MAX_TEXT_BYTES", "GZIP_MAGIC",
]

MAX_FILE_BYTES = 256 * 2**20  # a gzip file on disk: 256 MiB
MAX_TEXT_BYTES = 2**30  # the text once decompressed (or a plain file): 1 GiB
GZIP_MAGIC = b"\x1f\x8b"

Format = Literal["chrome", "ncu"]


class KernelRecord(NamedTuple):
    """One GPU activity: times in seconds, bytes in bytes; fields a format lacks are None or empty.

    ``kind`` is "kernel", "memcpy" or "memset". ``start`` is absolute as in the file (Chrome: the trace's ``ts``
    clock; ncu: the cumulative sum of the durations before it, since ncu serializes kernels). ``op`` is the name of
    the innermost host op that launched it (an ATen op such as "aten::addmm", or a ``record_function`` annotation)
    and ``op_id`` that op's ``External id`` (the kernels of one op call share it); ``shapes``, ``dtypes``,
    ``concrete`` and ``strides`` are that op's "Input Dims", "Input type", "Concrete Inputs" ("" for a tensor) and
    "Input Strides", lists made tuples. ``parents`` are the enclosing host ops, outer to inner (the op itself not
    included); ``backward`` says it ran under the autograd engine. ``link`` says how the op was found:
    "external_id" (the kernel's own), "launch_external_id" (its launch call's), "launch_enclosing" (the innermost
    op enclosing the launch call in time), or None. ``measured_bytes`` = ``bytes_read`` + ``bytes_written``
    (DRAM, Nsight Compute only); ``copy_bytes`` is the size of a memcpy/memset (Chrome). ``nvtx`` is the NVTX
    push/pop range stack, outer to inner (ncu). A NamedTuple, immutable, for speed: a frozen dataclass takes
    about four times as long to build, which a trace of a million kernels feels; use ``_replace`` to derive one.
    """

    name: str
    start: float
    seconds: float
    kind: str = "kernel"
    stream: int = 0
    device: int = 0
    correlation: int | None = None
    op: str | None = None
    op_id: int | None = None
    shapes: tuple[Any, ...] = ()
    dtypes: tuple[str, ...] = ()
    concrete: tuple[str, ...] = ()
    strides: tuple[Any, ...] = ()
    parents: tuple[str, ...] = ()
    backward: bool = False
    link: str | None = None
    thread: int | None = None
    grid: tuple[int, ...] = ()
    block: tuple[int, ...] = ()
    copy_bytes: int | None = None
    measured_bytes: float | None = None
    bytes_read: float | None = None
    bytes_written: float | None = None
    nvtx: tuple[str, ...] = ()
    ncu_sol: tuple[tuple[str, float], ...] = ()  # ncu's own SOL figures, (label, % of peak): ("SM", 90.7), ("memory", 70.1)

    @property
    def end(self) -> float:
        """``start + seconds``."""
        return self.start + self.seconds


def _fspath(path: Any) -> str:
    """``path`` as a str; anything but a str or a str PathLike is an ArgumentTypeError."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise ArgumentTypeError(
            f"path must be a str or os.PathLike naming a profile file, got {type(path).__name__} {path!r}"
        )
    text = os.fspath(path)
    if not isinstance(text, str):
        raise ArgumentTypeError(f"path must be a str or os.PathLike of str, got a bytes path {text!r}")
    if not text:
        raise MeasurementError("path must name a profile file, got an empty string")
    return text


def _size_mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def read_text(
    path: Any, *, max_file_bytes: int = MAX_FILE_BYTES, max_text_bytes: int = MAX_TEXT_BYTES
) -> tuple[str, str]:
    """(text, path as str) of a profile file, gunzipped when its first bytes are the gzip magic; size-capped.

    A gzip file over ``max_file_bytes`` on disk, or whose text grows past ``max_text_bytes`` (checked while
    decompressing, before it is all in memory), is refused; so is a plain file over ``max_text_bytes``. Every
    failure is a MeasurementError naming the path (a missing file, a directory, a named pipe or a device, no
    permission, bad gzip, not UTF-8, empty).
    """
    p = _fspath(path)
    try:
        f, p, size = open_regular(p, "profile", MeasurementError)  # a regular file only: a pipe would block here
        with f:
            head = f.read(2)
            f.seek(0)
            if head == GZIP_MAGIC:
                if size > max_file_bytes:
                    raise MeasurementError(
                        f"profile {p!r} is {_size_mib(size)} of gzip, over the {_size_mib(max_file_bytes)} limit"
                    )
                data = _read_capped(gzip.GzipFile(fileobj=f, mode="rb"), p, max_text_bytes, "decompresses to")
            else:
                if size > max_text_bytes:
                    raise MeasurementError(
                        f"profile {p!r} is {_size_mib(size)}, over the {_size_mib(max_text_bytes)} limit"
                    )
                data = _read_capped(f, p, max_text_bytes, "holds")
    except MeasurementError:
        raise
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise MeasurementError(f"profile {p!r} is not a readable gzip file ({exc or 'truncated'})") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise MeasurementError(f"cannot read profile {p!r}: {reason}") from None
    if _BLANK.fullmatch(data):
        raise MeasurementError(f"profile {p!r} is empty")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MeasurementError(
            f"profile {p!r} is not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r}); "
            "expected a Chrome trace (JSON) or an ncu CSV, plain or gzip"
        ) from None
    return text, p


def _read_capped(f: Any, path: str, cap: int, verb: str) -> bytes:
    """All bytes of ``f``, read in chunks; more than ``cap`` bytes is a MeasurementError."""
    data = read_capped(f, cap)
    if data is None:
        raise MeasurementError(f"profile {path!r} {verb} more than {_size_mib(cap)}, the limit; refused")
    return data


_SPACE = re.compile(r"\s*")
_BLANK = re.compile(rb"\s*")
NCU_REQUIRED = ("ID", "Kernel Name")


def first_csv_line(text: str, i: int = 0) -> tuple[str, int]:
    """The first line at or after ``i`` that is not one of ncu's own messages (``==PROF==``...), and where it ends."""
    while i < len(text):
        j = text.find("\n", i)
        j = len(text) if j < 0 else j + 1
        line = text[i:j]
        if not line.startswith("==") and line.strip():
            return line.rstrip("\r\n"), j
        i = j
    return "", len(text)


def detect_format(text: str, path: str | None = None) -> Format:
    """"chrome" (a JSON object with traceEvents, or a JSON list of events) or "ncu" (a CSV with ID and Kernel Name)."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"text must be a str, got {type(text).__name__}")
    where = f"profile {path!r}" if path is not None else "profile text"
    start = _SPACE.match(text)
    i = start.end() if start else 0
    first = text[i:i + 1]
    if first == "[":
        return "chrome"
    if first == "{":
        if '"traceEvents"' in text:
            return "chrome"
        raise MeasurementError(
            f"{where} is a JSON object without \"traceEvents\": not a torch.profiler Chrome trace; "
            f"it starts with {text[i:i + 80]!r}"
        )
    header_line, _ = first_csv_line(text, i)
    try:
        header = next(csv.reader([header_line]), [])
    except csv.Error:
        header = []
    if all(col in header for col in NCU_REQUIRED):
        return "ncu"
    raise MeasurementError(
        f"{where} is neither a torch.profiler Chrome trace (JSON with \"traceEvents\") nor an Nsight Compute CSV "
        f"(ncu --csv --page raw: a header with \"ID\" and \"Kernel Name\"); it starts with {text[i:i + 80]!r}"
    )
