"""Plausible ranges of a spec's figures: one table, wide enough for every real GPU, narrow enough to catch a unit slip.

Each range spans the real parts from a 10-SM NVIDIA A2 and a 70 W T4 to a B200, an MI300X and an
MI355X, with room for the next generation, and is narrower than a factor 1000 around them: a
bandwidth typed in GB/s into a TB/s field (3350 for 3.35), a GFLOP/s figure in a TFLOP/s field, a
percentage where a fraction belongs (70 for 0.70) or a figure 1000x off lands outside. The
measured ceilings are checked against the part's own datasheet instead (at most the datasheet
figure, at least a tenth of it). ``hardware_specs/README.md`` prints this table; a test keeps the
two equal. No pydantic here: the table is plain data.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Mapping, NamedTuple, Union

__all__ = ["Range", "RANGES", "PEAK_RANGES", "OTHER_PEAK_RANGE", "CEILING_SHARE", "SPARSE_RATIO", "peak_range",
           "out_of_range", "shown"]


class Range(NamedTuple):
    """A closed plausible range of one field, in the file's unit."""

    low: float
    high: float
    unit: str  # as printed after a value: "TB/s", "TFLOP/s", "" (a plain number)
    slip: str = ""  # the usual mistake behind a value 1000x too large, for the message

    def text(self) -> str:
        """'0.05 to 50 TB/s'."""
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.low:g} to {self.high:g}{unit}"


#: every numeric field except the peaks and the measured ceilings, keyed by its dotted path
#: ("*" = any key of a table). Real extremes (file units):
#: - SMs/CUs: NVIDIA A2 10 SMs (A2 datasheet: 1,280 CUDA cores); MI300X 304 CUs (AMD MI300X data sheet).
#:   A CUDA-core count (H100 SXM 16,896) lands above.
#: - boost clock: A100 1410 MHz (A100 datasheet) to RTX 4090 2520 MHz (Ada whitepaper, appendix A).
#: - L2: A2 2 MB (A2 datasheet); B200 126.5 MB (device query, b200.yaml). In KB, A2 = 2048 lands above.
#: - TDP: A2 40-60 W (A2 datasheet); MI355X 1,400 W (AMD MI355X announcement, ISC 2025).
#: - capacity: A2 16 GB (A2 datasheet); MI355X 288 GB (AMD MI355X announcement).
#: - bandwidth: A2 200 GB/s = 0.2 TB/s (A2 datasheet); MI355X and DGX B200 8 TB/s (AMD; DGX B200 datasheet).
#: - GPU link: A40 NVLink bridge 112.5 GB/s (A40 datasheet); B200 NVLink 5 1,800 GB/s (HGX B200 page).
#: - host link: PCIe Gen3 x16 32 GB/s bidirectional (T4 datasheet) to Gen6 x16 256 GB/s.
RANGES: Mapping[str, Range] = MappingProxyType({
    "chip.compute_units": Range(1, 1024, "SMs or CUs", "a count of CUDA cores or stream processors, not of SMs/CUs?"),
    "chip.boost_clock_mhz": Range(300, 5000, "MHz", "kHz?"),
    "chip.l2_cache_mb": Range(0.25, 1024, "MB", "KB?"),
    "chip.tdp_w": Range(10, 3000, "W", "mW?"),
    "memory.capacity_gb": Range(1, 2048, "GB", "MB?"),
    "memory.bandwidth_tb_s": Range(0.05, 50, "TB/s", "GB/s typed into a TB/s field?"),
    "interconnect.bandwidth_gb_s": Range(10, 20000, "GB/s", "MB/s typed into a GB/s field?"),
    "interconnect.pcie_bandwidth_gb_s": Range(1, 1024, "GB/s", "MB/s typed into a GB/s field?"),
    # the measured section (the H200 fit: latencies 0-20 us, efficiencies 0.157-1, penalties 4.8 and 5.8, p = 2)
    "measured.launch_floor_us": Range(0.1, 100, "us", "ns typed into a us field?"),
    "measured.host_launch_us": Range(0, 1000, "us", "ms typed into a us field?"),
    "measured.host_launch_training_us": Range(0, 1000, "us", "ms typed into a us field?"),
    "measured.host_layer_us": Range(0, 100_000, "us", "ms typed into a us field?"),
    "measured.host_program_us": Range(0, 1_000_000, "us", "s typed into a us field?"),
    "measured.kernel_gap_us": Range(0, 100, "us", "ns typed into a us field?"),
    "measured.kernel_latency_us.*": Range(0, 1000, "us", "ns typed into a us field?"),
    "measured.compute_efficiency.*": Range(0.01, 1, "", "an efficiency is a fraction of at most 1"),
    "measured.memory_efficiency.*": Range(0.01, 1, "", "an efficiency is a fraction of at most 1"),
    "measured.wave_latency_us.*": Range(0, 1000, "us", "ns typed into a us field?"),
    "measured.kstep_latency_us.*": Range(0, 100, "us", "ns typed into a us field?"),
    "measured.block_bandwidth_gb_s.*": Range(0.01, 10000, "GB/s", "one block's bandwidth: MB/s typed into a GB/s field?"),
    "measured.overlap_exponent": Range(1, 1000, "", "write inf for a plain maximum"),
    "measured.host_captured_launch_us": Range(0, 1000, "us", "ms typed into a us field?"),
    "measured.host_captured_launch_training_us": Range(0, 1000, "us", "ms typed into a us field?"),
    "measured.host_captured_call_us": Range(0, 1000, "us", "ms typed into a us field?"),
    "measured.host_captured_module_us": Range(0, 10_000, "us", "ms typed into a us field?"),
    "measured.host_captured_program_us": Range(0, 1_000_000, "us", "s typed into a us field?"),
    "measured.host_fsdp_group_us": Range(0, 100_000, "us", "ms typed into a us field?"),
    "measured.host_probe_us": Range(0, 1000, "us", "ms typed into a us field?"),
    "measured.link_latency_us.*": Range(0, 10_000, "us", "ns typed into a us field?"),
    "measured.link_efficiency.*": Range(0.01, 1, "", "an efficiency is a fraction of at most 1"),
    "measured.op_host_weight.*": Range(1, 100, "", "a call's host time in plain launches: at least one launch's"),
    "measured.link_misaligned.*": Range(0.01, 1, "", "a factor on an efficiency: a fraction of at most 1"),
    "measured.link_hop_us": Range(0, 1000, "us", "ns typed into a us field?"),
    "measured.network_hop_us": Range(0, 1000, "us", "ns typed into a us field?"),
})

#: dense peaks (``peaks.N.tflops``) by (precision, unit), TFLOP/s (TOPS for int8). Real extremes:
#: - fp64 vector: RTX 4090 1.3 (Ada whitepaper, appendix A) to MI300X 81.7 (AMD MI300X data sheet).
#: - fp64 matrix: A100 19.5 (A100 datasheet) to MI300X 163.4.
#: - fp32: A2 4.5 (A2 datasheet) to MI300X 163.4 (vector and matrix).
#: - tf32: A2 9 (A2 datasheet, dense) to B200 1,100 (HGX B200, half of 2.2 PF sparse).
#: - bf16/fp16 matrix: A2 18 (A2 datasheet, dense) to B200 2,250 (HGX B200) and MI355X ~2,500.
#: - bf16/fp16 vector: A100 bf16 39 (Ampere whitepaper, table 1) to H100 SXM 133.8 (Hopper whitepaper).
#: - fp8: RTX 4090 330.3 (Ada whitepaper) to B200 4,500 (HGX B200) and MI355X ~5,000.
#: - int8: A2 36 TOPS (A2 datasheet, dense) to B200 4,500 TOPS (HGX B200).
#: - fp4: B200 9,000 (HGX B200) to MI355X ~10,000-20,000.
PEAK_RANGES: Mapping[tuple[str, str], Range] = MappingProxyType({
    ("fp64", "vector"): Range(0.1, 500, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("fp64", "matrix"): Range(1, 1000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("fp32", "vector"): Range(0.5, 2000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("fp32", "matrix"): Range(0.5, 2000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("tf32", "matrix"): Range(1.5, 8000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("bf16", "matrix"): Range(3, 15000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("fp16", "matrix"): Range(3, 15000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("bf16", "vector"): Range(0.5, 2000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("fp16", "vector"): Range(0.5, 2000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("fp8", "matrix"): Range(10, 50000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
    ("int8", "matrix"): Range(8, 30000, "TOPS", "GOPS typed into a TOPS field?"),
    ("fp4", "matrix"): Range(20, 200000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?"),
})

#: any other (precision, unit) pair the schema allows (int8 vector, fp8 vector, ...)
OTHER_PEAK_RANGE = Range(0.05, 200000, "TFLOP/s", "GFLOP/s typed into a TFLOP/s field?")

#: a measured ceiling (``measured.matmul_rate_tflops.P``, ``copy_bandwidth_tb_s``, ``read_bandwidth_tb_s``)
#: lies between these shares of its datasheet figure (the H200: 0.47 (int8) to 0.92 (read))
CEILING_SHARE = (0.1, 1.0)

#: a stated 2:4 sparse peak over its dense peak (2 by construction; printed figures round: L40S 733 / 362.05 = 2.02)
SPARSE_RATIO = (1.9, 2.1)


def peak_range(precision: str, unit: str) -> Range:
    """The plausible dense peak of ``precision`` on ``unit``."""
    return PEAK_RANGES.get((precision, unit), OTHER_PEAK_RANGE)


def shown(value: Union[int, float]) -> str:
    """A figure as a message prints it: 4271, 0.7, 1e-05 (12 significant digits, no trailing zeros)."""
    return f"{value:.12g}" if isinstance(value, float) else str(value)


def out_of_range(value: Union[int, float], r: Range) -> Union[str, None]:
    """None when ``value`` lies in ``r``; else what came, the plausible range and the likely slip."""
    if r.low <= value <= r.high:
        return None
    unit = f" {r.unit}" if r.unit else ""
    message = f"{shown(value)}{unit} is outside the plausible range {r.text()}"
    if math.isfinite(value) and value > r.high:
        if r.unit == "" and r.high == 1 and 2 <= value <= 100:
            message += f" (a percentage? {shown(value)} % is {shown(value / 100)}; {r.slip})"
        elif r.low <= value / 1000 <= r.high and r.slip:
            message += f" (1000x too large: {r.slip})"
        elif r.slip and r.unit == "":
            message += f" ({r.slip})"
    elif math.isfinite(value) and value < r.low and r.low <= value * 1000 <= r.high:
        message += " (1000x too small?)"
    return message
