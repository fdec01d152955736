"""Capture's safety: it leaves torch, the caller's objects and configs as they were; host reads counted as eager runs
them; bad configs and heads refused by name; ``solkit model`` of a captured config."""

from __future__ import annotations

import threading
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="capture needs PyTorch (pip install torch==2.13.0, the CPU build)")
transformers = pytest.importorskip("transformers", reason="capturing a config needs transformers")

from solkit.capture import capture, hf_model  # noqa: E402
from solkit.cli import main  # noqa: E402
from solkit.errors import ArgumentTypeError, OptionError  # noqa: E402

TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 128}


def test_reads_with_no_launch_between_are_one_stall():
    """``.cpu()`` after a launch is one stall; ``.tolist()`` of a view right after reads each element but the host
    waits once (no launch between); a read after a new launch is another."""
    def f(x: Any) -> Any:
        x.argmax(-1).cpu()
        x[:4].tolist()
        y = x * 2
        y.sum().item()
        return y

    assert capture(f, torch.randn(8, 16)).recipe.syncs == 2  # after argmax; after mul and sum


def test_concurrent_captures_leave_torch_as_it_was():
    """Two threads capturing at once run one after the other; afterwards torch's autocast is its own again."""
    before = (torch.is_autocast_enabled, torch.autocast.__init__)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                capture(torch.nn.Linear(16, 16), torch.randn(4, 16))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and (torch.is_autocast_enabled, torch.autocast.__init__) == before
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("cpu") and not torch.is_autocast_enabled("cuda")


def test_overrides_leave_the_callers_config_alone():
    """hf_model(cfg, num_hidden_layers=1) builds a 1-layer model; the caller's config still has its 2 layers."""
    cfg = transformers.AutoConfig.for_model(**TINY)
    assert hf_model(cfg, num_hidden_layers=1).layers == 1
    assert cfg.num_hidden_layers == 2


def test_a_head_that_is_no_language_model_is_refused():
    """A sequence classifier is not silently built as a causal LM: refused, naming the class and what is modelled."""
    with pytest.raises(OptionError, match=r"'LlamaForSequenceClassification' is not modelled.*ForCausalLM"):
        hf_model({**TINY, "architectures": ["LlamaForSequenceClassification"]})


def test_transformers_refusals_are_solkit_errors():
    """A value transformers refuses (no heads) or an unknown model_type is one solkit error line, not its traceback."""
    with pytest.raises((OptionError, ArgumentTypeError), match="transformers"):
        hf_model({**TINY, "num_attention_heads": 0})
    with pytest.raises(OptionError, match=r"^config model_type 'llamax' is not known to the installed transformers"):
        hf_model({**TINY, "model_type": "llamax"})
    try:
        hf_model({**TINY, "model_type": "llamax"})
    except OptionError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 300  # the first sentence, not transformers' list of every model


def test_solkit_model_of_a_captured_config(tmp_path, capsys):
    """`solkit model CONFIG --train` of a config without a closed form: the captured step, its coverage and peak."""
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "model_type": "qwen3", "head_dim": 16}))
    assert main(["model", str(path), "--train", "--batch", "1", "--seq", "32", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert ": captured" in out and "training step' on h200-sxm" in out  # the Prediction's summary head
    assert "coverage " in out and "the captured program's peak of live tensors" in out
