"""A step's split over GPUs: the validated parallel arguments of ``training_step`` (``Split``)."""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import numpy as np

from .._validate import flag, positive, shown, whole
from ..errors import ArgumentTypeError, OptionError

__all__ = ["Split", "split_of", "count", "stage", "bucket_size", "DDP_BUCKET_MB", "MIN_BUCKET_MB", "MAX_BUCKET_MB",
           "ZERO_STAGES"]

#: DistributedDataParallel's default bucket_cap_mb (MiB)
DDP_BUCKET_MB = 25
ZERO_STAGES = (0, 1, 2, 3)
#: the bucket sizes taken (MiB): from 1 KiB (a bucket per small tensor) to 1 PiB (one bucket for any model)
MIN_BUCKET_MB = 2.0**-10
MAX_BUCKET_MB = 2.0**30
_ZERO_TEXT = "one of 0, 1, 2, 3 (ZeRO stage: 0 DDP, 1 optimizer states, 2 and gradients, 3 and parameters: FSDP)"


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


def stage(value: Any) -> int:
    """A ZeRO stage: an integer (Python's or numpy's) among ``ZERO_STAGES``; a bool, a float or a string is a type error."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        if int(value) in ZERO_STAGES:
            return int(value)
        raise OptionError(f"zero must be {_ZERO_TEXT}, got {shown(value)}")
    raise ArgumentTypeError(f"zero must be an integer, {_ZERO_TEXT}, got the {type(value).__name__} {shown(value)}")


def bucket_size(value: Any) -> float:
    """DDP's bucket size in MiB: one finite number (an int, a float, a numpy number) in [MIN_BUCKET_MB, MAX_BUCKET_MB]."""
    mb = positive("bucket_mb", value, OptionError)  # bools, strings, None: ArgumentTypeError; inf, NaN, <= 0: OptionError
    if type(mb) is not float:
        raise OptionError(f"bucket_mb must be one number of MiB (DDP's bucket_cap_mb), got an array of shape {np.shape(mb)}")
    if not MIN_BUCKET_MB <= mb <= MAX_BUCKET_MB:
        raise OptionError(f"bucket_mb must be a number of MiB (DDP's bucket_cap_mb) from {MIN_BUCKET_MB:g} (1 KiB) to "
                          f"{MAX_BUCKET_MB:g} (1 PiB), got {mb:g}")
    return mb


def split_of(dp: Any = 1, tp: Any = 1, pp: Any = 1, sp: Any = False, ep: Any = 1, zero: Any = 0, overlap: Any = True,
             bucket_mb: Any = DDP_BUCKET_MB, interleave: Any = 1) -> Split:
    """A validated ``Split``; each problem names its argument."""
    d, t, p, e = count("dp", dp), count("tp", tp), count("pp", pp), count("ep", ep)
    seq = flag("sp", sp)
    zero = stage(zero)
    if seq and t == 1:
        raise OptionError("sp=True (Megatron sequence parallelism) splits the tensor-parallel group's tokens: it needs tp > 1")
    if e > 1 and d % e:
        raise OptionError(f"ep={e} (expert parallelism) shards the experts over part of the data-parallel group: it must "
                          f"divide dp={d}")
    if zero and d == 1:
        raise OptionError(f"zero={zero} shards over the data-parallel group: it needs dp > 1")
    bucket = bucket_size(bucket_mb)
    v = count("interleave", interleave)
    if v > 1 and p == 1:
        raise OptionError(f"interleave={v} (virtual pipeline stages per GPU) needs pp > 1")
    return Split(d, t, p, seq, e, zero, flag("overlap", overlap), bucket, v)
