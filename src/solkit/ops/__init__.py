"""Operator cost models: each function maps shapes (ints or numpy arrays) to a ``Workload``.

Counting rules (DESIGN.md): a multiply-add is 2 FLOPs; bytes are each kernel's compulsory
DRAM traffic (inputs read once, outputs written once); between kernels an intermediate is
written and read back, inside a fused kernel it is free.
"""

from __future__ import annotations

from .attention import attention, attention_pairs
from .conv import conv2d, conv_output_size
from .elementwise import add, copy, elementwise, gelu, silu, softmax
from .embedding import embedding
from .matmul import matmul
from .norm import layernorm, layernorm_residual, rmsnorm
from .projection import qkv_projection, qkv_widths

#: the functions that map shapes to a Workload (the rest of __all__ are helpers)
OPERATORS: tuple[str, ...] = (
    "matmul", "qkv_projection", "layernorm", "rmsnorm", "layernorm_residual", "softmax", "add", "gelu", "silu",
    "copy", "elementwise", "embedding", "conv2d", "attention",
)

__all__ = [
    "OPERATORS",
    "add",
    "attention",
    "attention_pairs",
    "conv2d",
    "conv_output_size",
    "copy",
    "elementwise",
    "embedding",
    "gelu",
    "layernorm",
    "layernorm_residual",
    "matmul",
    "qkv_projection",
    "qkv_widths",
    "rmsnorm",
    "silu",
    "softmax",
]
