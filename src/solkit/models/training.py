"""A training step: the forward kernels, the loss, each operator's backward in reverse order, the optimizer.

Each operator's backward is its own registered formula (``solkit.ops.registry``), computed
from the arguments it was called with: GEMMs and convolutions a data and a weight gradient
(and a bias-gradient reduction), flash attention one recomputing kernel, naive attention
autograd's four products and the softmax's gradient, memory-bound kernels
``memory_bound_backward``. Every backward counts twice its forward's model FLOPs, so a step's
model FLOPs are 3x the forward's (the usual MFU convention), whatever the operators.

For a forward built by ``solkit.models`` (``Transformer.forward``, ``resnet50``) the step is the
one eager PyTorch runs: the forward rebuilt as training runs it (dropout; under ``amp`` the casts of
the fp32 master weights), the loss (log-softmax + NLL over the vocabulary or classes) and the zeroed
gradient of the logits, the backward (each cast's gradient cast back to fp32), a tied embedding's
two gradients added, gradient accumulation over ``microbatches``, and the optimizer step. Casts,
dropout, zeroing and the optimizer carry no model FLOPs (DESIGN).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .._validate import checked_call, choice, dim, flag, shown
from ..errors import ArgumentTypeError, OptionError
from ..ops import adamw, foreach
from ..ops.registry import REGISTRY
from ..precision import normalize
from ..stacks.torch211 import ADAMW_TENSORS_PER_LAUNCH, CHUNK_ELEMENTS, CHUNKS_PER_LAUNCH, SGD_TENSORS_PER_LAUNCH
from ..workload import Kernel, Node, Workload, as_workload, with_kernels
from .split import split_of

__all__ = ["training_step", "backward", "OPTIMIZERS", "OPTIMIZER_STATES", "optimizer_step", "SGD_PASSES", "resolve_amp",
           "recomputed"]

#: the optimizers and their states per parameter: AdamW's two moments, SGD's momentum buffer
OPTIMIZER_STATES = {"adamw": 2, "sgd": 1, "none": 0}
OPTIMIZERS = tuple(OPTIMIZER_STATES)
#: the 16-bit precisions AMP autocasts to (fp32 master weights)
_HALF = ("bf16", "fp16")
#: foreach SGD with momentum and weight decay (torch.optim.SGD(foreach=True)): d = g + wd*p (2 lists in, 1 out),
#: buf *= momentum (1, 1), buf += d (2, 1), p += -lr*buf (2, 1): (inputs, outputs, FLOPs per element)
SGD_PASSES = ((2, 1, 2), (1, 1, 1), (2, 1, 1), (2, 1, 2))


@checked_call
def backward(forward: Workload) -> Workload:
    """The backward pass of ``forward``: each operator's gradient, last operator first; repeated parts stay counted."""
    w = as_workload(forward, "forward")
    how = w.autograd
    if how is not None:  # eager autograd's own launches around the gradients
        if not how.gradient:
            return how.extra if how.extra is not None else Workload.of(f"{w.name} backward (none)", ())
        grad = backward(Workload.of(w.name, w.parts, w.call))
        if how.launches is not None:
            grad = with_kernels(grad, launches=float(how.launches))
        return grad if how.extra is None else Workload.of(grad.name, ((grad, 1), (how.extra, 1)))
    if w.call is not None:
        return REGISTRY[w.call.op].gradient(w.call, w.name)
    parts: list[tuple[Node, int]] = []
    for node, count in reversed(w.parts):
        if isinstance(node, Kernel):
            raise OptionError(
                f"forward: kernel {node.name!r} was not built by a registered operator, so its backward formula is "
                f"unknown; build the workload from solkit.ops (registered operators: {', '.join(REGISTRY)})"
            )
        parts.append((backward(node), count))
    return Workload.of(f"{w.name} backward", tuple(parts))


def _launches(tensors: int, elements: float, per_launch: int) -> float:
    """multi_tensor_apply's launches: a new one when the tensor list or the block list is full."""
    chunks = elements / CHUNK_ELEMENTS + tensors  # each tensor's last chunk is partial
    return float(max(math.ceil(tensors / per_launch), math.ceil(chunks / CHUNKS_PER_LAUNCH)))


def optimizer_step(optimizer: str, params: Any, tensors: int, dtype: str, grad_dtype: Optional[str] = None) -> Workload:
    """The optimizer's kernels over ``params`` elements in ``tensors`` tensors: fused AdamW or foreach SGD with momentum."""
    if optimizer == "adamw":  # torch.optim.AdamW(fused=True): one pass over p, g, m, v
        step = adamw(params, dtype, grad_dtype)
        kernel = step.kernels[0]
        launches = _launches(tensors, params, ADAMW_TENSORS_PER_LAUNCH)
        counter = foreach(tensors, 1, 1, 1, "fp32", name="step counters")  # state_steps += 1 (two foreach launches)
        return Workload.of("optimizer (adamw, fused)", ((kernel._replace(launches=launches), 1), (counter, 2)))
    passes = []
    for inputs, outputs, flops in SGD_PASSES:
        w = foreach(params, inputs, outputs, flops, dtype, name="sgd (foreach)")
        passes.append((w.kernels[0]._replace(launches=_launches(tensors, params, SGD_TENSORS_PER_LAUNCH)), 1))
    return Workload.of("optimizer (sgd, foreach)", tuple(passes))


@checked_call
def training_step(
    forward: Workload,
    optimizer: str = "adamw",
    microbatches: Any = 1,
    checkpointing: Any = False,
    dp: Any = 1,
    tp: Any = 1,
    pp: Any = 1,
    sp: Any = False,
    ep: Any = 1,
    zero: Any = 0,
    amp: Any = None,
    params: Any = None,
    overlap: Any = True,
    bucket_mb: Any = 25,
    interleave: Any = 1,
) -> Workload:
    """One training step on ONE GPU: ``microbatches`` x (forward, loss, backward), then the optimizer, and the step's
    collectives when it is split over GPUs; model FLOPs 3x the forward's (for a model's forward: 3x the forward
    as training runs it, the loss included).

    ``forward`` built by ``solkit.models`` is rebuilt as training runs it; ``amp`` (default: yes for a
    16-bit forward) holds fp32 master weights cast to the forward's precision. ``checkpointing``
    recomputes each layer's forward in the backward (executed, not model, FLOPs). A bare workload (from
    ``solkit.ops``) gets its backward, and the optimizer only with ``params=`` (its parameter count).
    The forward's batch is one microbatch of one data-parallel replica. ``dp``, ``tp``, ``pp``, ``sp``,
    ``ep``, ``zero`` split it over dp x tp x pp GPUs (``solkit.models.parallel`` says what each runs; ``ep``
    shards a mixture of experts' experts over part of the data-parallel group); ``overlap`` runs the data-parallel reductions beside the backward (DDP,
    FSDP) rather than after it; ``bucket_mb`` is DDP's bucket size; ``interleave`` Megatron's virtual pipeline
    stages per GPU.
    """
    w = as_workload(forward, "forward")
    opt = choice("optimizer", "none" if optimizer is None else optimizer, OPTIMIZERS)
    n_micro = dim("microbatches", microbatches)
    if not (type(n_micro) is float and n_micro.is_integer()):
        raise OptionError(f"microbatches must be one positive integer, got {microbatches!r}")
    recompute = flag("checkpointing", checkpointing)
    split = split_of(dp, tp, pp, sp, ep, zero, overlap, bucket_mb, interleave)
    recipe = w.recipe
    if recipe is None:  # ops, or one construct of a model's eager program
        if split.parallel:
            first = next(k for k in ("tp", "pp", "dp", "zero") if getattr(split, k) not in (1, 0) or k == "zero")
            raise OptionError(f"{first}={getattr(split, first)}: a parallel split needs a forward built by solkit.models "
                              f"(it knows its layers and parameters); {w.name!r} was built from solkit.ops")
        return _bare_step(w, opt, amp, int(n_micro), recompute, params)
    if params is not None:
        raise OptionError(f"params is for a workload built from solkit.ops; this forward was built by solkit.models, "
                          f"which counts its own parameters ({recipe.params:,}): leave params unset")
    return recipe.training_step(opt, amp, int(n_micro), recompute, split)


def resolve_amp(amp: Any, dtype: str) -> bool:
    """AMP by default for a 16-bit forward (fp32 master weights); refused for any other precision."""
    if amp is None:
        return dtype in _HALF
    if amp is not True and amp is not False:
        if not isinstance(amp, np.bool_):  # a string, a number: the wrong type (numpy's bool is a bool)
            raise ArgumentTypeError(f"amp must be True, False or None (the default: True for a bf16 or fp16 forward), "
                                    f"got {shown(amp)}")
        amp = bool(amp)
    if amp and dtype not in _HALF:
        raise OptionError(f"amp=True autocasts to a 16-bit precision; the forward is {dtype}: build it with dtype='bf16' "
                          "or 'fp16', or pass amp=False")
    return amp


def recomputed(w: Workload) -> Workload:
    """``w`` run again to recompute activations: the same kernels, no model FLOPs (executed only)."""
    parts = tuple((node._replace(model_flops=0.0) if isinstance(node, Kernel) else recomputed(node), count)
                  for node, count in w.parts)
    return Workload.of(f"{w.name} (recomputed)", parts)


def _bare_step(w: Workload, opt: str, amp: Any, microbatches: int, recompute: bool, params: Any) -> Workload:
    """forward + backward of a workload built from ops; the optimizer needs ``params``."""
    if amp:
        raise OptionError(f"amp=True needs a forward built by solkit.models (its weights are known); {w.name!r} was "
                          "built from solkit.ops: leave amp unset")
    if recompute:
        raise OptionError(f"checkpointing=True needs a forward built by solkit.models (its layers are known); "
                          f"{w.name!r} was built from solkit.ops")
    if opt != "none" and params is None:
        raise OptionError(f"optimizer={opt!r} needs the parameter count of {w.name!r} (built from solkit.ops, so its "
                          "weights are unknown): pass params=N, or optimizer=None for the forward and backward only")
    step = Workload.of(f"{w.name} + backward", ((w, 1), (backward(w), 1)))
    if microbatches > 1:
        step = step.repeat(microbatches, f"{w.name} + backward x {microbatches}")
    if opt == "none":
        return step
    n = dim("params", params)
    dtype = normalize(w.precision, "forward precision")
    return Workload.of(f"{w.name} training step", ((step, 1), (optimizer_step(opt, n, 1, dtype), 1)))
