"""The tile-level model of Triton's tutorial GEMM (one program per C tile, grouped ordering, fp32 accumulate).

For a config (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K, num_warps, num_stages) and a shape (m, n, k), arrays over
configs, each step in named dimensions:

- programs = ceil(m / BLOCK_M) * ceil(n / BLOCK_N) * SPLIT_K; k-steps per program = ceil(ceil(k / SPLIT_K) / BLOCK_K).
- instruction: wgmma where the GPU has it, num_warps is a multiple of a warpgroup (4) and BLOCK_M a multiple of its
  64 rows; else mma.sync.
- shared memory = buffers * (BLOCK_M + BLOCK_N) * BLOCK_K * e, buffers = num_stages (wgmma) or num_stages - 1
  (mma.sync), and at least the epilogue's BLOCK_M * BLOCK_N * e_out with wgmma (Triton 3.6's allocation, read off its
  compiled kernels); registers per thread = acc + a share of the operand tiles + a base (acc = BLOCK_M * BLOCK_N /
  (32 * num_warps) fp32 accumulators); occupancy from both (``limits.programs_per_sm``); waves = ceil(programs /
  (SMs * occupancy)).
- registers beyond ``limits.register_cap`` (255 a thread up to 8 warps on cc 9.0) spill; spills slow the steps
  (``limits.spill_factor``): no config fails to launch for registers.
- a k-step of one program takes the fitted loop overhead plus the longest of: its MMAs at the SM's tensor rate (times
  the instruction's fitted efficiency, times the warps' share of the SM's four sub-partitions for mma.sync, shared by
  the programs on the SM; mma.sync warps beyond the tile's (BLOCK_M / 16) * (BLOCK_N / 8) instructions repeat them);
  its (BLOCK_M + BLOCK_N) * BLOCK_K * e bytes from L2 at the fitted L2 bandwidth shared by every running program;
  its shared-memory traffic (the tiles written in and read by the MMAs as Triton lays its warps,
  ``smem_bytes_per_step``) at the SM's shared-memory bandwidth, shared by the programs on the SM; and the load
  latency over the num_stages - 1 loads in flight. An operand not known to be 16-aligned adds its element-by-element
  loads (it has one buffer, so they cannot overlap the MMAs). A program adds the pipeline's fill (one load latency),
  the epilogue's store of its tile at its share of DRAM bandwidth, and the fitted per-program cost.
- the whole grid's DRAM bytes: A and B re-read as the L2 (half of it: NB, the two partitions hold a line twice) fails to
  hold them under GROUP_M ordering (``dram_bytes``), plus C once (SPLIT_K > 1: read and written per split).
- time = max(waves * program time, DRAM bytes / copy bandwidth) + the launch floor.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._display import fmt_value
from .limits import (L2_SHARE, SMEM_BYTES_PER_CLOCK, Limits, Params, block_reasons, programs_per_sm,
                     registers, spill_factor)

__all__ = ["resources", "reasons", "dram_bytes", "model", "warp_grid", "smem_bytes_per_step", "REGISTER_BASE", "L2_SHARE"]

#: registers per thread beyond the accumulators: base and share of the operand tile per thread, per instruction, as
#: Triton 3.6's compiled kernels of the fit set report them (n_regs; least squares, within 6 registers for wgmma)
REGISTER_BASE: Mapping[str, tuple[float, float]] = {"wgmma": (19.0, 0.43), "mma.sync": (36.0, 0.35)}
#: registers per element a thread loads one by one, and per such element and stage in flight (the same least squares
#: over the fit set's compiles of shapes whose n or k is not a multiple of 16)
UNALIGNED_REGISTERS = (1.4, 0.12)




def warp_grid(bm: np.ndarray, bn: np.ndarray, units: np.ndarray, wg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How Triton 3.6 lays a dot's ``units`` over the tile, (along BLOCK_M, along BLOCK_N) (its warpsPerTile).

    wgmma (``units`` = warpgroups, 64 rows each): split BLOCK_M while it has more than 64 rows per unit, then
    BLOCK_N. mma.sync (``units`` = warps; warpsPerTileV2 in Triton's AccelerateMatmul.cpp): double the warps along
    BLOCK_M while BLOCK_M / 16 / wm >= BLOCK_N / 16 / wn (integer divisions: a warp's m16 rows against twice its n8
    columns) and BLOCK_M has 16 rows per warp to give, else along BLOCK_N.
    """
    wm, wn = np.ones(np.shape(bm)), np.ones(np.shape(bm))
    for _ in range(int(np.log2(max(float(np.max(units)), 1.0))) + 1):
        more = wm * wn < units
        rows_per_warp, cols_per_warp = np.floor(np.floor(bm / 16) / wm), np.floor(np.floor(bn / 16) / wn)
        split_m = np.where(wg, bm > 64 * wm, (rows_per_warp >= cols_per_warp) & (wm < np.floor(bm / 16)))
        wm = np.where(more & split_m, 2 * wm, wm)
        wn = np.where(more & ~split_m, 2 * wn, wn)
    return wm, wn


def smem_bytes_per_step(t: Mapping[str, np.ndarray], wg: np.ndarray, e: float) -> np.ndarray:
    """Shared-memory bytes one k-step of a program moves: its A and B tiles written in, and read by the MMAs.

    wgmma reads both operands from shared memory: each warpgroup its A rows (BLOCK_M / wm of them) once, and B once
    per 64-row instruction, so A is read wn times and B BLOCK_M / 64 times. mma.sync loads each warp's fragments:
    A once per warp column (wn), B once per warp row (wm).
    """
    bm, bn, bk, w = t["BLOCK_M"], t["BLOCK_N"], t["BLOCK_K"], t["num_warps"]
    wm, wn = warp_grid(bm, bn, np.where(wg, w / 4, w), wg)
    reads = np.where(wg, wn * bm * bk + np.maximum(bm / 64, 1.0) * bk * bn, wn * bm * bk + wm * bk * bn)
    return (reads + (bm + bn) * bk) * e


def uses_wgmma(t: Mapping[str, np.ndarray], lim: Limits) -> np.ndarray:
    """Whether each config issues wgmma (the GPU has it, warps fill whole warpgroups, BLOCK_M fills its rows)."""
    if lim.instruction != "wgmma":
        return np.zeros(t["num_warps"].shape, bool)
    return (t["num_warps"] % lim.mma_warps == 0) & (t["BLOCK_M"] % lim.mma_m == 0)


def resources(t: Mapping[str, np.ndarray], lim: Limits, e_in: float, e_out: float, n: float = 16.0,
              k: float = 16.0) -> dict[str, np.ndarray]:
    """Each config's instruction, shared memory (bytes), registers per thread, threads and occupancy.

    An operand whose row stride (k for A, n for B) Triton does not know to be a multiple of 16 (its divisibility
    specialization) is loaded element by element through registers, not copied asynchronously: it has one shared
    buffer, and its elements sit in registers (``UNALIGNED_REGISTERS``).
    """
    bm, bn, bk, w, s = t["BLOCK_M"], t["BLOCK_N"], t["BLOCK_K"], t["num_warps"], t["num_stages"]
    wg = uses_wgmma(t, lim)
    a_async, b_async = k % 16 == 0, n % 16 == 0
    buffers = np.where(wg, s, np.maximum(s - 1, 1))
    tile_a, tile_b = bm * bk * e_in, bk * bn * e_in
    pipe = tile_a * (buffers if a_async else 1) + tile_b * (buffers if b_async else 1)
    smem = np.maximum(pipe, np.where(wg, bm * bn * e_out, 0.0))
    acc = bm * bn / (32 * w)
    operand = (bm + bn) * bk / (32 * w)
    base = np.where(wg, REGISTER_BASE["wgmma"][0], REGISTER_BASE["mma.sync"][0])
    share = np.where(wg, REGISTER_BASE["wgmma"][1], REGISTER_BASE["mma.sync"][1])
    loose = ((0 if a_async else bm * bk) + (0 if b_async else bk * bn)) / (32 * w)  # such elements per thread
    staged = loose * (UNALIGNED_REGISTERS[0] + UNALIGNED_REGISTERS[1] * np.maximum(s - 1, 0))
    wanted = base + acc + share * operand + staged
    regs, spills = registers(lim, w, wanted)
    occupancy, limiter = programs_per_sm(lim, w, smem, regs)
    scalar = ((0 if a_async else bm * bk) + (0 if b_async else bk * bn)) * np.ones(bm.shape)
    return {"wgmma": wg, "smem": smem, "regs": regs, "spills": spills,
            "threads": 32 * w, "occupancy": occupancy, "limiter": limiter, "scalar_loads": scalar}


def reasons(t: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], lim: Limits) -> list[str | None]:
    """Why each config cannot launch (None where it can): shared memory, threads (registers spill: ``register_cap``)."""
    out: list[str | None] = []
    for i in range(len(res["smem"])):
        why = block_reasons(res, i, lim, t["num_warps"][i], f"{fmt_value(t['num_stages'][i])} stages of "
                            f"({fmt_value(t['BLOCK_M'][i])} + {fmt_value(t['BLOCK_N'][i])}) x "
                            f"{fmt_value(t['BLOCK_K'][i])} tiles")
        out.append("; ".join(why) or None)
    return out


def dram_bytes(t: Mapping[str, np.ndarray], m: float, n: float, k: float, lim: Limits, e_in: float,
               e_out: float) -> np.ndarray:
    """The whole grid's DRAM bytes: A and B as often as the L2 fails to keep them under GROUP_M ordering, plus C.

    A = m*k*e, B = k*n*e. A group of GROUP_M row tiles sweeps every column tile: its A panel (GROUP_M * BLOCK_M rows
    of A) is reused across the group's columns while it fits the L2's share, and B is streamed once per group, the
    part of B that does not fit beside the panel missed each time. Both fit: each is read once.
    """
    bm, bn, g, sk = t["BLOCK_M"], t["BLOCK_N"], t["GROUP_M"], t["SPLIT_K"]
    a, b = m * k * e_in, k * n * e_in
    cap = lim.l2_bytes * L2_SHARE
    tm, tn = np.ceil(m / bm), np.ceil(n / bn)
    groups = np.ceil(tm / g)
    panel = np.minimum(g, tm) * bm * k * e_in / sk
    a_miss = np.clip(1 - cap / np.maximum(panel, 1.0), 0, 1)  # the panel's share the L2 cannot hold
    b_miss = np.clip(1 - np.maximum(cap - panel, 0) / b, 0, 1)  # B's share that misses on each group's sweep
    fits = a + b <= cap
    reads = np.where(fits, a + b, a * (1 + (tn - 1) * a_miss) + b * (1 + (groups - 1) * b_miss))
    c = m * n * e_out * np.where(sk > 1, 2 * sk - 1, 1)  # split-K: each split reads and adds to C
    return reads + c


def model(t: Mapping[str, np.ndarray], m: float, n: float, k: float, lim: Limits, p: Params, e_in: float,
          e_out: float) -> dict[str, Any]:
    """Predicted seconds per config and the model's parts (programs, waves, occupancy, k-steps, bytes)."""
    res = resources(t, lim, e_in, e_out, n, k)
    bm, bn, bk, w, s, sk = t["BLOCK_M"], t["BLOCK_N"], t["BLOCK_K"], t["num_warps"], t["num_stages"], t["SPLIT_K"]
    programs = np.ceil(m / bm) * np.ceil(n / bn) * sk
    steps = np.ceil(np.ceil(k / sk) / bk)
    occ = np.maximum(res["occupancy"], 1.0)
    resident = np.minimum(occ, np.ceil(programs / lim.sms))  # programs running on one SM at a time
    running = np.minimum(programs, lim.sms * resident)  # programs running on the GPU at a time
    waves = np.ceil(programs / (lim.sms * occ))
    eff = np.where(res["wgmma"], p.wgmma_efficiency, p.mma_sync_efficiency)
    tiles = (bm / 16) * (bn / 8)  # mma.sync m16n8 tiles of a k-step: warps beyond them repeat the same MMAs
    working = np.where(res["wgmma"], w, np.minimum(w, tiles))
    warp_share = np.where(res["wgmma"], 1.0, np.minimum(1.0, resident * working / 4))  # a warp per sub-partition
    rate = lim.peak_per_sm * eff * warp_share / resident * working / w  # FLOP/s of one program
    t_mma = 2 * bm * bn * bk / rate
    t_l2 = (bm + bn) * bk * e_in * running / p.l2_bandwidth
    t_latency = p.load_latency / np.maximum(s - 1, 1)
    t_smem = smem_bytes_per_step(t, res["wgmma"], e_in) * resident / (SMEM_BYTES_PER_CLOCK * lim.clock_hz)
    # an operand loaded element by element has one shared buffer: its loads and stores into shared memory wait for
    # the previous step's MMAs to release it, so they add to the step (the SM's load units: a warp per sub-partition)
    lanes = np.minimum(1.0, resident * w / 4)
    t_scalar = res["scalar_loads"] * resident / (p.scalar_loads * lim.clock_hz * lanes)
    t_step = np.maximum(np.maximum(np.maximum(t_mma, t_l2), t_latency), t_smem) + t_scalar
    t_step = np.where(s > 1, t_step, t_step + p.load_latency)  # one stage: every load waits its latency
    t_step = t_step + p.kstep
    t_store = bm * bn * e_out * running / lim.dram_bandwidth
    if n % 16:
        t_store = t_store + bm * bn * resident / (p.scalar_loads * lim.clock_hz)  # stored element by element
    spill = spill_factor(lim, res["spills"])
    t_program = steps * t_step * spill + p.load_latency + t_store + p.program
    dram = dram_bytes(t, m, n, k, lim, e_in, e_out)
    seconds = np.maximum(waves * t_program, dram / lim.dram_bandwidth) + lim.launch_floor
    return {"seconds": seconds, "programs": programs, "waves": waves, "k_steps": steps, "dram_bytes": dram,
            "step_seconds": t_step, "program_seconds": t_program, **res}
