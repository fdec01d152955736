"""models.Transformer: presets, parameter counts against published figures, closed forms, programs, memory."""

from __future__ import annotations

import math

import pytest

import solkit as sk
from solkit import models
from solkit.errors import ArgumentTypeError, NotModelledError, OptionalDependencyError, OptionError, ShapeError
from solkit.models.hf import closed_form


# ---- parameter counts (published figures; the hand sum in each comment) --------------------------------------


@pytest.mark.parametrize("name, published", [
    # openai-community/gpt2 (124M): wte 50257*768 = 38,597,376 + wpe 1024*768 = 786,432 + 12 x 7,087,872 (ln 1,536,
    # c_attn 768*2304+2304 = 1,771,776, c_proj 590,592, ln 1,536, c_fc 2,362,368, c_proj 2,360,064) + ln_f 1,536
    ("gpt2", 124_439_808),
    # BertForMaskedLM (bert-base-uncased): embeddings 23,837,184 + 12 x 7,087,872 + MLM head 590,592 + 1,536 + 30,522
    ("bert-base", 109_514_298),
    # Meta-Llama-3-8B (model card, safetensors): 2 x 128256*4096 + 32 x 218,112,000 + 4,096
    ("llama3-8b", 8_030_261_248),
    # Gemma report (Team Gemma 2024, Table 2): 786,432,000 embedding + 7,751,248,896 non-embedding
    ("gemma-7b", 8_537_680_896),
    # Qwen2.5-7B (safetensors metadata): 2 x 152064*3584 + 28 x 233,057,792 (q/k/v biases 4,608 included) + 3,584
    ("qwen2.5-7b", 7_615_616_512),
    # Llama 3.1 405B (safetensors metadata): 2 x 128256*16384 + 126 x 3,187,703,808 + 16,384
    ("llama3-405b", 405_853_388_800),
])
def test_preset_parameters_match_published_counts(name, published):
    """Every preset's params is exact against its published count."""
    assert models.preset(name).params == published


def test_bert_base_model_without_the_mlm_head():
    """BertModel (pooler, no MLM head): 109,514,298 - 622,650 (MLM head) + 590,592 (pooler) = 109,482,240."""
    bert = models.preset("bert-base").with_(head="none", tie_embeddings=False, pooler=True)
    assert bert.params == 109_482_240


def test_mistral_7b_v01_parameters():
    """Mistral 7B v0.1 (vocab 32000): 2 x 32000*4096 + 32 x 218,112,000 + 4,096 = 7,241,732,096 (Jiang et al. 2023)."""
    assert models.preset("mistral-7b").with_(vocab=32000).params == 7_241_732_096


def test_param_tensors_of_bert_and_gpt2():
    """The optimizer's list: BertForMaskedLM 5 + 12 x 16 + 5 = 202 tensors; GPT-2 2 + 12 x 12 + 2 = 148."""
    assert models.preset("bert-base").param_tensors == 202
    assert models.preset("gpt2").param_tensors == 148


# ---- closed forms ---------------------------------------------------------------------------------------------


def test_kv_cache_bytes_of_llama3_8b():
    """2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 bytes per token; 8192 tokens = 1 GiB."""
    m = models.preset("llama3-8b")
    assert m.kv_cache_bytes(1, 8192) == 1_073_741_824
    assert m.kv_cache_bytes(4, 8192, dtype="fp8") == 4 * 8192 * 65_536  # 2,147,483,648


def test_flops_per_token_of_llama3_8b():
    """2 x (32 x 218,103,808 + 128256*4096) = 15,009,316,864, plus 4 x 32 x 4096 x (8192 + 1)/2 = 2,147,745,792 causal."""
    m = models.preset("llama3-8b")
    linear = 32 * (4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 14336) + 128256 * 4096  # 7,504,658,432
    assert m.linear_weights == linear
    assert m.flops_per_token(seq=8192) == 2 * linear + 4 * 32 * 4096 * 8193 / 2  # 17,157,062,656
    assert m.flops_per_token(seq=8192, attention="full") == 2 * linear + 4 * 32 * 4096 * 8192  # 19,304,284,160
    assert m.flops_per_token(training=True, seq=8192) == 3 * 17_157_062_656


def test_palm_540b_mfu_from_appendix_b():
    """PaLM appendix B: 6N + 12LHQT per token, 238.3K tokens/s on 6144 TPU v4 chips of 275 TFLOP/s (bf16) = 46.2% MFU."""
    # PaLM 540B (Chowdhery et al. 2022, Table 1): 118 layers, d 18432, 48 heads of 256, multi-query (1 KV head),
    # SwiGLU ffn 4 x 18432 = 73728, vocab 256k, tied, parallel layers
    palm = models.Transformer(name="palm-540b", layers=118, d_model=18432, heads=48, kv_heads=1, head_dim=256,
                              ffn=73728, vocab=256000, tie_embeddings=True)
    assert palm.linear_weights / 1e9 == pytest.approx(540.35, abs=0.1)  # "540.35B parameters" (Table 1)
    per_token = palm.flops_per_token(training=True, seq=2048, attention="full")
    # N = 118 x 4,539,285,504 + 256000*18432 = 540,354,281,472
    # 6 x 540,354,281,472 + 12 x 118 x 48 x 256 x 2048 = 3.2420e12 + 3.5635e10 = 3.2777e12
    assert per_token == 6 * palm.linear_weights + 12 * 118 * 48 * 256 * 2048
    mfu = 238.3e3 * per_token / (6144 * 275e12)  # TPU v4: 275 TFLOP/s bf16 (Jouppi et al. 2023)
    assert mfu == pytest.approx(0.462, abs=0.0015)


def test_forward_matrix_flops_equal_the_closed_form():
    """Fused BERT-base forward (not causal, so executed = model): matrix FLOPs = flops_per_token x T = (2 N + 4 L q s) x b s."""
    bert = models.preset("bert-base")
    b, s = 8, 512
    w = bert.forward(batch=b, seq=s, kernels="fused")
    matrix = w.matrix_flops  # the bias adds are vector FLOPs
    # N = 12 x 7,077,888 + 768*768 + 30522*768 = 108,965,376; 2N + 4 x 12 x 768 x 512 = 236,805,120 per token
    assert bert.linear_weights == 12 * (4 * 768 * 768 + 2 * 768 * 3072) + 768 * 768 + 30522 * 768 == 108_965_376
    assert bert.flops_per_token(seq=s) == 236_805_120
    assert matrix == pytest.approx(bert.flops_per_token(seq=s) * b * s, rel=1e-12)


# ---- programs -------------------------------------------------------------------------------------------------


def test_eager_llama_prefill_launches_match_the_h200_profile():
    """4 Llama-3-8B layers, prefill of 2048 tokens: 12 rotary-table kernels + gather + 4 x 44 + final norm 8 +
    lm_head = 182 launches, the kernel count of data/profiles/llama_prefill.json.gz (transformers 5.17, eager)."""
    import json
    from pathlib import Path

    w = models.preset("llama3-8b").with_(layers=4).prefill(batch=1, seq=2048)
    # per layer: rmsnorm 8, q/k/v 3, rotary 2 x 5, cache cat 2, attention 1, o_proj 1, add 1, rmsnorm 8, gate, up,
    # silu, mul, down 5, add 1 = 40 (the profile's layers show the same 40)
    assert len(w) == 1 + 12 + 4 * 40 + 8 + 1
    manifest = json.loads((Path(__file__).parents[1] / "data" / "profiles" / "manifest.json").read_text())
    assert manifest["programs"]["llama_prefill"]["kernel_events"] == len(w)


def test_prefill_computes_the_last_tokens_logits_only():
    """prefill(b, s): lm_head is [b, d] @ [d, vocab]; forward(b, s): [b*s, d] @ [d, vocab]."""
    m = models.preset("llama3-8b")
    head = [k for k in m.prefill(batch=4, seq=1024, kernels="fused").kernels if k.name == "lm_head"][0]
    assert (head.gemm.m, head.gemm.n, head.gemm.k) == (4, 128256, 4096)
    head = [k for k in m.forward(batch=4, seq=1024, kernels="fused").kernels if k.name == "lm_head"][0]
    assert head.gemm.m == 4 * 1024


def test_decode_reads_the_cache_and_eager_appends_by_concatenation():
    """decode(b=8, context=4096): attention reads K, V of 4097 tokens; HF's DynamicCache cat moves the whole cache."""
    m = models.preset("llama3-8b")
    fused = m.decode(batch=8, context=4096, kernels="fused")
    attn = [k for k in fused.kernels if k.kind == "attention"][0]
    # Q, O [8, 32, 1, 128] and K, V [8, 8, 4097, 128], bf16: (2*8*32*128 + 2*8*8*4097*128)*2 = 134,381,568 bytes
    assert attn.bytes == (2 * 8 * 32 * 128 + 2 * 8 * 8 * 4097 * 128) * 2
    write = [k for k in fused.kernels if k.name == "kv cache write"][0]
    assert write.bytes_written == 2 * 8 * 1024 * 2  # the new token's K and V: 32,768 bytes per layer
    cat = [k for k in m.decode(batch=8, context=4096).kernels if k.name == "kv cache cat (k)"][0]
    assert cat.bytes == 2 * 8 * 4097 * 1024 * 2  # read and written: 134,250,496 bytes per layer


def test_amp_casts_every_weight_once_per_forward():
    """Eager AMP forward of GPT-2: the casts of fp32 weights sum to the linear weights and biases (fp32 -> bf16)."""
    gpt2 = models.preset("gpt2")
    w = gpt2.forward(batch=2, seq=128, amp=True)
    weight_casts = sum(k.bytes_read / 4 * n for k, n in w.counted if k.name == "cast fp32->bf16"
                       and k.bytes_read / 4 in _weight_sizes(gpt2))
    # per layer: c_attn 768*2304 + 2304, c_proj 768*768 + 768, c_fc 768*3072 + 3072, c_proj 3072*768 + 768; lm_head 50257*768
    per_layer = 768 * 2304 + 2304 + 768 * 768 + 768 + 768 * 3072 + 3072 + 3072 * 768 + 768
    assert weight_casts == 12 * per_layer + 50257 * 768


def _weight_sizes(m):
    d, f = m.d_model, m.ffn_width
    return {d * 3 * d, 3 * d, d * d, d, d * f, f, m.vocab * d}


def test_sliding_window_refuses_longer_sequences():
    """A config's sliding_window is honoured by refusing sequences beyond it (windowed attention is not modelled)."""
    m = models.preset("mistral-7b").with_(sliding_window=4096)
    assert len(m.forward(batch=1, seq=4096)) > 0
    with pytest.raises(OptionError, match="sliding_window=4096"):
        m.forward(batch=1, seq=8192)


def test_encoders_have_no_decode():
    """BERT is not causal: prefill and decode are refused naming forward."""
    with pytest.raises(OptionError, match="not causal"):
        models.preset("bert-base").decode(batch=1, context=128)


def test_learned_positions_bound_the_sequence():
    """GPT-2 has 1024 positions: seq 2048 is a ShapeError naming them."""
    with pytest.raises(ShapeError, match="1024 learned positions"):
        models.preset("gpt2").forward(batch=1, seq=2048)


# ---- presets and validation -----------------------------------------------------------------------------------


def test_old_preset_call_shows_the_new_one():
    """preset(name, batch=, seq=) (the 0.1 call) is an ArgumentTypeError (a call mistake: keywords preset does not take)
    spelling preset(name).forward(batch=, seq=)."""
    with pytest.raises(ArgumentTypeError, match=r"preset\('llama3-8b'\).forward\(batch=1, seq=8192\)"):
        models.preset("llama3-8b", batch=1, seq=8192)


def test_presets_cover_the_published_models():
    """The issue's list of presets is there, each a Transformer with a source."""
    names = set(models.preset_names())
    assert {"gpt2", "gpt3-175b", "bert-base", "bert-large", "llama3-8b", "llama3-70b", "llama3-405b", "mistral-7b",
            "qwen2.5-7b"} <= names
    assert all(models.PRESETS[n].source for n in names)


@pytest.mark.parametrize("fields, error, says", [
    (dict(layers=0), OptionError, "layers"),
    (dict(heads=32, kv_heads=5), OptionError, "kv_heads must divide heads"),
    (dict(norm="batchnorm"), OptionError, "norm"),
    (dict(ffm=3), ArgumentTypeError, "no field 'ffm'"),
    (dict(positions="learned"), OptionError, "max_positions"),
])
def test_transformer_validation(fields, error, says):
    """A bad architecture is a solkit error naming the field."""
    base = dict(layers=2, d_model=512, heads=8, vocab=1000)
    with pytest.raises(error, match=says):
        models.Transformer(**{**base, **fields})


def test_transformer_is_immutable_and_with_validates():
    """Frozen: assignment refused; with_() builds a validated copy."""
    m = models.preset("gpt2")
    with pytest.raises(Exception):
        m.layers = 3
    assert m.with_(layers=24).params - m.params == 12 * 7_087_872
    with pytest.raises(ArgumentTypeError, match="no field 'depth'"):
        m.with_(depth=3)


# ---- memory ---------------------------------------------------------------------------------------------------


def test_training_memory_of_bert_base_by_hand():
    """AMP + AdamW: fp32 weights 4P and their bf16 copies 2 x linear weights, fp32 gradients 4P, moments 8P."""
    bert = models.preset("bert-base")
    mem = bert.memory(batch=8, seq=512, training=True)
    p = 109_514_298
    assert mem.weights == 4 * p + 2 * bert.linear_weights  # 438,057,192 + 217,930,752
    assert mem.gradients == 4 * p
    assert mem.optimizer_states == 8 * p
    assert mem.kv_cache == 0
    assert mem.total == mem.weights + mem.gradients + mem.optimizer_states + mem.activations
    sgd = bert.memory(batch=8, seq=512, training=True, optimizer="sgd")
    assert sgd.optimizer_states == 4 * p


def test_inference_memory_and_the_largest_batch():
    """Llama-3-8B serving 8192 tokens: bf16 weights 2P, KV cache 1 GiB per sequence; max_batch from the affine total."""
    m = models.preset("llama3-8b")
    mem = m.memory(batch=1, seq=8192, gpu="h200")
    assert mem.weights == 2 * 8_030_261_248
    assert mem.kv_cache == 1_073_741_824
    one, two = mem.total, m.memory(batch=2, seq=8192).total
    capacity = sk.load_gpu("h200").memory_capacity  # 141 GB (datasheet)
    assert mem.max_batch == math.floor((capacity - (2 * one - two)) / (two - one))
    assert mem.fits and m.memory(batch=mem.max_batch + 1, seq=8192, gpu="h200").fits is False


def test_checkpointing_keeps_each_layers_input():
    """Activation checkpointing: layers x (T x d x 4 bytes, the fp32 stream) + one layer's set, less than all layers'."""
    m = models.preset("llama3.2-1b")
    full = m.memory(batch=2, seq=2048, training=True)
    ckpt = m.memory(batch=2, seq=2048, training=True, checkpointing=True)
    assert ckpt.activations < full.activations
    assert ckpt.weights == full.weights and ckpt.optimizer_states == full.optimizer_states


# ---- Hugging Face configs (tests/data/hf_configs: the Hub's config.json files; SOURCES.md says where each came from)

HF = __import__("pathlib").Path(__file__).parent / "data" / "hf_configs"


@pytest.mark.parametrize("file, published", [
    ("gpt2.json", 124_439_808),  # KerasHub preset metadata; Radford et al. 2019 (124M)
    ("bert-base-uncased.json", 109_514_298),  # BertForMaskedLM (the file's architectures)
    ("bert-large-uncased.json", 335_174_458),  # BertForMaskedLM, bert-large
    ("llama3-8b.json", 8_030_261_248),  # Meta-Llama-3-8B model card
    ("llama3-70b.json", 70_553_706_496),  # Hub API total (Llama-3.1-70B, same shapes)
    ("llama3.1-405b.json", 405_853_388_800),  # Hub API total
    ("llama3.2-1b.json", 1_235_814_400),  # tied: the head counts once
    ("mistral-7b.json", 7_241_732_096),  # v0.1, KerasHub metadata
    ("mistral-7b-v0.3.json", 7_248_023_552),  # v0.3 (vocab 32768)
    ("qwen2.5-7b.json", 7_615_616_512),  # Hub API total (q/k/v biases implied by the architecture)
    ("gemma-7b.json", 8_537_680_896),  # Gemma report Table 2 (tied by default: the file has no tie key)
    ("gemma-2b.json", 2_506_172_416),  # KerasHub metadata (one KV head, head_dim 256)
])
def test_hf_configs_give_the_published_parameter_counts(file, published):
    """from_hf_config(path) of each family's real config.json: params exact."""
    assert models.from_hf_config(HF / file).params == published


@pytest.mark.parametrize("preset, file", [
    ("gpt2", "gpt2.json"), ("bert-base", "bert-base-uncased.json"), ("llama3-8b", "llama3-8b.json"),
    ("llama3-70b", "llama3-70b.json"), ("llama3-405b", "llama3.1-405b.json"), ("qwen2.5-7b", "qwen2.5-7b.json"),
    ("mistral-7b", "mistral-7b-v0.3.json"), ("gemma-7b", "gemma-7b.json"), ("llama3.2-1b", "llama3.2-1b.json"),
])
def test_presets_agree_with_their_configs(preset, file):
    """Each preset is what its Hugging Face config says, field by field."""
    ignore = {"name", "source"}
    assert (models.preset(preset).model_dump(exclude=ignore)
            == models.from_hf_config(HF / file).model_dump(exclude=ignore))


def test_hf_config_heads_follow_architectures():
    """BertModel: pooler and no head; LlamaModel: no head; a folder holding config.json loads too."""
    import json

    bert = json.loads((HF / "bert-base-uncased.json").read_text())
    assert models.from_hf_config({**bert, "architectures": ["BertModel"]}).params == 109_482_240
    llama = json.loads((HF / "llama3-8b.json").read_text())
    bare = models.from_hf_config({**llama, "architectures": ["LlamaModel"]})
    assert bare.head == "none" and bare.params == 8_030_261_248 - 128256 * 4096


def test_hf_config_from_a_folder(tmp_path):
    """A folder holding config.json is read like the file."""
    (tmp_path / "config.json").write_text((HF / "gpt2.json").read_text())
    assert models.from_hf_config(tmp_path).params == 124_439_808


@pytest.mark.parametrize("change, error, says", [
    ({"model_type": "t5"}, NotModelledError, "model_type must be one of"),
    ({"num_local_experts": 8}, NotModelledError, "'num_local_experts'=8 is not modelled"),
    ({"architectures": ["LlamaForSequenceClassification"]}, NotModelledError, "LlamaForSequenceClassification"),
    ({"hidden_act": "relu"}, NotModelledError, "'hidden_act'='relu'"),
    ({"attention_bias": True}, NotModelledError, "'attention_bias'=True"),
    ({"layer_types": ["sliding_attention", "full_attention"]}, NotModelledError, "'layer_types'"),
    ({"hidden_size": None}, OptionError, "needs the key 'hidden_size'"),
])
def test_hf_config_errors_name_the_key(change, error, says):
    """The closed form refuses by name a key it cannot honour (NotModelledError, an OptionError: from_hf_config then
    captures the model) and a missing value (a plain OptionError)."""
    import json

    llama = json.loads((HF / "llama3-8b.json").read_text())
    with pytest.raises(error, match=says):
        closed_form({**llama, **change})


def test_a_config_of_full_attention_layers_is_the_closed_form():
    """Recent transformers save layer_types with every layer 'full_attention': the closed form models that (Qwen2)."""
    import json

    qwen = json.loads((HF / "qwen2.5-7b.json").read_text())
    plain = models.from_hf_config(qwen)
    typed = models.from_hf_config({**qwen, "layer_types": ["full_attention"] * qwen["num_hidden_layers"]})
    assert isinstance(typed, models.Transformer) and typed.params == plain.params


def test_a_config_without_a_closed_form_needs_capture(monkeypatch):
    """Without torch, a config the closed form refuses says why and what to install, naming the refused key."""
    import json
    import sys

    llama = json.loads((HF / "llama3-8b.json").read_text())
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails
    with pytest.raises(OptionalDependencyError, match=r"'num_local_experts'=8 is not modelled.*needs torch"):
        models.from_hf_config({**llama, "num_local_experts": 8})


def test_hf_config_bad_inputs(tmp_path):
    """A missing path, a non-JSON file and a non-dict are clear errors."""
    with pytest.raises(OptionError, match="does not exist"):
        models.from_hf_config(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(OptionError, match="not valid JSON"):
        models.from_hf_config(tmp_path / "bad.json")
    with pytest.raises(ArgumentTypeError, match="config must be a dict"):
        models.from_hf_config(42)
