"""``host_probe()``: how fast this machine's CPU issues a small CUDA launch, for ``predict(host_probe_us=)``.

The same probe ``benchmarks/programs/steps.py`` records before every measured step (``probe_us``): on the current CUDA
device, 100 untimed ``torch.add(a, b, out=c)`` on 1,024 fp32 elements, then 5 repeats of 2,000 timed ones
(``time.perf_counter`` around the loop, no synchronization inside it); the median over the repeats of the seconds per
launch, in µs. The spec's ``measured.host_probe_us`` is the median probe of the steps the host parameters were fitted
on (5.67 µs on the H200 machine); a machine, or a moment, whose probe reads 8 µs issues an eager program's launches
about 8 / 5.67 = 1.41x slower. Run it in the process you predict for, before any ``torch.profiler`` session (one leaves
every later launch ~1.5x slower, ``data/h200_host_noise.jsonl``), and close to the program you time: a shared host's
speed drifts over seconds.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from .._validate import checked_call, whole
from ..errors import ArgumentTypeError, MeasurementError, OptionError
from .._optional import require_torch

__all__ = ["host_probe", "PROBE_ELEMENTS", "PROBE_WARMUP", "MAX_PROBE_LAUNCHES"]

#: the probe's tensors (fp32) and untimed launches first
PROBE_ELEMENTS = 1024
PROBE_WARMUP = 100
#: the most timed launches one probe makes (launches x repeats): about a minute at 6 us each
MAX_PROBE_LAUNCHES = 10**7


@checked_call
def host_probe(launches: Any = 2000, repeats: Any = 5) -> float:
    """Median over ``repeats`` of the host µs per launch of ``launches`` small ``torch.add`` calls on the current GPU."""
    n, rounds = whole("launches", launches, ArgumentTypeError), whole("repeats", repeats, ArgumentTypeError)
    if n * rounds > MAX_PROBE_LAUNCHES:
        raise OptionError(f"launches x repeats must be at most {MAX_PROBE_LAUNCHES:,} (about a minute of launches), got "
                          f"{n:,} x {rounds:,}")
    torch = require_torch("solkit.host_probe")
    if not torch.cuda.is_available():
        raise MeasurementError("host_probe needs a CUDA GPU: torch.cuda.is_available() is False")
    a, b, c = (torch.ones(PROBE_ELEMENTS, device="cuda") for _ in range(3))
    for _ in range(PROBE_WARMUP):
        torch.add(a, b, out=c)
    torch.cuda.synchronize()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            torch.add(a, b, out=c)
        per.append((time.perf_counter() - t0) / n)
        torch.cuda.synchronize()
    return statistics.median(per) * 1e6
