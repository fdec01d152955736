"""Searching parallel splits: the fastest ways to train a Transformer on N GPUs that fit in memory (like Calculon's search).

``search(model, system, global_batch, seq)`` tries every split of the system's GPUs into dp x tp x pp
(tp within a node and dividing the heads, pp at most the layers), every ZeRO stage that applies, micro-batch
sizes up to 16 that divide the per-replica batch, with and without activation checkpointing (divisors only: the
search's time never grows with the global batch or the GPUs). Each candidate's
one-GPU memory (``Transformer.memory``) must fit the GPU (one GPU's memory grows with the micro-batch: once one
does not fit, the larger ones of that split are skipped); each that fits is predicted (``predict`` of its
``training_step`` on the system), and the fastest come back first. A step of a 70B model on 64 GPUs
is predicted in about 15 ms, so a search of a few hundred candidates takes seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from ._typing import AttentionImpl, KernelStyle
from ._validate import checked_call, flag
from .errors import ArgumentTypeError, OptionError, ShapeError
from .hardware.system import as_system
from .models.architecture import Transformer
from .models.parallel import shard
from .models.split import count
from .models.training import training_step
from .prediction import predict
from .sol import mfu

__all__ = ["SplitResult", "search", "candidates", "MAX_MICRO_BATCH"]


@dataclass(frozen=True)
class SplitResult:
    """One split's predicted step: its arguments, seconds, tokens/s, MFU and one GPU's memory."""

    dp: int
    tp: int
    pp: int
    zero: int
    micro_batch: int
    microbatches: int
    checkpointing: bool
    seconds: float
    tokens_per_s: float
    mfu: float
    memory_bytes: float

    def __str__(self) -> str:
        ckpt = ", checkpointing" if self.checkpointing else ""
        return (f"dp={self.dp} tp={self.tp} pp={self.pp} zero={self.zero} micro-batch {self.micro_batch} x "
                f"{self.microbatches}{ckpt}: {self.seconds:.3g} s/step, {self.tokens_per_s:,.0f} tokens/s, MFU "
                f"{self.mfu:.1%}, {self.memory_bytes / 1e9:.3g} GB per GPU")


#: the largest micro-batch the search tries (sequences per forward of one replica)
MAX_MICRO_BATCH = 16


def _divisors(n: int, limit: int) -> list[int]:
    """The divisors of ``n`` up to ``limit``, ascending, in O(min(limit, sqrt(n))) steps (never a range over ``n``)."""
    root = math.isqrt(n)
    if limit <= root:
        return [d for d in range(1, limit + 1) if n % d == 0]
    small = [d for d in range(1, root + 1) if n % d == 0]
    large = [n // d for d in reversed(small) if n // d != d and n // d <= limit]
    return small + large


def _shards(model: Transformer, tp: int, pp: int) -> bool:
    """Whether ``shard`` takes this split of ``model`` (its heads, KV heads, ffn divisible; pp at most the layers)."""
    try:
        shard(model, tp, pp)
    except OptionError:
        return False
    return True


@checked_call
def candidates(model: Transformer, gpus: int, gpus_per_node: int, global_batch: int) -> Iterable[tuple[int, ...]]:
    """(dp, tp, pp, zero, micro_batch, microbatches) of every split the search tries.

    Only divisors are enumerated (tp of the node's GPUs up to the heads, pp of the rest up to the layers, micro-batches
    up to ``MAX_MICRO_BATCH`` of the replica's batch), so the count and the time never grow with ``global_batch`` or
    the number of GPUs (a global batch of 2**40 is searched as fast as one of 64).
    """
    for tp in _divisors(gpus_per_node, min(gpus_per_node, model.heads)):
        if gpus % tp or not _shards(model, tp, 1):
            continue
        for pp in _divisors(gpus // tp, model.layers):
            if not _shards(model, tp, pp):
                continue
            dp = gpus // (tp * pp)
            if global_batch % dp:
                continue
            per_replica = global_batch // dp
            for micro in _divisors(per_replica, MAX_MICRO_BATCH):
                for zero in ((0, 1, 2, 3) if dp > 1 else (0,)):
                    yield dp, tp, pp, zero, micro, per_replica // micro


@checked_call
def search(model: Transformer, system: Any, global_batch: Any, seq: Any = 2048, dtype: str = "bf16",
           kernels: KernelStyle = "fused", impl: AttentionImpl = "flash", optimizer: str = "adamw", checkpointing: Any = (False, True),
           top: int = 10) -> list[SplitResult]:
    """The ``top`` fastest splits of ``system``'s GPUs (a System, or a GPU: one node) that fit, fastest first."""
    if not isinstance(model, Transformer):
        raise ArgumentTypeError(f"model must be a solkit.models.Transformer (e.g. models.preset('llama3-8b')), got "
                                f"{type(model).__name__}")
    g, sys_ = as_system(system)
    batch = count("global_batch", global_batch)
    s = count("seq", seq)
    best = count("top", top)
    choices = tuple(flag("checkpointing", c) for c in (checkpointing if isinstance(checkpointing, (tuple, list))
                                                       else (checkpointing,)))
    if not choices:
        raise OptionError("checkpointing must be True, False or a list of them to try, got an empty list (nothing to try)")
    capacity = g.memory_capacity
    flops = model.flops_per_token(training=True, seq=s) * batch * s  # the job's model FLOPs per step
    if not math.isfinite(flops):
        raise ShapeError(f"global_batch={batch:.4g} x seq={s:,} tokens: the step's model FLOPs are beyond float64 "
                         "(1.8e308)")
    found: list[SplitResult] = []
    too_big: set[tuple[int, int, int, bool]] = set()  # (tp, pp, zero, checkpointing) whose micro-batch outgrew the GPU
    for dp, tp, pp, zero, micro, steps in candidates(model, sys_.n_gpus, sys_.gpus_per_node, batch):
        for ckpt in choices:
            if (tp, pp, zero, ckpt) in too_big:  # micro-batches come in ascending order; a larger one holds more
                continue
            mem = model.memory(micro, s, training=True, optimizer=optimizer, checkpointing=ckpt, dtype=dtype,
                               kernels=kernels, dp=dp, tp=tp, pp=pp, zero=zero, microbatches=steps)
            if mem.total > capacity:
                too_big.add((tp, pp, zero, ckpt))
                continue
            step = training_step(model.forward(batch=micro, seq=s, dtype=dtype, impl=impl, kernels=kernels),
                                 optimizer, steps, ckpt, dp=dp, tp=tp, pp=pp, zero=zero)
            seconds = float(predict(step, sys_, warn=False).seconds)
            found.append(SplitResult(dp, tp, pp, zero, micro, steps, ckpt, seconds, batch * s / seconds,
                                     float(mfu(flops, seconds, g, dtype, sys_.n_gpus)), float(mem.total)))
    if not found:
        raise OptionError(f"no split of {sys_.n_gpus} GPUs fits {model.name} with global_batch={batch}, seq={s} in "
                          f"{capacity / 1e9:g} GB per GPU; add nodes or shrink the batch")
    return sorted(found, key=lambda r: r.seconds)[:best]
