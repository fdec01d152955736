"""The standard operator set: the shapes the seed article and most users ask about first."""

from __future__ import annotations

from typing import Callable

from . import ops
from .workload import Workload

__all__ = ["STANDARD_OPS", "standard_workloads"]

# Llama-3-8B: d 4096, 32 heads / 8 KV heads of 128, 8192 tokens. BERT-base: d 768, 12 heads, 8 x 512 tokens.
# ResNet-50 conv2_x 3x3: batch 32, 64 -> 64 channels at 56 x 56.
STANDARD_OPS: dict[str, Callable[[], Workload]] = {
    "gemm 8192^3": lambda: ops.matmul(8192, 8192, 8192),
    "gemv 1x8192x8192": lambda: ops.matmul(1, 8192, 8192),
    "qkv llama3-8b fused": lambda: ops.qkv_projection(8192, 4096, heads=32, kv_heads=8),
    "qkv llama3-8b unfused": lambda: ops.qkv_projection(8192, 4096, heads=32, kv_heads=8, fused=False),
    "qkv bert-base fused": lambda: ops.qkv_projection(4096, 768, heads=12),
    "qkv bert-base unfused": lambda: ops.qkv_projection(4096, 768, heads=12, fused=False),
    "ln+residual fused": lambda: ops.layernorm_residual(8192, 4096),
    "ln+residual unfused": lambda: ops.layernorm_residual(8192, 4096, fused=False),
    "rmsnorm": lambda: ops.rmsnorm(8192, 4096),
    "softmax 32k x 4096": lambda: ops.softmax(32768, 4096),
    "conv3x3 nhwc": lambda: ops.conv2d(32, 64, 56, 56, 64, kernel=3, padding=1, layout="nhwc"),
    "conv3x3 nchw": lambda: ops.conv2d(32, 64, 56, 56, 64, kernel=3, padding=1, layout="nchw"),
    "conv3x3 im2col": lambda: ops.conv2d(32, 64, 56, 56, 64, kernel=3, padding=1, layout="im2col"),
    "attention flash causal 8k": lambda: ops.attention(1, 32, 8192, head_dim=128, kv_heads=8, causal=True),
    "attention naive causal 8k": lambda: ops.attention(1, 32, 8192, head_dim=128, kv_heads=8, causal=True, impl="naive"),
    "decode attention 32k": lambda: ops.attention(8, 32, 1, seq_kv=32768, head_dim=128, kv_heads=8),
}


def standard_workloads() -> dict[str, Workload]:
    """Label -> workload of every standard operator."""
    return {label: build().renamed(label) for label, build in STANDARD_OPS.items()}
