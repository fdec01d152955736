"""Tuning configs: dicts with Triton's names (or ``triton.Config`` objects), checked and turned into arrays.

A config is a mapping of Triton's names: the kernel's block sizes (``BLOCK_M``, ``BLOCK_N``, ``BLOCK_K``, ``GROUP_M``,
``SPLIT_K``; ``BLOCK_SIZE`` for the row kernels) and the launch options ``num_warps`` and ``num_stages``. A
``triton.Config`` is read by its attributes (``.kwargs``, ``.num_warps``, ``.num_stages``), so triton need not be
installed. Each kernel's keys, defaults and rules are in ``KERNELS``; a bad config raises a solkit error naming the
config's position, the key, what was expected and what came.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping

import numpy as np

from .._validate import did_you_mean, shown, suggest
from ..errors import ArgumentTypeError, OptionError, ShapeError, UnknownKernelError

__all__ = ["KernelKeys", "KERNELS", "kernel_name", "listed", "as_configs", "config_table", "is_triton_config"]


@dataclass(frozen=True)
class KernelKeys:
    """A kernel's config keys: those a config must give, those it may give (with defaults), the powers of two."""

    required: tuple[str, ...]
    defaults: Mapping[str, int]
    powers_of_two: tuple[str, ...]
    minimum: Mapping[str, int]  # the least value of a key (tl.dot needs 16 rows, columns and depth)

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key the kernel reads, required first."""
        return (*self.required, *(k for k in self.defaults if k not in self.required))


_WARPS_STAGES = {"num_warps": 4, "num_stages": 3}  # Triton's defaults on NVIDIA GPUs

#: the tunable kernels and their keys (Triton's names; the launch options num_warps and num_stages with Triton's defaults)
KERNELS: Mapping[str, KernelKeys] = MappingProxyType({
    "triton_matmul": KernelKeys(("BLOCK_M", "BLOCK_N", "BLOCK_K"), MappingProxyType({"GROUP_M": 8, "SPLIT_K": 1,
                                **_WARPS_STAGES}), ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps"),
                                MappingProxyType({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16})),
    "triton_softmax": KernelKeys(("BLOCK_SIZE",), MappingProxyType(dict(_WARPS_STAGES)), ("BLOCK_SIZE", "num_warps"),
                                 MappingProxyType({})),
    "triton_layernorm": KernelKeys(("BLOCK_SIZE",), MappingProxyType(dict(_WARPS_STAGES)), ("BLOCK_SIZE", "num_warps"),
                                   MappingProxyType({})),
    "triton_flash_attention": KernelKeys(("BLOCK_M", "BLOCK_N"), MappingProxyType(dict(_WARPS_STAGES)),
                                         ("BLOCK_M", "BLOCK_N", "num_warps"),
                                         MappingProxyType({"BLOCK_M": 16, "BLOCK_N": 16})),
})

#: short names a user may type (the CLI's ``solkit tune matmul``)
_SHORT = {"matmul": "triton_matmul", "softmax": "triton_softmax", "layernorm": "triton_layernorm",
          "flash_attention": "triton_flash_attention", "attention": "triton_flash_attention"}


def kernel_name(kernel: Any) -> str:
    """The canonical kernel name of ``kernel`` (a name of ``KERNELS`` or its short form); else ``UnknownKernelError``."""
    if not isinstance(kernel, str):
        raise ArgumentTypeError(f"kernel must be one of {', '.join(map(repr, KERNELS))}, got {shown(kernel)}")
    key = kernel.strip().lower()
    if key in KERNELS:
        return key
    if key in _SHORT:
        return _SHORT[key]
    raise UnknownKernelError(f"kernel must be one of {', '.join(map(repr, KERNELS))}, got {shown(kernel)}"
                             f"{did_you_mean(key, [*KERNELS, *_SHORT])}")


def is_triton_config(value: Any) -> bool:
    """Whether ``value`` looks like a ``triton.Config``: a ``kwargs`` mapping and integer ``num_warps``/``num_stages``."""
    return (not isinstance(value, Mapping) and isinstance(getattr(value, "kwargs", None), Mapping)
            and hasattr(value, "num_warps") and hasattr(value, "num_stages"))


def _as_mapping(value: Any, index: int) -> dict[str, Any]:
    """One config as a plain dict: a mapping as it is, a ``triton.Config`` as its kwargs plus its launch options."""
    if isinstance(value, Mapping):
        return dict(value)
    if is_triton_config(value):
        out = dict(value.kwargs)
        for name in ("num_warps", "num_stages"):
            if name in out:
                raise OptionError(f"configs[{index}]: a triton.Config sets {name} as its own argument, not in kwargs")
            out[name] = getattr(value, name)
        return out
    raise ArgumentTypeError(f"configs[{index}] must be a dict of Triton's names (BLOCK_M=..., num_warps=...) or a "
                            f"triton.Config, got {shown(value)}")


def _integer(where: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise ArgumentTypeError(f"{where} must be a positive integer, got {shown(value)}")
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise ShapeError(f"{where} must be a positive integer, got {shown(value)}")
    number = int(value)
    if number < 1:
        raise ShapeError(f"{where} must be a positive integer, got {shown(value)}")
    return number


def listed(configs: Any) -> list[Any]:
    """``configs`` as a list: a list (or any iterable) of configs; one config alone, or anything else, is an error."""
    if isinstance(configs, (str, bytes, Mapping)) or is_triton_config(configs):
        raise ArgumentTypeError(f"configs must be a list of configs (dicts or triton.Config), got one {shown(configs)}"
                                "; wrap it in a list")
    try:
        items = list(configs)
    except TypeError:
        raise ArgumentTypeError(f"configs must be a list of configs (dicts or triton.Config), got {shown(configs)}") from None
    if not items:
        raise ShapeError("configs must hold at least one config, got an empty list")
    return items


def as_configs(kernel: str, configs: Any) -> list[dict[str, int]]:
    """Every config of ``configs`` (a list of dicts or ``triton.Config``) checked and completed with the defaults.

    Unknown keys are ``ArgumentTypeError`` with a did-you-mean; a missing block size, a non-integer or non-positive
    value, or a non-power-of-two where Triton needs one (``tl.arange`` sizes, warps) are ``ShapeError``.
    A config may carry keys the kernel does not read only if they are Triton's own (``num_ctas``, ``maxnreg``).
    """
    spec = KERNELS[kernel]
    items = listed(configs)
    out: list[dict[str, int]] = []
    known = spec.keys
    for i, raw in enumerate(items):
        given = _as_mapping(raw, i)
        for key in given:
            if not isinstance(key, str) or key not in known and key not in _TRITON_OWN:
                near = suggest(key, known)
                hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
                raise ArgumentTypeError(f"configs[{i}] has the key {shown(key)}, which {kernel} does not read; "
                                        f"it reads: {', '.join(known)}{hint}")
        missing = [k for k in spec.required if k not in given]
        if missing:
            raise ShapeError(f"configs[{i}] lacks {', '.join(missing)}: {kernel} needs {', '.join(spec.required)}")
        config = {k: _integer(f"configs[{i}][{k!r}]", given.get(k, spec.defaults.get(k))) for k in known}
        for k in spec.powers_of_two:
            v = config[k]
            if v & (v - 1):
                lower = 1 << (v.bit_length() - 1)
                raise ShapeError(f"configs[{i}][{k!r}] must be a power of two (Triton's tl.arange and warp layouts "
                                 f"need one), got {v}; the nearest are {lower} and {2 * lower}")
        for k, least in spec.minimum.items():
            if config[k] < least:
                raise ShapeError(f"configs[{i}][{k!r}] must be at least {least} (tl.dot needs {least} rows, columns "
                                 f"and depth), got {config[k]}")
        out.append(config)
    return out


#: Triton's own Config arguments that no model here reads (passed through unread, as Triton would)
_TRITON_OWN = ("num_ctas", "maxnreg", "num_buffers_warp_spec", "num_consumer_groups", "reg_dec_producer",
               "reg_inc_consumer")


def config_table(kernel: str, configs: Iterable[Mapping[str, int]]) -> dict[str, np.ndarray]:
    """The configs as one float64 array per key (the models broadcast over configs)."""
    rows = list(configs)
    return {k: np.array([float(c[k]) for c in rows]) for k in KERNELS[kernel].keys}
