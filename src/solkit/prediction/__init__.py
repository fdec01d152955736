"""Calibrated expected time: what a workload will really take on a GPU, not just its bound.

The model, every parameter named once (``solkit.hardware.parameters.PARAMETERS``) and measured or
fitted (``measured:`` in the spec):

    t = launch_floor + sum_k count_k * body_k + (launches - 1) * kernel_gap
    body_k = kernel_latency[key] + waves_k * wave_latency[key]
             + max(softmax_p(t_compute_k / compute_efficiency[key], t_memory_k / memory_efficiency[key]),
                   waves_k * block_bytes_k / block_bandwidth[key],  (row-wise kernels, GEMMs, convs)
                   waves_k * k_steps_k * kstep_latency[key])         (GEMMs, convs, the memory-efficient attention)
             x exp(c_k)                                              (the neighbour correction, where banked)

The package, one job per module:

- ``expected``: ``predict`` (the expected time of a workload, with notes), on top of
- ``gpu``: a GPU's calibration (its ``measured:`` section, else the reference GPU's shares);
- ``tiles``: work items in waves over the SMs (GEMM and conv tiles with split-K, flash attention's split-KV, the
  memory-efficient attention's key-block walk);
- ``kernel``: one kernel's raw times, its implementation variants, its body and limiter;
- ``neighbours`` and ``bank``: the neighbour correction's lookup and its bank file;
- ``collectives``: a collective's time over the links;
- ``host``: an eager program's host time and its launches on the streams, over ``timeline`` (max-plus clocks);
- ``result``: ``Prediction`` and ``KernelPrediction``.

- ``launch_floor``: the measured time of an empty kernel under the same timer; ``kernel_gap``: what each
  further launch adds; ``kernel_latency``: a kernel's fixed cost beyond its work.
- Work items come in waves over the SMs: a GEMM's or conv's largest output tiles, flash attention's query
  tiles (and key splits), a row-wise kernel's rows (``ROW_BLOCKS_PER_SM`` blocks per SM); each wave pays
  ``wave_latency`` (pipeline fill, epilogue, a row's reduction). Latency-bound work: a GEMM tile's k loop
  takes at least ``kstep_latency`` per ``K_STEP`` elements (cuBLAS splits k beyond ``SERIAL_K``), the memory-efficient
  attention's block per key block it walks; one thread
  block streams its bytes (a row, a GEMM tile's share) at most at ``block_bandwidth``, so a few blocks
  cannot use the whole GPU.
- ``t_memory`` = compulsory bytes / measured copy bandwidth; ``t_compute`` of a GEMM or implicit-GEMM conv:
  the tile/wave model at the measured large-GEMM rate of its precision (``tiles``); vector work: the
  CUDA-core peak. A conv's channels are padded per filter tap to ``CONV_K_TILE_BYTES``; a causal flash
  kernel also waits ``CAUSAL_TAIL`` of its longest query tile.

Cost: one pass over the workload's distinct kernels; plain Python for one shape, numpy for a sweep.
"""

from __future__ import annotations

from .._dir import public_dir
from ..hardware.parameters import Calibration
from .collectives import CHUNK_ALIGNMENT, MISALIGNED_FROM, collective_seconds, misaligned_chunk
from .expected import predict
from .gpu import REFERENCE_GPU, calibration, matmul_rate
from .host import (CPU_BOUND, HOST_TIME_PARAMETERS, cpu_bound, host_scaled, program_host_overhead, program_map)
from .kernel import (CAUSAL_TAIL, ROW_BLOCKS_PER_SM, KernelTerms, combine, kernel_seconds, kernel_terms, sdpa_backend,
                     soft_max, wave_seconds)
from .result import KernelPrediction, Prediction
from .tiles import TILES, flash_splits, gemm_compute_time

__all__ = [
    "Calibration",
    "KernelTerms",
    "KernelPrediction",
    "Prediction",
    "calibration",
    "kernel_terms",
    "kernel_seconds",
    "combine",
    "gemm_compute_time",
    "soft_max",
    "predict",
    "REFERENCE_GPU",
    "TILES",
    "CHUNK_ALIGNMENT",
    "MISALIGNED_FROM",
    "misaligned_chunk",
    # beyond the face of before: the parts tools and tests reach for
    "CPU_BOUND",
    "cpu_bound",
    "HOST_TIME_PARAMETERS",
    "collective_seconds",
    "host_scaled",
    "matmul_rate",
    "program_host_overhead",
    "program_map",
    "sdpa_backend",
    "flash_splits",
    "wave_seconds",
    "CAUSAL_TAIL",
    "ROW_BLOCKS_PER_SM",
]


def __dir__() -> list[str]:
    """``__all__``, the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
