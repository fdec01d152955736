"""What a GPU program does above the ATen calls that fake CPU tensors would do differently: CUDA autocast, SDPA.

The fake tensors live on the CPU (autograd on fake CUDA tensors aborts a CPU-only build of torch), so the program's
device-specific choices are made here as eager CUDA makes them:

- autocast: ``torch.autocast("cuda")`` (and a program's ``autocast("cpu")``, as every tensor stands for a CUDA one)
  sets CUDA's autocast state, and ``FunctionMode`` applies CUDA's op lists (torch 2.13's ``autocast_mode.cpp``) at the
  torch-function level: lower-precision ops cast their floating inputs to the autocast dtype (a leaf fp32 weight's cast
  cached for the autocast region), fp32 ops cast to fp32, reductions get ``dtype=float32``, promote ops the widest
  type. NB: an op reached only inside a Python-level torch function that is not itself on a list is not cast;
  ``F.cross_entropy`` (on no list) runs as ATen runs it under autocast: ``log_softmax`` in the input's dtype, then
  ``nll_loss`` (an fp32 op) on the log-probabilities cast to fp32, as the H200 profile of BERT's AMP step shows (with
  label smoothing: ATen's own path in the input's dtype, NB);
- ``F.scaled_dot_product_attention`` is recorded whole, as ``aten::scaled_dot_product_attention`` (what PyTorch picks
  on the GPU is ``predict``'s to resolve: ``ops.attention(impl="sdpa")``), its backward as that call's registered
  gradient; its output is allocated as the fused kernels allocate it ([b, sq, h, d] transposed), with the fp32
  log-sum-exp it saves. A mask with a causal module (``module.is_causal``, Hugging Face's attention classes) counts as
  causal (NB: a sliding window is counted as full causal attention);
- dropout runs CUDA's fused ``native_dropout`` (a CPU build decomposes it into bernoulli_ and multiplies);
- optimizers default to their foreach kernels, as on a CUDA device.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode

from .eager import SDPA_BACKWARD
from ..errors import CaptureError
from .encode import cpp_dtype, encode
from .record import Output, Recorder, stored_bytes

__all__ = ["FunctionMode", "cuda_semantics", "LOWER", "FP32", "FP32_DTYPE", "PROMOTE"]

#: CUDA autocast's lower-precision ops (torch-function names: ATen names and the Python operators)
LOWER = frozenset({
    "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv",
    "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot", "lstm_cell",
    "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "scaled_dot_product_attention", "__matmul__", "__rmatmul__",
    # NB: not _grouped_mm, which autocast leaves alone (torch 2.11 and 2.13 register no AutocastCUDA kernel for it; an
    # H200 AMP step over fp32 experts ran ATen's fp32 fallback: data/h200_captured_steps_test_seed2045.json's Mixtral)
})
#: CUDA autocast's fp32 ops
FP32 = frozenset({
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "sinh",
    "tan", "pow", "__pow__", "__rpow__", "softplus", "layer_norm", "native_layer_norm", "group_norm", "rms_norm",
    "frobenius_norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss",
    "nll_loss2d", "nll_loss_nd", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss",
    "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp", "norm", "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
    "upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d", "grid_sampler",
})
#: CUDA autocast's ops that run in fp32 through their dtype argument (when none is given)
FP32_DTYPE = frozenset({"prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm",
                        "linalg_matrix_norm", "sum"})
#: CUDA autocast's ops that run in the widest floating type of their inputs
PROMOTE = frozenset({"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "tensordot", "scatter_add",
                     "index_put", "cat", "stack", "index_copy"})
#: the reads of a whole tensor on the host: each one device-to-host copy, a sync of the host with the GPU
_HOST_READS = frozenset({torch.Tensor.tolist, torch.Tensor.cpu, torch.Tensor.numpy})
_SDPA = torch.nn.functional.scaled_dot_product_attention
_SDPA_OP = torch.ops.aten.scaled_dot_product_attention.default
_CROSS_ENTROPY = torch.nn.functional.cross_entropy


def _eligible(t: Any) -> bool:
    """A tensor autocast may cast: floating point and not float64."""
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64


class FunctionMode(TorchFunctionMode):
    """CUDA autocast at the torch-function level, and SDPA recorded whole (module docstring)."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder
        self.cache: dict[int, tuple[Any, Any]] = {}  # id(weight) -> (weight, its autocast copy)

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is _SDPA:
            args, kwargs = self._autocast("scaled_dot_product_attention", args, kwargs)
            return _sdpa(self.recorder, *args, **kwargs)
        if func is _CROSS_ENTROPY and _ORIGINAL["is_autocast_enabled"]("cuda"):
            return _cross_entropy(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if func in _HOST_READS and self.recorder.policy == "stall":
            return self._host_read(name, func, args, kwargs)
        if name in ("dropout", "dropout_") and func in _DROPOUTS:
            return _dropout(name, *args, **kwargs)
        if name in _ALL and _ORIGINAL["is_autocast_enabled"]("cuda"):
            args, kwargs = self._autocast(name, args, kwargs)
            with _autocast_off():
                return func(*args, **kwargs)
        return func(*args, **kwargs)

    def _host_read(self, name: str, func: Any, args: Any, kwargs: Any) -> Any:
        """A tensor brought to the host whole (``.tolist()``, ``.cpu()``, ``.numpy()``): one stall where it is read
        (the elements ``tolist`` reads one by one are that one read), its values standing in as zero."""
        recorder = self.recorder
        module = recorder.modules[-1] if recorder.modules else ""
        recorder.stall(module, f"Tensor.{name}")
        recorder.note(f"a tensor brought to the host (.{name}()) is one host stall; its values stand in as zero")
        recorder.suppress += 1
        try:
            return func(*args, **kwargs)
        finally:
            recorder.suppress -= 1

    # ---- autocast --------------------------------------------------------------------------------------------
    def _autocast(self, name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        """The arguments as CUDA autocast passes them to op ``name``."""
        if not _ORIGINAL["is_autocast_enabled"]("cuda"):
            return args, kwargs
        if name in LOWER:
            low = _ORIGINAL["get_autocast_dtype"]("cuda")
            return self._map(args, low), {k: self._map(v, low) for k, v in kwargs.items()}
        if name in FP32:
            return self._map(args, torch.float32), {k: self._map(v, torch.float32) for k, v in kwargs.items()}
        if name in FP32_DTYPE:
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            if _eligible(first) and kwargs.get("dtype") is None and not any(isinstance(a, torch.dtype) for a in args):
                return args, {**kwargs, "dtype": torch.float32}
            return args, kwargs
        widest = _widest([*args, *kwargs.values()])
        if widest is None:
            return args, kwargs
        return self._map(args, widest), {k: self._map(v, widest) for k, v in kwargs.items()}

    def _map(self, value: Any, dtype: Any) -> Any:
        """``value`` with each eligible tensor (also in lists) cast to ``dtype``."""
        if isinstance(value, torch.Tensor):
            return self._cast(value, dtype)
        if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
            return type(value)(self._map(v, dtype) for v in value)
        return value

    def _cast(self, t: Any, dtype: Any) -> Any:
        """autocast's cached_cast: a leaf fp32 weight's cast to the lower dtype is made once per autocast region."""
        if not _eligible(t) or t.dtype == dtype:
            return t
        # autocast keeps a weight's cast for the region, except under inference_mode (measured with torch's profiler:
        # three Linear calls cast their weight once under no_grad, three times under inference_mode)
        cached = (dtype != torch.float32 and t.dtype == torch.float32 and t.requires_grad and t.is_leaf
                  and not t._is_view() and torch.is_autocast_cache_enabled() and not torch.is_inference_mode_enabled())
        if cached:
            hit = self.cache.get(id(t))
            if hit is not None and hit[0] is t:
                return hit[1]
        with _autocast_off():
            out = t.to(dtype)
        if cached:
            self.cache[id(t)] = (t, out)
        return out


_ALL = LOWER | FP32 | FP32_DTYPE | PROMOTE


def _widest(values: list[Any]) -> Any:
    """The widest floating dtype among the tensors of ``values`` (None when fewer than two differ)."""
    tensors = [t for v in values for t in ([v] if isinstance(v, torch.Tensor) else v if isinstance(v, (list, tuple))
                                           else []) if _eligible(t)]
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) < 2:
        return None
    if torch.float64 in dtypes:
        return torch.float64
    if torch.float32 in dtypes or len(dtypes) > 1:  # bf16 with fp16 promotes to fp32, as torch.promote_types says
        return torch.float32
    return next(iter(dtypes))


@contextlib.contextmanager
def _autocast_off() -> Iterator[None]:
    """CUDA's autocast state off while an op the mode already cast runs (its inner calls are not cast again)."""
    was = _ORIGINAL["is_autocast_enabled"]("cuda")
    torch.set_autocast_enabled("cuda", False)
    try:
        yield
    finally:
        torch.set_autocast_enabled("cuda", was)


def _cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None, ignore_index: int = -100,
                   reduce: Any = None, reduction: str = "mean", label_smoothing: float = 0.0) -> Any:
    """F.cross_entropy under CUDA autocast (module docstring): ``cross_entropy_loss`` is on no autocast list, so ATen's
    ``log_softmax`` runs in the input's dtype and ``nll_loss``, an fp32 op, casts the log-probabilities to fp32."""
    with _autocast_off():
        if label_smoothing or not _eligible(input) or input.dtype == torch.float32:
            return _CROSS_ENTROPY(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing)
        logp = torch.log_softmax(input, 0 if input.dim() == 1 else 1, dtype=input.dtype)
        w = weight.float() if _eligible(weight) else weight
        return torch.nn.functional.nll_loss(logp.float(), target, w, size_average, ignore_index, reduce, reduction)


# ---- dropout ---------------------------------------------------------------------------------------------------

#: the dropout functions a program calls (the functional one, and the builtins it and nn.Dropout reach)
_DROPOUTS = (torch.nn.functional.dropout, torch.dropout, torch.dropout_)


def _dropout(name: str, input: Any, p: float = 0.5, training: bool = True, inplace: bool = False, train: Any = None) -> Any:
    """dropout as CUDA runs it: one fused ``native_dropout`` kernel (the CPU build decomposes it into bernoulli_ and
    multiplies); nothing at all in eval mode or with p = 0."""
    train = training if train is None else train
    if not train or p == 0 or input.numel() == 0:
        return input
    out = torch.native_dropout(input, float(p), True)[0]
    return input.copy_(out) if inplace or name == "dropout_" else out


# ---- SDPA ------------------------------------------------------------------------------------------------------


def _causal_module(recorder: Recorder) -> Any:
    """The innermost running module that says whether its attention is causal (Hugging Face's ``is_causal``)."""
    for m in reversed(recorder.objects):
        if isinstance(getattr(m, "is_causal", None), bool):
            return m
    return None


class _Attention(torch.autograd.Function):
    """SDPA as the fused kernels run it: one call forward, its gradient backward; nothing computed."""

    @staticmethod
    def forward(ctx: Any, recorder: Recorder, q: Any, k: Any, v: Any, mask: Any, dropout: float, causal: bool,
                scale: Any, gqa: bool) -> Any:  # type: ignore[override]
        module, _ = recorder.where()
        b, h, sq = q.shape[0], q.shape[1], q.shape[2]
        dv = v.shape[-1]
        recorder.suppress += 1
        try:
            out = torch.empty((b, sq, h, dv), dtype=q.dtype, device=q.device).transpose(1, 2)
            lse = torch.empty((b, h, sq), dtype=torch.float32, device=q.device)
        finally:
            recorder.suppress -= 1
        trace = encode(_SDPA_OP, (q, k, v, mask, dropout, causal), {"scale": scale, "enable_gqa": gqa})
        inputs = [t for t in (q, k, v, mask) if t is not None]
        read = sum(stored_bytes(t) for t in inputs)
        recorder.emit("aten::scaled_dot_product_attention", trace,
                      (Output(tuple(out.shape), _name(out), tuple(out.stride()), out.numel() * out.element_size()),),
                      read, module, False)
        ctx.recorder, ctx.trace, ctx.module, ctx.read = recorder, trace, module, read
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.has_mask = mask is not None
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:  # type: ignore[override]
        recorder = ctx.recorder
        q, k, v, out, lse = ctx.saved_tensors
        recorder.suppress += 1
        try:
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        finally:
            recorder.suppress -= 1
        grads = tuple(Output(tuple(t.shape), _name(t), tuple(t.stride()), t.numel() * t.element_size()) for t in (dq, dk, dv))
        read = ctx.read + stored_bytes(grad) + stored_bytes(out) + stored_bytes(lse)
        recorder.emit(SDPA_BACKWARD, ctx.trace, grads, read, ctx.module, True)
        return None, dq, dk, dv, None, None, None, None, None


def _name(t: Any) -> str:
    """A tensor's C++ dtype name."""
    return cpp_dtype(t.dtype)


def _sdpa(recorder: Recorder, query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0,
          is_causal: bool = False, scale: Any = None, enable_gqa: bool = False) -> Any:
    """F.scaled_dot_product_attention recorded whole (module docstring)."""
    if query.dim() != 4:
        raise CaptureError(f"scaled_dot_product_attention of a {query.dim()}-d query {tuple(query.shape)}: solkit "
                           "records 4-d [batch, heads, seq, head_dim] attention only")
    causal = bool(is_causal)
    if attn_mask is not None and not causal:
        owner = _causal_module(recorder)
        if owner is not None and owner.is_causal and query.shape[2] > 1:
            causal = True
            recorder.note("an attention mask under a causal module (module.is_causal) is counted as causal "
                               "attention (a sliding window as full causal)")
    if attn_mask is not None:
        recorder.note("the attention mask's read is not counted (as in a profile)")
    return _Attention.apply(recorder, query, key, value, attn_mask, float(dropout_p), causal, scale, bool(enable_gqa))


# ---- the CUDA semantics of a CPU-only build ---------------------------------------------------------------------

_ORIGINAL: dict[str, Any] = {"is_autocast_enabled": torch.is_autocast_enabled,
                             "get_autocast_dtype": torch.get_autocast_dtype}


@contextlib.contextmanager
def cuda_semantics(mode: FunctionMode) -> Iterator[None]:
    """Make a CPU-only torch behave as a CUDA device for the program: ``torch.autocast("cuda")`` enabled (not refused
    for want of a GPU), ``autocast("cpu")`` taken as CUDA's, foreach optimizers by default. NB: these patch torch's
    module attributes while the capture runs (restored after): captures run one at a time (``run._ONE_AT_A_TIME``);
    other torch work in another thread meanwhile would see the patches."""
    import torch.amp.autocast_mode as autocast_mode
    import torch.cuda.amp.common as amp_common
    import torch.optim.optimizer as optimizer

    original_init = autocast_mode.autocast.__init__

    def init(self: Any, device_type: str, *args: Any, **kwargs: Any) -> None:
        original_init(self, "cuda" if device_type == "cpu" else device_type, *args, **kwargs)

    def enabled(device_type: Any = None) -> bool:
        return bool(_ORIGINAL["is_autocast_enabled"]("cuda" if device_type in (None, "cpu") else device_type))

    def dtype(device_type: str) -> Any:
        return _ORIGINAL["get_autocast_dtype"]("cuda" if device_type == "cpu" else device_type)

    original_clear = torch.clear_autocast_cache

    def clear() -> None:
        mode.cache.clear()
        original_clear()

    foreach_devices = optimizer._get_foreach_kernels_supported_devices
    patches = [(amp_common, "amp_definitely_not_available", lambda: False),
               (torch.cuda, "is_bf16_supported", lambda *a, **k: True),
               (autocast_mode.autocast, "__init__", init),
               (torch, "is_autocast_enabled", enabled), (torch, "get_autocast_dtype", dtype),
               (torch, "clear_autocast_cache", clear),
               (optimizer, "_get_foreach_kernels_supported_devices", lambda: [*foreach_devices(), "cpu"])]
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in patches]
    was = (_ORIGINAL["is_autocast_enabled"]("cuda"), _ORIGINAL["get_autocast_dtype"]("cuda"))
    try:
        for obj, attr, value in patches:
            setattr(obj, attr, value)
        yield
    finally:
        for obj, attr, value in saved:
            setattr(obj, attr, value)
        torch.set_autocast_enabled("cuda", was[0])
        torch.set_autocast_dtype("cuda", was[1])
        mode.cache.clear()
