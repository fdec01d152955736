"""The ``solkit`` command. With no arguments it prints the standard operator table on H200 and A100."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .errors import SolkitError

__all__ = ["main"]

DEFAULT_GPUS = ("h200", "a100")


def _cmd_table(args: argparse.Namespace) -> int:
    from .hardware import load_gpu
    from .report import roofline_table
    from .standard import standard_workloads

    gpus = [load_gpu(g) for g in args.gpu]
    print("Speed-of-light bounds of the standard operators (dense datasheet peaks, compulsory DRAM bytes)")
    for g in gpus:
        print(f"  {g}; bf16 {g.peak_flops('bf16') / 1e12:g} TFLOP/s")
    print()
    print(roofline_table(standard_workloads(), gpus))
    return 0


def _cmd_gpus(args: argparse.Namespace) -> int:
    from .hardware import list_gpus, load_gpu
    from .report import format_table

    rows = []
    for name in list_gpus():
        g = load_gpu(name)
        bf16 = f"{g.peak_flops('bf16') / 1e12:g}" if "bf16" in g.precisions else "-"
        rows.append((name, g.full_name, bf16, f"{g.memory.bandwidth_tb_s:g}", f"{g.memory.capacity_gb:g}"))
    print(format_table(rows, ("name", "full name", "bf16 TFLOP/s", "TB/s", "GB")))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``solkit`` command."""
    parser = argparse.ArgumentParser(prog="solkit", description="Speed-of-light and MFU modeling of GPU operators.")
    sub = parser.add_subparsers(dest="command")
    table = sub.add_parser("table", help="roofline table of the standard operators (the default command)")
    table.add_argument("--gpu", action="append", help="GPU name or alias (repeatable; default h200 and a100)")
    table.set_defaults(func=_cmd_table)
    gpus = sub.add_parser("gpus", help="list the GPU specs")
    gpus.set_defaults(func=_cmd_gpus)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: errors are one line on stderr and exit code 2."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["table", *argv]
    args = parser.parse_args(argv)
    if getattr(args, "gpu", None) is None and args.command == "table":
        args.gpu = list(DEFAULT_GPUS)
    try:
        return args.func(args)
    except SolkitError as exc:
        print(f"solkit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
