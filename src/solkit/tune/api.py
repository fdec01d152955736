"""``rank``, ``early_config_prune`` and the usual config spaces."""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Mapping

from .._validate import checked_call, shown
from ..errors import ArgumentTypeError, OptionError
from ..hardware import as_gpu
from ..precision import normalize
from .configs import as_configs, config_table, kernel_name, listed
from .limits import limits_of, params_of
from .models import predict, shape_names, shape_of
from .ranking import Ranking

__all__ = ["rank", "early_config_prune", "triton_matmul_space", "triton_row_space", "triton_attention_space"]


@checked_call
def rank(kernel: str, configs: Iterable[Any], gpu: Any = "h200", dtype: Any = "bf16", **shape: Any) -> Ranking:
    """Rank ``configs`` of a Triton kernel for one shape by the tile model's predicted time.

    ``kernel``: "triton_matmul" (shape m, n, k), "triton_softmax" or "triton_layernorm" (rows, cols),
    "triton_flash_attention" (batch, heads, seq_q, seq_kv=seq_q, head_dim=128, causal=False). ``configs``: dicts
    with Triton's names or ``triton.Config`` objects. A config that cannot launch on ``gpu`` gets NaN and a reason.
    """
    name = kernel_name(kernel)
    given = tuple(listed(configs))
    checked = as_configs(name, given)
    dims = shape_of(name, shape)
    spec = as_gpu(gpu)
    precision = normalize(dtype)
    if precision in UNMODELLED_DOTS and name in DOT_KERNELS:
        raise OptionError(f"dtype={dtype!r}: {name}'s model is of tensor-core dots (wgmma, mma.sync in bf16, fp16, fp8, "
                          f"tf32, int8); {precision} dots run other instructions, which solkit.tune does not model")
    lim = limits_of(spec, precision)
    params = params_of(spec)
    parts, reasons = predict(name, config_table(name, checked), dims, lim, params, precision)
    return Ranking(kernel=name, gpu=spec.name, dtype=precision, shape=dims, configs=tuple(checked), given=given,
                   seconds=parts.pop("seconds"), reasons=tuple(reasons), parts=parts, calibrated=params.calibrated,
                   source=params.source)


#: the kernels whose time is a tensor-core dot's, and the precisions whose dots those models do not describe
DOT_KERNELS = ("triton_matmul", "triton_flash_attention")
UNMODELLED_DOTS = ("fp64",)


#: the shape argument names Triton's tutorials give each kernel (what early_config_prune reads by default)
TRITON_ARGUMENTS: Mapping[str, Mapping[str, str]] = {
    "triton_matmul": {"m": "M", "n": "N", "k": "K"},
    "triton_softmax": {"rows": "n_rows", "cols": "n_cols"},
    "triton_layernorm": {"rows": "M", "cols": "N"},
    "triton_flash_attention": {"batch": "Z", "heads": "H", "seq_q": "N_CTX", "head_dim": "HEAD_DIM"},
}


@checked_call
def early_config_prune(kernel: str, gpu: Any = "h200", keep: Any = 0.25, dtype: Any = "bf16",
                       **shape: Any) -> Callable[..., list[Any]]:
    """A pruner for ``triton.autotune(prune_configs_by={"early_config_prune": ...})``: keeps the predicted fastest.

    Triton calls it as ``prune(configs, named_args, **kwargs)`` before timing; it ranks the configs for the call's
    shape and returns the fastest ``keep`` (a share of those that can launch, or a count), so the autotuner times only
    those. Each shape argument is a number, or the name of the kernel's argument to read it from (by default the
    tutorials' names, ``TRITON_ARGUMENTS``: M, N, K for the GEMM), or a function of ``named_args``.
    """
    name = kernel_name(kernel)
    shape_names(name, shape, ("gpu", "keep", "dtype"))
    readers = {**TRITON_ARGUMENTS[name], **shape}
    spec = as_gpu(gpu)

    def prune(configs: Any, named_args: Mapping[str, Any], **kwargs: Any) -> list[Any]:
        """Triton's early_config_prune: the configs to time, fastest predicted first."""
        if not isinstance(named_args, Mapping):
            raise ArgumentTypeError(f"named_args must be the kernel's arguments by name (a dict), got {shown(named_args)}")
        values = {k: _read(k, v, named_args) for k, v in readers.items()}
        return rank(name, configs, gpu=spec, dtype=dtype, **values).prune(keep)

    prune.__qualname__ = prune.__name__ = f"early_config_prune_{name}"
    return prune


def _read(key: str, reader: Any, named_args: Mapping[str, Any]) -> Any:
    """One shape argument: a number as it is, an argument's name read from ``named_args``, or a function of them."""
    if callable(reader):
        return reader(named_args)
    if isinstance(reader, str):
        if reader not in named_args:
            raise ArgumentTypeError(f"early_config_prune reads {key} from the kernel's argument {reader!r}, which the "
                                    f"call does not have; it has: {', '.join(map(str, named_args))} (pass {key}=...)")
        return named_args[reader]
    return reader


def _product(**axes: Iterable[int]) -> list[dict[str, int]]:
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*(tuple(axes[n]) for n in names))]


@checked_call
def triton_matmul_space(block_m: Iterable[int] = (32, 64, 128, 256), block_n: Iterable[int] = (32, 64, 128, 256),
                        block_k: Iterable[int] = (32, 64, 128), group_m: Iterable[int] = (8,),
                        num_warps: Iterable[int] = (4, 8), num_stages: Iterable[int] = (2, 3, 4, 5),
                        split_k: Iterable[int] = (1,), max_accumulators: int = 128) -> list[dict[str, int]]:
    """The usual grid of GEMM configs: every combination whose fp32 accumulators per thread
    (BLOCK_M * BLOCK_N / (32 * num_warps)) stay within ``max_accumulators`` (beyond, the registers spill)."""
    grid = _product(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m, SPLIT_K=split_k,
                    num_warps=num_warps, num_stages=num_stages)
    grid = [c for c in grid if c["BLOCK_M"] * c["BLOCK_N"] / (32 * c["num_warps"]) <= max_accumulators]
    return as_configs("triton_matmul", grid)


@checked_call
def triton_row_space(block_size: Iterable[int] = (256, 512, 1024, 2048, 4096, 8192),
                     num_warps: Iterable[int] = (1, 2, 4, 8, 16), max_elements: int = 64) -> list[dict[str, int]]:
    """The usual grid of row-kernel configs (softmax, LayerNorm): every combination whose elements per thread
    (BLOCK_SIZE / (32 * num_warps)) stay within ``max_elements``."""
    grid = _product(BLOCK_SIZE=block_size, num_warps=num_warps)
    grid = [c for c in grid if c["BLOCK_SIZE"] / (32 * c["num_warps"]) <= max_elements]
    return as_configs("triton_layernorm", grid)


@checked_call
def triton_attention_space(block_m: Iterable[int] = (64, 128), block_n: Iterable[int] = (32, 64, 128),
                           num_warps: Iterable[int] = (4, 8), num_stages: Iterable[int] = (1, 2, 3, 4),
                           ) -> list[dict[str, int]]:
    """The usual grid of flash attention forward configs (the tutorial's)."""
    return as_configs("triton_flash_attention", _product(BLOCK_M=block_m, BLOCK_N=block_n, num_warps=num_warps,
                                                         num_stages=num_stages))
