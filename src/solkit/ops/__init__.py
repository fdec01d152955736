"""Operator cost models: each registered operator maps shapes (ints or numpy arrays) to a ``Workload``.

Counting rules (DESIGN.md): a multiply-add is 2 FLOPs; bytes are each kernel's compulsory
DRAM traffic (inputs read once, outputs written once); between kernels an intermediate is
written and read back, inside a fused kernel it is free. Every operator is registered once in
``solkit.ops.registry`` (``REGISTRY``), with its count and backward formulas, calibration keys,
ATen names and parameters; ``OPERATORS`` and every other list of operators is read from there.
"""

from __future__ import annotations

from .._dir import public_dir
from .attention import attention, attention_pairs
from .batchnorm import batchnorm
from .conv import conv2d, conv_output_size, im2col, layout_transform
from .elementwise import add, copy, elementwise, gelu, silu, softmax
from .embedding import embedding
from .grouped import grouped_matmul
from .matmul import matmul
from .norm import layernorm, layernorm_residual, rmsnorm
from .pool import pool2d
from .projection import qkv_projection, qkv_widths
from .registry import REGISTRY, Operator, by_aten, calibration_keys, get
from .tensor import concat, fill, gather, pointwise, reduce
from .training import adamw, dropout, foreach, nll_loss

#: the registered operators' names: the functions that map shapes to a Workload
OPERATORS: tuple[str, ...] = tuple(REGISTRY)

#: helpers that are not operators (they return figures, not workloads)
HELPERS: tuple[str, ...] = ("attention_pairs", "conv_output_size", "qkv_widths")

__all__ = ["OPERATORS", "HELPERS", "REGISTRY", "Operator", "get", "by_aten", "calibration_keys", *OPERATORS, *HELPERS]


def __dir__() -> list[str]:
    """``__all__`` (lazy names included), the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
