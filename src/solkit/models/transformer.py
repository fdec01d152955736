"""Transformer layers and models from ops: pre-norm decoders (Llama) and post-norm encoders (BERT)."""

from __future__ import annotations

import inspect
import math
from typing import Any, Iterable, Mapping

import numpy as np

from .._validate import broadcast, checked_call, choice, dim, flag
from ..errors import ArgumentTypeError, OptionError, ShapeError
from ..ops import add, attention, elementwise, embedding, gelu, layernorm, layernorm_residual, matmul, qkv_projection, rmsnorm
from ..ops.projection import qkv_widths
from ..workload import Workload, chain, overflow
from ._common import count_text, naming_overflow

__all__ = ["decoder_layer", "transformer"]

NORMS = ("rmsnorm", "layernorm")
MLPS = ("swiglu", "gelu")

#: SwiGLU's combine step silu(gate) * up: silu 4 FLOPs + 1 multiply per element
SWIGLU_FLOPS = 5

@checked_call
def decoder_layer(
    batch: Any,
    seq: Any,
    d_model: Any,
    heads: Any,
    kv_heads: Any = None,
    head_dim: Any = None,
    ffn: Any = None,
    mlp: str = "swiglu",
    norm: str = "rmsnorm",
    causal: bool = True,
    fused_qkv: bool = True,
    fused_norm: bool = False,
    attention_impl: str = "flash",
    dtype: Any = "bf16",
) -> Workload:
    """One transformer layer's forward pass over T = batch*seq tokens.

    Pre-norm, as Llama: norm, QKV projection, attention, output projection [T,q] @ [q,d],
    residual add, norm, MLP, residual add. MLP "swiglu": gate and up as one GEMM
    [T,d] @ [d,2*ffn], silu(gate)*up (5 FLOPs per element), down [T,ffn] @ [ffn,d]; "gelu":
    [T,d] @ [d,ffn], gelu, [T,ffn] @ [ffn,d]. ``fused_norm`` (layernorm only) fuses each
    residual add into the following LayerNorm (``layernorm_residual``). ``ffn`` defaults to 4*d.
    """
    b, s, d = dim("batch", batch), dim("seq", seq), dim("d_model", d_model)
    f = 4 * d if ffn is None else dim("ffn", ffn)
    kind = choice("mlp", mlp, MLPS)
    norm_kind = choice("norm", norm, NORMS)
    fuse = flag("fused_norm", fused_norm)
    if fuse and norm_kind != "layernorm":
        raise OptionError(f"fused_norm=True needs norm='layernorm' (layernorm_residual), got norm={norm!r}")
    q, _ = qkv_widths(d, heads, kv_heads, head_dim)
    h = dim("heads", heads)
    broadcast(batch=b, seq=s, d_model=d, ffn=f, heads=h)
    _tokens_fit(b, s, d_model=d, ffn=f)
    hd = q / h
    with naming_overflow("decoder_layer", batch=b, seq=s, d_model=d, heads=h, ffn=f):
        return _layer(b, s, d, heads, kv_heads, q, hd, f, kind, norm_kind, fuse, flag("fused_qkv", fused_qkv), causal,
                      attention_impl, dtype)


def _layer(b: Any, s: Any, d: Any, heads: Any, kv_heads: Any, q: Any, hd: Any, f: Any, kind: str, norm_kind: str,
           fuse: bool, fused_qkv: bool, causal: Any, attention_impl: Any, dtype: Any) -> Workload:
    """decoder_layer's kernels from validated arguments."""
    t = b * s
    normalize = rmsnorm if norm_kind == "rmsnorm" else layernorm
    parts = [
        normalize(t, d, dtype),
        qkv_projection(t, d, heads, kv_heads, hd, fused=fused_qkv, dtype=dtype),
        attention(b, heads, s, head_dim=hd, kv_heads=kv_heads, causal=causal, impl=attention_impl, dtype=dtype),
        matmul(t, d, q, dtype=dtype).renamed("o_proj", kernels=True),  # attn [T,q] @ w_o [q,d] -> [T,d]
        layernorm_residual(t, d, fused=True, dtype=dtype) if fuse else chain("residual + norm", add(t * d, dtype),
                                                                            normalize(t, d, dtype)),
    ]
    if kind == "swiglu":
        parts += [
            matmul(t, 2 * f, d, dtype=dtype).renamed("gate_up", kernels=True),  # x [T,d] @ w [d,2*ffn] -> [T,2*ffn]
            elementwise(t * f, inputs=2, outputs=1, flops_per_element=SWIGLU_FLOPS, dtype=dtype, name="silu*up"),
            matmul(t, d, f, dtype=dtype).renamed("down", kernels=True),  # h [T,ffn] @ w [ffn,d] -> [T,d]
        ]
    else:
        parts += [
            matmul(t, f, d, dtype=dtype).renamed("up", kernels=True),  # x [T,d] @ w [d,ffn] -> [T,ffn]
            gelu(t * f, dtype),
            matmul(t, d, f, dtype=dtype).renamed("down", kernels=True),  # h [T,ffn] @ w [ffn,d] -> [T,d]
        ]
    parts.append(add(t * d, dtype))  # residual
    return chain("decoder layer", *parts)


def _tokens_fit(b: Any, s: Any, **widths: Any) -> None:
    """2 * batch * seq * each width (the activations, the gate/up GEMM's 2*ffn) must stay within float64."""
    for name, width in widths.items():
        with np.errstate(over="ignore"):
            elements = 2.0 * b * s * width
        if not (elements < math.inf if type(elements) is float else np.all(np.isfinite(elements))):
            raise overflow(ShapeError(f"2 * batch * seq * {name} must stay below 1.8e308 (float64), got batch="
                                      f"{np.max(b):g}, seq={np.max(s):g} and {name}={np.max(width):g}"))


#: the keyword options ``transformer`` passes on to ``decoder_layer``
LAYER_OPTIONS: tuple[str, ...] = tuple(inspect.signature(decoder_layer).parameters)[4:]


def _known(function: str, options: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Refuse a keyword ``function`` does not take, naming it and listing the ones it does."""
    allowed = tuple(allowed)
    unknown = [k for k in options if k not in allowed]
    if unknown:
        raise ArgumentTypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}; it takes: "
                                f"{', '.join(allowed)}")


def _layer_count(layers: Any) -> int:
    """The number of layers: one positive integer (a count is held once, not swept)."""
    if type(layers) is int and layers >= 1:
        return layers
    if isinstance(layers, (list, tuple)) or (isinstance(layers, np.ndarray) and layers.ndim):
        what = "an array" if isinstance(layers, np.ndarray) else f"a {type(layers).__name__}"
        raise ArgumentTypeError(f"layers must be one positive integer (a layer count is not swept: call once per "
                                f"count), got {what} of {len(layers)} values")
    return int(dim("layers", layers))


@checked_call
def transformer(
    layers: Any,
    vocab: Any,
    batch: Any,
    seq: Any,
    d_model: Any,
    heads: Any,
    lm_head: bool = True,
    **layer_options: Any,
) -> Workload:
    """A whole model's forward pass: embedding, ``layers`` x ``decoder_layer`` (held once, counted), final norm, LM head [T,d] @ [d,vocab]."""
    _known("transformer", layer_options, ("layers", "vocab", "batch", "seq", "d_model", "heads", "lm_head", *LAYER_OPTIONS))
    n = _layer_count(layers)
    v = dim("vocab", vocab)
    b, s, d = dim("batch", batch), dim("seq", seq), dim("d_model", d_model)
    broadcast(vocab=v, batch=b, seq=s, d_model=d)
    _tokens_fit(b, s, vocab=v, d_model=d)
    t = b * s
    head = flag("lm_head", lm_head)
    layer = decoder_layer(batch, seq, d_model, heads, **layer_options)
    dtype = layer_options.get("dtype", "bf16")
    final_norm = rmsnorm if choice("norm", layer_options.get("norm", "rmsnorm"), NORMS) == "rmsnorm" else layernorm
    with naming_overflow("transformer", layers=n, vocab=v, batch=b, seq=s, d_model=d):
        try:
            repeated = layer.repeat(n, "layers")
        except ShapeError as exc:
            raise ShapeError(f"layers={count_text(n)} is too many: {exc}") from None
        parts = [embedding(t, v, d, dtype), repeated, final_norm(t, d, dtype)]
        if head:
            parts.append(matmul(t, v, d, dtype=dtype).renamed("lm_head", kernels=True))  # h [T,d] @ w [d,vocab] -> logits [T,vocab]
        return chain(f"transformer ({count_text(n)} layers)", *parts)
