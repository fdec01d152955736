"""Speed of solkit's core, as figures (not a timed test): CPU time, best of several rounds, one process.

    python benchmarks/speed.py            # prints one line per figure and whether it meets its target

Targets (issue 9), each measured here and printed with its ratio to the target:
- ``import solkit`` at most 1.5x the import of its dependencies (numpy, pydantic, yaml), each in a
  fresh interpreter, best of 7;
- a scalar ``sk.roofline(ops.matmul(m, n, k), gpu).t_sol`` at most 20 us per call, with a GPU object
  and with the name "h200"; a scalar ``sk.predict(...).seconds`` at most 50 us;
- one million shapes (``m = 1 .. 1e6``) at most 50 ms for roofline and 150 ms for predict;
- a model of 80 layers costs no more than one layer (repeated layers are held once with a count).
Times are process CPU time (``time.process_time``), best of ROUNDS rounds, because the machine is
shared and noisy; the ratios within one run are what to compare.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 7


def best_cpu(fn: Callable[[], object], calls: int, rounds: int = ROUNDS) -> float:
    """Seconds of CPU time per call, best of ``rounds`` rounds of ``calls`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - start) / calls)
    return best


def import_seconds(statement: str, rounds: int = ROUNDS) -> float:
    """Wall seconds of ``statement`` in a fresh interpreter (its own measurement), best of ``rounds``."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                    env=env).stdout) for _ in range(rounds))


def report(label: str, value: float, target: float, unit: str, scale: float) -> bool:
    """Print one figure against its target; True if it meets it."""
    ok = value <= target
    print(f"{label:<52} {value * scale:9.2f} {unit:<3} target {target * scale:8.2f} {unit:<3} "
          f"({value / target:5.2f} of target) {'ok' if ok else 'MISSED'}")
    return ok


def main() -> int:
    import solkit as sk
    from solkit import models, ops

    gpu = sk.load_gpu("h200")
    results = []
    deps = import_seconds("import numpy, pydantic, yaml")
    own = import_seconds("import solkit")
    print(f"import numpy, pydantic, yaml: {deps * 1e3:.1f} ms; import solkit: {own * 1e3:.1f} ms")
    results.append(report("import solkit / import of its dependencies", own / deps, 1.5, "x", 1.0))

    results.append(report("scalar roofline, GPU object", best_cpu(
        lambda: sk.roofline(ops.matmul(4096, 4096, 4096), gpu).t_sol, 5000), 20e-6, "us", 1e6))
    results.append(report("scalar roofline, GPU name 'h200'", best_cpu(
        lambda: sk.roofline(ops.matmul(4096, 4096, 4096), "h200").t_sol, 5000), 20e-6, "us", 1e6))
    results.append(report("scalar predict, GPU object", best_cpu(
        lambda: sk.predict(ops.matmul(4096, 4096, 4096), gpu).seconds, 2000), 50e-6, "us", 1e6))

    m = np.arange(1, 1_000_001, dtype=np.float64)
    results.append(report("1e6 shapes: ops.matmul + roofline", best_cpu(
        lambda: sk.roofline(ops.matmul(m, 4096, 4096), gpu).t_sol, 1), 50e-3, "ms", 1e3))
    results.append(report("1e6 shapes: ops.matmul + predict", best_cpu(
        lambda: sk.predict(ops.matmul(m, 4096, 4096), gpu, warn=False).seconds, 1), 150e-3, "ms", 1e3))

    shape = dict(vocab=128256, batch=1, seq=2048, d_model=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336)
    one, eighty = models.transformer(1, **shape), models.transformer(80, **shape)
    t1 = best_cpu(lambda: sk.predict(one, gpu).seconds, 200)
    t80 = best_cpu(lambda: sk.predict(eighty, gpu).seconds, 200)
    print(f"predict of a 1-layer model {t1 * 1e6:.1f} us, of an 80-layer model {t80 * 1e6:.1f} us")
    results.append(report("80-layer predict / 1-layer predict", t80 / t1, 1.15, "x", 1.0))
    t1 = best_cpu(lambda: models.training_step(models.transformer(1, **shape)), 50)
    t80 = best_cpu(lambda: models.training_step(models.transformer(80, **shape)), 50)
    results.append(report("80-layer build + training step / 1-layer", t80 / t1, 1.15, "x", 1.0))
    print(f"{sum(results)} of {len(results)} targets met")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
