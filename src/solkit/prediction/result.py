"""The result objects of ``predict``: a workload's expected time (``Prediction``) and each kernel's (``KernelPrediction``).

A small prediction (at most ``SHORT_KERNELS`` distinct kernels) prints on one line, each kernel's limiter named; a
whole program's reads as a summary in the profile report's shape (``prediction.groups``): the total, what it assumes,
host and GPU time, launches and distinct kernels, the kernel time by limiter, the op groups and the top kernels by
predicted time, the notes. The detail is one call away: ``table()`` (every distinct kernel, largest first),
``to_frame()`` (one row per distinct kernel, in program order), ``kernels`` (the rows themselves).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .._display import fmt_seconds, html_table, plain
from .._num import result
from .._optional import require_pandas
from ..errors import ArgumentTypeError, OptionError
from .groups import GroupRow, KernelRow, group_of, program_rows, text_table
from .host import cpu_bound, scheduled

if TYPE_CHECKING:  # pragma: no cover
    from ..workload import Workload

__all__ = ["KernelPrediction", "Prediction", "SHORT_KERNELS", "SUMMARY_GROUPS", "SUMMARY_KERNELS"]

#: a prediction of at most this many distinct kernels prints on one line, each kernel's limiter named
SHORT_KERNELS = 8
#: the op groups and the kernels a whole program's summary shows (the rest: ``table()``, ``to_frame()``)
SUMMARY_GROUPS = 7
SUMMARY_KERNELS = 5
#: the notes the summary prints in full (the rest are counted; all are in ``notes``)
SUMMARY_NOTES = 2


@dataclass(frozen=True)
class KernelPrediction:
    """One kernel's expected time per launch (its body, without the workload's launch floor), its count and limiter."""

    name: str
    kind: str
    count: int
    seconds: Any
    t_compute: Any
    t_memory: Any
    t_sol: Any
    wave_efficiency: Any
    limiter: Any
    misaligned: Any
    neighbour: Any = 1.0  # the factor the neighbour correction put on its body (1.0: none; prediction.neighbours)


class Prediction:
    """Expected time of a workload on one GPU, per kernel (``kernels``, built on demand), with the calibration it used."""

    __slots__ = ("workload", "gpu", "seconds", "t_sol", "calibrated", "launch_floor", "notes", "kernel_seconds",
                 "host_seconds", "host_syncs", "_rows", "_program")
    _FIELDS = ("workload", "gpu", "seconds", "t_sol", "calibrated", "launch_floor", "notes", "kernel_seconds", "host_seconds",
               "host_syncs")

    workload: str
    gpu: str
    seconds: Any
    t_sol: Any
    calibrated: bool
    launch_floor: float
    notes: tuple[str, ...]
    kernel_seconds: Any  # the kernel bodies summed (GPU busy time)
    host_seconds: Any  # the CPU's time to issue an eager program's launches (0: not an eager program)
    host_syncs: int  # the times the host waits for the GPU (device-to-host reads: ``workload.Sync``)
    _rows: Any  # () -> the per-kernel rows
    _program: "Workload"  # the workload predicted: its kernels' groups, launches, recipe (what the prediction assumes)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by its slots, its per-kernel rows built first (a pickle holds no closure)."""
        from functools import partial

        from .._frozen import restored, slots_state

        return restored, (type(self), slots_state(self, _rows=partial(_stored, self.kernels)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Prediction is immutable: cannot set {name!r}")

    @property
    def kernels(self) -> tuple[KernelPrediction, ...]:
        """Per-kernel breakdown, one row per distinct kernel (times per launch)."""
        return self._rows()

    @property
    def sol_fraction(self) -> Any:
        """T_SOL / predicted time: the fraction of the speed of light this prediction reaches."""
        return result(np.asarray(self.t_sol) / np.asarray(self.seconds))

    @property
    def launches(self) -> Any:
        """Launches the CPU issues (each distinct kernel's launches times its count; per point of a sweep):
        ``workload.issued_launches``."""
        from ..workload import issued_launches

        return issued_launches(self._program)

    @property
    def distinct_kernels(self) -> int:
        """Distinct kernels: the shapes the prediction computes once (``kernels`` has one row each)."""
        return len(self._program.counted)

    @property
    def assumptions(self) -> str:
        """What the prediction assumes, in one line: the program's style (eager, fused, plain kernels), whether the CPU's
        issue time is in it, and whether it is one GPU's time or one GPU's share of a job."""
        w = self._program
        recipe = w.recipe
        host = float(np.max(self.host_seconds)) > 0.0
        if recipe is None:
            style = ("kernels back to back on the GPU, the CPU always ahead (launch floor and a gap per launch; "
                     "no host time)")
        elif recipe.kernels == "eager":
            style = ("an eager PyTorch program (one launch per ATen kernel), the CPU's issue time included" if host else
                     f"an eager PyTorch program (one launch per ATen kernel), no host time ({self.gpu}'s calibration "
                     "has none)")
        else:
            style = ("a fused engine (CUDA graphs or one compiled program, the CPU never behind): host time 0 by "
                     "assumption, not modelled")
        world = recipe.world if recipe is not None else 1
        links = [k.link for k, _ in w.counted if k.link is not None]
        if world > 1:
            scope = f"per GPU: one GPU's share of a job on {world} GPUs (the job's step takes as long)"
        elif links:
            n = max(float(np.max(link.n_gpus)) for link in links)
            scope = f"per GPU: each of the collective's {n:,.0f} GPUs takes this time"
        else:
            scope = "one GPU"
        return f"assumes {style}; {scope}"

    @property
    def groups(self) -> tuple[GroupRow, ...]:
        """The op groups (``prediction.groups``), largest predicted time first; one shape only."""
        return self._summary_rows()[0]

    def table(self, top: Optional[int] = None) -> str:
        """Every distinct kernel (or the ``top`` largest) by predicted time in all, as a text table; one shape only."""
        if top is not None and (type(top) is not int or top < 1):
            raise OptionError(f"top must be a positive integer or None, got {top!r}")
        rows = self._summary_rows()[1]
        return _kernel_table(rows if top is None else rows[:top], len(rows))

    def _summary_rows(self) -> tuple[tuple[GroupRow, ...], tuple[KernelRow, ...]]:
        if np.ndim(self.seconds):
            raise OptionError(f"{self.workload}: op groups and kernel tables need one shape, got a sweep of shape "
                              f"{np.shape(self.seconds)} (to_frame() has every point)")
        return program_rows(self._program.counted, self.kernels)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per distinct kernel in program order (a sweep: per kernel and point, ``point``
        the flat index); times in seconds, per launch (``_each_s``) and in all (``_s``: times ``count``); the labels
        (``kernel``, ``group``, ``kind``, ``limiter``) categorical.

        NB: ``predicted_s`` sums to the kernel bodies (``kernel_seconds``, an overlapped collective's aside), not to
        ``seconds``: the launch floor, the gaps between launches and the waits for the CPU are no kernel's.
        """
        pd = require_pandas()
        shape = np.shape(self.seconds)
        points = int(np.prod(shape)) if shape else 1
        counted, kernels = self._program.counted, self.kernels
        counts = np.array([count for _, count in counted], dtype=np.int64)

        def flat(value: Any, dtype: Any = np.float64) -> Any:
            return np.broadcast_to(np.asarray(value, dtype=dtype), shape).ravel()

        def join(blocks: list[Any], dtype: Any = np.float64) -> Any:
            return np.concatenate(blocks) if blocks else np.empty(0, dtype=dtype)

        def labels(names: list[str]) -> Any:  # one category per distinct label, each kernel's repeated over the points
            index = {name: i for i, name in enumerate(dict.fromkeys(names))}
            codes = np.repeat(np.array([index[n] for n in names], dtype=np.int64), points)
            return pd.Categorical.from_codes(codes, categories=list(index))

        each = {"predicted_each_s": [flat(kp.seconds) for kp in kernels],
                "t_sol_each_s": [flat(kp.t_sol) for kp in kernels]}
        columns: dict[str, Any] = {}
        if shape:
            columns["point"] = np.tile(np.arange(points, dtype=np.int64), len(kernels))
        columns.update({
            "kernel": labels([kp.name for kp in kernels]),
            "group": labels([group_of(k) for k, _ in counted]),
            "kind": labels([kp.kind for kp in kernels]),
            "count": np.repeat(counts, points),
            "launches": join([flat(k.launches) * count for k, count in counted]),
            "predicted_each_s": join(each["predicted_each_s"]),
            "predicted_s": join([t * count for t, count in zip(each["predicted_each_s"], counts)]),
            "t_sol_each_s": join(each["t_sol_each_s"]),
            "t_sol_s": join([t * count for t, count in zip(each["t_sol_each_s"], counts)]),
            "t_compute_each_s": join([flat(kp.t_compute) for kp in kernels]),
            "t_memory_each_s": join([flat(kp.t_memory) for kp in kernels]),
            "wave_efficiency": join([flat(kp.wave_efficiency) for kp in kernels]),
            "limiter": _categorical(pd, [flat(kp.limiter, str) for kp in kernels]),
            "misaligned": join([flat(kp.misaligned, bool) for kp in kernels], bool),
            "neighbour_factor": join([flat(kp.neighbour) for kp in kernels]),
        })
        return pd.DataFrame(columns)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON; times in seconds."""
        out = {k: plain(getattr(self, k)) for k in self._FIELDS}
        out["assumptions"] = self.assumptions
        out["launches"] = self.launches
        out["distinct_kernels"] = self.distinct_kernels
        out["kernels"] = [{k: plain(v) for k, v in kp.__dict__.items()} for kp in self.kernels]
        return out

    def _head(self) -> str:
        cal = "calibrated" if self.calibrated else "UNCALIBRATED defaults"
        return (f"Prediction({self.workload!r} on {self.gpu}: {fmt_seconds(self.seconds)} ({cal}), "
                f"T_SOL {fmt_seconds(self.t_sol)}, SOL fraction {self.sol_fraction:.2f}")

    def _pace(self) -> str:
        """Host and GPU time, launches vs distinct kernels, and which of the two sets the pace; the GPU's parts (the
        kernel bodies and the rest: launch floor, gaps, waits) add up to ``seconds``."""
        busy, host = float(self.kernel_seconds), float(self.host_seconds)
        counts = f"{self.launches:,.0f} launches of {self.distinct_kernels:,} distinct kernels"
        rest = float(self.seconds) - busy  # no kernel's: the launch floor, the gaps between launches, the waits
        if host <= 0.0:
            waits = ", gaps and waits" if scheduled(self._program) else " and gaps"  # a schedule's streams wait
            beyond = f" and {fmt_seconds(rest)} of launch floor{waits}" if rest > 0.0 else ""
            return f"GPU {fmt_seconds(busy)} of kernel bodies{beyond}; {counts}; no host time"
        if bool(cpu_bound(self.seconds, host)):
            pace = "CPU-bound (the GPU waits for launches)"
        elif host > busy:
            pace = "partly CPU-bound"
        else:
            pace = "GPU-bound"
        # no launch floor here: the timeline starts at the first issue
        beyond = f" and {fmt_seconds(rest)} of gaps and waits for launches" if rest > 0.0 else ""
        return f"host {fmt_seconds(host)} issuing {counts}; GPU {fmt_seconds(busy)} of kernel bodies{beyond}: {pace}"

    def _limiters(self, kernels: tuple[KernelRow, ...]) -> str:
        """The kernel time by limiter, largest first ("n/a" where there is no kernel time to share)."""
        by: dict[str, float] = {}
        for k in kernels:
            by[k.limiter] = by.get(k.limiter, 0.0) + k.predicted
        busy = math.fsum(by.values())
        if busy <= 0.0:
            return "kernel time by limiter: n/a (no kernel time)"
        return "kernel time by limiter: " + ", ".join(f"{name} {t / busy:.0%}" for name, t in
                                                      sorted(by.items(), key=lambda item: -item[1]))

    def _shown_notes(self, shown: Optional[int]) -> tuple[list[str], int]:
        """The notes the summary prints (``shown`` of them, None: all), and how many it leaves: a warning's
        (uncalibrated, misaligned, the host's waits) before the correction's and the attention backend's; the
        eager-program note is the pace line already."""
        notes = [n for n in self.notes if not n.startswith("eager program:")]
        notes.sort(key=lambda n: n.startswith(("neighbour correction", "attention impl=")))  # stable: the rest first
        kept = notes if shown is None else notes[:shown]
        return kept, len(notes) - len(kept)

    def summary(self, top: int = SUMMARY_KERNELS, notes: Optional[int] = SUMMARY_NOTES, extra: tuple[str, ...] = (),
                detail: bool = True) -> str:
        """The whole program's summary (what ``repr`` shows beyond ``SHORT_KERNELS`` distinct kernels): ``top``
        kernels, ``notes`` of the notes (None: all), the caller's ``extra`` lines after the pace and limiter lines
        (``solkit model``: FLOPs, MFU, memory), and with ``detail`` the line naming the calls that give the rest."""
        for name, value, least in (("top", top, 1), ("notes", notes, 0)):
            if not (value is None and name == "notes") and (type(value) is not int or value < least):
                raise OptionError(f"{name} must be an integer >= {least}{' or None' if name == 'notes' else ''}, "
                                  f"got {value!r}")
        if not isinstance(extra, tuple) or not all(isinstance(line, str) for line in extra):
            raise ArgumentTypeError(f"extra must be a tuple of str lines, got {extra!r}")
        if type(detail) is not bool:
            raise ArgumentTypeError(f"detail must be a bool, got {detail!r}")
        groups, kernels = self._summary_rows()
        rows = [_group_cells(g) for g in _shown_groups(groups)]
        shown, left = self._shown_notes(notes)
        more = f"; {left} more note{'s' if left > 1 else ''} in .notes" if left else ""
        parts = ["\n".join((self._head() + ")", self.assumptions, self._pace(), self._limiters(kernels), *extra)),
                 text_table(_GROUP_HEADER, rows),
                 _kernel_table(kernels[:top], len(kernels)),
                 *(f"note: {n}" for n in shown)]
        if detail:
            parts.append("detail: .table() (every distinct kernel), .to_frame(), .kernels" + more)
        return "\n".join(parts)  # no blank line: a doctest's output ends at one

    def __repr__(self) -> str:
        if np.ndim(self.seconds):
            return (f"Prediction({self.workload!r} on {self.gpu}: sweep of shape {np.shape(self.seconds)}, "
                    f"{_span(self.seconds)}, T_SOL {_span(self.t_sol)})")
        if self.distinct_kernels > SHORT_KERNELS:
            return self.summary()
        limits = ", ".join(f"{k.name}: {k.limiter}" for k in self.kernels)
        text = f"{self._head()}; {limits}"
        if self._program.recipe is not None:  # a program: say what it assumes (a plain op's one line stays as it was)
            text += f"; {self.assumptions}"
        return text + ")"

    def _repr_html_(self) -> str:
        if np.ndim(self.seconds):
            return f"<p>{html.escape(repr(self))}</p>"
        head = "".join(f"<p>{html.escape(line)}</p>" for line in (self.assumptions, self._pace()))
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        caption = (f"Prediction of {self.workload} on {self.gpu}: {fmt_seconds(self.seconds)} "
                   f"({'calibrated' if self.calibrated else 'UNCALIBRATED defaults'}), T_SOL {fmt_seconds(self.t_sol)}")
        if self.distinct_kernels > SHORT_KERNELS:
            groups, kernels = self._summary_rows()
            rows: list[tuple[Any, ...]] = [(g.group, g.launches, g.kernels, g.t_sol * 1e6, g.predicted * 1e6,
                                            _share(g.share)) for g in _shown_groups(groups)]
            top = [(k.name, k.count, k.predicted_each * 1e6, k.predicted * 1e6, k.t_sol * 1e6, k.limiter)
                   for k in kernels[:SUMMARY_KERNELS]]
            return (html_table(_GROUP_HEADER, rows, caption) + head
                    + html_table(("kernel", "runs", "us each", "us in all", "T_SOL us", "limiter"), top,
                                 f"top {len(top)} of {len(kernels)} distinct kernels by predicted time "
                                 "(table(), to_frame(): all)") + notes)
        kernel_rows: list[tuple[Any, ...]] = [(k.name, k.count, k.kind, k.seconds * 1e6, k.t_compute * 1e6,
                                               k.t_memory * 1e6, k.t_sol * 1e6, k.wave_efficiency, k.limiter)
                                              for k in self.kernels]
        kernel_rows.append(("launch floor", "", "", self.launch_floor * 1e6, "", "", "", "", ""))
        kernel_rows.append(("total", "", "", self.seconds * 1e6, "", "", self.t_sol * 1e6, "", ""))
        header = ("kernel", "count", "kind", "predicted us (each)", "compute us", "memory us", "t_sol us", "wave eff.",
                  "limiter")
        return html_table(header, kernel_rows, caption) + head + notes


def _categorical(pd: Any, blocks: list[Any]) -> Any:
    """The string arrays ``blocks`` joined as one categorical: each distinct value found by a vectorised comparison (a
    few limiters per kernel: cheaper than factorising a million strings)."""
    categories: list[str] = []
    codes = []
    for block in blocks:
        code = np.full(block.shape, -1, dtype=np.int64)
        left = code < 0
        while left.any():
            value = str(block[np.argmax(left)])
            if value not in categories:
                categories.append(value)
            same = block == value
            code[same] = categories.index(value)  # a handful of limiters: a list is enough
            left &= ~same
        codes.append(code)
    return pd.Categorical.from_codes(np.concatenate(codes) if codes else np.empty(0, dtype=np.int64), categories)


_GROUP_HEADER = ("op group", "launches", "kernels", "T_SOL us", "predicted us", "share")


def _span(seconds: Any) -> str:
    """A sweep's smallest to largest time ("1.2 ms to 3.4 ms")."""
    return f"{fmt_seconds(np.min(seconds))} to {fmt_seconds(np.max(seconds))}"


def _shown_groups(groups: tuple[GroupRow, ...]) -> tuple[GroupRow, ...]:
    """The ``SUMMARY_GROUPS`` largest groups, then the rest: a single one as itself, more in one row of their sums."""
    shown, rest = groups[:SUMMARY_GROUPS], groups[SUMMARY_GROUPS:]
    if len(rest) <= 1:
        return groups
    shares = [g.share for g in rest]
    share = None if any(x is None for x in shares) else math.fsum(x for x in shares if x is not None)
    return (*shown, GroupRow(f"({len(rest)} more groups)", math.fsum(g.launches for g in rest),
                             sum(g.kernels for g in rest), math.fsum(g.t_sol for g in rest),
                             math.fsum(g.predicted for g in rest), share))


def _share(share: Optional[float]) -> str:
    """A group's share of the kernel time as printed ("n/a": no kernel time to share)."""
    return "n/a" if share is None else f"{share:.0%}"


def _group_cells(g: GroupRow) -> tuple[str, ...]:
    return (g.group, f"{g.launches:,.0f}", f"{g.kernels:,}", f"{g.t_sol * 1e6:,.1f}", f"{g.predicted * 1e6:,.1f}",
            _share(g.share))


def _kernel_table(rows: tuple[KernelRow, ...], distinct: int) -> str:
    """The distinct kernels ``rows`` (of ``distinct``) as a text table, its title its first column's header."""
    title = f"top {len(rows)} of {distinct} distinct kernels" if len(rows) < distinct else f"all {distinct} distinct kernels"
    cells = [(k.name, f"{k.count:,}", f"{k.predicted_each * 1e6:,.2f}", f"{k.predicted * 1e6:,.1f}",
              f"{k.t_sol * 1e6:,.1f}", k.limiter) for k in rows]
    return text_table((title, "runs", "us each", "us in all", "T_SOL us", "limiter"), cells)


def _stored(rows: tuple[KernelPrediction, ...]) -> tuple[KernelPrediction, ...]:
    """An unpickled ``Prediction``'s per-kernel rows, as they were built before it was pickled."""
    return rows
