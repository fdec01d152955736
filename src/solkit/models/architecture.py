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

from typing import TYPE_CHECKING, Any, Literal, Optional, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .._num import result
from .._validate import checked_call, choice, dim, flag
from ..errors import ArgumentTypeError, OptionError
from ..precision import normalize, storage_bytes

if TYPE_CHECKING:
    from ..workload import Workload

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


class Transformer(BaseModel):
    """A transformer's architecture: layers, widths, heads, MLP, norm, embeddings, biases, head; the numbers it implies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "transformer"
    family: Family = "llama"
    layers: int = Field(ge=1)
    d_model: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: Optional[int] = Field(default=None, ge=1)
    head_dim: Optional[int] = Field(default=None, ge=1)
    ffn: Optional[int] = Field(default=None, ge=1)
    vocab: int = Field(ge=1)
    mlp: Mlp = "swiglu"
    norm: Norm = "rmsnorm"
    norm_position: Literal["pre", "post"] = "pre"
    positions: Positions = "rotary"
    max_positions: Optional[int] = Field(default=None, ge=1)
    token_types: int = Field(default=0, ge=0)
    embedding_norm: bool = False
    tie_embeddings: bool = False
    bias: Bias = "none"
    causal: bool = True
    dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    attention_dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    head: Head = "lm"
    pooler: bool = False
    sliding_window: Optional[int] = Field(default=None, ge=1)
    experts: int = Field(default=0, ge=0)
    top_k: int = Field(default=2, ge=1)
    capacity_factor: Optional[float] = Field(default=None, gt=0.0)
    expert_parallel: int = Field(default=1, ge=1)  # the experts here are one of this many shards (parallel.shard)
    source: Optional[str] = None

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _error(exc) from None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """kv_heads, head_dim and ffn spelled out (heads, d_model / heads, 4 d_model) so equal models compare equal."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        d, h = out.get("d_model"), out.get("heads")
        if out.get("kv_heads") is None and type(h) is int:
            out["kv_heads"] = h
        if out.get("head_dim") is None and type(d) is int and type(h) is int and h > 0 and d % h == 0:
            out["head_dim"] = d // h
        if out.get("ffn") is None and type(d) is int:
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
    def kv_cache_bytes(self, batch: Any, context: Any, dtype: Any = "bf16") -> Any:
        """Bytes of the KV cache: 2 x layers x batch x context x kv_heads x head_dim x e (e of ``dtype``)."""
        b, c = dim("batch", batch), dim("context", context)
        e = storage_bytes(normalize(dtype, "dtype"))
        return result(2.0 * self.layers * b * c * self.kv_width * e)

    @checked_call
    def flops_per_token(self, training: bool = False, seq: Any = 2048, attention: str = "causal") -> Any:
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
    def forward(self, batch: Any = 1, seq: Any = 2048, dtype: Any = "bf16", impl: Any = "sdpa", kernels: Any = "eager",
                amp: Any = False, training: Any = False, quant: Any = None) -> "Workload":
        """The forward pass over batch x seq tokens, logits for every token (``kernels``: "eager" or "fused")."""
        from .program import build

        return build(self, "forward", batch, seq, 0, dtype, impl, kernels, amp, training, quant=quant)

    @checked_call
    def prefill(self, batch: Any = 1, seq: Any = 2048, dtype: Any = "bf16", impl: Any = "sdpa", kernels: Any = "eager",
                kv_dtype: Any = None, quant: Any = None) -> "Workload":
        """Prefill: the prompt's forward pass writing the KV cache, logits for each sequence's last token only.

        ``kv_dtype``: the cache's precision (e.g. "fp8"); ``quant``: "w4a16", "w8a16", "w8a8" or "fp8" layers.
        """
        from .program import build

        return build(self, "prefill", batch, seq, 0, dtype, impl, kernels, kv_dtype=kv_dtype, quant=quant)

    @checked_call
    def decode(self, batch: Any = 1, context: Any = 2048, dtype: Any = "bf16", impl: Any = "sdpa", kernels: Any = "eager",
               kv_dtype: Any = None, quant: Any = None) -> "Workload":
        """One decode step: one new token per sequence against a KV cache of ``context`` tokens (read, and appended to)."""
        from .program import build

        return build(self, "decode", batch, 1, context, dtype, impl, kernels, kv_dtype=kv_dtype, quant=quant)

    @checked_call
    def memory(self, batch: Any = 1, seq: Any = 2048, training: Any = False, optimizer: Any = "adamw",
               checkpointing: Any = False, gpu: Any = None, **options: Any) -> Any:
        """Bytes held on the GPU (weights, gradients, optimizer states, activations, KV cache), and whether it fits ``gpu``."""
        from .memory import memory

        return memory(self, batch, seq, training, optimizer, checkpointing, gpu, **options)

    @checked_call
    def with_(self, **changes: Any) -> "Transformer":
        """A copy with some fields changed (validated again); kv_heads, head_dim and ffn keep their spelled-out values."""
        unknown = [k for k in changes if k not in type(self).model_fields]
        if unknown:
            raise ArgumentTypeError(f"Transformer has no field {unknown[0]!r}; fields: {', '.join(type(self).model_fields)}")
        return Transformer(**{**self.model_dump(), **changes})

    def __repr__(self) -> str:
        return (f"Transformer({self.name!r}: {self.layers} layers, d_model {self.d_model}, {self.heads} heads"
                f"{f' ({self.n_kv_heads} KV)' if self.n_kv_heads != self.heads else ''}, head_dim {self.n_head_dim}, "
                f"ffn {self.ffn_width} {self.mlp}, {self.norm} {self.norm_position}-norm, vocab {self.vocab}, "
                f"{self.params:,} params)")

    __str__ = __repr__


def _error(exc: ValidationError) -> Exception:
    """The first problem of a Transformer's validation as a solkit error naming the field, expected and got."""
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err.get("loc", ())) or "Transformer"
    got = err.get("input")
    message = err.get("msg", "invalid").removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        return ArgumentTypeError(f"Transformer has no field {field!r}; fields: {', '.join(Transformer.model_fields)}")
    if err.get("type") == "missing":
        return ArgumentTypeError(f"Transformer needs {field}, got none")
    kind = ArgumentTypeError if err.get("type", "").endswith(("_type", "_parsing")) else OptionError
    where = f"{field} " if field != "Transformer" and not message.startswith(field) else ""
    return kind(f"Transformer: {where}{message}, got {got!r}" if field != "Transformer" else f"Transformer: {message}")
