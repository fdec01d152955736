"""A GPU's launch and occupancy limits and the tile models' fitted parameters, in SI units, read from its spec.

The limits come from the spec's ``sm_limits`` (CUDA C++ Programming Guide figures); a spec without them cannot be
used here, and the error says which field it lacks. Its DRAM bandwidth and launch floor are the predictor's
(``prediction.gpu.calibration``: measured, else the reference's measured shares of the datasheet). The fitted
parameters come from ``measured.tune``; a spec without them borrows the reference's where it is the reference's chip
at its clocks (``prediction.gpu.same_chip`` and the same boost clock: the H100 SXM runs the H200's SMs, clocks and
Triton code generation, with other memory; the NVL parts' clocks differ), else gets ``DEFAULT_PARAMS``; either way the ranking says it is uncalibrated, and a borrowed fit says whose it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from .._display import fmt_value
from ..errors import MissingFigureError
from ..hardware import as_gpu

__all__ = ["Limits", "Params", "DEFAULT_PARAMS", "limits_of", "params_of", "programs_per_sm", "register_cap",
           "registers", "spill_factor", "SPILL_COST", "L2_SHARE", "SMEM_BYTES_PER_CLOCK", "KB"]

KB = 1024  # the CUDA guide's KB


@dataclass(frozen=True)
class Limits:
    """One GPU's figures the tile models use (bytes, FLOP/s, seconds)."""

    gpu: str
    sms: int
    clock_hz: float  # the tensor peak's clock
    l2_bytes: float
    dram_bandwidth: float  # bytes/s: the predictor's copy bandwidth (measured, else the reference's datasheet share)
    launch_floor: float  # s: the predictor's launch floor (measured, else the reference's)
    smem_per_sm: float
    smem_per_block: float
    smem_reserved: float
    regs_per_sm: int
    regs_per_block: int
    regs_per_thread: int
    reg_unit: int
    threads_per_sm: int
    threads_per_block: int
    blocks_per_sm: int
    warps_per_sm: int
    sfu_per_clock: int
    fp32_per_clock: int
    instruction: str  # the tensor-core instruction: wgmma, mma.sync
    mma_m: int  # rows of one instruction (wgmma: 64)
    mma_warps: int  # warps that issue it together (wgmma: 4)
    peak_per_sm: float  # FLOP/s of the matrix peak per SM, in the asked precision


@dataclass(frozen=True)
class Params:
    """The tile models' fitted parameters (``measured.tune``), in SI units."""

    wgmma_efficiency: float
    mma_sync_efficiency: float
    l2_bandwidth: float  # bytes/s
    load_latency: float  # s
    kstep: float  # s: a k-loop step's fixed cost (address arithmetic, barriers)
    program: float  # s
    row_latency: float  # s
    softmax_cycles: float
    thread_cycles: float  # a row kernel's cycles per element one thread holds (its dependent work)
    row_cycles: float  # SM cycles per element of a row kernel's block, per pass
    scalar_loads: float  # elements an SM loads per clock one by one (an operand not known to be 16-aligned)
    calibrated: bool
    source: str


#: used where a spec has no ``measured.tune`` (NB: physical guesses, not a fit: rankings are then uncalibrated)
DEFAULT_PARAMS = Params(wgmma_efficiency=0.8, mma_sync_efficiency=0.5, l2_bandwidth=8e12, load_latency=8e-7, kstep=2e-7,
                        program=2e-7, row_latency=8e-7, softmax_cycles=0.15, thread_cycles=10.0, row_cycles=0.05, scalar_loads=13.0, calibrated=False,
                        source="uncalibrated defaults: the spec has no measured.tune")


def limits_of(gpu: Any, dtype: str = "bf16") -> Limits:
    """The limits of ``gpu`` (a name or a GPU); ``MissingFigureError`` naming ``sm_limits`` where the spec lacks it."""
    spec = as_gpu(gpu)
    lim = spec.sm_limits
    if lim is None:
        raise MissingFigureError(
            f"{spec.name}'s spec has no sm_limits (shared memory, registers, threads and blocks per SM, the tensor-core "
            "instruction): solkit.tune cannot check or rank configs on it; add the section from the CUDA C++ "
            "Programming Guide's compute-capability table (hardware_specs/h200-sxm.yaml shows one)")
    from ..prediction.gpu import calibration  # the predictor's ceilings (prediction imports the registry: loaded late)

    cal = calibration(spec)
    peak = spec.peak_flops(dtype)
    record = spec.peak_record(dtype)
    clock = spec.chip.boost_clock_mhz * 1e6
    if spec.architecture == "hopper" and record.unit == "matrix":
        clock = 1830e6  # NB: Hopper's tensor peaks are quoted at 1830 MHz (the H100 whitepaper), the vector ones at boost
    return Limits(
        gpu=spec.name, sms=spec.sm_count, clock_hz=clock, l2_bytes=spec.l2_cache,
        dram_bandwidth=cal.copy_bandwidth, launch_floor=cal.launch_floor,
        smem_per_sm=lim.shared_memory_per_sm_kb * KB, smem_per_block=lim.shared_memory_per_block_kb * KB,
        smem_reserved=lim.reserved_shared_memory_per_block_kb * KB, regs_per_sm=lim.registers_per_sm,
        regs_per_block=lim.registers_per_block, regs_per_thread=lim.registers_per_thread,
        reg_unit=lim.register_allocation_unit, threads_per_sm=lim.threads_per_sm,
        threads_per_block=lim.threads_per_block, blocks_per_sm=lim.blocks_per_sm, warps_per_sm=lim.warps_per_sm,
        sfu_per_clock=lim.sfu_per_sm_per_clock, fp32_per_clock=lim.fp32_per_sm_per_clock,
        instruction=lim.tensor_core.instruction, mma_m=lim.tensor_core.m, mma_warps=lim.tensor_core.warps,
        peak_per_sm=peak / spec.sm_count)


def params_of(gpu: Any) -> Params:
    """The fitted parameters of ``gpu``'s ``measured.tune``, else the reference's where it is the reference's chip
    (uncalibrated, borrowed), else ``DEFAULT_PARAMS`` (memoized per loaded spec)."""
    spec = as_gpu(gpu)
    params = spec.memo.get("tune_params")
    if params is None:
        params = spec.memo["tune_params"] = _params(spec)
    return params  # type: ignore[no-any-return]


def _params(spec: Any) -> Params:
    """``params_of`` without the memo: the spec's fit, the reference's where borrowed, or the defaults."""
    from ..prediction.gpu import reference_spec, same_chip

    fit = spec.measured.tune if spec.measured is not None else None
    if fit is not None:
        triton = fit.stack.get("triton", "?")
        return _fitted(fit, calibrated=True, source=f"measured.tune of {spec.name} ({fit.date}, triton {triton})")
    ref = reference_spec()
    borrowed = ref.measured.tune if ref.measured is not None else None
    if borrowed is None or not same_chip(spec, ref) or spec.chip.boost_clock_mhz != ref.chip.boost_clock_mhz:
        return DEFAULT_PARAMS  # NB: the fit's per-clock figures and times hold at its chip's clocks only
    triton = borrowed.stack.get("triton", "?")
    return _fitted(borrowed, calibrated=False, source=f"uncalibrated: the measured.tune of {ref.name} ({borrowed.date}, "
                   f"triton {triton}) borrowed, the same chip ({spec.architecture}, {spec.sm_count} SMs, "
                   f"{spec.chip.boost_clock_mhz:g} MHz)")


def _fitted(fit: Any, *, calibrated: bool, source: str) -> Params:
    """A ``measured.tune`` section in SI units."""
    return Params(wgmma_efficiency=fit.wgmma_efficiency, mma_sync_efficiency=fit.mma_sync_efficiency,
                  l2_bandwidth=fit.l2_bandwidth_tb_s * 1e12, load_latency=fit.load_latency_us * 1e-6,
                  kstep=fit.kstep_us * 1e-6, program=fit.program_us * 1e-6, row_latency=fit.row_latency_us * 1e-6,
                  softmax_cycles=fit.softmax_cycles, row_cycles=fit.row_cycles, thread_cycles=fit.thread_cycles,
                  scalar_loads=fit.scalar_loads_per_clock, calibrated=calibrated, source=source)


def programs_per_sm(lim: Limits, warps: Any, smem: Any, regs: Any) -> tuple[np.ndarray, np.ndarray]:
    """Programs (thread blocks) one SM holds at once, and what limits it: 0 blocks, 1 warps, 2 shared memory, 3 registers.

    blocks = min(blocks_per_sm, warps_per_sm // warps, smem_per_sm // (smem + reserved),
                 regs_per_sm // (warps * ceil(32 * regs / unit) * unit)); registers are allocated per warp in units.
    """
    warps, smem, regs = np.broadcast_arrays(np.asarray(warps, float), np.asarray(smem, float), np.asarray(regs, float))
    per_warp = np.ceil(32 * regs / lim.reg_unit) * lim.reg_unit
    limits = np.stack([
        np.full(warps.shape, float(lim.blocks_per_sm)),
        np.floor(lim.warps_per_sm / warps),
        np.floor(lim.smem_per_sm / (smem + lim.smem_reserved)),
        np.floor(lim.regs_per_sm / np.maximum(warps * per_warp, lim.reg_unit)),  # a block holds one unit at least
    ])
    return limits.min(axis=0), limits.argmin(axis=0)


#: the share of the L2 that holds distinct lines (NB: an H100/H200 L2 is two partitions that may each hold a line)
L2_SHARE = 0.5
#: bytes one SM's L1 and shared memory serve per clock (NB: a lead, the H100 whitepaper's 33 TB/s of L1 over 132 SMs
#: at 1.98 GHz)
SMEM_BYTES_PER_CLOCK = 128.0
#: how much a program's steps slow per spilled register, as a share of the registers a thread may hold (NB: a round
#: figure, not fitted: every kernel here spills by the same rule)
SPILL_COST = 4.0


def register_cap(lim: Limits, warps: Any) -> np.ndarray:
    """Registers a thread of a ``warps``-warp program may hold: the one register rule of every kernel here.

    Triton declares each kernel's block size to ptxas (``.maxntid`` = 32 * num_warps, the PTX ISA's performance-tuning
    directive; the CUDA C++ Programming Guide's launch bounds), so ptxas keeps a block within the registers a block may
    have and spills the rest: cap = min(regs_per_thread, floor(regs_per_block / warps / unit) * unit / 32), registers
    allocated per warp in units of ``reg_unit``. On cc 9.0 (64 K per block, 255 per thread, units of 256): 255 up to
    8 warps, 128 at 16, 64 at 32. A config therefore never fails to launch for registers; it spills.
    """
    per_warp = np.floor(lim.regs_per_block / np.asarray(warps, float) / lim.reg_unit) * lim.reg_unit
    return np.minimum(float(lim.regs_per_thread), np.floor(per_warp / 32))


def registers(lim: Limits, warps: Any, wanted: Any) -> tuple[np.ndarray, np.ndarray]:
    """(registers a thread holds, registers it spills) for ``wanted`` registers a thread, by ``register_cap``."""
    cap = register_cap(lim, warps)
    wanted = np.asarray(wanted, float)
    return np.minimum(np.ceil(wanted), cap), np.maximum(wanted - cap, 0.0)


def spill_factor(lim: Limits, spills: Any) -> np.ndarray:
    """How much spilled registers slow a program's steps: 1 + SPILL_COST * spills / regs_per_thread."""
    return 1 + SPILL_COST * np.asarray(spills, float) / lim.regs_per_thread


def block_reasons(res: Mapping[str, Any], i: int, lim: Limits, warps: Any, tiles: str = "") -> list[str]:
    """Why config ``i`` cannot launch as a block: shared memory over the block's share (``tiles``: what the stages
    hold, in words), threads over the block's limit."""
    why = []
    if "smem" in res and res["smem"][i] > lim.smem_per_block:
        why.append(f"needs {int(res['smem'][i]):,} B of shared memory, the {lim.gpu} gives {int(lim.smem_per_block):,} "
                   f"per block" + (f" ({tiles})" if tiles else ""))
    if res["threads"][i] > lim.threads_per_block:
        why.append(f"needs {int(res['threads'][i]):,} threads ({fmt_value(warps)} warps), the {lim.gpu} gives "
                   f"{lim.threads_per_block:,} per block")
    return why
