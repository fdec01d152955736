"""The collectives' parameters fitted on NCCL collectives measured on 2 GPUs of one node, and their report.

A file of ``benchmarks/comm/collectives.py`` holds per case (op, dtype, nbytes, n_gpus, seconds: the median
per-call time over rounds of back-to-back calls). ``predict`` of a collective is the launch floor +
``link_latency[op]`` + bus bytes / (``link_efficiency[op]`` x the link's per-direction bandwidth) on 2 GPUs
(no hops beyond a 2-GPU ring's). ``fit_links`` chooses, per collective, the latency and efficiency that
minimize the mean |log(predicted / measured)| over its cases (a grid: latency 0-200 us by 0.25 us,
efficiency 0.05-1 by 0.005). ``fit_misaligned`` then fits ``link_misaligned[op]``, the efficiency's factor for a
chunk (nbytes / n_gpus) off 16-byte alignment in a buffer of 16 MiB and more, on the misaligned grid. The hop latency
inside a node is NCCL's own tuning figure (``NCCL_HOPS_US``) until cases on 4 or 8 GPUs exist (``fit_hops``); the
network hop stays NCCL's. Cases of 1 MiB and more and smaller ones are reported apart,
as the issue's goals are (10% and 25% median).
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np

from ..comm import COLLECTIVES, collective, steps_at_two
from ..errors import SpecError
from ..hardware.system import default_system
from ..prediction import calibration, misaligned_chunk, predict
from .manifest import data_path, manifest
from .metrics import log_error
from .rounding import rounded

__all__ = ["CollectiveCase", "load_collectives", "fit_links", "fit_misaligned", "fit_hops", "link_parameters", "collective_errors",
           "collectives_report", "report_sets", "COMM_FIT_DATA", "COMM_VALIDATION_DATA", "COMM_MISALIGNED_DATA", "COMM_SPENT_DATA", "COMM_MULTI_FIT_DATA",
           "COMM_TEST_FROZEN", "COMM_TEST_DATA", "NCCL_HOPS_US", "LARGE"]

#: the collectives files by role (``data/manifest.yaml`` says what each is and when it was measured), by their old
#: names, read from the manifest on use (``__getattr__``: importing this module reads no data): the 2-GPU grid
#: (``link_latency``, ``link_efficiency``), the misaligned grid (``link_misaligned``: chunks off 16-byte alignment),
#: the validation draw, the frozen test draws (each with what it read on the model it was measured after, where the
#: model changed since), the grids on 4 and 8 GPUs of one node (``link_hop``, once measured: until then
#: ``data/manifest.yaml`` lists them as planned and the hop is NCCL's own figure, ``NCCL_HOPS_US``), and the spent
#: test draws with why
_LISTS: dict[str, Callable[[], Any]] = {
    "COMM_FIT_DATA": lambda: manifest().first(role="fit", fits="links").file,
    "COMM_MISALIGNED_DATA": lambda: manifest().first(role="fit", fits="link_misaligned").file,
    "COMM_VALIDATION_DATA": lambda: manifest().first(role="validation", measures="collectives").file,
    "COMM_TEST_DATA": lambda: manifest().files(role="test", measures="collectives"),
    "COMM_TEST_FROZEN": lambda: {e.file: e.describe() for e in manifest().select(role="test", measures="collectives")},
    "COMM_MULTI_FIT_DATA": lambda: manifest().files(role="fit", fits="link_hop"),
    "COMM_SPENT_DATA": lambda: tuple((e.file, e.describe()) for e in manifest().select(role="spent", measures="collectives")),
}
COMM_FIT_DATA: str
COMM_MISALIGNED_DATA: str
COMM_VALIDATION_DATA: str
COMM_TEST_DATA: tuple[str, ...]
COMM_TEST_FROZEN: dict[str, str]
COMM_MULTI_FIT_DATA: tuple[str, ...]
COMM_SPENT_DATA: tuple[tuple[str, str], ...]


def __getattr__(name: str) -> Any:
    """``COMM_FIT_DATA`` and the other lists of ``_LISTS``, read from the manifest when asked for."""
    if name in _LISTS:
        return _LISTS[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def report_sets() -> list[tuple[str, str]]:
    """(title, file) of each collectives file the report shows, in its order: the fits, the validation draw, the frozen
    tests, the grids on 4 or 8 GPUs, the spent tests."""
    got = {name: make() for name, make in _LISTS.items()}
    return ([("fit", got["COMM_FIT_DATA"]), ("fit: chunks off 16-byte alignment (link_misaligned)", got["COMM_MISALIGNED_DATA"]),
             ("validation", got["COMM_VALIDATION_DATA"])]
            + [(f"frozen test ({got['COMM_TEST_FROZEN'][name]})", name) for name in got["COMM_TEST_DATA"]]
            + [("fit: 4 or 8 GPUs (link_hop)", name) for name in got["COMM_MULTI_FIT_DATA"]]
            + [(f"spent test ({why})", name) for name, why in got["COMM_SPENT_DATA"]])


#: what each ring step beyond a 2-GPU ring's adds, inside a node and across nodes (us): NCCL's own latency model,
#: src/graph/tuning.cc, hwLat[NVLINK][RING][LL] = .47 and hwLat[NET][RING][LL] = 2.7, as one public copy of that file
#: prints them (the code search's find_string "static const float baseLat", id 1133962389; other NCCL versions differ:
#: .6 and .8 for the NVLink figure). A prior, not a fit: 2 GPUs take no extra steps.
NCCL_HOPS_US = {"link_hop": 0.47, "network_hop": 2.7}
#: the issue's size classes: 1 MiB and more, and smaller
LARGE = 2**20
_LATENCY_GRID = np.arange(0.0, 200.0 + 1e-9, 0.25) * 1e-6
_EFFICIENCY_GRID = np.arange(0.05, 1.0 + 1e-9, 0.005)
_MISALIGNED_GRID = np.arange(0.2, 1.0 + 1e-9, 0.01)
_HOP_GRID = np.arange(0.0, 20.0 + 1e-9, 0.01) * 1e-6


class CollectiveCase(NamedTuple):
    """One measured collective: its op, precision, buffer (nccl-tests' size), GPUs and median seconds per call."""

    op: str
    dtype: str
    nbytes: float
    n_gpus: int
    seconds: float


def load_collectives(path: Any) -> list[CollectiveCase]:
    """The measured cases of a collectives file (a name in ``data/`` or a path); failed or skipped cases left out."""
    file = data_path(path)
    raw = json.loads(file.read_text(encoding="utf-8"))
    out = []
    for c in raw["cases"]:
        if "seconds" not in c or c.get("error"):
            continue
        if c["op"] not in COLLECTIVES:
            raise SpecError(f"{file}: case op {c['op']!r} is not a collective ({', '.join(COLLECTIVES)})")
        out.append(CollectiveCase(c["op"], c["dtype"], float(c["nbytes"]), int(c["n_gpus"]), float(c["seconds"])))
    return out


def _bus(case: CollectiveCase) -> float:
    link = collective(case.op, case.nbytes, case.n_gpus, case.dtype).counted[0][0].link
    assert link is not None  # a collective's kernel carries its traffic
    return float(link.bus_bytes)


def _best(predicted: np.ndarray, measured: np.ndarray) -> tuple[int, ...]:
    """The grid index (all axes but the last, the cases') of the least mean |log(predicted / measured)|."""
    loss = np.abs(np.log(predicted / measured)).mean(axis=-1)
    return tuple(int(i) for i in np.unravel_index(np.argmin(loss), loss.shape))


def fit_links(cases: Sequence[CollectiveCase], gpu: Any = "h200") -> dict[str, Any]:
    """``link_latency`` and ``link_efficiency`` per collective (seconds, fraction), with NCCL's hop latencies."""
    system = default_system(gpu)
    floor = calibration(gpu).launch_floor
    latency: dict[str, float] = {}
    efficiency: dict[str, float] = {}
    for op in COLLECTIVES:
        mine = [c for c in cases if c.op == op and c.n_gpus == 2]
        if len(mine) < 4:
            continue
        measured = np.array([c.seconds for c in mine])
        transfer = np.array([_bus(c) for c in mine]) / system.link_bandwidth  # seconds at the full link rate
        # predicted[l, e, case] = floor + latency l + transfer / efficiency e
        predicted = floor + _LATENCY_GRID[:, None, None] + transfer[None, None, :] / _EFFICIENCY_GRID[None, :, None]
        li, ei = _best(predicted, measured)
        latency[op] = rounded(float(_LATENCY_GRID[li]), "link_latency")
        efficiency[op] = rounded(float(_EFFICIENCY_GRID[ei]), "link_efficiency")
    hops = {name: us * 1e-6 for name, us in NCCL_HOPS_US.items()}
    return {"link_latency": latency, "link_efficiency": efficiency, "link_misaligned": {}, **hops}


def fit_misaligned(cases: Sequence[CollectiveCase], links: dict[str, Any], gpu: Any = "h200") -> dict[str, float]:
    """``link_misaligned`` per collective: the factor (0.2-1 by 0.01) minimizing the mean |log(pred / meas)| over its
    2-GPU cases that pay it (``prediction.misaligned_chunk``); none with fewer than 3 such cases, or a best factor of 1."""
    system = default_system(gpu)
    floor = calibration(gpu).launch_floor
    out: dict[str, float] = {}
    for op in COLLECTIVES:
        mine = [c for c in cases if c.op == op and c.n_gpus == 2 and misaligned_chunk(c.nbytes, c.n_gpus)]
        if len(mine) < 3 or op not in links["link_efficiency"]:
            continue
        measured = np.array([c.seconds for c in mine])
        transfer = np.array([_bus(c) for c in mine]) / (system.link_bandwidth * links["link_efficiency"][op])
        predicted = floor + links["link_latency"][op] + transfer[None, :] / _MISALIGNED_GRID[:, None]
        best = float(_MISALIGNED_GRID[_best(predicted, measured)[0]])
        if best < 1.0:
            out[op] = rounded(best, "link_misaligned")
    return out


def fit_hops(cases: Sequence[CollectiveCase], links: dict[str, Any], gpu: Any = "h200") -> Optional[float]:
    """``link_hop`` (0-20 us by 0.01 us) minimizing the mean |log(pred / meas)| over cases on 3 to 8 GPUs of a node, with
    pred = floor + link_latency + (ring steps - a 2-GPU ring's) x link_hop + bus bytes / (efficiency x link bandwidth)
    (the 2-GPU figures held); None with fewer than 4 such cases."""
    system = default_system(gpu)
    floor = calibration(gpu).launch_floor
    mine = [c for c in cases if 2 < c.n_gpus <= system.gpus_per_node and c.op in links["link_efficiency"]]
    if len(mine) < 4:
        return None
    extra, fixed = [], []
    for c in mine:
        link = collective(c.op, c.nbytes, c.n_gpus, c.dtype).counted[0][0].link
        assert link is not None  # a collective's kernel carries its traffic
        eff = links["link_efficiency"][c.op]
        if misaligned_chunk(c.nbytes, c.n_gpus):
            eff *= links.get("link_misaligned", {}).get(c.op, 1.0)
        extra.append(float(link.hops(system.gpus_per_node)) - steps_at_two(c.op))
        fixed.append(floor + links["link_latency"][c.op] + float(link.bus_bytes) / (eff * system.link_bandwidth))
    measured = np.array([c.seconds for c in mine])
    predicted = np.array(fixed)[None, :] + _HOP_GRID[:, None] * np.array(extra)[None, :]
    return rounded(float(_HOP_GRID[_best(predicted, measured)[0]]), "link_hop")


def link_parameters(path: Optional[str] = None, misaligned: Optional[str] = None) -> dict[str, Any]:
    """The collectives' parameters for the spec's ``measured:`` section: fitted when the fit file exists, else empty;
    ``link_misaligned`` on the misaligned grid (the grid's powers of two are all aligned)."""
    file = data_path(path or _LISTS["COMM_FIT_DATA"]())
    if not file.exists():
        return {"link_latency": {}, "link_efficiency": {}, "link_misaligned": {}, "link_hop": 0.0, "network_hop": 0.0}
    measured = load_collectives(file)
    links = fit_links(measured)
    draw = data_path(misaligned or _LISTS["COMM_MISALIGNED_DATA"]())
    if draw.exists():
        links["link_misaligned"] = fit_misaligned(load_collectives(draw), links)
    more = [c for name in _LISTS["COMM_MULTI_FIT_DATA"]() for c in load_collectives(name)]
    hop = fit_hops(measured + more, links)  # cases on 4 or 8 GPUs, when measured
    if hop is not None:
        links["link_hop"] = hop
    return links


def collective_errors(cases: Sequence[CollectiveCase], gpu: Any = "h200") -> list[tuple[CollectiveCase, float, float]]:
    """(case, predicted seconds, error exp(|log(pred / meas)|) - 1) of every case, on one node of ``gpu``."""
    out = []
    for c in cases:
        p = float(predict(collective(c.op, c.nbytes, c.n_gpus, c.dtype), gpu).seconds)
        out.append((c, p, float(math.expm1(log_error(p, c.seconds)))))
    return out


def _row(name: str, errors: Sequence[float]) -> str:
    if not errors:
        return f"| {name} | 0 | | |"
    return f"| {name} | {len(errors)} | {np.median(errors):.1%} | {np.percentile(errors, 90):.1%} |"


def collectives_report(sets: Sequence[tuple[str, str]], gpu: Any = "h200") -> str:
    """A Markdown report: per set (and GPU count, where a set has several), per collective and size class (>= 1 MiB,
    smaller), median and p90 error."""
    lines = ["# NCCL collectives on H200s: predicted against measured", "",
             "Error = exp(|log(predicted / measured)|) - 1. Goal (issue 14): median <= 10% at 1 MiB and more, <= 25% below.", ""]
    for title, path in sets:
        every = collective_errors(load_collectives(path), gpu)
        counts = sorted({c.n_gpus for c, _, _ in every})
        for n in counts:
            rows = [r for r in every if r[0].n_gpus == n]
            on = f", {n} GPUs" if len(counts) > 1 or n != 2 else ""
            lines += [f"## {title}{on} (`data/{path}`)", "", "| collective | cases | median | p90 |", "|---|---:|---:|---:|"]
            for size, keep in (("1 MiB and more", lambda c: c.nbytes >= LARGE), ("below 1 MiB", lambda c: c.nbytes < LARGE)):
                lines.append(_row(f"**all, {size}**", [e for c, _, e in rows if keep(c)]))
                for op in COLLECTIVES:
                    lines.append(_row(f"{op}, {size}", [e for c, _, e in rows if c.op == op and keep(c)]))
            lines.append("")
    return "\n".join(lines)
