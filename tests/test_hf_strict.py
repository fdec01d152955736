"""Strict reading (issue 29, classes 1-3): config values by their JSON types, files by kind, size, encoding and depth,
``Transformer`` fields as strict as ``Kernel``'s; hypothesis over random config dicts and random fields."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solkit import models
from solkit._files import MAX_JSON_DEPTH, parse_json, read_bytes, read_json
from solkit.errors import ArgumentTypeError, NotModelledError, OptionError, ShapeError, SolkitError
from solkit.models.hf import MAX_CONFIG_BYTES, closed_form, load_config

HF = Path(__file__).parent / "data" / "hf_configs"
BASES = {"llama": "llama3-8b.json", "mistral": "mistral-7b-v0.3.json", "qwen2": "qwen2.5-7b.json", "gemma": "gemma-7b.json",
         "mixtral": "mixtral-8x7b.json", "gpt2": "gpt2.json", "bert": "bert-base-uncased.json"}
CONFIGS = {family: json.loads((HF / file).read_text()) for family, file in BASES.items()}
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- the keys each family reads, their JSON kind (written from transformers' config classes, independently of the
# code): int (minimum), bool, number (a dropout: [0, 1)), text; nullable where the class takes None ----------------

DECODER = {
    "num_hidden_layers": ("int", 1, False), "hidden_size": ("int", 1, False), "num_attention_heads": ("int", 1, False),
    "intermediate_size": ("int", 1, False), "vocab_size": ("int", 1, False), "num_key_value_heads": ("int", 1, True),
    "head_dim": ("int", 1, True), "tie_word_embeddings": ("bool", None, False), "attention_bias": ("bool", None, False),
    "mlp_bias": ("bool", None, False), "use_sliding_window": ("bool", None, False),
    "attention_dropout": ("number", None, True), "hidden_act": ("text", None, False),
}
KEYS = {
    "llama": DECODER, "mistral": DECODER, "qwen2": DECODER, "gemma": DECODER,
    "mixtral": {**DECODER, "num_local_experts": ("int", 1, False), "num_experts_per_tok": ("int", 1, False)},
    "gpt2": {"n_layer": ("int", 1, False), "n_embd": ("int", 1, False), "n_head": ("int", 1, False),
             "n_positions": ("int", 1, False), "vocab_size": ("int", 1, False), "n_inner": ("int", 1, True),
             "tie_word_embeddings": ("bool", None, False), "resid_pdrop": ("number", None, False),
             "attn_pdrop": ("number", None, False), "activation_function": ("text", None, False)},
    "bert": {"num_hidden_layers": ("int", 1, False), "hidden_size": ("int", 1, False),
             "num_attention_heads": ("int", 1, False), "intermediate_size": ("int", 1, False),
             "vocab_size": ("int", 1, False), "max_position_embeddings": ("int", 1, False),
             "type_vocab_size": ("int", 0, False), "tie_word_embeddings": ("bool", None, False),
             "hidden_dropout_prob": ("number", None, False), "attention_probs_dropout_prob": ("number", None, False),
             "hidden_act": ("text", None, False)},
}
#: config key -> the Transformer field it sets as is (per family), for the "no coercion" check of a returned model
DIRECT = {"num_hidden_layers": "layers", "n_layer": "layers", "hidden_size": "d_model", "n_embd": "d_model",
          "num_attention_heads": "heads", "n_head": "heads", "vocab_size": "vocab", "intermediate_size": "ffn",
          "max_position_embeddings": "max_positions", "n_positions": "max_positions", "type_vocab_size": "token_types",
          "num_local_experts": "experts", "num_experts_per_tok": "top_k"}

JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-3, max_value=70), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 0.1, 0.5, 0.999, 1.0, 32.0, 64.0, 2.5]),
    st.integers(min_value=1, max_value=64).map(lambda n: n + 0.5), st.floats(min_value=0, max_value=100),
    st.text(max_size=8), st.sampled_from(["32", "true", "false", "silu", "gelu", "gelu_new", "NaN", ""]),
)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                  st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                           max_leaves=6)


def _json_type(value: Any) -> str:
    """JSON's name of a value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _verdict(kind: str, minimum: Any, nullable: bool, value: Any) -> str:
    """'ok', 'type' (a wrong JSON type: ArgumentTypeError) or 'value' (a bad value: OptionError) of one key's value."""
    if value is None:
        return "ok" if nullable else "null"
    t = _json_type(value)
    if kind == "int":
        if t != "number":
            return "type"
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            return "value"
        return "ok" if minimum <= value <= 2**53 else "value"
    if kind == "bool":
        return "ok" if t == "boolean" else "type"
    if kind == "number":
        if t != "number":
            return "type"
        return "ok" if math.isfinite(value) and 0 <= value < 1 else "value"
    return "ok" if t == "string" else "type"


@st.composite
def changed_configs(draw: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    family = draw(st.sampled_from(sorted(KEYS)))
    keys = draw(st.lists(st.sampled_from(sorted(KEYS[family])), min_size=1, max_size=4, unique=True))
    changes = {k: draw(JSON_VALUES) for k in keys}
    return family, changes, {**CONFIGS[family], **changes}


@FAST
@given(changed_configs())
def test_random_config_values_end_in_a_model_or_a_solkit_error_and_never_coerce(case):
    """Valid keys with random JSON values: a Transformer or an OptionError/ArgumentTypeError, never a foreign error;
    a returned model took every changed value by its JSON type (no "false" read as true, no 32.5 as 32)."""
    family, changes, config = case
    try:
        m = closed_form(config)
    except (ArgumentTypeError, OptionError):
        return
    for key, value in changes.items():
        kind, minimum, nullable = KEYS[family][key]
        assert _verdict(kind, minimum, nullable, value) == "ok", f"{key}={value!r} was taken"
        if key in DIRECT and value is not None:
            got = getattr(m, DIRECT[key])
            assert type(got) is int and got == value, f"{key}={value!r} became {got!r}"
        if key == "tie_word_embeddings":
            assert m.tie_embeddings == (value and m.head != "none")


@FAST
@given(st.sampled_from(sorted(KEYS)), st.data())
def test_one_bad_value_is_refused_by_its_class_naming_the_key(family, data):
    """One key given a random value: a wrong JSON type is an ArgumentTypeError, a bad value an OptionError (null for
    a key with no default: "needs the key"), each naming the key; a valid value returns or names the key."""
    key = data.draw(st.sampled_from(sorted(KEYS[family])))
    value = data.draw(JSON_VALUES)
    kind, minimum, nullable = KEYS[family][key]
    verdict = _verdict(kind, minimum, nullable, value)
    expected = {"type": ArgumentTypeError, "value": OptionError, "null": (OptionError, ArgumentTypeError)}
    try:
        closed_form({**CONFIGS[family], key: value})
    except SolkitError as exc:
        assert repr(key) in str(exc), str(exc)
        if verdict == "ok":  # fine alone, refused with the others (a width the heads do not divide) or not modelled
            assert isinstance(exc, OptionError), str(exc)
        else:
            assert isinstance(exc, expected[verdict]), f"{key}={value!r}: {type(exc).__name__}: {exc}"
            assert not isinstance(exc, NotModelledError), str(exc)
        return
    assert verdict == "ok", f"{key}={value!r} was taken"


def test_the_issues_gpt2_example():
    """GPT-2 with tie_word_embeddings "false" is refused; false counts its head: 124,439,808 + 50257 x 768 = 163,037,184."""
    gpt2 = CONFIGS["gpt2"]
    with pytest.raises(ArgumentTypeError, match="'tie_word_embeddings' must be true or false .* the string 'false'"):
        models.from_hf_config({**gpt2, "tie_word_embeddings": "false"})
    assert models.from_hf_config({**gpt2, "tie_word_embeddings": False}).params == 163_037_184
    assert models.from_hf_config(gpt2).params == 124_439_808


def test_family_defaults_of_missing_keys():
    """A key missing takes its transformers config class's default: MistralConfig 8 KV heads, Qwen2Config 32,
    GemmaConfig 16 KV heads of head_dim 256; LlamaConfig None (= the 32 heads)."""
    def without(family: str, *keys: str) -> models.Transformer:
        return closed_form({k: v for k, v in CONFIGS[family].items() if k not in keys})

    assert without("llama", "num_key_value_heads").kv_heads == 32
    assert without("mistral", "num_key_value_heads").kv_heads == 8
    with pytest.raises(OptionError, match="'num_key_value_heads'"):  # 28 heads, the class's 32 KV heads: no GQA
        without("qwen2", "num_key_value_heads")
    gemma = without("gemma", "head_dim", "num_key_value_heads")
    assert (gemma.kv_heads, gemma.head_dim) == (16, 256)


# ---- files: kind, size, encoding, depth (solkit._files) ------------------------------------------------------------


def test_size_cap_is_exact(tmp_path):
    """A file of exactly the cap is read; one byte more is refused before reading (the size), naming the file."""
    path = tmp_path / "f.json"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, "config", 100, OptionError)[0] == b"x" * 100
    with pytest.raises(OptionError, match=r"f.json.*over the .* limit.*: 100 bytes"):
        read_bytes(path, "config", 99, OptionError)


def test_depth_limit_is_exact():
    """Nesting of exactly MAX_JSON_DEPTH (64) levels parses; 65 is refused; 100,000 (a RecursionError inside json) too."""
    assert MAX_JSON_DEPTH == 64
    ok = "[" * 64 + "]" * 64
    assert parse_json(ok, "p", "config", OptionError) == json.loads(ok)
    with pytest.raises(OptionError, match="deeper than 64"):
        parse_json("[" * 65 + "]" * 65, "p", "config", OptionError)
    with pytest.raises(OptionError, match="deeper than 64"):
        parse_json("[" * 100_000 + "]" * 100_000, "p", "config", OptionError)
    assert parse_json('{"a": "[[[[" }', "p", "config", OptionError, max_depth=1) == {"a": "[[[["}  # brackets in text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_is_refused_without_blocking(tmp_path):
    """open() of a FIFO blocks until a writer comes: refused from its stat, and again after a non-blocking open."""
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    for read in (lambda: load_config(fifo), lambda: load_config(tmp_path)):
        with pytest.raises(OptionError, match="not a regular file"):
            read()


def test_config_cap_and_encoding(tmp_path):
    """The config cap is 4 MiB (a config is a few KB); not UTF-8 is an OptionError naming the file and the byte."""
    assert MAX_CONFIG_BYTES == 4 * 2**20
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_CONFIG_BYTES + 1)
    with pytest.raises(OptionError, match="big.json.*4 MiB limit"):
        load_config(big)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"note": "caf\xe9"}'.encode("latin-1"))
    # '{"note": "caf' is 1 + 6 + 1 + 1 + 4 = 13 bytes, so the e-acute (0xe9) is byte 13, counting from 0
    with pytest.raises(OptionError, match=r"latin.json.* not UTF-8 text \(byte 13: b'\\xe9'\)"):
        load_config(latin)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_as_a_config_file(tmp_path_factory, content):
    """Any bytes as config.json: a dict, or an OptionError/ArgumentTypeError (never a foreign error)."""
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_bytes(content)
    try:
        data, where = read_json(path, "config", MAX_CONFIG_BYTES, OptionError)
    except OptionError:
        return
    assert where == str(path)
    try:
        closed_form(path)
    except (OptionError, ArgumentTypeError):
        pass


# ---- Transformer fields -------------------------------------------------------------------------------------------------

SMALL = dict(layers=2, d_model=512, heads=8, vocab=1000)
INT_FIELDS = {"layers": 1, "d_model": 1, "heads": 1, "vocab": 1, "kv_heads": 1, "head_dim": 1, "ffn": 1,
              "max_positions": 1, "sliding_window": 1, "token_types": 0, "experts": 0}
BOOL_FIELDS = ("embedding_norm", "tie_embeddings", "causal", "pooler")
FLOAT_FIELDS = ("dropout", "attention_dropout")
PY_VALUES = st.one_of(
    JSON_SCALARS, st.sampled_from([np.int64(8), np.int32(2), np.bool_(True), np.float64(0.5), 0.5j, b"x", (1, 2)]),
    st.lists(st.integers(0, 9), max_size=2),
)


def _field_verdict(field: str, value: Any) -> str:
    """'ok', 'type', 'value' or 'big' of one field's value, by Python's types (numpy's scalars are what they are)."""
    is_bool = isinstance(value, (bool, np.bool_))
    if field in INT_FIELDS:
        if value is None:
            return "ok" if field in ("kv_heads", "head_dim", "ffn", "max_positions", "sliding_window") else "type"
        if is_bool or not isinstance(value, (int, float, np.integer, np.floating)):
            return "type"
        if isinstance(value, (float, np.floating)) and not (math.isfinite(value) and float(value).is_integer()):
            return "value"  # a fraction, inf or NaN; a whole float is its integer
        if field == "d_model" and INT_FIELDS[field] <= value and 4 * value > 2**53:
            return "big"  # SMALL gives no ffn: its default, 4 x d_model, is beyond 2**53
        return "value" if value < INT_FIELDS[field] else "big" if value > 2**53 else "ok"  # beyond 2**53: a ShapeError
    if field in BOOL_FIELDS:
        return "ok" if is_bool else "type"
    if is_bool or not isinstance(value, (int, float, np.integer, np.floating)):
        return "type"
    return "ok" if math.isfinite(value) and 0 <= value < 1 else "value"


@FAST
@given(st.sampled_from(sorted([*INT_FIELDS, *BOOL_FIELDS, *FLOAT_FIELDS])), PY_VALUES)
def test_random_transformer_fields(field, value):
    """One field given a random value: a wrong type is an ArgumentTypeError, a bad value an OptionError, each naming
    the field; a returned model holds the value unchanged, as an int, bool or float (nothing coerced)."""
    verdict = _field_verdict(field, value)
    try:
        m = models.Transformer(**{**SMALL, field: value})
    except SolkitError as exc:
        assert field in str(exc), str(exc)
        if verdict == "ok":  # fine alone, refused with the others (heads 8 and kv_heads 3, experts and top_k 2, ...)
            assert isinstance(exc, OptionError), str(exc)
        else:
            expected = {"type": ArgumentTypeError, "value": OptionError, "big": ShapeError}[verdict]
            assert isinstance(exc, expected), f"{type(exc)}: {exc}"
        return
    assert verdict == "ok", f"{field}={value!r} was taken"
    got = getattr(m, field)
    if value is not None:
        kind = int if field in INT_FIELDS else bool if field in BOOL_FIELDS else float
        assert type(got) is kind and got == value, f"{field}={value!r} became {got!r}"


def test_a_d_model_whose_default_ffn_is_too_large_names_d_model():
    """d_model = 2**51 + 1 is fine alone, but its default ffn is 4 x d_model = 2**53 + 4 > 2**53: a ShapeError (as
    every figure beyond 2**53) naming d_model (hypothesis found it named only ffn); given an ffn, the same d_model is
    taken."""
    d_model = 2**51 + 1
    with pytest.raises(ShapeError, match=r"d_model=2251799813685249 makes ffn's default .* = 9007199254740996"):
        models.Transformer(**{**SMALL, "d_model": d_model, "heads": 1})
    assert models.Transformer(**{**SMALL, "d_model": d_model, "heads": 1, "ffn": 8}).ffn == 8


def test_positional_arguments_name_the_keywords():
    """Transformer(2, 512, 8, 1000) is an ArgumentTypeError saying it takes keywords (a TypeError, as Python's)."""
    with pytest.raises(ArgumentTypeError, match="keyword arguments only"):
        models.Transformer(2, 512, 8, 1000)
