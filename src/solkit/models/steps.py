"""The training step of a model built by ``solkit.models``: what eager PyTorch runs, kernel by kernel."""

from __future__ import annotations

from typing import Any

from ..errors import OptionError
from ..ops import fill, foreach
from ..workload import Kernel, Workload
from .program import ModelCall, build
from .training import backward, optimizer_step

__all__ = ["model_step", "recomputed", "resolve_amp"]

_HALF = ("bf16", "fp16")


def resolve_amp(amp: Any, dtype: str) -> bool:
    """AMP by default for a 16-bit forward (fp32 master weights); refused for any other precision."""
    if amp is None:
        return dtype in _HALF
    if amp is not True and amp is not False:
        raise OptionError(f"amp must be True, False or None (the default: True for a bf16 or fp16 forward), got {amp!r}")
    if amp and dtype not in _HALF:
        raise OptionError(f"amp=True autocasts to a 16-bit precision; the forward is {dtype}: build it with dtype='bf16' "
                          "or 'fp16', or pass amp=False")
    return amp


def recomputed(w: Workload) -> Workload:
    """``w`` run again to recompute activations: the same kernels, no model FLOPs (executed only)."""
    parts = tuple((node._replace(model_flops=0.0) if isinstance(node, Kernel) else recomputed(node), count)
                  for node, count in w.parts)
    return Workload.of(f"{w.name} (recomputed)", parts)


def model_step(origin: Any, optimizer: str, amp: Any, microbatches: int, checkpointing: bool, params: Any,
               split: Any = None) -> Workload:
    """The step of a forward built by ``solkit.models`` (``origin`` says how), as ``training_step`` documents."""
    if params is not None:
        raise OptionError(f"params is for a workload built from solkit.ops; this forward was built by solkit.models, "
                          f"which counts its own parameters ({origin.params:,}): leave params unset")
    parallel = split is not None and split.parallel
    if not isinstance(origin, ModelCall):
        if parallel:
            raise OptionError(f"a parallel split (dp, tp, pp, ep, zero) is modelled for Transformer forwards; "
                              f"{type(origin).__name__} steps run on one GPU")
        return origin.training_step(optimizer, amp, microbatches, checkpointing)
    if origin.phase != "forward":
        raise OptionError(f"training_step needs a forward pass, got the model's {origin.phase}: use m.forward(batch=, seq=)")
    if parallel:
        return _parallel(origin, optimizer, amp, microbatches, checkpointing, split)
    m = origin.model
    use_amp = resolve_amp(amp, origin.dtype)
    fwd = build(m, "forward", origin.batch, origin.seq, 0, origin.dtype, origin.impl, origin.kernels, use_amp, True,
                origin.kv_dtype)
    grad = "fp32" if use_amp else origin.dtype
    body: list[tuple[Any, int]] = [(fwd, 1)]
    if m.head != "none":  # nll_loss's backward writes into a zeroed gradient of the logits
        body.append((fill(origin.tokens * m.vocab, "fp32" if origin.kernels == "eager" else origin.dtype)
                     .renamed("zero the logits' gradient", kernels=True), 1))
    if checkpointing:
        layers = next(node for node, _ in fwd.parts if isinstance(node, Workload) and node.name == "layers")
        body.append((recomputed(layers), 1))
    body.append((backward(fwd), 1))
    if m.tie_embeddings:  # the tied matrix's two gradients (embedding and head) summed
        body.append((foreach(m.vocab * m.d_model, 2, 1, 1, grad, name="tied embedding gradients add"), 1))
    step = Workload.of(f"{m.name} forward + backward", tuple(body))
    parts: list[tuple[Any, int]] = [(step, microbatches)]
    if microbatches > 1:  # each later microbatch's gradients added into .grad
        parts.append((foreach(m.params, 2, 1, 1, grad, name="gradient accumulation"), microbatches - 1))
    if optimizer != "none":
        parts.append((optimizer_step(optimizer, m.params, m.param_tensors, "fp32" if use_amp else origin.dtype, grad), 1))
    return Workload.of(f"{m.name} training step", tuple(parts), origin=origin._replace(amp=use_amp, training=True))


def _parallel(origin: ModelCall, optimizer: str, amp: Any, microbatches: int, checkpointing: bool, split: Any) -> Workload:
    """One GPU's share of a split step (``solkit.models.parallel``): the sharded model's microbatch, then the collectives."""
    from .parallel import parallel_step, shard

    m = shard(origin.model, split.tp, split.pp, split.ep)
    call = origin._replace(model=m)
    micro = model_step(call, "none", amp, 1, checkpointing, None)  # one microbatch of the sharded model, no optimizer
    step = micro.parts[0][0]  # forward, zeroed logits' gradient, (recomputation,) backward, tied add
    assert isinstance(step, Workload)  # model_step's parts are workloads
    forward = step.parts[0][0]
    assert isinstance(forward, Workload)
    backward = next(node for node, _ in step.parts if isinstance(node, Workload) and node.name.endswith(" backward"))
    use_amp = resolve_amp(amp, origin.dtype)
    grad = "fp32" if use_amp else origin.dtype
    master = "fp32" if use_amp else origin.dtype

    def opt(params: float, tensors: int) -> Workload:
        return optimizer_step(optimizer, params, tensors, master, grad)

    w = parallel_step(step, m, forward, backward, split, origin.tokens, origin.dtype, grad, checkpointing, microbatches,
                      None if optimizer == "none" else opt)
    return Workload.of(w.name, w.parts, origin=micro.origin)


def resnet_step(origin: Any, optimizer: str, amp: Any, microbatches: int, checkpointing: bool) -> Workload:
    """torchvision ResNet-50's training step: the forward in training mode, cross-entropy, backward, the optimizer."""
    from .resnet import RESNET50_TENSORS, eager_resnet50, fused_resnet50

    if checkpointing:
        raise OptionError("checkpointing=True is modelled for Transformer forwards only; resnet50 runs without it")
    use_amp = resolve_amp(amp, origin.dtype) if origin.kernels == "eager" else False  # fused: no autocast casts
    call = origin._replace(amp=use_amp, training=True)
    fwd = eager_resnet50(call, loss=True) if origin.kernels == "eager" else fused_resnet50(call)
    grad = "fp32" if use_amp else origin.dtype
    params = origin.params
    body = Workload.of("resnet50 forward + backward", ((fwd, 1), (fill(origin.batch * origin.classes, "fp32")
                                                                    .renamed("zero the logits' gradient", kernels=True), 1),
                                                       (backward(fwd), 1)))
    parts: list[tuple[Any, int]] = [(body, microbatches)]
    if microbatches > 1:
        parts.append((foreach(params, 2, 1, 1, grad, name="gradient accumulation"), microbatches - 1))
    if optimizer != "none":
        parts.append((optimizer_step(optimizer, params, RESNET50_TENSORS, "fp32" if use_amp else origin.dtype, grad), 1))
    return Workload.of("resnet50 training step", tuple(parts), origin=call)
