"""The programs that ``record.py`` profiles: each builder returns a ``Program`` (one step to run, its config).

No solkit import here: these run on the device machine with torch, transformers and torchvision only.
Every builder takes ``(torch, device, small, shared, batch=None)``: ``small`` swaps in tiny configs (the CPU
dry run), ``shared`` is a dict that the two Llama programs use to share one model (cleared by the runner),
``batch`` overrides the default batch (``record.py --batch NAME=N``; the two Llama programs share theirs).
"""

from __future__ import annotations

import copy
import inspect
import json
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Program:
    """One step to profile: ``reset()`` runs before every step (untimed, unprofiled), ``step()`` is the step."""

    step: Callable[[], Any]
    config: dict[str, Any]
    reset: Callable[[], None] = field(default=lambda: None)


def _hf_config_dict(config: Any) -> dict[str, Any]:
    """A JSON-safe dict of a transformers config (``to_json_string`` drops defaults' noise the same way HF saves)."""
    return json.loads(config.to_json_string(use_diff=False))


def _autocast(torch: Any, device: str) -> Any:
    return torch.autocast(device_type=device, dtype=torch.bfloat16)


def _adamw(torch: Any, params: Any, device: str) -> tuple[Any, dict[str, Any]]:
    """AdamW, fused where this torch and device have it (else foreach); the dict says which."""
    kwargs = dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    if device == "cuda":
        try:
            return torch.optim.AdamW(params, fused=True, **kwargs), {"name": "AdamW", "impl": "fused", **kwargs}
        except (TypeError, RuntimeError, ValueError) as err:  # pragma: no cover - old torch
            fallback = f"fused unavailable: {err}"
            return torch.optim.AdamW(params, foreach=True, **kwargs), {
                "name": "AdamW", "impl": "foreach", "note": fallback, **kwargs}
    return torch.optim.AdamW(params, foreach=False, **kwargs), {"name": "AdamW", "impl": "for-loop (cpu)", **kwargs}


# --------------------------------------------------------------------------- BERT


def build_bert_train(torch: Any, device: str, small: bool, shared: dict[str, Any],
                     batch: int | None = None) -> Program:
    """HF BertForMaskedLM (bert-base defaults, random init), bf16 autocast, AdamW; MLM labels on every token."""
    from transformers import BertConfig, BertForMaskedLM

    if small:
        config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                            vocab_size=1000, max_position_embeddings=128, attn_implementation="sdpa")
        default, seq = 2, 32
    else:
        config = BertConfig(attn_implementation="sdpa")  # 12 layers, d 768, 12 heads, ffn 3072, vocab 30522
        default, seq = 8, 512
    batch = batch or default
    torch.manual_seed(0)
    model = BertForMaskedLM(config).to(device).train()
    opt, opt_info = _adamw(torch, model.parameters(), device)
    gen = torch.Generator(device="cpu").manual_seed(1)
    input_ids = torch.randint(0, config.vocab_size, (batch, seq), generator=gen).to(device)
    labels = input_ids.clone()  # MLM labels over all tokens (no -100): the loss covers batch*seq tokens

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with _autocast(torch, device):
            out = model(input_ids=input_ids, labels=labels)  # no attention_mask: SDPA may use flash
        out.loss.backward()
        opt.step()

    cfg = {
        "model": "transformers.BertForMaskedLM",
        "model_config": _hf_config_dict(config),
        "attn_implementation": model.config._attn_implementation,
        "params": sum(p.numel() for p in model.parameters()),
        "batch": batch, "seq": seq, "tokens": batch * seq,
        "weights_dtype": "fp32", "autocast": "bf16", "dtype": "bf16 autocast (fp32 master weights)",
        "optimizer": opt_info,
        "step": "zero_grad(set_to_none) + forward + MLM loss (labels = input_ids, all tokens) + backward + optimizer.step",
        "inputs": "input_ids random ints, no attention_mask, token_type_ids default zeros",
        "dropout": {"hidden": config.hidden_dropout_prob, "attention": config.attention_probs_dropout_prob},
        "mode": "train",
    }
    return Program(step=step, config=cfg)


# --------------------------------------------------------------------------- ResNet-50


def _resnet50(torch: Any) -> Any:
    try:
        import torchvision
    except Exception as err:  # a torchvision built for another torch fails with RuntimeError, not ImportError
        raise ImportError(f"torchvision unavailable ({type(err).__name__}: {err})") from err

    torch.manual_seed(0)
    return torchvision.models.resnet50(weights=None), torchvision.__version__


def build_resnet50_infer(torch: Any, device: str, small: bool, shared: dict[str, Any],
                         batch: int | None = None) -> Program:
    """torchvision resnet50 eval, channels_last, bf16 weights and input (no autocast), inference_mode."""
    model, tv = _resnet50(torch)
    default, size = (2, 32) if small else (64, 224)
    batch = batch or default
    model = model.to(device=device, memory_format=torch.channels_last, dtype=torch.bfloat16).eval()
    gen = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(batch, 3, size, size, generator=gen).to(device=device, dtype=torch.bfloat16)
    x = x.contiguous(memory_format=torch.channels_last)

    def step() -> None:
        with torch.inference_mode():
            model(x)

    cfg = {
        "model": "torchvision.models.resnet50(weights=None)", "torchvision": tv,
        "params": sum(p.numel() for p in model.parameters()),
        "batch": batch, "image": [3, size, size],
        "weights_dtype": "bf16", "autocast": None, "dtype": "bf16 (model.to(dtype=bfloat16), input bf16)",
        "memory_format": "channels_last (model and input)",
        "mode": "eval + torch.inference_mode()",
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
    }
    return Program(step=step, config=cfg)


def build_resnet50_train(torch: Any, device: str, small: bool, shared: dict[str, Any],
                         batch: int | None = None) -> Program:
    """torchvision resnet50 train, channels_last, bf16 autocast (fp32 weights), SGD momentum, cross-entropy."""
    model, tv = _resnet50(torch)
    default, size = (2, 32) if small else (32, 224)
    batch = batch or default
    model = model.to(device=device, memory_format=torch.channels_last).train()
    sgd = dict(lr=0.1, momentum=0.9, weight_decay=1e-4)
    foreach = device == "cuda"
    opt = torch.optim.SGD(model.parameters(), foreach=foreach, **sgd)
    gen = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(batch, 3, size, size, generator=gen).to(device).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), generator=gen).to(device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with _autocast(torch, device):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    cfg = {
        "model": "torchvision.models.resnet50(weights=None)", "torchvision": tv,
        "params": sum(p.numel() for p in model.parameters()),
        "batch": batch, "image": [3, size, size], "classes": 1000,
        "weights_dtype": "fp32", "autocast": "bf16", "dtype": "bf16 autocast (fp32 weights, fp32 input)",
        "memory_format": "channels_last (model and input)",
        "optimizer": {"name": "SGD", "impl": "foreach" if foreach else "for-loop (cpu)", **sgd},
        "loss": "cross_entropy (inside autocast)",
        "step": "zero_grad(set_to_none) + forward + loss + backward + optimizer.step",
        "mode": "train (BatchNorm in training mode)",
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
    }
    return Program(step=step, config=cfg)


# --------------------------------------------------------------------------- Llama


def _llama(torch: Any, device: str, small: bool, shared: dict[str, Any], batch: int | None) -> dict[str, Any]:
    """Build (once per run) the 4-layer Llama-3-8B-shaped model and its prompt; shared by prefill and decode."""
    if "llama" in shared:
        return shared["llama"]
    from transformers import LlamaConfig, LlamaForCausalLM

    if small:
        dims = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                    head_dim=16, vocab_size=1000, num_hidden_layers=2, max_position_embeddings=256)
        prompt = 64
    else:
        # Llama-3-8B per-layer dims, 4 layers instead of 32 to keep the traces small
        dims = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                    head_dim=128, vocab_size=128256, num_hidden_layers=4, max_position_embeddings=8192)
        prompt = 2048
    batch = batch or 1
    config = LlamaConfig(**dims, rope_theta=500000.0, rms_norm_eps=1e-5, hidden_act="silu",
                         tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
                         attn_implementation="sdpa")
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(old)
    model = model.to(device=device, dtype=torch.bfloat16).eval()
    params = inspect.signature(model.forward).parameters
    cache_kw = "past_key_values" if "past_key_values" in params else "cache"
    keep_kw = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)
    gen = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (batch, prompt), generator=gen).to(device)
    next_id = torch.randint(0, config.vocab_size, (batch, 1), generator=gen).to(device)
    base = {
        "model": "transformers.LlamaForCausalLM",
        "model_config": _hf_config_dict(config),
        "attn_implementation": model.config._attn_implementation,
        "params": sum(p.numel() for p in model.parameters()),
        "weights_dtype": "bf16", "autocast": None, "dtype": "bf16 (weights and activations)",
        "mode": "eval + torch.inference_mode()",
        "cache": "transformers DynamicCache (HF default), passed as " + cache_kw,
        "logits": (f"{keep_kw}=1 (prefill computes last-token logits only, as HF generate does)"
                   if keep_kw else "all positions (this transformers has no logits_to_keep)"),
    }
    shared["llama"] = {"torch": torch, "model": model, "config": config, "ids": ids, "next_id": next_id,
                       "cache_kw": cache_kw, "keep_kw": keep_kw, "batch": batch, "prompt": prompt, "base": base}
    return shared["llama"]


def _out_cache(out: Any) -> Any:
    """The KV cache of a model output: ``cache`` in newer transformers, ``past_key_values`` before."""
    keys = list(out.keys())
    for key in ("cache", "past_key_values"):
        if key in keys:
            return out[key]
    raise KeyError(f"no KV cache in the model output (keys: {keys})")


def _prefill(L: dict[str, Any]) -> Any:
    torch = L["torch"]
    kwargs: dict[str, Any] = {"use_cache": True}
    if L["keep_kw"]:
        kwargs[L["keep_kw"]] = 1
    with torch.inference_mode():
        return L["model"](input_ids=L["ids"], **kwargs)


def build_llama_prefill(torch: Any, device: str, small: bool, shared: dict[str, Any],
                        batch: int | None = None) -> Program:
    """Prefill: batch 1, 2048 prompt tokens, use_cache=True (a fresh DynamicCache each step, returned)."""
    L = _llama(torch, device, small, shared, batch)

    def step() -> None:
        L["last_cache"] = _out_cache(_prefill(L))

    cfg = {**L["base"], "phase": "prefill", "batch": L["batch"], "seq": L["prompt"],
           "step": "model(input_ids[batch, seq], use_cache=True) -> logits + KV cache"}
    return Program(step=step, config=cfg)


def build_llama_decode(torch: Any, device: str, small: bool, shared: dict[str, Any],
                       batch: int | None = None) -> Program:
    """Decode: ONE token for batch 1 against the prefill's KV cache (context 2048 -> 2049 after the step)."""
    L = _llama(torch, device, small, shared, batch)
    pristine = _out_cache(_prefill(L))  # the cache after the prompt; each step decodes from a copy of it
    state: dict[str, Any] = {}

    def reset() -> None:
        with torch.inference_mode():
            state["cache"] = copy.deepcopy(pristine)  # outside the timed/profiled region

    def step() -> None:
        with torch.inference_mode():
            L["model"](input_ids=L["next_id"], use_cache=True, **{L["cache_kw"]: state["cache"]})

    reset()
    context = int(pristine.get_seq_length())
    cfg = {**L["base"], "phase": "decode", "batch": L["batch"], "context": context, "new_tokens": 1,
           "logits": "the new token's logits",
           "step": "model(input_ids[batch, 1], cache=<copy of the prefill's DynamicCache>, use_cache=True); "
                   "the copy is made before the step, outside the profile"}
    return Program(step=step, config=cfg, reset=reset)


# name -> (builder, group); programs of one group share state in ``shared`` and run back to back
PROGRAMS: dict[str, tuple[Callable[..., Program], str]] = {
    "bert_train": (build_bert_train, "bert"),
    "resnet50_infer": (build_resnet50_infer, "resnet"),
    "resnet50_train": (build_resnet50_train, "resnet"),
    "llama_prefill": (build_llama_prefill, "llama"),
    "llama_decode": (build_llama_decode, "llama"),
}
