"""The ``solkit`` command's streams: a stdout whose refused writes are told apart from solkit's errors, one line on
stderr, a stdout quieted after its reader left."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

#: the GPU a command about one GPU reads on when none is named (cli's --gpu rule)
DEFAULT_GPU = "h200"


class OutputError(Exception):
    """stdout refused a write (a full disk, /dev/full, an I/O error): not a solkit bug; ``cause`` is the OSError."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(cause.strerror or str(cause))
        self.cause = cause


class GuardedStdout:
    """sys.stdout for the length of one command: a failed write or flush raises ``OutputError`` (a closed pipe stays a
    BrokenPipeError), so that it is told apart from every other OSError."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def say(line: str) -> None:
    """One line on stderr; a stderr that cannot be written is let be (there is nowhere else to say it)."""
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError, AttributeError):  # pragma: no cover - stderr closed or full
        pass


def quiet_stdout() -> None:
    """Point stdout at /dev/null so Python's exit flush does not complain of the closed pipe."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover - stdout is not a file
        pass


def emit(obj: Any) -> None:
    from ._display import plain

    print(json.dumps(plain(obj), indent=2, default=str))


#: The one naming scheme of the CLI's JSON (docs/cli.md, "JSON"): a time ends in ``_s`` (seconds), a rate names its
#: units (``_flop_per_s``, ``_bytes_per_s``), bytes are ``bytes`` or end in ``_bytes`` (ints where whole), FLOPs are
#: ``model_flops`` / ``executed_flops``, a count of things is ``n_`` + the things (``n_kernels``, ``n_gpus``), a count
#: of events is the events (``launches``, ``calls``), a ratio or a fraction has no suffix (``mfu``, ``sol_fraction``),
#: and ``kernels`` is always a list of per-kernel objects. ``OP_KEYS``: the op report's keys (a ``Roofline.to_dict``
#: and the prediction's) in that scheme.
OP_KEYS = {
    "t_sol": "t_sol_s", "t_compute": "t_compute_s", "t_memory": "t_memory_s", "t_link": "t_link_s",
    "t_matrix": "t_matrix_s", "t_vector": "t_vector_s", "predicted_seconds": "predicted_s",
    "intensity": "intensity_flop_per_byte", "ridge_point": "ridge_point_flop_per_byte", "flops": "model_flops",
    "count": "runs", "measured_seconds": "measured_s", "achieved_flops": "achieved_flop_per_s",
    "peak_flops": "peak_flop_per_s", "achieved_bandwidth": "achieved_bytes_per_s",
    "memory_bandwidth": "memory_bytes_per_s",
}  # a kernel's ``neighbour_factor`` (1.0: the neighbour correction left it alone) keeps its name


def op_json(report: dict[str, Any]) -> dict[str, Any]:
    """An op report (``cli._op_report``, with ``measured``) in the JSON scheme: keys renamed by ``OP_KEYS``, bytes as
    ints, and the top level's ``n_kernels`` (distinct kernels) and ``launches`` (what the CPU issues: each kernel's
    ``runs`` times the launches of one run)."""
    from ._display import whole

    def renamed(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {OP_KEYS.get(k, k): whole(v) if k in ("bytes", "launches") else renamed(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [renamed(v) for v in obj]
        return obj

    out: dict[str, Any] = {"op": report["op"]} if "op" in report else {}
    if "params" in report:
        out["params"] = {k: whole(v) for k, v in report["params"].items()}
    out.update(renamed({k: v for k, v in report.items() if k not in ("op", "params")}))
    kernels = out.get("kernels", [])
    out["n_kernels"] = len(kernels)
    out["launches"] = whole(sum(k.get("launches", k.get("runs", 1)) for k in kernels))
    return out
