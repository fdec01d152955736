"""The ``solkit`` command.

    solkit                                   roofline table of the standard operators on H200 and A100
    solkit table [--gpu G ...]               the same on other GPUs
    solkit gpus                              the shipped specs, key peaks and bandwidth
    solkit gpu NAME                          one spec, every figure with its source
    solkit op OP --PARAM VALUE ... [--gpu G] [--dtype D] [--measured TIME] [--json]
    solkit op OP --help                      that op's parameters (meaning, allowed values, defaults)
    solkit ops                               every op with a one-line description
    solkit sweep OP --PARAM A:B ... [--gpu G ...] [--plot OUT] [--csv OUT]   T_SOL and prediction over a range
    solkit completion bash|zsh               a shell completion script
    solkit compare OP --PARAM VALUE ... --baseline K=V[|K=V] --variant K=V[|K=V] [--gpu G ...] [--json]
    solkit compare OP --PARAM VALUE ... --gpu G1 --gpu G2      the same op across GPUs
    solkit mfu --flops F --seconds S [--gpu G] [--n-gpus N] [--dtype D] [--json]
    solkit plot [--gpu G] [--op OP --PARAM VALUE ...] --out FILE.png
    solkit profile TRACE [TRACE ...] [--gpu G] [--top N] [--json] [--plot OUT]   a real trace against its SOL
    solkit tune matmul --m M --n N --k K [--configs FILE.json] [--top 10]   a Triton kernel's configs ranked

--gpu: every command takes it and none requires it; a GPU defaults to h200 (the GPU with measurements of its own),
named in the output's first line; the default table shows h200 and a100. --json: one object in one naming scheme
(``_cli_output.OP_KEYS``; docs/cli.md): times end in _s, bytes are ints, counts are n_kernels / launches / calls.

Exit codes: 0 done; 1 done, but a measured number is impossible (faster than the speed of light,
MFU above 1): the result is printed and the warning is one line on stderr (``warning: ...``); 1 also
when the output cannot be written (a full disk, ``> /dev/full``: one ``solkit: error:`` line on stderr;
a reader that closed the pipe, ``| head``, ends it quietly with 0, as before);
2 bad input: one line on stderr (``solkit: error: ...``), nothing on stdout; 3 a solkit bug (one
line, never a traceback). Other solkit warnings are one ``warning:`` line each and keep exit 0.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from typing import Any, NoReturn, Sequence

import numpy as np

from ._cli_gpus import cmd_gpu, cmd_gpus
from ._cli_profile import cmd_profile
from ._cli_output import DEFAULT_GPU, GuardedStdout, OutputError, emit, op_json, quiet_stdout, say
from ._display import fmt_value
from ._validate import did_you_mean
from .errors import CLIError, ImpossibleMeasurementWarning, SolkitError, SolkitWarning

__all__ = ["main", "build_parser", "parse_value"]

#: the --gpu rule: every command takes --gpu and none requires it; one GPU defaults to DEFAULT_GPU (the GPU with
#: measurements of its own, named in every output's first line), the overview table to DEFAULT_GPUS
DEFAULT_GPUS = (DEFAULT_GPU, "a100")
GPU_HELP = f"GPU name, alias or spec path (`solkit gpus` lists them; default {DEFAULT_GPU})"
GPUS_HELP = f"GPU name, alias or spec path; repeat it for several GPUs (default {DEFAULT_GPU})"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and no abbreviated options (``--he`` is not ``--help``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise CLIError(message if self.prog == "solkit" else f"{self.prog.removeprefix('solkit ')}: {message}")


def parse_value(text: str, name: str = "value") -> Any:
    """A command-line value: int, float, true/false, none, 'r,s' pair of ints, or the string itself.

    A number too large for float64 (``1e400``) is a CLIError naming ``name``, not an inf.
    """
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low == "none":
        return None
    for cast in (int, float):
        try:
            value = cast(text)
        except ValueError:
            continue
        if cast is float and math.isinf(value) and "inf" not in low:
            raise CLIError(f"{name} must be a number that float64 holds (below 1.8e308), got {text.strip()} (inf as a "
                           "float64)")
        return value
    if "," in text:
        return tuple(parse_value(part, name) for part in text.split(","))
    return text


def _operator(name: str) -> Any:
    """The registered operator called ``name`` (dashes or underscores); the error lists the registered ones."""
    from . import ops

    try:
        return ops.get(name)
    except SolkitError as exc:
        raise CLIError(str(exc)) from None


def _op_params(op: Any, rest: Sequence[str], require: bool = True) -> dict[str, Any]:
    """--name value (or --name=value) pairs checked against the operator's registered parameters (dashes or underscores)."""
    names = [p.name for p in op.params]
    params: dict[str, Any] = {}
    i = 0
    items = list(rest)
    while i < len(items):
        flag = items[i]
        if not flag.startswith("--"):
            raise CLIError(f"expected --PARAMETER VALUE, got {flag!r}")
        key = flag[2:]
        flags = {p.name for p in op.params if p.kind == "flag"}
        if "=" in key:
            key, value = key.split("=", 1)
            i += 1
        elif key.replace("-", "_") in flags and (i + 1 >= len(items) or items[i + 1].startswith("--")):
            value, i = "true", i + 1  # --causal alone (last, or before the next --option) is true
        elif key.startswith("no-") and key[3:].replace("-", "_") in flags:
            key, value, i = key[3:], "false", i + 1  # --no-causal
        elif key.startswith("no-") and key[3:].replace("-", "_") in names:
            raise CLIError(f"--{key}: {key[3:]} is not a boolean ({op.name} takes --{key[3:]} VALUE)")
        else:
            if i + 1 >= len(items):
                raise CLIError(f"--{key} needs a value")
            value = items[i + 1]
            i += 2
        if not key:
            raise CLIError(f"expected --PARAMETER VALUE, got {flag!r}")
        key = key.replace("-", "_")
        if key not in names:
            raise CLIError(f"{op.name} has no parameter {key!r}; it takes: {', '.join(names)} (`solkit op {op.name} --help`)")
        if key in params:
            raise CLIError(f"--{key.replace('_', '-')} is given twice")
        parsed = parse_value(value, f"--{key.replace('_', '-')}")
        lengths = {p.name for p in op.params if p.kind == "lengths"}
        params[key] = (parsed,) if key in lengths and type(parsed) is int else parsed  # --seq-lens 512: one length
    return _complete(op, params) if require else params


def _one_shape(op: Any, params: dict[str, Any], command: str) -> dict[str, Any]:
    """``params`` if each holds one value (a kernel size's pair aside); a comma list is a sweep: a CLIError naming it."""
    pairs = {p.name for p in op.params if p.kind in ("pair", "lengths")}  # one value each: a pair, a list of lengths
    for key, value in params.items():
        if isinstance(value, tuple) and key not in pairs:
            flag = f"--{key.replace('_', '-')}"
            raise CLIError(f"{flag} takes one value in `solkit {command}`, got the list {','.join(map(str, value))}; "
                           f"a list is a sweep: `solkit sweep {op.name} {flag} {','.join(map(str, value))} ...`")
    return params


def _assignments(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    out = {}
    for part in text.split(";") if ";" in text else text.split(" "):
        for item in part.split("|"):
            if not item:
                continue
            if "=" not in item or not item.split("=", 1)[0].strip():
                raise CLIError(f"variants are KEY=VALUE (e.g. fused=false), got {item!r}")
            k, v = item.split("=", 1)
            key = k.strip().replace("-", "_")
            if key in out:
                raise CLIError(f"{key} is given twice in {text!r}")
            out[key] = parse_value(v, key)
    return out


def _cmd_table(args: argparse.Namespace) -> int:
    from .hardware import load_gpu
    from .report import roofline_table
    from .standard import standard_workloads

    gpus = [load_gpu(g) for g in (args.gpu or DEFAULT_GPUS)]
    print("Speed-of-light bounds of the standard operators (dense datasheet peaks, compulsory DRAM bytes)")
    for g in gpus:
        calibrated = f"calibrated {g.measured.date}" if g.measured else "uncalibrated: predictions marked ~"
        print(f"  {g}; bf16 {g.peak_flops('bf16') / 1e12:g} TFLOP/s; {calibrated}")
    print()
    print(roofline_table(standard_workloads(), gpus))
    print("\npredicted us: the calibrated expected time (solkit.predict); `solkit op NAME ...` shows one op per kernel.")
    return 0


def _op_report(name: str, params: dict[str, Any], gpu: Any) -> dict[str, Any]:
    """Roofline and prediction of one op as a JSON-ready dict (times in seconds)."""
    from .prediction import predict
    from .sol import roofline

    w = _operator(name).function(**params)
    r = roofline(w, gpu)
    if np.ndim(r.t_sol):
        raise CLIError("the CLI takes scalar shapes; use solkit.sweep() in Python for sweeps")
    p = predict(w, gpu, warn=False)
    out = r.to_dict()
    out.update(op=name, params=params, predicted_seconds=p.seconds, calibrated=p.calibrated, notes=list(p.notes))
    for k, kp, (kernel, count) in zip(out["kernels"], p.kernels, w.counted):
        k.update(predicted_seconds=kp.seconds, limiter=kp.limiter, neighbour_factor=kp.neighbour,
                 launches=count * float(np.max(kernel.launches)))  # what the CPU issues: runs x launches a run
    return out


def _kernel_rows(report: dict[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for k in report["kernels"]:
        rows.append((k["name"], k["kind"], f"{k['executed_flops'] / 1e9:,.3f}", f"{k['bytes'] / 1e6:,.3f}",
                     f"{k['intensity']:,.1f}", f"{k['t_compute'] * 1e6:,.2f}", f"{k['t_memory'] * 1e6:,.2f}",
                     f"{k['t_sol'] * 1e6:,.2f}", k["bound"], f"{k['predicted_seconds'] * 1e6:,.2f}",
                     _factor(k["neighbour_factor"]), k["limiter"]))
    rows.append(("total", "", f"{report['executed_flops'] / 1e9:,.3f}", f"{report['bytes'] / 1e6:,.3f}",
                 f"{report['intensity']:,.1f}", f"{report['t_compute'] * 1e6:,.2f}", f"{report['t_memory'] * 1e6:,.2f}",
                 f"{report['t_sol'] * 1e6:,.2f}", report["bound"], f"{report['predicted_seconds'] * 1e6:,.2f}", "", ""))
    return rows


def _factor(x: Any) -> str:
    """A kernel's neighbour factor as its row shows it: '0.93', '-' where the correction left it alone."""
    return "-" if float(x) == 1.0 else f"{float(x):.2f}"


KERNEL_HEADER = ("kernel", "kind", "GFLOP", "MB", "FLOP/B", "t_compute us", "t_memory us", "t_sol us", "bound",
                 "predicted us", "nbr x", "limiter")
#: how predict's neighbour note begins; `solkit op` prints it once, short, its factors being the table's "nbr x"
NEIGHBOUR_NOTE = "neighbour correction from "


def _op_notes(notes: Sequence[str]) -> list[str]:
    """The prediction's notes for `solkit op`, each once; the neighbour note without the factors its table shows."""
    out = []
    for note in dict.fromkeys(notes):
        if note.startswith(NEIGHBOUR_NOTE) and ":" in note:
            note = (f"{note.split(':', 1)[0]}: each kernel's factor is its 'nbr x' (predict(..., neighbours=False) "
                    "gives the physical model alone)")
        out.append(note)
    return out


def _with_dtype(op: Any, params: dict[str, Any], dtype: str | None) -> dict[str, Any]:
    if dtype is not None:
        if "dtype" not in [p.name for p in op.params]:
            raise CLIError(f"{op.name} takes no dtype")
        params = {**params, "dtype": dtype}
    return params


def _cmd_op(args: argparse.Namespace) -> int:
    from .hardware import load_gpu
    from .report import format_table

    op = _operator(args.op)
    params = _one_shape(op, _with_dtype(op, _op_params(op, args.params), args.dtype), "op")
    gpu = load_gpu(args.gpu)
    report = _op_report(args.op, params, gpu)
    if args.measured is not None:
        from ._cli_measured import measured_report, parse_seconds

        report["measured"] = measured_report(op.function(**params), gpu, parse_seconds(args.measured), report)
    if args.json:
        emit(op_json(report))
        return 0
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    print(f"{args.op}({shown}) on {gpu.full_name}")
    print(f"model FLOPs {report['flops']:.6g}, executed {report['executed_flops']:.6g}, bytes {report['bytes']:.6g}")
    print()
    print(format_table(_kernel_rows(report), KERNEL_HEADER))
    print(f"\nT_SOL {report['t_sol'] * 1e6:,.2f} us ({report['bound']}-bound); predicted "
          f"{report['predicted_seconds'] * 1e6:,.2f} us ({'calibrated' if report['calibrated'] else 'uncalibrated defaults'})")
    for note in _op_notes(report["notes"]):
        print(f"note: {note}")
    if "measured" in report:
        from ._cli_measured import measured_lines

        print()
        print("\n".join(measured_lines(report["measured"])))
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ._cli_sweep import sample_rows, sweep_columns, write_csv
    from .hardware import load_gpu
    from .report import format_table

    op = _operator(args.op)
    if args.rows < 1:
        raise CLIError(f"--rows must be a positive integer (rows of the printed table), got {args.rows}")
    params = _with_dtype(op, _op_params(op, args.params, require=False), args.dtype)
    missing = [p for p in op.params if p.name not in op.defaults and p.name not in params]
    if missing:
        _complete(op, params)  # names what is missing
    gpus = [load_gpu(g) for g in (args.gpu or [DEFAULT_GPU])]
    columns = sweep_columns(op, params, gpus)
    swept = [k for k in columns if k not in ("gpu", "t_sol_s", "predicted_s", "bound")]
    first = columns["gpu"] == gpus[0].name
    index = sample_rows(columns, args.rows)
    n = int(np.sum(first))
    rows = []
    for i in index:
        row = [fmt_value(columns[k][i]) for k in swept]
        for j, g in enumerate(gpus):
            at = j * n + i
            row += [f"{columns['t_sol_s'][at] * 1e6:,.2f}", f"{columns['predicted_s'][at] * 1e6:,.2f}", str(columns["bound"][at])]
        rows.append(tuple(row))
    header = [*swept]
    for g in gpus:
        header += [f"{g.name} t_sol us", f"{g.name} predicted us", "bound"]
    fixed = ", ".join(f"{k}={v}" for k, v in params.items() if k not in swept)
    print(f"{args.op}({fixed}) over {' x '.join(swept)}: {n:,} points per GPU ({len(index)} shown)")
    print(format_table(rows, header))
    if args.csv:
        print(f"wrote {write_csv(columns, args.csv)}")
    if args.plot:
        from .plot import save
        from .plot import sweep as plot_sweep

        try:
            print(f"wrote {save(plot_sweep(columns, title=f'{args.op}({fixed})'), args.plot)}")
        except SolkitError as exc:
            raise CLIError(f"--plot: {exc}") from None
    return 0


def _cmd_ops(_args: argparse.Namespace) -> int:
    from ._cli_help import ops_list

    print(ops_list())
    return 0


def _cmd_completion(args: argparse.Namespace) -> int:
    from ._cli_help import completion_script

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    print(completion_script(args.shell, tuple(sub.choices)), end="")  # the parser's own subcommands
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from .fusion import compare
    from .hardware import load_gpu
    from .report import format_table

    op = _operator(args.op)
    base = _one_shape(op, _with_dtype(op, _op_params(op, args.params, require=False), args.dtype), "compare")
    gpus = [load_gpu(g) for g in (args.gpu or DEFAULT_GPUS[:1])]
    a = _one_shape(op, _assignments(args.baseline), "compare --baseline")
    b = _one_shape(op, _assignments(args.variant), "compare --variant")
    if not a and not b:
        if len(gpus) < 2:
            raise CLIError("compare needs --baseline/--variant KEY=VALUE, or two or more --gpu")
        reports = [_op_report(args.op, _complete(op, base), g) for g in gpus]
        if args.json:
            emit({"op": args.op, "params": base, "gpus": reports})
            return 0
        rows: list[tuple[str, ...]] = [(r["gpu"], f"{r['t_sol'] * 1e6:,.2f}", r["bound"], f"{r['predicted_seconds'] * 1e6:,.2f}",
                 f"{reports[0]['t_sol'] / r['t_sol']:.2f}") for r in reports]
        print(format_table(rows, ("gpu", "t_sol us", "bound", "predicted us", f"T_SOL speedup vs {gpus[0].name}")))
        return 0
    wa = op.function(**_complete(op, {**base, **a}))
    wb = op.function(**_complete(op, {**base, **b}))
    results = [compare(wa, wb, g) for g in gpus]
    measured = _measured_comparison(args, op, {**base, **a}, {**base, **b}, gpus)
    if args.json:
        emit({"op": args.op, "params": base, "baseline": a, "variant": b, "comparisons": [c.to_dict() for c in results],
               **({"measured": measured} if measured else {})})
        return 0
    def predicted(c: Any) -> tuple[str, str, str]:
        if c.predicted_speedup is None:  # no calibration: said below the table, never T_SOL in its place
            return "n/a", "n/a", "n/a"
        return f"{c.predicted_before * 1e6:,.2f}", f"{c.predicted_after * 1e6:,.2f}", f"{c.predicted_speedup:.2f}"

    rows = [(c.gpu, f"{c.kernels_baseline}->{c.kernels_variant}", f"{c.bytes_baseline / 1e6:,.2f}",
             f"{c.bytes_variant / 1e6:,.2f}", f"{100 * c.bytes_saved_fraction:.1f}", f"{c.t_sol_baseline * 1e6:,.2f}",
             f"{c.t_sol_variant * 1e6:,.2f}", f"{c.speedup:.2f}", *predicted(c)) for c in results]
    print(f"{args.op}: baseline {a or '(defaults)'} vs variant {b or '(defaults)'}")
    print(format_table(rows, ("gpu", "kernels", "MB before", "MB after", "% bytes saved", "T_SOL before us",
                              "T_SOL after us", "T_SOL ratio", "predicted before us", "predicted after us",
                              "predicted ratio")))
    for c in results:
        if c.predicted_speedup is None:
            print(f"predicted n/a on {c.gpu}: {c.predicted_note}")
    for m in measured:
        from ._cli_measured import measured_lines

        print(f"\nbaseline measured on {m['gpu']}:")
        print("\n".join(measured_lines(m["baseline"])))
        print(f"variant: T_SOL {m['variant_t_sol'] * 1e6:,.2f} us, predicted {m['variant_predicted'] * 1e6:,.2f} us: "
              f"expect about {m['expected_speedup']:.2f}x the measured baseline (at most {m['sol_speedup']:.2f}x)")
    return 0


def _measured_comparison(args: argparse.Namespace, op: Any, a: dict[str, Any], b: dict[str, Any],
                         gpus: list[Any]) -> list[dict[str, Any]]:
    """With --measured (the baseline's time): per GPU its measured report and what the variant should take."""
    if args.measured is None:
        return []
    from ._cli_measured import measured_report, parse_seconds

    seconds = parse_seconds(args.measured)
    out = []
    for g in gpus:
        base_report = _op_report(args.op, _complete(op, a), g)
        variant = _op_report(args.op, _complete(op, b), g)
        figures = measured_report(op.function(**_complete(op, a)), g, seconds, base_report)
        # the variant as far from its prediction as the baseline is from its own
        expected = variant["predicted_seconds"] * figures["headroom_to_predicted"]
        out.append({"gpu": g.name, "baseline": figures, "variant_t_sol": variant["t_sol"],
                    "variant_predicted": variant["predicted_seconds"], "expected_speedup": seconds / expected,
                    "sol_speedup": seconds / variant["t_sol"]})
    return out


def _complete(op: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` if it names every required parameter of ``op`` and no other."""
    defaults = op.defaults
    missing = [p for p in op.params if p.name not in defaults and p.name not in params]
    if missing:
        flags = [f"--{p.name.replace('_', '-')}" for p in missing]
        meaning = "; ".join(f"{f}: {p.help}, {p.describe}" for f, p in zip(flags, missing))
        raise CLIError(f"{op.name} needs {', '.join(flags)} ({meaning})")
    names = [p.name for p in op.params]
    unknown = [k for k in params if k not in names]
    if unknown:
        raise CLIError(f"{op.name} has no parameter {unknown[0]!r}; it takes: {', '.join(names)}")
    return params


def _cmd_mfu(args: argparse.Namespace) -> int:
    from .hardware import load_gpu
    from .sol import mfu

    gpu = load_gpu(args.gpu)
    value = mfu(args.flops, args.seconds, gpu, dtype=args.dtype, n_gpus=args.n_gpus)
    peak = gpu.peak_flops(args.dtype)
    achieved = args.flops / args.seconds / args.n_gpus
    if args.json:
        emit({"mfu": value, "gpu": gpu.name, "dtype": args.dtype, "n_gpus": args.n_gpus, "model_flops": args.flops,
              "measured_s": args.seconds, "peak_flop_per_s": peak, "achieved_flop_per_s": achieved})  # rates per GPU
        return 0
    print(f"MFU {value:.2%}: {args.flops:.4g} FLOP in {args.seconds:g} s on {args.n_gpus} x {gpu.name} = "
          f"{achieved / 1e12:,.1f} TFLOP/s per GPU of {peak / 1e12:g} dense {args.dtype}")
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from .hardware import load_gpu
    from .plot import roofline as plot_roofline
    from .plot import save
    from .standard import standard_workloads

    gpu = load_gpu(args.gpu)
    if args.op:
        op = _operator(args.op)
        params = _one_shape(op, _with_dtype(op, _op_params(op, args.params), args.dtype), "plot")
        label = f"{args.op}(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"
        workloads = {label: op.function(**params)}
    else:
        if args.params:
            raise CLIError("operator parameters need --op")
        workloads = standard_workloads()
    fig = plot_roofline(workloads, gpu)
    try:
        written = save(fig, args.out)
    except SolkitError as exc:
        raise CLIError(f"--out: {exc}") from None
    print(f"wrote {written}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``solkit`` command."""
    parser = _Parser(prog="solkit", description="Speed-of-light and MFU modeling of GPU operators.",
                     epilog="With no command: the roofline table of the standard operators on H200 and A100.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    p = sub.add_parser("table", help="roofline table of the standard operators (the default command)")
    p.add_argument("--gpu", action="append", help="GPU name, alias or spec path; repeat it for several GPUs "
                                                  f"(default {' and '.join(DEFAULT_GPUS)})")
    p.set_defaults(func=_cmd_table)

    p = sub.add_parser("gpus", help="list the GPU specs")
    p.set_defaults(func=cmd_gpus)

    p = sub.add_parser("gpu", help="one GPU spec with the source of every figure")
    p.add_argument("name", help="GPU name, alias or path to a YAML spec")
    p.add_argument("--json", action="store_true", help="print the spec as JSON")
    p.set_defaults(func=cmd_gpu)

    p = sub.add_parser("op", help="roofline and prediction of one operator, per kernel",
                       description="Parameters are the op's own: e.g. solkit op matmul --m 8192 --n 8192 --k 8192; "
                                   "`solkit op OP --help` lists them, `solkit ops` lists the ops")
    p.add_argument("op", help="an operator in solkit.ops (matmul, attention, conv2d, ...)")
    p.add_argument("--gpu", default=DEFAULT_GPU, help=GPU_HELP)
    p.add_argument("--dtype", help="precision (bf16, fp16, fp8, tf32, fp32, fp64, int8)")
    p.add_argument("--measured", metavar="TIME", help="your kernel's time with a unit (180us, 0.2ms, 1.5e-4s; a comma "
                                                      "list: the median): SOL fraction, roofs, MFU/HFU, a verdict")
    p.add_argument("--json", action="store_true", help="one JSON object (keys as docs/cli.md says: t_sol_s, "
                                                       "predicted_s, bytes, n_kernels, launches, kernels: a list)")
    p.set_defaults(func=_cmd_op)

    p = sub.add_parser("ops", help="every operator with a one-line description")
    p.set_defaults(func=_cmd_ops)

    p = sub.add_parser("compare", help="two variants of an op (fused/unfused, layouts, impls), or one op across GPUs",
                       description="e.g. solkit compare layernorm_residual --tokens 8192 --d-model 4096 "
                                   "--baseline fused=false --variant fused=true --gpu a100 --gpu h200")
    p.add_argument("op", help="an operator in solkit.ops; its shared parameters follow as --PARAM VALUE")
    p.add_argument("--baseline", help="KEY=VALUE[|KEY=VALUE] overriding the shared parameters (e.g. fused=false)")
    p.add_argument("--variant", help="KEY=VALUE[|KEY=VALUE] overriding the shared parameters (e.g. fused=true)")
    p.add_argument("--gpu", action="append", help=GPUS_HELP + "; two or more without --baseline/--variant: "
                                                            "the op across GPUs")
    p.add_argument("--dtype", help="precision of both variants (bf16, fp16, fp8, tf32, fp32, fp64, int8)")
    p.add_argument("--measured", metavar="TIME", help="the baseline's measured time with a unit (110us): what the "
                                                      "variant should then take")
    p.add_argument("--json", action="store_true", help="one JSON object (seconds; docs/cli.md's keys)")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("sweep", help="T_SOL and the prediction over a range of one or two parameters: table, CSV, chart",
                       description="e.g. solkit sweep matmul --m 1:8192 --n 4096 --k 4096 --gpu h200 --plot m.png. A range "
                                   "a:b holds every integer from a to b (both ends), a:b:step every step-th; a list is "
                                   "comma-separated. One or two parameters may be swept.")
    p.add_argument("op", help="an operator in solkit.ops; its parameters follow as --PARAM VALUE, A:B or A,B,C")
    p.add_argument("--gpu", action="append", help=GPUS_HELP)
    p.add_argument("--dtype", help="precision (bf16, fp16, fp8, tf32, fp32, fp64, int8)")
    p.add_argument("--plot", metavar="OUT", help="write the curves (T_SOL and predicted per GPU) to OUT")
    p.add_argument("--csv", metavar="OUT", help="write every point to OUT as CSV")
    p.add_argument("--rows", type=int, default=12, help="rows of the printed table (default 12, spread over the sweep)")
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser("completion", help="print a shell completion script (commands, op and GPU names)",
                       description="bash: source <(solkit completion bash); zsh: source <(solkit completion zsh)")
    p.add_argument("shell", choices=("bash", "zsh"))
    p.set_defaults(func=_cmd_completion)

    p = sub.add_parser("mfu", help="model FLOPs utilization of a measured run",
                       description="MFU = model FLOPs / (dense peak of the precision x seconds x GPUs), e.g. "
                                   "solkit mfu --flops 3.2e18 --seconds 3600 --gpu h100 --n-gpus 8")
    p.add_argument("--flops", type=float, required=True, help="model FLOPs of the run (all GPUs together)")
    p.add_argument("--seconds", type=float, required=True, help="wall-clock seconds of the run")
    p.add_argument("--gpu", default=DEFAULT_GPU, help="the GPU the run used: " + GPU_HELP)
    p.add_argument("--n-gpus", type=int, default=1, help="GPUs the run used (default 1)")
    p.add_argument("--dtype", default="bf16", help="the precision whose dense matrix peak MFU divides by (default bf16)")
    p.add_argument("--json", action="store_true", help="one JSON object: mfu, model_flops, measured_s, per-GPU rates")
    p.set_defaults(func=_cmd_mfu)

    p = sub.add_parser("plot", help="roofline chart (PNG/SVG/PDF) of the standard operators or one op")
    p.add_argument("--gpu", default=DEFAULT_GPU, help=GPU_HELP)
    p.add_argument("--op", help="an operator; its parameters follow as --PARAM VALUE")
    p.add_argument("--dtype", help="precision of --op (bf16, fp16, fp8, tf32, fp32, fp64, int8)")
    p.add_argument("--out", required=True, help="output file; the format is its suffix (.png, .svg, .pdf, ...); a name "
                                                "without a suffix gets .png. The path written is printed")
    p.set_defaults(func=_cmd_plot)

    p = sub.add_parser(
        "profile", help="a real trace (torch.profiler or ncu CSV) against its speed of light: op groups, idle time, MFU",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read a torch.profiler Chrome trace (record_shapes=True) or an `ncu --csv --page raw` file, plain\n"
                    "or gzip, map each kernel to a solkit operator and report per op group the measured time, T_SOL,\n"
                    "SOL fraction and calibrated prediction, the top opportunities, idle time and MFU.\n"
                    "Several TRACE files are the ranks of one job: the report is the slowest rank's.",
        epilog="example:\n  solkit profile trace.json.gz --gpu h200 --top 5 --plot prof.png\n"
               "  (prints the report, writes prof.png and prof-roofline.png and prints both paths)")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="profile file(s); several = one per rank")
    p.add_argument("--gpu", default=None, help="the GPU the trace ran on (default: the GPU a Chrome trace's "
                                               f"deviceProperties name, else {DEFAULT_GPU}): " + GPU_HELP)
    p.add_argument("--top", type=int, default=10,
                   help="opportunities listed, and op groups with a bar of their own in the time chart (default 10)")
    p.add_argument("--json", action="store_true", help="one JSON object (times in seconds, keys ending _s): aggregates, "
                                                       "groups, opportunities")
    p.add_argument("--plot", metavar="OUT", help="write the time breakdown to OUT and the roofline to OUT-roofline "
                                                 "(same suffix; .png without one) and print both paths")
    p.set_defaults(func=cmd_profile)

    from ._cli_model import add_model_parser

    add_model_parser(sub)
    from ._cli_tune import add_tune_parser

    add_tune_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 done, 1 an impossible measured number (warned on stderr), 2 bad input (one line), never a traceback."""
    items = list(sys.argv[1:] if argv is None else argv)
    if not items or (items[0].startswith("-") and items[0] not in ("-h", "--help")):
        items = ["table", *items]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = _run(items)
    if code == 2:
        return code
    shown = set()
    for w in caught:
        if not issubclass(w.category, SolkitWarning):
            continue  # numpy's and other libraries' warnings are not solkit's to show
        line = (str(w.message).splitlines() or [w.category.__name__])[0]
        if line not in shown:
            shown.add(line)
            say(f"warning: {line}")
        if issubclass(w.category, ImpossibleMeasurementWarning) and code == 0:
            code = 1
    return code


def _unknown_command(parser: argparse.ArgumentParser, name: str) -> None:
    """A CLIError for a command that is not one, with the nearest command when one is near."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands = tuple(sub.choices)
    if name in commands:
        return
    raise CLIError(f"argument command: invalid choice: {name!r}{did_you_mean(name, commands)} (choose from "
                   f"{', '.join(commands)}; `solkit --help` says what each does)")


def _run(items: list[str]) -> int:
    """Parse and run one command; a solkit error is one line on stderr and exit code 2."""
    parser = build_parser()
    stdout = sys.stdout
    if stdout is not None:  # None: started with stdout closed (`solkit gpus >&-`), print() then writes nothing
        sys.stdout = GuardedStdout(stdout)  # type: ignore[assignment]  # a proxy with write, flush and the rest
    try:
        if items and not items[0].startswith("-"):
            _unknown_command(parser, items[0])
        if len(items) >= 2 and items[0] == "op" and not items[1].startswith("-") and ("-h" in items or "--help" in items):
            from ._cli_help import op_help

            print(op_help(_operator(items[1])))
            if sys.stdout is not None:
                sys.stdout.flush()
            return 0
        args, rest = parser.parse_known_args(items)
        if args.command in ("op", "compare", "plot", "sweep"):
            args.params = rest
        elif rest:
            raise CLIError(f"unrecognized arguments: {' '.join(rest)}")
        code = int(args.func(args))
        if sys.stdout is not None:
            sys.stdout.flush()  # here, not at exit: a full disk is found while it can still be reported
        return code
    except SolkitError as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        say(f"solkit: error: {message}")
        return 2
    except SystemExit as exc:  # --help: argparse prints the help and exits
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # e.g. `solkit gpus | head`: the reader is done; not an error
        quiet_stdout()
        return 0
    except OutputError as exc:  # e.g. `solkit gpus > /dev/full`: the result could not be written; not a solkit bug
        quiet_stdout()
        say(f"solkit: error: cannot write the output to stdout: {exc}")
        return 1
    except KeyboardInterrupt:  # pragma: no cover - Ctrl-C
        say("solkit: interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug in solkit: one line, never a traceback
        say(f"solkit: internal error ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
             f"please report it")
        return 3
    finally:
        if stdout is not None:
            sys.stdout = stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
