"""Mixture-of-experts layers (``Transformer(experts=, top_k=, capacity_factor=)``) and expert parallelism (``ep``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import solkit as sk
from solkit import models
from solkit.errors import OptionError, SolkitError

CONFIGS = Path(__file__).resolve().parent / "data" / "hf_configs"


def _toy(**kw):
    # 2 layers, d 64, 4 heads, 8 experts of ffn 128 (SwiGLU), top-2, vocab 100, untied
    fields = dict(name="toy-moe", layers=2, d_model=64, heads=4, ffn=128, vocab=100, experts=8, top_k=2)
    return models.Transformer(**{**fields, **kw})


def test_moe_parameters_by_hand():
    """Per layer: attention 4 x 64**2 = 16,384; 8 experts x 3 x 64 x 128 = 196,608; router 64 x 8 = 512; 2 RMSNorms 128."""
    m = _toy()
    assert m.layer_params == 16_384 + 196_608 + 512 + 128  # 213,632
    # + embedding 100 x 64 = 6,400 + final norm 64 + LM head 100 x 64 = 6,400
    assert m.params == 2 * 213_632 + 6_400 + 64 + 6_400  # 440,128
    # active per token: attention + router + 2 of the 8 experts (2 x 24,576) = 16,384 + 512 + 49,152 = 66,048
    assert m.layer_active_weights == 66_048
    assert m.flops_per_token(seq=1) == pytest.approx(2 * (2 * 66_048 + 6_400) + 4 * 2 * 64 * 1)  # 277,504
    # tensors per layer: q, k, v, o, 8 x 3 expert matrices, the router, 2 norms = 31; + embedding, final norm, head
    assert m.param_tensors == 2 * 31 + 3


def test_mixtral_from_its_config_has_the_published_parameter_count():
    """Mixtral-8x7B: 46,702,792,704 parameters (keras-hub preset mixtral_8_7b_en; the Hub's safetensors total)."""
    m = models.from_hf_config(CONFIGS / "mixtral-8x7b.json")
    assert (m.experts, m.top_k) == (8, 2)
    assert m.params == 46_702_792_704 == models.preset("mixtral-8x7b").params
    # 32 layers x (attention 2 x 4096**2 + 2 x 4096 x 1024 = 41,943,040; 8 x 3 x 4096 x 14336 = 1,409,286,144;
    # router 32,768; norms 8,192) + embeddings and head 2 x 32000 x 4096 = 262,144,000 + final norm 4,096
    assert m.params == 32 * (41_943_040 + 1_409_286_144 + 32_768 + 8_192) + 262_144_000 + 4_096


def test_fused_moe_counts_grouped_gemms_on_the_routed_rows():
    """1,024 tokens, top-2 of 8: 2,048 routed rows, 256 per expert; gate_up 2 x 256 x 256 x 64 FLOPs per expert."""
    m = _toy()
    fwd = m.forward(batch=1, seq=1024, kernels="fused")
    gate_up = [k for k, _ in fwd.counted if k.name == "experts gate_up"][0]
    assert gate_up.gemm.batch == 8 and gate_up.gemm.m == 256  # 1,024 x 2 / 8 rows per expert
    assert gate_up.matrix_flops == 2 * 8 * 256 * 256 * 64  # [256, 64] @ [64, 2 x 128] per expert: 67,108,864
    down = [k for k, _ in fwd.counted if k.name == "experts down"][0]
    assert down.matrix_flops == 2 * 8 * 256 * 64 * 128
    padded = _toy(capacity_factor=1.5).forward(batch=1, seq=1024, kernels="fused")
    pk = [k for k, _ in padded.counted if k.name == "experts gate_up"][0]
    assert pk.gemm.m == 384 and pk.model_flops == pytest.approx(gate_up.model_flops)  # padded rows compute, not model
    assert models.training_step(fwd, optimizer=None).flops == pytest.approx(3 * m.forward(batch=1, seq=1024, kernels="fused",
                                                                                          training=True).flops)


def test_eager_moe_loops_over_the_experts():
    """Hugging Face's Mixtral block runs each expert on its own rows: 8 repeats of the expert's kernels per layer."""
    fwd = _toy().forward(batch=1, seq=1024)
    layer = [node for node, _ in fwd.parts if node.name == "layers"][0].parts[0][0]
    experts = [node for node, _ in layer.parts if getattr(node, "name", "") == "experts"]
    assert len(experts) == 1 and experts[0].parts[0][1] == 8
    # the same matrix FLOPs as the fused program; eager's extra elementwise kernels (RMSNorm's eight, rotary's ten,
    # the routing weight) add their vector FLOPs: within 1%
    assert fwd.matrix_flops == pytest.approx(_toy().forward(batch=1, seq=1024, kernels="fused").matrix_flops)
    assert fwd.flops == pytest.approx(_toy().forward(batch=1, seq=1024, kernels="fused").flops, rel=1e-2)


def test_expert_parallel_all_to_alls_by_hand():
    """ep=4: per layer 4 all-to-alls of 1,024 x 2 x 64 x 2 B = 262,144 B (dispatch and combine, forward and backward)."""
    m = _toy()
    step = models.training_step(m.forward(batch=1, seq=1024, kernels="fused"), dp=4, ep=4)
    a2a = [(k, c) for k, c in step.counted if k.name == "ep all-to-all"]
    assert sum(c for _, c in a2a) == 4 * 2 and a2a[0][0].link.nbytes == 1024 * 2 * 64 * 2
    assert a2a[0][0].link.n_gpus == 4
    # each GPU holds 2 of the 8 experts and runs 2,048 routed rows over them: 1,024 each
    gate_up = [k for k, _ in step.counted if k.name == "experts gate_up"][0]
    assert (gate_up.gemm.batch, gate_up.gemm.m) == (2, 1024)
    memory = m.memory(1, 1024, training=True, dp=4, ep=4)
    full = m.memory(1, 1024, training=True, dp=4)
    assert memory.optimizer_states < full.optimizer_states  # 2 of 8 experts' states


@pytest.mark.parametrize("model, kwargs, words", [
    (lambda: models.preset("llama3.2-1b"), {"dp": 2, "ep": 2}, "needs a mixture of experts"),
    (_toy, {"dp": 3, "ep": 3}, "must divide"),
    (_toy, {"dp": 2, "ep": 4}, "must divide dp"),
])
def test_bad_expert_splits_name_ep(model, kwargs, words):
    """ep needs experts it divides, inside a data-parallel group it divides."""
    with pytest.raises(OptionError, match=words):
        models.training_step(model().forward(batch=1, seq=64), **kwargs)


def test_moe_field_checks():
    """top_k at most the experts; a capacity factor only with experts."""
    with pytest.raises(SolkitError, match="top_k") as info:
        _toy(top_k=9)
    assert isinstance(info.value, ValueError)
    with pytest.raises(SolkitError, match="capacity_factor") as info:
        models.Transformer(layers=1, d_model=64, heads=4, vocab=10, capacity_factor=1.25)
    assert isinstance(info.value, ValueError)


def test_mixtral_step_predicts_with_expert_parallelism_faster_than_without():
    """One HGX H200 node: replicating 47B parameters' gradients costs more than the all-to-alls of ep=8."""
    m = models.preset("mixtral-8x7b")
    fwd = m.forward(batch=1, seq=4096, kernels="fused", impl="flash")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = sk.predict(models.training_step(fwd, dp=8), "h200").seconds
        sharded = sk.predict(models.training_step(fwd, dp=8, ep=8), "h200").seconds
    assert sharded < plain


def test_a_decode_step_touches_top_k_experts_one_row_each():
    """Mixtral decode at batch 1: 1 token x top-2 = 2 routed rows: 2 active experts of 1 row (not 8 of 0.25)."""
    m = models.preset("mixtral-8x7b")
    fused = m.decode(batch=1, context=1024, kernels="fused")
    gate_up = [k for k, _ in fused.counted if k.name == "experts gate_up"][0]
    assert (gate_up.gemm.batch, gate_up.gemm.m) == (2, 1)
    # 2 experts' gate and up weights read: 2 x 2 x 4096 x 14336 x 2 B per layer
    assert gate_up.bytes_read >= 2 * 2 * 4096 * 14336 * 2
    eager = m.decode(batch=3, context=1024)  # 3 x 2 = 6 rows over 6 hit experts
    layer = [node for node, _ in eager.parts if node.name == "layers"][0].parts[0][0]
    experts = [node for node, _ in layer.parts if getattr(node, "name", "") == "experts"][0]
    assert experts.parts[0][1] == 6


def test_expert_parallelism_keeps_every_tokens_top_k():
    """ep splits the experts, not the work: expert FLOPs and all-to-all bytes are the same at ep = 2, 4, 8.

    4,096 tokens x top-2 = 8,192 routed rows per GPU; the forward's gate_up 2 x 8,192 x 4,096 x 2 x 14,336 FLOPs per
    layer (1.924e12; x 32 layers = 6.157e13); the
    all-to-all moves 4,096 x 2 x 4,096 x 2 B = 67,108,864 B.
    """
    m = models.preset("mixtral-8x7b")
    fwd = m.forward(batch=1, seq=4096, kernels="fused", impl="flash")
    for ep in (1, 2, 4, 8):
        step = models.training_step(fwd, dp=8, ep=ep, optimizer=None)
        gate_up = sum(c * k.matrix_flops for k, c in step.counted if k.name == "experts gate_up")
        assert gate_up == pytest.approx(32 * 2 * 8_192 * 4_096 * 2 * 14_336), ep
        if ep > 1:
            a2a = [k for k, _ in step.counted if k.name == "ep all-to-all"][0]
            assert a2a.link.nbytes == 67_108_864
