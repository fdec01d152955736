"""Nsight Compute CSV (``ncu --csv --page raw``) to kernel records with measured DRAM bytes.

The file, as ``benchmarks/profiling/record.py`` keeps it (``data/profiles/ncu_ops.csv.gz``): a header row, a units
row (``byte``/``Kbyte``/``Mbyte``..., ``ns``/``nsecond``/``usecond``/``msecond``...; empty for text columns), then
one row per profiled kernel launch, numbers with thousands separators (``"1,980,000"``). Lines that ncu writes
itself (``==PROF==``, ``==WARNING==``) are skipped wherever they are.

Per row: ``seconds`` from ``gpu__time_duration.sum``; ``bytes_read``/``bytes_written`` from
``dram__bytes_read.sum``/``dram__bytes_write.sum`` and ``measured_bytes`` their sum (None when the metric is
absent or "n/a"), converted exactly to seconds and bytes (byte prefixes are decimal, as ncu prints them: Kbyte =
1000 byte; Kibyte/KiB = 1024; a figure beyond float64, or durations summing beyond it, is a MeasurementError naming
the cell, never an inf); ``nvtx`` the push/pop range names of the launching thread, outer to inner; ``ncu_sol``
ncu's own speed-of-light figures where the CSV carries them (``SOL_COLUMNS``: the "GPU Speed Of Light Throughput"
section's SM and memory throughput, % of peak sustained, in a ``%`` column).
NB: ncu serializes kernels (each is replayed alone with caches flushed), so there is no real timeline: ``start``
is the sum of the durations of the rows before it, and a profile of ncu rows has no idle time.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from ..errors import MeasurementError
from ._read import KernelRecord

__all__ = ["KernelRecord", "NcuReport", "NcuMeta", "read_ncu", "parse_ncu", "TIME_UNITS", "BYTE_UNITS", "parse_nvtx",
           "SOL_COLUMNS"]

TIME_COLUMN = "gpu__time_duration.sum"
READ_COLUMN = "dram__bytes_read.sum"
WRITE_COLUMN = "dram__bytes_write.sum"
NVTX_PREFIX = "thread Domain:Push/Pop_Range"
#: ncu's speed-of-light figures read when present: label -> metric (Nsight Compute's SpeedOfLight section)
SOL_COLUMNS = {"SM": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
               "memory": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"}

TIME_UNITS: dict[str, Decimal] = {
    "nsecond": Decimal("1e-9"), "ns": Decimal("1e-9"),
    "usecond": Decimal("1e-6"), "us": Decimal("1e-6"),
    "msecond": Decimal("1e-3"), "ms": Decimal("1e-3"),
    "second": Decimal(1), "s": Decimal(1),
}
BYTE_UNITS: dict[str, Decimal] = {
    "byte": Decimal(1), "B": Decimal(1),
    "Kbyte": Decimal(10**3), "Mbyte": Decimal(10**6), "Gbyte": Decimal(10**9), "Tbyte": Decimal(10**12),
    "KB": Decimal(10**3), "MB": Decimal(10**6), "GB": Decimal(10**9), "TB": Decimal(10**12),
    "Kibyte": Decimal(2**10), "Mibyte": Decimal(2**20), "Gibyte": Decimal(2**30), "Tibyte": Decimal(2**40),
    "KiB": Decimal(2**10), "MiB": Decimal(2**20), "GiB": Decimal(2**30), "TiB": Decimal(2**40),
}


@dataclass(frozen=True, slots=True)
class NcuMeta:
    """What an ncu CSV says about itself: its path, row count, the units of the three metrics, the processes."""

    path: str
    rows: int
    time_unit: str
    read_unit: str | None
    write_unit: str | None
    processes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NcuReport:
    """The kernel records of an ncu CSV, in row order, and its metadata."""

    kernels: tuple[KernelRecord, ...]
    meta: NcuMeta


def read_ncu(text: str, path: str) -> tuple[KernelRecord, ...]:
    """The kernel records of an ``ncu --csv --page raw`` CSV, in row order."""
    return parse_ncu(text, path).kernels


_QUOTED = re.compile(r'"([^"]*)"')


def parse_nvtx(cell: str) -> tuple[str, ...]:
    """Range names of ncu's push/pop NVTX cell (``561  "<default domain>:sk_measure:none:..."  "..."``), outer first.

    Each quoted item is ``Domain:Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg``; the range name is what lies
    between the domain and the six trailing fields (so a name may hold colons). The domain is dropped.
    """
    out = []
    for item in _QUOTED.findall(cell):
        parts = item.split(":")
        out.append(":".join(parts[1:-6]) if len(parts) >= 8 else item)
    return tuple(out)


def _number(cell: str, where: str) -> Decimal | None:
    """A Decimal of an ncu number ("1,980,000", "3.12"); "", "n/a" and "N/A" are None."""
    s = cell.strip().replace(",", "")
    if s == "" or s.lower() in ("n/a", "na", "-"):
        return None
    try:
        d = Decimal(s)
    except InvalidOperation:
        raise MeasurementError(f"{where}: expected a number, got {cell!r}") from None
    if not d.is_finite() or d < 0:
        raise MeasurementError(f"{where}: expected a finite number >= 0, got {cell!r}")
    return d


def _exact(d: Decimal) -> float:
    """An int when ``d`` is whole (bytes), else the nearest float."""
    return int(d) if d == d.to_integral_value() else float(d)


def _held(d: Decimal, where: str, cell: str, unit: str) -> Decimal:
    """``d`` if float64 holds it (below 1.8e308 of its SI unit), else a MeasurementError naming the cell's value."""
    if not math.isfinite(float(d)):
        raise MeasurementError(f"{where}: {cell.strip()!r} {unit} is beyond what float64 holds (1.8e308 "
                               f"{'seconds' if unit in TIME_UNITS else 'bytes'}); a corrupt or hand-edited row?")
    return d


def _triple(cell: str) -> tuple[int, ...]:
    """ "(384, 1, 1)" as (384, 1, 1); anything else as ()."""
    nums = re.findall(r"\d+", cell)
    return tuple(int(n) for n in nums) if cell.strip().startswith("(") else ()


def _int_cell(row: list[str], col: int | None, default: int) -> int:
    """An int of a cell (thousands separators allowed), else ``default``."""
    if col is None:
        return default
    s = row[col].strip().replace(",", "")
    return int(s) if s.lstrip("-").isdigit() else default


def parse_ncu(text: str, path: str) -> NcuReport:
    """Kernel records and metadata of an ncu raw-page CSV; a missing column, units row or number: MeasurementError."""
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith("==")]
    try:
        rows = [r for r in csv.reader(io.StringIO("".join(lines))) if r]
    except csv.Error as exc:
        raise MeasurementError(f"profile {path!r} is not valid CSV ({exc})") from None
    if not rows:
        raise MeasurementError(f"profile {path!r} holds no CSV rows (only ncu messages?)")
    header = rows[0]
    col = {name: i for i, name in reversed(list(enumerate(header)))}  # the first of duplicate names
    missing = [c for c in ("ID", "Kernel Name", TIME_COLUMN) if c not in col]
    if missing:
        raise MeasurementError(
            f"profile {path!r}: the ncu CSV lacks the column(s) {', '.join(map(repr, missing))}; record it with "
            f"ncu --csv --page raw --metrics {TIME_COLUMN},{READ_COLUMN},{WRITE_COLUMN}"
        )
    if len(rows) < 2 or rows[1][col["ID"]].strip() != "":
        raise MeasurementError(
            f"profile {path!r}: the ncu CSV has no units row (the second line, empty under \"ID\"); "
            "the time and byte columns cannot be converted without it"
        )
    units = rows[1]
    if len(units) != len(header):
        raise MeasurementError(f"profile {path!r}: the units row has {len(units)} cells, the header {len(header)}")

    def scale(name: str, table: dict[str, Decimal]) -> tuple[Decimal, str]:
        unit = units[col[name]].strip()
        if unit not in table:
            raise MeasurementError(
                f"profile {path!r}: column {name!r} is in unit {unit!r}; expected one of {', '.join(table)}"
            )
        return table[unit], unit

    t_scale = scale(TIME_COLUMN, TIME_UNITS)
    r_scale = scale(READ_COLUMN, BYTE_UNITS) if READ_COLUMN in col else None
    w_scale = scale(WRITE_COLUMN, BYTE_UNITS) if WRITE_COLUMN in col else None
    nvtx_col = next((i for i, name in enumerate(header) if name.startswith(NVTX_PREFIX)), None)
    sol_cols = {label: col[name] for label, name in SOL_COLUMNS.items() if name in col}
    for label, i in sol_cols.items():
        if units[i].strip() != "%":
            raise MeasurementError(f"profile {path!r}: column {SOL_COLUMNS[label]!r} is in unit {units[i].strip()!r}; "
                                   "expected '%'")
    i_name, i_time = col["Kernel Name"], col[TIME_COLUMN]
    i_stream, i_device = col.get("Stream"), col.get("Device")
    i_grid, i_block = col.get("Grid Size"), col.get("Block Size")
    records: list[KernelRecord] = []
    clock = Decimal(0)
    processes: list[str] = []
    for n, row in enumerate(rows[2:], start=3):
        where = f"profile {path!r}, row {n}"
        if len(row) != len(header):
            raise MeasurementError(f"{where} has {len(row)} cells, the header {len(header)}; truncated?")
        t = _number(row[i_time], f"{where}, {TIME_COLUMN}")
        if t is None:
            raise MeasurementError(f"{where}: {TIME_COLUMN} is empty for kernel {row[i_name]!r}")
        t_s = _held(t * t_scale[0], f"{where}, {TIME_COLUMN}", row[i_time], t_scale[1])
        rd = _bytes(row, r_scale, col.get(READ_COLUMN), f"{where}, {READ_COLUMN}")
        wr = _bytes(row, w_scale, col.get(WRITE_COLUMN), f"{where}, {WRITE_COLUMN}")
        if rd is not None and wr is not None:
            _held(rd + wr, f"{where}, {READ_COLUMN} + {WRITE_COLUMN}", f"{rd + wr:.4g}", "byte")
        if not math.isfinite(float(clock + t_s)):
            raise MeasurementError(f"{where}: the durations of the rows up to it sum to {clock + t_s:.4g} s, beyond what "
                                   "float64 holds (1.8e308); a corrupt or hand-edited row?")
        proc = row[col["Process Name"]] if "Process Name" in col else ""
        if proc and proc not in processes:
            processes.append(proc)
        records.append(KernelRecord(
            name=row[i_name],
            start=float(clock),
            seconds=float(t_s),
            kind="kernel",
            stream=_int_cell(row, i_stream, 0),
            device=_int_cell(row, i_device, 0),
            grid=_triple(row[i_grid]) if i_grid is not None else (),
            block=_triple(row[i_block]) if i_block is not None else (),
            measured_bytes=None if rd is None or wr is None else _exact(rd + wr),
            bytes_read=None if rd is None else _exact(rd),
            bytes_written=None if wr is None else _exact(wr),
            nvtx=parse_nvtx(row[nvtx_col]) if nvtx_col is not None else (),
            ncu_sol=_sol_figures(row, sol_cols, where),
        ))
        clock += t_s
    if not records:
        raise MeasurementError(f"profile {path!r}: the ncu CSV has a header and units but no kernel rows")
    meta = NcuMeta(
        path=path,
        rows=len(records),
        time_unit=t_scale[1],
        read_unit=r_scale[1] if r_scale else None,
        write_unit=w_scale[1] if w_scale else None,
        processes=tuple(processes),
    )
    return NcuReport(tuple(records), meta)


def _bytes(row: list[str], scale: tuple[Decimal, str] | None, i: int | None, where: str) -> Decimal | None:
    """A byte cell times its unit, or None when the column is absent or the value "n/a"."""
    if scale is None or i is None:
        return None
    d = _number(row[i], where)
    return None if d is None else _held(d * scale[0], where, row[i], scale[1])


def _sol_figures(row: list[str], columns: dict[str, int], where: str) -> tuple[tuple[str, float], ...]:
    """(label, % of peak) of each SOL column the row fills ("n/a" cells left out)."""
    out = []
    for label, i in columns.items():
        d = _number(row[i], f"{where}, {SOL_COLUMNS[label]}")
        if d is not None:
            out.append((label, float(d)))
    return tuple(out)
