"""The ``solkit profile`` command: a trace read on the GPU it names (or ``--gpu``), its report, JSON and charts."""

from __future__ import annotations

import argparse
import os
import re
import warnings
from typing import Any

from ._cli_output import DEFAULT_GPU, emit
from .errors import CLIError, SolkitError, SolkitWarning


#: a Chrome trace's first device name (torch.profiler writes ``deviceProperties`` first; found anywhere in the file)
_DEVICE_NAME = re.compile(r'"deviceProperties"\s*:\s*\[\s*\{[^\]]*?"name"\s*:\s*"([^"]{1,200})"')


def _trace_gpu(path: str, given: str | None) -> Any:
    """The GPU a profile is read on: ``given``, else the GPU its Chrome trace names, else DEFAULT_GPU; a SolkitWarning
    where the trace names another GPU than ``given``, or names none and ``given`` is missing."""
    from .hardware import as_gpu
    from .profile._read import read_text

    try:
        text, _ = read_text(path)
    except SolkitError:
        return given or DEFAULT_GPU  # load_profile says what is wrong with the file
    at = text.find('"deviceProperties"')
    found = _DEVICE_NAME.match(text, at) if at >= 0 else None
    named = found.group(1) if found else None
    traced = _gpu_named(named) if named else None
    if given is None:
        if traced is None:
            warnings.warn(f"the trace names {'no GPU' if named is None else repr(named) + ', not a known GPU'}: read as "
                          f"{DEFAULT_GPU} (pass --gpu)", SolkitWarning)
        return traced or DEFAULT_GPU
    if traced is not None and as_gpu(given).name != traced.name:
        warnings.warn(f"the trace ran on {named!r} ({traced.name}), read as --gpu {given} ({as_gpu(given).name})",
                      SolkitWarning)
    return given


def _gpu_named(device: str) -> Any:
    """The shipped or configured spec a profiler's device name means, or None: the name or alias whose words (split at
    dashes) are all among the device name's, the most words winning ('NVIDIA A100 80GB PCIe' -> a100-pcie-80gb, 'NVIDIA
    H200' -> the alias h200); only spec names and aliases are matched, never a path."""
    from .hardware import list_gpus, load_gpu

    words = set(re.split(r"[\s\-_]+", device.lower()))
    best: tuple[int, str] | None = None
    for name in list_gpus():
        spec = load_gpu(name)
        for label in (spec.name, *spec.aliases):
            parts = label.lower().split("-")
            if set(parts) <= words and (best is None or len(parts) > best[0]):
                best = (len(parts), label)
    return load_gpu(best[1]) if best else None


def cmd_profile(args: argparse.Namespace) -> int:
    from .profile import load_profile

    if args.top < 1:
        raise CLIError(f"--top must be a positive integer, got {args.top}")
    profile = load_profile(args.traces if len(args.traces) > 1 else args.traces[0], _trace_gpu(args.traces[0], args.gpu))
    written: list[str] = []
    if args.plot is not None:
        from .plot import profile_roofline, save, time_breakdown

        try:
            written.append(save(time_breakdown(profile, top=args.top), args.plot))  # save adds .png to a bare name
            root, suffix = os.path.splitext(written[0])
            written.append(save(profile_roofline(profile), root + "-roofline" + suffix))
        except SolkitError as exc:
            raise CLIError(f"--plot: {exc}") from None
    if args.json:
        data = profile.to_dict(args.top)
        if args.plot is not None:
            data["plots"] = written
        emit(data)
        return 0
    print(profile.report(args.top))
    for path in written:
        print(f"wrote {path}")
    return 0
