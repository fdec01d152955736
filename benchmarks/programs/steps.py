#!/usr/bin/env python3
"""Time whole-program steps of real models (BERT, GPT-2, Llama-3.2-1B dims, ResNet-50) over a batch x length grid.

    python benchmarks/programs/steps.py --out "$OUT"                    # on the H200 (about 4-6 minutes)
    python benchmarks/programs/steps.py --out /tmp/s --small            # anywhere: tiny configs, CPU if no CUDA
    python benchmarks/programs/steps.py --out "$OUT" --only '^llama-decode'

Per case (``GRID``, most important first): build the model from its config (random init, seed 0), run
``--warmup`` untimed steps (+1 for ResNet, whose convolutions cuDNN autotunes), time ``--blocks`` blocks of
``--steps`` steps one at a time (CUDA events around the step, ``torch.cuda.synchronize()`` before it; host time
with ``time.perf_counter`` around the call; the quietest block's medians are kept: a shared host's noisy spells
slow whole blocks), measure the memory of the first timed step. Before the blocks, a launch probe: the host
time per launch of 2,000 small ``torch.add`` calls (median of 5), the host's speed at that moment, and the same
probe again just before each block (``probe_us_blocks``) and just after it (``probe_us_after_blocks``), one
repeat of it before each step of a block (its median per block: ``probe_us_within_blocks``), and a module
probe (the host time per forward of a tiny eager module stack, ``probe_module_us``: Python-heavy work). Once
every case is timed, a second pass builds each case again and profiles ONE step with ``torch.profiler``, summarised with
``benchmarks/profiling/trace_stats.py``: no case is timed after a profiler session, because one session leaves
every later launch of the process about 1.5x slower on the host (``host_noise.py``, data/h200_host_noise.jsonl).
``DIR/steps.json`` is rewritten after every case (cases not yet run are "pending"); one short JSON line per
case goes to stdout. A case that fails (CUDA OOM included) is recorded as "error: ..." and the next one runs;
once ``--budget-s`` seconds have passed since start, the remaining cases are "skipped (budget)".
Needs torch and transformers (and torchvision for ResNet-50); never imports solkit.
"""

from __future__ import annotations

import argparse
import math
import contextlib
import datetime as _dt
import gc
import gzip
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from typing import Any, Callable

T0 = time.monotonic()
os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # keep the profiler's C++ log lines out of stderr

HERE = os.path.dirname(os.path.abspath(__file__))
TRACE_STATS = os.path.join(HERE, os.pardir, "profiling", "trace_stats.py")


def _load_trace_stats() -> Any:
    spec = importlib.util.spec_from_file_location("trace_stats", os.path.normpath(TRACE_STATS))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {TRACE_STATS}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


trace_stats = _load_trace_stats()


def elapsed() -> float:
    return time.monotonic() - T0


def log(msg: str) -> None:
    print(f"[{elapsed():6.1f}s] {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def stderr_to(path: str) -> Any:
    """Send file descriptor 2 to ``path`` for a while: the profiler's own log lines (Kineto prints one at every
    start and stop) would otherwise fill the output tail that carries the per-case lines."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "w") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def tail_of(path: str, n: int = 600) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


# --------------------------------------------------------------------------- the grid

FAMILIES = ("bert", "gpt2", "llama", "resnet50")
#: the families of the captured-program draws (``--space capture``): configs in benchmarks/programs/configs/ (its
#: README names each one's source and any cut)
CAPTURE_FAMILIES: dict[str, str] = {
    "qwen2": "qwen2.5-0.5b.json", "qwen3": "qwen3-0.6b.json", "mistral": "mistral-7b-4layers.json",
    "gemma": "gemma-2b.json", "mixtral": "mixtral-small.json", "bert-large": "bert-large-uncased.json",
    "gpt2-medium": "gpt2-medium.json",
}
CONFIGS = os.path.join(HERE, "configs")
TRAIN_LR = 1e-4


def _case(family: str, mode: str, batch: int, seq: int | None = None, context: int | None = None,
          image: int | None = None) -> dict[str, Any]:
    if context is not None:
        shape = f"ctx{context}"
    elif image is not None:
        shape = f"img{image}"
    else:
        shape = f"s{seq}"
    return {"id": f"{family}-{mode}-{shape}-b{batch}", "family": family, "mode": mode, "batch": batch,
            "seq": seq, "context": context, "image": image}


def grid() -> list[dict[str, Any]]:
    """Every case, most important first. Shapes here are the full (H200) ones; ``--small`` shrinks them."""
    g: list[dict[str, Any]] = []
    # train
    g += [_case("bert", "train", b, seq=512) for b in (1, 4, 8, 16, 32)]
    g += [_case("bert", "train", b, seq=128) for b in (8, 64)]
    g += [_case("gpt2", "train", b, seq=1024) for b in (1, 4, 8, 16)]
    g += [_case("llama", "train", b, seq=2048) for b in (1, 2, 4)]
    g += [_case("llama", "train", 8, seq=512)]
    g += [_case("resnet50", "train", b, image=224) for b in (8, 32, 64, 128)]
    # infer (whole forward, logits for every token)
    g += [_case("bert", "infer", b, seq=512) for b in (1, 8, 32)]
    g += [_case("gpt2", "infer", b, seq=1024) for b in (1, 8)]
    g += [_case("llama", "infer", b, seq=2048) for b in (1, 4)]
    g += [_case("resnet50", "infer", b, image=224) for b in (1, 16, 64, 256)]
    # prefill (fresh KV cache, last-token logits)
    g += [_case("llama", "prefill", b, seq=s) for s in (512, 2048) for b in (1, 4)]
    g += [_case("gpt2", "prefill", b, seq=1024) for b in (1, 8)]
    # decode (one token against a KV cache of `context` tokens)
    g += [_case("llama", "decode", b, context=c) for c in (512, 4096) for b in (1, 8, 32, 128)]
    g += [_case("gpt2", "decode", b, context=1000) for b in (1, 16, 64)]
    ids = [c["id"] for c in g]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return g


#: the declared space of random draws (``--draw SEED``): per (family, mode), log-uniform integer ranges of the batch
#: and of the sequence (seq), the cached context (decode) or the image side (multiples of 32); decode keeps
#: batch x context <= DECODE_TOKENS so the untimed prefill that builds the cache stays small
DRAW_SPACE: dict[tuple[str, str], dict[str, tuple[int, int]]] = {
    ("bert", "train"): {"batch": (1, 48), "seq": (64, 512)},
    ("bert", "infer"): {"batch": (1, 64), "seq": (32, 512)},
    ("gpt2", "train"): {"batch": (1, 16), "seq": (64, 1024)},
    ("gpt2", "infer"): {"batch": (1, 32), "seq": (64, 1024)},
    ("gpt2", "prefill"): {"batch": (1, 16), "seq": (64, 1024)},
    ("gpt2", "decode"): {"batch": (1, 64), "context": (64, 1000)},
    ("llama", "train"): {"batch": (1, 4), "seq": (128, 2048)},
    ("llama", "infer"): {"batch": (1, 8), "seq": (128, 4096)},
    ("llama", "prefill"): {"batch": (1, 8), "seq": (128, 4096)},
    ("llama", "decode"): {"batch": (1, 128), "context": (128, 8192)},
    ("resnet50", "train"): {"batch": (4, 128), "image": (128, 288)},
    ("resnet50", "infer"): {"batch": (1, 256), "image": (128, 288)},
}
DECODE_TOKENS = 262_144
#: the declared space of the captured-program draws (``--space capture``, issue 28): families never measured before,
#: trained under AMP, run in eval mode in bf16 ("infer") and under autocast over fp32 weights ("infer_amp"), prefill
#: and decode; the same log-uniform sizes as DRAW_SPACE
CAPTURE_SPACE: dict[tuple[str, str], dict[str, tuple[int, int]]] = {
    ("qwen2", "train"): {"batch": (1, 8), "seq": (128, 2048)},
    ("qwen2", "infer"): {"batch": (1, 16), "seq": (128, 2048)},
    ("qwen2", "prefill"): {"batch": (1, 8), "seq": (128, 4096)},
    ("qwen2", "decode"): {"batch": (1, 64), "context": (128, 4096)},
    ("qwen3", "train"): {"batch": (1, 8), "seq": (128, 2048)},
    ("qwen3", "infer_amp"): {"batch": (1, 8), "seq": (128, 2048)},
    ("qwen3", "prefill"): {"batch": (1, 8), "seq": (128, 4096)},
    ("qwen3", "decode"): {"batch": (1, 64), "context": (128, 4096)},
    ("mistral", "train"): {"batch": (1, 4), "seq": (128, 2048)},
    ("mistral", "prefill"): {"batch": (1, 8), "seq": (128, 4096)},
    ("mistral", "decode"): {"batch": (1, 64), "context": (128, 4096)},
    ("gemma", "train"): {"batch": (1, 4), "seq": (128, 1024)},
    ("gemma", "infer"): {"batch": (1, 8), "seq": (128, 2048)},
    ("gemma", "decode"): {"batch": (1, 32), "context": (128, 4096)},
    ("mixtral", "train"): {"batch": (1, 8), "seq": (128, 1024)},
    ("mixtral", "prefill"): {"batch": (1, 8), "seq": (128, 2048)},
    ("mixtral", "decode"): {"batch": (1, 64), "context": (128, 2048)},
    ("bert-large", "train"): {"batch": (1, 32), "seq": (64, 512)},
    ("bert-large", "infer"): {"batch": (1, 64), "seq": (32, 512)},
    ("bert-large", "infer_amp"): {"batch": (1, 32), "seq": (32, 512)},
    ("gpt2-medium", "train"): {"batch": (1, 8), "seq": (64, 1024)},
    ("gpt2-medium", "infer_amp"): {"batch": (1, 16), "seq": (64, 1024)},
    ("gpt2-medium", "prefill"): {"batch": (1, 16), "seq": (64, 1024)},
    ("gpt2-medium", "decode"): {"batch": (1, 64), "context": (64, 1000)},
}


def draw(seed: int, count: int, space: dict[tuple[str, str], dict[str, tuple[int, int]]] | None = None
         ) -> list[dict[str, Any]]:
    """``count`` cases drawn at random (seeded) from ``space`` (default ``DRAW_SPACE``): a (family, mode) uniformly,
    then each size log-uniform in its range (images rounded to a multiple of 32); ids are prefixed ``d{seed}-``."""
    import random

    space = DRAW_SPACE if space is None else space
    rng = random.Random(seed)
    keys = sorted(space)
    out: list[dict[str, Any]] = []
    while len(out) < count:
        family, mode = keys[rng.randrange(len(keys))]
        sizes = {name: int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
                 for name, (lo, hi) in space[(family, mode)].items()}
        if "image" in sizes:
            sizes["image"] = 32 * max(1, round(sizes["image"] / 32))
        if mode == "decode" and sizes["batch"] * sizes["context"] > DECODE_TOKENS:
            continue
        case = _case(family, mode, **sizes)
        case["id"] = f"d{seed}-{case['id']}"
        if case["id"] not in {c["id"] for c in out}:
            out.append(case)
    return out


def shrink(case: dict[str, Any]) -> dict[str, Any]:
    """The ``--small`` shapes of a case (same id, same code path): batch <= 2, lengths / 32, 32x32 images."""
    c = dict(case)
    c["batch"] = min(case["batch"], 2)
    if case["seq"] is not None:
        c["seq"] = max(8, case["seq"] // 32)
    if case["context"] is not None:
        c["context"] = max(8, case["context"] // 32)
    if case["image"] is not None:
        c["image"] = 32
    return c


# --------------------------------------------------------------------------- models


#: the keys ``--small`` shrinks in a captured family's config (2 layers, hidden 64, vocab 1000)
_SMALL = {"num_hidden_layers": 2, "n_layer": 2, "hidden_size": 64, "n_embd": 64, "intermediate_size": 128,
          "num_attention_heads": 4, "n_head": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1000,
          "max_position_embeddings": 512, "n_positions": 512, "moe_intermediate_size": 64}


def captured_config(family: str, small: bool) -> tuple[Any, Any]:
    """(config, model class) of a family of the captured-program draws: its config.json in CONFIGS, built by
    transformers' AutoConfig (an MoE with experts_implementation="grouped_mm" where this transformers has it, as the
    captured program runs); ``small`` shrinks it."""
    import transformers

    with open(os.path.join(CONFIGS, CAPTURE_FAMILIES[family])) as f:
        data = json.load(f)
    model_type = data.pop("model_type")
    for key in ("transformers_version", "_name_or_path", "quantization_config"):
        data.pop(key, None)
    if small:
        data.update({k: v for k, v in _SMALL.items() if k in data})
    data["attn_implementation"] = "sdpa"
    cfg = transformers.AutoConfig.for_model(model_type, **data)
    names = cfg.architectures or []
    cls = getattr(transformers, names[0], None) if len(names) == 1 else None
    return cfg, cls or transformers.AutoModelForCausalLM


def hf_config(family: str, small: bool) -> tuple[Any, Any]:
    """(config, model class) of a transformers family; ``small``: 2 layers, hidden 64, vocab 1000."""
    if family in CAPTURE_FAMILIES:
        return captured_config(family, small)
    if family == "bert":
        from transformers import BertConfig, BertForMaskedLM

        if small:
            cfg = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                             vocab_size=1000, max_position_embeddings=128, attn_implementation="sdpa")
        else:  # bert-base: 12 layers, 768, 12 heads, ffn 3072, vocab 30522, dropout 0.1
            cfg = BertConfig(attn_implementation="sdpa")
        return cfg, BertForMaskedLM
    if family == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        if small:
            cfg = GPT2Config(n_embd=64, n_layer=2, n_head=2, vocab_size=1000, n_positions=128,
                             attn_implementation="sdpa")
        else:  # 124M: 12 layers, 768, 12 heads, vocab 50257, 1024 positions, dropout 0.1
            cfg = GPT2Config(attn_implementation="sdpa")
        return cfg, GPT2LMHeadModel
    if family == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        if small:
            dims = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, head_dim=16, vocab_size=1000, max_position_embeddings=256)
        else:  # Llama-3.2-1B
            dims = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                        num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=8192)
        cfg = LlamaConfig(**dims, tie_word_embeddings=True, rope_theta=500000.0, rms_norm_eps=1e-5,
                          attention_bias=False, mlp_bias=False, hidden_act="silu", attn_implementation="sdpa")
        return cfg, LlamaForCausalLM
    raise ValueError(f"not a transformers family: {family}")


def _config_dict(config: Any) -> dict[str, Any]:
    return json.loads(config.to_json_string(use_diff=False))


def _adamw(torch: Any, params: Any) -> tuple[Any, dict[str, Any]]:
    kwargs = dict(lr=TRAIN_LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    try:
        return torch.optim.AdamW(params, fused=True, **kwargs), {"name": "AdamW", "impl": "fused", **kwargs}
    except (TypeError, RuntimeError, ValueError) as err:  # pragma: no cover - a torch without fused AdamW here
        params = list(params) if not isinstance(params, list) else params
        return torch.optim.AdamW(params, foreach=True, **kwargs), {
            "name": "AdamW", "impl": "foreach", "note": f"fused unavailable: {err}", **kwargs}


class Bench:
    """One case ready to run: ``reset()`` before every step (untimed), ``step()`` the measured step."""

    def __init__(self, step: Callable[[], None], info: dict[str, Any], reset: Callable[[], None] | None = None,
                 extra_warmup: int = 0, finish: Callable[[], dict[str, Any]] | None = None) -> None:
        self.step = step
        self.reset = reset or (lambda: None)
        self.info = info
        self.extra_warmup = extra_warmup
        self.finish = finish or (lambda: {})


def build_hf(torch: Any, case: dict[str, Any], dev: str, small: bool) -> Bench:
    family, mode, batch = case["family"], case["mode"], case["batch"]
    config, cls = hf_config(family, small)
    torch.manual_seed(0)
    kwargs: dict[str, Any] = {}
    if any(getattr(config, k, None) for k in ("num_local_experts", "num_experts", "n_routed_experts")):
        kwargs["experts_implementation"] = "grouped_mm"  # no host sync in the routing: what capture runs
    with torch.device(dev):
        try:
            # _from_config takes the config's torch_dtype (bf16 for Mixtral) unless told: fp32 weights, as cls(config)
            model = cls._from_config(config, dtype=torch.float32, **kwargs) if kwargs else cls(config)
        except (TypeError, ValueError) as err:  # a transformers without experts_implementation
            kwargs = {"experts_implementation_error": f"{type(err).__name__}: {err}"[:200]}
            model = cls(config)
    model = model.to(dev)
    causal = not family.startswith("bert")
    gen = torch.Generator(device="cpu").manual_seed(1)
    length = case["context"] if mode == "decode" else case["seq"]
    ids = torch.randint(0, config.vocab_size, (batch, length), generator=gen).to(dev)
    info: dict[str, Any] = {
        "params": sum(p.numel() for p in model.parameters()),
        "hf_config": _config_dict(config),
        "model_class": f"transformers.{type(model).__name__}",
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "tokens": batch if mode == "decode" else batch * length,  # tokens the step feeds the model
        "transformers": __import__("transformers").__version__,
        "weights_dtype": str(next(model.parameters()).dtype),  # as built (fp32); the bf16 modes overwrite it below
        **({"experts": kwargs} if kwargs else {}),
    }

    if mode == "train":
        model.train()
        opt, opt_info = _adamw(torch, model.parameters())
        kw: dict[str, Any] = {"use_cache": False} if causal else {}

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            with torch.autocast(dev, dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids, **kw).loss
            loss.backward()
            opt.step()

        info.update(optimizer=opt_info, amp="bf16 autocast, fp32 weights",
                    call=("opt.zero_grad(set_to_none=True); with autocast(bf16): loss = model(input_ids, "
                          f"labels=input_ids{', use_cache=False' if causal else ''}).loss; "
                          "loss.backward(); opt.step()"),
                    dropout=_dropout(config))
        return Bench(step, info)

    if mode == "infer_amp":  # eval mode over fp32 weights under autocast (what a training loop's evaluation runs)
        model = model.eval()
        kw = {"use_cache": False} if causal else {}

        def step() -> None:
            with torch.inference_mode(), torch.autocast(dev, dtype=torch.bfloat16):
                model(input_ids=ids, **kw)

        info.update(optimizer=None, amp="bf16 autocast, fp32 weights",
                    call=f"with inference_mode, autocast(bf16): model(input_ids{', use_cache=False' if causal else ''})")
        return Bench(step, info)

    model = model.to(torch.bfloat16).eval()
    info.update(optimizer=None, amp="bf16 weights", weights_dtype=str(next(model.parameters()).dtype))
    if mode == "infer":
        kw = {"use_cache": False} if causal else {}

        def step() -> None:
            with torch.inference_mode():
                model(input_ids=ids, **kw)

        info["call"] = (f"with inference_mode: model(input_ids{', use_cache=False' if causal else ''}) "
                        "(logits for every token)")
        return Bench(step, info)

    from transformers import DynamicCache

    def new_cache() -> Any:
        try:
            return DynamicCache(config=model.config)
        except TypeError:  # pragma: no cover - a transformers without the config argument
            return DynamicCache()

    if mode == "prefill":
        def step() -> None:
            with torch.inference_mode():
                model(input_ids=ids, past_key_values=new_cache(), use_cache=True, logits_to_keep=1)

        info["call"] = ("with inference_mode: model(input_ids, past_key_values=DynamicCache(config=model.config), "
                        "use_cache=True, logits_to_keep=1) (a fresh cache each step, last-token logits)")
        return Bench(step, info)

    if mode == "decode":
        context = case["context"]
        next_ids = torch.randint(0, config.vocab_size, (batch, 1), generator=gen).to(dev)
        cache = new_cache()
        with torch.inference_mode():  # build the KV cache once, untimed
            model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        built = int(cache.get_seq_length())
        del ids
        seen: list[int] = []
        after: list[int] = []

        def reset() -> None:
            with torch.inference_mode():
                extra = int(cache.get_seq_length()) - context
                if extra > 0:
                    cache.crop(-extra)  # a negative argument removes that many tokens (5.x and 4.x alike)
                # crop leaves strided views; generate()'s cache is cat's contiguous output: restore that layout
                for layer in getattr(cache, "layers", ()):
                    for name in ("keys", "values"):
                        t = getattr(layer, name, None)
                        if t is not None and not t.is_contiguous():
                            setattr(layer, name, t.contiguous())
                seen.append(int(cache.get_seq_length()))

        def step() -> None:
            with torch.inference_mode():
                model(input_ids=next_ids, past_key_values=cache, use_cache=True)

        def finish() -> dict[str, Any]:
            after.append(int(cache.get_seq_length()))
            return {"cache_built_len": built, "cache_len_seen": sorted(set(seen)),
                    "cache_len_after_step": sorted(set(after))}

        info.update(cache=type(cache).__name__,
                    call=("with inference_mode: model(next_ids[batch, 1], past_key_values=cache, use_cache=True); "
                          "cache.crop back to `context` tokens before every step, then each layer's keys and values made "
                          "contiguous again as generate()'s cat leaves them (untimed)"))
        return Bench(step, info, reset=reset, finish=finish)

    raise ValueError(f"unknown mode {mode!r}")


def _dropout(config: Any) -> dict[str, Any]:
    keys = ("hidden_dropout_prob", "attention_probs_dropout_prob", "resid_pdrop", "embd_pdrop", "attn_pdrop",
            "attention_dropout")
    return {k: getattr(config, k) for k in keys if hasattr(config, k)}


def build_resnet50(torch: Any, case: dict[str, Any], dev: str, small: bool) -> Bench:
    try:
        import torchvision
    except Exception as err:  # a torchvision built for another torch fails with RuntimeError, not ImportError
        raise ImportError(f"torchvision unavailable ({type(err).__name__}: {err})") from err
    batch, size = case["batch"], case["image"]
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None)
    gen = torch.Generator(device="cpu").manual_seed(1)
    cl = torch.channels_last
    info: dict[str, Any] = {
        "params": sum(p.numel() for p in model.parameters()),
        "hf_config": {"torchvision": "resnet50"},
        "torchvision": torchvision.__version__,
        "model_class": "torchvision.models.resnet50(weights=None)",
        "attn_implementation": None,
        "memory_format": "channels_last (model and input)",
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
    }
    if case["mode"] == "train":
        model = model.to(device=dev, memory_format=cl).train()
        sgd = dict(lr=0.1, momentum=0.9, weight_decay=1e-4)
        opt = torch.optim.SGD(model.parameters(), foreach=True, **sgd)
        x = torch.randn(batch, 3, size, size, generator=gen).to(dev).contiguous(memory_format=cl)
        y = torch.randint(0, 1000, (batch,), generator=gen).to(dev)
        F = torch.nn.functional

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            with torch.autocast(dev, dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        info.update(optimizer={"name": "SGD", "impl": "foreach", **sgd}, amp="bf16 autocast, fp32 weights",
                    classes=1000,
                    call=("opt.zero_grad(set_to_none=True); with autocast(bf16): loss = cross_entropy(model(x), y); "
                          "loss.backward(); opt.step() (BatchNorm in training mode)"))
        return Bench(step, info, extra_warmup=1)
    if case["mode"] == "infer":
        model = model.to(device=dev, memory_format=cl, dtype=torch.bfloat16).eval()
        x = torch.randn(batch, 3, size, size, generator=gen).to(device=dev, dtype=torch.bfloat16)
        x = x.contiguous(memory_format=cl)

        def step() -> None:
            with torch.inference_mode():
                model(x)

        info.update(optimizer=None, amp="bf16 weights", call="with inference_mode: model(x) (bf16 channels_last x)")
        return Bench(step, info, extra_warmup=1)
    raise ValueError(f"unknown mode {case['mode']!r} for resnet50")


def build(torch: Any, case: dict[str, Any], dev: str, small: bool) -> Bench:
    if case["family"] == "resnet50":
        return build_resnet50(torch, case, dev, small)
    return build_hf(torch, case, dev, small)


# --------------------------------------------------------------------------- measuring one case


def launch_probe(torch: Any, launches: int = 2000, repeats: int = 5) -> float:
    """Median over ``repeats`` of the host seconds per launch of ``launches`` small ``torch.add`` calls."""
    a, b, c = (torch.ones(1024, device="cuda") for _ in range(3))
    for _ in range(100):
        torch.add(a, b, out=c)
    torch.cuda.synchronize()
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(launches):
            torch.add(a, b, out=c)
        per.append((time.perf_counter() - t0) / launches)
        torch.cuda.synchronize()
    return statistics.median(per)


class ProbeBurst:
    """One repeat of ``launch_probe``, timed before a step inside a block: the host seconds per launch of ``launches``
    small ``torch.add`` calls (after ``warm`` untimed ones and a synchronize), on tensors made once."""

    def __init__(self, torch: Any, launches: int = 2000, warm: int = 20) -> None:
        self.torch, self.launches, self.warm = torch, launches, warm
        self.a, self.b, self.c = (torch.ones(1024, device="cuda") for _ in range(3))

    def __call__(self) -> float:
        torch, a, b, c = self.torch, self.a, self.b, self.c
        for _ in range(self.warm):
            torch.add(a, b, out=c)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(self.launches):
            torch.add(a, b, out=c)
        per = (time.perf_counter() - t0) / self.launches
        torch.cuda.synchronize()
        return per


def module_probe(torch: Any, calls: int = 300, repeats: int = 5) -> float:
    """Median over ``repeats`` of the host seconds per forward of a tiny eager module stack (Linear, LayerNorm, GELU,
    Linear on a [4, 64] input: four launches and four modules' Python), ``calls`` forwards each: the host's speed at
    Python-heavy work, recorded beside the launch probe (the host rule does not read it)."""
    block = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.LayerNorm(64), torch.nn.GELU(),
                                torch.nn.Linear(64, 64)).cuda()
    x = torch.ones(4, 64, device="cuda")
    with torch.inference_mode():
        for _ in range(30):
            block(x)
        torch.cuda.synchronize()
        per = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(calls):
                block(x)
            per.append((time.perf_counter() - t0) / calls)
            torch.cuda.synchronize()
    return statistics.median(per)


class Runner:
    def __init__(self, torch: Any, args: argparse.Namespace, dev: str, tmp: str) -> None:
        self.torch = torch
        self.args = args
        self.dev = dev
        self.cuda = dev == "cuda"
        self.tmp = tmp
        self.profile_on = (self.cuda or args.profile_cpu) and not args.no_profile

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def activities(self) -> list[Any]:
        P = self.torch.profiler.ProfilerActivity
        return [P.CPU, P.CUDA] if self.cuda else [P.CPU]

    def warm_profiler(self) -> None:
        """One throwaway profile of a small matmul, so CUPTI/Kineto start-up is in no case's profile."""
        torch = self.torch
        x = torch.ones(64, 64, device=self.dev)
        with stderr_to(os.path.join(self.tmp, "warm_profiler.stderr")):
            with torch.profiler.profile(activities=self.activities()):
                (x @ x).sum()
                self.sync()

    def free(self) -> None:
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()

    def measure(self, bench: Bench) -> dict[str, Any]:
        torch, args = self.torch, self.args
        r: dict[str, Any] = {}
        t = time.monotonic()
        warmup = args.warmup + bench.extra_warmup
        for _ in range(warmup):
            bench.reset()
            bench.step()
        self.sync()
        r["warmup_steps"] = warmup
        r["warmup_s"] = round(time.monotonic() - t, 3)
        r["memory_after_warmup_bytes"] = int(torch.cuda.memory_allocated()) if self.cuda else None

        r["probe_us"] = round(launch_probe(torch) * 1e6, 3) if self.cuda else None
        r["probe_module_us"] = round(module_probe(torch) * 1e6, 3) if self.cuda else None
        wall: list[float] = []
        host: list[float] = []
        blocks: list[tuple[float, float]] = []  # (wall, host) medians of each block of steps
        r["memory_before_bytes"] = r["peak_memory_bytes"] = None
        probes: list[float] = []  # the launch probe again just before each block (the host's speed then)
        within: list[float] = []  # per block: the median of the bursts timed before each of its steps
        after: list[float] = []  # the launch probe again just after each block
        burst = ProbeBurst(torch) if self.cuda else None
        for b in range(args.blocks):
            if b:
                time.sleep(args.block_pause_s)  # a shared host's noisy spells last about a second: step out of one
            if self.cuda:
                probes.append(round(launch_probe(torch) * 1e6, 3))
            wall_b: list[float] = []
            host_b: list[float] = []
            bursts: list[float] = []
            for i in range(args.steps):
                first = b == 0 and i == 0
                if burst is not None:
                    bursts.append(burst())  # before the reset, so the reset's own work runs between it and the step
                bench.reset()
                self.sync()
                if self.cuda:
                    if first:
                        torch.cuda.reset_peak_memory_stats()
                        r["memory_before_bytes"] = int(torch.cuda.memory_allocated())
                    start = torch.cuda.Event(enable_timing=True)
                    end = torch.cuda.Event(enable_timing=True)
                    start.record()
                    h0 = time.perf_counter()
                    bench.step()
                    h1 = time.perf_counter()
                    end.record()
                    end.synchronize()
                    wall_b.append(float(start.elapsed_time(end)))
                    host_b.append((h1 - h0) * 1e3)
                    if first:
                        r["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated())
                else:
                    h0 = time.perf_counter()
                    bench.step()
                    h1 = time.perf_counter()
                    wall_b.append((h1 - h0) * 1e3)
                    host_b.append((h1 - h0) * 1e3)
            blocks.append((statistics.median(wall_b), statistics.median(host_b)))
            if burst is not None:
                within.append(round(statistics.median(bursts) * 1e6, 3))
                after.append(round(launch_probe(torch) * 1e6, 3))
            wall += wall_b
            host += host_b
        quiet = min(range(len(blocks)), key=lambda j: blocks[j][0])  # the block of the least median wall time
        r["wall_ms"] = round(blocks[quiet][0], 4)
        r["wall_ms_all"] = [round(x, 4) for x in wall]
        r["host_ms"] = round(blocks[quiet][1], 4)
        r["host_ms_all"] = [round(x, 4) for x in host]
        r["reported_block"] = quiet  # the index of that block (solkit reads the case at that block's probes)
        r["wall_ms_blocks"] = [round(w, 4) for w, _ in blocks]
        r["host_ms_blocks"] = [round(h, 4) for _, h in blocks]
        r["probe_us_blocks"] = probes or None
        r["probe_us_within_blocks"] = within or None
        r["probe_us_after_blocks"] = after or None
        r["memory_reserved_bytes"] = int(torch.cuda.memory_reserved()) if self.cuda else None
        r.update(bench.finish())
        return r

    def profile_case(self, case: dict[str, Any]) -> dict[str, Any]:
        """The profile pass: build ``case`` again, warm it up, profile one step (``profile`` or ``profile_error``)."""
        bench: Bench | None = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bench = build(self.torch, case, self.dev, self.args.small)
                for _ in range(self.args.warmup + bench.extra_warmup):
                    bench.reset()
                    bench.step()
                self.sync()
                return {"profile": self.profile(bench, case["id"])}
        except Exception as err:  # noqa: BLE001 - keep the timings when the profiler fails
            return {"profile": None, "profile_error": f"{type(err).__name__}: {err}"[:500]}
        finally:
            if bench is not None:
                bench.info.clear()
            bench = None
            self.free()

    def profile(self, bench: Bench, case_id: str = "case") -> dict[str, Any]:
        torch = self.torch
        bench.reset()
        self.sync()
        fd, path = tempfile.mkstemp(suffix=".json", dir=self.tmp)
        os.close(fd)
        err_path = path + ".stderr"
        try:
            with stderr_to(err_path):
                keep = self.args.keep_traces
                with torch.profiler.profile(activities=self.activities(), record_shapes=bool(keep)) as prof:
                    self.sync()
                    bench.step()
                    self.sync()
                t = time.monotonic()
                prof.export_chrome_trace(path)
                export_s = time.monotonic() - t
            del prof
            trace_bytes = os.path.getsize(path)
            if keep:  # the whole trace, gzipped, for counting its kernels against solkit's (shapes recorded)
                os.makedirs(keep, exist_ok=True)
                with open(path, "rb") as src, gzip.open(os.path.join(keep, f"{case_id}.json.gz"), "wb") as dst:
                    shutil.copyfileobj(src, dst)
            trace = trace_stats.load(path)
        finally:
            stderr_text = tail_of(err_path)
            for p in (path, err_path):
                if os.path.exists(p):
                    os.remove(p)
        s = trace_stats.summarize(trace)
        kernels = [e for e in trace.get("traceEvents", []) if isinstance(e, dict) and e.get("cat") == "kernel"]
        total: Counter[str] = Counter()
        count: Counter[str] = Counter()
        for e in kernels:
            name = str(e.get("name"))[:120]
            total[name] += float(e.get("dur", 0))
            count[name] += 1
        del trace
        return {
            "kernels": s["kernel_events"],
            "kernel_us": s["kernel_dur_us"],
            "span_us": s["kernel_span_us"],
            "memset_events": s["memset_events"],
            "memcpy_events": s["memcpy_events"],
            "kernel_streams": s["kernel_streams"],
            "cpu_op_events": s["cpu_op_events"],
            "top_kernels": [[n, round(us, 3), count[n]] for n, us in total.most_common(10)],
            "trace_bytes": trace_bytes,
            "export_s": round(export_s, 3),
            "stderr_tail": stderr_text,  # what the profiler printed (not shown on the console)
        }

    def run_case(self, case: dict[str, Any]) -> dict[str, Any]:
        rec = dict(case)
        t = time.monotonic()
        bench: Bench | None = None
        caught: list[str] = []
        try:
            with warnings.catch_warnings(record=True) as wlist:
                warnings.simplefilter("always")
                try:
                    bench = build(self.torch, case, self.dev, self.args.small)
                    rec["build_s"] = round(time.monotonic() - t, 3)
                    rec.update(bench.info)
                    rec.update(self.measure(bench))
                    rec["status"] = "ok"
                finally:
                    for w in wlist:
                        msg = f"{w.category.__name__}: {w.message}"[:300]
                        if msg not in caught and len(caught) < 5:
                            caught.append(msg)
        except Exception as err:  # noqa: BLE001 - one failure (CUDA OOM included) must not lose the other cases
            rec["status"] = f"error: {type(err).__name__}: {err}"[:1000]
            rec["traceback"] = traceback.format_exc()[-3000:]
            oom = "out of memory" in str(err).lower() or type(err).__name__ == "OutOfMemoryError"
            rec["oom"] = oom
            log(f"{case['id']}: {rec['status'][:200]}")
        finally:
            if bench is not None:
                bench.info.clear()
            bench = None
            self.free()  # weights, optimizer states, caches: freed before the next case
        if caught:
            rec["warnings"] = caught
        rec["case_s"] = round(time.monotonic() - t, 3)
        rec["elapsed_s"] = round(elapsed(), 1)
        return rec


# --------------------------------------------------------------------------- environment and output


def run_cmd(cmd: list[str], timeout: float = 30) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (r.stdout + r.stderr).strip()
    except Exception as err:  # noqa: BLE001 - a missing tool is a fact to record
        return f"unavailable: {type(err).__name__}: {err}"


def environment(torch: Any, dev: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "flags": {
            "cudnn.benchmark": torch.backends.cudnn.benchmark,
            "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        },
        "device": dev,
    }
    for mod in ("transformers", "torchvision", "numpy"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception as err:  # noqa: BLE001
            env[mod] = f"unavailable: {type(err).__name__}: {err}"[:300]
    if dev == "cuda":
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = torch.cuda.get_device_name(0)
        env["gpu_props"] = {"sm_count": props.multi_processor_count, "total_memory": props.total_memory,
                            "capability": f"{props.major}.{props.minor}",
                            "l2_cache_size": getattr(props, "L2_cache_size", None)}
        env["nvidia_smi"] = run_cmd([
            "nvidia-smi", "--query-gpu=name,driver_version,pci.bus_id,memory.total,clocks.sm,clocks.max.sm,"
            "clocks.mem,clocks.max.mem,power.limit,temperature.gpu,persistence_mode,compute_mode",
            "--format=csv"])
    else:
        env["gpu"] = None
        env["gpu_props"] = None
        env["nvidia_smi"] = None
    return env


def write_json(out: str, doc: dict[str, Any]) -> None:
    tmp = os.path.join(out, ".steps.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, os.path.join(out, "steps.json"))


def short(rec: dict[str, Any]) -> dict[str, Any]:
    """The stdout line of a case: few keys, so that all cases fit in a 12,000-character output tail."""
    prof = rec.get("profile") or {}

    def mb(key: str) -> Any:
        v = rec.get(key)
        return round(v / 2**20) if isinstance(v, int) else None

    line = {"id": rec["id"], "status": rec.get("status", "")[:160], "wall_ms": rec.get("wall_ms"),
            "host_ms": rec.get("host_ms"), "peak_mib": mb("peak_memory_bytes"), "before_mib": mb("memory_before_bytes"),
            "kernels": prof.get("kernels"), "kernel_us": prof.get("kernel_us"), "span_us": prof.get("span_us"),
            "s": rec.get("case_s"), "t": rec.get("elapsed_s")}
    return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in line.items() if v is not None}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for steps.json")
    p.add_argument("--small", action="store_true", help="tiny configs and shapes (the CPU dry run)")
    p.add_argument("--draw", type=int, action="append", default=[], metavar="SEED",
                   help="add cases drawn at random from DRAW_SPACE with this seed (repeatable)")
    p.add_argument("--draw-count", type=int, default=40, help="cases per --draw seed (default 40)")
    p.add_argument("--space", choices=("closed", "capture"), default="closed",
                   help="the draws' space: DRAW_SPACE (the closed forms' families, default) or CAPTURE_SPACE (families "
                        "never measured, for captured programs)")
    p.add_argument("--no-grid", action="store_true", help="leave out the hand-chosen grid (run only the draws)")
    p.add_argument("--only", default=None, metavar="REGEX", help="run only the cases whose id matches (re.search)")
    p.add_argument("--budget-s", type=float, default=480.0,
                   help="start no case once this many seconds have passed since start (default 480)")
    p.add_argument("--steps", type=int, default=10, help="timed steps per block (its median kept; default 10)")
    p.add_argument("--blocks", type=int, default=3,
                   help="blocks of --steps steps per case, the quietest (least median wall time) kept (default 3)")
    p.add_argument("--block-pause-s", type=float, default=0.25, help="seconds between blocks (default 0.25)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps before timing (default 3; ResNet +1)")
    p.add_argument("--profile-budget-s", type=float, default=240.0,
                   help="profile no case once --budget-s plus this many seconds have passed (default 240)")
    p.add_argument("--no-profile", action="store_true", help="time only: no profile pass")
    p.add_argument("--keep-traces", default=None, metavar="DIR",
                   help="keep each profiled step's chrome trace (shapes recorded) as DIR/<case id>.json.gz")
    p.add_argument("--profile-cpu", action="store_true",
                   help="without CUDA, profile the CPU step anyway (tests the profile path in a dry run)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.warmup < 1 or args.blocks < 1:
        p.error("--steps, --warmup and --blocks must be at least 1")
    if not args.block_pause_s >= 0:
        p.error(f"--block-pause-s must be at least 0, got {args.block_pause_s}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    space = CAPTURE_SPACE if args.space == "capture" else DRAW_SPACE
    cases = (grid() if not args.no_grid else []) + [c for seed in args.draw for c in draw(seed, args.draw_count, space)]
    if args.only:
        pat = re.compile(args.only)
        cases = [c for c in cases if pat.search(c["id"])]
    if args.small:
        cases = [shrink(c) for c in cases]

    import torch

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()  # keep the output tail for the per-case lines
    except Exception:  # noqa: BLE001
        pass

    if torch.cuda.is_available():
        dev = "cuda"
    elif args.small:
        dev = "cpu"
    else:
        print("steps.py: CUDA is not available (use --small for a CPU dry run)", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True  # fixed shapes: cuDNN autotunes ResNet's convolutions in the warmup

    doc: dict[str, Any] = {
        "schema": 1,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": [os.path.relpath(sys.argv[0]) if sys.argv else "steps.py", *(argv or sys.argv[1:])],
        "small": args.small,
        "env": environment(torch, dev),
        "settings": {
            "warmup_steps": args.warmup,
            "extra_warmup_steps": {"resnet50": 1},
            "steps": args.steps,
            "blocks": args.blocks,
            "block_pause_s": args.block_pause_s,
            "budget_s": args.budget_s,
            "timing": ("one step at a time: one repeat of the launch probe (untimed for the step; see probe), "
                       "reset (untimed: decode crops its cache), torch.cuda.synchronize(), "
                       "CUDA event, step, CUDA event, event.synchronize(); host = time.perf_counter() around the step "
                       "call alone (no sync): the CPU's time to issue the step. Steps come in blocks (`blocks` of "
                       "`steps`, `block_pause_s` apart); wall_ms and host_ms are the medians of the block with the "
                       "least median wall time (a shared host's noisy spells slow whole blocks)" if dev == "cuda" else
                       "time.perf_counter() around each step (CPU run: wall_ms == host_ms)"),
            "memory": ("first timed step: torch.cuda.reset_peak_memory_stats() and memory_allocated() "
                       "(memory_before_bytes) before it, max_memory_allocated() after it (peak_memory_bytes)"
                       if dev == "cuda" else None),
            "probe": ("probe_us: before the blocks, the median of 5 repeats of the host time per launch of 2,000 "
                      "torch.add(a, b, out=c) calls on 1,024 floats; probe_us_blocks: the same probe again just "
                      "before each block (after its pause), in block order; probe_us_within_blocks: per block, the median over its "
                      "steps of one such repeat (20 untimed launches, a synchronize, 2,000 timed launches) timed before "
                      "each step's reset; probe_us_after_blocks: the probe of probe_us again just after each block; "
                      "probe_module_us: before the blocks, the median of 5 repeats "
                      "of the host time per forward of 300 forwards of a tiny eager module stack (Linear, LayerNorm, "
                      "GELU, Linear on [4, 64] under inference_mode)" if dev == "cuda" else None),
            "profiler": ("after every case is timed, a second pass builds each case again (warm-up as above) and "
                         "profiles one step (no timing ever follows a profiler session in the process): one step under torch.profiler.profile(activities=[CPU, CUDA], record_shapes=False), "
                         "torch.cuda.synchronize() before and after the step inside it; chrome trace summarised "
                         "with benchmarks/profiling/trace_stats.py, then deleted"
                         if dev == "cuda" else ("CPU activity only (--profile-cpu)" if args.profile_cpu else None)),
            "seed": "torch.manual_seed(0) before each model is built; inputs from torch.Generator().manual_seed(1)",
        },
        "cases": [{**c, "status": "pending"} for c in cases],
    }
    write_json(args.out, doc)
    tmp = tempfile.mkdtemp(prefix="solkit_steps_")
    runner = Runner(torch, args, dev, tmp)
    log(f"{len(cases)} cases on {dev}{' (small)' if args.small else ''}")
    try:
        for i, case in enumerate(cases):
            if elapsed() > args.budget_s:
                rec = {**case, "status": "skipped (budget)", "elapsed_s": round(elapsed(), 1)}
            else:
                rec = runner.run_case(case)
            doc["cases"][i] = rec
            doc["total_s"] = round(elapsed(), 1)
            write_json(args.out, doc)
            print(json.dumps(short(rec), separators=(",", ":"), default=str), flush=True)
        if runner.profile_on:  # the profile pass, after every timing (a profiler session slows later launches)
            try:
                runner.warm_profiler()
            except Exception as err:  # noqa: BLE001
                doc["settings"]["profiler_warm_error"] = f"{type(err).__name__}: {err}"[:300]
            for i, (case, rec) in enumerate(zip(cases, list(doc["cases"]))):
                if rec.get("status") != "ok":
                    continue
                if elapsed() > args.budget_s + args.profile_budget_s:
                    doc["cases"][i] = {**rec, "profile": None, "profile_error": "skipped (budget)"}
                    continue
                doc["cases"][i] = {**rec, **runner.profile_case(case)}
                write_json(args.out, doc)
            log(f"profile pass done at {elapsed():.0f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        statuses = Counter(str(c.get("status", "")).split(":")[0] for c in doc["cases"])
        doc["total_s"] = round(elapsed(), 1)
        doc["summary"] = dict(statuses)
        write_json(args.out, doc)
        print(json.dumps({"done": dict(statuses), "total_s": doc["total_s"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
