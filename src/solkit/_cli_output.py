"""The ``solkit`` command's streams: a stdout whose refused writes are told apart from solkit's errors, one line on
stderr, a stdout quieted after its reader left."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


class OutputError(Exception):
    """stdout refused a write (a full disk, /dev/full, an I/O error): not a solkit bug; ``cause`` is the OSError."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(cause.strerror or str(cause))
        self.cause = cause


class GuardedStdout:
    """sys.stdout for the length of one command: a failed write or flush raises ``OutputError`` (a closed pipe stays a
    BrokenPipeError), so that it is told apart from every other OSError."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def say(line: str) -> None:
    """One line on stderr; a stderr that cannot be written is let be (there is nowhere else to say it)."""
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError, AttributeError):  # pragma: no cover - stderr closed or full
        pass


def quiet_stdout() -> None:
    """Point stdout at /dev/null so Python's exit flush does not complain of the closed pipe."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover - stdout is not a file
        pass


def emit(obj: Any) -> None:
    from ._display import plain

    print(json.dumps(plain(obj), indent=2, default=str))
