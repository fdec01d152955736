"""Whole models: hand-counted FLOPs of a Llama-3-8B layer and model, ResNet-50 against its published count, training steps."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import solkit as sk
from solkit import models, ops
from solkit.errors import ArgumentTypeError, OptionError, ShapeError

T = 8192  # tokens: batch 1 x seq 8192


def test_llama3_8b_layer_flops():
    """GEMMs 2*T*d*(q + 2kv + q + 2*ffn + ffn) = 2*8192*4096*53248 = 3,573,412,790,272; causal attention 549,827,739,648."""
    w = models.decoder_layer(1, T, 4096, 32, kv_heads=8, head_dim=128, ffn=14336)
    gemm = 2 * T * 4096 * (6144 + 4096 + 2 * 14336 + 14336)  # qkv, o_proj, gate_up, down
    pairs = T * T - T * (T - 1) // 2  # 33,558,528
    attn = 4 * 32 * 128 * pairs  # 549,827,739,648
    assert w.matrix_flops == gemm + attn
    vector = 2 * 4 * T * 4096 + 2 * 1 * T * 4096 + 5 * T * 14336  # two rmsnorms, two residual adds, silu*up
    assert w.vector_flops == vector  # 966,787,072
    assert [k.name for k in w.kernels] == ["rmsnorm", "qkv", "flash attention", "o_proj", "add", "rmsnorm", "gate_up",
                                           "silu*up", "down", "add"]


def test_llama3_8b_model_matches_parameter_count():
    """Forward GEMM FLOPs per token = 2 x matmul parameters: 2 x (32 x 218,103,808 + 4096 x 128256) = 15,009,316,864."""
    w = models.preset("llama3-8b").forward(batch=1, seq=T, kernels="fused")
    per_layer = 4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336  # 218,103,808
    matmul_params = 32 * per_layer + 4096 * 128256  # 7,504,658,432
    attention = 32 * 4 * 32 * 128 * (T * T - T * (T - 1) // 2)
    assert (w.matrix_flops - attention) / T == 2 * matmul_params
    assert len(w.kernels) == 1 + 32 * 10 + 2  # embedding, 32 layers, final norm, lm head


def test_bert_base_is_post_norm_gelu_not_causal():
    """BERT-base preset: LayerNorm, GELU MLP, full attention: pairs = seq^2."""
    w = models.preset("bert-base").forward(batch=8, seq=512, kernels="fused")
    names = {k.name for k in w.kernels}
    assert {"layernorm", "gelu", "up", "down"} <= names
    attn = [k for k in w.kernels if k.kind == "attention"][0]
    assert attn.model_flops == 4 * 8 * 12 * 64 * 512 * 512  # 6,442,450,944 per layer


def test_resnet50_matches_published_count():
    """Conv + FC multiply-adds per 224x224 image: 4.089e9 (torchvision's ResNet50 table: 4.09 GFLOPS, i.e. GMACs)."""
    w = models.resnet50(1, kernels="fused")  # the fused program: the stem conv is its first kernel
    macs = sum(float(k.matrix_flops) for k in w.kernels if k.kind in ("conv", "gemm")) / 2
    assert macs == pytest.approx(4.09e9, rel=2e-3)
    stem = w.kernels[0]
    assert stem.matrix_flops == 2 * 64 * 112 * 112 * 3 * 49  # 236,027,904
    convs = [k for k in w.kernels if k.kind == "conv"]
    assert len(convs) == 1 + 16 * 3 + 4  # stem, 16 bottlenecks of 3 convs, 4 projections
    assert models.resnet50(32, kernels="fused").flops == pytest.approx(32 * w.flops)
    eager = models.resnet50(1)  # the default, torchvision's eager program: the same convolutions and FC
    assert sum(float(k.matrix_flops) * c for k, c in eager.counted if k.kind in ("conv", "gemm")) / 2 == \
        pytest.approx(macs, rel=1e-12)


def test_training_step_of_a_gemm():
    """C[m,n] = A[m,k] B[k,n]: dgrad (m,k,n), wgrad (k,n,m); model FLOPs 3 x 2*m*n*k."""
    m, n, k = 4096, 1024, 512
    step = models.training_step(ops.matmul(m, n, k), optimizer=None)
    assert [x.name for x in step.kernels] == ["matmul", "matmul dgrad", "matmul wgrad"]
    dgrad, wgrad = step.kernels[1].gemm, step.kernels[2].gemm
    assert (dgrad.m, dgrad.n, dgrad.k) == (m, k, n)
    assert (wgrad.m, wgrad.n, wgrad.k) == (k, n, m)
    assert step.flops == 3 * 2 * m * n * k  # 12,884,901,888
    assert step.kernels[1].bytes == (m * n + n * k + m * k) * 2  # dC, B, dA in bf16: 15,728,640


def test_training_step_attention_and_norm():
    """Flash backward executes 2.5x, counts 2x; a norm's backward reads inputs + dy and writes dx (and dgamma)."""
    fwd = ops.attention(1, 8, 1024)
    step = models.training_step(fwd, optimizer=None)
    back = step.kernels[1]
    assert back.matrix_flops == 2.5 * fwd.executed_flops
    assert back.model_flops == 2 * fwd.flops
    assert back.bytes == fwd.bytes_read + 2 * fwd.bytes_written + fwd.bytes_read  # Q,K,V,O,dO in; dQ,dK,dV out
    ln = ops.layernorm(8192, 4096)
    lb = models.training_step(ln, optimizer=None).kernels[1]
    # reads x, gamma, beta, dy: (2*T*d + 2*d)*2; writes dx, dgamma, dbeta: (T*d + 2*d)*2 -> 201,359,360
    assert lb.bytes == (2 * 8192 * 4096 + 2 * 4096) * 2 + (8192 * 4096 + 2 * 4096) * 2


def test_models_feed_the_rest_of_the_library():
    """A model step goes through roofline, predict and mfu like any workload."""
    # batch 4: at batch 1 the eager step's elementwise traffic (autograd's included) and AdamW's pass over the
    # fp32 states outweigh its GEMMs on an H100
    step = models.training_step(models.preset("llama3-8b").forward(batch=4, seq=4096))
    r = sk.roofline(step, "h100")
    assert r.bound == "compute"
    assert sk.predict(step, "h200").seconds > sk.roofline(step, "h200").t_sol
    assert 0 < sk.mfu(step, 2 * r.t_sol, "h100") <= 0.5 + 1e-12


def test_bad_model_arguments():
    """Unknown preset, unknown MLP, fused_norm with RMSNorm: errors naming the argument."""
    with pytest.raises(OptionError, match="preset name must be one of"):
        models.preset("gpt-5")
    with pytest.raises(OptionError, match="mlp must be one of 'swiglu', 'gelu'"):
        models.decoder_layer(1, 128, 768, 12, mlp="relu2")
    with pytest.raises(OptionError, match="fused_norm=True needs norm='layernorm'"):
        models.decoder_layer(1, 128, 768, 12, fused_norm=True)


@pytest.mark.parametrize("call, keyword", [
    (lambda: models.transformer(2, 1000, 1, 128, 512, 8, foo=1), "foo"),
    (lambda: models.preset("llama3-8b").forward(attn="flash"), "attn"),
    (lambda: models.decoder_layer(1, 128, 512, 8, ffm=2048), "ffm"),
    (lambda: models.resnet50(1, layouts="nhwc"), "layouts"),
    (lambda: models.training_step(ops.matmul(8, 8, 8), optimiser="adamw"), "optimiser"),
    (lambda: models.backward(ops.matmul(8, 8, 8), dp=2), "dp"),
    (lambda: ops.matmul(8, 8, 8, epiloge="gelu"), "epiloge"),
])
def test_unknown_keywords_are_argument_type_errors(call, keyword):
    """A misspelt keyword is an ArgumentTypeError (a TypeError) naming it and listing what the function takes."""
    with pytest.raises(ArgumentTypeError, match=f"unexpected keyword argument '{keyword}'; it takes: "):
        call()


def test_missing_and_repeated_arguments_are_argument_type_errors():
    """Python's own call errors become solkit's: a missing argument and one given twice are named."""
    with pytest.raises(ArgumentTypeError, match=r"transformer\(\): missing a required argument: 'heads'"):
        models.transformer(2, 1000, 1, 128, 512)
    with pytest.raises(ArgumentTypeError, match=r"matmul\(\): multiple values for argument 'm'"):
        ops.matmul(8, 8, 8, m=8)
    assert models.transformer.__name__ == "transformer" and "layers" in str(inspect.signature(models.transformer))


@pytest.mark.parametrize("layers, error, says", [
    ([1, 2], ArgumentTypeError, "layers must be one positive integer .* got a list of 2 values"),
    (np.array([1, 2]), ArgumentTypeError, "got an array of 2 values"),
    (True, ArgumentTypeError, "layers must be a number, got the bool True"),
    (0, ShapeError, "layers must be a positive integer, got 0"),
    (2.5, ShapeError, "layers must be a positive integer, got 2.5"),
    (10**16, ShapeError, "layers=10,000,000,000,000,000 is too many: count must keep the workload at most "
                         "9,007,199,254,740,992 launches"),
])
def test_layer_counts(layers, error, says):
    """layers is one integer in [1, 2**53 / kernels per layer]: 10 kernels x 10**16 layers = 1e17 launches > 2**53."""
    with pytest.raises(error, match=says):
        models.transformer(layers, 1000, 1, 128, 512, 8)


def test_layer_count_spellings_agree():
    """2, 2.0, np.int64(2) and a 0-d array are the same count: the same T_SOL."""
    t = [sk.roofline(models.transformer(n, 1000, 1, 128, 512, 8), "h200").t_sol
         for n in (2, 2.0, np.int64(2), np.array(2))]
    assert t[0] == t[1] == t[2] == t[3] and type(t[3]) is float


def test_model_arguments_must_broadcast():
    """Sweeps over batch (2,) and seq (3,) do not broadcast: a ShapeError naming both; (2, 1) and (3,) make (2, 3)."""
    with pytest.raises(ShapeError, match=r"do not broadcast together: batch \(2,\), seq \(3,\)"):
        models.transformer(2, 1000, [1, 2], [128, 256, 512], 512, 8)
    with pytest.raises(ShapeError, match=r"do not broadcast together: batch \(2,\), image \(3,\)"):
        models.resnet50([1, 2], image=[224, 112, 56])
    w = models.transformer(2, 1000, [[1], [2]], [128, 256, 512], 512, 8)
    assert w.shape == (2, 3)
    one = models.transformer(2, 1000, 2, 512, 512, 8)
    assert w.flops[1, 2] == one.flops  # batch 2, seq 512


def test_model_overflow_names_the_model_arguments():
    """A model whose figures leave float64 is refused naming its own arguments, not only an inner op's."""
    with pytest.raises(ShapeError, match=r"llama3-8b.forward\(batch=1, seq=1e\+300, context=0\) is too large for float64"):
        models.preset("llama3-8b").forward(seq=10**300)
    # 2 * 1 * 1e306 * 1000 = 2e309 > 1.8e308: refused before any op counts it
    with pytest.raises(ShapeError, match=r"2 \* batch \* seq \* vocab must stay below 1.8e308"):
        models.transformer(2, 1000, np.array([1.0, 1e306]), 1, 512, 8)
    with pytest.raises(ShapeError, match=r"batch \* image\*\*2 \* 2048 must stay below 1.8e308"):
        models.resnet50(10**306, kernels="fused")
    with pytest.raises(ShapeError, match=r"resnet50\(batch=1e\+306, image=224\) is too large for float64"):
        models.resnet50(10**306)  # the eager program: refused naming the model's arguments


def test_resnet50_refuses_options_its_program_does_not_model():
    """Eager (torchvision's) ResNet-50 always runs its BatchNorms: batchnorm=False is the fused program's (BN folded);
    amp (fp32 weights cast by autocast) is the eager program's. Each refusal names the option and the program."""
    with pytest.raises(OptionError, match="batchnorm=False .* kernels='fused'"):
        models.resnet50(8, batchnorm=False)
    with pytest.raises(OptionError, match="amp=True .* kernels='eager'"):
        models.resnet50(8, kernels="fused", amp=True)
    # the fused program without BatchNorm drops one BN+ReLU kernel per conv: 53 convs (stem, 16 x 3, 4 projections)
    assert len(models.resnet50(8, kernels="fused")) - len(models.resnet50(8, kernels="fused", batchnorm=False)) == 53
