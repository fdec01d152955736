"""The adversarial cases' shared machinery (issue 10): a case, how it is judged, and a time limit.

A case is a call that must end in exactly one expected way:

- ``expect`` a ``SolkitError`` subclass: the call raises that class, which is also ``builtin``,
  and the message contains every word of ``names`` (the argument, the file, the field, the value);
- ``expect`` a ``SolkitWarning`` subclass: the call returns, having warned that class with a
  message containing ``names`` (an impossible number, flagged);
- ``expect=None``: the call returns and warns nothing (an edge that must simply work).

Anything else is a failure, classified for the census: ``foreign`` (an exception that is not a
SolkitError, or a warning that is not a SolkitWarning, e.g. numpy's RuntimeWarning), ``wrong``
(a solkit error or warning of the wrong class, builtin or wording), ``silent`` (a number
returned where an error or a flag was due) and ``hang`` (over ``seconds``, default 10 s).
Case files (``adversarial_*.py``) each export ``CASES``; ``test_adversarial.py`` runs them all.
"""

from __future__ import annotations

import re
import signal
import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from solkit.errors import SolkitError, SolkitWarning

OUTCOMES = ("handled", "flagged", "works", "foreign", "wrong", "silent", "hang")
BAD_OUTCOMES = ("foreign", "wrong", "silent", "hang")


@dataclass(frozen=True)
class Adv:
    """One adversarial input: the call and how it must end."""

    id: str  # "category: what is tried"; ids are unique
    call: Callable[[], Any]
    expect: Optional[type]  # a SolkitError subclass, a SolkitWarning subclass, or None (must simply work)
    builtin: Optional[type] = None  # errors: the builtin the error must also be
    names: tuple[str, ...] = ()  # texts the message must contain (case-sensitive substrings)
    seconds: float = 10.0  # time limit

    @property
    def category(self) -> str:
        return self.id.split(":", 1)[0]


class _Timeout(BaseException):
    """Raised in the main thread when a case runs past its limit (a BaseException so no handler eats it)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``_Timeout`` after ``seconds`` of wall time (SIGALRM; no limit off the main thread or without it)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _alarm(signum: int, frame: Any) -> None:
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _missing(message: str, names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n not in message]


def judge(case: Adv) -> tuple[str, str]:
    """(outcome, detail) of one case; the outcome is one of ``OUTCOMES``."""
    error: Optional[BaseException] = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with time_limit(case.seconds):
                case.call()
        except _Timeout:
            return "hang", f"still running after {case.seconds:g} s"
        except Exception as exc:  # noqa: BLE001 - a foreign error is exactly what the census looks for
            error = exc
    foreign = [w for w in caught if not issubclass(w.category, SolkitWarning)]
    if foreign:
        w = foreign[0]
        return "foreign", f"warned a non-solkit {w.category.__name__}: {w.message}"
    ours = [w for w in caught if issubclass(w.category, SolkitWarning)]
    expect = case.expect
    if error is not None:
        text = f"{type(error).__name__}: {error}"[:300]
        if not isinstance(error, SolkitError):
            return "foreign", f"raised a non-solkit {type(error).__module__}.{text}"
        if expect is None or not issubclass(expect, SolkitError):
            return "wrong", f"raised {text}"
        problems = []
        if not isinstance(error, expect):
            problems.append(f"is not a {expect.__name__}")
        if case.builtin is not None and not isinstance(error, case.builtin):
            problems.append(f"is not a {case.builtin.__name__}")
        problems += [f"does not name {n!r}" for n in _missing(str(error), case.names)]
        return ("wrong", "; ".join(problems) + f" -- {text}") if problems else ("handled", text)
    if expect is None:
        if ours:
            return "wrong", f"warned {ours[0].category.__name__}: {ours[0].message}"
        return "works", ""
    if issubclass(expect, SolkitError):
        return "silent", "returned without an error" + (f" (warned {ours[0].category.__name__})" if ours else "")
    flagged = [w for w in ours if issubclass(w.category, expect)]
    if not flagged:
        return "silent", "returned without the flag" + (f" (warned {ours[0].category.__name__})" if ours else "")
    text = str(flagged[0].message)
    missing = _missing(text, case.names)
    if missing:
        return "wrong", f"the flag does not name {missing}: {text[:300]}"
    return "flagged", text[:300]


def word(name: str) -> "re.Pattern[str]":
    """``name`` as a whole word."""
    return re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
