"""The tile-level model of a Triton flash attention forward (the tutorial's fused attention, one program per BLOCK_M
queries of one (batch, head), a loop over BLOCK_N keys with an online softmax).

In named dimensions, arrays over configs (q, o [b, h, sq, d]; k, v [b, h, skv, d]):

- programs = ceil(sq / BLOCK_M) * b * h. Query block i loops over ceil(skv / BLOCK_N) key blocks, or with causal
  (bottom-right aligned, as ``ops.attention`` counts it) up to its last query's diagonal:
  ceil(min((i + 1) * BLOCK_M + skv - sq, skv) / BLOCK_N) key blocks (at least one).
- a key block's step: two MMAs (q k^T and p v: 4 * BLOCK_M * BLOCK_N * d FLOPs) at the SM's tensor rate times the
  instruction's fitted efficiency, and the online softmax (the fitted SM cycles per score element: exp2 on the SFU,
  max, sum and rescale on the fp32 units); programs sharing an SM overlap one's softmax with another's MMAs, so a step
  takes the larger plus the smaller over the programs on the SM. The step is at least its K and V tiles
  (2 * BLOCK_N * d * e bytes) at the program's share of the L2 bandwidth, and the load latency over the
  num_stages - 1 loads in flight.
- shared memory = buffers * 2 * BLOCK_N * d * e (K and V) + BLOCK_M * d * e (q); registers = a base + the
  BLOCK_M * d accumulators and the BLOCK_M * BLOCK_N scores per thread; occupancy and waves as for the GEMM.
- grid time: waves * the mean program time, and at least the longest program (causal programs are uneven).
- DRAM bytes = q, k, v read once and o written once (``ops.attention(impl="flash")``'s count; NB: k and v stay in the
  L2 while the query blocks of a head run).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._display import fmt_value
from .limits import Limits, Params, block_reasons, programs_per_sm, registers, spill_factor

__all__ = ["key_blocks", "resources", "reasons", "model"]

#: registers per thread beyond the accumulators and the scores, and registers per score element (fp32 scores and their
#: bf16 probabilities), as Triton 3.6's compiled kernels of the fit set report them (n_regs, within about 8)
REGISTER_BASE = 40.0
SCORE_REGISTERS = 1.6


def key_blocks(block_m: np.ndarray, block_n: np.ndarray, seq_q: float, seq_kv: float, causal: bool,
               ) -> tuple[np.ndarray, np.ndarray]:
    """Mean and largest number of key blocks a query block loops over, per config."""
    if not causal:
        steps = np.ceil(seq_kv / block_n)
        return steps, steps
    means, tops = [], []
    for bm, bn in zip(block_m.ravel(), block_n.ravel()):  # NB: a loop over configs (few); the query blocks are an array
        i = np.arange(np.ceil(seq_q / bm))
        keys = np.clip((i + 1) * bm + seq_kv - seq_q, 1, seq_kv)
        blocks = np.ceil(keys / bn)
        means.append(blocks.mean())
        tops.append(blocks.max())
    return np.array(means).reshape(block_m.shape), np.array(tops).reshape(block_m.shape)


def resources(t: Mapping[str, np.ndarray], lim: Limits, head_dim: float, e: float) -> dict[str, np.ndarray]:
    """Each config's instruction, shared memory, registers per thread, threads and occupancy."""
    bm, bn, w, s = t["BLOCK_M"], t["BLOCK_N"], t["num_warps"], t["num_stages"]
    wg = (w % lim.mma_warps == 0) & (bm % lim.mma_m == 0) if lim.instruction == "wgmma" else np.zeros(w.shape, bool)
    buffers = np.where(wg, s, np.maximum(s - 1, 1))
    smem = buffers * 2 * bn * head_dim * e + bm * head_dim * e
    wanted = REGISTER_BASE + (bm * head_dim + SCORE_REGISTERS * bm * bn) / (32 * w)
    regs, spills = registers(lim, w, wanted)
    occupancy, limiter = programs_per_sm(lim, w, smem, regs)
    return {"wgmma": wg, "smem": smem, "regs": regs, "spills": spills,
            "threads": 32 * w, "occupancy": occupancy, "limiter": limiter}


def reasons(t: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], lim: Limits,
            head_dim: float) -> list[str | None]:
    """Why each config cannot launch (None where it can)."""
    out: list[str | None] = []
    for i in range(len(res["smem"])):
        why = block_reasons(res, i, lim, t["num_warps"][i], f"{fmt_value(t['num_stages'][i])} stages of K and V "
                            f"tiles of {fmt_value(t['BLOCK_N'][i])} x {fmt_value(head_dim)}")
        out.append("; ".join(why) or None)
    return out


def model(t: Mapping[str, np.ndarray], batch: float, heads: float, seq_q: float, seq_kv: float, head_dim: float,
          causal: bool, lim: Limits, p: Params, e: float) -> dict[str, Any]:
    """Predicted seconds per config and the model's parts."""
    res = resources(t, lim, head_dim, e)
    bm, bn, s = t["BLOCK_M"], t["BLOCK_N"], t["num_stages"]
    programs = np.ceil(seq_q / bm) * batch * heads
    mean_steps, top_steps = key_blocks(bm, bn, seq_q, seq_kv, causal)
    occ = np.maximum(res["occupancy"], 1.0)
    resident = np.minimum(occ, np.ceil(programs / lim.sms))
    running = np.minimum(programs, lim.sms * resident)
    waves = np.ceil(programs / (lim.sms * occ))
    eff = np.where(res["wgmma"], p.wgmma_efficiency, p.mma_sync_efficiency)
    t_mma = 4 * bm * bn * head_dim * resident / (lim.peak_per_sm * eff)
    split = np.maximum(16 * t["num_warps"] / bm, 1.0)  # warps sharing a query row: its reductions cross them
    t_soft = bm * bn * p.softmax_cycles * split * resident / lim.clock_hz
    t_compute = np.maximum(t_mma, t_soft) + np.minimum(t_mma, t_soft) / resident
    t_l2 = 2 * bn * head_dim * e * running / p.l2_bandwidth
    t_latency = p.load_latency / np.maximum(s - 1, 1)
    spill = spill_factor(lim, res["spills"])
    t_step = np.maximum(np.maximum(t_compute, t_l2), t_latency)
    t_step = (np.where(s > 1, t_step, t_step + p.load_latency) + p.kstep) * spill  # one stage: every load waits its latency
    t_fixed = p.load_latency + bm * head_dim * e * running / lim.dram_bandwidth + p.program
    dram = (2 * batch * heads * seq_q * head_dim + 2 * batch * heads * seq_kv * head_dim) * e
    grid = np.maximum(waves * (mean_steps * t_step + t_fixed), top_steps * t_step + t_fixed)
    seconds = np.maximum(grid, dram / lim.dram_bandwidth) + lim.launch_floor
    return {"seconds": seconds, "programs": programs, "waves": waves, "key_blocks": mean_steps,
            "dram_bytes": np.full(bm.shape, dram), "step_seconds": t_step, **res}
