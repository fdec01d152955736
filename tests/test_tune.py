"""solkit.tune: tile counts, occupancy, launch checks and waves by hand; the Ranking API; bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit import tune
from solkit.errors import (ArgumentTypeError, MissingFigureError, OptionError, ShapeError, SolkitError, SpecError,
                           UnknownKernelError)
from solkit.tune import attention, limits, matmul, rows
from solkit.tune.configs import as_configs, config_table
from solkit.tune.limits import DEFAULT_PARAMS, limits_of, params_of, programs_per_sm

H200 = limits_of("h200")
#: the usual GEMM config of the tests: 128 x 128 tiles, 64 deep, 8 warps, 3 stages
BIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}


def table(kernel: str, *configs: dict) -> dict[str, np.ndarray]:
    return config_table(kernel, as_configs(kernel, list(configs)))


class Config:
    """A stand-in for triton.Config (triton is not installed here): kwargs, num_warps, num_stages."""

    def __init__(self, kwargs: dict, num_warps: int = 4, num_stages: int = 3) -> None:
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages


# ---- the spec's limits ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gpu, per_sm, per_block, threads, blocks, instruction", [
    # CUDA C++ Programming Guide, compute capability 9.0: 228 KB per SM, 227 KB per block, 2048 threads, 32 blocks
    ("h200", 228 * 1024, 227 * 1024, 2048, 32, "wgmma"),
    ("h100", 228 * 1024, 227 * 1024, 2048, 32, "wgmma"),
    # compute capability 8.0: 164 KB per SM, 163 KB per block
    ("a100", 164 * 1024, 163 * 1024, 2048, 32, "mma.sync"),
    # compute capability 8.9: 100 KB per SM, 99 KB per block, 1536 threads, 24 blocks
    ("l40s", 100 * 1024, 99 * 1024, 1536, 24, "mma.sync"),
])
def test_limits_are_the_programming_guides(gpu, per_sm, per_block, threads, blocks, instruction):
    """Each spec's sm_limits, in bytes: the guide's figures (227 KB = 232,448 B on Hopper)."""
    lim = limits_of(gpu)
    assert (lim.smem_per_sm, lim.smem_per_block, lim.threads_per_sm, lim.blocks_per_sm) == (per_sm, per_block,
                                                                                            threads, blocks)
    assert lim.instruction == instruction and lim.regs_per_sm == 65536 and lim.regs_per_thread == 255
    assert H200.smem_per_block == 232_448  # 227 * 1024


def test_a_spec_without_limits_loads_and_tune_says_what_it_lacks():
    """B200's spec has no sm_limits: it loads, and tune names the missing section."""
    assert sk.load_gpu("b200").sm_limits is None
    with pytest.raises(MissingFigureError, match="sm_limits") as err:
        tune.rank("triton_matmul", [BIG], gpu="b200", m=1024, n=1024, k=1024)
    assert isinstance(err.value, LookupError)


def test_sm_limits_are_schema_checked(tmp_path):
    """An unknown tensor-core instruction and an unlisted source are SpecErrors naming the field."""
    text = (sk.load_gpu("h200").path and open(sk.load_gpu("h200").path).read())
    bad = text.replace("instruction: wgmma", "instruction: hmma")
    path = tmp_path / "h200-sxm.yaml"
    path.write_text(bad)
    with pytest.raises(SpecError, match="sm_limits.tensor_core.instruction"):
        sk.load_gpu(str(path))
    path.write_text(text.replace("  source: cuda-guide\n", "  source: nowhere\n", 1))
    with pytest.raises(SpecError, match="sm_limits.source"):
        sk.load_gpu(str(path))


def test_uncalibrated_spec_says_so():
    """H200 ranks with its measured.tune; A100 (another chip, no measured section) with the defaults, and says it."""
    assert params_of("h200").calibrated
    r = tune.rank("triton_matmul", [BIG], gpu="a100", m=1024, n=1024, k=1024)
    assert not r.calibrated and r.source == DEFAULT_PARAMS.source and "(uncalibrated defaults" in r.report()


def test_the_h200s_chip_borrows_its_tune_fit():
    """An H100 SXM (Hopper, 132 SMs, 1980 MHz: the H200's chip and clocks) ranks with the H200's fitted parameters,
    uncalibrated, and says whose they are; the NVL parts (the same chip at 1785 MHz) and the 114-SM H100 PCIe get the
    defaults."""
    p = params_of("h100")
    # hardware_specs/h200-sxm.yaml's measured.tune: mma_sync_efficiency 0.48, l2_bandwidth_tb_s 14, kstep_us 0.198
    assert (p.mma_sync_efficiency, p.l2_bandwidth, p.kstep) == (0.48, 14e12, 0.198e-6)
    assert not p.calibrated and "measured.tune of h200-sxm" in p.source and "borrowed" in p.source
    r = tune.rank("triton_matmul", [BIG], gpu="h100", m=1024, n=1024, k=1024)
    assert not r.calibrated and "borrowed, the same chip (hopper, 132 SMs, 1980 MHz)" in r.report().splitlines()[0]
    for other in ("h100-nvl", "h200-nvl", "h100-pcie"):
        assert params_of(other) is DEFAULT_PARAMS, other


def test_a_copied_spec_derives_its_own_figures():
    """A copy with its measured section removed ranks uncalibrated, and the shipped H200 it was copied from still
    ranks with its own fit (a copy's memo is its own)."""
    h200 = sk.load_gpu("h200")
    bare = h200.model_copy(update={"measured": None})
    assert not tune.rank("triton_matmul", [BIG], gpu=bare, m=1024, n=1024, k=1024).calibrated
    assert tune.rank("triton_matmul", [BIG], gpu="h200", m=1024, n=1024, k=1024).calibrated
    assert bare.memo is not h200.memo


def test_uncalibrated_limits_take_the_predictors_ceilings():
    """An uncalibrated GPU's DRAM bandwidth and launch floor are the predictor's borrowed ones: the H100 SXM's 3.35 TB/s
    x the H200's measured copy share 4.296 / 4.8 = 2.998 TB/s, the H200's 4 us floor (hardware_specs/h200-sxm.yaml)."""
    lim = limits_of("h100")
    assert lim.dram_bandwidth == pytest.approx(3.35e12 * 4.296 / 4.8, rel=1e-12)  # 2.99825e12
    assert lim.launch_floor == pytest.approx(4e-6, rel=1e-12)
    assert limits_of("h200").dram_bandwidth == pytest.approx(4.296e12, rel=1e-12)  # its own measured copy


# ---- occupancy ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("warps, smem, regs, blocks, limiter", [
    # registers: ceil(32 * 255 / 256) * 256 = 8192 a warp, x 4 warps = 32768; 65536 / 32768 = 2
    (4, 0, 255, 2, 3),
    # shared memory: 233,472 / (100,000 + 1,024 reserved) = 2.31 -> 2 (registers would allow 65536 / 4096 = 16)
    (4, 100_000, 32, 2, 2),
    # warps: 64 / 16 = 4 (registers: ceil(32 * 24 / 256) * 256 = 768 a warp, x 16 = 12288 -> 5)
    (16, 0, 24, 4, 1),
    # blocks: 32 a SM (warps 64 / 1, registers 65536 / 1024 = 64, shared memory 233,472 / 1,024 = 228)
    (1, 0, 32, 32, 0),
])
def test_programs_per_sm_by_hand(warps, smem, regs, blocks, limiter):
    """Occupancy on an H200 from warps, shared memory (with the 1 KB reserved per block) and registers."""
    got, why = programs_per_sm(H200, warps, smem, regs)
    assert (int(got), int(why)) == (blocks, limiter)


def test_gemm_resources_and_waves_by_hand():
    """128x128x64, 8 warps, 3 stages on an H200: wgmma, 98,304 B of shared memory, 111 registers, 2 programs an SM,
    and a 4096^3 GEMM in 4 waves."""
    assert matmul.REGISTER_BASE["wgmma"] == (19.0, 0.43)  # the compiles' least squares the model uses
    t = table("triton_matmul", BIG)
    res = matmul.resources(t, H200, 2.0, 2.0, 4096, 4096)
    assert bool(res["wgmma"][0])  # 8 warps = 2 warpgroups, BLOCK_M 128 = 2 x 64 rows
    assert res["smem"][0] == 98_304  # 3 stages x (128 + 128) x 64 x 2 B; epilogue 128 x 128 x 2 = 32,768 is less
    assert res["regs"][0] == 111  # ceil(19 + 128*128/256 + 0.43 * (256*64/256)) = ceil(110.52)
    # shared memory: 233,472 / (98,304 + 1,024) = 2.35 -> 2; registers: ceil(32*111/256)*256*8 = 28,672 -> 2
    assert res["occupancy"][0] == 2
    parts = matmul.model(t, 4096, 4096, 4096, H200, params_of("h200"), 2.0, 2.0)
    assert parts["programs"][0] == 1024  # ceil(4096/128) * ceil(4096/128) = 32 * 32
    assert parts["k_steps"][0] == 64  # ceil(4096 / 64)
    assert parts["waves"][0] == 4  # ceil(1024 / (132 SMs * 2)) = ceil(3.88)


@pytest.mark.parametrize("warps, cap", [
    (2, 255), (4, 255),  # 65536 / 4 warps = 16384 a warp = 512 a thread: the 255 a thread is the bound
    (8, 255),  # 65536 / 8 = 8192 a warp (32 units of 256) = 256 a thread > 255
    (16, 128),  # 65536 / 16 = 4096 a warp = 128 a thread
    (32, 64),  # 65536 / 32 = 2048 a warp = 64 a thread
])
def test_register_cap_by_hand(warps, cap):
    """ptxas keeps a block within the 64 K registers a cc 9.0 block may have: min(255, 65536 / warps / 32)."""
    assert limits.register_cap(H200, warps) == cap


def test_a_block_of_too_many_warps_is_refused_for_its_threads_without_a_numpy_warning():
    """1,024 warps: 65536 / 1024 = 64 registers a warp, under one unit of 256, so the cap is 0 registers a thread; the
    config is refused for its 32 * 1024 = 32,768 threads (the H200 gives 1,024 a block), and no division by zero
    leaks out as a RuntimeWarning."""
    import warnings

    cfg = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 1024, "num_stages": 3}
    assert limits.register_cap(H200, 1024) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = tune.rank("triton_matmul", [cfg], gpu="h200", m=4096, n=4096, k=4096)
    assert np.isnan(r.seconds[0])
    assert r.reasons == ("needs 32,768 threads (1024 warps), the h200-sxm gives 1,024 per block",)


def test_registers_beyond_the_cap_spill_and_the_config_still_launches():
    """256 x 256 x 64, 16 warps, 2 stages: 256*256 / 512 = 128 accumulators + 19 + 0.43 * (512*64 / 512 = 64) =
    174.52 wanted, over the cap of 128 at 16 warps, so it holds 128 and spills 46.52; 2 * 512 * 64 * 2 = 131,072 B of
    shared memory fits the 232,448, so it launches, one program an SM (16 warps x 4096 = 65,536 registers), slower by
    the spill factor 1 + 4 * 46.52 / 255."""
    cfg = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 16, "num_stages": 2}
    res = matmul.resources(table("triton_matmul", cfg), H200, 2.0, 2.0)
    assert (res["regs"][0], res["spills"][0], res["smem"][0], res["occupancy"][0]) == (128, pytest.approx(46.52),
                                                                                        131_072, 1)
    r = tune.rank("triton_matmul", [cfg], gpu="h200", m=4096, n=4096, k=4096)
    assert r.reasons == (None,) and np.isfinite(r.seconds[0])
    assert limits.spill_factor(H200, 46.5) == pytest.approx(1 + 4 * 46.5 / 255)


@pytest.mark.parametrize("bm, bn, warps, wg, grid", [
    (64, 64, 8, True, (1, 2)),  # two warpgroups, 64 rows: the second splits BLOCK_N
    (128, 64, 8, True, (2, 1)),  # 128 rows: a warpgroup each 64
    (256, 128, 4, True, (1, 1)),  # one warpgroup does it all
    (16, 64, 8, False, (1, 8)),  # 16/16 = 1 >= 64/16 = 4? no: n to 2; 1 >= 2? no: 4; 1 >= 1 but m has no 16 to give: 8
    (128, 128, 4, False, (2, 2)),  # 8 >= 8: m to 2; 8/2 = 4 >= 8? no: n to 2
    (32, 128, 8, False, (2, 4)),  # 2 >= 8? no: n 2; 2 >= 4? no: n 4; 2 >= 2 and 1 < 2: m 2 (8 warps)
    (64, 32, 4, False, (4, 1)),  # 4 >= 2: m 2; 4/2 = 2 >= 2 and 2 < 4: m 4
])
def test_warp_grid_by_hand(bm, bn, warps, wg, grid):
    """Triton's warps per tile for its dot: wgmma in warpgroups of 64 rows; mma.sync as warpsPerTileV2 (Triton's
    AccelerateMatmul.cpp) doubles them, comparing a warp's m16 rows with twice its n8 columns (integer divisions)."""
    units = warps / 4 if wg else warps
    wm, wn = matmul.warp_grid(np.array([bm], float), np.array([bn], float), np.array([units]), np.array([wg]))
    assert (wm[0], wn[0]) == grid


def test_shared_memory_traffic_by_hand():
    """A k-step's shared-memory bytes: 64 x 64 x 64 with 8 warps (wgmma, warpgroups side by side along n): A read by
    both, 2 * 64*64, B once, 64*64, plus both tiles written, (64 + 64) * 64: 20,480 elements = 40,960 B; the same tile
    with 4 warps reads A once: 16,384 elements = 32,768 B."""
    cfgs = table("triton_matmul", {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 8},
                 {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4})
    got = matmul.smem_bytes_per_step(cfgs, matmul.uses_wgmma(cfgs, H200), 2.0)
    assert list(got) == [40_960, 32_768]


@pytest.mark.parametrize("m, n, k, bm, bn, bk, split_k, programs, steps", [
    (1000, 1000, 1000, 128, 64, 32, 1, 128, 32),  # ceil(1000/128)=8 x ceil(1000/64)=16; ceil(1000/32)=32
    (1000, 1000, 1000, 128, 64, 32, 2, 256, 16),  # x 2 splits; ceil(ceil(1000/2)/32) = ceil(500/32) = 16
    (64, 8192, 100, 16, 256, 128, 1, 128, 1),  # 4 x 32; one (masked) k-step of 128
])
def test_tile_counts_by_hand(m, n, k, bm, bn, bk, split_k, programs, steps):
    """programs = ceil(m/BM) * ceil(n/BN) * SPLIT_K; k-steps = ceil(ceil(k/SPLIT_K)/BK)."""
    c = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": split_k, "num_warps": 4, "num_stages": 2}
    parts = matmul.model(table("triton_matmul", c), m, n, k, H200, params_of("h200"), 2.0, 2.0)
    assert (parts["programs"][0], parts["k_steps"][0]) == (programs, steps)


@pytest.mark.parametrize("bm, warps, gpu, wgmma", [
    (64, 4, "h200", True),  # one warpgroup, 64 rows
    (32, 4, "h200", False),  # fewer rows than wgmma's 64: mma.sync
    (128, 2, "h200", False),  # two warps fill no warpgroup
    (128, 8, "a100", False),  # no wgmma before Hopper
])
def test_instruction_choice(bm, warps, gpu, wgmma):
    """wgmma where the GPU has it, warps fill warpgroups of 4 and BLOCK_M fills 64 rows; mma.sync else."""
    t = table("triton_matmul", {"BLOCK_M": bm, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": warps})
    assert bool(matmul.uses_wgmma(t, limits_of(gpu))[0]) is wgmma


def test_unaligned_operands_have_one_buffer():
    """k not a multiple of 16: A (row stride k) is loaded through registers into one buffer; B keeps its 3 stages."""
    t = table("triton_matmul", BIG)
    res = matmul.resources(t, H200, 2.0, 2.0, n=4096, k=4095)
    assert res["smem"][0] == 128 * 64 * 2 + 3 * 64 * 128 * 2  # 16,384 + 49,152 = 65,536


def test_dram_bytes_by_hand():
    """Both operands fit the L2's share: each read once; else B is swept once per GROUP_M group, as far as it misses."""
    t = table("triton_matmul", BIG)
    # 1024^3: A + B = 2 * 1024*1024*2 = 4,194,304 <= 31,457,280 (half of 60 MiB); C = 2,097,152
    assert matmul.dram_bytes(t, 1024, 1024, 1024, H200, 2.0, 2.0)[0] == 6_291_456
    # 8192^3, GROUP_M 8: the A panel 8 * 128 * 8192 * 2 = 16,777,216 fits the share (A read once, 134,217,728);
    # B misses 1 - (31,457,280 - 16,777,216) / 134,217,728 = 0.890625 of itself on each of the 8 groups after the
    # first: 134,217,728 * (1 + 7 * 0.890625) = 970,981,376; C = 134,217,728
    assert matmul.dram_bytes(t, 8192, 8192, 8192, H200, 2.0, 2.0)[0] == 134_217_728 + 970_981_376 + 134_217_728


# ---- launch checks --------------------------------------------------------------------------------------------------


def test_a_config_that_cannot_launch_gets_a_reason_with_numbers():
    """3 stages of (128 + 256) x 128 bf16 tiles need 294,912 B; the H200 gives 232,448 per block: NaN, never ranked."""
    too_big = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 8, "num_stages": 3}
    r = tune.rank("triton_matmul", [BIG, too_big], gpu="h200", m=4096, n=4096, k=4096)
    assert math.isnan(r.seconds[1]) and np.isfinite(r.seconds[0])
    assert "needs 294,912 B of shared memory, the h200-sxm gives 232,448 per block" in r.reasons[1]
    assert r.reasons[0] is None and list(r.order) == [0]


def test_too_many_threads_cannot_launch():
    """64 warps are 2,048 threads; a block may have 1,024."""
    r = tune.rank("triton_layernorm", [{"BLOCK_SIZE": 4096, "num_warps": 64}], rows=1024, cols=4096)
    assert "needs 2,048 threads (64 warps), the h200-sxm gives 1,024 per block" in r.reasons[0]
    assert math.isnan(r.seconds[0])


def test_pruning_a_ranking_of_which_none_can_launch_says_why():
    """2,048 threads in a block of at most 1,024: nothing to time, so prune refuses as best does (not an empty list
    handed to Triton's autotuner)."""
    r = tune.rank("triton_layernorm", [{"BLOCK_SIZE": 4096, "num_warps": 64}], rows=1024, cols=4096)
    for call in (lambda: r.prune(), lambda: r.best):
        with pytest.raises(ShapeError, match="none of the 1 configs can launch on the h200-sxm: needs 2,048 threads"):
            call()


def test_softmax_block_must_hold_a_row():
    """The tutorial's softmax reads a row in one block: BLOCK_SIZE 1024 cannot do rows of 1,500."""
    r = tune.rank("triton_softmax", [{"BLOCK_SIZE": 1024}, {"BLOCK_SIZE": 2048}], rows=4096, cols=1500)
    assert "shorter than a row of 1500" in r.reasons[0] and r.reasons[1] is None


def test_attention_shared_memory_reason():
    """4 stages of K and V tiles of 128 x 128 and the 128 x 128 q tile: 4*2*128*128*2 + 128*128*2 = 294,912 B."""
    c = {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "num_stages": 4}
    r = tune.rank("triton_flash_attention", [c], batch=1, heads=8, seq_q=2048)
    assert "needs 294,912 B of shared memory" in r.reasons[0]


# ---- row kernels and attention by hand --------------------------------------------------------------------------


def test_layernorm_chunks_occupancy_and_waves_by_hand():
    """BLOCK_SIZE 1024, 4 warps: 8 elements a thread, ceil(24 + 3.3 * 8) = 51 registers, 9 programs an SM."""
    assert (rows.REGISTER_BASE, rows.ELEMENT_REGISTERS) == (24.0, 3.3)
    t = table("triton_layernorm", {"BLOCK_SIZE": 1024, "num_warps": 4})
    res = rows.resources(t, H200)
    assert res["regs"][0] == 51
    # ceil(32 * 51 / 256) * 256 = 1,792 a warp, x 4 = 7,168: 65,536 / 7,168 = 9.14 -> 9 (warps would allow 16)
    assert res["occupancy"][0] == 9
    parts = rows.model("triton_layernorm", t, 10_000, 5_000, H200, params_of("h200"), 2.0, 1.0)
    assert parts["chunks"][0] == 5  # ceil(5000 / 1024)
    assert parts["waves"][0] == 9  # ceil(10,000 / (132 * 9)) = ceil(8.42)


def test_layernorm_reads_its_variance_pass_from_l2_by_hand():
    """Three passes, the second (the variance) read back from the L2: with latency, issue and per-program costs set
    to nothing and the L2 at twice the DRAM bandwidth, a program costs chunks * (2 + 1/2) DRAM passes' bytes.

    BLOCK_SIZE 1024, 4 warps on 10^6 rows of 4096 (16-aligned): 9 programs an SM (above), 132 * 9 = 1,188 rows running,
    4 chunks; one chunk's bytes at their share of DRAM = 1024 * 2 B * 1,188 / dram_bandwidth.
    """
    from dataclasses import replace

    assert (rows.PASSES["triton_layernorm"], rows.L2_PASSES["triton_layernorm"]) == (3, 1)
    assert (rows.PASSES["triton_softmax"], rows.L2_PASSES["triton_softmax"]) == (1, 0)
    p = replace(params_of("h200"), row_latency=0.0, row_cycles=1e-9, thread_cycles=1e-9, program=0.0,
                l2_bandwidth=2 * H200.dram_bandwidth)
    t = table("triton_layernorm", {"BLOCK_SIZE": 1024, "num_warps": 4})
    parts = rows.model("triton_layernorm", t, 1e6, 4096, H200, p, 2.0, 1.0)
    one_pass = 1024 * 2.0 * 132 * 9 / H200.dram_bandwidth
    assert parts["program_seconds"][0] == pytest.approx(4 * 2.5 * one_pass, rel=1e-9)


def test_layernorm_rereads_miss_the_l2_when_the_rows_in_flight_overflow_it_by_hand():
    """The passes after the first find the row in the L2 only as far as the rows in flight fit its share.

    BLOCK_SIZE 1024, 4 warps on 10^6 rows of 16384: 1,188 rows running (9 an SM, as above), 1,188 * 16384 * 2 B =
    38,928,384 B in flight against half the 60 MB L2, 31,457,280 B: a share hit = 80/99 of the re-reads find it. Costs
    as above (the L2 at twice DRAM's bandwidth): per chunk, the mean pass 1, the variance pass hit/2 + (1 - hit), the
    last pass 1 (y out) + (1 - hit) (x again): 4 - 1.5 * 80/99 = 276/99 DRAM passes; 16 chunks. The DRAM bytes add the
    two re-reads' misses: 2 * (19/99) * 10^6 * 16384 * 2 B.
    """
    from dataclasses import replace

    p = replace(params_of("h200"), row_latency=0.0, row_cycles=1e-9, thread_cycles=1e-9, program=0.0,
                l2_bandwidth=2 * H200.dram_bandwidth)
    t = table("triton_layernorm", {"BLOCK_SIZE": 1024, "num_warps": 4})
    base = (2 * 1e6 * 16384 + 2 * 16384) * 2.0  # ops.layernorm's bytes: x, y, gamma, beta
    parts = rows.model("triton_layernorm", t, 1e6, 16384, H200, p, 2.0, base)
    one_pass = 1024 * 2.0 * 1188 / H200.dram_bandwidth
    assert parts["program_seconds"][0] == pytest.approx(16 * 276 / 99 * one_pass, rel=1e-9)
    assert parts["dram_bytes"][0] == pytest.approx(base + 2 * 19 / 99 * 1e6 * 16384 * 2, rel=1e-12)


@pytest.mark.parametrize("sq, skv, causal, mean, top", [
    (512, 512, False, 8, 8),  # 512 / 64 key blocks for every query block
    (512, 512, True, 5, 8),  # query blocks of 128 reach keys 128, 256, 384, 512: 2, 4, 6, 8 blocks of 64
])
def test_attention_key_blocks_by_hand(sq, skv, causal, mean, top):
    """Key blocks a query block loops over: all of them, or up to its diagonal with causal."""
    m, t = attention.key_blocks(np.array([128.0]), np.array([64.0]), sq, skv, causal)
    assert (m[0], t[0]) == (mean, top)


def test_attention_causal_bottom_right_aligned():
    """256 queries over 1024 keys, blocks of 128: the queries see keys up to 896 and 1024: 7 and 8 blocks."""
    m, t = attention.key_blocks(np.array([128.0]), np.array([128.0]), 256, 1024, True)
    assert (m[0], t[0]) == (7.5, 8)


def test_attention_programs_by_hand():
    """ceil(1000 / 128) = 8 query blocks x 2 * 16 (batch, heads) = 256 programs."""
    c = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2}
    r = tune.rank("triton_flash_attention", [c], batch=2, heads=16, seq_q=1000)
    assert r.parts["programs"][0] == 256


# ---- the Ranking API ------------------------------------------------------------------------------------------------


def _three():
    fast, slow = dict(BIG), {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 2, "num_stages": 2}
    too_big = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 8, "num_stages": 4}
    return [slow, too_big, fast]


def test_ranking_api():
    """seconds in the given order (NaN only where a config cannot launch), order, best, prune, top, frame, HTML."""
    configs = _three()
    r = tune.rank("triton_matmul", configs, gpu="h200", m=4096, n=4096, k=4096, dtype="bf16")
    assert r.seconds.shape == (3,) and np.isnan(r.seconds).tolist() == [False, True, False]
    assert r.reasons[1] is not None and r.reasons[0] is None and r.reasons[2] is None
    assert list(r.order) == [2, 0]  # 128 x 128 tiles before 16 x 16 ones
    assert r.best["BLOCK_M"] == 128 and r.best_seconds == r.seconds[2]
    assert r.prune(0.25) == [configs[2]]  # ceil(0.25 * 2 launchable) = 1
    assert r.prune(2) == [configs[2], configs[0]] and r.prune(1.0) == r.prune(2)
    assert r.launchable == 2 and list(r.top(1)) == [2]
    frame = r.to_frame()
    assert list(frame["rank"].fillna(0)) == [2, 0, 1] and frame.loc[1, "reason"] == r.reasons[1]
    assert "<table>" in r._repr_html_() and "cannot launch" in r._repr_html_()
    assert repr(r).startswith("Ranking(triton_matmul on h200-sxm, m=4096, n=4096, k=4096: 3 configs, 2 can launch")
    data = r.to_dict(top=1)
    assert data["n_launchable"] == 2 and len(data["ranked"]) == 1 and data["cannot_launch"][0]["predicted_s"] is None


def test_triton_configs_come_back_as_given():
    """triton.Config objects are read by their attributes and prune returns the same objects."""
    objs = [Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 8}, num_warps=2, num_stages=2),
            Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3)]
    r = tune.rank("triton_matmul", objs, m=4096, n=4096, k=4096)
    assert r.configs[1]["num_warps"] == 8 and r.configs[0]["num_stages"] == 2
    assert r.prune(1)[0] is objs[1]


def test_early_config_prune_plugs_into_autotune():
    """Triton calls prune(configs, named_args, **kwargs): the shape is read from M, N, K; the fastest come back."""
    objs = [Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, 2, 2), Config({"BLOCK_M": 128, "BLOCK_N": 128,
            "BLOCK_K": 64}, 8, 3), Config(
        {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, 4, 3)]
    prune = tune.early_config_prune("triton_matmul", gpu="h200", keep=2)
    kept = prune(objs, {"a_ptr": object(), "M": 4096, "N": 4096, "K": 4096}, num_warps=None)
    assert kept == tune.rank("triton_matmul", objs, m=4096, n=4096, k=4096).prune(2)
    assert all(any(k is o for o in objs) for k in kept) and len(kept) == 2
    fixed = tune.early_config_prune("matmul", keep=1, k=4096, m=lambda a: a["rows"])
    assert fixed(objs, {"rows": 4096, "N": 4096}) == kept[:1]
    with pytest.raises(ArgumentTypeError, match="argument 'K'"):
        prune(objs, {"M": 4096, "N": 4096})
    with pytest.raises(ArgumentTypeError, match="did you mean 'm'"):
        tune.early_config_prune("triton_matmul", mm="M")


def test_the_usual_spaces():
    """The GEMM grid keeps the configs whose accumulators a thread holds are at most 128: 4*4 tile pairs, of which
    3 exceed 128 at 4 warps (BM*BN > 16,384) and 1 at 8 warps (> 32,768): (13 + 15) x 3 BLOCK_K x 4 stages = 336."""
    assert len(tune.triton_matmul_space()) == (13 + 15) * 3 * 4
    assert all(c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"] for c in tune.triton_matmul_space())
    # rows: BLOCK_SIZE / (32 * warps) <= 64 drops 4096 at 1 warp, 8192 at 1 and 2 warps: 6 x 5 - 3 = 27
    assert len(tune.triton_row_space()) == 27
    assert len(tune.triton_attention_space()) == 2 * 3 * 2 * 4


@settings(max_examples=30, deadline=None)
@given(k16=st.integers(1, 512), extra=st.integers(1, 64), m=st.integers(16, 8192), n16=st.integers(1, 512))
def test_more_depth_is_never_faster(k16, extra, m, n16):
    """With n and k multiples of 16 (the same specialization), a deeper k never predicts less time."""
    configs = tune.triton_matmul_space(block_m=(64, 128), block_n=(64, 128), block_k=(32, 64), num_stages=(3,))
    a = tune.rank("triton_matmul", configs, m=m, n=16 * n16, k=16 * k16).seconds
    b = tune.rank("triton_matmul", configs, m=m, n=16 * n16, k=16 * (k16 + extra)).seconds
    ok = np.isfinite(a)
    assert np.array_equal(ok, np.isfinite(b)) and np.all(b[ok] >= a[ok])


# ---- bad input ----------------------------------------------------------------------------------------------------


def test_unknown_kernel_has_a_did_you_mean():
    """An unknown kernel is a LookupError-based solkit error naming the nearest kernel."""
    with pytest.raises(UnknownKernelError, match="did you mean 'triton_matmul'") as err:
        tune.rank("triton_matmull", [BIG], m=1, n=1, k=1)
    assert isinstance(err.value, LookupError) and isinstance(err.value, SolkitError)
    with pytest.raises(ArgumentTypeError):
        tune.rank(3, [BIG], m=1, n=1, k=1)


@pytest.mark.parametrize("config, error, match", [
    ({**BIG, "BLOCK_MM": 64}, ArgumentTypeError, "did you mean 'BLOCK_M'"),  # a misspelt key
    ({**BIG, "num_warp": 4}, ArgumentTypeError, "did you mean 'num_warps'"),
    ({"BLOCK_M": 64, "BLOCK_N": 64}, ShapeError, "lacks BLOCK_K"),
    ({**BIG, "BLOCK_M": 64.5}, ShapeError, "must be a positive integer, got 64.5"),
    ({**BIG, "BLOCK_M": "64"}, ArgumentTypeError, "must be a positive integer, got '64'"),
    ({**BIG, "BLOCK_M": True}, ArgumentTypeError, "must be a positive integer"),
    ({**BIG, "BLOCK_N": 96}, ShapeError, "must be a power of two .* got 96; the nearest are 64 and 128"),
    ({**BIG, "num_warps": 6}, ShapeError, "power of two"),
    ({**BIG, "BLOCK_K": 8}, ShapeError, "at least 16"),
    ({**BIG, "num_stages": 0}, ShapeError, "positive integer, got 0"),
])
def test_bad_configs(config, error, match):
    """Each config mistake is the right solkit error, naming the config's position and key."""
    with pytest.raises(error, match=match):
        tune.rank("triton_matmul", [BIG, config], m=1024, n=1024, k=1024)


@pytest.mark.parametrize("shape, error, match", [
    ({"m": -3, "n": 1024, "k": 1024}, ShapeError, "m must be a positive integer, got -3"),
    ({"m": 10.5, "n": 1024, "k": 1024}, ShapeError, "m must be a positive integer"),
    ({"m": [1, 2], "n": 1024, "k": 1024}, ShapeError, "one positive integer"),
    ({"mm": 1, "n": 1024, "k": 1024}, ArgumentTypeError, "did you mean 'm'"),
    ({"n": 1024, "k": 1024}, ArgumentTypeError, "missing a required argument: 'm'"),
])
def test_bad_shapes(shape, error, match):
    """Shapes are positive integers named as the kernel names them."""
    with pytest.raises(error, match=match):
        tune.rank("triton_matmul", [BIG], **shape)


def test_bad_config_lists_and_keeps():
    """One config alone, an empty list, a keep of 0 or a bool are errors."""
    with pytest.raises(ArgumentTypeError, match="wrap it in a list"):
        tune.rank("triton_matmul", BIG, m=1, n=1, k=1)
    with pytest.raises(ShapeError, match="at least one config"):
        tune.rank("triton_matmul", [], m=1, n=1, k=1)
    r = tune.rank("triton_matmul", [BIG], m=1024, n=1024, k=1024)
    with pytest.raises(ShapeError, match="keep"):
        r.prune(0)
    with pytest.raises(ArgumentTypeError, match="keep"):
        r.prune(True)
    with pytest.raises(ArgumentTypeError, match="got the keyword 'gpus'; did you mean 'gpu'"):
        tune.rank("triton_matmul", [BIG], gpus="h200", m=1, n=1, k=1)


def test_public_api():
    """solkit.tune's names."""
    assert tune.__all__ == ["rank", "Ranking", "early_config_prune", "triton_matmul_space", "triton_row_space",
                            "triton_attention_space", "KERNELS"]
    assert set(tune.KERNELS) == {"triton_matmul", "triton_softmax", "triton_layernorm", "triton_flash_attention"}


def test_fp64_dots_are_refused_not_ranked_with_the_bf16_model():
    """An fp64 GEMM or attention runs DMMA/FMA instructions, not the wgmma the model describes: an OptionError (a
    ValueError) naming dtype; a row kernel in fp64 (no dot) is still ranked."""
    with pytest.raises(OptionError, match=r"dtype='fp64': triton_matmul's model is of tensor-core dots") as err:
        tune.rank("triton_matmul", [BIG], gpu="h200", dtype="fp64", m=4096, n=4096, k=4096)
    assert isinstance(err.value, ValueError)
    r = tune.rank("triton_layernorm", [{"BLOCK_SIZE": 4096, "num_warps": 8}], dtype="fp64", rows=1024, cols=4096)
    assert np.isfinite(r.seconds[0])
