"""The profile report: op groups, opportunities, launch gaps, as text, HTML, a dict and a DataFrame.

- A group is an operator (its backward a separate group) or an unmodeled ATen op. Its row: calls,
  kernels, measured time, share of the kernel time, T_SOL, SOL fraction (T_SOL / measured, over
  its mapped calls), the calibrated prediction, and the time above the prediction.
- An opportunity is one (group, shapes) with its calls summed, ranked by recoverable time:
  measured minus the calibrated prediction (what a good kernel for that shape takes on this GPU),
  floored at 0. ``to_sol`` is measured minus T_SOL, what no kernel can recover beyond.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from .._display import html_table
from .._optional import require_pandas
from .calls import L2_RESIDENT, ProfiledCall, ProfileKernel

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU
    from .timeline import LaunchGaps

__all__ = ["ProfileView", "calls_by_group", "group_rows", "opportunity_rows", "profile_dict", "groups_frame", "text_report", "html_report"]


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


def _row(name: str, calls: list["ProfiledCall"], total: float) -> dict[str, Any]:
    measured = _sum(calls, "seconds")
    mapped = [c for c in calls if c.t_sol is not None]
    mapped_s = math.fsum(c.seconds for c in mapped)
    t_sol = _sum(mapped, "t_sol")
    predicted = _sum(mapped, "predicted")
    faster = sum(1 for c in mapped if c.t_sol is not None and c.t_sol > c.seconds)
    return {
        "group": name,
        "calls": len(calls),
        "kernels": sum(len(c.kernels) for c in calls),
        "measured_s": measured,
        "share": measured / total if total > 0 else 0.0,
        "t_sol_s": t_sol if mapped else None,
        "sol_fraction": (t_sol / mapped_s if mapped and mapped_s > 0 and t_sol <= mapped_s else None),
        "predicted_s": predicted if mapped else None,
        "above_prediction_s": max(mapped_s - predicted, 0.0) if mapped else None,
        "faster_than_dram_sol": faster,
        "modeled": bool(mapped),
        "measured_bytes": _measured_bytes(calls),
    }


def _measured_bytes(calls: list["ProfiledCall"]) -> Any:
    """Summed DRAM bytes when every call has them (Nsight Compute), else None."""
    if not calls or any(c.measured_bytes is None for c in calls):
        return None
    return math.fsum(c.measured_bytes for c in calls)  # type: ignore[misc]


def calls_by_group(profile: ProfileView) -> list[tuple[str, list["ProfiledCall"]]]:
    """(group, its calls), largest measured time first, ties in order of first appearance: the report's order."""
    groups: dict[str, list["ProfiledCall"]] = {}
    for c in profile.calls:
        groups.setdefault(c.group, []).append(c)
    return sorted(groups.items(), key=lambda item: -math.fsum(c.seconds for c in item[1]))


def group_rows(profile: ProfileView) -> list[dict[str, Any]]:
    """One row per group, largest measured time first."""
    total = profile.kernel_seconds
    return [_row(name, calls, total) for name, calls in calls_by_group(profile)]


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


def profile_dict(profile: ProfileView, top: int = 10) -> dict[str, Any]:
    """Aggregates, groups, opportunities and launch gaps, JSON-ready (seconds)."""
    gaps = profile.launch_gaps
    return {
        "path": profile.path,
        "format": profile.format,
        "gpu": profile.gpu.name,
        "kernels": len(profile.kernels),
        "calls": len(profile.calls),
        "kernel_seconds": profile.kernel_seconds,
        "span_seconds": profile.span_seconds,
        "idle_seconds": profile.idle_seconds,
        "modeled_seconds": profile.modeled_seconds,
        "coverage": profile.coverage,
        "sol_seconds": profile.sol_seconds,
        "predicted_seconds": profile.predicted_seconds,
        "model_flops": profile.flops,
        "mfu": profile.mfu,
        "mfu_precision": profile.mfu_precision,
        "launch_gaps": {"count": gaps.count, "total_s": gaps.total, "largest_s": gaps.largest},
        "groups": group_rows(profile),
        "opportunities": opportunity_rows(profile, top),
        "ranks": [{"path": r.path, "span_seconds": r.span_seconds, "kernel_seconds": r.kernel_seconds}
                  for r in profile.ranks],
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


def _group_cells(r: dict[str, Any], bandwidth: float) -> tuple[str, ...]:
    sol = _pct(r["sol_fraction"]) if r["sol_fraction"] is not None or not r["modeled"] else "L2*"
    cells = (_short(r["group"]), str(r["calls"]), _us(r["measured_s"]), _pct(r["share"]), _us(r["t_sol_s"]), sol,
             _us(r["predicted_s"]), _us(r["above_prediction_s"]))
    if r["measured_bytes"] is None:
        return cells
    return cells + (f"{r['measured_bytes'] / 1e6:,.1f}", _pct(r["measured_bytes"] / r["measured_s"] / bandwidth))


GROUP_HEADER = ("op group", "calls", "measured us", "share", "T_SOL us", "SOL", "predicted us", "above pred. us")
#: Nsight Compute files add the measured DRAM bytes and the share of the datasheet bandwidth they reached
DRAM_HEADER = ("DRAM MB", "of bandwidth")
OPPORTUNITY_HEADER = ("op group", "shapes", "calls", "measured us", "predicted us", "recoverable us", "vs SOL")


def text_report(profile: ProfileView, top: int = 10) -> str:
    """What ``print(profile)`` shows: aggregates, op groups, top opportunities, launch gaps."""
    gaps = profile.launch_gaps
    head = [
        f"{profile.path} on {profile.gpu.name} ({profile.format}): {len(profile.kernels)} kernels in "
        f"{len(profile.calls)} op calls",
        f"span {profile.span_seconds * 1e3:.3f} ms = kernels {profile.busy_seconds * 1e3:.3f} ms busy + idle "
        f"{profile.idle_seconds * 1e3:.3f} ms ({profile.idle_seconds / profile.span_seconds if profile.span_seconds > 0 else 0.0:.0%}); "
        f"{gaps.count} gaps, largest {gaps.largest * 1e6:.1f} us",
        f"modeled {profile.modeled_seconds * 1e3:.3f} of {profile.kernel_seconds * 1e3:.3f} ms of kernel time "
        f"(coverage {profile.coverage:.1%}); T_SOL {profile.sol_seconds * 1e3:.3f} ms, calibrated prediction "
        f"{profile.predicted_seconds * 1e3:.3f} ms",
        f"model FLOPs {profile.flops:.4g}; MFU {profile.mfu:.1%} (dense {profile.mfu_precision} peak over the span)",
    ]
    if profile.ranks:
        head.append(f"slowest of {len(profile.ranks)} ranks: "
                    + ", ".join(f"{r.path} {r.span_seconds * 1e3:.3f} ms" for r in profile.ranks))
    rows = group_rows(profile)
    bandwidth = profile.gpu.memory_bandwidth
    groups = [_group_cells(r, bandwidth) for r in rows]
    header = GROUP_HEADER + DRAM_HEADER if rows and all(r["measured_bytes"] is not None for r in rows) else GROUP_HEADER
    opp = [(str(r["group"]), str(r["shapes"]), str(r["calls"]), _us(r["measured_s"]), _us(r["predicted_s"]),
            _us(r["recoverable_s"]), str(r["verdict"])) for r in opportunity_rows(profile, top)]
    parts = ["\n".join(head), _table(header, [g[:len(header)] for g in groups])]
    if any(r["faster_than_dram_sol"] for r in rows):
        parts.append(f"L2*: {L2_RESIDENT}: some calls ran below their DRAM bound (no L2 flush between kernels)")
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
