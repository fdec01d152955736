"""The ``solkit tune`` command: a Triton kernel's configs ranked for one shape by solkit.tune's tile model.

    solkit tune matmul --m M --n N --k K [--configs FILE.json] [--top 10] [--gpu G] [--dtype D] [--json]
    solkit tune layernorm --rows R --cols C ...      (softmax too)
    solkit tune attention --batch B --heads H --seq-q S [--seq-kv S] [--head-dim D] [--causal] ...

Without --configs the kernel's usual space is ranked (tune.triton_matmul_space() and the like); FILE.json holds a list
of configs with Triton's names ([{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}]).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._cli_output import DEFAULT_GPU, emit
from .errors import CLIError

__all__ = ["add_tune_parser", "cmd_tune"]

#: each kernel's shape options (the ``rank`` keywords they give)
SHAPE_OPTIONS = {
    "matmul": ("m", "n", "k"), "softmax": ("rows", "cols"), "layernorm": ("rows", "cols"),
    "attention": ("batch", "heads", "seq_q", "seq_kv", "head_dim", "causal"),
}
_INTS = ("m", "n", "k", "rows", "cols", "batch", "heads", "seq_q", "seq_kv", "head_dim")


def add_tune_parser(sub: Any) -> None:
    """The ``tune`` subcommand's arguments."""
    p = sub.add_parser("tune", help="a Triton kernel's configs ranked for one shape (tile model): the fastest, and "
                                    "why some cannot launch",
                       description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="example:\n  solkit tune matmul --m 4096 --n 4096 --k 4096 --top 5\n"
                              "  solkit tune matmul --m 8192 --n 1024 --k 4096 --configs my_configs.json --json")
    p.add_argument("kernel", choices=tuple(SHAPE_OPTIONS), help="the kernel: Triton's tutorial GEMM, softmax, "
                                                                 "LayerNorm or fused attention forward")
    for name in _INTS:
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=int, default=None, metavar="N")
    p.add_argument("--causal", action="store_true", help="attention: causal (bottom-right aligned)")
    p.add_argument("--configs", metavar="FILE.json", help="a JSON list of configs (default: the kernel's usual space)")
    p.add_argument("--top", type=int, default=10, help="configs listed, fastest first (default 10)")
    p.add_argument("--gpu", default=DEFAULT_GPU, help=f"GPU name, alias or spec path (default {DEFAULT_GPU})")
    p.add_argument("--dtype", default="bf16", help="operand precision (default bf16)")
    p.add_argument("--json", action="store_true", help="one JSON object: the ranked configs (seconds), then those "
                                                       "that cannot launch with their reasons")
    p.set_defaults(func=cmd_tune)


def _configs(kernel: str, path: str | None) -> list[Any]:
    """The configs of ``path`` (a JSON list, or an object with a "configs" list), else the kernel's usual space."""
    from . import tune

    if path is None:
        if kernel == "matmul":
            return tune.triton_matmul_space()
        if kernel == "attention":
            return tune.triton_attention_space()
        return tune.triton_row_space()
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise CLIError(f"--configs: cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CLIError(f"--configs: {path} is not valid JSON: {exc}") from None
    if isinstance(data, dict) and "configs" in data:
        data = data["configs"]
    if not isinstance(data, list):
        raise CLIError(f"--configs: {path} must hold a list of configs (dicts of Triton's names), got a "
                       f"{type(data).__name__}")
    return data


def cmd_tune(args: argparse.Namespace) -> int:
    from . import tune

    if args.top < 1:
        raise CLIError(f"--top must be a positive integer, got {args.top}")
    wanted = SHAPE_OPTIONS[args.kernel]
    shape: dict[str, Any] = {}
    for name in _INTS:
        value = getattr(args, name)
        if value is None:
            continue
        if name not in wanted:
            raise CLIError(f"--{name.replace('_', '-')} is not a shape of {args.kernel}; it takes "
                           + ", ".join("--" + w.replace("_", "-") for w in wanted))
        shape[name] = value
    if args.causal:
        if "causal" not in wanted:
            raise CLIError(f"--causal is not an option of {args.kernel}")
        shape["causal"] = True
    kernel = {"matmul": "triton_matmul", "softmax": "triton_softmax", "layernorm": "triton_layernorm",
              "attention": "triton_flash_attention"}[args.kernel]
    ranking = tune.rank(kernel, _configs(args.kernel, args.configs), gpu=args.gpu, dtype=args.dtype, **shape)
    if args.json:
        emit(ranking.to_dict(args.top))
        return 0
    print(ranking.report(args.top))
    return 0
