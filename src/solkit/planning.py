"""Serving figures of a Transformer on a GPU: time to first token, time per output token, tokens/s, memory.

``inference(model, gpu, batch, prompt, output)`` composes ``predict`` over the model's programs (and
``search_splits(model, system, global_batch, seq)`` searches parallel training splits: ``solkit.splits``):

- time to first token (TTFT): the prefill of ``prompt`` tokens per sequence (logits of the last);
- time per output token (TPOT): the mean decode step while the context grows from ``prompt`` to
  ``prompt + output - 1`` tokens (each decode step predicted at ``DECODE_POINTS`` contexts spread
  over that range and averaged: a step's time is close to affine in its context);
- decode tokens/s = batch / TPOT; end-to-end latency = TTFT + output x TPOT; throughput =
  batch x output / latency; the memory footprint with the KV cache at ``prompt + output`` tokens.

``batch`` may be an array (a sweep: every figure comes back as an array). Precision options:
``dtype`` (activations and unquantized weights), ``quant`` ("w4a16", "w8a16", "w8a8", "fp8": the
layers' linear layers) and ``kv_dtype`` (e.g. "fp8": the KV cache). ``kernels="eager"`` is what
Hugging Face transformers runs in eager PyTorch (with its host time); "fused" a fused engine's kernels
(no host time: a CUDA-graph replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._num import result
from ._typing import AttentionImpl, Dim, DType, GPULike, KernelStyle, Quantization
from ._validate import checked_call, dim, shown
from .capture.hf import CapturedModel
from .errors import ArgumentTypeError, OptionError
from .hardware import as_gpu
from .models.architecture import Transformer
from .models.memory import MemoryFootprint, memory
from .prediction import predict
from .splits import SplitResult
from .splits import search as search_splits

__all__ = ["InferenceEstimate", "inference", "DECODE_POINTS", "search_splits", "SplitResult"]

#: contexts at which a decode step is predicted to average the time per output token
DECODE_POINTS = 5


@dataclass(frozen=True)
class InferenceEstimate:
    """Predicted serving figures (seconds, tokens/s, bytes); arrays when ``batch`` was an array."""

    model: str
    gpu: str
    batch: Any
    prompt: int
    output: int
    ttft: Any  # s: the prefill
    tpot: Any  # s: the mean decode step
    decode_tokens_per_s: Any  # batch / tpot
    latency: Any  # s: ttft + output x tpot
    throughput: Any  # generated tokens/s over the whole request: batch x output / latency
    memory: Any  # a MemoryFootprint (closed form), or a captured program's CaptureMemory

    @property
    def fits(self) -> Any:
        """Whether the weights, KV cache and working set fit the GPU's memory."""
        return self.memory.fits

    def to_dict(self) -> dict[str, Any]:
        """Plain figures for a table or JSON."""
        out = {k: getattr(self, k) for k in ("model", "gpu", "batch", "prompt", "output", "ttft", "tpot",
                                             "decode_tokens_per_s", "latency", "throughput")}
        out.update(memory_bytes=self.memory.total, fits=self.memory.fits)
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in out.items()}

    def __repr__(self) -> str:
        if np.ndim(self.batch):
            return f"InferenceEstimate({self.model} on {self.gpu}: a sweep over {np.size(self.batch)} batch sizes)"
        return (f"InferenceEstimate({self.model} on {self.gpu}, batch {self.batch:g}, prompt {self.prompt}, output "
                f"{self.output}: TTFT {self.ttft * 1e3:.3g} ms, TPOT {self.tpot * 1e3:.3g} ms, "
                f"{self.decode_tokens_per_s:.4g} tokens/s decoding, {self.memory.total / 1e9:.3g} GB"
                f"{'' if self.fits in (None, True) else ' (does NOT fit)'})")


@checked_call
def inference(model: Transformer | CapturedModel, gpu: GPULike, batch: Dim = 1, prompt: Dim = 2048, output: Dim = 256,
              dtype: DType = "bf16", kv_dtype: DType | None = None, quant: Quantization | None = None,
              kernels: KernelStyle = "eager", impl: AttentionImpl = "sdpa") -> InferenceEstimate:
    """Predicted TTFT, TPOT, tokens/s and memory of serving ``model`` on ``gpu`` (module docstring)."""
    if isinstance(model, CapturedModel):
        return _captured(model, gpu, batch, prompt, output, dtype, kv_dtype, quant, kernels, impl)
    if not isinstance(model, Transformer):
        hint = (f": build it with models.preset({shown(model)}) or models.from_hf_config(...)" if isinstance(model, str)
                else "")
        raise ArgumentTypeError(f"model must be a solkit.models.Transformer or a captured model (models.preset(...), "
                                f"models.from_hf_config(...)), got the {type(model).__name__} {shown(model)}{hint}")
    g = as_gpu(gpu)
    b = dim("batch", batch)
    p = int(dim("prompt", prompt)) if np.ndim(prompt) == 0 else _scalar("prompt")
    n = int(dim("output", output)) if np.ndim(output) == 0 else _scalar("output")
    options: dict[str, Any] = dict(dtype=dtype, kv_dtype=kv_dtype, quant=quant, kernels=kernels, impl=impl)
    ttft = predict(model.prefill(batch=b, seq=p, **options), g, warn=False).seconds
    contexts = np.unique(np.linspace(p, p + n - 1, DECODE_POINTS).round())
    steps = predict(model.decode(batch=np.asarray(b)[..., None], context=contexts, **options), g, warn=False).seconds
    tpot = result(np.mean(steps, axis=-1))
    latency = ttft + n * tpot
    footprint = memory(model, batch=b, seq=p + n, gpu=g, dtype=dtype, kv_dtype=kv_dtype, quant=quant)
    return InferenceEstimate(model.name, g.name, b, p, n, ttft, tpot, result(b / tpot), result(latency),
                             result(b * n / latency), footprint)


def _captured(model: CapturedModel, gpu: Any, batch: Any, prompt: Any, output: Any, dtype: Any, kv_dtype: Any,
              quant: Any, kernels: Any, impl: Any) -> InferenceEstimate:
    """``inference`` of a captured model: one shape, each decode point captured (NB: its memory is the prefill's peak
    at prompt + output tokens, whose activations a decode step never holds: a ceiling on the served footprint)."""
    g = as_gpu(gpu)
    if np.ndim(batch) or np.ndim(prompt) or np.ndim(output):
        raise OptionError("a captured model runs one shape: batch, prompt and output must each be one number (call "
                          "inference once per shape, or sweep a closed-form models.Transformer)")
    b, p, n = (int(dim(name, value)) for name, value in (("batch", batch), ("prompt", prompt), ("output", output)))
    options: dict[str, Any] = dict(dtype=dtype, kv_dtype=kv_dtype, quant=quant, kernels=kernels, impl=impl)
    ttft = float(predict(model.prefill(batch=b, seq=p, **options), g, warn=False).seconds)
    contexts = np.unique(np.linspace(p, p + n - 1, DECODE_POINTS).round())
    tpot = float(np.mean([float(predict(model.decode(batch=b, context=int(c), **options), g, warn=False).seconds)
                          for c in contexts]))
    latency = ttft + n * tpot
    footprint = model.memory(batch=b, seq=p + n, gpu=g, dtype=dtype)
    return InferenceEstimate(model.name, g.name, b, p, n, ttft, tpot, b / tpot, latency, b * n / latency, footprint)


def _scalar(name: str) -> Any:
    raise OptionError(f"{name} must be one number (sweep the batch, or call once per {name})")


def __dir__() -> list[str]:
    """The public names, the public submodules loaded, and the dunders (not the names this module imports for itself)."""
    return sorted({*__all__, *(n for n, v in globals().items() if n.startswith("__")
                               or (not n.startswith("_") and getattr(v, "__name__", None) == f"{__name__}.{n}"))})
