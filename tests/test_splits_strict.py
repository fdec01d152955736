"""Splits over GPUs (issue 29, class 6 and 8): ZeRO's padded shards by hand, every valid split evaluates, the search is
bounded.

The hypothesis property draws dp, tp, pp, zero, ep and microbatches over models' real counts (GPT-2's 124,439,808
parameters, 12 heads and 12 layers; Llama-3.2-1B's 32 heads over 8 KV heads and 16 layers; a small mixture of
experts) and checks them against the documented rules, written here independently of the code: tp divides the
heads and the MLP width and divides or is a multiple of the KV heads, pp is at most the layers, ZeRO needs dp > 1,
ep needs experts it divides and a dp it divides. A split the rules allow must build, predict a finite time on a
system that has its GPUs, and give a finite one-GPU memory; one they refuse must be an OptionError.
"""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit import models, planning
from solkit.errors import ImpossibleMeasurementError, OptionError, ShapeError
from solkit.models.parallel import padded, zero_shard
from solkit.splits import MAX_MICRO_BATCH, _divisors, candidates

GPT2 = models.preset("gpt2")
LLAMA1B = models.preset("llama3.2-1b")
MOE = models.Transformer(name="small moe", layers=4, d_model=256, heads=4, kv_heads=2, ffn=512, vocab=1000, experts=8,
                         top_k=2)
MODELS = {"gpt2": GPT2, "llama3.2-1b": LLAMA1B, "moe": MOE}


def test_zero_shard_of_gpt2_over_five_by_hand():
    """GPT-2 over dp=5: ZeRO-1/2 ceil(124,439,808 / 5) = 24,887,962; FSDP per unit 12 x 1,417,575 + 7,877,069."""
    assert (GPT2.params, GPT2.layer_params, GPT2.layers) == (124_439_808, 7_087_872, 12)
    assert zero_shard(GPT2, 5, 1) == zero_shard(GPT2, 5, 2) == 24_887_962  # 124,439,808 / 5 = 24,887,961.6
    # 7,087,872 / 5 = 1,417,574.4 -> 1,417,575; root 124,439,808 - 12 x 7,087,872 = 39,385,344, / 5 = 7,877,068.8
    assert zero_shard(GPT2, 5, 3) == 12 * 1_417_575 + 7_877_069 == 24_887_969
    assert zero_shard(GPT2, 5, 0) == zero_shard(GPT2, 1, 3) == 124_439_808  # no ZeRO, or one rank: everything


def test_padded_buffers_by_hand():
    """A flat buffer rounds up to a multiple of the group: 10 over 4 -> 12; 12 over 4 stays 12; one rank adds none."""
    assert padded(10, 4) == 12 and padded(12, 4) == 12 and padded(10, 1) == 10
    assert padded(124_439_808, 5) == 124_439_810  # 5 x 24,887,962


def test_padding_reaches_the_steps_collectives_and_memory():
    """gpt2 dp=5 zero=2: each rank's gradients 4 B x 24,887,962; the updated parameters gathered from 5 x that x 4 B."""
    step = models.training_step(GPT2.forward(batch=1, seq=128), dp=5, zero=2)
    gathers = [k for k, _ in step.counted if k.name == "zero all-gather of the updated parameters"]
    assert gathers and gathers[0].link.nbytes == 5 * 24_887_962 * 4 == 497_759_240
    scatters = [(k, c) for k, c in step.counted if k.name.startswith("ddp bucket reduce-scatter")]
    # the buckets reduce-scatter every gradient once, unpadded: 4 B x 124,439,808 = 497,759,232 B (the padding's 2
    # elements are the flat buffer's, gathered once above)
    assert scatters and sum(k.link.nbytes * c for k, c in scatters) == pytest.approx(4 * 124_439_808, rel=1e-12)
    assert GPT2.memory(1, 1024, training=True, dp=5, zero=2).gradients == 4 * 24_887_962 == 99_551_848


def test_divisors_are_bounded_and_exact():
    """The search's divisors: ascending, at most the limit, found in O(min(limit, sqrt n)) (2**52 answers at once)."""
    assert _divisors(36, 36) == [1, 2, 3, 4, 6, 9, 12, 18, 36] and _divisors(36, 6) == [1, 2, 3, 4, 6]
    assert _divisors(97, 100) == [1, 97] and _divisors(1, 16) == [1]
    start = time.perf_counter()
    assert _divisors(2**52, MAX_MICRO_BATCH) == [1, 2, 4, 8, 16]
    assert time.perf_counter() - start < 0.1


def test_candidates_do_not_grow_with_the_global_batch():
    """2**20 and 2**52 share their divisors up to 16 (1, 2, 4, 8, 16): the same splits; neither walks a range over it."""
    start = time.perf_counter()
    small, large = list(candidates(GPT2, 8, 8, 2**20)), list(candidates(GPT2, 8, 8, 2**52))
    assert len(small) == len(large) > 0 and time.perf_counter() - start < 1.0
    assert {c[:4] for c in small} == {c[:4] for c in large}  # dp, tp, pp, zero: the same; only microbatches differ


def _allowed(m: models.Transformer, dp: int, tp: int, pp: int, zero: int, ep: int) -> bool:
    """The documented rules of a split (module docstring), independent of the code."""
    kv = m.n_kv_heads
    return (m.heads % tp == 0 and m.ffn_width % tp == 0 and (kv % tp == 0 or tp % kv == 0) and pp <= m.layers
            and (zero == 0 or dp > 1) and (ep == 1 or (m.moe and m.experts % ep == 0 and dp % ep == 0)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(MODELS)), dp=st.integers(1, 24), tp=st.sampled_from([1, 2, 3, 4, 8]),
       pp=st.integers(1, 18), zero=st.sampled_from([0, 1, 2, 3]), ep=st.sampled_from([1, 1, 2, 4]),
       microbatches=st.integers(1, 6))
def test_every_valid_split_evaluates(name, dp, tp, pp, zero, ep, microbatches):
    """A split the rules allow builds, predicts a finite time and a finite memory; any other is an OptionError."""
    m = MODELS[name]
    split = dict(dp=dp, tp=tp, pp=pp, zero=zero, ep=ep, microbatches=microbatches)
    if not _allowed(m, dp, tp, pp, zero, ep):
        with pytest.raises(OptionError):
            models.training_step(m.forward(batch=1, seq=64), **split)
        return
    step = models.training_step(m.forward(batch=1, seq=64), **split)
    system = sk.load_system("hgx-h200", nodes=math.ceil(dp * tp * pp / 8))
    seconds = float(sk.predict(step, system, warn=False).seconds)
    assert 0 < seconds < math.inf
    memory = m.memory(1, 64, training=True, **split)
    assert 0 < memory.total < math.inf and memory.weights > 0
    # the step is one GPU's share of dp x tp x pp: its MFU is the same per GPU or counted over its world
    assert step.recipe.world == dp * tp * pp
    assert sk.mfu(step, seconds, "h200", n_gpus=dp * tp * pp) == sk.mfu(step, seconds, "h200")


def test_search_over_a_dp_that_does_not_divide_the_parameters():
    """40 GPUs and GPT-2 (global batch 5): the dp=5 ZeRO candidates are evaluated (they crashed the search)."""
    found = planning.search_splits(GPT2, sk.load_system("hgx-h200", nodes=5), 5, 1024, checkpointing=False, top=100)
    assert {r.zero for r in found if r.dp == 5} >= {1, 2, 3}
    assert all(0 < r.seconds < math.inf and 0 < r.mfu < 1 for r in found)


@pytest.mark.parametrize("gpu", ["h200", "l40s"])
def test_mfu_of_a_step_wider_than_a_node(gpu):
    """16 GPUs (dp=2, tp=4, pp=2) named by a GPU alone: MFU = one GPU's FLOPs / (peak x seconds), its bound checked on
    two nodes of the GPU's usual system (h200), or without the collectives where that system has no network (l40s)."""
    step = models.training_step(GPT2.forward(batch=1, seq=64), dp=2, tp=4, pp=2)
    peak = sk.load_gpu(gpu).peak_flops("bf16", "matrix")
    assert sk.mfu(step, 0.03, gpu) == sk.mfu(step, 0.03, gpu, n_gpus=16) == pytest.approx(step.flops / (peak * 0.03))
    with pytest.raises(ImpossibleMeasurementError):
        sk.mfu(step, 1e-9, gpu, strict=True)  # 1 ns is below any step's T_SOL


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_a_dp_that_divides_every_buffer_pads_nothing(zero):
    """Llama-3-8B cut to 4 layers over dp=8: 8 divides its 218,112,000 parameters a layer and its root's 1,050,677,248
    (two 128,256 x 4,096 = 525,336,576 embeddings, untied, and a 4,096 norm), 1,923,125,248 in all. The step's gradient
    collectives carry exactly the gradients, 4 B each: 4 x 1,923,125,248 = 7,692,500,992 B (zero 1: all-reduces; 2:
    bucketed reduce-scatters; 3: FSDP's per-layer and root reduce-scatters), and the gathers their fp32 parameters with
    no padding: ZeRO once, 7,692,500,992 B; FSDP the layers twice (forward, backward) and the root once,
    2 x 4 x 872,448,000 + 4 x 1,050,677,248 = 11,182,292,992 B."""
    m = models.preset("llama3-8b").with_(layers=4)
    assert (m.layer_params, m.params) == (218_112_000, 4 * 218_112_000 + 1_050_677_248) and m.params % 8 == 0
    step = models.training_step(m.forward(batch=1, seq=128), dp=8, zero=zero)
    reduced = sum(k.link.nbytes * c for k, c in step.counted
                  if k.link is not None and k.link.collective in ("all_reduce", "reduce_scatter"))
    gathered = sum(k.link.nbytes * c for k, c in step.counted if k.link is not None and k.link.collective == "all_gather")
    assert reduced == pytest.approx(7_692_500_992, rel=1e-12)
    assert gathered == pytest.approx(11_182_292_992 if zero == 3 else 7_692_500_992, rel=1e-12)


def test_mfu_of_a_split_step_on_a_system():
    """A System is a GPU's place too: the same MFU as the GPU's (FLOPs / (989.4 TFLOP/s bf16 x 0.03 s), one GPU's share);
    a System too small for the step's 16 GPUs says so."""
    step = models.training_step(GPT2.forward(batch=1, seq=64), dp=2, tp=4, pp=2)
    two_nodes = sk.load_system("hgx-h200", nodes=2)
    assert sk.mfu(step, 0.03, two_nodes) == pytest.approx(step.flops / (989.4e12 * 0.03))  # H200 SXM dense bf16
    with pytest.raises(ShapeError, match="more GPUs than the system"):
        sk.mfu(step, 0.03, sk.load_system("hgx-h200"))


def test_search_splits_takes_a_systems_name_and_refuses_nothing_to_try():
    """'hgx-h200' is one node of that system (8 GPUs: dp x tp x pp = 8); an empty checkpointing list has nothing to try."""
    found = planning.search_splits(GPT2, "hgx-h200", 8, 1024, top=3)
    assert found and all(r.dp * r.tp * r.pp == 8 for r in found)
    with pytest.raises(OptionError, match="empty list"):
        planning.search_splits(GPT2, "hgx-h200", 8, 1024, checkpointing=[])
