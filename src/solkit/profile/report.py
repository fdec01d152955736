"""The profile report: op groups, opportunities, launch gaps, as text, HTML, a dict and a DataFrame.

- A group is an operator (its backward a separate group) or an unmodeled ATen op. Its row: calls,
  kernels, measured time, share of the kernel time, T_SOL, SOL fraction (T_SOL / measured, over
  its mapped calls), the calibrated prediction, and the time above the prediction.
- An opportunity is one (group, shapes) with its calls summed, ranked by recoverable time:
  measured minus the calibrated prediction (what a good kernel for that shape takes on this GPU),
  floored at 0. ``to_sol`` is measured minus T_SOL, what no kernel can recover beyond.
- A call below its DRAM bound (a trace does not flush the L2) is marked ``L2*`` on its group's row: ``L2*`` alone
  when the whole group is, ``45%, 2 L2*`` when 2 of its calls are.
- An Nsight Compute file's rows name no op: without ``load_profile(..., nvtx=...)`` nothing maps, and coverage, T_SOL,
  the prediction and MFU are "n/a" (None in ``to_dict``), not 0. Its own SOL figures, where the CSV carries them (the
  "GPU Speed Of Light Throughput" section's SM and memory throughput, % of peak), are shown per group, weighted by time.
- ``to_dict`` keys follow the CLI's JSON scheme (docs/cli.md): times end in ``_s``, counts are ``launches`` /
  ``calls`` / ``n_*``.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from .._display import html_table
from .._optional import require_pandas
from ._read import KernelRecord
from .calls import L2_RESIDENT, ProfiledCall, ProfileKernel

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU
    from .timeline import LaunchGaps

__all__ = ["ProfileView", "calls_by_group", "group_rows", "opportunity_rows", "profile_dict", "groups_frame", "text_report",
           "html_report", "coverage_note"]


class ProfileView(Protocol):
    """What a report reads of a profile (``profile.Profile`` is one)."""

    @property
    def path(self) -> str: ...
    @property
    def format(self) -> str: ...
    @property
    def gpu(self) -> "GPU": ...
    @property
    def kernels(self) -> tuple[ProfileKernel, ...]: ...
    @property
    def calls(self) -> tuple[ProfiledCall, ...]: ...
    @property
    def records(self) -> tuple[KernelRecord, ...]: ...
    @property
    def ranks(self) -> tuple["ProfileView", ...]: ...
    @property
    def kernel_seconds(self) -> float: ...
    @property
    def span_seconds(self) -> float: ...
    @property
    def busy_seconds(self) -> float: ...
    @property
    def idle_seconds(self) -> float: ...
    @property
    def launch_gaps(self) -> "LaunchGaps": ...
    @property
    def modeled_seconds(self) -> float: ...
    @property
    def coverage(self) -> float: ...
    @property
    def sol_seconds(self) -> float: ...
    @property
    def predicted_seconds(self) -> float: ...
    @property
    def flops(self) -> float: ...
    @property
    def mfu_precision(self) -> str: ...
    @property
    def mfu(self) -> float: ...


def _sum(calls: list["ProfiledCall"], attr: str) -> float:
    return math.fsum(getattr(c, attr) for c in calls if getattr(c, attr) is not None)


def _ncu_sol(calls: list["ProfiledCall"], records: Sequence[KernelRecord], label: str) -> Any:
    """The time-weighted mean of ncu's ``label`` SOL % over the calls' launches, or None when a launch lacks it."""
    pairs = [(dict(records[i].ncu_sol).get(label), records[i].seconds) for c in calls for i in c.kernels
             if i < len(records)]
    if not pairs or any(pct is None for pct, _ in pairs):
        return None
    seconds = math.fsum(t for _, t in pairs)
    return math.fsum(pct * t for pct, t in pairs) / seconds if seconds > 0 else None  # type: ignore[operator]


def _row(name: str, calls: list["ProfiledCall"], total: float,
         records: Sequence[KernelRecord] = ()) -> dict[str, Any]:
    measured = _sum(calls, "seconds")
    mapped = [c for c in calls if c.t_sol is not None]
    mapped_s = math.fsum(c.seconds for c in mapped)
    t_sol = _sum(mapped, "t_sol")
    predicted = _sum(mapped, "predicted")
    faster = sum(1 for c in mapped if c.t_sol is not None and c.t_sol > c.seconds)
    return {
        "group": name,
        "calls": len(calls),
        "launches": sum(len(c.kernels) for c in calls),
        "measured_s": measured,
        "share": measured / total if total > 0 else 0.0,
        "t_sol_s": t_sol if mapped else None,
        "sol_fraction": (t_sol / mapped_s if mapped and mapped_s > 0 and t_sol <= mapped_s else None),
        "predicted_s": predicted if mapped else None,
        "above_prediction_s": max(mapped_s - predicted, 0.0) if mapped else None,
        "faster_than_dram_sol": faster,
        "modeled": bool(mapped),
        "measured_bytes": _measured_bytes(calls),
        "ncu_sm_pct": _ncu_sol(calls, records, "SM"),
        "ncu_memory_pct": _ncu_sol(calls, records, "memory"),
    }


def _measured_bytes(calls: list["ProfiledCall"]) -> Any:
    """Summed DRAM bytes when every call has them (Nsight Compute), else None."""
    if not calls or any(c.measured_bytes is None for c in calls):
        return None
    total = math.fsum(c.measured_bytes for c in calls)  # type: ignore[misc]
    return int(total) if total == int(total) else total


def calls_by_group(profile: ProfileView) -> list[tuple[str, list["ProfiledCall"]]]:
    """(group, its calls), largest measured time first, ties in order of first appearance: the report's order."""
    groups: dict[str, list["ProfiledCall"]] = {}
    for c in profile.calls:
        groups.setdefault(c.group, []).append(c)
    return sorted(groups.items(), key=lambda item: -math.fsum(c.seconds for c in item[1]))


def group_rows(profile: ProfileView) -> list[dict[str, Any]]:
    """One row per group, largest measured time first."""
    total = profile.kernel_seconds
    return [_row(name, calls, total, profile.records) for name, calls in calls_by_group(profile)]


def _shape_text(c: "ProfiledCall") -> str:
    dims = [list(s) for s in c.shapes if isinstance(s, (list, tuple)) and len(s)]
    return " ".join(str(d).replace(" ", "") for d in dims[:3]) or "-"


def opportunity_rows(profile: ProfileView, top: int = 10) -> list[dict[str, Any]]:
    """The (group, shapes) with the most measured time above the calibrated prediction, largest first."""
    by_shape: dict[tuple[str, str, str], list["ProfiledCall"]] = {}
    for c in profile.calls:
        if c.t_sol is not None:
            by_shape.setdefault((c.group, _shape_text(c), ",".join(c.dtypes[:3])), []).append(c)
    rows: list[dict[str, Any]] = []
    for (group, shapes, dtypes), calls in by_shape.items():
        measured = _sum(calls, "seconds")
        predicted = _sum(calls, "predicted")
        t_sol = _sum(calls, "t_sol")
        rows.append({"group": group, "shapes": shapes, "dtypes": dtypes, "calls": len(calls), "measured_s": measured,
                     "predicted_s": predicted, "t_sol_s": t_sol, "recoverable_s": max(measured - predicted, 0.0),
                     "to_sol_s": max(measured - t_sol, 0.0), "verdict": calls[0].verdict if len(calls) == 1 else
                     (L2_RESIDENT if t_sol > measured else f"{t_sol / measured:.0%} of SOL")})
    rows.sort(key=lambda r: -r["recoverable_s"])
    return rows[:top]


def coverage_note(profile: ProfileView) -> str | None:
    """Why coverage is "n/a" (an Nsight Compute file none of whose rows maps to an op), else None."""
    if profile.format != "ncu" or any(c.workload is not None for c in profile.calls):
        return None
    ranges = list(dict.fromkeys(r.nvtx[-1] for r in profile.records if r.nvtx))
    if ranges:
        shown = ", ".join(map(repr, ranges[:4])) + (f" and {len(ranges) - 4} more" if len(ranges) > 4 else "")
        return (f"n/a: rows name no op and no NVTX range is in nvtx= (ranges {shown}); pass "
                "nvtx={range name: workload} to solkit.load_profile")
    return "n/a: rows name no op, pass nvtx={range name: workload} to solkit.load_profile (rows under NVTX ranges)"


def profile_dict(profile: ProfileView, top: int = 10) -> dict[str, Any]:
    """Aggregates, groups, opportunities and launch gaps, JSON-ready (times in seconds, keys ending ``_s``).

    Where ``coverage_note`` says "n/a", ``coverage``, ``t_sol_s``, ``predicted_s`` and ``mfu`` are None.
    """
    gaps = profile.launch_gaps
    note = coverage_note(profile)
    return {
        "path": profile.path,
        "format": profile.format,
        "gpu": profile.gpu.name,
        "launches": len(profile.kernels),
        "n_kernels": len({k.name for k in profile.kernels}),
        "calls": len(profile.calls),
        "kernel_s": profile.kernel_seconds,
        "span_s": profile.span_seconds,
        "idle_s": profile.idle_seconds,
        "modeled_s": profile.modeled_seconds,
        "coverage": None if note else profile.coverage,
        "coverage_note": note,
        "t_sol_s": None if note else profile.sol_seconds,
        "predicted_s": None if note else profile.predicted_seconds,
        "model_flops": profile.flops,
        "mfu": None if note else profile.mfu,
        "mfu_precision": profile.mfu_precision,
        "launch_gaps": {"n_gaps": gaps.count, "total_s": gaps.total, "largest_s": gaps.largest},
        "groups": group_rows(profile),
        "opportunities": opportunity_rows(profile, top),
        "ranks": [{"path": r.path, "span_s": r.span_seconds, "kernel_s": r.kernel_seconds} for r in profile.ranks],
    }


def groups_frame(profile: ProfileView) -> Any:
    """The group rows as a pandas DataFrame."""

    return require_pandas().DataFrame(group_rows(profile))


def _us(x: Any) -> str:
    return "-" if x is None else f"{x * 1e6:,.1f}"


def _pct(x: Any) -> str:
    return "-" if x is None else f"{x:.0%}"


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *(line(r) for r in rows)])


def _short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."


def _sol_cell(r: dict[str, Any]) -> str:
    """The SOL column: the group's fraction, ``L2*`` where the group ran below its DRAM bound, ``45%, 2 L2*`` where
    some of its calls did."""
    if r["sol_fraction"] is None:
        return "L2*" if r["modeled"] else "-"
    n = r["faster_than_dram_sol"]
    return _pct(r["sol_fraction"]) + (f", {n} L2*" if n else "")


def _group_cells(r: dict[str, Any], bandwidth: float, ncu_sol: bool = False) -> tuple[str, ...]:
    cells: tuple[str, ...] = (_short(r["group"]), str(r["calls"]), _us(r["measured_s"]), _pct(r["share"]), _us(r["t_sol_s"]),
             _sol_cell(r), _us(r["predicted_s"]), _us(r["above_prediction_s"]))
    if ncu_sol:
        cells += tuple("-" if r[k] is None else f"{r[k]:.0f}%" for k in ("ncu_sm_pct", "ncu_memory_pct"))
    if r["measured_bytes"] is None:
        return cells
    return cells + (f"{r['measured_bytes'] / 1e6:,.1f}", _pct(r["measured_bytes"] / r["measured_s"] / bandwidth))


GROUP_HEADER = ("op group", "calls", "measured us", "share", "T_SOL us", "SOL", "predicted us", "above pred. us")
#: Nsight Compute files that carry ncu's own SOL section add its SM and memory throughput (% of peak, by time)
NCU_SOL_HEADER = ("ncu SM %", "ncu mem %")
#: Nsight Compute files add the measured DRAM bytes and the share of the datasheet bandwidth they reached
DRAM_HEADER = ("DRAM MB", "of bandwidth")
OPPORTUNITY_HEADER = ("op group", "shapes", "calls", "measured us", "predicted us", "recoverable us", "vs SOL")


def text_report(profile: ProfileView, top: int = 10) -> str:
    """What ``print(profile)`` shows: aggregates, op groups, top opportunities, launch gaps."""
    gaps = profile.launch_gaps
    note = coverage_note(profile)
    if note is None:
        modeled = (f"modeled {profile.modeled_seconds * 1e3:.3f} of {profile.kernel_seconds * 1e3:.3f} ms of kernel time "
                   f"(coverage {profile.coverage:.1%}); T_SOL {profile.sol_seconds * 1e3:.3f} ms, calibrated prediction "
                   f"{profile.predicted_seconds * 1e3:.3f} ms")
        mfu = f"MFU {profile.mfu:.1%} (dense {profile.mfu_precision} peak over the span)"
    else:
        modeled = f"coverage {note}; T_SOL and the prediction n/a"
        mfu = "MFU n/a (no row maps to an op)"
    head = [
        f"{profile.path} on {profile.gpu.name} ({profile.format}): {len(profile.kernels)} kernels in "
        f"{len(profile.calls)} op calls",
        f"span {profile.span_seconds * 1e3:.3f} ms = kernels {profile.busy_seconds * 1e3:.3f} ms busy + idle "
        f"{profile.idle_seconds * 1e3:.3f} ms ({profile.idle_seconds / profile.span_seconds if profile.span_seconds > 0 else 0.0:.0%}); "
        f"{gaps.count} gaps, largest {gaps.largest * 1e6:.1f} us",
        modeled,
        f"model FLOPs {profile.flops:.4g}; {mfu}",
    ]
    if profile.ranks:
        head.append(f"slowest of {len(profile.ranks)} ranks: "
                    + ", ".join(f"{r.path} {r.span_seconds * 1e3:.3f} ms" for r in profile.ranks))
    rows = group_rows(profile)
    bandwidth = profile.gpu.memory_bandwidth
    ncu_sol = bool(rows) and all(r["ncu_sm_pct"] is not None for r in rows)
    groups = [_group_cells(r, bandwidth, ncu_sol) for r in rows]
    header: tuple[str, ...] = GROUP_HEADER + (NCU_SOL_HEADER if ncu_sol else ())
    if rows and all(r["measured_bytes"] is not None for r in rows):
        header += DRAM_HEADER
    opp = [(str(r["group"]), str(r["shapes"]), str(r["calls"]), _us(r["measured_s"]), _us(r["predicted_s"]),
            _us(r["recoverable_s"]), str(r["verdict"])) for r in opportunity_rows(profile, top)]
    parts = ["\n".join(head), _table(header, [g[:len(header)] for g in groups])]
    if any(r["faster_than_dram_sol"] for r in rows):
        parts.append(f"L2*: {L2_RESIDENT}: calls that ran below their DRAM bound (no L2 flush between kernels); "
                     "\"45%, 2 L2*\" is a group's SOL with 2 such calls in it")
    if ncu_sol:
        parts.append("ncu SM % / mem %: Nsight Compute's own speed of light (SM and memory throughput, % of peak), "
                     "weighted by time")
    parts += [f"top {len(opp)} opportunities (measured above the calibrated prediction):", _table(OPPORTUNITY_HEADER, opp)]
    return "\n\n".join(parts)


def html_report(profile: ProfileView) -> str:
    """The report as HTML tables (Jupyter)."""
    head = html.escape(text_report(profile).split("\n\n")[0]).replace("\n", "<br>")
    groups = html_table(GROUP_HEADER, [_group_cells(r, 1.0)[:len(GROUP_HEADER)] for r in group_rows(profile)], "op groups")
    opp = html_table(OPPORTUNITY_HEADER, [(r["group"], r["shapes"], r["calls"], _us(r["measured_s"]),
                                           _us(r["predicted_s"]), _us(r["recoverable_s"]), r["verdict"])
                                          for r in opportunity_rows(profile)], "top opportunities")
    return f"<p>{head}</p>{groups}{opp}"
