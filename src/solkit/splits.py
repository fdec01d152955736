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

from ._dir import public_dir
from ._display import fmt_bytes, fmt_seconds, html_table
from ._optional import require_pandas
from ._typing import AttentionImpl, KernelStyle
from ._validate import checked_call, flag
from .cost import Cost, cost
from .errors import ArgumentTypeError, OptionError, ShapeError
from .hardware.system import as_system
from .models.architecture import Transformer
from .models.parallel import shard
from .models.split import count
from .models.training import training_step
from .prediction import predict
from .sol import mfu

__all__ = ["SplitResult", "search", "candidates", "frame", "MAX_MICRO_BATCH"]


@dataclass(frozen=True)
class SplitResult:
    """One split's predicted step: its arguments, seconds, tokens/s, MFU, one GPU's memory and the step's cost on all GPUs."""

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
    n_gpus: int = 1  # GPUs the step runs on (dp x tp x pp)
    gpu: str = ""
    cost: Cost | None = None  # per step, on n_gpus GPUs

    def to_dict(self) -> dict[str, Any]:
        """Plain figures for a table or JSON (seconds, tokens/s, bytes per GPU; GPU-hours, joules, dollars per step)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in ("dp", "tp", "pp", "zero", "micro_batch", "microbatches",
                                                            "checkpointing", "seconds", "tokens_per_s", "mfu",
                                                            "memory_bytes", "n_gpus", "gpu")}
        if self.cost is not None:
            out.update(gpu_hours_per_step=self.cost.gpu_hours, energy_j_per_step=self.cost.energy_j,
                       usd_per_step=self.cost.usd)
        return out

    def to_frame(self) -> Any:
        """A one-row pandas DataFrame (``frame(results)`` tabulates a search's list)."""
        return frame([self])

    def _cells(self) -> tuple[Any, ...]:
        c = self.cost
        return (self.dp, self.tp, self.pp, self.zero, f"{self.micro_batch} x {self.microbatches}",
                "yes" if self.checkpointing else "no", fmt_seconds(self.seconds), f"{self.tokens_per_s:,.0f}",
                f"{self.mfu:.1%}", fmt_bytes(self.memory_bytes), "" if c is None else f"{c.gpu_hours:.4g}",
                "" if c is None or c.usd is None else f"${c.usd:.4g}")

    def _repr_html_(self) -> str:
        return html_table(_HEADER, [self._cells()], caption=f"a predicted step on {self.n_gpus} x {self.gpu}")

    def __repr__(self) -> str:
        c = self.cost
        money = "" if c is None else (f", {c.gpu_hours:.4g} GPU-hours" + ("" if c.usd is None else f", ${c.usd:.4g}")
                                      + " per step")
        ckpt = ", checkpointing" if self.checkpointing else ""
        return (f"SplitResult(dp={self.dp} tp={self.tp} pp={self.pp} zero={self.zero} micro-batch {self.micro_batch} x "
                f"{self.microbatches}{ckpt}: {fmt_seconds(self.seconds)}/step, {self.tokens_per_s:,.0f} tokens/s, MFU "
                f"{self.mfu:.1%}, {fmt_bytes(self.memory_bytes)} per GPU{money})")

    def __str__(self) -> str:
        ckpt = ", checkpointing" if self.checkpointing else ""
        return (f"dp={self.dp} tp={self.tp} pp={self.pp} zero={self.zero} micro-batch {self.micro_batch} x "
                f"{self.microbatches}{ckpt}: {self.seconds:.3g} s/step, {self.tokens_per_s:,.0f} tokens/s, MFU "
                f"{self.mfu:.1%}, {self.memory_bytes / 1e9:.3g} GB per GPU")


_HEADER = ("dp", "tp", "pp", "zero", "micro-batch x count", "checkpointing", "step", "tokens/s", "MFU", "memory/GPU",
           "GPU-hours/step", "$/step")


@checked_call
def frame(results: Any) -> Any:
    """A pandas DataFrame of ``results`` (a list of SplitResult, e.g. ``search``'s), one row each."""
    items = list(results) if isinstance(results, (list, tuple)) else [results]
    if not all(isinstance(r, SplitResult) for r in items):
        raise ArgumentTypeError(f"results must be SplitResults (search(...)'s list), got "
                                f"{sorted({type(r).__name__ for r in items})}")
    pd = require_pandas("splits.frame()")
    return pd.DataFrame([r.to_dict() for r in items])


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
           top: int = 10, usd_per_gpu_hour: Any = None) -> list[SplitResult]:
    """The ``top`` fastest splits of ``system``'s GPUs (a System, or a GPU: one node) that fit, fastest first.

    Each carries its step's ``cost`` on all the system's GPUs (``solkit.cost``: GPU-hours, the energy bound at the board
    power and, given ``usd_per_gpu_hour``, dollars).
    """
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
                                     float(mfu(flops, seconds, g, dtype, sys_.n_gpus)), float(mem.total), sys_.n_gpus,
                                     g.name, cost(seconds, g, sys_.n_gpus, usd_per_gpu_hour, what="per step")))
    if not found:
        raise OptionError(f"no split of {sys_.n_gpus} GPUs fits {model.name} with global_batch={batch}, seq={s} in "
                          f"{capacity / 1e9:g} GB per GPU; add nodes or shrink the batch")
    return sorted(found, key=lambda r: r.seconds)[:best]


def __dir__() -> list[str]:
    """``__all__``, the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
