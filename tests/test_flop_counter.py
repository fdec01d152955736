"""Cross-check FLOPs against torch.utils.flop_counter.FlopCounterMode where it counts the same thing.

Runs only where torch is installed (``pip install torch``); CI without torch skips it, and
``python -m pytest tests/test_flop_counter.py`` after a torch install runs it.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from solkit import ops  # noqa: E402


def _count(fn, *tensors) -> int:
    with FlopCounterMode(display=False) as counter:
        fn(*tensors)
    return counter.get_total_flops()


def _t(*shape):
    return torch.empty(*shape, device="meta", dtype=torch.bfloat16)


@pytest.mark.parametrize("m, n, k, batch", [(1, 8192, 8192, 1), (4095, 50257, 1000, 1), (512, 512, 64, 16)])
def test_matmul(m, n, k, batch):
    """torch counts 2*m*n*k per product, as solkit does."""
    a, b = _t(batch, m, k), _t(batch, k, n)
    assert _count(torch.matmul, a, b) == ops.matmul(m, n, k, batch=batch).matrix_flops


def test_qkv_projection():
    """F.linear with the fused weight [N, d] and with three weights."""
    t, d = 128, 768
    x = _t(t, d)
    fused = _count(lambda x: F.linear(x, _t(3 * d, d)), x)
    unfused = _count(lambda x: [F.linear(x, _t(d, d)) for _ in range(3)], x)
    assert fused == unfused == ops.qkv_projection(t, d).flops


@pytest.mark.parametrize(
    "n, c, h, k, r, stride, pad, dil, groups",
    [(2, 3, 224, 64, 7, 2, 3, 1, 1), (4, 64, 56, 64, 3, 1, 1, 1, 1), (1, 256, 14, 256, 3, 1, 1, 1, 256), (1, 32, 33, 16, 3, 2, 0, 2, 2)],
)
def test_conv2d(n, c, h, k, r, stride, pad, dil, groups):
    """torch counts 2*N*prod(w.shape)*Ho*Wo; solkit 2*N*K*Ho*Wo*(C/g)*R*S."""
    x, w = _t(n, c, h, h), _t(k, c // groups, r, r)
    counted = _count(lambda x, w: F.conv2d(x, w, stride=stride, padding=pad, dilation=dil, groups=groups), x, w)
    assert counted == ops.conv2d(n, c, h, h, k, r, stride, pad, groups, dilation=dil).flops


def test_attention_non_causal():
    """SDPA: torch counts both batched products, 4*b*h*sq*skv*d, as solkit's model FLOPs without a mask."""
    b, h, sq, skv, d = 2, 8, 256, 512, 64
    q, kk, v = _t(b, h, sq, d), _t(b, h, skv, d), _t(b, h, skv, d)
    counted = _count(F.scaled_dot_product_attention, q, kk, v)
    assert counted == ops.attention(b, h, sq, skv, head_dim=d).flops


def test_naive_causal_executes_every_pair():
    """Naive attention's two matmuls execute every pair even when causal (torch counts the same)."""
    b, h, s, d = 1, 4, 256, 64
    q, kk, v = _t(b, h, s, d), _t(b, h, s, d), _t(b, h, s, d)
    counted = _count(lambda q, k, v: torch.matmul(torch.softmax(q @ k.transpose(-1, -2), -1), v), q, kk, v)
    assert counted == ops.attention(b, h, s, head_dim=d, causal=True, impl="naive").matrix_flops
