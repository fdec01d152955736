"""ResNet-50 (v1.5: the stride on the 3x3 of each bottleneck), from conv2d and small ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validate import broadcast, checked_call, dim, flag
from ..ops import add, conv2d, elementwise, matmul, pool2d
from ..errors import ShapeError
from ..workload import Workload, chain, overflow
from ._common import naming_overflow

__all__ = ["resnet50", "STAGES"]

#: (blocks, bottleneck width, output channels, stride of the first block): He et al. 2016, Table 1
STAGES = ((3, 64, 256, 1), (4, 128, 512, 2), (6, 256, 1024, 2), (3, 512, 2048, 2))

#: batch norm then ReLU, unfused from the conv: 2 FLOPs per element (scale-shift folded, max)
BN_RELU_FLOPS = 2



@checked_call
def resnet50(batch: Any, image: Any = 224, classes: Any = 1000, layout: str = "nhwc", batchnorm: bool = True,
             dtype: Any = "bf16") -> Workload:
    """ResNet-50's forward pass on ``batch`` square images.

    Stem 7x7/2 conv to 64 channels, 3x3/2 max pool, 16 bottlenecks (1x1, 3x3 with the stage's
    stride, 1x1 expand; a 1x1 projection on each stage's first block), global average pool and
    a fully connected [N,2048] @ [2048,classes] layer. With ``batchnorm`` each conv is followed
    by a separate BN+ReLU kernel (training; inference usually folds BN into the conv).
    """
    n, size = dim("batch", batch), dim("image", image)
    broadcast(batch=n, image=size, classes=dim("classes", classes))
    with_bn = flag("batchnorm", batchnorm)
    with np.errstate(over="ignore"):
        largest = n * size * size * 2048  # above every activation's elements (the stem's: n * 64 * (image / 2)**2)
    if not np.all(np.isfinite(largest)):
        raise overflow(ShapeError(f"batch * image**2 * 2048 must stay below 1.8e308 (float64), got batch={np.max(n):g} "
                                  f"and image={np.max(size):g}"))
    with naming_overflow("resnet50", batch=n, image=size):
        return _resnet50(n, size, classes, layout, with_bn, dtype)


def _resnet50(n: Any, size: Any, classes: Any, layout: Any, with_bn: bool, dtype: Any) -> Workload:
    """resnet50's kernels from validated arguments."""
    parts: list[Workload] = []

    def conv(c_in: Any, h: Any, c_out: Any, k: int, stride: int) -> Any:
        pad = k // 2
        parts.append(conv2d(n, c_in, h, h, c_out, k, stride, pad, layout=layout, dtype=dtype))
        h_out = (h + 2 * pad - k) // stride + 1
        if with_bn:
            parts.append(elementwise(n * c_out * h_out * h_out, 1, 1, BN_RELU_FLOPS, dtype, "bn+relu"))
        return h_out

    h = conv(3, size, 64, 7, 2)  # stem: 224 -> 112
    pooled = (h + 2 - 3) // 2 + 1  # 3x3/2 max pool, padding 1: 112 -> 56
    parts.append(pool2d(n, 64, h, h, kernel=3, stride=2, padding=1, mode="max", dtype=dtype))
    h, c_in = pooled, 64
    for blocks, width, c_out, stride in STAGES:
        for i in range(blocks):
            s = stride if i == 0 else 1
            conv(c_in, h, width, 1, 1)
            h_mid = conv(width, h, width, 3, s)
            conv(width, h_mid, c_out, 1, 1)
            if i == 0:
                conv(c_in, h, c_out, 1, s)  # projection shortcut
            parts.append(add(n * c_out * h_mid * h_mid, dtype))  # residual (the ReLU after it folded in)
            h, c_in = h_mid, c_out
    parts.append(pool2d(n, c_in, h, h, kernel=h, stride=1, mode="avg", dtype=dtype))  # global: 7x7 -> 1x1
    parts.append(matmul(n, classes, c_in, dtype=dtype, bias=True).renamed("fc", kernels=True))  # [N,2048] @ [2048,classes]
    return chain("resnet50 forward", *parts)
