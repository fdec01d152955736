"""``MemoryFootprint``: what a transformer's training step or inference holds in GPU memory, and whether it fits.

- weights: every parameter in its stored precision (fp32 master weights under AMP, training or serving); under
  AMP the 16-bit copies autocast makes (and caches) of the linear layers' weights for the forward are counted too;
- gradients: one per parameter (training), in the master weights' precision;
- optimizer_states: AdamW two moments, SGD with momentum one buffer, in the master precision;
- activations: training: the tensors autograd keeps for the backward, summed kernel by kernel as
  the program is built (``solkit.models.program``), with checkpointing each layer's input plus one
  layer's recomputed set; inference (serving: ``seq`` new tokens per sequence, the prefill's or
  one decode step's): the larger of one layer's working set (the residual, its input and the MLP's
  intermediates, seq tokens) and the last token's logits;
- kv_cache: inference, ``context`` tokens per sequence (default ``seq``; a decode step: seq=1,
  context = the tokens cached).

NB: ``total`` is the sum: it leaves out the CUDA context, cuBLAS/cuDNN workspaces and the caching
allocator's fragmentation, and takes the peak as every term alive at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._display import fmt_bytes, html_table
from .._num import result
from .._optional import require_pandas
from .._validate import checked_call, choice, dim, flag, shown
from ..errors import ArgumentTypeError, OptionError, ShapeError
from ..precision import normalize, storage_bytes
from ..workload import overflow
from ._common import naming_overflow
from .architecture import Transformer
from .program import KERNEL_STYLES, QUANTIZATIONS, ModelCall, activations
from .parallel import shard, zero_shard
from .split import Split, count, split_of
from .training import OPTIMIZER_STATES, OPTIMIZERS, resolve_amp

__all__ = ["MemoryFootprint", "memory"]


@dataclass(frozen=True)
class MemoryFootprint:
    """Bytes held on the GPU by a model's step, by kind, their total, and (given a GPU) whether it fits."""

    weights: Any
    gradients: Any
    optimizer_states: Any
    activations: Any
    kv_cache: Any
    total: Any
    fits: Any = None  # a bool (an array of them for a sweep), or None without a GPU
    max_batch: Optional[int] = None
    capacity: Optional[float] = None

    def __repr__(self) -> str:
        if np.ndim(self.total):
            return (f"MemoryFootprint(a sweep of shape {np.shape(self.total)}: total {fmt_bytes(np.min(self.total))} to "
                    f"{fmt_bytes(np.max(self.total))})")
        parts = ", ".join(f"{k} {fmt_bytes(getattr(self, k))}" for k in _FIGURES)
        return f"MemoryFootprint({parts}{self._fit_note()})"

    def _fit_note(self) -> str:
        """'; fits in 141 GB, up to batch 7', '; does NOT fit in 141 GB (largest batch 0)' or '' without a GPU."""
        if self.capacity is None:
            return ""
        cap = fmt_bytes(self.capacity)
        if np.ndim(self.fits):
            return f"; fits in {cap} at {int(np.sum(self.fits))} of {np.size(self.fits)} points"
        return (f"; fits in {cap}, up to batch {self.max_batch}" if self.fits
                else f"; does NOT fit in {cap} (largest batch {self.max_batch})")

    def _repr_html_(self) -> str:
        """A table: each kind of bytes with its share of the total (a sweep: its smallest and largest)."""
        caption = "memory footprint" + self._fit_note().replace(";", ":", 1)
        if np.ndim(self.total):
            rows = [(k.replace("_", " "), fmt_bytes(np.min(getattr(self, k))), fmt_bytes(np.max(getattr(self, k))))
                    for k in _FIGURES]
            return html_table(("held", "smallest", "largest"), rows, f"{caption} (a sweep of shape {np.shape(self.total)})")
        total = float(self.total)
        rows = [(k.replace("_", " "), fmt_bytes(getattr(self, k)),
                 f"{float(getattr(self, k)) / total:.1%}" if total > 0 else "-") for k in _FIGURES]
        return html_table(("held", "bytes", "share"), rows, caption)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per configuration (a sweep: one per point, flattened in C order): each kind's
        bytes (``weights_bytes``, ..., ``total_bytes``), and with a GPU ``capacity_bytes``, ``fits`` and ``max_batch`` (one
        figure for a whole sweep, as the footprint holds it; <NA> where nothing grows with the batch).

        NB: bytes are whole numbers (int64), rounded up: a 4-bit tensor of odd size takes its last byte whole.
        """
        pd = require_pandas()
        shape = np.shape(self.total)
        columns: dict[str, Any] = {f"{k}_bytes": _whole_bytes(getattr(self, k), shape) for k in _FIGURES}
        if self.capacity is not None:
            columns["capacity_bytes"] = _whole_bytes(self.capacity, shape)
            columns["fits"] = np.broadcast_to(np.asarray(self.fits, dtype=bool), shape).reshape(-1)
            columns["max_batch"] = pd.array([self.max_batch] * int(np.prod(shape)), dtype="Int64")  # None: <NA>
        return pd.DataFrame(columns)


def _whole_bytes(figure: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``figure`` broadcast to ``shape`` and flattened, as int64 bytes rounded up (float64 past int64's range)."""
    flat = np.ceil(np.broadcast_to(np.asarray(figure, dtype=np.float64), shape).reshape(-1))
    return flat.astype(np.int64) if flat.size == 0 or float(np.max(flat)) < 2.0**63 else flat


@checked_call
def memory(model: Transformer, batch: Any = 1, seq: Any = 2048, training: Any = False, optimizer: Any = "adamw",
           checkpointing: Any = False, gpu: Any = None, dtype: Any = "bf16", amp: Any = None, context: Any = None,
           kernels: Any = "eager", kv_dtype: Any = None, quant: Any = None, dp: Any = 1, tp: Any = 1, pp: Any = 1,
           sp: Any = False, zero: Any = 0, microbatches: Any = 1, ep: Any = 1) -> MemoryFootprint:
    """The memory footprint of ``model`` training on (or serving) batch x seq tokens; see the module docstring.

    Split over GPUs (training), the footprint is one GPU's: ``tp`` and ``pp`` shard the model
    (``solkit.models.parallel.shard``; ``ep`` the experts); ``zero`` 1, 2, 3 divide the optimizer states, then the gradients,
    then the weights by ``dp`` (each rank's shard of the flat buffer padded to a multiple of dp:
    ``parallel.zero_shard``; ZeRO-3 adds two layers gathered at once: the one computing and the one
    prefetched); a 1F1B pipeline's first stage holds min(pp, microbatches) microbatches' activations;
    ``sp`` divides the layers' activations by ``tp`` (Megatron: norms and dropouts on 1/tp of the tokens).
    ``batch`` is one microbatch of one data-parallel replica. ``amp=True`` serving (autocast over fp32 weights)
    counts the weights in fp32 and the 16-bit copies autocast caches, as training does (NB: under ``torch.no_grad``,
    as ``generate`` runs; ``torch.inference_mode`` caches none). A figure beyond float64 is a ShapeError naming the
    arguments, never an inf.
    """
    if not isinstance(model, Transformer):
        raise ArgumentTypeError(f"model must be a solkit.models.Transformer (e.g. models.preset('llama3-8b')), got "
                                f"{shown(model)}")
    with naming_overflow("memory", batch=batch, seq=seq, context=context), np.errstate(over="ignore", invalid="ignore"):
        footprint = _memory(model, batch, seq, training, optimizer, checkpointing, gpu, dtype, amp, context, kernels,
                            kv_dtype, quant, split_of(dp, tp, pp, sp, ep, zero), count("microbatches", microbatches))
        for name in _FIGURES:
            if not np.all(np.isfinite(getattr(footprint, name))):
                raise overflow(ShapeError(f"the footprint's {name} is beyond float64 (more than 1.8e308 bytes)"))
    return footprint


#: the figures of a footprint, each a number of bytes
_FIGURES = ("weights", "gradients", "optimizer_states", "activations", "kv_cache", "total")


def _memory(model: Transformer, batch: Any, seq: Any, training: Any, optimizer: Any, checkpointing: Any, gpu: Any,
            dtype: Any, amp: Any, context: Any, kernels: Any, kv_dtype: Any, quant: Any, split: Split,
            micro: int) -> MemoryFootprint:
    """``memory`` of validated split arguments (no check of the figures' range)."""
    train = flag("training", training)
    if split.parallel and not train:
        raise OptionError("dp, tp, pp, sp and zero split a training step: pass training=True")
    b, s = dim("batch", batch), dim("seq", seq)
    cd = normalize(dtype, "dtype")
    opt = choice("optimizer", "none" if optimizer is None else optimizer, OPTIMIZERS)
    ckpt = flag("checkpointing", checkpointing)
    style = choice("kernels", kernels, KERNEL_STYLES)
    if ckpt and not train:
        raise OptionError("checkpointing=True applies to training: pass training=True")
    q = None if quant is None else choice("quant", quant, tuple(QUANTIZATIONS))
    if train:
        for name, value in (("quant", quant), ("context", context), ("kv_dtype", kv_dtype)):
            if value is not None:
                raise OptionError(f"{name}={value!r} is an inference option (the served weights, the KV cache); "
                                  f"training=True holds no KV cache and its weights in dtype or fp32: leave {name} unset")
        use_amp = resolve_amp(amp, cd)
    else:
        use_amp = False if amp is None else resolve_amp(amp, cd)  # serving: no autocast unless asked
        if use_amp and q is not None:
            raise OptionError(f"amp=True keeps fp32 weights for autocast; quant={q!r} stores them in fewer bits: choose one")
    if split.parallel:
        return _split_memory(model, b, s, opt, ckpt, gpu, cd, use_amp, style, split, micro)
    # weights, gradients and states are fixed; activations and the KV cache grow with the batch: one build, one sequence
    one = _footprint(model, s, train, opt, ckpt, cd, use_amp, context, style, kv_dtype, q)
    footprint = _summed(one.weights, one.gradients, one.optimizer_states, one.activations * b, one.kv_cache * b)
    if gpu is None:
        return footprint

    return _fitted(footprint, one.activations + one.kv_cache, gpu)


def _footprint(m: Transformer, s: Any, train: bool, opt: str, ckpt: bool, cd: str, use_amp: bool, context: Any,
               kernels: str, kv_dtype: Any, quant: Any = None) -> MemoryFootprint:
    """The footprint with one sequence (batch 1): every batch-dependent term is proportional to the batch."""
    every = m.layers * m.layer_linear_weights + m.head_linear_weights  # autocast casts every expert's weights
    if train:
        master = "fp32" if use_amp else cd
        e = storage_bytes(master)
        weights = m.params * e + (every * storage_bytes(cd) if use_amp else 0.0)
        call = ModelCall(m, "forward", 1.0, s, 0.0, cd, "sdpa", kernels, use_amp, True, cd)
        acts = activations(call).total(m.layers, ckpt)
        return _summed(weights, m.params * e, OPTIMIZER_STATES[opt] * m.params * e, acts, 0.0)
    e = storage_bytes(cd)
    stream = storage_bytes("fp32") if use_amp else e  # autocast keeps the residual stream in fp32
    c = s if context is None else dim("context", context)
    kv = m.kv_cache_bytes(1, c, cd if kv_dtype is None else kv_dtype)
    layer = s * (m.d_model * 2 * stream + (3 if m.gated else 2) * m.ffn_width * e)  # residual, MLP intermediates
    logits = m.vocab * e if m.head != "none" else 0.0  # serving: the last token's logits per sequence
    weights = m.params * e
    if use_amp:  # fp32 weights, and the 16-bit copy of every linear weight autocast caches for the forward
        weights = m.params * storage_bytes("fp32") + every * e
    if quant is not None:  # the layers' linear weights in 4 or 8 bits, the rest in dtype
        quantized = m.layers * m.layer_linear_weights
        weights = (m.params - quantized) * e + quantized * storage_bytes(QUANTIZATIONS[quant][0])
    return _summed(weights, 0.0, 0.0, _maximum(layer, logits), kv)


def _split_memory(m: Transformer, batch: Any, seq: Any, optimizer: str, checkpointing: bool, gpu: Any, dtype: str,
                  amp: bool, kernels: str, split: Split, microbatches: int) -> MemoryFootprint:
    """One GPU's footprint of a split training step (``memory``'s docstring), of validated arguments."""

    local = shard(m, split.tp, split.pp, split.ep)
    one = _memory(local, batch, seq, True, optimizer, checkpointing, None, dtype, amp, None, kernels, None, None, Split(), 1)
    dp = split.dp
    e = one.gradients / local.params  # bytes per master parameter
    held = zero_shard(local, dp, split.zero) * e  # one rank's share of the padded flat buffer, one byte per master byte
    states = one.optimizer_states * (held / one.gradients) if split.zero >= 1 else one.optimizer_states
    grads = held if split.zero >= 2 else one.gradients
    weights = one.weights
    if split.zero == 3:  # the master shard, the autocast copies' share, and two layers gathered at once
        weights = held + (one.weights - one.gradients) / dp + 2 * local.layer_params * e
    acts = one.activations
    if split.sp:  # the layers' tensors on 1/tp of the tokens: the unsharded layer's saved bytes over tp
        full = _memory(m.with_(layers=local.layers), batch, seq, True, optimizer, checkpointing, None, dtype, amp, None,
                       kernels, None, None, Split(), 1)
        acts = full.activations / split.tp
    in_flight = min(split.pp, microbatches) if split.pp > 1 else 1
    acts = acts * in_flight
    footprint = _summed(weights, grads, states, acts, 0.0)
    return footprint if gpu is None else _fitted(footprint, acts / batch, gpu)


def _fitted(footprint: MemoryFootprint, per_batch: Any, gpu: Any) -> MemoryFootprint:
    """``footprint`` with whether it fits ``gpu`` and the largest batch that does (the fixed terms, then ``per_batch``
    bytes per sequence of the batch; a sweep: its largest per-sequence bytes)."""
    from ..hardware import as_gpu

    capacity = float(as_gpu(gpu).memory_capacity)
    fixed = footprint.weights + footprint.gradients + footprint.optimizer_states
    largest = max(0, math.floor((capacity - fixed) / float(np.max(per_batch)))) if np.max(per_batch) > 0 else None
    fits = bool(footprint.total <= capacity) if np.ndim(footprint.total) == 0 else footprint.total <= capacity
    return MemoryFootprint(footprint.weights, footprint.gradients, footprint.optimizer_states, footprint.activations,
                           footprint.kv_cache, footprint.total, fits, largest, capacity)


def _maximum(a: Any, b: Any) -> Any:
    return result(np.maximum(a, b))


def _summed(weights: Any, gradients: Any, states: Any, acts: Any, kv: Any) -> MemoryFootprint:
    total = weights + gradients + states + acts + kv
    return MemoryFootprint(weights, gradients, states, acts, kv, total)
