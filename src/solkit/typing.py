"""The type aliases of solkit's signatures, for code that calls solkit under a type checker (``mypy --strict``).

``style: KernelStyle = "fused"`` then passes ``m.forward(..., kernels=style)``; a ``str`` would not (a Literal takes
only its spellings). The aliases are ``solkit._typing``'s (docs/api.md, "Types").
"""

from __future__ import annotations

from ._typing import (
    Algorithm as Algorithm,
    AttentionImpl as AttentionImpl,
    ConvLayout as ConvLayout,
    Dim as Dim,
    DType as DType,
    Engine as Engine,
    Figure as Figure,
    GPULike as GPULike,
    GPUOnly as GPUOnly,
    KernelStyle as KernelStyle,
    Pair as Pair,
    Precision as Precision,
    Quantization as Quantization,
    Real as Real,
    TorchDType as TorchDType,
)

__all__ = ["Algorithm", "AttentionImpl", "ConvLayout", "Dim", "DType", "Engine", "Figure", "GPULike", "GPUOnly", "KernelStyle",
           "Pair", "Precision", "Quantization", "Real", "TorchDType"]
