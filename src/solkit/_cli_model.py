"""``solkit model PRESET_OR_CONFIG``: a whole model's program on a GPU, summarised the way ``solkit profile`` reads.

PRESET_OR_CONFIG is a preset name (``solkit.models.preset_names()``) or a Hugging Face ``config.json`` (a file or a
folder holding one): the closed form where solkit has one, else the model captured from transformers' own code
(``models.from_hf_config``; torch and transformers needed). The program: the forward (``--mode forward``, logits for
every token), ``prefill`` (a fresh KV cache) or ``decode`` (one token against ``--context`` cached tokens), or with
``--train`` one training step (AdamW, AMP for a 16-bit forward). The summary is the prediction's own (what it
assumes, host and GPU time, op groups with T_SOL, the prediction and its share, the top kernels, the notes) with the
model's FLOPs and MFU, the coverage of a captured program, its memory and, with ``--measured``, MFU against your step
time.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from .errors import CLIError

__all__ = ["add_model_parser", "cmd_model"]

MODES = ("forward", "prefill", "decode")


def add_model_parser(sub: Any) -> None:
    """The ``model`` subcommand's arguments."""
    p = sub.add_parser("model", help="a whole model's program (preset or config.json): op groups, top kernels, MFU",
                       description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="example:\n  solkit model llama3-8b --train --batch 1 --seq 4096 --gpu h200 --measured 520ms\n"
                              "  solkit model path/to/config.json --mode decode --batch 8 --context 4096")
    p.add_argument("model", metavar="PRESET_OR_CONFIG", help="a preset name, or a config.json file or folder")
    p.add_argument("--train", action="store_true", help="one training step (AdamW; AMP for a bf16 forward)")
    p.add_argument("--mode", choices=MODES, default="forward", help="the inference program (default forward)")
    p.add_argument("--batch", type=int, default=1, help="sequences (default 1)")
    p.add_argument("--seq", type=int, default=2048, help="tokens per sequence (default 2048)")
    p.add_argument("--context", type=int, default=2048, help="cached tokens of a decode step (default 2048)")
    p.add_argument("--dtype", default="bf16", help="the forward's precision (default bf16)")
    p.add_argument("--gpu", default="h200", help="GPU name, alias or spec path (default h200)")
    p.add_argument("--measured", metavar="TIME", help="your step's time with a unit (520ms): MFU, SOL fraction, error")
    p.add_argument("--top", type=int, default=10, help="kernels listed by predicted time (default 10)")
    p.add_argument("--json", action="store_true", help="one JSON object (times in seconds, keys *_s; the assumptions)")
    p.set_defaults(func=cmd_model)


def _model(name: str) -> Any:
    """A preset by name, else a config.json path's model; neither: a one-line error saying so."""
    from . import models

    if os.path.exists(name):
        return models.from_hf_config(name)
    if name in models.preset_names():
        return models.preset(name)
    if os.sep in name or name.endswith(".json"):
        raise CLIError(f"PRESET_OR_CONFIG {name!r} is neither a preset nor an existing config.json file or folder")
    return models.preset(name)  # its error names the presets, with a near one


def cmd_model(args: argparse.Namespace) -> int:
    """Run ``solkit model`` (the module docstring)."""
    from . import models
    from ._cli_measured import parse_seconds
    from .capture.hf import CapturedModel
    from .hardware import as_gpu
    from .summary import program_summary

    for flag_name in ("batch", "seq", "context", "top"):
        if getattr(args, flag_name) < 1:
            raise CLIError(f"--{flag_name} must be a positive integer, got {getattr(args, flag_name)}")
    if args.train and args.mode != "forward":
        raise CLIError(f"--train runs a training step of the forward; --mode {args.mode} is an inference program")
    gpu = as_gpu(args.gpu)
    m = _model(args.model)
    if args.train and isinstance(m, CapturedModel):  # captured once, as the step runs (not its forward first)
        w = m.training_step(batch=args.batch, seq=args.seq, dtype=args.dtype)
    elif args.train:
        w = models.training_step(m.forward(batch=args.batch, seq=args.seq, dtype=args.dtype))
    elif args.mode == "prefill":
        w = m.prefill(batch=args.batch, seq=args.seq, dtype=args.dtype)
    elif args.mode == "decode":
        w = m.decode(batch=args.batch, context=args.context, dtype=args.dtype)
    else:
        w = m.forward(batch=args.batch, seq=args.seq, dtype=args.dtype)
    measured = None if args.measured is None else parse_seconds(args.measured)
    summary = program_summary(w, gpu, measured, args.top, memory=_memory_line(m, w, args, gpu))
    if args.json:
        from ._display import plain

        print(json.dumps(plain({"source": m.source, **summary.to_dict()}), indent=2, default=str))
        return 0
    print(f"{m.name}: {m.source}")
    print(summary.text())
    return 0


def _memory_line(m: Any, w: Any, args: argparse.Namespace, gpu: Any) -> str:
    """What the program holds on the GPU: a captured program's live-bytes peak, else the closed form's footprint."""
    from .capture.program import CapturedProgram

    if isinstance(w.recipe, CapturedProgram):
        peak = w.recipe.memory.peak
        what = "the captured program's peak of live tensors"
    else:
        seq = args.context + 1 if (not args.train and args.mode == "decode") else args.seq
        footprint = m.memory(batch=args.batch, seq=seq, training=args.train, gpu=gpu, dtype=args.dtype)
        peak = footprint.total
        what = "weights, gradients, optimizer states, activations and KV cache (closed form)"
    fits = "fits" if peak <= gpu.memory_capacity else "does NOT fit"
    return f"memory {peak / 1e9:.3g} GB, {what}: {fits} in {gpu.memory_capacity / 1e9:.3g} GB"
