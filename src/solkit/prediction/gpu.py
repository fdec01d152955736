"""A GPU's calibration: its spec's ``measured:`` section in SI units with its neighbour bank, else the reference's shares.

A GPU with no ``measured:`` section takes ``REFERENCE_GPU``'s measured shares of the datasheet as its
ceilings (matmul rate per precision, copy bandwidth) and that calibration's launch floor, latencies and
efficiencies, and says so in ``Prediction.notes``. Where it is the reference's chip (``same_chip``: its
architecture and SM count) it also borrows the reference's neighbour bank: the bank holds the libraries'
choices by shape (cuBLAS's and cuDNN's kernels, split-K, SDPA's backend), which follow the chip, not its memory.
On an H100 SXM (seed 2070, 1,070 random kernels measured after 39c5bec, read to make this choice) the borrowed
bank took the median / p90 error from 13.0% / 49.7% to 8.6% / 36.2% (``data/h100_test_seed2070_frozen.md``); on the
frozen seed-2071 draw measured after (1,220 kernels) from 13.2% / 52.2% to 9.7% / 38.8%
(``data/h100_test_seed2071_frozen.md``); on the newest, seed 2072 (1,220 kernels, frozen for 9a326bf), from 12.4% /
53.7% to 8.8% / 44.7% (``data/h100_test_seed2072_frozen.md``). Only the H100 SXM was measured: the NVL parts (other
clocks and power) borrow it untested.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..comm import COLLECTIVES
from ..errors import SpecError
from ..hardware import as_gpu, load_spec_file, shipped_dir
from ..hardware.parameters import PARAMETERS, Calibration, ReadOnlyTable
from ..ops.registry import calibration_keys
from ..precision import rate_class
from ..stacks import torch211
from .._validate import checked_call, did_you_mean

if TYPE_CHECKING:  # pragma: no cover
    from ..hardware.schema import GPU, Measured

__all__ = ["REFERENCE_GPU", "calibration", "matmul_rate", "same_chip", "stack_note"]

#: the measured GPU whose calibration an uncalibrated GPU borrows (read from the shipped specs)
REFERENCE_GPU = "h200-sxm"


@checked_call
def calibration(gpu: Any) -> Calibration:
    """The predictor's parameters for ``gpu`` in SI units: its ``measured:`` section, else the reference's shares.

    Computed once per loaded spec. The per-key tables' keys must be kernel kinds or calibration
    keys of registered operators (``solkit.ops.calibration_keys()``); anything else is a
    ``SpecError`` naming the file and the field.
    """
    g = as_gpu(gpu)
    memo = g.memo
    cal = memo.get("calibration")
    if cal is None:
        cal = memo["calibration"] = _borrowed(g) if g.measured is None else _measured(g, g.measured)
    return cal


def _measured(g: "GPU", measured: "Measured") -> Calibration:
    keys = set(calibration_keys())
    for p in PARAMETERS:
        if p.name.startswith("link_") and p.keyed:
            unknown = [k for k in getattr(measured, p.file_key) if k not in COLLECTIVES]
            if unknown:
                raise SpecError(f"{g.path or g.name}: field 'measured.{p.file_key}': {unknown[0]!r} is not a collective; "
                                f"known: {', '.join(COLLECTIVES)}")
        elif p.name == "op_host_weight":  # host keys (capture.host_keys) whose calls op_host.py measures
            unknown = [k for k in getattr(measured, p.file_key) if k not in torch211.HOST_KEYS]
            if unknown:
                raise SpecError(f"{g.path or g.name}: field 'measured.{p.file_key}': {unknown[0]!r} is not a measured "
                                f"host key; known: {', '.join(torch211.HOST_KEYS)}"
                                f"{did_you_mean(unknown[0], torch211.HOST_KEYS)}")
        elif p.keyed and p.name != "matmul_rate":
            unknown = [k for k in getattr(measured, p.file_key) if k not in keys]
            if unknown:
                raise SpecError(f"{g.path or g.name}: field 'measured.{p.file_key}': {unknown[0]!r} is neither a kernel "
                                f"kind nor a registered operator's calibration key; known: {', '.join(sorted(keys))}")
    cal = measured.calibration(g.name)
    if measured.neighbours is None:
        return cal
    from .bank import load_neighbours  # the bank's schema (pydantic) loads with the first bank

    # beside the spec, else (a copied spec) in the shipped folder
    beside = Path(g.path).parent / measured.neighbours if g.path else None
    path = beside if beside is not None and beside.exists() else shipped_dir() / measured.neighbours
    if not path.exists() and beside is not None:
        path = beside  # the error names the place the spec points to
    return cal.replace(neighbours=load_neighbours(path, g.name))


def reference_spec() -> "GPU":
    """The shipped spec of ``REFERENCE_GPU``: the measured GPU an uncalibrated one borrows from."""
    return load_spec_file(shipped_dir() / f"{REFERENCE_GPU}.yaml")


def same_chip(gpu: "GPU", other: "GPU") -> bool:
    """Whether two GPUs are one chip to the libraries: the same architecture and SM count (H100 SXM and H200 SXM)."""
    return gpu.architecture == other.architecture and gpu.sm_count == other.sm_count


def _borrowed(g: "GPU") -> Calibration:
    """An uncalibrated GPU: ceilings at the reference's measured shares of its own datasheet, the rest borrowed (its
    neighbour bank too, where ``same_chip``)."""
    ref_gpu = reference_spec()
    ref = calibration(ref_gpu)
    bf16_share = ref.matmul_rate["bf16"] / ref_gpu.peak_flops("bf16")
    rates = {}
    for cls in g.precisions:
        try:
            peak = g.peak_flops(cls, "matrix")
        except LookupError:
            continue
        share = ref.matmul_rate[cls] / ref_gpu.peak_flops(cls) if cls in ref.matmul_rate else bf16_share
        rates[cls] = share * peak
    bw_share = ref.copy_bandwidth / ref_gpu.memory_bandwidth
    bank = ref.neighbours if ref.neighbours is not None and same_chip(g, ref_gpu) else None
    shares = (f"{g.name} has no measured section: uncalibrated, at {REFERENCE_GPU}'s measured shares of the datasheet "
              f"(matmul {bf16_share:.0%} of the dense bf16 peak, copy {bw_share:.0%} of the bandwidth), its launch "
              f"floor ({ref.launch_floor * 1e6:g} us)")
    plain = f"{shares} and its kernel efficiencies and latencies"  # the note without a bank (neighbours=False too)
    source = plain if bank is None else (f"{shares}, its kernel efficiencies and latencies and its neighbour bank "
                                         f"({len(bank):,} measured kernels: the same chip, {g.architecture} with "
                                         f"{g.sm_count} SMs)")
    cal = ref.replace(gpu=g.name, calibrated=False, source=source, matmul_rate=ReadOnlyTable(rates),
                      copy_bandwidth=bw_share * g.memory_bandwidth, read_bandwidth=None, neighbours=bank)
    cal.memo["physical_source"] = plain
    return cal


def stack_note(gpu: "GPU") -> Optional[str]:
    """What a prediction on ``gpu`` assumes of the software, where its spec was measured with another stack than the
    one solkit's library facts were read off (``solkit.stacks.torch211``); None where they agree (memoized per spec)."""
    memo = gpu.memo
    if "stack_note" not in memo:
        memo["stack_note"] = _stack_note(gpu)
    return memo["stack_note"]  # type: ignore[no-any-return]


def _stack_note(gpu: "GPU") -> Optional[str]:
    """``stack_note`` written out."""
    stack = gpu.measured.stack if gpu.measured is not None else None
    if stack is not None and all(stack.get(key) == value for key, value in torch211.VERSIONS.items()):
        return None
    measured = (f"its spec was measured with {', '.join(f'{k} {v}' for k, v in stack.items())}" if stack is not None
                else "its spec has no measured stack")
    return (f"library choices (SDPA's backend, cuBLAS's and cuDNN's kernel classes, eager launch counts) are those of "
            f"torch {torch211.VERSIONS['torch']} (solkit.stacks.torch211); {measured}")


@checked_call
def matmul_rate(cal: Calibration, gpu: "GPU", precision: str) -> float:
    """Achievable dense matmul FLOP/s of ``precision``: measured, else the bf16 measured share of its peak."""
    cls = rate_class(precision)
    rate = cal.matmul_rate.get(cls)
    if rate is None:
        share = cal.matmul_rate["bf16"] / gpu.peak_flops("bf16") if "bf16" in cal.matmul_rate else 1.0
        rate = share * gpu.peak_flops(precision, "matrix")
    return rate
