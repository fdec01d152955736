"""The ``solkit gpus`` and ``solkit gpu NAME`` commands: the shipped specs, and one spec with every figure's source."""

from __future__ import annotations

import argparse
from typing import Any

from ._cli_output import emit


def cmd_gpus(_args: argparse.Namespace) -> int:
    from .hardware import list_gpus, load_gpu
    from .report import format_table

    rows = []
    for name in list_gpus():
        g = load_gpu(name)

        rows.append((name, g.full_name, _peak_text(g, "bf16"), _peak_text(g, "fp8"), f"{g.memory.bandwidth_tb_s:g}",
                     f"{g.memory.capacity_gb:g}", ", ".join(g.aliases) or "-", "yes" if g.measured else "-"))
    print(format_table(rows, ("name", "full name", "bf16 TFLOP/s", "fp8 TFLOP/s", "TB/s", "GB", "aliases", "measured")))
    print("\nDense peaks. `solkit gpu NAME` shows every figure with its source.")
    return 0


def _peak_text(gpu: Any, precision: str) -> str:
    return f"{gpu.peak_flops(precision) / 1e12:g}" if precision in gpu.precisions else "-"


def cmd_gpu(args: argparse.Namespace) -> int:
    from .hardware import load_gpu
    from .report import format_table

    g = load_gpu(args.name)
    if args.json:
        emit(g.model_dump(mode="json"))
        return 0
    print(f"{g.full_name} ({g.name}), {g.vendor} {g.architecture}; aliases: {', '.join(g.aliases) or '-'}")
    c, m, i = g.chip, g.memory, g.interconnect
    print(f"  {c.compute_units} {c.compute_unit_name}s, boost {c.boost_clock_mhz:g} MHz, L2 {c.l2_cache_mb:g} MB, "
          f"TDP {c.tdp_w:g} W   [{c.source}]")
    print(f"  memory {m.capacity_gb:g} GB {m.type} at {m.bandwidth_tb_s:g} TB/s   [{m.source}]")
    print(f"  {i.name} {i.bandwidth_gb_s or '-'} GB/s, {i.pcie} {i.pcie_bandwidth_gb_s:g} GB/s   [{i.source}]")
    rows = [(p.precision, p.unit, f"{p.tflops:g}", f"{p.sparse_tflops:g}" if p.sparse_tflops else "-", p.source,
             p.note or "") for p in g.peaks]
    print()
    print(format_table(rows, ("precision", "unit", "dense TFLOP/s", "sparse", "source", "note")))
    print("\nsources:")
    for s in g.sources:
        print(f"  [{s.id}] {s.title}{' (preliminary)' if s.preliminary else ''}\n      {s.url}")
    if g.measured:
        ms = g.measured
        print(f"\nmeasured {ms.date}: matmul {', '.join(f'{k} {v:g}' for k, v in ms.matmul_rate_tflops.items())} TFLOP/s; "
              f"copy {ms.copy_bandwidth_tb_s:g} TB/s; launch floor {ms.launch_floor_us:g} us")
        print(f"  stack: {', '.join(f'{k} {v}' for k, v in ms.stack.items())}")
    return 0
