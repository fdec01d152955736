"""The closed form of a Hugging Face ``config.json``: a ``Transformer`` (llama, mistral, qwen2, gemma, mixtral, gpt2, bert).

Each family reads its own key names (``n_embd``/``n_layer`` for gpt2, ``hidden_size``/
``num_hidden_layers`` elsewhere) with the defaults of its transformers config class; the head
follows ``architectures`` (``*ForCausalLM``/``*LMHeadModel``: an LM head, ``BertForMaskedLM``: BERT's
MLM head, ``*Model``: none, BertModel with its pooler). Keys that change no count (ids, epsilons,
RoPE settings, initializer ranges) are ignored; a config the closed form does not model (another family, a
mixture of experts outside Mixtral, a non-absolute BERT position embedding, ...) is a ``NotModelledError`` naming the key,
which ``models.from_hf_config`` answers by capturing transformers' own modeling code (``solkit.capture``). A
``layer_types`` of every layer "full_attention" (what recent transformers saves) is what the closed form models.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import ArgumentTypeError, NotModelledError, OptionError
from .architecture import Transformer

__all__ = ["closed_form", "load_config", "HF_FAMILIES"]

#: model_type -> (solkit family, the transformers config class's defaults that matter)
_DECODER_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "llama": {"tie_word_embeddings": False, "hidden_act": "silu"},
    "mistral": {"tie_word_embeddings": False, "hidden_act": "silu"},
    "qwen2": {"tie_word_embeddings": False, "hidden_act": "silu"},
    "gemma": {"tie_word_embeddings": True, "hidden_act": "gelu_pytorch_tanh"},
    "mixtral": {"tie_word_embeddings": False, "hidden_act": "silu"},
}
HF_FAMILIES: tuple[str, ...] = (*_DECODER_DEFAULTS, "gpt2", "bert")

#: keys whose presence with a value other than the one given changes counts solkit does not model
_UNHONOURED: Mapping[str, Any] = {
    "num_local_experts": None, "num_experts": None, "n_routed_experts": None, "moe_intermediate_size": None,
    "attn_logit_softcapping": None, "final_logit_softcapping": None, "cross_attention_hidden_size": None,
    "add_cross_attention": False, "is_encoder_decoder": False, "scale_attn_by_inverse_layer_idx": False,
    "reorder_and_upcast_attn": False, "chunk_size_feed_forward": 0,
}

_GATED = {"silu": "swiglu", "swish": "swiglu", "gelu": "geglu", "gelu_pytorch_tanh": "geglu", "gelu_new": "geglu",
          "gelu_fast": "geglu"}


def closed_form(config: Any, name: str | None = None) -> Transformer:
    """The ``Transformer`` of a Hugging Face config (a dict, a path to ``config.json``, or a folder holding one); a
    ``NotModelledError`` names what the closed form cannot honour, an ``OptionError`` a value that is wrong."""
    data, where = load_config(config)
    model_type = data.get("model_type")
    if model_type not in HF_FAMILIES:
        raise NotModelledError(f"config model_type must be one of {', '.join(HF_FAMILIES)} for the closed form, got "
                          f"{model_type!r}{f' in {where}' if where else ''}")
    for key, default in _UNHONOURED.items():
        if model_type == "mixtral" and key == "num_local_experts":
            continue  # Mixtral's experts are modelled (experts, top_k)
        if key in data and data[key] not in (default, None, 0, False, [], {}):
            raise NotModelledError(f"config key {key!r}={data[key]!r} is not modelled by solkit's closed form (model_type "
                              f"{model_type!r})")
    kinds = data.get("layer_types")
    if kinds is not None and (not isinstance(kinds, list) or any(k != "full_attention" for k in kinds)):
        raise NotModelledError(f"config key 'layer_types'={kinds!r} is not modelled by solkit's closed form (every layer "
                          "'full_attention' is)")
    build: Callable[[Mapping[str, Any]], dict[str, Any]] = _BUILDERS.get(model_type, _decoder)
    fields = build(data)
    stem = Path(where).parent.name if where.endswith("config.json") else Path(where).stem if where else ""
    fields["name"] = name or data.get("_name_or_path") or stem or model_type
    fields["source"] = f"Hugging Face config ({model_type}{', ' + where if where else ''})"
    return Transformer(**fields)


def load_config(config: Any) -> tuple[dict[str, Any], str]:
    """The config as a dict, and where it came from (a path, or '' for a dict)."""
    if isinstance(config, Mapping):
        return dict(config), ""
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise OptionError(f"config must be a dict, a config.json file or a folder holding one, got the path {str(path)!r}, "
                              "which does not exist")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise OptionError(f"config {str(path)!r} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise OptionError(f"config {str(path)!r} must hold a JSON object, got a {type(data).__name__}")
        return data, str(path)
    raise ArgumentTypeError(f"config must be a dict, a path to config.json or a folder, got {type(config).__name__}")


def _need(data: Mapping[str, Any], key: str) -> Any:
    if key not in data or data[key] is None:
        raise OptionError(f"config needs the key {key!r} (model_type {data.get('model_type')!r}), got none")
    return data[key]


def _architecture(data: Mapping[str, Any], default: str) -> str:
    """The one architecture named (``architectures[0]``), or the family's default."""
    names = data.get("architectures") or [default]
    if len(names) != 1:
        raise OptionError(f"config key 'architectures' must name one architecture, got {names!r}")
    return str(names[0])


def _head(arch: str, lm_suffixes: tuple[str, ...], bare: str) -> str:
    """'lm' for a causal-LM class, 'none' for the bare model; anything else refused."""
    if arch.endswith(lm_suffixes):
        return "lm"
    if arch == bare:
        return "none"
    raise NotModelledError(f"config key 'architectures'={arch!r} is not modelled; solkit models {bare} and "
                      f"{' / '.join('*' + s for s in lm_suffixes)}")


def _decoder(data: Mapping[str, Any]) -> dict[str, Any]:
    """Llama-style decoders: llama, mistral, qwen2, gemma, and mixtral (their MoE)."""
    model_type = data["model_type"]
    defaults = _DECODER_DEFAULTS[model_type]
    prefix = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2", "gemma": "Gemma", "mixtral": "Mixtral"}[model_type]
    heads = int(_need(data, "num_attention_heads"))
    act = data.get("hidden_activation") or data.get("hidden_act") or defaults["hidden_act"]
    if act not in _GATED:
        raise NotModelledError(f"config key 'hidden_act'={act!r} is not modelled (gated MLPs with silu or gelu)")
    head = _head(_architecture(data, f"{prefix}ForCausalLM"), ("ForCausalLM",), f"{prefix}Model")
    window = data.get("sliding_window") if (model_type in ("mistral", "mixtral") or data.get("use_sliding_window")) else None
    if model_type == "qwen2":
        bias = "qkv"  # Qwen2Attention: q, k and v with biases, o without
    elif bool(data.get("attention_bias")) != bool(data.get("mlp_bias")):
        raise NotModelledError(f"config keys 'attention_bias'={data.get('attention_bias')!r} and 'mlp_bias'="
                          f"{data.get('mlp_bias')!r} are not modelled together; solkit models biases nowhere, on q/k/v "
                          "only (qwen2) or everywhere (both True)")
    else:
        bias = "all" if data.get("mlp_bias") else "none"
    return dict(
        family="llama", layers=int(_need(data, "num_hidden_layers")), d_model=int(_need(data, "hidden_size")), heads=heads,
        kv_heads=int(data.get("num_key_value_heads") or heads), head_dim=data.get("head_dim"),
        ffn=int(_need(data, "intermediate_size")), vocab=int(_need(data, "vocab_size")), mlp=_GATED[act],
        tie_embeddings=bool(data.get("tie_word_embeddings", defaults["tie_word_embeddings"])) and head == "lm",
        bias=bias, causal=True, attention_dropout=float(data.get("attention_dropout") or 0.0), head=head,
        sliding_window=window, **_experts(data),
    )


def _experts(data: Mapping[str, Any]) -> dict[str, Any]:
    """Mixtral's sparse MoE: ``num_local_experts`` experts, ``num_experts_per_tok`` of them per token (else a dense MLP)."""
    if data.get("model_type") != "mixtral":
        return {}
    return {"experts": int(_need(data, "num_local_experts")), "top_k": int(_need(data, "num_experts_per_tok"))}


def _gpt2(data: Mapping[str, Any]) -> dict[str, Any]:
    d = int(_need(data, "n_embd"))
    head = _head(_architecture(data, "GPT2LMHeadModel"), ("LMHeadModel",), "GPT2Model")
    act = data.get("activation_function", "gelu_new")
    if not str(act).startswith("gelu"):
        raise NotModelledError(f"config key 'activation_function'={act!r} is not modelled (gelu variants)")
    return dict(
        family="gpt2", layers=int(_need(data, "n_layer")), d_model=d, heads=int(_need(data, "n_head")),
        ffn=int(data.get("n_inner") or 4 * d), vocab=int(_need(data, "vocab_size")), mlp="gelu", norm="layernorm",
        positions="learned", max_positions=int(_need(data, "n_positions")),
        tie_embeddings=bool(data.get("tie_word_embeddings", True)) and head == "lm", bias="all", causal=True,
        dropout=float(data.get("resid_pdrop", 0.1)), attention_dropout=float(data.get("attn_pdrop", 0.1)), head=head,
    )


def _bert(data: Mapping[str, Any]) -> dict[str, Any]:
    arch = _architecture(data, "BertModel")
    if arch not in ("BertForMaskedLM", "BertModel"):
        raise NotModelledError(f"config key 'architectures'={arch!r} is not modelled; solkit models BertModel and BertForMaskedLM")
    kind = data.get("position_embedding_type", "absolute")
    if kind != "absolute":
        raise NotModelledError(f"config key 'position_embedding_type'={kind!r} is not modelled (absolute positions only)")
    act = data.get("hidden_act", "gelu")
    if not str(act).startswith("gelu"):
        raise NotModelledError(f"config key 'hidden_act'={act!r} is not modelled (gelu variants)")
    masked = arch == "BertForMaskedLM"
    return dict(
        family="bert", layers=int(_need(data, "num_hidden_layers")), d_model=int(_need(data, "hidden_size")),
        heads=int(_need(data, "num_attention_heads")), ffn=int(_need(data, "intermediate_size")),
        vocab=int(_need(data, "vocab_size")), mlp="gelu", norm="layernorm", norm_position="post", positions="learned",
        max_positions=int(_need(data, "max_position_embeddings")), token_types=int(data.get("type_vocab_size", 2)),
        embedding_norm=True, tie_embeddings=masked and bool(data.get("tie_word_embeddings", True)), bias="all",
        causal=False, dropout=float(data.get("hidden_dropout_prob", 0.1)),
        attention_dropout=float(data.get("attention_probs_dropout_prob", 0.1)), head="mlm" if masked else "none",
        pooler=not masked,
    )


_BUILDERS: Mapping[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {"gpt2": _gpt2, "bert": _bert}
