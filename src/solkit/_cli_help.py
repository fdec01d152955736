"""Help read off the operator registry: ``solkit ops``, ``solkit op OP --help``, and shell completion scripts."""

from __future__ import annotations

import inspect
import textwrap
from typing import Any, Sequence

__all__ = ["op_help", "ops_list", "completion_script", "SHELLS", "first_line"]

SHELLS = ("bash", "zsh")


def first_line(function: Any) -> str:
    """The first line of a function's docstring (its one-line description)."""
    doc = inspect.getdoc(function) or ""
    return doc.splitlines()[0] if doc else ""


def ops_list() -> str:
    """Every registered operator with its one-line description."""
    from . import ops
    from .report import format_table

    rows = [(name, first_line(ops.REGISTRY[name].function)) for name in ops.OPERATORS]
    return format_table(rows, ("op", "what it counts")) + "\n\n`solkit op OP --help` lists an op's parameters."


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def op_help(op: Any) -> str:
    """An operator's usage, description and parameters (meaning, allowed values, default), from its registration."""
    defaults = op.defaults
    required = [p for p in op.params if p.name not in defaults]
    usage = " ".join(f"{_flag(p.name)} {p.name.upper()}" for p in required)
    lines = [f"usage: solkit op {op.name} {usage} [OPTIONAL ...] [--gpu G] [--dtype D] [--measured TIME] [--json]", "",
             inspect.getdoc(op.function) or "", "", "parameters:"]
    for p in op.params:
        spelled = f"{_flag(p.name)}, --no-{p.name.replace('_', '-')}" if p.kind == "flag" else f"{_flag(p.name)} {p.name.upper()}"
        default = "required" if p.name not in defaults else f"default {defaults[p.name]!r}"
        lines.append(f"  {spelled}")
        lines += textwrap.wrap(f"{p.help}. Takes {p.describe}; {default}.", width=100, initial_indent=" " * 6,
                               subsequent_indent=" " * 6)
    lines += ["",
             "Booleans are flags: --causal (true), --no-causal (false); a value also works: --causal false.",
             "--measured TIME (180us, 0.2ms, 1.5e-4s; a comma list is several runs, their median): the measured time",
             "against the speed of light, the roofs and the calibrated prediction, with a verdict."]
    return "\n".join(lines)


def completion_script(shell: str, commands: Sequence[str]) -> str:
    """A completion script for ``shell`` (bash or zsh: zsh runs it through bashcompinit) naming ``commands``, ops and GPUs."""
    from . import ops
    from .hardware import list_gpus, load_gpu

    command_names = " ".join(commands)
    op_names = " ".join(ops.OPERATORS)
    gpu_names = " ".join(sorted({n for g in list_gpus() for n in (g, *load_gpu(g).aliases)}))
    body = f'''_solkit() {{
    local cur prev words
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=( $(compgen -W "{command_names}" -- "$cur") ); return
    fi
    case "$prev" in
        --gpu|gpu) COMPREPLY=( $(compgen -W "{gpu_names}" -- "$cur") ); return;;
        op|compare|sweep|--op) COMPREPLY=( $(compgen -W "{op_names}" -- "$cur") ); return;;
        completion) COMPREPLY=( $(compgen -W "{' '.join(SHELLS)}" -- "$cur") ); return;;
    esac
    COMPREPLY=()
}}
complete -o default -F _solkit solkit
'''
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body
