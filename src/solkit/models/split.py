"""A step's split over GPUs: the validated parallel arguments of ``training_step`` (``Split``)."""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import numpy as np

from .._validate import flag, whole
from ..errors import OptionError

__all__ = ["Split", "split_of", "count", "DDP_BUCKET_MB", "ZERO_STAGES"]

#: DistributedDataParallel's default bucket_cap_mb (MiB)
DDP_BUCKET_MB = 25
ZERO_STAGES = (0, 1, 2, 3)


class Split(NamedTuple):
    """How a step is split over GPUs (``training_step``'s parallel arguments, validated)."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    sp: bool = False
    ep: int = 1
    zero: int = 0
    overlap: bool = True
    bucket_mb: float = DDP_BUCKET_MB
    interleave: int = 1

    @property
    def gpus(self) -> int:
        """GPUs the split uses: dp x tp x pp (expert parallelism is carved out of the data-parallel group)."""
        return self.dp * self.tp * self.pp

    @property
    def parallel(self) -> bool:
        """Whether anything is split."""
        return self.gpus > 1 or self.zero > 0


def count(name: str, value: Any) -> int:
    """One positive integer (a split's size, a count of microbatches), else an OptionError naming it."""
    return whole(name, value, OptionError)


def split_of(dp: Any = 1, tp: Any = 1, pp: Any = 1, sp: Any = False, ep: Any = 1, zero: Any = 0, overlap: Any = True,
             bucket_mb: Any = DDP_BUCKET_MB, interleave: Any = 1) -> Split:
    """A validated ``Split``; each problem names its argument."""
    d, t, p, e = count("dp", dp), count("tp", tp), count("pp", pp), count("ep", ep)
    seq = flag("sp", sp)
    if isinstance(zero, numbers.Integral) and not isinstance(zero, (bool, np.bool_)):
        zero = int(zero)
    if type(zero) is not int or zero not in ZERO_STAGES:
        raise OptionError(f"zero must be one of 0, 1, 2, 3 (ZeRO stage: 0 DDP, 1 optimizer states, 2 and gradients, "
                          f"3 and parameters: FSDP), got {zero!r}")
    if seq and t == 1:
        raise OptionError("sp=True (Megatron sequence parallelism) splits the tensor-parallel group's tokens: it needs tp > 1")
    if e > 1 and d % e:
        raise OptionError(f"ep={e} (expert parallelism) shards the experts over part of the data-parallel group: it must "
                          f"divide dp={d}")
    if zero and d == 1:
        raise OptionError(f"zero={zero} shards over the data-parallel group: it needs dp > 1")
    bucket = float(bucket_mb) if isinstance(bucket_mb, (int, float)) and not isinstance(bucket_mb, bool) else -1.0
    if not bucket > 0:
        raise OptionError(f"bucket_mb must be a positive number of MiB (DDP's bucket_cap_mb), got {bucket_mb!r}")
    v = count("interleave", interleave)
    if v > 1 and p == 1:
        raise OptionError(f"interleave={v} (virtual pipeline stages per GPU) needs pp > 1")
    return Split(d, t, p, seq, e, zero, flag("overlap", overlap), bucket, v)
