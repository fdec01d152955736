"""``Transformer``: a typed, validated description of a transformer's architecture, and its closed forms.

The architecture only (DESIGN): precision, attention implementation and fusion are arguments of
``forward``, ``prefill`` and ``decode`` (``solkit.models.program``). Closed forms here, each exact:

- ``params``: every trainable element, as PyTorch's ``sum(p.numel() for p in model.parameters())``
  counts it for the Hugging Face module (a tied LM head counts once).
- ``kv_cache_bytes(batch, context)``: 2 (K and V) x layers x batch x context x kv_heads x head_dim x e.
- ``flops_per_token``: matrix FLOPs per token, the MFU convention: 2 per weight of every linear layer
  (the LM head's included; the embedding lookup is not a product) plus the attention products,
  4 x layers x heads x head_dim per (query, key) pair; causal attention counts the unmasked pairs,
  (seq + 1) / 2 per token on average, ``attention="full"`` counts seq per token (PaLM's and
  Megatron-LM's MFU tables: 6N + 12 L H Q T for training). Training is 3x the forward.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional, get_args

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from .._num import result
from .._validate import checked_call, choice, did_you_mean, dim, flag, shown
from ..errors import ArgumentTypeError, OptionError, ShapeError
from ..precision import normalize, storage_bytes

if TYPE_CHECKING:
    from .._typing import AttentionImpl, Dim, DType, Figure, GPULike, KernelStyle, Quantization
    from ..workload import Workload
    from .footprint import MemoryFootprint

__all__ = ["Transformer", "MLPS", "NORMS", "HEADS", "POSITIONS", "BIASES", "FAMILIES", "ATTENTION_CONVENTIONS"]

Mlp = Literal["swiglu", "geglu", "gelu"]
Norm = Literal["rmsnorm", "layernorm"]
Head = Literal["lm", "mlm", "none"]
Positions = Literal["rotary", "learned"]
#: which linear layers carry a bias: none (Llama), qkv (Qwen2: q, k and v only), all (GPT-2, BERT)
Bias = Literal["none", "qkv", "all"]
#: the Hugging Face module layout the eager kernels follow (``solkit.models.program``)
Family = Literal["llama", "gpt2", "bert"]
# the choices as tuples, read from the field types (one list each)
MLPS, NORMS, HEADS, POSITIONS, BIASES, FAMILIES = (get_args(t) for t in (Mlp, Norm, Head, Positions, Bias, Family))
ATTENTION_CONVENTIONS = ("causal", "full")
#: the largest integer field: every count the closed forms make of the fields stays finite in float64
MAX_FIELD = 2**53


# ---- strict field types (as strict as Kernel's figures: nothing coerces) ----------------------------------------
# A bool is not an integer and "32" is not 32; 32.0 is 32 (a whole float, as a shape's dims take it), 32.5 a bad value.
# An error of type "*_type" is a wrong type (ArgumentTypeError), an integer beyond 2**53 a ShapeError (as every figure
# too large for float64), any other a bad value (OptionError): see _error.


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _integer(minimum: int) -> Any:
    def check(value: Any) -> int:
        if type(value) is int and minimum <= value <= MAX_FIELD:  # the usual call, fast
            return value
        expected = f"an integer >= {minimum}"
        if _is_bool(value) or not isinstance(value, numbers.Real):
            raise PydanticCustomError("int_type", f"must be {expected} (a Python or numpy int, or a whole float)")
        if not isinstance(value, numbers.Integral):  # a whole float is its integer, as a shape's is (dim)
            x = float(value)
            if not (math.isfinite(x) and x.is_integer()):
                raise PydanticCustomError("int_fraction", f"must be {expected}: a whole number")
            value = x
        n = int(value)
        if n < minimum:
            raise PydanticCustomError("int_range", f"must be {expected}")
        if n > MAX_FIELD:  # a figure beyond float64's exact integers: a ShapeError, as every such figure (_error)
            raise PydanticCustomError("int_too_large", f"must be {expected} and at most 2**53 (exact in float64)")
        return n
    return check


def _flag(value: Any) -> bool:
    if value is True or value is False:
        return value
    if not _is_bool(value):
        raise PydanticCustomError("bool_type", "must be True or False")
    return bool(value)


def _real(value: Any) -> float:
    if type(value) is float and math.isfinite(value):
        return value
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise PydanticCustomError("float_type", "must be a number (a Python or numpy int or float)")
    x = float(value)
    if not math.isfinite(x):
        raise PydanticCustomError("float_finite", "must be a finite number")
    return x


def _probability(value: Any) -> float:
    x = _real(value)
    if not 0.0 <= x < 1.0:
        raise PydanticCustomError("float_range", "must be a probability in [0, 1)")
    return x


def _positive(value: Any) -> float:
    x = _real(value)
    if not x > 0.0:
        raise PydanticCustomError("float_range", "must be a finite number > 0")
    return x


def _text(value: Any) -> str:
    if type(value) is str:
        return value
    if not isinstance(value, str):
        raise PydanticCustomError("string_type", "must be a string")
    return str(value)


def _option(value: Any) -> Any:
    if not isinstance(value, str):
        raise PydanticCustomError("string_type", "must be a string")  # _error lists the options
    return value.lower()  # the options are lower case, and a choice is case-insensitive everywhere (_validate.choice)


Positive = Annotated[int, BeforeValidator(_integer(1))]
Count = Annotated[int, BeforeValidator(_integer(0))]
Flag = Annotated[bool, BeforeValidator(_flag)]
Probability = Annotated[float, BeforeValidator(_probability)]
PositiveReal = Annotated[float, BeforeValidator(_positive)]
Text = Annotated[str, BeforeValidator(_text)]


class Transformer(BaseModel):
    """A transformer's architecture: layers, widths, heads, MLP, norm, embeddings, biases, head; the numbers it implies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Text = "transformer"
    family: Annotated[Family, BeforeValidator(_option)] = "llama"
    layers: Positive
    d_model: Positive
    heads: Positive
    kv_heads: Optional[Positive] = None
    head_dim: Optional[Positive] = None
    ffn: Optional[Positive] = None
    vocab: Positive
    mlp: Annotated[Mlp, BeforeValidator(_option)] = "swiglu"
    norm: Annotated[Norm, BeforeValidator(_option)] = "rmsnorm"
    norm_position: Annotated[Literal["pre", "post"], BeforeValidator(_option)] = "pre"
    positions: Annotated[Positions, BeforeValidator(_option)] = "rotary"
    max_positions: Optional[Positive] = None
    token_types: Count = 0
    embedding_norm: Flag = False
    tie_embeddings: Flag = False
    bias: Annotated[Bias, BeforeValidator(_option)] = "none"
    causal: Flag = True
    dropout: Probability = 0.0
    attention_dropout: Probability = 0.0
    head: Annotated[Head, BeforeValidator(_option)] = "lm"
    pooler: Flag = False
    sliding_window: Optional[Positive] = None
    experts: Count = 0
    top_k: Positive = 2
    capacity_factor: Optional[PositiveReal] = None
    expert_parallel: Positive = 1  # the experts here are one of this many shards (parallel.shard)
    source: Optional[Text] = None

    def __init__(self, *args: Any, **data: Any) -> None:
        if args:
            raise ArgumentTypeError(f"Transformer takes keyword arguments only (layers=, d_model=, heads=, vocab=, ...; "
                                    f"a dict of fields is Transformer(**fields)), got {len(args)} positional "
                                    f"argument{'s' if len(args) > 1 else ''}: {shown(args)}")
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _error(exc) from None

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> "Transformer":
        """Validate a mapping of fields; every problem a solkit error naming the field (as the constructor's)."""
        if not isinstance(obj, dict) and not isinstance(obj, cls):
            raise ArgumentTypeError(f"Transformer.model_validate takes a dict of fields, got {type(obj).__name__} "
                                    f"{shown(obj)}")
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as exc:
            raise _error(exc) from None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """kv_heads, head_dim and ffn spelled out (heads, d_model / heads, 4 d_model) so equal models compare equal."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        d, h = _whole(out.get("d_model")), _whole(out.get("heads"))
        if out.get("kv_heads") is None and h is not None:
            out["kv_heads"] = h
        if out.get("head_dim") is None and d is not None and h is not None and h > 0 and d % h == 0:
            out["head_dim"] = d // h
        if out.get("ffn") is None and d is not None:
            if 4 * d > MAX_FIELD:  # a d_model fine alone whose default ffn is not: named by d_model, which set it;
                # a ShapeError, as every figure beyond 2**53 (_error)
                raise PydanticCustomError("int_too_large", f"d_model={d} makes ffn's default 4 x d_model = {4 * d}, "
                                          "beyond 2**53 (exact in float64): give ffn")
            out["ffn"] = 4 * d
        return out

    @model_validator(mode="after")
    def _consistent(self) -> "Transformer":
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"kv_heads must divide heads, got heads={self.heads} and kv_heads={self.kv_heads}")
        if self.head_dim is None and self.d_model % self.heads:
            raise ValueError(f"d_model must be a multiple of heads when head_dim is not given, got d_model="
                             f"{self.d_model} and heads={self.heads}")
        if self.positions == "learned" and self.max_positions is None:
            raise ValueError("positions='learned' needs max_positions (the rows of the position table)")
        if self.head == "none" and self.tie_embeddings:
            raise ValueError("tie_embeddings=True needs a head ('lm' or 'mlm') to tie the embedding to")
        if self.experts and self.top_k > self.experts * self.expert_parallel:
            raise ValueError(f"top_k must be at most experts, got top_k={self.top_k} and experts={self.experts}")
        if self.expert_parallel > 1 and not self.experts:
            raise ValueError("expert_parallel shards a mixture of experts: set experts")
        if self.experts and self.bias != "none":
            raise ValueError(f"a mixture of experts is modelled without biases (Mixtral's layout), got bias={self.bias!r}")
        if self.capacity_factor is not None and not self.experts:
            raise ValueError("capacity_factor applies to a mixture of experts: set experts")
        return self

    # ---- resolved widths ----------------------------------------------------------------------

    @property
    def n_kv_heads(self) -> int:
        """KV heads (default: heads, multi-head attention)."""
        return self.kv_heads or self.heads

    @property
    def n_head_dim(self) -> int:
        """Width of one head (default: d_model / heads)."""
        return self.head_dim or self.d_model // self.heads

    @property
    def q_width(self) -> int:
        """Width of the queries and the attention output: heads x head_dim."""
        return self.heads * self.n_head_dim

    @property
    def kv_width(self) -> int:
        """Width of the keys (and of the values): kv_heads x head_dim."""
        return self.n_kv_heads * self.n_head_dim

    @property
    def ffn_width(self) -> int:
        """The MLP's hidden width (default 4 x d_model)."""
        return self.ffn or 4 * self.d_model

    @property
    def gated(self) -> bool:
        """A gated MLP (SwiGLU, GeGLU): gate and up projections, then down."""
        return self.mlp in ("swiglu", "geglu")

    # ---- parameters ---------------------------------------------------------------------------

    @property
    def norm_params(self) -> int:
        """Parameters of one norm: LayerNorm a weight and a bias (2d), RMSNorm a weight (d)."""
        return (2 if self.norm == "layernorm" else 1) * self.d_model

    @property
    def moe(self) -> bool:
        """A mixture of experts: each layer's MLP is ``experts`` MLPs of width ffn, ``top_k`` of them per token."""
        return self.experts > 0

    @property
    def mlp_weights(self) -> int:
        """Weights of one MLP (one expert's): 2 or 3 matrices of d x ffn."""
        return (3 if self.gated else 2) * self.d_model * self.ffn_width

    @property
    def layer_linear_weights(self) -> int:
        """Weights of one layer's linear layers: q, k, v, o and the MLP (every expert's and the router's, d x experts)."""
        d, q, kv = self.d_model, self.q_width, self.kv_width
        router = d * self.experts * self.expert_parallel  # it scores every expert, also the other shards'
        mlp = self.experts * self.mlp_weights + router if self.moe else self.mlp_weights
        return d * q + 2 * d * kv + q * d + mlp

    @property
    def layer_active_weights(self) -> int:
        """Weights of one layer that multiply each token: attention, the router and top_k experts (dense: all)."""
        if not self.moe:
            return self.layer_linear_weights
        d, q, kv = self.d_model, self.q_width, self.kv_width
        return d * q + 2 * d * kv + q * d + self.top_k * self.mlp_weights + d * self.experts * self.expert_parallel

    @property
    def layer_params(self) -> int:
        """Parameters of one layer: linear weights, biases, two norms."""
        return self.layer_linear_weights + self._layer_biases + 2 * self.norm_params

    @property
    def _layer_biases(self) -> int:
        d, q, kv, f = self.d_model, self.q_width, self.kv_width, self.ffn_width
        if self.bias == "none":
            return 0
        qkv = q + 2 * kv
        if self.bias == "qkv":
            return qkv
        return qkv + d + ((2 * f) if self.gated else f) + d  # o, the MLP's up (gate and up) and down biases

    @property
    def embedding_params(self) -> int:
        """Token, position and token-type tables and the embedding norm."""
        d = self.d_model
        positions = self.max_positions * d if self.positions == "learned" and self.max_positions else 0
        return self.vocab * d + positions + self.token_types * d + (self.norm_params if self.embedding_norm else 0)

    @property
    def head_params(self) -> int:
        """The head: LM (a vocab x d matrix unless tied), MLM (BERT: dense d x d + bias, LayerNorm, decoder, its bias), pooler."""
        d = self.d_model
        out = 0
        if self.head in ("lm", "mlm"):
            out += 0 if self.tie_embeddings else self.vocab * d
            out += self.vocab if self.head == "mlm" else 0  # BERT's decoder has a bias; LM heads (GPT-2, Llama) none
        if self.head == "mlm":
            out += d * d + d + self.norm_params  # the transform: dense, GELU, LayerNorm
        if self.pooler:
            out += d * d + d
        return out

    @property
    def final_norm(self) -> bool:
        """A pre-norm model normalizes the last layer's output (a post-norm model's layers end with one)."""
        return self.norm_position == "pre"

    @property
    def params(self) -> int:
        """Every trainable element (a tied head counts once): embeddings + layers + final norm + head."""
        return (self.embedding_params + self.layers * self.layer_params + (self.norm_params if self.final_norm else 0)
                + self.head_params)

    @property
    def param_tensors(self) -> int:
        """Parameter tensors (the optimizer's list length): each weight, bias and norm scale or shift its own."""
        per_norm = 2 if self.norm == "layernorm" else 1
        mlp = 3 if self.gated else 2
        linear = 4 + (self.experts * mlp + 1 if self.moe else mlp)  # q, k, v, o, the MLP's (experts' and router); GPT-2: c_attn
        if self.family == "gpt2":
            linear -= 2
        biases = {"none": 0, "qkv": 3, "all": linear}[self.bias] if self.family != "gpt2" else linear
        layer = linear + biases + 2 * per_norm
        embeddings = 1 + (self.positions == "learned") + (self.token_types > 0) + (per_norm if self.embedding_norm else 0)
        head = 0
        if self.head in ("lm", "mlm"):
            head += 0 if self.tie_embeddings else 1
        if self.head == "mlm":
            head += 1 + 2 + per_norm  # decoder bias, transform weight and bias, its LayerNorm
        head += 2 if self.pooler else 0
        return embeddings + self.layers * layer + (per_norm if self.final_norm else 0) + head

    @property
    def head_linear_weights(self) -> int:
        """Weights of the head's matrix products: the vocab projection (tied or not) and the MLM transform's dense."""
        d = self.d_model
        return (self.vocab * d if self.head in ("lm", "mlm") else 0) + (d * d if self.head == "mlm" else 0)

    @property
    def linear_weights(self) -> int:
        """Weights that multiply activations each token: every layer's linear layers and the head's (N of 6N; a
        mixture of experts counts its router and top_k experts)."""
        return self.layers * self.layer_active_weights + self.head_linear_weights

    # ---- closed forms ---------------------------------------------------------------------------

    @checked_call
    def kv_cache_bytes(self, batch: Dim, context: Dim, dtype: DType = "bf16") -> Figure:
        """Bytes of the KV cache: 2 x layers x batch x context x kv_heads x head_dim x e (e of ``dtype``)."""
        b, c = dim("batch", batch), dim("context", context)
        e = storage_bytes(normalize(dtype, "dtype"))
        return result(2.0 * self.layers * b * c * self.kv_width * e)

    @checked_call
    def flops_per_token(self, training: bool = False, seq: Dim = 2048,
                        attention: Literal["causal", "full"] = "causal") -> Figure:
        """Matrix FLOPs per token of a sequence of ``seq`` tokens (training: 3x the forward).

        Forward: 2 x linear_weights + 4 x layers x heads x head_dim x pairs per token, where pairs per
        token is (seq + 1) / 2 for a causal model (``attention="causal"``, the unmasked pairs, what
        ``forward(...).flops`` counts) and seq for ``attention="full"`` (PaLM appendix B, Megatron-LM).
        """
        s = dim("seq", seq)
        convention = choice("attention", attention, ATTENTION_CONVENTIONS)
        pairs = (s + 1.0) / 2.0 if (convention == "causal" and self.causal) else s
        forward = 2.0 * self.linear_weights + 4.0 * self.layers * self.q_width * pairs
        return result(forward * (3.0 if flag("training", training) else 1.0))

    # ---- programs ---------------------------------------------------------------------------------

    @checked_call
    def forward(self, batch: Dim = 1, seq: Dim = 2048, dtype: DType = "bf16", impl: AttentionImpl = "sdpa",
                kernels: KernelStyle = "eager", amp: bool | None = False, training: bool = False,
                quant: Quantization | None = None) -> Workload:
        """The forward pass over batch x seq tokens, logits for every token (``kernels``: "eager" or "fused")."""
        from .program import build

        return build(self, "forward", batch, seq, 0, dtype, impl, kernels, amp, training, quant=quant)

    @checked_call
    def prefill(self, batch: Dim = 1, seq: Dim = 2048, dtype: DType = "bf16", impl: AttentionImpl = "sdpa",
                kernels: KernelStyle = "eager", kv_dtype: DType | None = None,
                quant: Quantization | None = None) -> Workload:
        """Prefill: the prompt's forward pass writing the KV cache, logits for each sequence's last token only.

        ``kv_dtype``: the cache's precision (e.g. "fp8"); ``quant``: "w4a16", "w8a16", "w8a8" or "fp8" layers.
        """
        from .program import build

        return build(self, "prefill", batch, seq, 0, dtype, impl, kernels, kv_dtype=kv_dtype, quant=quant)

    @checked_call
    def decode(self, batch: Dim = 1, context: Dim = 2048, dtype: DType = "bf16", impl: AttentionImpl = "sdpa",
               kernels: KernelStyle = "eager", kv_dtype: DType | None = None,
               quant: Quantization | None = None) -> Workload:
        """One decode step: one new token per sequence against a KV cache of ``context`` tokens (read, and appended to)."""
        from .program import build

        return build(self, "decode", batch, 1, context, dtype, impl, kernels, kv_dtype=kv_dtype, quant=quant)

    @checked_call
    def memory(self, batch: Dim = 1, seq: Dim = 2048, training: bool = False, optimizer: str = "adamw",
               checkpointing: bool = False, gpu: GPULike | None = None, **options: Any) -> MemoryFootprint:
        """Bytes held on the GPU (weights, gradients, optimizer states, activations, KV cache), and whether it fits ``gpu``."""
        from .footprint import memory

        return memory(self, batch, seq, training, optimizer, checkpointing, gpu, **options)

    @checked_call
    def with_(self, **changes: Any) -> "Transformer":
        """A copy with some fields changed (validated again); kv_heads, head_dim and ffn keep their spelled-out values."""
        unknown = [k for k in changes if k not in type(self).model_fields]
        if unknown:
            raise _no_field(unknown[0])
        return Transformer(**{**self.model_dump(), **changes})

    def __repr__(self) -> str:
        return (f"Transformer({self.name!r}: {self.layers} layers, d_model {self.d_model}, {self.heads} heads"
                f"{f' ({self.n_kv_heads} KV)' if self.n_kv_heads != self.heads else ''}, head_dim {self.n_head_dim}, "
                f"ffn {self.ffn_width} {self.mlp}, {self.norm} {self.norm_position}-norm, vocab {self.vocab}, "
                f"{self.params:,} params)")

    __str__ = __repr__

    def _resolved(self) -> dict[str, Any]:
        """Every field, kv_heads, head_dim and ffn as the closed forms take them (their defaults spelled out)."""
        return {**self.model_dump(), "kv_heads": self.n_kv_heads, "head_dim": self.n_head_dim, "ffn": self.ffn_width}

    def _repr_html_(self) -> str:
        """Two tables (Jupyter): the architecture, its fields as the closed forms take them; the parameters by part."""
        from .._display import html_table

        moe_only = () if self.moe else ("top_k", "capacity_factor", "expert_parallel")  # no experts: nothing to route
        arch = [(k, "-" if v is None else str(v)) for k, v in self._resolved().items() if k not in ("name", *moe_only)]
        parts = [("embeddings", self.embedding_params), (f"layers ({self.layers} x {self.layer_params:,})",
                                                         self.layers * self.layer_params),
                 ("final norm", self.norm_params if self.final_norm else 0), ("head", self.head_params),
                 ("total", self.params)]
        params = html_table(("part", "params"), [(name, f"{n:,}") for name, n in parts],
                            f"parameters ({_count_words(self.params)})")
        return html_table(("field", "value"), arch, f"{self.name}: {self.family} family") + params

    def to_frame(self) -> Any:
        """A one-row pandas DataFrame of the model (``pd.concat`` of several compares them): every field (kv_heads,
        head_dim and ffn resolved), then ``params``; integer fields as int64 (an unset optional one: <NA>)."""
        from .._optional import require_pandas

        pd = require_pandas()
        row = {**self._resolved(), "params": self.params}
        frame = pd.DataFrame([row])
        fields = type(self).model_fields
        for k, v in row.items():
            if type(v) is int:
                frame[k] = frame[k].astype("int64")
            elif v is None and k in fields and _holds(fields[k].annotation, int):
                frame[k] = frame[k].astype("Int64")
            elif v is None and k in fields and _holds(fields[k].annotation, float):
                frame[k] = frame[k].astype("float64")
        return frame


def _holds(annotation: Any, kind: type) -> bool:
    """Whether a field's type is ``kind`` (int, float), ``Optional[Annotated[kind, ...]]`` included."""
    return annotation is kind or any(_holds(a, kind) for a in get_args(annotation))


def _count_words(n: int) -> str:
    """8.03 B, 124.4 M: a parameter count in words."""
    for scale, word in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.4g} {word}"
    return str(n)


def _whole(value: Any) -> Optional[int]:
    """An integer field's value as an int (a whole float's too), or None where it is not one (its validator then says
    why)."""
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
        return None
    if not isinstance(value, numbers.Integral) and not (math.isfinite(float(value)) and float(value).is_integer()):
        return None
    n = int(float(value)) if not isinstance(value, numbers.Integral) else int(value)
    return n if 0 < n <= MAX_FIELD else None


def _no_field(name: str) -> ArgumentTypeError:
    """The error for a field a Transformer does not have, with the nearest fields."""
    fields = tuple(Transformer.model_fields)
    return ArgumentTypeError(f"Transformer has no field {name!r}{did_you_mean(name, fields)} (its fields: "
                             f"{', '.join(fields)})")


def _error(exc: ValidationError) -> Exception:
    """The first problem of a Transformer's validation as a solkit error naming the field, expected and got."""
    errors = exc.errors()
    err = next((e for e in errors if e.get("type") == "extra_forbidden"), errors[0])  # a misspelt field leaves one missing
    loc = [p for p in err.get("loc", ()) if isinstance(p, str) and p in Transformer.model_fields] or \
        [str(p) for p in err.get("loc", ())[:1]]
    field = loc[0] if loc else "Transformer"
    got = err.get("input")
    kind_name = err.get("type", "")
    message = err.get("msg", "invalid").removeprefix("Value error, ")
    if kind_name == "extra_forbidden":
        return _no_field(field)
    if kind_name == "missing":
        return ArgumentTypeError(f"Transformer needs {field}, got none")
    options = get_args(Transformer.model_fields[field].annotation) if field in Transformer.model_fields else ()
    if kind_name == "string_type" and options and all(isinstance(o, str) for o in options):
        return ArgumentTypeError(f"Transformer: {field} must be one of {', '.join(map(repr, options))} (a string), got "
                                 f"{shown(got)}")
    if kind_name == "literal_error":
        return OptionError(f"Transformer: {field} must be one of {', '.join(map(repr, options))}, got {shown(got)}"
                           f"{did_you_mean(got, options)}")
    if kind_name == "model_type":
        return ArgumentTypeError(f"Transformer takes its fields as keywords, got {shown(got)}")
    kind = ArgumentTypeError if kind_name.endswith(("_type", "_parsing")) else \
        ShapeError if kind_name == "int_too_large" else OptionError
    if field == "Transformer" or not loc:
        return kind(f"Transformer: {message}")
    where = "" if message.startswith(field) else f"{field} "
    return kind(f"Transformer: {where}{message}, got {_value_text(got)}")


def _value_text(value: Any) -> str:
    """A field's value for a message: its repr, short; an integer of many digits by its size (repr would refuse one
    of over 4300 digits)."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    return shown(value)
