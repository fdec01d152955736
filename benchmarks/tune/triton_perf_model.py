"""A port of Triton's analytic GEMM model, the baseline solkit.tune is compared with (runs without a GPU).

Source: triton-lang/kernels, kernels/matmul_perf_model.py (``estimate_matmul_time``, ``early_config_prune``), which
moved there from triton.ops.matmul_perf_model (absent from triton 3.x: the measurement records that). MIT License,
Copyright (c) Triton's authors (the repository's LICENSE). The arithmetic is the original's, line by line; only its
device queries are arguments: the SM count, the max SM clock (nvidia-smi clocks.max.sm), the memory clock and bus
width (Triton's get_device_properties: mem_clock_rate, mem_bus_width), the compute capability and max shared memory,
all recorded by benchmarks/tune/measure_triton.py on the device. bf16 and fp16 take 512 ops per sub-core per clock
(triton.testing.get_max_tensorcore_tflops for compute capability >= 8).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Device:
    """The device figures the original reads through triton and nvidia-smi."""

    multiprocessor_count: int
    clock_rate_khz: float  # nvidia-smi clocks.max.sm * 1e3
    mem_clock_rate_khz: float
    mem_bus_width: int
    capability: tuple[int, int]
    max_shared_mem: int


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def get_dram_gbps(dev: Device) -> float:
    return dev.mem_clock_rate_khz * dev.mem_bus_width * 2 / 1e6 / 8


def get_max_tensorcore_tflops(dev: Device, dtsize: int) -> float:
    num_subcores = dev.multiprocessor_count * 4
    ops_per_sub_core = 256 if dtsize == 4 else 512 if dtsize == 2 else 1024
    return num_subcores * dev.clock_rate_khz * ops_per_sub_core * 1e-9


def get_tflops(dev: Device, num_ctas: int, num_warps: int, dtsize: int) -> float:
    total_warps = num_ctas * min(num_warps, 4)
    num_subcores = dev.multiprocessor_count * 4
    return min(num_subcores, total_warps) / num_subcores * get_max_tensorcore_tflops(dev, dtsize)


def estimate_matmul_time(dev: Device, num_warps: int, num_stages: int, M: int, N: int, K: int, BLOCK_M: int,
                         BLOCK_N: int, BLOCK_K: int, SPLIT_K: int, dtsize: int = 2) -> float:
    """Estimated running time in ms = max(compute, loading) + store (the original's arithmetic)."""
    num_cta_m = cdiv(M, BLOCK_M)
    num_cta_n = cdiv(N, BLOCK_N)
    num_cta_k = SPLIT_K
    num_ctas = num_cta_m * num_cta_n * num_cta_k
    M, N = max(M, BLOCK_M), max(N, BLOCK_N)
    total_ops = 2 * M * N * K / (1024 * 1024 * 1024)  # GOPS
    tput = get_tflops(dev, num_ctas, num_warps, dtsize)
    compute_ms = total_ops / tput
    active_cta_ratio_bw1 = min(1, num_ctas / 32)
    active_cta_ratio_bw2 = max(min(1, (num_ctas - 32) / (108 - 32)), 0)
    dram_bw = get_dram_gbps(dev) * (active_cta_ratio_bw1 * 0.95 + active_cta_ratio_bw2 * 0.05)  # in GB/s
    l2_bw = dram_bw * 4
    load_a_dram = M * K * dtsize * (1 + 0.2 * (num_cta_n - 1))
    load_a_l2 = M * K * dtsize * 0.8 * (num_cta_n - 1)
    load_b_dram = N * K * dtsize * (1 + 0.2 * (num_cta_m - 1))
    load_b_l2 = N * K * dtsize * 0.8 * (num_cta_m - 1)
    total_dram = (load_a_dram + load_b_dram) / (1024 * 1024)  # MB
    total_l2 = (load_a_l2 + load_b_l2) / (1024 * 1024)
    load_ms = total_dram / dram_bw + total_l2 / l2_bw
    store_bw = dram_bw * 0.6
    store_c_dram = M * N * dtsize * SPLIT_K / (1024 * 1024)  # MB
    if SPLIT_K == 1:
        store_ms = store_c_dram / store_bw
    else:
        store_ms = store_c_dram / store_bw
        store_ms += M * N * 2 / (1024 * 1024) / store_bw
    return max(compute_ms, load_ms) + store_ms


def early_config_prune(dev: Device, configs: list[dict[str, int]], dtsize: int = 2) -> list[int]:
    """The indices of the configs the original keeps (its shared-memory check, then two num_stages per block shape)."""
    kept = [i for i, c in enumerate(configs)
            if (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * c["num_stages"] * dtsize <= dev.max_shared_mem]
    kept = [i for i in kept if configs[i].get("SPLIT_K", 1) == 1]  # bf16: no atomic_add, as the original
    groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for i in kept:
        c = configs[i]
        key = (c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c.get("SPLIT_K", 1), c["num_warps"])
        groups.setdefault(key, []).append((i, c["num_stages"]))
    out: list[int] = []
    for (bm, bn, bk, _sk, w), v in groups.items():
        if dev.capability[0] >= 8:
            mmas = bm * bn * bk / (16 * 8 * 16)
            mma_cycles = mmas / min(4, w) * 8
            optimal_num_stages = 300 / mma_cycles

            def distance(x: tuple[int, int], o: float = optimal_num_stages) -> Any:
                return 10 + abs(x[1] - o) if (x[1] - o) < 0 else x[1] - o

            out.extend(i for i, _ in heapq.nsmallest(2, v, key=distance))
        else:
            out.append(v[0][0])
    return out
