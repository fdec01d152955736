# Generated from the operator registry by ``python -m solkit.ops._stub``: do not edit (tests/test_typing.py checks it).
"""Operator cost models: each registered operator maps shapes (ints or numpy arrays) to a ``Workload``."""

from typing import Literal

from .._typing import DType, Dim, Lengths, Pair
from ..workload import Workload
from .attention import attention_pairs as attention_pairs
from .conv import conv_output_size as conv_output_size
from .projection import qkv_widths as qkv_widths
from .registry import REGISTRY as REGISTRY
from .registry import Operator as Operator
from .registry import by_aten as by_aten
from .registry import calibration_keys as calibration_keys
from .registry import get as get

OPERATORS: tuple[str, ...]
HELPERS: tuple[str, ...]


def elementwise(
    elements: Dim,
    inputs: Dim = 1,
    outputs: Dim = 1,
    flops_per_element: Dim = 1,
    dtype: DType = 'bf16',
    name: str = 'elementwise',
) -> Workload:
    """A general elementwise kernel over ``elements`` output elements."""


def add(
    elements: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """z = x + y: reads 2 tensors, writes 1. Bytes 3*elements*e; FLOPs 1 per element."""


def gelu(
    elements: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """y = gelu(x): bytes 2*elements*e; FLOPs 8 per element (tanh form)."""


def silu(
    elements: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """y = x * sigmoid(x): bytes 2*elements*e; FLOPs 4 per element."""


def copy(
    elements: Dim,
    dtype: DType = 'bf16',
    out_dtype: DType | None = None,
) -> Workload:
    """y = x (a device-to-device copy, or a cast to ``out_dtype``): bytes elements*(e + e_out); no FLOPs."""


def softmax(
    rows: Dim,
    cols: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """Softmax over the last dim of a [rows, cols] tensor, one kernel."""


def attention(
    batch: Dim,
    heads: Dim,
    seq_q: Dim,
    seq_kv: Dim | None = None,
    head_dim: Dim = 128,
    kv_heads: Dim | None = None,
    causal: bool = False,
    impl: Literal['flash', 'naive', 'cudnn', 'efficient', 'sdpa'] = 'flash',
    dtype: DType = 'bf16',
    kv_dtype: DType | None = None,
    seq_lens: Lengths | None = None,
    seq_lens_kv: Lengths | None = None,
) -> Workload:
    """softmax(Q K^T / sqrt(d)) V over ``heads`` heads; ``seq_kv`` defaults to ``seq_q``."""


def batchnorm(
    batch: Dim,
    channels: Dim,
    height: Dim,
    width: Dim,
    training: bool = True,
    dtype: DType = 'bf16',
    param_dtype: DType | None = None,
) -> Workload:
    """y = (x - mean) / sqrt(var + eps) * gamma + beta per channel of x [N, C, H, W], one kernel."""


def matmul(
    m: Dim,
    n: Dim,
    k: Dim,
    dtype: DType = 'bf16',
    batch: Dim = 1,
    out_dtype: DType | None = None,
    bias: bool = False,
    epilogue: Literal['none', 'relu', 'gelu', 'silu'] = 'none',
    weight_dtype: DType | None = None,
) -> Workload:
    """C = A @ B (+ bias, then ``epilogue``), ``batch`` independent products, one kernel."""


def conv2d(
    batch: Dim,
    in_channels: Dim,
    height: Dim,
    width: Dim,
    out_channels: Dim,
    kernel: Pair = 3,
    stride: Pair = 1,
    padding: Pair = 0,
    groups: Dim = 1,
    layout: Literal['nhwc', 'nchw', 'im2col'] = 'nhwc',
    dtype: DType = 'bf16',
    dilation: Pair = 1,
) -> Workload:
    """A 2-D convolution. ``kernel``, ``stride``, ``padding``, ``dilation``: an int or a pair (h, w)."""


def im2col(
    batch: Dim,
    in_channels: Dim,
    height: Dim,
    width: Dim,
    kernel: Pair = 3,
    stride: Pair = 1,
    padding: Pair = 0,
    dilation: Pair = 1,
    dtype: DType = 'bf16',
) -> Workload:
    """Unfold x [N,C,H,W] into the column matrix [N*Ho*Wo, C*R*S] (``F.unfold``), one launch per image."""


def layout_transform(
    elements: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """An NCHW <-> NHWC transform (a strided copy): reads and writes ``elements``. Bytes 2*elements*e; no FLOPs."""


def embedding(
    tokens: Dim,
    vocab: Dim,
    d_model: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """y [T, d] = table [vocab, d][ids [T]], one gather kernel."""


def grouped_matmul(
    group_sizes: Lengths,
    n: Dim,
    k: Dim,
    dtype: DType = 'bf16',
    out_dtype: DType | None = None,
) -> Workload:
    """C_i = A_i @ B_i over groups of g_i rows, one kernel (a mixture of experts' expert GEMM)."""


def layernorm(
    tokens: Dim,
    d_model: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """y = LayerNorm(x) * gamma + beta over d_model, one kernel."""


def rmsnorm(
    tokens: Dim,
    d_model: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """y = x / rms(x) * gamma, one kernel."""


def layernorm_residual(
    tokens: Dim,
    d_model: Dim,
    fused: bool = True,
    dtype: DType = 'bf16',
) -> Workload:
    """h = x + residual; y = LayerNorm(h): the pre-norm transformer's residual step."""


def pool2d(
    batch: Dim,
    channels: Dim,
    height: Dim,
    width: Dim,
    kernel: Pair = 2,
    stride: Pair = 2,
    padding: Pair = 0,
    mode: Literal['max', 'avg'] = 'max',
    dtype: DType = 'bf16',
    indices: bool = False,
) -> Workload:
    """y [N,C,Ho,Wo] = the max (or mean) of each R x S window of x [N,C,H,W]."""


def qkv_projection(
    tokens: Dim,
    d_model: Dim,
    heads: Dim | None = None,
    kv_heads: Dim | None = None,
    head_dim: Dim | None = None,
    fused: bool = True,
    dtype: DType = 'bf16',
) -> Workload:
    """Q, K, V = x @ W_q, x @ W_k, x @ W_v for x [T, d]."""


def pointwise(
    out_elements: Dim,
    in_elements: Dim,
    dtype: DType = 'bf16',
    out_dtype: DType | None = None,
    flops_per_element: Dim = 1,
    name: str = 'pointwise',
    other_elements: Dim = 0,
    other_dtype: DType | None = None,
) -> Workload:
    """One elementwise kernel over broadcast inputs, each read at its own size, in up to two precisions."""


def reduce(
    in_elements: Dim,
    out_elements: Dim,
    dtype: DType = 'bf16',
    out_dtype: DType | None = None,
) -> Workload:
    """A sum (mean, max) over some dims, one kernel: x [.., n, ..] -> y [.., 1, ..]."""


def fill(
    elements: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """y = a constant (zeros, a gradient seed) or an index ramp (arange): write only, one kernel."""


def concat(
    elements: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """y = cat(x_1, ..., x_n) along one dim, one kernel: each input read once, the output written once."""


def gather(
    elements: Dim,
    index_elements: Dim | None = None,
    dtype: DType = 'bf16',
) -> Workload:
    """y = x[idx]: gather ``elements`` elements of x through int64 indices, one kernel."""


def dropout(
    elements: Dim,
    dtype: DType = 'bf16',
) -> Workload:
    """y = x * mask / (1 - p), mask ~ Bernoulli(1 - p), one kernel that also writes the mask."""


def nll_loss(
    rows: Dim,
    classes: Dim,
    reduction: Literal['mean', 'sum', 'none'] = 'mean',
    dtype: DType = 'bf16',
) -> Workload:
    """loss = -mean_i logp[i, target[i]] over logp [rows, classes] (cross-entropy after a log-softmax), one kernel."""


def adamw(
    elements: Dim,
    dtype: DType = 'fp32',
    grad_dtype: DType | None = None,
) -> Workload:
    """One fused AdamW step over every parameter (``torch.optim.AdamW(fused=True)``), one kernel per chunk of lists."""


def foreach(
    elements: Dim,
    inputs: Dim = 1,
    outputs: Dim = 1,
    flops_per_element: Dim = 1,
    dtype: DType = 'fp32',
    name: str = 'foreach',
) -> Workload:
    """An elementwise op over tensor lists (``torch._foreach_*``: the foreach optimizers' steps), one kernel."""


__all__ = [
    'OPERATORS',
    'HELPERS',
    'REGISTRY',
    'Operator',
    'get',
    'by_aten',
    'calibration_keys',
    'elementwise',
    'add',
    'gelu',
    'silu',
    'copy',
    'softmax',
    'attention',
    'batchnorm',
    'matmul',
    'conv2d',
    'im2col',
    'layout_transform',
    'embedding',
    'grouped_matmul',
    'layernorm',
    'rmsnorm',
    'layernorm_residual',
    'pool2d',
    'qkv_projection',
    'pointwise',
    'reduce',
    'fill',
    'concat',
    'gather',
    'dropout',
    'nll_loss',
    'adamw',
    'foreach',
    'attention_pairs',
    'conv_output_size',
    'qkv_widths',
]
