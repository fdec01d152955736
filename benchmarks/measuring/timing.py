"""The timing harness: do_bench or its fallbacks, L2 flushed before every call, percentiles; the kernel census."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .builders import DEVICE, Prepared

torch: Any = None  # set by runner.load_torch()

#: how every case is timed, for meta.method (WARMUP and REP are replaced by the run's values)
METHOD = (
    "triton.testing.do_bench(fn, warmup=WARMUP ms, rep=REP ms, return_mode='all') per case: CUDA events "
    "around each call, L2 flushed (a 256 MB buffer zeroed) before every timed call; seconds = median of "
    "the per-call times, q20/q80 their 20th/80th percentiles (linear interpolation). rep is raised to "
    "about 10 calls' worth (at most 2 s) for kernels slower than REP/10 ms. Inputs: random normal "
    "(int8 uniform in [-128,127], ids uniform), fresh for every case, never zeros. torch.inference_mode(); "
    "torch.backends.cudnn.benchmark=True; one untimed call (or the spot check) before timing."
)


class Bencher:
    """Times a callable with triton.testing.do_bench (or an identical local loop if triton fails)."""

    def __init__(self, warmup_ms: float, rep_ms: float) -> None:
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        self.mode = "unprobed"  # triton-all | triton-quantiles | local
        self.probe_error: str | None = None
        self._flush_buf: Any = None

    def probe(self) -> None:
        """Pick the first timing path that works on a tiny kernel."""
        x = torch.ones(1, device=DEVICE)
        tiny = lambda: x.add_(1.0)  # noqa: E731
        try:
            from triton.testing import do_bench

            r = do_bench(tiny, warmup=1, rep=2, return_mode="all")
            if isinstance(r, list) and r:
                self.mode = "triton-all"
                return
            raise TypeError(f"return_mode='all' gave {type(r).__name__}")
        except Exception as exc:  # noqa: BLE001 - any failure means: try the next path
            self.probe_error = f"{type(exc).__name__}: {exc}"[:300]
        try:
            from triton.testing import do_bench

            r = do_bench(tiny, warmup=1, rep=2, quantiles=[0.5, 0.2, 0.8])
            if isinstance(r, (list, tuple)) and len(r) == 3:
                self.mode = "triton-quantiles"
                return
        except Exception as exc:  # noqa: BLE001
            self.probe_error = (self.probe_error or "") + f" | quantiles: {type(exc).__name__}: {exc}"[:300]
        self.mode = "local"

    def flush_l2(self) -> None:
        """Zero a 256 MB buffer, as do_bench does before each timed call."""
        if self._flush_buf is None:
            self._flush_buf = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device=DEVICE)
        self._flush_buf.zero_()

    def _local_times(self, fn: Callable[[], Any], warmup_ms: float, rep_ms: float) -> list[float]:
        """triton.testing.do_bench's loop, in plain torch: list of per-call milliseconds."""
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            self.flush_l2()
            fn()
        end.record()
        torch.cuda.synchronize()
        est = max(start.elapsed_time(end) / 5, 1e-3)
        n_warmup, n_rep = max(1, int(warmup_ms / est)), max(1, int(rep_ms / est))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        for _ in range(n_warmup):
            fn()
        for i in range(n_rep):
            self.flush_l2()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]

    def estimate_ms(self, fn: Callable[[], Any]) -> float:
        """One event-timed call (after the caller's warm-up)."""
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def __call__(self, fn: Callable[[], Any]) -> dict[str, Any]:
        """Median, 20/80% quantiles (seconds) and sample count of fn's device time."""
        import numpy as np

        est = self.estimate_ms(fn)
        rep = max(self.rep_ms, min(10.0 * est, 2000.0))
        out: dict[str, Any] = {"rep_ms": rep, "n_reps": None, "mean_s": None, "min_s": None}
        if self.mode == "triton-quantiles":
            from triton.testing import do_bench

            med, q20, q80 = do_bench(fn, warmup=self.warmup_ms, rep=rep, quantiles=[0.5, 0.2, 0.8])
            out.update(seconds=med / 1e3, q20=q20 / 1e3, q80=q80 / 1e3)
            return out
        if self.mode == "triton-all":
            from triton.testing import do_bench

            times = list(do_bench(fn, warmup=self.warmup_ms, rep=rep, return_mode="all"))
        else:
            times = self._local_times(fn, self.warmup_ms, rep)
        arr = np.asarray(times, dtype=np.float64) / 1e3
        out.update(seconds=float(np.median(arr)), q20=float(np.quantile(arr, 0.2)), q80=float(np.quantile(arr, 0.8)),
                   n_reps=int(arr.size), mean_s=float(arr.mean()), min_s=float(arr.min()))
        return out

# --------------------------------------------------------------------------------------------
# Kernel census
# --------------------------------------------------------------------------------------------


def kernel_census(prep: Prepared, bencher: Bencher) -> dict[str, Any]:
    """Profile one call (cold L2): the device kernels it launched, in order of first launch, with times."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    prep.fn()
    bencher.flush_l2()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        prep.fn()
        torch.cuda.synchronize()
    found: dict[str, list[float]] = {}
    for evt in prof.events():
        if evt.device_type != DeviceType.CUDA:
            continue
        name = evt.name if len(evt.name) <= 200 else evt.name[:197] + "..."
        slot = found.setdefault(name, [0, 0.0])
        slot[0] += 1
        slot[1] += float(evt.time_range.elapsed_us())
    kernels = [{"name": n, "count": int(v[0]), "us": round(v[1], 3)} for n, v in found.items()]
    return {"kernels": kernels, "n_kernels": sum(k["count"] for k in kernels)}

