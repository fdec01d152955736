"""``CaptureError``: a program capture could not go on (the lead moves it into ``solkit.errors``)."""

from __future__ import annotations

from ..errors import SolkitError

__all__ = ["CaptureError"]


class CaptureError(SolkitError, RuntimeError):
    """A captured program needs what fake tensors cannot give (a value read on the host, a data-dependent shape) or
    failed inside torch; the message names the ATen op, the module path and what would get past it."""
