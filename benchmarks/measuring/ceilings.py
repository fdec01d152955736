"""The ceilings: copy and read bandwidth, matmul rate per precision, launch floor (same harness and builders)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from .builders import BUILDERS, DEVICE
from .cases import Case, mm_case
from .output import short_error
from .timing import Bencher

torch: Any = None  # set by runner.load_torch()


def _sum_of(x: Any) -> Callable[[], Any]:
    """A callable that reduces x to a scalar (reads every byte of x once)."""
    return lambda: x.sum()


def warm_gpu(seconds: float) -> None:
    """Dense bf16 matmuls for a moment so clocks are up before the first ceiling."""
    a = torch.randn(8192, 8192, device=DEVICE, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEVICE, dtype=torch.bfloat16)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(10):
            torch.matmul(a, b)
        torch.cuda.synchronize()
    del a, b


class Ceilings:
    """Measures the ceilings into the run's ceilings dict, logging each result."""

    def __init__(self, bencher: Bencher, ceilings: dict[str, Any], log: Callable[[str], None],
                 recover: Callable[[], None]) -> None:
        self.bencher = bencher
        self.ceilings = ceilings  # the runner's dict, filled in place so that every save() has what is done
        self.log = log
        self._recover = recover  # after a failure: free memory, note a sticky CUDA error

    def steps(self, quick: bool) -> list[tuple[str, Callable[[], None]]]:
        """The measurements in order, named; --quick sizes them down."""
        return [
            ("copy", lambda: self.copy((2 ** 27,) if quick else (2 ** 29, 2 ** 31))),
            ("read", lambda: self.read((2 ** 26,) if quick else (2 ** 28, 2 ** 30))),
            ("matmul", lambda: self.matmul(quick)),
            ("launch", self.launch),
        ]

    def _timed(self, fn: Callable[[], Any]) -> dict[str, Any]:
        """Warm once, then bench."""
        fn()
        torch.cuda.synchronize()
        return self.bencher(fn)

    def copy(self, sizes: Sequence[int]) -> None:
        """dst.copy_(src) in bf16 (the copy cases' builder); bandwidth counts bytes read + written."""
        runs = []
        for n in sizes:
            case = Case("elementwise", "copy", {"elements": n, "dtype": "bf16"}, "copy", "dst.copy_(src)")
            st = self._timed(BUILDERS["copy"](case).fn)
            moved = 2 * n * 2
            runs.append({"elements": n, "dtype": "bf16", "bytes_per_tensor": 2 * n, "bytes_moved": moved,
                         **st, "bytes_per_s": moved / st["seconds"]})
            self.log(f"ceiling copy  {2 * n / 1e9:6.2f} GB/tensor: {st['seconds'] * 1e3:8.3f} ms "
                     f"{moved / st['seconds'] / 1e12:6.3f} TB/s (read+write)")
            torch.cuda.empty_cache()
        best = max(runs, key=lambda r: r["bytes_per_s"])
        self.ceilings.update(copy_bandwidth_bytes_per_s=best["bytes_per_s"],
                             copy_bandwidth_bytes_moved=best["bytes_moved"],
                             copy_impl="dst.copy_(src), bf16, bytes read + written", copy_runs=runs)

    def read(self, sizes: Sequence[int]) -> None:
        """x.sum() over fp32; bandwidth counts bytes read."""
        runs = []
        for n in sizes:
            st = self._timed(_sum_of(torch.randn(n, device=DEVICE, dtype=torch.float32)))
            read = 4 * n
            runs.append({"elements": n, "dtype": "fp32", "bytes_read": read, **st,
                         "bytes_per_s": read / st["seconds"]})
            self.log(f"ceiling read  {read / 1e9:6.2f} GB: {st['seconds'] * 1e3:8.3f} ms "
                     f"{read / st['seconds'] / 1e12:6.3f} TB/s")
            torch.cuda.empty_cache()
        best = max(runs, key=lambda r: r["bytes_per_s"])
        self.ceilings.update(read_bandwidth_bytes_per_s=best["bytes_per_s"],
                             read_bandwidth_bytes_read=best["bytes_read"],
                             read_impl="x.sum() over fp32 x (one reduction to a scalar), bytes read", read_runs=runs)

    def matmul(self, quick: bool) -> None:
        """Square matmuls per precision through the same builders as the matmul cases."""
        sizes: dict[str, tuple[int, ...]] = {
            "bf16": (8192, 16384), "fp16": (8192, 16384), "fp8_e4m3": (8192, 16384), "int8": (8192, 16384),
            "tf32": (8192,), "fp32": (8192,), "fp64": (8192,),
        }
        runs: list[dict[str, Any]] = []
        best: dict[str, float] = {}
        self.ceilings["matmul_flops_per_s"] = best
        self.ceilings["matmul_runs"] = runs
        for dt, ns in sizes.items():
            for n in ((4096,) if quick else ns):
                case = mm_case(n, n, n, dt)
                try:
                    prep = BUILDERS[case.impl](case)
                    with prep.ctx():
                        st = self._timed(prep.fn)
                    del prep
                except Exception as exc:  # noqa: BLE001
                    runs.append({"dtype": dt, "m": n, "n": n, "k": n, "error": short_error(exc)})
                    self.log(f"ceiling matmul {dt} {n}: FAILED {short_error(exc)}")
                    self._recover()
                    continue
                rate = 2.0 * n ** 3 / st["seconds"]
                runs.append({"dtype": dt, "m": n, "n": n, "k": n, "impl_note": case.impl_note, **st,
                             "flops_per_s": rate})
                best[dt] = max(best.get(dt, 0.0), rate)
                self.log(f"ceiling matmul {dt:8s} {n:5d}^3: {st['seconds'] * 1e3:8.3f} ms {rate / 1e12:7.1f} T(FL)OP/s")
                torch.cuda.empty_cache()

    def launch(self) -> None:
        """A 1-element add: do_bench (one launch), 1000 back-to-back launches, and a 100-launch CUDA graph."""
        a, b = torch.randn(1, device=DEVICE), torch.randn(1, device=DEVICE)
        out = torch.empty_like(a)
        tiny = lambda: torch.add(a, b, out=out)  # noqa: E731
        st = self._timed(tiny)
        # eager loop: the host's launch rate sets the pace
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        loop = []
        for _ in range(5):
            s.record()
            for _ in range(1000):
                tiny()
            e.record()
            e.synchronize()
            loop.append(s.elapsed_time(e) / 1000 / 1e3)
        # graph: 100 launches captured once, replayed
        graph_s: float | None = None
        graph_err: str | None = None
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    tiny()
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(100):
                    torch.add(a, b, out=out)
            g.replay()
            torch.cuda.synchronize()
            gst = self.bencher(g.replay)
            graph_s = gst["seconds"] / 100
        except Exception as exc:  # noqa: BLE001
            graph_err = short_error(exc)
        self.ceilings.update(
            launch_floor_s=st["seconds"], launch_floor_q20_s=st["q20"], launch_floor_q80_s=st["q80"],
            launch_floor_impl="do_bench of torch.add(a, b, out=c) on 1-element fp32 tensors "
                              "(one launch between events)",
            launch_floor_eager_loop_s=statistics.median(loop),
            launch_floor_eager_loop_impl="1000 back-to-back eager launches of the same add, event-timed, "
                                         "/ 1000 (median of 5)",
            launch_floor_graph_s=graph_s,
            launch_floor_graph_impl="CUDA graph of 100 captured adds, do_bench of g.replay() / 100",
        )
        if graph_err:
            self.ceilings["launch_floor_graph_error"] = graph_err
        self.log(f"ceiling launch floor: do_bench {st['seconds'] * 1e6:6.2f} us, eager loop "
                 f"{statistics.median(loop) * 1e6:6.2f} us/launch, graph "
                 f"{'n/a' if graph_s is None else f'{graph_s * 1e6:6.2f}'} us/kernel")
