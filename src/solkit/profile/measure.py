"""``measure(fn, *args, gpu=...)``: run ``fn`` under torch.profiler on the current GPU and return its ``Profile``.

Needs the optional torch extra (``pip install 'solkit[torch]'`` or any CUDA build of PyTorch).
``fn(*args, **kwargs)`` runs ``warmup`` times unprofiled (autotuning, lazy initialisation and
caches stay out of the trace), then once under ``torch.profiler.profile(activities=[CPU, CUDA],
record_shapes=True)`` between two ``torch.cuda.synchronize()``; the Chrome trace is written to a
temporary file (or ``trace=`` to keep it) and read back with ``load_profile``.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Any, Callable, Optional

from .._optional import require_torch
from .._validate import dim
from ..errors import ArgumentTypeError, MeasurementError
from .profile import Profile, load_profile

__all__ = ["measure"]


def measure(fn: Callable[..., Any], *args: Any, gpu: Any, warmup: int = 3, trace: Optional[str] = None,
            **kwargs: Any) -> Profile:
    """Profile one call of ``fn(*args, **kwargs)`` on the current CUDA device; ``gpu`` names its spec (e.g. "h200")."""
    if not callable(fn):
        raise ArgumentTypeError(f"fn must be callable, got {fn!r}")
    n_warmup = int(dim("warmup", warmup, minimum=0))
    torch = require_torch()
    if not torch.cuda.is_available():
        raise MeasurementError("solkit.measure needs a CUDA GPU: torch.cuda.is_available() is False")
    from torch.profiler import ProfilerActivity, profile  # type: ignore[import-not-found]

    for _ in range(n_warmup):
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        fn(*args, **kwargs)
        torch.cuda.synchronize()
    if trace is not None:
        prof.export_chrome_trace(os.fspath(trace))
        return load_profile(trace, gpu)
    with tempfile.TemporaryDirectory(prefix="solkit-measure-") as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        measured = load_profile(path, gpu)
    return dataclasses.replace(measured, path=f"measure({getattr(fn, '__name__', 'fn')})")
