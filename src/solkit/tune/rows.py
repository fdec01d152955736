"""The tile-level model of Triton's row kernels: one program per row, the row read in BLOCK_SIZE chunks.

``triton_layernorm`` is the tutorial's fused LayerNorm forward: three passes over the row (mean, variance, normalize
and store), ceil(cols / BLOCK_SIZE) chunks each. ``triton_softmax`` is the tutorial's softmax: one pass, the whole
row in one block, so BLOCK_SIZE must hold a row (BLOCK_SIZE >= cols) or the config cannot run. In named dimensions,
arrays over configs:

- programs = rows; registers per thread = a base + 3.3 per element a thread holds (BLOCK_SIZE / (32 * num_warps)); occupancy from warps, blocks and registers (``limits.programs_per_sm``); waves = ceil(rows / (SMs *
  occupancy)).
- one chunk costs the fitted row latency (a dependent load's issue to use) plus the larger of its min(BLOCK_SIZE, cols)
  * e bytes at the program's share of DRAM bandwidth (shared by every running program) and its BLOCK_SIZE elements'
  instructions (the fitted SM cycles per element, masked lanes included, shared by the programs on the SM); a program =
  chunks * its passes, plus the fitted per-program cost (the reductions across warps, the row's statistics).
- the LayerNorm's later passes read the row back (the variance: ``L2_PASSES``; the last pass reads it again and writes
  y): from the L2 as far as the rows in flight fit its share, hit = min(1, L2 * ``L2_SHARE`` / (running rows * cols *
  e)) (the reuse distance: every running program's row is read in between), at the fitted L2 bandwidth, the rest from
  DRAM again.
- DRAM bytes = x read once and y written once, plus the weights (``ops.layernorm`` / ``ops.softmax``'s counts), plus
  the re-reads the L2 missed ((PASSES - 1) * (1 - hit) * rows * cols * e).
- time = max(waves * program time, DRAM bytes / copy bandwidth) + the launch floor.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._display import fmt_value
from .limits import (L2_SHARE, SMEM_BYTES_PER_CLOCK, Limits, Params, block_reasons, programs_per_sm,
                     registers, spill_factor)

__all__ = ["PASSES", "L2_PASSES", "resources", "reasons", "model"]

#: passes over a row per kernel
PASSES: Mapping[str, int] = {"triton_layernorm": 3, "triton_softmax": 1}
#: of those, the passes that only read the row back (the LayerNorm's variance; its third reads it again and writes y)
L2_PASSES: Mapping[str, int] = {"triton_layernorm": 1, "triton_softmax": 0}
#: registers per thread: a base and per element a thread holds (accumulators, loaded values and the loads in flight),
#: as Triton 3.6's compiled LayerNorm kernels of the fit set report them (n_regs, within about 15)
REGISTER_BASE = 24.0
ELEMENT_REGISTERS = 3.3
#: bytes one SM's L1 serves per clock (``limits.SMEM_BYTES_PER_CLOCK``)
L1_BYTES_PER_CLOCK = SMEM_BYTES_PER_CLOCK


def resources(t: Mapping[str, np.ndarray], lim: Limits) -> dict[str, np.ndarray]:
    """Each config's registers per thread, threads and occupancy."""
    held = t["BLOCK_SIZE"] / (32 * t["num_warps"])
    wanted = REGISTER_BASE + ELEMENT_REGISTERS * held
    regs, spills = registers(lim, t["num_warps"], wanted)
    smem = 4.0 * t["num_warps"]  # one fp32 partial per warp for the reductions across warps
    occupancy, limiter = programs_per_sm(lim, t["num_warps"], smem, regs)
    return {"regs": regs, "spills": spills, "smem": smem,
            "threads": 32 * t["num_warps"], "occupancy": occupancy, "limiter": limiter}


def reasons(kernel: str, t: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], lim: Limits,
            cols: float) -> list[str | None]:
    """Why each config cannot run (None where it can): threads per block, and a softmax block shorter than a row."""
    out: list[str | None] = []
    for i in range(len(res["threads"])):
        why = block_reasons(res, i, lim, t["num_warps"][i])
        if kernel == "triton_softmax" and t["BLOCK_SIZE"][i] < cols:
            why.append(f"BLOCK_SIZE {fmt_value(t['BLOCK_SIZE'][i])} is shorter than a row of {fmt_value(cols)}: "
                       "the tutorial's softmax holds a whole row in one block")
        out.append("; ".join(why) or None)
    return out


def model(kernel: str, t: Mapping[str, np.ndarray], rows: float, cols: float, lim: Limits, p: Params,
          e: float, dram: float) -> dict[str, Any]:
    """Predicted seconds per config and the model's parts; ``dram``: the kernel's DRAM bytes (from ``ops``)."""
    res = resources(t, lim)
    block = t["BLOCK_SIZE"]
    chunks = np.ceil(cols / block)
    occ = np.maximum(res["occupancy"], 1.0)
    resident = np.minimum(occ, np.ceil(rows / lim.sms))
    running = np.minimum(rows, lim.sms * resident)
    waves = np.ceil(rows / (lim.sms * occ))
    t_bytes = np.minimum(block, cols) * e * running / lim.dram_bandwidth
    t_issue = block * p.row_cycles * resident / lim.clock_hz  # every lane of the block issues, masked or not
    held = block / (32 * t["num_warps"])
    # a row whose start Triton does not know to be 16-aligned (cols % 16) is loaded element by element: each of a
    # thread's `held` loads spans 32 * held elements of the warp, so L1 moves `held` times the bytes
    moved = np.minimum(block, cols) * e * (held if cols % 16 else 1.0)
    t_l1 = moved * resident / (L1_BYTES_PER_CLOCK * lim.clock_hz)
    t_thread = held * p.thread_cycles / lim.clock_hz  # a thread's own elements, one after another
    t_chunk = p.row_latency + np.maximum(np.maximum(np.maximum(t_bytes, t_issue), t_thread), t_l1)
    # the passes after the first read the row back: from the L2 as far as the rows in flight fit its share (the reuse
    # distance: every running program's row read in between), the rest from DRAM again
    hit = np.clip(lim.l2_bytes * L2_SHARE / (running * cols * e), 0.0, 1.0)
    chunk = np.minimum(block, cols) * e * running
    t_bytes_l2 = chunk * (hit / p.l2_bandwidth + (1 - hit) / lim.dram_bandwidth)  # the variance pass: x again
    t_chunk_l2 = p.row_latency + np.maximum(np.maximum(np.maximum(t_bytes_l2, t_issue), t_thread), t_l1)
    t_bytes_out = chunk * (2 - hit) / lim.dram_bandwidth  # the last pass: y written, x read again where it missed
    t_chunk_out = p.row_latency + np.maximum(np.maximum(np.maximum(t_bytes_out, t_issue), t_thread), t_l1)
    spill = spill_factor(lim, res["spills"])
    if PASSES[kernel] == 1:
        t_passes = t_chunk
    else:  # NB: the LayerNorm's three: mean (x from DRAM), variance (x again), normalize (x again, y out)
        t_passes = t_chunk + t_chunk_l2 + t_chunk_out
    t_program = chunks * t_passes * spill + p.program
    dram = dram + (PASSES[kernel] - 1) * (1 - hit) * rows * cols * e  # x read again where the L2 missed it
    seconds = np.maximum(waves * t_program, dram / lim.dram_bandwidth) + lim.launch_floor
    return {"seconds": seconds, "programs": np.full(block.shape, rows), "waves": waves, "chunks": chunks,
            "dram_bytes": dram * np.ones(block.shape), "program_seconds": t_program, **res}
