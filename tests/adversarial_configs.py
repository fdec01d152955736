"""Adversarial cases: Hugging Face configs, config and data files, ``Transformer`` fields (issue 29, classes 1-3).

Categories: ``config-key`` (every key each closed-form family reads, given the wrong JSON type or a bad value:
a string, a bool, a float, NaN, Infinity, a list, an object, null, out of range), ``config-value`` (keys that
are each fine but disagree, named by their config keys), ``config-file`` (files a config path may name: binary,
latin-1, nested, huge, a named pipe, a device, a symlink, a BOM), ``data-file`` (the same kinds given to
``load_profile``, the ``profile`` and ``model`` commands and the calibration's JSON readers) and
``transformer-field`` (``models.Transformer``'s fields: bools, numeric strings, floats (a whole one is its integer), infinity, NaN, numpy
scalars, positional arguments, misspelt fields).

The contract these cases hold: JSON's types are the config's types. A wrong JSON type (a string or a bool where
a number is meant, a number where a bool is, a list or an object where either is) is an ``ArgumentTypeError``
(a TypeError); the right type with a bad value (32.5 or NaN where an integer is meant, 0 heads, a dropout of 1)
an ``OptionError`` (a ValueError); each names the key and what came. An integer is a JSON number with no
fractional part (JSON Schema's "integer": 32.0 is one, 32.5 is not). Valid edges (a whole float, null where
transformers' config class takes None, a BOM, a symlink) must simply work; where they give a number, the case
checks it by hand arithmetic.
"""

from __future__ import annotations

import atexit
import functools
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from adversarial import Adv
from adversarial_cli import cli
from solkit import models
from solkit.errors import (ArgumentTypeError, CLIError, MeasurementError, NotModelledError, OptionError, ShapeError,
                           SpecError)
from solkit.models.hf import closed_form

HF = Path(__file__).resolve().parent / "data" / "hf_configs"
ROOT = Path(tempfile.mkdtemp(prefix="solkit-adv-configs-"))
atexit.register(shutil.rmtree, ROOT, True)

#: the base config of each closed-form family (tests/data/hf_configs: the Hub's files, SOURCES.md)
BASES = {"llama": "llama3-8b.json", "mistral": "mistral-7b-v0.3.json", "qwen2": "qwen2.5-7b.json", "gemma": "gemma-7b.json",
         "mixtral": "mixtral-8x7b.json", "gpt2": "gpt2.json", "bert": "bert-base-uncased.json"}

CASES: list[Adv] = []


@functools.lru_cache(maxsize=None)
def _base_text(family: str) -> str:
    return (HF / BASES[family]).read_text()


def base(family: str) -> dict[str, Any]:
    """A fresh copy of the family's base config."""
    return json.loads(_base_text(family))


def cf(family: str, **changes: Any) -> Callable[[], Any]:
    """The closed form of the family's base config with ``changes`` (a value of ``DROP`` removes the key)."""
    def call() -> Any:
        data = {**base(family), **changes}
        return closed_form({k: v for k, v in data.items() if v is not DROP})
    return call


DROP = object()


def add(id: str, call: Callable[[], Any], expect: Optional[type], builtin: Optional[type] = None, *names: str,
        seconds: float = 10.0) -> None:
    CASES.append(Adv(id, call, expect, builtin, tuple(names), seconds))


def check(call: Callable[[], Any], test: Callable[[Any], bool], what: str) -> Callable[[], Any]:
    """``call``, then AssertionError (judged foreign) unless ``test(result)``: a works case that checks its number."""
    def run() -> Any:
        out = call()
        if not test(out):
            raise AssertionError(f"{what}: got {out!r}")
        return out
    return run


# ---- config-key: every key each family reads --------------------------------------------------------------
#
# The key tables are the contract, written from transformers' config classes (the key names and which take None)
# and solkit's closed form (which keys it reads). kind: "int" (minimum), "bool", "number" (the dropouts: [0, 1)),
# "text". required: no default (missing or null is "needs the key"). null: what null means where it is allowed
# ("ok"), else it is refused ("type": a wrong type).

Key = tuple[str, dict[str, Any]]

DECODER_KEYS: dict[str, dict[str, Any]] = {
    "num_hidden_layers": dict(kind="int", required=True),
    "hidden_size": dict(kind="int", required=True),
    "num_attention_heads": dict(kind="int", required=True),
    "intermediate_size": dict(kind="int", required=True),
    "vocab_size": dict(kind="int", required=True),
    "num_key_value_heads": dict(kind="int", null="ok"),  # None: as many as the heads (LlamaConfig)
    "head_dim": dict(kind="int", null="ok"),  # None: hidden_size / heads
    "tie_word_embeddings": dict(kind="bool"),
    "attention_bias": dict(kind="bool"),
    "mlp_bias": dict(kind="bool"),
    "use_sliding_window": dict(kind="bool"),
    "attention_dropout": dict(kind="number", null="ok"),  # LlamaConfig: int | float | None
    "hidden_act": dict(kind="text"),
}
MIXTRAL_KEYS = {"num_local_experts": dict(kind="int", required=True), "num_experts_per_tok": dict(kind="int", required=True)}
GPT2_KEYS: dict[str, dict[str, Any]] = {
    "n_layer": dict(kind="int", required=True),
    "n_embd": dict(kind="int", required=True),
    "n_head": dict(kind="int", required=True),
    "n_positions": dict(kind="int", required=True),
    "vocab_size": dict(kind="int", required=True),
    "n_inner": dict(kind="int", null="ok"),  # None: 4 x n_embd
    "tie_word_embeddings": dict(kind="bool"),
    "resid_pdrop": dict(kind="number"),
    "attn_pdrop": dict(kind="number"),
    "activation_function": dict(kind="text"),
}
BERT_KEYS: dict[str, dict[str, Any]] = {
    "num_hidden_layers": dict(kind="int", required=True),
    "hidden_size": dict(kind="int", required=True),
    "num_attention_heads": dict(kind="int", required=True),
    "intermediate_size": dict(kind="int", required=True),
    "vocab_size": dict(kind="int", required=True),
    "max_position_embeddings": dict(kind="int", required=True),
    "type_vocab_size": dict(kind="int", minimum=0),
    "tie_word_embeddings": dict(kind="bool"),
    "hidden_dropout_prob": dict(kind="number"),
    "attention_probs_dropout_prob": dict(kind="number"),
    "hidden_act": dict(kind="text"),
    "position_embedding_type": dict(kind="text"),
}
FAMILY_KEYS = {"llama": DECODER_KEYS, "mixtral": {**DECODER_KEYS, **MIXTRAL_KEYS}, "gpt2": GPT2_KEYS, "bert": BERT_KEYS}
#: the other decoders read the same keys as llama: each gets one wrong type and one bad value per key
SHARED = ("mistral", "qwen2", "gemma")


def _q(key: str) -> str:
    return repr(key)


def int_cases(family: str, key: str, spec: dict[str, Any], full: bool = True) -> None:
    minimum = spec.get("minimum", 1)
    at = f"config-key: {family} {key}"
    add(f"{at} the string '32'", cf(family, **{key: "32"}), ArgumentTypeError, TypeError, _q(key), "the string '32'")
    add(f"{at} 32.5", cf(family, **{key: 32.5}), OptionError, ValueError, _q(key), "32.5")
    if not full:
        return
    add(f"{at} true", cf(family, **{key: True}), ArgumentTypeError, TypeError, _q(key), "the boolean true")
    add(f"{at} false", cf(family, **{key: False}), ArgumentTypeError, TypeError, _q(key), "the boolean false")
    add(f"{at} -1", cf(family, **{key: -1}), OptionError, ValueError, _q(key), f">= {minimum}", "got -1")
    if minimum >= 1:
        add(f"{at} 0", cf(family, **{key: 0}), OptionError, ValueError, _q(key), f">= {minimum}", "got 0")
    add(f"{at} 1e400 (Infinity)", cf(family, **{key: float("inf")}), OptionError, ValueError, _q(key), "Infinity")
    add(f"{at} -Infinity", cf(family, **{key: -float("inf")}), OptionError, ValueError, _q(key), "-Infinity")
    add(f"{at} NaN", cf(family, **{key: float("nan")}), OptionError, ValueError, _q(key), "NaN")
    add(f"{at} 2**64", cf(family, **{key: 2**64}), OptionError, ValueError, _q(key), "2**53")
    add(f"{at} a list [32]", cf(family, **{key: [32]}), ArgumentTypeError, TypeError, _q(key), "the list [32]")
    add(f"{at} an object", cf(family, **{key: {"value": 32}}), ArgumentTypeError, TypeError, _q(key), "the object")
    add(f"{at} a string 'abc'", cf(family, **{key: "abc"}), ArgumentTypeError, TypeError, _q(key), "the string 'abc'")
    if spec.get("required"):
        add(f"{at} null", cf(family, **{key: None}), OptionError, ValueError, f"needs the key {_q(key)}", "null")
        add(f"{at} missing", cf(family, **{key: DROP}), OptionError, ValueError, f"needs the key {_q(key)}")
    elif spec.get("null") == "ok":
        add(f"{at} null (the config class's None default)", cf(family, **{key: None}), None)


def bool_cases(family: str, key: str, full: bool = True) -> None:
    at = f"config-key: {family} {key}"
    add(f"{at} the string 'false'", cf(family, **{key: "false"}), ArgumentTypeError, TypeError, _q(key),
        "true or false", "the string 'false'")
    add(f"{at} 1", cf(family, **{key: 1}), ArgumentTypeError, TypeError, _q(key), "true or false", "got 1")
    if not full:
        return
    add(f"{at} the string 'true'", cf(family, **{key: "true"}), ArgumentTypeError, TypeError, _q(key), "the string 'true'")
    add(f"{at} 0", cf(family, **{key: 0}), ArgumentTypeError, TypeError, _q(key), "got 0")
    add(f"{at} 0.0", cf(family, **{key: 0.0}), ArgumentTypeError, TypeError, _q(key), "got 0.0")
    add(f"{at} null", cf(family, **{key: None}), ArgumentTypeError, TypeError, _q(key), "null")
    add(f"{at} an empty list", cf(family, **{key: []}), ArgumentTypeError, TypeError, _q(key), "the list []")
    add(f"{at} an object", cf(family, **{key: {}}), ArgumentTypeError, TypeError, _q(key), "the object {}")
    add(f"{at} NaN", cf(family, **{key: float("nan")}), ArgumentTypeError, TypeError, _q(key), "NaN")


def number_cases(family: str, key: str, spec: dict[str, Any], full: bool = True) -> None:
    at = f"config-key: {family} {key}"
    add(f"{at} the string '0.1'", cf(family, **{key: "0.1"}), ArgumentTypeError, TypeError, _q(key), "the string '0.1'")
    add(f"{at} NaN", cf(family, **{key: float("nan")}), OptionError, ValueError, _q(key), "NaN")
    if not full:
        return
    add(f"{at} true", cf(family, **{key: True}), ArgumentTypeError, TypeError, _q(key), "the boolean true")
    add(f"{at} Infinity", cf(family, **{key: float("inf")}), OptionError, ValueError, _q(key), "Infinity")
    add(f"{at} -0.1", cf(family, **{key: -0.1}), OptionError, ValueError, _q(key), "[0, 1)", "-0.1")
    add(f"{at} 1.0", cf(family, **{key: 1.0}), OptionError, ValueError, _q(key), "[0, 1)", "1.0")
    add(f"{at} the integer 1", cf(family, **{key: 1}), OptionError, ValueError, _q(key), "[0, 1)", "got 1")
    add(f"{at} a list", cf(family, **{key: [0.1]}), ArgumentTypeError, TypeError, _q(key), "the list [0.1]")
    add(f"{at} an object", cf(family, **{key: {"p": 0.1}}), ArgumentTypeError, TypeError, _q(key), "the object")
    add(f"{at} the integer 0 (a JSON number)", cf(family, **{key: 0}), None)
    add(f"{at} 0.5", cf(family, **{key: 0.5}), None)
    if spec.get("null") == "ok":
        add(f"{at} null (the config class's None)", cf(family, **{key: None}), None)
    else:
        add(f"{at} null", cf(family, **{key: None}), ArgumentTypeError, TypeError, _q(key), "null")


def text_cases(family: str, key: str, full: bool = True) -> None:
    at = f"config-key: {family} {key}"
    add(f"{at} the number 5", cf(family, **{key: 5}), ArgumentTypeError, TypeError, _q(key), "a string", "got 5")
    if not full:
        return
    add(f"{at} true", cf(family, **{key: True}), ArgumentTypeError, TypeError, _q(key), "the boolean true")
    add(f"{at} a list", cf(family, **{key: ["gelu"]}), ArgumentTypeError, TypeError, _q(key), "the list ['gelu']")
    add(f"{at} an object", cf(family, **{key: {"name": "gelu"}}), ArgumentTypeError, TypeError, _q(key), "the object")
    add(f"{at} null", cf(family, **{key: None}), ArgumentTypeError, TypeError, _q(key), "null")
    add(f"{at} NaN", cf(family, **{key: float("nan")}), ArgumentTypeError, TypeError, _q(key), "NaN")


def key_cases(family: str, keys: dict[str, dict[str, Any]], full: bool = True) -> None:
    for key, spec in keys.items():
        kind = spec["kind"]
        if kind == "int":
            int_cases(family, key, spec, full)
        elif kind == "bool":
            bool_cases(family, key, full)
        elif kind == "number":
            number_cases(family, key, spec, full)
        else:
            text_cases(family, key, full)


for _family, _keys in FAMILY_KEYS.items():
    key_cases(_family, _keys if _family != "mixtral" else MIXTRAL_KEYS)
for _family in SHARED:
    key_cases(_family, DECODER_KEYS, full=False)

# keys every family reads besides its numbers: model_type, architectures, layer_types, _name_or_path
for _family in BASES:
    at = f"config-key: {_family}"
    add(f"{at} model_type the number 5", cf(_family, model_type=5), ArgumentTypeError, TypeError, "'model_type'",
        "got 5")
    add(f"{at} model_type a list", cf(_family, model_type=[_family]), ArgumentTypeError, TypeError, "'model_type'",
        "the list")
    add(f"{at} model_type missing", cf(_family, model_type=DROP), OptionError, ValueError, "needs the key 'model_type'")
    add(f"{at} model_type null", cf(_family, model_type=None), OptionError, ValueError, "needs the key 'model_type'")
    add(f"{at} architectures a string, not a list", cf(_family, architectures=base(_family)["architectures"][0]),
        ArgumentTypeError, TypeError, "'architectures'", "a list", "the string")
    add(f"{at} architectures [5]", cf(_family, architectures=[5]), ArgumentTypeError, TypeError, "'architectures'",
        "the list [5]")
    add(f"{at} architectures an object", cf(_family, architectures={"a": 1}), ArgumentTypeError, TypeError,
        "'architectures'", "the object")
    add(f"{at} architectures two names", cf(_family, architectures=["A", "B"]), OptionError, ValueError,
        "'architectures'", "one architecture")
    add(f"{at} architectures null (the family's default)", cf(_family, architectures=None), None)
    add(f"{at} architectures [] (the family's default)", cf(_family, architectures=[]), None)
    add(f"{at} _name_or_path the number 7", cf(_family, _name_or_path=7), ArgumentTypeError, TypeError,
        "'_name_or_path'", "got 7")
    add(f"{at} _name_or_path names the model", check(cf(_family, _name_or_path="org/model"), lambda m: m.name ==
        "org/model", "name"), None)
    add(f"{at} layer_types a string", cf(_family, layer_types="full_attention"), ArgumentTypeError, TypeError,
        "'layer_types'", "the string 'full_attention'")
    add(f"{at} layer_types [1]", cf(_family, layer_types=[1]), ArgumentTypeError, TypeError, "'layer_types'",
        "the list [1]")
    add(f"{at} layer_types null", cf(_family, layer_types=None), None)

# the keys whose presence routes a config to capture (their type is checked too; their off values are the closed form)
UNHONOURED_INT = ("num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size",
                  "cross_attention_hidden_size", "chunk_size_feed_forward")
UNHONOURED_FLOAT = ("attn_logit_softcapping", "final_logit_softcapping")
UNHONOURED_BOOL = ("add_cross_attention", "is_encoder_decoder", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn")
for _family in ("llama", "gpt2"):
    at = f"config-key: {_family}"
    for key in UNHONOURED_INT:
        add(f"{at} {key} the string '8'", cf(_family, **{key: "8"}), ArgumentTypeError, TypeError, _q(key),
            "the string '8'")
        add(f"{at} {key} true", cf(_family, **{key: True}), ArgumentTypeError, TypeError, _q(key), "the boolean true")
        add(f"{at} {key} 8.5", cf(_family, **{key: 8.5}), OptionError, ValueError, _q(key), "8.5")
        add(f"{at} {key} -1", cf(_family, **{key: -1}), OptionError, ValueError, _q(key), "got -1")
        add(f"{at} {key} 8 (not modelled: captured)", cf(_family, **{key: 8}), NotModelledError, ValueError, _q(key))
        add(f"{at} {key} 0 (off)", cf(_family, **{key: 0}), None)
        add(f"{at} {key} null (off)", cf(_family, **{key: None}), None)
    for key in UNHONOURED_FLOAT:
        add(f"{at} {key} the string '50'", cf(_family, **{key: "50"}), ArgumentTypeError, TypeError, _q(key),
            "the string '50'")
        add(f"{at} {key} NaN", cf(_family, **{key: float("nan")}), OptionError, ValueError, _q(key), "NaN")
        add(f"{at} {key} 50.0 (not modelled: captured)", cf(_family, **{key: 50.0}), NotModelledError, ValueError,
            _q(key))
        add(f"{at} {key} null (off)", cf(_family, **{key: None}), None)
    for key in UNHONOURED_BOOL:
        add(f"{at} {key} the string 'false'", cf(_family, **{key: "false"}), ArgumentTypeError, TypeError, _q(key),
            "the string 'false'")
        add(f"{at} {key} 0", cf(_family, **{key: 0}), ArgumentTypeError, TypeError, _q(key), "got 0")
        add(f"{at} {key} true (not modelled: captured)", cf(_family, **{key: True}), NotModelledError, ValueError,
            _q(key))
        add(f"{at} {key} false (off)", cf(_family, **{key: False}), None)

# the issue's own examples, through the public entry point, and the valid values beside them
GPT2_TIED = 124_439_808  # the published count (KerasHub, Radford et al. 2019)
GPT2_UNTIED = GPT2_TIED + 50257 * 768  # + an LM head of its own: 38,597,376 = 163,037,184
add("config-key: gpt2 tie_word_embeddings 'false' is refused, not counted as tied (the issue's example)",
    lambda: models.from_hf_config({**base("gpt2"), "tie_word_embeddings": "false"}), ArgumentTypeError, TypeError,
    "'tie_word_embeddings'", "true or false", "the string 'false'")
add("config-key: gpt2 tie_word_embeddings false counts the head: 163,037,184",
    check(lambda: models.from_hf_config({**base("gpt2"), "tie_word_embeddings": False}),
          lambda m: m.params == GPT2_UNTIED == 163_037_184, "params"), None)
add("config-key: gpt2 tie_word_embeddings true: 124,439,808",
    check(lambda: models.from_hf_config({**base("gpt2"), "tie_word_embeddings": True}),
          lambda m: m.params == GPT2_TIED, "params"), None)
add("config-key: llama num_hidden_layers 32.5 (the issue's example)",
    lambda: models.from_hf_config({**base("llama"), "num_hidden_layers": 32.5}), OptionError, ValueError,
    "'num_hidden_layers'", "32.5")
add("config-key: llama num_hidden_layers true is not 1 layer (the issue's example)",
    lambda: models.from_hf_config({**base("llama"), "num_hidden_layers": True}), ArgumentTypeError, TypeError,
    "'num_hidden_layers'", "the boolean true")
add("config-key: llama num_key_value_heads 0 is not the head count (the issue's example)",
    lambda: models.from_hf_config({**base("llama"), "num_key_value_heads": 0}), OptionError, ValueError,
    "'num_key_value_heads'", ">= 1", "got 0")
add("config-key: llama num_hidden_layers 32.0 (a JSON Schema integer) is 32 layers",
    check(cf("llama", num_hidden_layers=32.0), lambda m: type(m.layers) is int and m.layers == 32, "layers"), None)
add("config-key: llama num_hidden_layers 1 (the smallest model)",
    check(cf("llama", num_hidden_layers=1), lambda m: m.layers == 1, "layers"), None)
add("config-key: llama num_hidden_layers numpy int64 (a Python dict)",
    check(cf("llama", num_hidden_layers=np.int64(2)), lambda m: type(m.layers) is int and m.layers == 2, "layers"), None)
add("config-key: llama tie_word_embeddings numpy bool_",
    check(cf("llama", tie_word_embeddings=np.bool_(False)), lambda m: m.tie_embeddings is False, "tie"), None)
# null num_key_value_heads is LlamaConfig's None: as many KV heads as heads (32: 4096 x 4096 k and v projections)
add("config-key: llama num_key_value_heads null is multi-head attention",
    check(cf("llama", num_key_value_heads=None), lambda m: m.kv_heads == 32, "kv_heads"), None)
add("config-key: llama head_dim null is hidden_size / heads = 128",
    check(cf("llama", head_dim=None), lambda m: m.n_head_dim == 4096 // 32 == 128, "head_dim"), None)
add("config-key: mistral sliding_window the string '4096'", cf("mistral", sliding_window="4096"), ArgumentTypeError,
    TypeError, "'sliding_window'", "the string '4096'")
add("config-key: mistral sliding_window 0", cf("mistral", sliding_window=0), OptionError, ValueError,
    "'sliding_window'", ">= 1", "got 0")
add("config-key: mistral sliding_window 4096.5", cf("mistral", sliding_window=4096.5), OptionError, ValueError,
    "'sliding_window'", "4096.5")
add("config-key: mistral sliding_window true", cf("mistral", sliding_window=True), ArgumentTypeError, TypeError,
    "'sliding_window'", "the boolean true")
add("config-key: mistral sliding_window 4096 is the window",
    check(cf("mistral", sliding_window=4096), lambda m: m.sliding_window == 4096, "window"), None)
add("config-key: qwen2 sliding_window the string (unused, still a wrong type)", cf("qwen2", sliding_window="131072"),
    ArgumentTypeError, TypeError, "'sliding_window'", "the string '131072'")
add("config-key: qwen2 sliding_window used (use_sliding_window true) and 0", cf("qwen2", use_sliding_window=True,
    sliding_window=0), OptionError, ValueError, "'sliding_window'", "got 0")
# Qwen2Config: a window only from layer max_window_layers on (28 of qwen2.5-7b's 28 layers: none slides)
add("config-key: qwen2 use_sliding_window true with max_window_layers 28 of 28 layers: full attention",
    check(cf("qwen2", use_sliding_window=True), lambda m: m.sliding_window is None, "window"), None)
add("config-key: qwen2 use_sliding_window true with max_window_layers 0: every layer slides",
    check(cf("qwen2", use_sliding_window=True, max_window_layers=0), lambda m: m.sliding_window == 131072, "window"),
    None)
add("config-key: qwen2 use_sliding_window true with max_window_layers 14 (half the layers: not modelled)",
    cf("qwen2", use_sliding_window=True, max_window_layers=14), NotModelledError, ValueError, "'max_window_layers'")
add("config-key: qwen2 max_window_layers 'abc' (used)", cf("qwen2", use_sliding_window=True, max_window_layers="abc"),
    ArgumentTypeError, TypeError, "'max_window_layers'", "the string 'abc'")
add("config-key: gemma hidden_activation 5", cf("gemma", hidden_activation=5), ArgumentTypeError, TypeError,
    "'hidden_activation'", "got 5")
add("config-key: gemma hidden_activation null falls back to hidden_act", cf("gemma", hidden_activation=None), None)
add("config-key: bert position_embedding_type 'relative_key' (not modelled)",
    cf("bert", position_embedding_type="relative_key"), NotModelledError, ValueError, "'position_embedding_type'")
add("config-key: bert type_vocab_size 0 (no token-type table)",
    check(cf("bert", type_vocab_size=0), lambda m: m.token_types == 0, "token types"), None)
add("config-key: llama attention_bias and mlp_bias both true (biases everywhere)",
    check(cf("llama", attention_bias=True, mlp_bias=True), lambda m: m.bias == "all", "bias"), None)
add("config-key: llama hidden_act 'relu' (not modelled)", cf("llama", hidden_act="relu"), NotModelledError, ValueError,
    "'hidden_act'")
add("config-key: a dict with a non-string key", lambda: closed_form({**base("llama"), 3: "x"}), None)
add("config-key: name 5", lambda: closed_form(base("llama"), name=5), ArgumentTypeError, TypeError, "name", "got 5")

# ---- config-value: keys fine one by one, wrong together (named by their config keys) ------------------------

add("config-value: llama num_key_value_heads 5 does not divide 32 heads", cf("llama", num_key_value_heads=5), OptionError,
    ValueError, "'num_key_value_heads'", "'num_attention_heads'")
add("config-value: llama hidden_size 4097 not a multiple of 32 heads (no head_dim)", cf("llama", hidden_size=4097),
    OptionError, ValueError, "'hidden_size'", "'num_attention_heads'")
add("config-value: mixtral num_experts_per_tok 9 of 8 experts", cf("mixtral", num_experts_per_tok=9), OptionError,
    ValueError, "'num_experts_per_tok'", "'num_local_experts'")
add("config-value: gpt2 resid_pdrop 0.99 (fine)", cf("gpt2", resid_pdrop=0.99), None)
add("config-value: bert architectures BertModel with tie_word_embeddings true (no head to tie: untied, BertModel)",
    check(cf("bert", architectures=["BertModel"], tie_word_embeddings=True), lambda m: m.params == 109_482_240, "params"),
    None)

# ---- config-file: what a config path may name ------------------------------------------------------------------


def _file(name: str, content: bytes) -> str:
    path = ROOT / name
    path.write_bytes(content)
    return os.fspath(path)


def _deep(levels: int) -> bytes:
    """The gpt2 config with one key nested ``levels`` deep (the top object is level 1)."""
    data = base("gpt2")
    text = json.dumps(data)
    inner = "[" * (levels - 1) + "]" * (levels - 1)
    return (text[:-1] + ', "task_specific_params": ' + inner + "}").encode()


GPT2_BYTES = _base_text("gpt2").encode()
FIFO = os.fspath(ROOT / "config.fifo")
HAS_FIFO = hasattr(os, "mkfifo")
if HAS_FIFO:
    os.mkfifo(FIFO)
    os.symlink(FIFO, ROOT / "fifo-link.json")
os.symlink(_file("gpt2-target.json", GPT2_BYTES), ROOT / "gpt2-link.json")
(ROOT / "empty-folder").mkdir()
(ROOT / "pipe-folder").mkdir()
if HAS_FIFO:
    os.mkfifo(ROOT / "pipe-folder" / "config.json")
HUGE = ROOT / "huge.json"
with open(HUGE, "wb") as _f:  # a sparse file of 64 MiB: "{" then zeros (no disk, no time)
    _f.write(b"{")
    _f.truncate(64 * 2**20)

CONFIG_FILES: dict[str, tuple[str, tuple[str, ...]]] = {
    "binary bytes": (_file("binary.json", bytes(range(256)) * 4), ("UTF-8",)),
    "latin-1 text": (_file("latin1.json", '{"model_type": "gpt2", "note": "caf\xe9"}'.encode("latin-1")), ("UTF-8",)),
    "UTF-16 text": (_file("utf16.json", GPT2_BYTES.decode().encode("utf-16")), ("UTF-8",)),
    "nested 100,000 deep (RecursionError before)": (_file("deep.json", b"[" * 100_000 + b"]" * 100_000), ("deeper",)),
    "nested 65 deep": (_file("deep65.json", _deep(65)), ("deeper", "64")),
    "a 64 MiB file": (os.fspath(HUGE), ("MiB", "limit")),
    "an empty file": (_file("empty.json", b""), ("empty",)),
    "only whitespace": (_file("blank.json", b"  \n\t "), ("empty",)),
    "truncated JSON": (_file("cut.json", GPT2_BYTES[:100]), ("not valid JSON",)),
    "a JSON list": (_file("list.json", b"[1, 2]"), ("JSON object", "list")),
    "a JSON string": (_file("string.json", b'"gpt2"'), ("JSON object", "str")),
    "a 5000-digit integer (ValueError before)": (_file("digits.json", b'{"n_layer": ' + b"9" * 5000 + b"}"),
                                                 ("not valid JSON",)),
}
for label, (path, words) in CONFIG_FILES.items():
    add(f"config-file: {label}", (lambda p=path: models.from_hf_config(p)), OptionError, ValueError,
        os.path.basename(path), *words)
add("config-file: nested 64 deep (the limit) loads",
    check(lambda: models.from_hf_config(_file("deep64.json", _deep(64))), lambda m: m.params == GPT2_TIED, "params"), None)
add("config-file: a UTF-8 BOM", check(lambda: models.from_hf_config(_file("bom.json", b"\xef\xbb\xbf" + GPT2_BYTES)),
                                      lambda m: m.params == GPT2_TIED, "params"), None)
add("config-file: a symlink to a config", check(lambda: models.from_hf_config(ROOT / "gpt2-link.json"),
                                                lambda m: m.params == GPT2_TIED, "params"), None)
add("config-file: NaN for n_layer in the file", lambda: models.from_hf_config(_file(
    "nan.json", GPT2_BYTES.replace(b'"n_layer": 12', b'"n_layer": NaN'))), OptionError, ValueError, "'n_layer'", "NaN",
    "nan.json")
add("config-file: Infinity for n_embd in the file", lambda: models.from_hf_config(_file(
    "inf.json", GPT2_BYTES.replace(b'"n_embd": 768', b'"n_embd": Infinity'))), OptionError, ValueError, "'n_embd'",
    "Infinity", "inf.json")
add("config-file: 'false' for tie_word_embeddings in the file", lambda: models.from_hf_config(_file(
    "tie.json", GPT2_BYTES.replace(b'"n_layer": 12', b'"n_layer": 12, "tie_word_embeddings": "false"'))),
    ArgumentTypeError, TypeError, "'tie_word_embeddings'", "tie.json")
add("config-file: a folder without config.json", lambda: models.from_hf_config(ROOT / "empty-folder"), OptionError,
    ValueError, "config.json", "does not exist")
add("config-file: a missing path", lambda: models.from_hf_config(ROOT / "nope.json"), OptionError, ValueError,
    "nope.json", "does not exist")
add("config-file: an empty path", lambda: models.from_hf_config(""), OptionError, ValueError, "config", "empty")
add("config-file: a path with a NUL byte", lambda: models.from_hf_config("con\x00fig.json"), OptionError, ValueError,
    "config", "NUL")
add("config-file: a name too long", lambda: models.from_hf_config("x" * 5000 + ".json"), OptionError, ValueError,
    "cannot read config")
add("config-file: a bytes path", lambda: models.from_hf_config(b"config.json"), ArgumentTypeError, TypeError, "config")
add("config-file: /dev/null (a device)", lambda: models.from_hf_config("/dev/null"), OptionError, ValueError,
    "/dev/null", "not a regular file")
add("config-file: /dev/zero (a device)", lambda: models.from_hf_config("/dev/zero"), OptionError, ValueError,
    "/dev/zero", "not a regular file", seconds=3)
if HAS_FIFO:
    add("config-file: a named pipe (blocked forever before)", lambda: models.from_hf_config(FIFO), OptionError,
        ValueError, "config.fifo", "not a regular file", seconds=3)
    add("config-file: a symlink to a named pipe", lambda: models.from_hf_config(ROOT / "fifo-link.json"), OptionError,
        ValueError, "fifo-link.json", "not a regular file", seconds=3)
    add("config-file: a folder whose config.json is a named pipe", lambda: models.from_hf_config(ROOT / "pipe-folder"),
        OptionError, ValueError, "config.json", "not a regular file", seconds=3)
    add("config-file: solkit model on a named pipe", lambda: cli(["model", FIFO], 2), CLIError, ValueError,
        "config.fifo", "not a regular file", seconds=3)
add("config-file: solkit model on a binary config", lambda: cli(["model", CONFIG_FILES["binary bytes"][0]], 2), CLIError,
    ValueError, "binary.json", "UTF-8")
add("config-file: solkit model on a config with 'false' for a bool",
    lambda: cli(["model", _file("tie2.json", GPT2_BYTES.replace(b'"n_layer": 12', b'"n_layer": 12, '
                                                              b'"tie_word_embeddings": "false"'))], 2),
    CLIError, ValueError, "'tie_word_embeddings'")

# ---- data-file: profiles and the calibration's JSON files -------------------------------------------------------

from solkit import load_profile  # noqa: E402
from solkit.calibration.data import load_measurements  # noqa: E402
from solkit.calibration.programs import load_steps  # noqa: E402

if HAS_FIFO:
    add("data-file: load_profile of a named pipe (blocked forever before)", lambda: load_profile(FIFO, "h200"),
        MeasurementError, ValueError, "config.fifo", "not a regular file", seconds=3)
    add("data-file: load_profile of a symlink to a named pipe", lambda: load_profile(ROOT / "fifo-link.json", "h200"),
        MeasurementError, ValueError, "fifo-link.json", "not a regular file", seconds=3)
    add("data-file: load_profile of a list holding a named pipe", lambda: load_profile([FIFO], "h200"),
        MeasurementError, ValueError, "config.fifo", "not a regular file", seconds=3)
    add("data-file: solkit profile on a named pipe", lambda: cli(["profile", FIFO, "--gpu", "h200"], 2), CLIError,
        ValueError, "config.fifo", "not a regular file", seconds=3)
    add("data-file: load_measurements of a named pipe", lambda: load_measurements(FIFO), SpecError, ValueError,
        "config.fifo", "not a regular file", seconds=3)
    add("data-file: load_steps of a named pipe", lambda: load_steps(FIFO), SpecError, ValueError, "config.fifo",
        "not a regular file", seconds=3)
add("data-file: load_profile of /dev/zero (a device, read to the cap before)", lambda: load_profile("/dev/zero", "h200"),
    MeasurementError, ValueError, "/dev/zero", "not a regular file", seconds=3)
add("data-file: load_profile of /dev/null", lambda: load_profile("/dev/null", "h200"), MeasurementError, ValueError,
    "/dev/null", "not a regular file")
add("data-file: load_profile of a trace nested 100,000 deep", lambda: load_profile(
    _file("deep-trace.json", b'{"traceEvents": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"), "h200"), MeasurementError,
    ValueError, "deep-trace.json", "deep")
for label, content, words in [
    ("binary bytes", bytes(range(256)) * 4, ("UTF-8",)),
    ("nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000, ("deeper",)),
    ("a JSON list", b"[1, 2]", ("JSON object",)),
    ("truncated JSON", b'{"cases": [', ("not valid JSON",)),
    ("an empty file", b"", ("empty",)),
]:
    name = "data-" + label.replace(" ", "-").replace(",", "") + ".json"
    add(f"data-file: load_measurements of {label}", (lambda p=_file(name, content): load_measurements(p)), SpecError,
        ValueError, name, *words)
    add(f"data-file: load_steps of {label}", (lambda p=_file("s" + name, content): load_steps(p)), SpecError, ValueError,
        "s" + name, *words)
add("data-file: load_steps of an object that is not a step file", lambda: load_steps(_file("obj.json", b'{"a": 1}')),
    SpecError, ValueError, "obj.json")
add("data-file: load_measurements of a missing file", lambda: load_measurements(ROOT / "none.json"), SpecError,
    ValueError, "none.json")
add("data-file: load_steps of a missing file", lambda: load_steps(ROOT / "none.json"), SpecError, ValueError, "none.json")

# ---- transformer-field: models.Transformer's fields ---------------------------------------------------------------

T = models.Transformer
SMALL = dict(layers=2, d_model=512, heads=8, vocab=1000)
MOE = dict(SMALL, experts=8, top_k=2)


def tf(_base: dict[str, Any] = SMALL, **fields: Any) -> Callable[[], Any]:
    return lambda: T(**{**_base, **fields})


INT_FIELDS = {  # field: (minimum, required, the base it needs)
    "layers": (1, True, SMALL), "d_model": (1, True, SMALL), "heads": (1, True, SMALL), "vocab": (1, True, SMALL),
    "kv_heads": (1, False, SMALL), "head_dim": (1, False, SMALL), "ffn": (1, False, SMALL),
    "max_positions": (1, False, SMALL), "sliding_window": (1, False, SMALL), "token_types": (0, False, SMALL),
    "experts": (0, False, SMALL), "top_k": (1, False, MOE), "expert_parallel": (1, False, MOE),
}
for field, (minimum, required, fb) in INT_FIELDS.items():
    at = f"transformer-field: {field}"
    add(f"{at}=True", tf(fb, **{field: True}), ArgumentTypeError, TypeError, field, "an integer", "True")
    add(f"{at}=False", tf(fb, **{field: False}), ArgumentTypeError, TypeError, field, "False")
    add(f"{at}='2'", tf(fb, **{field: "2"}), ArgumentTypeError, TypeError, field, "'2'")
    # a whole float is its integer (as a shape's dims take it); a fraction, inf or NaN a bad number (a ValueError)
    whole = 512.0 if field == "d_model" else 2.0  # d_model 2 would not split over 8 heads
    add(f"{at}={whole} (a whole float) is {whole:.0f}", check(tf(fb, **{field: whole}), lambda m, f=field, w=whole:
                                                         type(getattr(m, f)) is int and getattr(m, f) == w, field), None)
    add(f"{at}=2.5", tf(fb, **{field: 2.5}), OptionError, ValueError, field, "whole number", "2.5")
    add(f"{at}=inf", tf(fb, **{field: math.inf}), OptionError, ValueError, field, "inf")
    add(f"{at}=nan", tf(fb, **{field: math.nan}), OptionError, ValueError, field, "nan")
    add(f"{at}=[2]", tf(fb, **{field: [2]}), ArgumentTypeError, TypeError, field, "[2]")
    add(f"{at}=-1", tf(fb, **{field: -1}), OptionError, ValueError, field, f">= {minimum}", "-1")
    if minimum == 1:
        add(f"{at}=0", tf(fb, **{field: 0}), OptionError, ValueError, field, ">= 1", "0")
    add(f"{at}=2**60", tf(fb, **{field: 2**60}), ShapeError, ValueError, field, "2**53")
    add(f"{at}=10**400", tf(fb, **{field: 10**400}), ShapeError, ValueError, field, "2**53")
    add(f"{at}=numpy float64 {whole} is {whole:.0f}", check(tf(fb, **{field: np.float64(whole)}), lambda m, f=field,
                                                           w=whole: type(getattr(m, f)) is int and getattr(m, f) == w,
                                                           field), None)
    add(f"{at}=numpy bool_", tf(fb, **{field: np.bool_(True)}), ArgumentTypeError, TypeError, field)
    if required or field in ("token_types", "experts", "top_k", "expert_parallel"):  # None is no integer
        add(f"{at}=None", tf(fb, **{field: None}), ArgumentTypeError, TypeError, field, "None")
    else:  # None: spelled out from the others (kv_heads = heads, head_dim = d_model / heads, ffn = 4 d_model) or none
        add(f"{at}=None (the default)", tf(fb, **{field: None}), None)
# numpy integers are integers (issue 29, class 11: np.int64 must not be refused); 2 layers of 512 wide, heads 8 of 64
add("transformer-field: layers=numpy int64 2 is 2 layers",
    check(tf(layers=np.int64(2)), lambda m: type(m.layers) is int and m.layers == 2, "layers"), None)
add("transformer-field: heads=numpy int32 8 spells out head_dim 512 / 8 = 64",
    check(tf(heads=np.int32(8)), lambda m: m.heads == 8 and m.head_dim == 64 and m.kv_heads == 8, "heads"), None)
add("transformer-field: the issue's layers=True", lambda: T(layers=True, d_model=512, heads=8, vocab=1000),
    ArgumentTypeError, TypeError, "layers", "True")
add("transformer-field: the issue's layers='32'", lambda: T(layers="32", d_model=512, heads=8, vocab=1000),
    ArgumentTypeError, TypeError, "layers", "'32'")

BOOL_FIELDS = ("embedding_norm", "tie_embeddings", "causal", "pooler")
for field in BOOL_FIELDS:
    at = f"transformer-field: {field}"
    for value, shown in [("false", "'false'"), ("true", "'true'"), (1, "1"), (0, "0"), (None, "None"), ([], "[]"),
                         (0.0, "0.0")]:
        add(f"{at}={shown}", tf(**{field: value}), ArgumentTypeError, TypeError, field, "True or False", shown)
    add(f"{at}=numpy bool_ False", check(tf(**{field: np.bool_(False)}), lambda m, f=field: getattr(m, f) is False,
                                         field), None)
add("transformer-field: tie_embeddings=True ties (a GPT-style head counts once)",
    check(tf(tie_embeddings=True), lambda m: m.head_params == 0, "head"), None)

FLOAT_FIELDS = {"dropout": SMALL, "attention_dropout": SMALL, "capacity_factor": MOE}
for field, fb in FLOAT_FIELDS.items():
    at = f"transformer-field: {field}"
    add(f"{at}=True", tf(fb, **{field: True}), ArgumentTypeError, TypeError, field, "a number", "True")
    add(f"{at}='0.1'", tf(fb, **{field: "0.1"}), ArgumentTypeError, TypeError, field, "'0.1'")
    add(f"{at}=[0.1]", tf(fb, **{field: [0.1]}), ArgumentTypeError, TypeError, field, "[0.1]")
    add(f"{at}=inf", tf(fb, **{field: math.inf}), OptionError, ValueError, field, "finite", "inf")
    add(f"{at}=-inf", tf(fb, **{field: -math.inf}), OptionError, ValueError, field, "-inf")
    add(f"{at}=nan", tf(fb, **{field: math.nan}), OptionError, ValueError, field, "nan")
    add(f"{at}=-0.1", tf(fb, **{field: -0.1}), OptionError, ValueError, field, "-0.1")
    add(f"{at}=numpy float64 0.5", check(tf(fb, **{field: np.float64(0.5)}), lambda m, f=field: type(getattr(m, f)) is
                                         float and getattr(m, f) == 0.5, field), None)
    add(f"{at}=complex", tf(fb, **{field: 0.5j}), ArgumentTypeError, TypeError, field)
add("transformer-field: the issue's capacity_factor=inf", tf(MOE, capacity_factor=math.inf), OptionError, ValueError,
    "capacity_factor", "inf")
add("transformer-field: dropout=1.0", tf(dropout=1.0), OptionError, ValueError, "dropout", "[0, 1)", "1.0")
add("transformer-field: dropout=0 (an int: a number)", check(tf(dropout=0), lambda m: m.dropout == 0.0, "dropout"), None)
add("transformer-field: capacity_factor=0", tf(MOE, capacity_factor=0), OptionError, ValueError, "capacity_factor", "> 0")
add("transformer-field: capacity_factor=1 (an int)", check(tf(MOE, capacity_factor=1), lambda m: m.capacity_factor == 1.0,
                                                           "capacity_factor"), None)
add("transformer-field: capacity_factor=None (no capacity limit)", tf(MOE, capacity_factor=None), None)
add("transformer-field: dropout=None", tf(dropout=None), ArgumentTypeError, TypeError, "dropout", "None")

LITERAL_FIELDS = {"family": "llama", "mlp": "swiglu", "norm": "rmsnorm", "norm_position": "pre", "positions": "rotary",
                  "bias": "none", "head": "lm"}
for field, good in LITERAL_FIELDS.items():
    at = f"transformer-field: {field}"
    add(f"{at}=5", tf(**{field: 5}), ArgumentTypeError, TypeError, field, "5")
    add(f"{at}=None", tf(**{field: None}), ArgumentTypeError, TypeError, field, "None")
    add(f"{at}=True", tf(**{field: True}), ArgumentTypeError, TypeError, field, "True")
    add(f"{at}=a misspelling", tf(**{field: good[:-1]}), OptionError, ValueError, field, repr(good[:-1]),
        f"did you mean {good!r}")
    add(f"{at}=bytes", tf(**{field: good.encode()}), ArgumentTypeError, TypeError, field)
add("transformer-field: the issue's causal='false'", tf(causal="false"), ArgumentTypeError, TypeError, "causal",
    "'false'")
for field in ("name", "source"):
    add(f"transformer-field: {field}=5", tf(**{field: 5}), ArgumentTypeError, TypeError, field, "a string", "5")
    add(f"transformer-field: {field}=b'x'", tf(**{field: b"x"}), ArgumentTypeError, TypeError, field, "b'x'")
add("transformer-field: name=None", tf(name=None), ArgumentTypeError, TypeError, "name", "None")
add("transformer-field: source=None (the default)", tf(source=None), None)
add("transformer-field: positional arguments", lambda: T(2, 512, 8, 1000), ArgumentTypeError, TypeError,
    "Transformer", "keyword", "layers=")
add("transformer-field: one positional dict", lambda: T(SMALL), ArgumentTypeError, TypeError, "Transformer", "keyword",
    "Transformer(**fields)")
add("transformer-field: a misspelt field", tf(layer=2), ArgumentTypeError, TypeError, "'layer'", "did you mean 'layers'")
add("transformer-field: a field of another record", tf(batch=2), ArgumentTypeError, TypeError, "'batch'", "fields:")
add("transformer-field: with_(layers=True)", lambda: T(**SMALL).with_(layers=True), ArgumentTypeError, TypeError,
    "layers", "True")
add("transformer-field: with_(causal='false')", lambda: T(**SMALL).with_(causal="false"), ArgumentTypeError, TypeError,
    "causal")
add("transformer-field: with_ positional", lambda: T(**SMALL).with_(3), ArgumentTypeError, TypeError, "with_")
add("transformer-field: model_validate with a bool layer count",
    lambda: T.model_validate({**SMALL, "layers": True}), ArgumentTypeError, TypeError, "layers", "True")
add("transformer-field: model_validate of a list", lambda: T.model_validate([1, 2]), ArgumentTypeError, TypeError,
    "Transformer")
add("transformer-field: model_validate of valid fields", check(lambda: T.model_validate(SMALL),
                                                              lambda m: m == T(**SMALL), "equal"), None)
add("transformer-field: a preset with_(layers=numpy int64 4)",
    check(lambda: models.preset("gpt2").with_(layers=np.int64(4)), lambda m: m.layers == 4, "layers"), None)
add("transformer-field: heads=8 kv_heads=numpy int64 2 (GQA)",
    check(tf(kv_heads=np.int64(2)), lambda m: m.kv_width == 2 * 64, "kv width"), None)
