"""ResNet-50 (v1.5: the stride on the 3x3 of each bottleneck), from conv2d and small ops.

``kernels="fused"`` (the default) folds each BatchNorm and ReLU into one elementwise kernel after its
conv; ``kernels="eager"`` runs what torchvision's model runs in eager PyTorch: BatchNorm as its own
kernels (training: statistics, then normalize; eval: normalize), ReLU in place, the residual add
then ReLU, and under ``amp`` (autocast over fp32 weights) a cast of every conv's and the fc's weight
and of the fp32 input image. The workload records its ``recipe`` (``ResNetCall``), so
``training_step`` builds the step torchvision training runs: cross-entropy, the backward, the
optimizer (SGD with momentum by default for ResNet).
"""

from __future__ import annotations

from typing import Any, NamedTuple, cast

import numpy as np

from .._typing import ConvLayout, Dim, DType, KernelStyle
from .._validate import broadcast, checked_call, choice, dim, flag
from ..ops import add, batchnorm, conv2d, copy, elementwise, fill, foreach, matmul, nll_loss, pointwise, pool2d, softmax
from ..errors import OptionError, ShapeError
from ..precision import normalize
from ..workload import Autograd, Workload, chain, overflow, with_kernels
from ._common import naming_overflow
from .split import Split
from .training import backward, optimizer_step, resolve_amp

__all__ = ["resnet50", "STAGES", "ResNetCall", "RESNET50_PARAMS", "RESNET50_TENSORS"]

#: torchvision's resnet50: 23,454,912 conv weights + 53,120 BatchNorm weights and biases + 2048*1000 + 1000 (fc)
RESNET50_PARAMS = 25_557_032
#: its parameter tensors: 53 conv weights, 53 x 2 BatchNorm, the fc's weight and bias
RESNET50_TENSORS = 161
#: bottleneck blocks (the per-layer unit of an eager program's host time)
BLOCKS = 16


class ResNetCall(NamedTuple):
    """How a ResNet-50 workload was built: its ``recipe`` (``workload.Program``)."""

    batch: Any
    image: Any
    classes: Any
    layout: str
    dtype: str
    kernels: str
    amp: bool
    training: bool

    @property
    def layers(self) -> int:
        """Bottleneck blocks: what the host's per-layer time counts."""
        return BLOCKS

    @property
    def preamble(self) -> bool:
        """torchvision's forward launches from its first line (no Hugging Face preamble)."""
        return False

    @property
    def world(self) -> int:
        """One GPU: ResNet-50 steps are not split."""
        return 1

    @property
    def host_calls(self) -> None:
        """None: a closed form counts its host work per layer, not per call."""
        return None

    @property
    def params(self) -> int:
        """Parameters: RESNET50_PARAMS with the fc sized to ``classes`` (2048 weights and a bias per class)."""
        return int(RESNET50_PARAMS + (int(np.max(self.classes)) - 1000) * (2048 + 1))

    def training_step(self, optimizer: str, amp: Any, microbatches: int, checkpointing: bool, split: Split) -> Workload:
        """torchvision ResNet-50's training step: the forward in training mode, cross-entropy, backward, the optimizer."""
        if split.parallel:
            raise OptionError("a parallel split (dp, tp, pp, ep, zero) is modelled for Transformer forwards; "
                              "ResNetCall steps run on one GPU")
        if checkpointing:
            raise OptionError("checkpointing=True is modelled for Transformer forwards only; resnet50 runs without it")
        use_amp = resolve_amp(amp, self.dtype) if self.kernels == "eager" else False  # fused: no autocast casts
        call = self._replace(amp=use_amp, training=True)
        fwd = eager_resnet50(call, loss=True) if self.kernels == "eager" else fused_resnet50(call)
        grad = "fp32" if use_amp else self.dtype
        zero = fill(self.batch * self.classes, "fp32").renamed("zero the logits' gradient", kernels=True)
        body = Workload.of("resnet50 forward + backward", ((fwd, 1), (zero, 1), (backward(fwd), 1)))
        parts: list[tuple[Any, int]] = [(body, microbatches)]
        if microbatches > 1:
            parts.append((foreach(self.params, 2, 1, 1, grad, name="gradient accumulation"), microbatches - 1))
        if optimizer != "none":
            parts.append((optimizer_step(optimizer, self.params, RESNET50_TENSORS, "fp32" if use_amp else self.dtype,
                                         grad), 1))
        return Workload.of("resnet50 training step", tuple(parts), recipe=call)

#: (blocks, bottleneck width, output channels, stride of the first block): He et al. 2016, Table 1
STAGES = ((3, 64, 256, 1), (4, 128, 512, 2), (6, 256, 1024, 2), (3, 512, 2048, 2))

#: batch norm then ReLU, unfused from the conv: 2 FLOPs per element (scale-shift folded, max)
BN_RELU_FLOPS = 2


@checked_call
def resnet50(batch: Dim, image: Dim = 224, classes: Dim = 1000, layout: ConvLayout = "nhwc", batchnorm: bool = True,
             dtype: DType = "bf16", kernels: KernelStyle = "eager", training: bool = False, amp: bool = False) -> Workload:
    """ResNet-50's forward pass on ``batch`` square images.

    Stem 7x7/2 conv to 64 channels, 3x3/2 max pool, 16 bottlenecks (1x1, 3x3 with the stage's
    stride, 1x1 expand; a 1x1 projection on each stage's first block), global average pool and
    a fully connected [N,2048] @ [2048,classes] layer. With ``batchnorm`` each conv is followed
    by a separate BN+ReLU kernel (training; inference usually folds BN into the conv).
    ``kernels``: "eager" (the default: what a user of torchvision's ResNet-50 runs) torchvision's kernels as eager
    PyTorch launches them (module docstring), "fused" a fused engine's (one BN+ReLU kernel per conv); ``layout``
    channels-last ("nhwc", as the H200 measurements ran it) by default; ``training`` puts BatchNorm in training
    mode, ``amp`` holds fp32 weights cast by autocast.
    """
    n, size = dim("batch", batch), dim("image", image)
    broadcast(batch=n, image=size, classes=dim("classes", classes))
    with_bn = flag("batchnorm", batchnorm)
    style = choice("kernels", kernels, ("eager", "fused"))
    if style == "eager" and not with_bn:
        raise OptionError("batchnorm=False (BatchNorm folded into the convs, as an inference engine does) is modelled for "
                          "kernels='fused'; torchvision's eager program always runs its BatchNorms")
    if style == "fused" and flag("amp", amp):
        raise OptionError("amp=True (fp32 weights cast by autocast) is modelled for kernels='eager' (the fused "
                          "program runs in dtype throughout); pass kernels='eager', or dtype= for the fused one")
    if style == "eager":
        call = ResNetCall(n, size, dim("classes", classes), choice("layout", layout, ("nhwc", "nchw", "im2col")),
                          normalize(dtype, "dtype"), "eager", flag("amp", amp), flag("training", training))
        with naming_overflow("resnet50", batch=n, image=size):
            return eager_resnet50(call)
    with np.errstate(over="ignore"):
        largest = n * size * size * 2048  # above every activation's elements (the stem's: n * 64 * (image / 2)**2)
    if not np.all(np.isfinite(largest)):
        raise overflow(ShapeError(f"batch * image**2 * 2048 must stay below 1.8e308 (float64), got batch={np.max(n):g} "
                                  f"and image={np.max(size):g}"))
    call = ResNetCall(n, size, dim("classes", classes), choice("layout", layout, ("nhwc", "nchw", "im2col")),
                      normalize(dtype, "dtype"), "fused", False, flag("training", training))
    with naming_overflow("resnet50", batch=n, image=size):
        w = _resnet50(n, size, classes, layout, with_bn, dtype)
    return Workload.of(w.name, w.parts, recipe=call)


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


def eager_resnet50(call: ResNetCall, loss: bool = False) -> Workload:
    """torchvision's resnet50 in eager PyTorch (module docstring), as its kernels; ``loss``: cross-entropy after it."""
    n, size, dtype = call.batch, call.image, call.dtype
    amp = call.amp
    act = dtype  # activations: bf16 under autocast (the convs' outputs), or the weights' precision
    parts: list[Workload] = []

    def conv(c_in: Any, h: Any, c_out: Any, k: int, stride: int, relu: bool = True) -> Any:
        pad = k // 2
        weights = c_out * c_in * k * k
        if amp:  # autocast: the conv's fp32 weight cast to bf16, written in the conv's layout
            parts.append(copy(weights, dtype="fp32", out_dtype=dtype).renamed("cast fp32->bf16", kernels=True))
        else:  # each call copies the weight to a contiguous channels_last tensor (H200 profiles: one strided copy per conv)
            parts.append(copy(weights, dtype=act).renamed("conv weight copy", kernels=True))
        parts.append(conv2d(n, c_in, h, h, c_out, k, stride, pad, layout=cast(ConvLayout, call.layout), dtype=act))
        h_out = (h + 2 * pad - k) // stride + 1
        if call.training:
            parts.append(_batchnorm_buffers(c_out))
        parts.append(batchnorm(n, c_out, h_out, h_out, training=call.training, dtype=act,
                               param_dtype="fp32" if amp else dtype))
        if relu:
            parts.append(pointwise(n * c_out * h_out * h_out, n * c_out * h_out * h_out, act, name="relu"))
        return h_out

    if amp:  # the fp32 image cast for the first conv
        parts.append(copy(n * 3 * size * size, dtype="fp32", out_dtype=dtype).renamed("cast fp32->bf16", kernels=True))
    h = conv(3, size, 64, 7, 2)  # stem: 224 -> 112
    parts.append(pool2d(n, 64, h, h, kernel=3, stride=2, padding=1, mode="max", dtype=act,
                        indices=call.training))
    h, c_in = (h + 2 - 3) // 2 + 1, 64
    for blocks, width, c_out, stride in STAGES:
        for i in range(blocks):
            s = stride if i == 0 else 1
            conv(c_in, h, width, 1, 1)
            h_mid = conv(width, h, width, 3, s)
            conv(width, h_mid, c_out, 1, 1, relu=False)
            if i == 0:
                conv(c_in, h, c_out, 1, s, relu=False)  # projection shortcut: conv + BatchNorm
            elements = n * c_out * h_mid * h_mid
            parts.append(add(elements, act).renamed("residual add", kernels=True))
            parts.append(pointwise(elements, elements, act, name="relu"))
            h, c_in = h_mid, c_out
    parts.append(pool2d(n, c_in, h, h, kernel=h, stride=1, mode="avg", dtype=act))  # global: 7x7 -> 1x1
    if amp:
        parts.append(copy(call.classes * c_in + call.classes, dtype="fp32", out_dtype=dtype)
                     .renamed("cast fp32->bf16", kernels=True))
    parts.append(matmul(n, call.classes, c_in, dtype=dtype, bias=True).renamed("fc", kernels=True))  # [N,2048] @ [2048,classes]
    if loss:  # F.cross_entropy under autocast: log_softmax in fp32 (a cast of the logits first), NLL
        parts.append(copy(n * call.classes, dtype=dtype, out_dtype="fp32").renamed("cast bf16->fp32", kernels=True))
        parts.append(softmax(n, call.classes, "fp32").renamed("log_softmax", kernels=True))
        parts.append(nll_loss(n, call.classes, dtype="fp32"))
    name = f"resnet50 {'training ' if call.training else ''}forward"
    return Workload.of(name, tuple((w, 1) for w in parts), recipe=call)


def _batchnorm_buffers(channels: Any) -> Workload:
    """A training BatchNorm's launches beside its statistics and normalization (H200 profiles): num_batches_tracked += 1
    (one int64, 8 B read and written), a zeroed 2-int semaphore for the statistics' grid reduction (8 B), the running
    mean and variance updated from the batch's (reads 4 x C fp32, writes 2 x C); no gradient, and the backward's
    reduction zeroes its own semaphore (8 B). NB: the profiles show the semaphores on 45 of 53 BatchNorms at batch 32
    and fewer on smaller batches (the reduction's grid decides); counted on every one."""
    semaphore = fill(2, "fp32").renamed("bn semaphore zero", kernels=True)  # 2 x int32: 8 B, as 2 x fp32
    parts = (pointwise(1, 1, "fp64", name="bn num_batches_tracked += 1"), semaphore,  # an int64 counter: 8 B like fp64
             pointwise(2 * channels, 4 * channels, "fp32", name="bn running stats update"))
    # buffer updates are no model work: zero model FLOPs (the step's stay 3x its forward's)
    buffers = tuple((with_kernels(w, model_flops=0.0), 1) for w in parts)
    grad = with_kernels(semaphore, "bn semaphore zero (backward)", model_flops=0.0)
    return Workload.of("bn buffers", buffers, autograd=Autograd(grad, gradient=False))


def fused_resnet50(call: ResNetCall) -> Workload:
    """The fused-style forward (BN+ReLU as one kernel after each conv) with the cross-entropy after it."""
    w = _resnet50(call.batch, call.image, call.classes, call.layout, True, call.dtype)
    loss = (softmax(call.batch, call.classes, call.dtype).renamed("log_softmax", kernels=True),
            nll_loss(call.batch, call.classes, dtype=call.dtype))
    return Workload.of("resnet50 training forward", ((w, 1), *((x, 1) for x in loss)), recipe=call)
