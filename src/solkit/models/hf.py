"""The closed form of a Hugging Face ``config.json``: a ``Transformer`` (llama, mistral, qwen2, gemma, mixtral, gpt2, bert).

Each family reads its own key names (``n_embd``/``n_layer`` for gpt2, ``hidden_size``/
``num_hidden_layers`` elsewhere) with the defaults of its transformers config class; the head
follows ``architectures`` (``*ForCausalLM``/``*LMHeadModel``: an LM head, ``BertForMaskedLM``: BERT's
MLM head, ``*Model``: none, BertModel with its pooler). Keys that change no count (ids, epsilons,
RoPE settings, initializer ranges) are ignored; a config the closed form does not model (another family, a
mixture of experts outside Mixtral, a non-absolute BERT position embedding, ...) is a ``NotModelledError`` naming the key,
which ``models.from_hf_config`` answers by capturing transformers' own modeling code (``solkit.capture``). A
``layer_types`` of every layer "full_attention" (what recent transformers saves) is what the closed form models.

JSON's types are the contract (``_Keys``): a bool where a bool is meant (``true``, never ``"true"`` or 1), an integer
where an integer is meant (32 or 32.0, never 32.5, ``true`` or ``"32"``), a finite number where a number is, a string
where a name is; else an ``ArgumentTypeError`` (a wrong JSON type) or an ``OptionError`` (a bad value) naming the key.
A path is read by ``solkit._files`` (a regular file of at most ``MAX_CONFIG_BYTES``, UTF-8, nested at most 64 deep).
"""

from __future__ import annotations

import math
import numbers
import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .._files import file_path, read_json
from .._validate import shown
from ..errors import ArgumentTypeError, NotModelledError, OptionError
from .architecture import Transformer

__all__ = ["closed_form", "load_config", "HF_FAMILIES", "MAX_CONFIG_BYTES"]

#: the largest config.json read (a config is a few KB; one with a label map for every ImageNet class about 100 KB)
MAX_CONFIG_BYTES = 4 * 2**20
#: the largest integer a config key may hold: every count below it is exact in float64 (2**53)
MAX_INT = 2**53

#: model_type -> the transformers config class's defaults that matter (num_key_value_heads None: as many as heads;
#: head_dim None: hidden_size / heads)
_DECODER_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "llama": {"tie_word_embeddings": False, "hidden_act": "silu", "num_key_value_heads": None, "head_dim": None},
    "mistral": {"tie_word_embeddings": False, "hidden_act": "silu", "num_key_value_heads": 8, "head_dim": None},
    "qwen2": {"tie_word_embeddings": False, "hidden_act": "silu", "num_key_value_heads": 32, "head_dim": None},
    "gemma": {"tie_word_embeddings": True, "hidden_act": "gelu_pytorch_tanh", "num_key_value_heads": 16, "head_dim": 256},
    "mixtral": {"tie_word_embeddings": False, "hidden_act": "silu", "num_key_value_heads": 8, "head_dim": None},
}
HF_FAMILIES: tuple[str, ...] = (*_DECODER_DEFAULTS, "gpt2", "bert")

#: keys whose presence with a value other than the one given changes counts solkit does not model, and the JSON
#: type each holds (null, 0 and false are the value that changes nothing)
_UNHONOURED: Mapping[str, tuple[str, Any]] = {
    "num_local_experts": ("int", None), "num_experts": ("int", None), "n_routed_experts": ("int", None),
    "moe_intermediate_size": ("int", None), "attn_logit_softcapping": ("number", None),
    "final_logit_softcapping": ("number", None), "cross_attention_hidden_size": ("int", None),
    "add_cross_attention": ("bool", False), "is_encoder_decoder": ("bool", False),
    "scale_attn_by_inverse_layer_idx": ("bool", False), "reorder_and_upcast_attn": ("bool", False),
    "chunk_size_feed_forward": ("int", 0),
}

_GATED = {"silu": "swiglu", "swish": "swiglu", "gelu": "geglu", "gelu_pytorch_tanh": "geglu", "gelu_new": "geglu",
          "gelu_fast": "geglu"}

#: Transformer field -> the config key it comes from, per family (to name a disagreement by the config's keys)
_DECODER_KEYS = {"layers": "num_hidden_layers", "d_model": "hidden_size", "heads": "num_attention_heads",
                 "kv_heads": "num_key_value_heads", "head_dim": "head_dim", "ffn": "intermediate_size",
                 "vocab": "vocab_size", "sliding_window": "sliding_window", "experts": "num_local_experts",
                 "top_k": "num_experts_per_tok", "attention_dropout": "attention_dropout",
                 "tie_embeddings": "tie_word_embeddings"}
_FIELD_KEYS: Mapping[str, Mapping[str, str]] = {
    **{family: _DECODER_KEYS for family in _DECODER_DEFAULTS},
    "gpt2": {"layers": "n_layer", "d_model": "n_embd", "heads": "n_head", "ffn": "n_inner", "vocab": "vocab_size",
             "max_positions": "n_positions", "dropout": "resid_pdrop", "attention_dropout": "attn_pdrop",
             "tie_embeddings": "tie_word_embeddings"},
    "bert": {"layers": "num_hidden_layers", "d_model": "hidden_size", "heads": "num_attention_heads",
             "ffn": "intermediate_size", "vocab": "vocab_size", "max_positions": "max_position_embeddings",
             "token_types": "type_vocab_size", "dropout": "hidden_dropout_prob",
             "attention_dropout": "attention_probs_dropout_prob", "tie_embeddings": "tie_word_embeddings"},
}


def closed_form(config: Any, name: str | None = None) -> Transformer:
    """The ``Transformer`` of a Hugging Face config (a dict, a path to ``config.json``, or a folder holding one); a
    ``NotModelledError`` names what the closed form cannot honour, an ``OptionError`` a value that is wrong and an
    ``ArgumentTypeError`` a value of the wrong JSON type (``_Keys``), each naming the key."""
    if name is not None and not isinstance(name, str):
        raise ArgumentTypeError(f"name must be a string or None, got {_got(name)}")
    data, where = load_config(config)
    keys = _Keys(data, where)
    model_type = keys.text("model_type", _NEED)
    if model_type not in HF_FAMILIES:
        raise NotModelledError(f"config model_type must be one of {', '.join(HF_FAMILIES)} for the closed form, got "
                               f"{model_type!r}{keys.at}")
    for key, (kind, default) in _UNHONOURED.items():
        if model_type == "mixtral" and key == "num_local_experts":
            continue  # Mixtral's experts are modelled (experts, top_k)
        value = keys.off_value(key, kind)
        if value not in (default, None, 0, False):
            raise NotModelledError(f"config key {key!r}={value!r} is not modelled by solkit's closed form (model_type "
                                   f"{model_type!r})")
    kinds = keys.names("layer_types", "a list of layer type names (strings)")
    if kinds is not None and any(k != "full_attention" for k in kinds):
        raise NotModelledError(f"config key 'layer_types'={data['layer_types']!r} is not modelled by solkit's closed form "
                               "(every layer 'full_attention' is)")
    build: Callable[[_Keys, str], dict[str, Any]] = _BUILDERS.get(model_type, _decoder)
    fields = build(keys, model_type)
    stem = Path(where).parent.name if where.endswith("config.json") else Path(where).stem if where else ""
    given = keys.text("_name_or_path", None, nullable=True)  # type-checked even where ``name`` wins
    fields["name"] = name or given or stem or model_type
    fields["source"] = f"Hugging Face config ({model_type}{', ' + where if where else ''})"
    try:
        return Transformer(**fields)
    except (OptionError, ArgumentTypeError) as exc:
        raise _by_key(exc, _FIELD_KEYS[model_type], keys.at) from None


def _by_key(exc: Exception, field_keys: Mapping[str, str], at: str) -> Exception:
    """The Transformer's refusal of the fields a config gave, naming the config keys they came from."""
    text = str(exc).removeprefix("Transformer: ")
    named = [f"{key!r} ({field})" for field, key in field_keys.items() if re.search(rf"\b{field}\b", text)]
    if not named:
        return type(exc)(f"config{at}: {text}")
    return type(exc)(f"config key{'s' if len(named) > 1 else ''} {', '.join(named)}{at}: {text}")


def load_config(config: Any) -> tuple[dict[str, Any], str]:
    """The config as a dict, and where it came from (a path, or '' for a dict): a path is read by ``solkit._files``
    (a regular file of at most ``MAX_CONFIG_BYTES``, UTF-8, JSON nested at most 64 deep), a folder's config.json."""
    if isinstance(config, Mapping):
        return dict(config), ""
    if isinstance(config, (str, os.PathLike)):
        text = file_path(config, "config", OptionError)
        path = os.path.join(text, "config.json") if os.path.isdir(text) else text
        data, where = read_json(path, "config", MAX_CONFIG_BYTES, OptionError)
        if not isinstance(data, dict):
            raise OptionError(f"config {where!r} must hold a JSON object, got a {type(data).__name__}")
        return data, where
    raise ArgumentTypeError(f"config must be a dict, a path to config.json or a folder, got {type(config).__name__}")


class _Need:
    """The default of a key that has none: missing (or null) it is an OptionError."""


_NEED = _Need()


def _got(value: Any) -> str:
    """A config value as JSON spells it, with its JSON type where that is the point."""
    if value is None:
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, str):
        return f"the string {shown(value)}"
    if isinstance(value, numbers.Integral):
        n = int(value)
        return str(n) if abs(n) < 10**30 else f"an integer of about {int(abs(n).bit_length() * 0.30103) + 1} digits"
    if isinstance(value, numbers.Real):
        x = float(value)
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity") if math.isinf(x) else repr(x)
    if isinstance(value, list):
        return f"the list {shown(value)}"
    if isinstance(value, Mapping):
        return f"the object {shown(dict(value))}"
    return f"a {type(value).__name__} {shown(value)}"


class _Keys:
    """A config's values, each read as the JSON type its key means (JSON's types are the contract).

    A wrong JSON type (a string, a bool, a list or an object where a number is meant; a number where a bool is)
    is an ``ArgumentTypeError``; the right type with a bad value (32.5 or NaN where an integer is meant, 0 where at
    least 1 is) an ``OptionError``; each names the key, what was expected and what came. An integer is a number
    without a fractional part (JSON Schema's "integer": 32.0 is 32). A key missing takes its family's default
    (transformers' config class); null is allowed only where that class takes None (``nullable``); a key that
    has no default, missing or null, is "needs the key".
    """

    def __init__(self, data: Mapping[str, Any], where: str) -> None:
        self.data = data
        self.at = f" in {where}" if where else ""

    def _refuse(self, key: str, expected: str, value: Any, error: type[Exception]) -> Exception:
        return error(f"config key {key!r}{self.at} must be {expected}, got {_got(value)}")

    def _given(self, key: str, default: Any, nullable: bool, expected: str) -> tuple[bool, Any]:
        """(True, the value) when the key holds a value to check; else (False, what to return)."""
        if key not in self.data:
            if default is _NEED:
                raise OptionError(f"config needs the key {key!r} (model_type {self.data.get('model_type')!r}){self.at}, "
                                  "got none")
            return False, default
        value = self.data[key]
        if value is None and not nullable:
            if default is _NEED:
                raise OptionError(f"config needs the key {key!r} (model_type {self.data.get('model_type')!r}){self.at}, "
                                  "got null")
            raise self._refuse(key, expected, value, ArgumentTypeError)
        return value is not None, value

    def integer(self, key: str, default: Any = _NEED, *, minimum: int = 1, nullable: bool = False) -> Any:
        """An integer >= ``minimum`` (at most 2**53); None where null is allowed and given."""
        expected = f"an integer >= {minimum}"
        present, value = self._given(key, default, nullable, expected)
        if not present:
            return value
        if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
            n = int(value)
        elif isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
            x = float(value)
            if not (math.isfinite(x) and x.is_integer()):
                raise self._refuse(key, expected, value, OptionError)
            n = int(x)
        else:
            raise self._refuse(key, expected, value, ArgumentTypeError)
        if n < minimum:
            raise self._refuse(key, expected, value, OptionError)
        if n > MAX_INT:
            raise self._refuse(key, f"{expected} and at most 2**53 (every count exact in float64)", value, OptionError)
        return n

    def boolean(self, key: str, default: bool) -> bool:
        """true or false (never "false", 1 or null)."""
        present, value = self._given(key, default, False, "true or false (a JSON boolean)")
        if not present:
            return bool(value)
        if not isinstance(value, (bool, np.bool_)):
            raise self._refuse(key, "true or false (a JSON boolean)", value, ArgumentTypeError)
        return bool(value)

    def number(self, key: str, default: Any, *, dropout: bool = True, nullable: bool = False) -> Any:
        """A finite number; a dropout probability in [0, 1). None where null is allowed and given."""
        expected = "a number in [0, 1)" if dropout else "a finite number"
        present, value = self._given(key, default, nullable, expected)
        if not present:
            return value
        if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
            raise self._refuse(key, expected, value, ArgumentTypeError)
        x = float(value)
        if not math.isfinite(x) or (dropout and not 0.0 <= x < 1.0):
            raise self._refuse(key, expected, value, OptionError)
        return x

    def text(self, key: str, default: Any, *, nullable: bool = False) -> Any:
        """A string (a name: an activation, an architecture, a path); None where null is allowed and given."""
        present, value = self._given(key, default, nullable, "a string")
        if present and not isinstance(value, str):
            raise self._refuse(key, "a string", value, ArgumentTypeError)
        return value

    def names(self, key: str, expected: str) -> list[str] | None:
        """A list of strings; None when missing or null."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._refuse(key, expected, value, ArgumentTypeError)
        return value

    def off_value(self, key: str, kind: str) -> Any:
        """A key that routes a config to capture: its value, type-checked (null when missing)."""
        if self.data.get(key) is None:
            return None
        if kind == "bool":
            return self.boolean(key, False)
        if kind == "number":
            return self.number(key, None, dropout=False)
        return self.integer(key, None, minimum=0)

    def architecture(self, default: str) -> str:
        """The one architecture named (``architectures[0]``), or the family's default (missing, null or [])."""
        names = self.names("architectures", "a list of one architecture name (a string)")
        if not names:
            return default
        if len(names) != 1:
            raise OptionError(f"config key 'architectures'{self.at} must name one architecture, got {names!r}")
        return names[0]


def _head(arch: str, lm_suffixes: tuple[str, ...], bare: str) -> str:
    """'lm' for a causal-LM class, 'none' for the bare model; anything else refused."""
    if arch.endswith(lm_suffixes):
        return "lm"
    if arch == bare:
        return "none"
    raise NotModelledError(f"config key 'architectures'={arch!r} is not modelled; solkit models {bare} and "
                      f"{' / '.join('*' + s for s in lm_suffixes)}")


def _decoder(keys: _Keys, model_type: str) -> dict[str, Any]:
    """Llama-style decoders: llama, mistral, qwen2, gemma, and mixtral (their MoE)."""
    defaults = _DECODER_DEFAULTS[model_type]
    prefix = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2", "gemma": "Gemma", "mixtral": "Mixtral"}[model_type]
    heads = keys.integer("num_attention_heads")
    kv_heads = keys.integer("num_key_value_heads", defaults["num_key_value_heads"], nullable=True)
    head_dim = keys.integer("head_dim", defaults["head_dim"], nullable=True)
    alternative = keys.text("hidden_activation", None, nullable=True)  # Gemma's, over hidden_act where set
    act = alternative or keys.text("hidden_act", defaults["hidden_act"])
    keys.text("hidden_act", defaults["hidden_act"])  # type-checked even where hidden_activation wins
    if act not in _GATED:
        raise NotModelledError(f"config key 'hidden_act'={act!r} is not modelled (gated MLPs with silu or gelu)")
    head = _head(keys.architecture(f"{prefix}ForCausalLM"), ("ForCausalLM",), f"{prefix}Model")
    tied = keys.boolean("tie_word_embeddings", defaults["tie_word_embeddings"])
    attention_bias, mlp_bias = keys.boolean("attention_bias", False), keys.boolean("mlp_bias", False)
    return dict(
        family="llama", layers=keys.integer("num_hidden_layers"), d_model=keys.integer("hidden_size"), heads=heads,
        kv_heads=heads if kv_heads is None else kv_heads, head_dim=head_dim, ffn=keys.integer("intermediate_size"),
        vocab=keys.integer("vocab_size"), mlp=_GATED[act], tie_embeddings=tied and head == "lm",
        bias=_bias(model_type, attention_bias, mlp_bias), causal=True,
        attention_dropout=keys.number("attention_dropout", 0.0, nullable=True) or 0.0, head=head,
        sliding_window=_window(keys, model_type), **_experts(keys, model_type),
    )


def _bias(model_type: str, attention: bool, mlp: bool) -> str:
    """Which linear layers carry a bias: Qwen2's q, k and v; else none, or all (attention_bias and mlp_bias)."""
    if model_type == "qwen2":
        return "qkv"  # Qwen2Attention: q, k and v with biases, o without
    if attention != mlp:
        raise NotModelledError(f"config keys 'attention_bias'={attention!r} and 'mlp_bias'={mlp!r} are not modelled "
                               "together; solkit models biases nowhere, on q/k/v only (qwen2) or everywhere (both True)")
    return "all" if mlp else "none"


def _window(keys: _Keys, model_type: str) -> int | None:
    """The sliding window every layer attends over, or None.

    Mistral and Mixtral slide whenever ``sliding_window`` is set; the others only with ``use_sliding_window``, and
    Qwen2 then only from layer ``max_window_layers`` on (Qwen2Config: below it, full attention): a window on some
    layers only is not modelled. Where unused, ``sliding_window`` is only type-checked.
    """
    used = keys.boolean("use_sliding_window", False) or model_type in ("mistral", "mixtral")
    window = keys.integer("sliding_window", None, minimum=1 if used else 0, nullable=True)
    if not used or window is None:
        return None
    if model_type == "qwen2":
        layers, first = keys.integer("num_hidden_layers"), keys.integer("max_window_layers", 28, minimum=0)
        if first >= layers:
            return None  # every layer below max_window_layers: full attention
        if first > 0:
            raise NotModelledError(f"config keys 'use_sliding_window'=true and 'max_window_layers'={first} (of {layers} "
                                   "layers) are not modelled: a sliding window on some layers only")
    return int(window)


def _experts(keys: _Keys, model_type: str) -> dict[str, Any]:
    """Mixtral's sparse MoE: ``num_local_experts`` experts, ``num_experts_per_tok`` of them per token (else a dense MLP)."""
    if model_type != "mixtral":
        return {}
    return {"experts": keys.integer("num_local_experts"), "top_k": keys.integer("num_experts_per_tok")}


def _gpt2(keys: _Keys, model_type: str) -> dict[str, Any]:
    d = keys.integer("n_embd")
    head = _head(keys.architecture("GPT2LMHeadModel"), ("LMHeadModel",), "GPT2Model")
    act = keys.text("activation_function", "gelu_new")
    if not act.startswith("gelu"):
        raise NotModelledError(f"config key 'activation_function'={act!r} is not modelled (gelu variants)")
    inner = keys.integer("n_inner", None, nullable=True)
    return dict(
        family="gpt2", layers=keys.integer("n_layer"), d_model=d, heads=keys.integer("n_head"),
        ffn=4 * d if inner is None else inner, vocab=keys.integer("vocab_size"), mlp="gelu", norm="layernorm",
        positions="learned", max_positions=keys.integer("n_positions"),
        tie_embeddings=keys.boolean("tie_word_embeddings", True) and head == "lm", bias="all", causal=True,
        dropout=keys.number("resid_pdrop", 0.1), attention_dropout=keys.number("attn_pdrop", 0.1), head=head,
    )


def _bert(keys: _Keys, model_type: str) -> dict[str, Any]:
    arch = keys.architecture("BertModel")
    if arch not in ("BertForMaskedLM", "BertModel"):
        raise NotModelledError(f"config key 'architectures'={arch!r} is not modelled; solkit models BertModel and BertForMaskedLM")
    kind = keys.text("position_embedding_type", "absolute")
    if kind != "absolute":
        raise NotModelledError(f"config key 'position_embedding_type'={kind!r} is not modelled (absolute positions only)")
    act = keys.text("hidden_act", "gelu")
    if not act.startswith("gelu"):
        raise NotModelledError(f"config key 'hidden_act'={act!r} is not modelled (gelu variants)")
    masked = arch == "BertForMaskedLM"
    return dict(
        family="bert", layers=keys.integer("num_hidden_layers"), d_model=keys.integer("hidden_size"),
        heads=keys.integer("num_attention_heads"), ffn=keys.integer("intermediate_size"),
        vocab=keys.integer("vocab_size"), mlp="gelu", norm="layernorm", norm_position="post", positions="learned",
        max_positions=keys.integer("max_position_embeddings"), token_types=keys.integer("type_vocab_size", 2, minimum=0),
        embedding_norm=True, tie_embeddings=keys.boolean("tie_word_embeddings", True) and masked, bias="all",
        causal=False, dropout=keys.number("hidden_dropout_prob", 0.1),
        attention_dropout=keys.number("attention_probs_dropout_prob", 0.1), head="mlm" if masked else "none",
        pooler=not masked,
    )


_BUILDERS: Mapping[str, Callable[[_Keys, str], dict[str, Any]]] = {"gpt2": _gpt2, "bert": _bert}
