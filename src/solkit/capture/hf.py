"""``hf_model``: a Hugging Face model from its config, built by transformers' own modeling code on the meta device
(no weights), whose programs (forward, prefill, decode, training step) are captured as they run.

The same methods as ``models.Transformer``: ``params`` (the sum of the instantiated model's parameter numels,
transformers' own count: tied weights once), ``forward``, ``prefill``, ``decode`` (transformers' ``DynamicCache``,
filled by a prefill that launches nothing), ``memory`` (the captured program's peak), and each program usable as
``models.training_step``'s input (the step is captured too: loss, backward, optimizer). ``source`` is "captured".

- A multimodal config (one with a ``text_config``) counts its language model (``get_text_config()``), and says so.
- A mixture of experts runs transformers' ``experts_implementation="grouped_mm"`` (no host sync); its grouped GEMMs
  count as balanced top-k routing (each expert an equal share of the routed tokens), as solkit's closed form assumes.
- A ``quantization_config`` is dropped: the weights are counted in the program's dtype (NB).
- Programs are eager PyTorch with SDPA attention (``attn_implementation="sdpa"``); ``kernels="fused"`` and
  quantized layers are closed-form notions (``models.Transformer``).
"""

from __future__ import annotations

import contextlib
import copy
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from .._validate import checked_call, choice, dim, flag
from ..errors import ArgumentTypeError, OptionError, ShapeError
from ..models.hf import load_config
from ..precision import normalize
from ..workload import Workload
from .._optional import require_torch, require_transformers
from .program import SOURCE, CaptureMemory, CapturedProgram

__all__ = ["hf_model", "CapturedModel", "OPTIMIZERS"]

#: solkit precision -> the torch dtype a captured program runs in
_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
#: the optimizers a captured step runs: AdamW(fused=True), SGD(momentum=0.9, foreach=True), or none
OPTIMIZERS = ("adamw", "sgd", "none")


def _one(name: str, value: Any) -> int:
    """A positive whole number (one shape: a captured program is not swept)."""
    v = dim(name, value)
    if not (type(v) is float and v.is_integer()):
        raise ShapeError(f"{name} must be one positive integer (a captured program runs one shape; sweep a closed form "
                         f"from models.Transformer instead), got {value!r}")
    return int(v)


def _config_dict(config: Any) -> tuple[dict[str, Any], str]:
    """A config as a dict, and where it came from: ``models.hf.load_config`` (one reader of config files)."""
    if not isinstance(config, (Mapping, str, os.PathLike)):
        raise ArgumentTypeError(f"config must be a dict, a path to config.json, a folder or a transformers config, got "
                                f"{type(config).__name__}")
    return load_config(config)


def _transformers_config(config: Any, overrides: Mapping[str, Any]) -> tuple[Any, str, tuple[str, ...]]:
    """(the language model's transformers config, where it came from, notes)."""
    tf = require_transformers()
    notes: list[str] = []
    if isinstance(config, tf.PretrainedConfig):
        cfg, where = config, ""
    else:
        data, where = _config_dict(config)
        model_type = data.get("model_type")
        if not isinstance(model_type, str) or not model_type:
            raise OptionError(f"config needs the key 'model_type'{f' in {where}' if where else ''}, got {model_type!r}")
        data = {k: v for k, v in data.items() if k not in ("model_type", "transformers_version", "_name_or_path")}
        if data.pop("quantization_config", None) is not None:
            notes.append("the config's quantization_config is dropped: weights counted in the program's dtype")
        try:
            cfg = tf.AutoConfig.for_model(model_type, **data)
        except ValueError as exc:
            first = str(exc).split(". ", 1)[0].splitlines()[0] if str(exc) else type(exc).__name__
            raise OptionError(f"config model_type {model_type!r} is not known to the installed transformers "
                              f"{tf.__version__}: {first}") from None
        except Exception as exc:  # noqa: BLE001 - transformers' own checks of the values (a zero head count, types)
            raise _refused(exc, f"transformers refuses this {model_type} config{f' ({where})' if where else ''}") from None
    if overrides:  # the caller's config object is left as it was
        cfg = copy.deepcopy(cfg)
    text = cfg.get_text_config()
    if text is not cfg:
        notes.append(f"a multimodal config ({cfg.model_type}): its language model ({text.model_type}) is counted")
    cfg = text
    for key, value in overrides.items():
        if not hasattr(cfg, key):
            raise OptionError(f"config override {key!r} is not a key of {type(cfg).__name__}")
        setattr(cfg, key, value)
    return cfg, where, tuple(notes)


@checked_call
def hf_model(config: Any, name: Optional[str] = None, **overrides: Any) -> "CapturedModel":
    """A ``CapturedModel`` from a Hugging Face config: a dict, a config.json path or folder, or a transformers config;
    ``overrides`` set config keys (e.g. ``num_hidden_layers=2`` for a small model of the same family)."""
    cfg, where, notes = _transformers_config(config, overrides)
    label = name or getattr(cfg, "_name_or_path", "") or (Path(where).parent.name if where.endswith("config.json")
                                                          else Path(where).stem if where else cfg.model_type)
    return CapturedModel(cfg, str(label), notes)


class CapturedModel:
    """A Hugging Face model built on the meta device; its programs captured as they run (module docstring)."""

    source = SOURCE

    def __init__(self, config: Any, name: str, notes: tuple[str, ...] = ()) -> None:
        torch = require_torch("capture")
        require_transformers()
        self.config = config
        self.name = name
        kwargs: dict[str, Any] = {"attn_implementation": "sdpa"}
        moe = any(getattr(config, k, None) for k in ("num_local_experts", "num_experts", "n_routed_experts"))
        if moe:
            kwargs["experts_implementation"] = "grouped_mm"
            notes += ("mixture of experts: grouped GEMMs counted as balanced top-k routing (each expert an equal share "
                      "of the routed tokens)",)
        build = _builder(config)
        with torch.device("meta"):
            try:
                try:
                    self.module = build(config, dtype=torch.bfloat16, **kwargs)
                except ValueError as exc:
                    if "scaled_dot_product_attention" not in str(exc):
                        raise
                    kwargs["attn_implementation"] = "eager"  # the model has no SDPA path (softcapping, sinks)
                    notes += (f"{type(config).__name__.removesuffix('Config')} has no SDPA attention in transformers: "
                              "its eager attention runs (QK^T, softmax, PV as kernels; every pair counted, as "
                              "computed)",)
                    self.module = build(config, dtype=torch.bfloat16, **kwargs)
            except Exception as exc:  # noqa: BLE001 - transformers' own checks of the config's values
                raise _refused(exc, f"transformers cannot build a model from this config ({config.model_type})") from None
        self.module.eval()
        self.notes = notes
        seen: dict[int, Any] = {}
        for p in self.module.parameters():
            seen.setdefault(id(p), p)
        #: the sum of the instantiated model's parameter numels (tied weights once)
        self.params = sum(int(p.numel()) for p in seen.values())
        self.param_tensors = len(seen)
        self.layers = int(getattr(config, "num_hidden_layers", 0) or 0)

    def __repr__(self) -> str:
        return (f"CapturedModel({self.name!r}: {self.config.model_type}, {self.layers} layers, {self.params:,} params, "
                f"source {self.source!r})")

    # ---- programs ---------------------------------------------------------------------------------------------
    def _check(self, impl: Any, kernels: Any, quant: Any, kv_dtype: Any = None) -> None:
        choice("impl", impl, ("sdpa",))
        choice("kernels", kernels, ("eager",))
        if quant is not None:
            raise OptionError(f"quant={quant!r}: a captured program runs its layers unquantized; quantized layers are a "
                              "closed-form notion (models.Transformer)")
        if kv_dtype is not None:
            raise OptionError(f"kv_dtype={kv_dtype!r}: a captured program's KV cache is in its dtype")

    def _dtype(self, dtype: Any, what: str = "dtype") -> Any:
        p = normalize(dtype, what)
        if p not in _DTYPES:
            raise OptionError(f"{what} must be one of {', '.join(_DTYPES)} for a captured program, got {dtype!r}")
        return getattr(require_torch("capture"), _DTYPES[p])

    def _prepared(self, weights: Any, training: bool) -> Any:
        """The meta module in ``weights``' dtype, in train or eval mode."""
        m = self.module.to(weights)
        m.train(training)
        return m

    def forward(self, batch: Any = 1, seq: Any = 2048, dtype: Any = "bf16", impl: Any = "sdpa", kernels: Any = "eager",
                amp: Any = False, training: Any = False, quant: Any = None) -> Workload:
        """The forward pass over batch x seq tokens, logits for every token, no cache (``amp``: fp32 weights under
        autocast to ``dtype``; ``training``: train mode, dropout on; else under ``torch.inference_mode``)."""
        self._check(impl, kernels, quant)
        b, s = _one("batch", batch), _one("seq", seq)
        torch = require_torch("capture")
        low = self._dtype(dtype)
        use_amp, train = flag("amp", amp), flag("training", training)
        model = self._prepared(torch.float32 if use_amp else low, train)
        ids = torch.zeros((b, s), dtype=torch.long, device="meta")

        def run(model: Any, ids: Any) -> Any:
            # inference as evaluation runs it (torch.inference_mode: no graph, and autocast keeps no weight casts)
            grad = torch.set_grad_enabled(True) if train else torch.inference_mode()
            with grad, torch.autocast("cuda", dtype=low, enabled=use_amp):
                return model(input_ids=ids, use_cache=False).logits

        return self._capture(run, (model, ids), f"{self.name} forward", b, s, low, use_amp)

    def prefill(self, batch: Any = 1, seq: Any = 2048, dtype: Any = "bf16", impl: Any = "sdpa", kernels: Any = "eager",
                kv_dtype: Any = None, quant: Any = None) -> Workload:
        """Prefill: the prompt's forward writing transformers' DynamicCache, logits for each sequence's last token."""
        self._check(impl, kernels, quant, kv_dtype)
        b, s = _one("batch", batch), _one("seq", seq)
        torch = require_torch("capture")
        low = self._dtype(dtype)
        model = self._prepared(low, False)
        ids = torch.zeros((b, s), dtype=torch.long, device="meta")
        tf = require_transformers()

        def run(model: Any, ids: Any) -> Any:
            with torch.inference_mode():  # as generation runs: no autograd graph, nothing kept for a backward
                cache = tf.DynamicCache(config=model.config)
                return model(input_ids=ids, **{_cache_kwarg(model): cache}, use_cache=True, logits_to_keep=1).logits

        return self._capture(run, (model, ids), f"{self.name} prefill", b, s, low, False, train=False)

    def decode(self, batch: Any = 1, context: Any = 2048, dtype: Any = "bf16", impl: Any = "sdpa", kernels: Any = "eager",
               kv_dtype: Any = None, quant: Any = None) -> Workload:
        """One decode step: one new token per sequence against transformers' DynamicCache of ``context`` tokens
        (filled by a prefill that launches nothing)."""
        self._check(impl, kernels, quant, kv_dtype)
        b, c = _one("batch", batch), _one("context", context)
        torch = require_torch("capture")
        low = self._dtype(dtype)
        model = self._prepared(low, False)
        prompt = torch.zeros((b, c), dtype=torch.long, device="meta")
        ids = torch.zeros((b, 1), dtype=torch.long, device="meta")
        tf = require_transformers()
        from .record import setup

        def run(model: Any, prompt: Any, ids: Any) -> Any:
            with torch.inference_mode():  # as generation runs: no autograd graph, nothing kept for a backward
                with setup():
                    cache = tf.DynamicCache(config=model.config)
                    model(input_ids=prompt, **{_cache_kwarg(model): cache}, use_cache=True, logits_to_keep=1)
                return model(input_ids=ids, **{_cache_kwarg(model): cache}, use_cache=True).logits

        return self._capture(run, (model, prompt, ids), f"{self.name} decode", b, 1, low, False, train=False)

    def training_step(self, batch: Any = 1, seq: Any = 2048, dtype: Any = "bf16", optimizer: Any = "adamw",
                      amp: Any = None, microbatches: Any = 1, checkpointing: Any = False) -> Workload:
        """One training step: ``microbatches`` x (forward with the loss, backward), then the optimizer (AdamW
        fused, SGD foreach with momentum, or none), its state already made (a steady-state step)."""
        b, s = _one("batch", batch), _one("seq", seq)
        return self._step(b, s, self._dtype(dtype), choice("optimizer", "none" if optimizer is None else optimizer,
                                                            OPTIMIZERS),
                          amp, _one("microbatches", microbatches), flag("checkpointing", checkpointing))

    def _step(self, b: int, s: int, low: Any, optimizer: str, amp: Any, microbatches: int, checkpointing: bool) -> Workload:
        """The captured training step (``training_step``)."""
        from ..models.training import resolve_amp
        from .record import setup

        torch = require_torch("capture")
        use_amp = resolve_amp(amp, {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[low])
        model = self._prepared(torch.float32 if use_amp else low, True)
        ids = torch.zeros((b, s), dtype=torch.long, device="meta")
        kind = "activation" if hasattr(model, "activation_checkpointing_enable") else "gradient"  # renamed in 5.2x
        disable = getattr(model, f"{kind}_checkpointing_disable")
        if checkpointing:
            getattr(model, f"{kind}_checkpointing_enable")(**{f"{kind}_checkpointing_kwargs": {"use_reentrant": False}})

        def run(model: Any, ids: Any) -> None:
            with setup():
                opt = _optimizer(optimizer, model)
            for _ in range(microbatches):
                with torch.autocast("cuda", dtype=low, enabled=use_amp):
                    loss = model(input_ids=ids, labels=ids, use_cache=False).loss
                (loss / microbatches if microbatches > 1 else loss).backward()
            if opt is not None:
                opt.step()
                opt.zero_grad(set_to_none=True)

        try:
            return self._capture(run, (model, ids), f"{self.name} training step", b, s, low, use_amp, train=True,
                                 stepped=True)
        finally:
            if checkpointing:
                disable()

    def memory(self, batch: Any = 1, seq: Any = 2048, training: Any = False, optimizer: Any = "adamw",
               checkpointing: Any = False, gpu: Any = None, dtype: Any = "bf16", amp: Any = None,
               microbatches: Any = 1) -> CaptureMemory:
        """The captured program's peak of live tensor bytes: the training step, or the prefill of batch x seq tokens."""
        if flag("training", training):
            w = self.training_step(batch, seq, dtype, optimizer, amp, microbatches, checkpointing)
        else:
            w = self.prefill(batch, seq, dtype)
        recipe = w.recipe
        if not isinstance(recipe, CapturedProgram):  # pragma: no cover - every captured program carries its recipe
            raise TypeError(f"{w.name!r} carries no captured recipe")
        m = recipe.memory
        if gpu is None:
            return m
        from ..hardware import as_gpu

        capacity = float(as_gpu(gpu).memory_capacity)
        return CaptureMemory(m.parameters, m.gradients, m.optimizer_states, m.activations, m.peak, capacity,
                             m.peak <= capacity)

    # ---- the capture ------------------------------------------------------------------------------------------
    def _capture(self, run: Any, args: tuple[Any, ...], label: str, b: int, s: int, low: Any, amp: bool,
                 train: bool = False, stepped: bool = False) -> Workload:
        """Capture ``run(*args)``; the recipe rebuilds it as a training step (at the same shape)."""
        from .run import capture_call

        def step(optimizer: str, amp_: Any, microbatches: int, checkpointing: bool) -> Workload:
            return self._step(b, s, low, "none" if optimizer is None else optimizer, amp_, microbatches, checkpointing)

        with _unpacked_positions():
            return capture_call(run, args, name=label, preamble=True, step=None if stepped else step, notes=self.notes)


#: the heads ``architectures`` may name besides a causal LM's (the model class is then that one)
_HEADS = ("ForCausalLM", "LMHeadModel", "ForMaskedLM")


def _builder(config: Any) -> Any:
    """How to build the config's model: the class ``architectures`` names when it is a language-model head of
    transformers (``BertForMaskedLM``), else ``AutoModelForCausalLM``."""
    tf = require_transformers()
    names = getattr(config, "architectures", None) or []
    if len(names) == 1 and not str(names[0]).endswith(_HEADS):
        raise OptionError(f"config key 'architectures'={names[0]!r} is not modelled: solkit captures language-model "
                          f"heads (*{', *'.join(_HEADS)}); drop 'architectures' to capture this config's causal LM")
    cls = getattr(tf, names[0], None) if len(names) == 1 else None
    if cls is None:
        return tf.AutoModelForCausalLM.from_config
    return lambda cfg, **kw: cls._from_config(cfg, **kw)


def _refused(exc: BaseException, what: str) -> Exception:
    """transformers' own refusal of a config, as solkit's error: a wrong type an ArgumentTypeError, else an
    OptionError, naming the first line of what it said."""
    said = (str(exc).splitlines() or [""])[0] or type(exc).__name__
    error = ArgumentTypeError if isinstance(exc, TypeError) else OptionError
    return error(f"{what}: {type(exc).__name__}: {said}")


def _cache_kwarg(model: Any) -> str:
    """The forward's keyword for a KV cache: ``cache`` (transformers >= 5.2x), else ``past_key_values``."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


@contextlib.contextmanager
def _unpacked_positions() -> Iterator[None]:
    """transformers' packed-sequence check as eager runs it on the positions ``hf_model`` gives (0, 1, 2, ...): its
    kernels, then a host read of ``(mask[:, -1] == 0).all()`` (a stall), found unpacked, so no mask is built and SDPA
    runs causal. (On fake tensors transformers would take the check as tracing and build a mask.)"""
    import transformers.masking_utils as masking

    original = masking.find_packed_sequence_indices

    def unpacked(position_ids: Any) -> Any:
        from .record import active

        mask = original(position_ids)
        if mask is not None:
            done = (mask[:, -1] == 0).all()
            recorder = active()
            if recorder is not None:
                recorder.stall(recorder.modules[-1] if recorder.modules else "", "the packed-sequence check's mask")
                recorder.note("transformers' packed-sequence check reads (mask[:, -1] == 0).all() on the host (a "
                              "stall): the positions 0, 1, 2, ... are one sequence, so no mask is built")
            del done
        return None

    masking.find_packed_sequence_indices = unpacked
    try:
        yield
    finally:
        masking.find_packed_sequence_indices = original


def _optimizer(name: str, model: Any) -> Any:
    """The step's optimizer with its state made (as after a first step), or None."""
    torch = require_torch("capture")
    params = [p for p in model.parameters() if p.requires_grad]
    if name == "none":
        return None
    if name == "adamw":
        opt = torch.optim.AdamW(params, fused=True)
        for p in params:
            opt.state[p] = {"step": torch.zeros((), dtype=torch.float32), "exp_avg": torch.zeros_like(p),
                            "exp_avg_sq": torch.zeros_like(p)}
        return opt
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=True)
    for p in params:
        opt.state[p] = {"momentum_buffer": torch.zeros_like(p)}
    return opt
