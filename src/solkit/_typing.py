"""The type aliases of solkit's public signatures: what a dimension, a precision, a GPU or a figure may be.

They are for type checkers and readers (``mypy --strict`` flags ``batch="one"``, ``dtype=42``, ``gpu=42``,
``kernels="fusd"``); the run-time checks stay in ``_validate`` and the registry, and accept a little more (any case
and dashes in a name: ``"BF16"``, ``"NHWC"``; a Literal lists the spellings a typed program is expected to use).
Each Literal is the tuple the code checks against, spelt out (tests/test_typing.py compares them, so they cannot drift).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, Union

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from .hardware.schema import GPU
    from .hardware.system import System

__all__ = ["Dim", "Real", "Pair", "Lengths", "Figure", "Precision", "DType", "TorchDType", "GPULike", "GPUOnly", "KernelStyle", "Engine", "Quantization",
           "AttentionImpl", "ConvLayout", "Algorithm"]

#: a dimension or a count: an integer (a whole float is taken too), a numpy integer, or an array of them (a sweep)
Dim = Union[int, float, np.integer[Any], np.floating[Any], npt.NDArray[Any], Sequence[float]]
#: a measured or counted figure given to solkit (seconds, FLOPs, bytes): a number or an array of them
Real = Union[float, np.integer[Any], np.floating[Any], npt.NDArray[Any]]
#: one integer for both axes, or a pair (h, w): a conv's kernel, stride, padding, dilation
Pair = Union[Dim, tuple[Dim, Dim]]
#: one integer per group (a varlen batch's sequence lengths, a grouped GEMM's rows per group): a list, tuple or 1-d array
Lengths = Union[Sequence[int], npt.NDArray[Any]]
#: a figure that follows its inputs' shape: a float for one shape, a float64 array for a sweep
Figure = Union[float, npt.NDArray[np.float64]]

#: a precision by name: the canonical names (precision.PRECISIONS), then the aliases (precision._ALIASES)
Precision = Literal[
    "fp64", "fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8", "int32", "fp4", "int4",
    "float64", "double", "f64", "float32", "float", "f32", "tensorfloat32", "bfloat16", "float16", "half", "f16",
    "fp8", "e4m3", "fp8e4m3", "float8_e4m3fn", "float8_e4m3", "e5m2", "fp8e5m2", "float8_e5m2", "i8", "i32", "i4",
    "uint4", "nvfp4", "mxfp4", "fp4_e2m1", "e2m1",
]


class TorchDType(Protocol):
    """A ``torch.dtype`` (``torch.bfloat16``), described by its attributes so that torch stays optional."""

    @property
    def is_floating_point(self) -> bool: ...

    @property
    def is_signed(self) -> bool: ...


#: a precision: a name or alias (any ``str``: precisions travel in variables and config files, so a plain ``str`` is
#: taken and checked at run time; ``Precision`` lists the names for completion), a numpy dtype or scalar type, or a
#: torch dtype
DType = Union[Precision, str, np.dtype[Any], type[np.generic], TorchDType]

#: a GPU: a shipped name or alias ("h200"), a path to a spec file, a loaded ``GPU``, or a ``System`` (its GPU)
GPULike = Union[str, "os.PathLike[str]", "GPU", "System"]
#: one GPU, where a System is no answer (a profile's, a chart's): a name or alias, a spec file's path, a ``GPU``
GPUOnly = Union[str, "os.PathLike[str]", "GPU"]

#: a program's kernels (models.program.KERNEL_STYLES): eager PyTorch's launches, or a fused engine's
KernelStyle = Literal["eager", "fused"]
#: planning.ENGINES: the serving engines planning.inference models
Engine = Literal["hf-eager", "hf-static", "fused"]
#: the layers' linear layers quantized (models.program.QUANTIZATIONS)
Quantization = Literal["w4a16", "w8a16", "w8a8", "fp8"]
#: an attention kernel (ops.attention.IMPLS)
AttentionImpl = Literal["flash", "naive", "cudnn", "efficient", "sdpa"]
#: a convolution's layout (ops.conv.LAYOUTS)
ConvLayout = Literal["nhwc", "nchw", "im2col"]
#: a collective's algorithm (comm.ALGORITHMS)
Algorithm = Literal["ring", "tree"]
