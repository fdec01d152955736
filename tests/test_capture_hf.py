"""Hugging Face configs captured from transformers' own modeling code: parameters by hand for real config.json files,
FLOPs against torch's FlopCounterMode and against solkit's closed form, steps, decode, MoE, errors."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="capture needs PyTorch (pip install torch==2.13.0, the CPU build)")
transformers = pytest.importorskip("transformers", reason="capturing a config needs transformers")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from solkit import models, ops  # noqa: E402
from solkit.capture import hf_model  # noqa: E402
from solkit.errors import OptionError, ShapeError  # noqa: E402

CONFIGS = Path(__file__).resolve().parent / "data" / "hf_configs"
#: a small decoder of each family (the same modeling code as the real sizes, fast to run)
SMALL = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             head_dim=32, vocab_size=512)


def _gemm(w) -> float:
    """Matrix FLOPs of the GEMM kernels."""
    return sum(float(k.matrix_flops) * n for k, n in w.counted if k.kind == "gemm")


def _attention(w) -> float:
    """Model FLOPs of the fused attention kernels."""
    return sum(float(k.model_flops) * n for k, n in w.counted if k.kind == "attention")


# ---- parameters: transformers' count of each real config, checked by hand ------------------------------------


def _qwen3(V, d, L, h, kv, hd, f):
    """Embedding, per layer q/k/v/o + q_norm, k_norm (head_dim each) + 2 norms + gate/up/down, final norm, untied head."""
    return V * d + L * (d * h * hd + 2 * d * kv * hd + h * hd * d + 2 * hd + 2 * d + 3 * d * f) + d + V * d


def _qwen3_moe(V, d, L, h, kv, hd, E, f):
    """Qwen3's attention, and per layer a router (d x E) and E experts of gate/up/down (3 * d * f each)."""
    return V * d + L * (d * h * hd + 2 * d * kv * hd + h * hd * d + 2 * hd + 2 * d + d * E + E * 3 * d * f) + d + V * d


def _deepseek_v3(V, d, L, dense, h, q_lora, kv_lora, nope, rope, v, f_dense, E, f, shared):
    """MLA (q_a, its norm, q_b, kv_a with the rope key, its norm, kv_b, o), 2 norms a layer; ``dense`` dense MLPs then
    MoE layers (router E x d, E experts and ``shared`` shared experts of 3 * d * f); final norm, untied head."""
    mla = (d * q_lora + q_lora + q_lora * h * (nope + rope) + d * (kv_lora + rope) + kv_lora
           + kv_lora * h * (nope + v) + h * v * d)
    moe = E * d + E * 3 * d * f + 3 * d * f * shared
    return V * d + L * (mla + 2 * d) + dense * 3 * d * f_dense + (L - dense) * moe + d + V * d


def _gpt_oss(V, d, L, h, kv, hd, E, f):
    """q/k/v/o with biases, a sink per head, 2 norms; a router with bias, E experts' gate_up [d, 2f] and down [f, d]
    with biases; final norm, untied head."""
    attention = d * h * hd + h * hd + 2 * (d * kv * hd + kv * hd) + h * hd * d + d + h
    moe = E * d + E + E * (d * 2 * f + 2 * f) + E * (f * d + d)
    return V * d + L * (attention + 2 * d + moe) + d + V * d


def _gemma(V, d, L, h, kv, hd, f, qk_norm):
    """q/k/v/o, (Gemma-3: q_norm, k_norm), 4 norms a layer (before and after attention and MLP), gate/up/down; final
    norm; the head tied to the embedding."""
    return V * d + L * (d * h * hd + 2 * d * kv * hd + h * hd * d + (2 * hd if qk_norm else 0) + 4 * d + 3 * d * f) + d


def _phi3(V, d, L, h, kv, f):
    """Fused qkv_proj (d x (h + 2 kv) * head_dim), o, fused gate_up (d x 2f), down, 2 norms; final norm, untied head."""
    hd = d // h
    return V * d + L * (d * (h + 2 * kv) * hd + h * hd * d + d * 2 * f + f * d + 2 * d) + d + V * d


def _olmo2(V, d, L, h, kv, hd, f):
    """q/k/v/o, q_norm over all query heads, k_norm over the key heads, norms after attention and MLP; untied head."""
    return V * d + L * (d * h * hd + 2 * d * kv * hd + h * hd * d + h * hd + kv * hd + 2 * d + 3 * d * f) + d + V * d


PARAMS = [
    ("qwen3-8b.json", _qwen3(151936, 4096, 36, 32, 8, 128, 12288)),  # 8,190,735,360 (Qwen: "8.2B")
    ("qwen3-30b-a3b.json", _qwen3_moe(151936, 2048, 48, 32, 4, 128, 128, 768)),  # 30,532,122,624 ("30.5B")
    ("deepseek-v3.json", _deepseek_v3(129280, 7168, 61, 3, 128, 1536, 512, 128, 64, 128, 18432, 256, 2048, 1)),
    # 671,026,404,352 ("671B")
    ("gpt-oss-20b.json", _gpt_oss(201088, 2880, 24, 64, 8, 64, 32, 2880)),  # 20,914,757,184 ("21B")
    ("gemma-2-9b-it.json", _gemma(256000, 3584, 42, 16, 8, 256, 14336, False)),  # 9,241,705,984 ("9B")
    ("gemma-3-4b-it.json", _gemma(262208, 2560, 34, 8, 4, 256, 10240, True)),  # 3,880,263,168 (its language model)
    ("phi-3-mini-4k-instruct.json", _phi3(32064, 3072, 32, 32, 32, 8192)),  # 3,821,079,552 ("3.8B")
    ("phi-4.json", _phi3(100352, 5120, 40, 40, 10, 17920)),  # 14,659,507,200 ("14B")
    ("olmo-2-1124-7b.json", _olmo2(100352, 4096, 32, 32, 32, 128, 11008)),  # 7,298,617,344 ("7B")
]


@pytest.mark.parametrize("name, expected", PARAMS, ids=[p[0] for p in PARAMS])
def test_params_of_real_configs_by_hand(name, expected):
    """hf_model(config.json).params (transformers' instantiated model, on meta) equals the family's count by hand."""
    assert hf_model(CONFIGS / name).params == expected


#: (file, the published parameter count of SOURCES.md)
PUBLISHED = [("llama3.1-405b.json", 405_853_388_800), ("mixtral-8x7b.json", 46_702_792_704),
             ("qwen2.5-7b.json", 7_615_616_512), ("mistral-7b.json", 7_241_732_096)]


@pytest.mark.parametrize("name, published", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_params_of_closed_form_families_match_published_and_the_closed_form(name, published):
    """For families solkit has a closed form of, capture and the closed form both give the published count."""
    assert hf_model(CONFIGS / name).params == models.from_hf_config(CONFIGS / name).params == published


def test_a_multimodal_config_counts_its_language_model_and_says_so():
    """Gemma-3 4B (text_config and vision_config): the language model is built and counted, and the result says so."""
    m = hf_model(CONFIGS / "gemma-3-4b-it.json")
    assert m.config.model_type == "gemma3_text" and m.source == "captured"
    assert any("multimodal" in note and "language model" in note for note in m.notes)


def test_a_quantization_config_is_dropped_and_said():
    """gpt-oss ships mxfp4 weights: the config's quantization_config is dropped (weights in the program's dtype)."""
    m = hf_model(CONFIGS / "gpt-oss-20b.json")
    assert any("quantization_config" in note for note in m.notes)


# ---- FLOPs: FlopCounterMode on the same meta run --------------------------------------------------------------


def _flop_counter(m, dtype, train):
    """torch's FlopCounterMode over the model's meta run (the packed-sequence check, which reads a value a meta tensor
    has not, skipped: it computes no FLOPs and finds positions 0..s-1 unpacked)."""
    module = m.module.to(dtype)
    module.train(train)
    ids = torch.zeros(2, 64, dtype=torch.long, device="meta")
    with mock.patch("transformers.masking_utils.find_packed_sequence_indices", lambda positions: None):
        with FlopCounterMode(display=False) as fc:
            out = module(input_ids=ids, labels=ids if train else None, use_cache=False)
            if train:
                out.loss.backward()
    return {str(k): v for k, v in fc.get_flop_counts()["Global"].items()}


@pytest.mark.parametrize("model_type", ["qwen3", "llama"])
def test_forward_flops_equal_flop_counter_modulo_causal_attention(model_type):
    """A bf16 forward of batch 2 x 64 tokens: FlopCounterMode's mm FLOPs equal the captured GEMMs' exactly; its
    attention (bmm on the meta device's math path) counts every (query, key) pair, 4*b*h*s*s*d per layer, where solkit
    counts the unmasked ones, 4*b*h*d*s(s+1)/2. (Its documented conventions: GEMM-like ops only, 2 FLOPs a
    multiply-add, no bias adds, attention not causal.)"""
    m = hf_model({"model_type": model_type, **SMALL})
    counts = _flop_counter(m, torch.bfloat16, False)
    w = m.forward(batch=2, seq=64)
    b, h, s, d, layers = 2, 4, 64, 32, 2
    assert _gemm(w) == counts["aten.mm"]
    assert counts["aten.bmm"] == 4 * b * h * s * s * d * layers  # 8,388,608
    assert _attention(w) == 4 * b * h * d * (s * (s + 1) // 2) * layers  # 4,259,840


def test_training_flops_equal_flop_counter_modulo_causal_attention():
    """A bf16 training step (no optimizer): GEMM FLOPs of forward and backward equal FlopCounterMode's mm; attention
    is 3x the forward's (its backward 2x) in both, every pair there, the unmasked ones here."""
    m = hf_model({"model_type": "qwen3", **SMALL})
    counts = _flop_counter(m, torch.bfloat16, True)
    w = m.training_step(batch=2, seq=64, amp=False, optimizer=None)
    b, h, s, d, layers = 2, 4, 64, 32, 2
    assert _gemm(w) == counts["aten.mm"]
    assert counts["aten.bmm"] == 3 * 4 * b * h * s * s * d * layers  # 25,165,824
    assert _attention(w) == 3 * 4 * b * h * d * (s * (s + 1) // 2) * layers  # 12,779,520


def test_moe_expert_flops_by_hand_where_flop_counter_has_none():
    """A small Mixtral (4 experts, top 2) bf16 forward of 2 x 64 tokens: the experts' grouped GEMMs count
    2 * (T*k) * d * 2f (gate and up) + 2 * (T*k) * f * d (down) a layer, balanced over the experts; FlopCounterMode has
    no formula for _grouped_mm (torch 2.13), so its mm FLOPs are the captured GEMMs without the experts'."""
    m = hf_model({"model_type": "mixtral", **SMALL, "num_local_experts": 4, "num_experts_per_tok": 2})
    counts = _flop_counter(m, torch.bfloat16, False)
    w = m.forward(batch=2, seq=64)
    t, k, d, f, layers = 2 * 64, 2, 128, 256, 2
    experts = layers * (2 * t * k * d * 2 * f + 2 * t * k * f * d)  # 2 * (16,777,216 + 8,388,608) = 50,331,648
    assert _gemm(w) - counts["aten.mm"] == experts
    assert any("balanced top-k" in note for note in w.recipe.notes)


# ---- capture as the oracle of the closed form ----------------------------------------------------------------

LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "tie_word_embeddings": False,
         "architectures": ["LlamaForCausalLM"]}


@pytest.mark.parametrize("phase", ["forward", "prefill", "decode", "step"])
def test_captured_llama_agrees_with_the_closed_form(phase):
    """A small Llama captured and in closed form: GEMM and attention FLOPs identical; kernels within 8% and bytes within
    4%. Where they differ (forward of 2 x 64: 105 kernels captured, 98 closed): the capture adds transformers'
    packed-sequence check of a forward without a cache (4 kernels and a host read), the rotary table's casts and
    concatenations as transformers runs them, and counts each residual add by its ATen op."""
    closed, captured = models.from_hf_config(LLAMA), hf_model(LLAMA)
    if phase == "decode":
        a, b = closed.decode(batch=2, context=64), captured.decode(batch=2, context=64)
    elif phase == "step":
        a, b = models.training_step(closed.forward(batch=2, seq=64)), captured.training_step(batch=2, seq=64)
    else:
        a, b = getattr(closed, phase)(batch=2, seq=64), getattr(captured, phase)(batch=2, seq=64)
    assert _gemm(a) == _gemm(b) and _attention(a) == _attention(b)
    assert abs(len(b) / len(a) - 1) <= 0.08 and abs(float(b.bytes) / float(a.bytes) - 1) <= 0.04


# ---- programs ---------------------------------------------------------------------------------------------------


def test_a_captured_forward_is_input_to_training_step():
    """models.training_step(m.forward(...)) is the captured step at the same shape (AdamW fused by default)."""
    m = hf_model({"model_type": "qwen3", **SMALL})
    via = models.training_step(m.forward(batch=2, seq=32))
    direct = m.training_step(batch=2, seq=32)
    assert len(via) == len(direct) and via.flops == direct.flops and via.recipe.training
    assert any(k.name.startswith("_fused_adamw_") for k, _ in via.counted)


def _matrix_model(w) -> float:
    """Model FLOPs of the GEMM and attention kernels."""
    return sum(float(k.model_flops) * n for k, n in w.counted if k.kind in ("gemm", "attention"))


def test_checkpointing_recomputes_without_model_flops():
    """With activation checkpointing (under AMP) the GEMMs' and attention's model FLOPs are unchanged, the recomputed
    forward adds executed FLOPs: each layer's GEMMs again up to the last one whose output the backward saves (torch's
    non-reentrant checkpoint stops its recompute early): q, k, v, o, gate and up, not down."""
    m = hf_model({"model_type": "llama", **SMALL})
    plain = m.training_step(batch=2, seq=32, optimizer=None)
    again = m.training_step(batch=2, seq=32, optimizer=None, checkpointing=True)
    assert _matrix_model(again) == _matrix_model(plain)
    tokens, d, q, kv, f, layers = 2 * 32, 128, 4 * 32, 2 * 32, 256, 2
    recomputed = layers * 2 * tokens * (d * q + 2 * d * kv + q * d + 2 * d * f)  # 2 * 2 * 64 * 114,688 = 29,360,128
    assert _gemm(again) - _gemm(plain) == recomputed


def test_decode_attends_over_the_cache():
    """One decode step against a cache of 64 tokens: each layer's attention has one query over 65 keys."""
    m = hf_model({"model_type": "qwen3", **SMALL})
    w = m.decode(batch=2, context=64)
    attention = [k for k, _ in w.counted if k.kind == "attention"]
    expected = ops.attention(2, 4, 1, 65, 32, kv_heads=2, causal=False, impl="sdpa", dtype="bf16")
    assert attention and all(k.model_flops == expected.flops for k in attention)  # 4*2*4*32*65 = 133,120
    assert w.recipe.preamble and not w.recipe.training


def test_amp_moe_step_runs_the_grouped_gemm_fallback_with_stalls():
    """Under AMP (fp32 weights) a MoE's grouped GEMMs run ATen's fallback: a host read of the group offsets (a stall)
    and one GEMM launch per expert, as measured on an H200 (issue 28)."""
    m = hf_model({"model_type": "mixtral", **SMALL, "num_local_experts": 4, "num_experts_per_tok": 2})
    w = m.training_step(batch=2, seq=32, amp=True)
    grouped = [k for k, _ in w.counted if k.kind == "gemm" and k.precision == "fp32" and k.launches == 4]
    assert grouped and w.recipe.syncs >= 2 * 3  # 2 layers x 3 grouped GEMMs forward (more in the backward)


def test_one_real_size_forward_maps_almost_everything():
    """Qwen3-8B's prefill of 1 x 128 tokens, real size on meta: 36 layers held once, over 99% of calls mapped."""
    m = hf_model(CONFIGS / "qwen3-8b.json")
    w = m.prefill(batch=1, seq=128)
    assert w.recipe.layers == 36 and w.recipe.coverage.fraction > 0.99
    tokens, d, kv, f, layers, vocab = 128, 4096, 1024, 12288, 36, 151936
    per_layer = 2 * tokens * (2 * d * d + 2 * d * kv + 3 * d * f)  # q and o, k and v, gate, up and down
    assert _gemm(w) == layers * per_layer + 2 * 1 * d * vocab  # the head over the last token: 1.9964e12


# ---- errors -----------------------------------------------------------------------------------------------------


def test_errors_name_the_argument():
    """An unknown model_type, a swept batch, fused kernels and quantized layers are refused by name."""
    with pytest.raises(OptionError, match="model_type 'nope'"):
        hf_model({"model_type": "nope"})
    with pytest.raises(OptionError, match="config override 'no_such_key'"):
        hf_model({"model_type": "llama", **SMALL}, no_such_key=1)
    m = hf_model({"model_type": "llama", **SMALL})
    with pytest.raises(ShapeError, match="batch must be one positive integer"):
        m.forward(batch=np.array([1, 2]))
    with pytest.raises(OptionError, match="kernels"):
        m.forward(kernels="fused")
    with pytest.raises(OptionError, match="quant"):
        m.prefill(quant="fp8")


def test_a_config_file_on_disk(tmp_path):
    """A config.json path, or the folder holding it, loads like a dict; the name is the folder's."""
    folder = tmp_path / "tiny-qwen3"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen3", **SMALL}))
    assert hf_model(folder).params == hf_model({"model_type": "qwen3", **SMALL}).params
    assert hf_model(folder / "config.json").name == "tiny-qwen3"


# ---- the committed H200 profiles: the same programs captured ----------------------------------------------------

#: names a profile and a capture give one kernel: cuDNN's attention is what impl="sdpa" resolves to on an H200, and
#: the profiler sees an embedding's innermost op (index_select, a gather)
_SAME = {"cudnn_attention": "sdpa_attention", "gather": "embedding"}


def _groups_of_profile(name):
    from solkit.profile import load_profile

    groups: dict = {}
    for call in load_profile(PROFILES / f"{name}.json.gz", "h200").calls:
        op = call.workload.counted[0][0].op if call.workload is not None else call.op.removeprefix("aten::")
        key = (_SAME.get(op, op), call.backward)
        groups[key] = groups.get(key, 0) + 1
    return groups


def _groups_of_capture(w):
    groups: dict = {}
    for k, n in w.counted:
        op = k.op if k.op != "unmodeled" else k.name.split(" ")[0]
        if op in ("adamw", "foreach"):  # a profile records no shapes for tensor lists: its optimizer is unmapped
            op = {"adamw": "_fused_adamw_", "foreach": "_foreach_add_"}[op]
        key = (_SAME.get(op, op), " backward (" in k.name)
        groups[key] = groups.get(key, 0) + n
    return groups


PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"
PROFILED = [("llama_prefill", "prefill"), ("llama_decode", "decode"), ("bert_train", "step")]


@pytest.mark.parametrize("name, phase", PROFILED, ids=[p[0] for p in PROFILED])
def test_captured_programs_call_what_the_h200_profiles_call(name, phase):
    """The programs of data/profiles (manifest.json: model config, batch, phase) captured from their configs: the op
    calls per op group (operator, forward or backward) within 2 of the profile's and the total within 1%. Where they
    differ: the profile ran transformers 5.17, whose Llama rotary table was a bmm (5.24 multiplies: matmul 29 vs 30,
    pointwise 95 vs 94); BERT's step differs by 4 calls of 970 (two zero-fills and two copies the capture does not
    see). Kernels per call (cuDNN's attention backward runs 3) are the registry's and the predictor's to count. The
    peak of live bytes is within 5% under each run's measured peak."""
    program = json.loads((PROFILES / "manifest.json").read_text())["programs"][name]["config"]
    cfg = dict(program["model_config"])
    if name == "bert_train":
        cfg["architectures"] = ["BertForMaskedLM"]
        w = hf_model(cfg).training_step(batch=program["batch"], seq=program["seq"], amp=True)
    elif phase == "prefill":
        w = hf_model(cfg).prefill(batch=program["batch"], seq=program["seq"])
    else:
        w = hf_model(cfg).decode(batch=program["batch"], context=program["context"])
    profiled, captured = _groups_of_profile(name), _groups_of_capture(w)
    assert abs(sum(captured.values()) / sum(profiled.values()) - 1) <= 0.01
    for key in set(profiled) | set(captured):
        assert abs(profiled.get(key, 0) - captured.get(key, 0)) <= 2, key
    # the live-bytes peak against the profiled run's torch.cuda.max_memory_allocated (manifest): BERT 4.67 of 4.79 GB,
    # the Llama prefill 4.12 of 4.23 GB, its decode 3.88 of 4.02 GB (the CUDA context and workspaces are not counted)
    measured = json.loads((PROFILES / "manifest.json").read_text())["programs"][name]["peak_memory_bytes"]
    assert 0.95 <= w.recipe.memory.peak / measured <= 1.0
