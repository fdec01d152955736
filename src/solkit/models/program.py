"""The kernels a ``Transformer`` runs: ``forward``, ``prefill`` and ``decode`` as Workloads.

Two styles (``kernels=``):

- ``"fused"``: one kernel per operator as ``solkit.ops`` defines them (fused QKV and gate/up GEMMs,
  one-kernel norms, rotary folded into attention, the KV cache written in place): what a fused
  inference engine runs, and the tight speed of light of the architecture.
- ``"eager"``: what Hugging Face transformers 5 runs in eager PyTorch with SDPA, module by module,
  read off H200 profiles (``data/profiles``): separate q, k, v (GPT-2: one ``c_attn``) and gate, up
  GEMMs; RMSNorm as eight kernels (to fp32, pow, mean, + eps, rsqrt, scale, back, times the weight);
  rotary embedding as mul, neg, cat, mul, add on q and on k, after a cos/sin table built per forward;
  a ``DynamicCache`` that concatenates (prefill: copies the new keys and values; decode: copies the
  whole cache to append one token); dropout kernels in training.
  With ``amp=True`` (eager autocast over fp32 master weights) every linear layer casts its weight
  (and bias) from fp32 and its input when that is not already ``dtype``; the embedding, the
  residual stream and the norms stay fp32 (embedding and LayerNorm are not autocast to 16 bits; a
  16-bit branch added to the fp32 stream gives fp32), and a causal LM's loss upcasts the logits.
  Built for training, each construct also carries what eager autograd launches beyond its kernels'
  own gradients (``Autograd``, read off H200 profiles): a tensor's gradients from two consumers added
  (the residual stream, shared q/k/v and gate/up inputs), RMSNorm's and gelu_new's second products and
  sums, rotary's slice zero-fills and casts, GPT-2's split gradient concatenated, cuDNN SDPA's backward
  as 3 launches (5 with grouped KV heads; its forward as 2 with attention dropout), LayerNorm's as 2.

Every workload records its ``recipe`` (``ModelCall``), so ``training_step`` can rebuild the forward
as training runs it (dropout, the loss) and knows the parameters to cast and update; the step lives
here, beside the builder (``ModelCall.training_step``).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence, cast

import numpy as np

from .._typing import AttentionImpl
from .._validate import broadcast, choice, dim, flag
from ..errors import OptionError, ShapeError
from ..ops import (add, attention, concat, copy, dropout, elementwise, embedding, fill, gather, gelu, layernorm, matmul,
                   foreach, nll_loss, pointwise, reduce, rmsnorm, silu, softmax)
from ..precision import normalize, storage_bytes
from ..stacks.torch211 import (GELU_NEW_KERNELS, LAYERNORM_BACKWARD_LAUNCHES, ROPE_TABLE_KERNELS, SDPA_BACKWARD_LAUNCHES,
                               SDPA_GQA_BACKWARD_LAUNCHES)
from ..workload import Autograd, Workload, chain, with_kernels
from ._common import count_text, naming_overflow
from .architecture import Transformer
from .parallel import parallel_step, shard
from .split import Split
from .training import backward, optimizer_step, recomputed, resolve_amp
from .transformer import SWIGLU_FLOPS

__all__ = ["ModelCall", "KERNEL_STYLES", "QUANTIZATIONS", "build", "activations", "Activations"]

KERNEL_STYLES = ("eager", "fused")
#: quantization of the layers' linear layers: name -> (weight precision, GEMM input precision). Weight-only
#: (w4a16, w8a16): weights stored in 4 or 8 bits, dequantized inside a 16-bit GEMM; w8a8 (int8) and fp8: weights
#: and activations in 8 bits (each linear's input quantized by its own kernel), 16-bit output. The embedding, the
#: norms and the head stay in dtype.
QUANTIZATIONS: dict[str, tuple[str, Optional[str]]] = {"w4a16": ("int4", None), "w8a16": ("int8", None),
                                                       "w8a8": ("int8", "int8"), "fp8": ("fp8_e4m3", "fp8_e4m3")}
PHASES = ("forward", "prefill", "decode")
_FP32 = "fp32"


class ModelCall(NamedTuple):
    """How a workload was built from a Transformer: its ``recipe`` (``workload.Program``)."""

    model: Transformer
    phase: str  # forward, prefill or decode
    batch: Any
    seq: Any  # tokens each sequence processes (decode: 1)
    context: Any  # tokens already cached (forward, prefill: 0)
    dtype: str
    impl: str
    kernels: str
    amp: bool
    training: bool
    kv_dtype: str
    quant: Optional[str] = None  # the layers' linear weights (and activations) quantized: QUANTIZATIONS
    world: int = 1  # GPUs a split training step runs on (dp x tp x pp): the workload is one GPU's share

    @property
    def tokens(self) -> Any:
        """Tokens processed: batch x seq."""
        return self.batch * self.seq

    @property
    def layers(self) -> int:
        """The model's layers (what the host's per-layer time counts)."""
        return self.model.layers

    @property
    def preamble(self) -> bool:
        """A Hugging Face model's forward runs Python before its first launch (masks, positions, the cache)."""
        return True

    @property
    def params(self) -> int:
        """The model's parameters."""
        return self.model.params

    @property
    def host_calls(self) -> None:
        """None: a closed form counts its host work per layer, not per call."""
        return None

    def training_step(self, optimizer: str, amp: Any, microbatches: int, checkpointing: bool, split: Split) -> Workload:
        """The step eager PyTorch (or a fused engine) runs for this forward, as ``models.training_step`` documents."""
        if self.phase != "forward":
            raise OptionError(f"training_step needs a forward pass, got the model's {self.phase}: use m.forward(batch=, seq=)")
        if split.parallel:
            return _parallel_step(self, optimizer, amp, microbatches, checkpointing, split)
        return _step(self, optimizer, amp, microbatches, checkpointing)


class _Program:
    """Accumulates a program's kernels, in order, with the dtypes eager PyTorch gives each tensor."""

    def __init__(self, call: ModelCall) -> None:
        self.call = call
        self.m = call.model
        self.parts: list[Workload] = []
        self.eager = call.kernels == "eager"
        self.cd = call.dtype  # compute precision of the GEMMs and attention
        self.amp = call.amp and self.eager
        self.wd = _FP32 if call.amp else call.dtype  # stored weights
        self.stream = _FP32 if self.amp else self.cd  # the residual stream and the norms' precision
        self.drop = call.training and self.m.dropout > 0
        self.saved = 0.0  # bytes autograd keeps for the backward (training), summed as the kernels are added
        self.repeated: Optional[Workload] = None  # the layers x their count (``_build``: what checkpointing recomputes)
        self.layer_saved: Any = 0.0  # the same, of one layer (``layer``)

    def add(self, *parts: Workload) -> None:
        self.parts.extend(parts)

    @property
    def autograd(self) -> bool:
        """Built for eager training: its constructs carry what autograd launches beyond each kernel's gradient."""
        return self.eager and self.call.training

    def construct(self, start: int, name: str, extra: Sequence[Workload] = (), launches: Optional[int] = None,
                  gradient: bool = True) -> None:
        """The parts added since ``start`` as one workload whose backward (eager training) also launches ``extra``
        (zero model FLOPs: a backward's model FLOPs stay twice its forward's), runs its gradient kernel as
        ``launches`` launches, or (``gradient=False``) has no gradient kernels (``Autograd``)."""
        if not self.autograd or not (extra or launches or not gradient):
            return
        # a part without a gradient (built under torch.no_grad) is no model work: zero model FLOPs, so the step's stay
        # 3x its forward's
        inner = tuple((w if gradient else with_kernels(w, model_flops=0.0), 1) for w in self.parts[start:])
        del self.parts[start:]
        more = Workload.of(f"{name} autograd", tuple((k._replace(model_flops=0.0), n) for w in extra for k, n in w.counted))
        self.parts.append(Workload.of(name, inner, autograd=Autograd(more if extra else None, launches, gradient)))

    def accumulate(self, elements: Any, dtype: str, what: str) -> Workload:
        """autograd adding a tensor's gradients from two consumers (``add_``): reads both, writes one."""
        return add(elements, dtype).renamed(f"{what} gradient accumulate", kernels=True)

    def save(self, elements: Any, dtype: str) -> None:
        """A tensor autograd keeps for the backward pass (``memory``'s activations)."""
        self.saved = self.saved + elements * storage_bytes(dtype)

    # ---- building blocks ------------------------------------------------------------------------

    def cast(self, elements: Any, src: str, dst: str) -> None:
        """An eager cast (``.to()`` or autocast): a copy kernel, where the precisions differ."""
        if src != dst:
            self.add(copy(elements, dtype=src, out_dtype=dst).renamed(f"cast {src}->{dst}", kernels=True))

    def linear(self, rows: Any, n: Any, k: Any, x_dtype: str, bias: bool, name: str, layer: bool = True) -> str:
        """y [rows, n] = x [rows, k] @ w [k, n] (+ b); under autocast the weight, bias and input are cast first.

        A quantized layer linear (``quant``) reads its weight in 4 or 8 bits; w8a8 and fp8 quantize the
        input first (one kernel: dtype in, 8 bits out) and run an 8-bit GEMM with a 16-bit output.
        """
        if layer and self.call.quant:
            weight, act = QUANTIZATIONS[self.call.quant]
            if act is None:
                self.add(matmul(rows, n, k, dtype=self.cd, bias=bias, weight_dtype=weight).renamed(name, kernels=True))
            else:
                self.add(copy(rows * k, dtype=x_dtype, out_dtype=act).renamed("quantize activations", kernels=True),
                         matmul(rows, n, k, dtype=act, out_dtype=self.cd, bias=bias).renamed(name, kernels=True))
            return self.cd
        if self.amp:
            self.cast(k * n, self.wd, self.cd)  # w fp32 [k, n] -> cd
            if bias:
                self.cast(n, self.wd, self.cd)
        if self.eager:
            self.cast(rows * k, x_dtype, self.cd)
        self.add(matmul(rows, n, k, dtype=self.cd, bias=bias).renamed(name, kernels=True))  # x [rows,k] @ w [k,n] -> [rows,n]
        self.save(rows * k, self.cd)  # the input, for the weight gradient
        return self.cd

    def norm(self, rows: Any, x_dtype: str) -> str:
        """The model's norm over d_model; returns the output precision."""
        d = self.m.d_model
        self.save(rows, _FP32)  # the inverse std (LayerNorm: and the mean, below)
        if not self.eager:
            op = rmsnorm if self.m.norm == "rmsnorm" else layernorm
            self.add(op(rows, d, self.cd))
            self.save(rows * d, self.cd)
            return self.cd
        if self.m.norm == "layernorm":  # native_layer_norm, autocast to fp32 under AMP
            self.cast(rows * d, x_dtype, self.stream)
            start = len(self.parts)
            self.add(layernorm(rows, d, self.stream))
            self.construct(start, "layernorm", launches=LAYERNORM_BACKWARD_LAUNCHES)
            self.save(rows * d, self.stream)
            self.save(rows, _FP32)
            return self.stream
        # HF LlamaRMSNorm: x.to(fp32); pow(2); mean(-1); + eps; rsqrt; x * r; .to(x dtype); weight * (...)
        n = rows * d
        start = len(self.parts)
        self.cast(n, x_dtype, _FP32)
        self.add(pointwise(n, n, _FP32, flops_per_element=1, name="rmsnorm pow"),
                 reduce(n, rows, _FP32).renamed("rmsnorm mean", kernels=True),
                 pointwise(rows, rows, _FP32, name="rmsnorm + eps"),
                 pointwise(rows, rows, _FP32, name="rmsnorm rsqrt"),
                 pointwise(n, n + rows, _FP32, name="rmsnorm scale"))
        self.cast(n, _FP32, x_dtype)
        out = _promote(self.wd, x_dtype)
        self.add(pointwise(n, n, x_dtype, out_dtype=out, other_elements=d, other_dtype=self.wd, name="rmsnorm weight"))
        # autograd (H200 profiles): the two products' second gradients and their sums over rows (the weight's) and
        # over d (r's), rsqrt's and pow's second kernels (pow(r, 3); the exponent's product), x's two gradients added
        self.construct(start, "rmsnorm", (
            pointwise(n, n, out, other_elements=n, other_dtype=x_dtype, name="rmsnorm weight-grad mul"),
            reduce(n, d, out).renamed("rmsnorm weight-grad sum", kernels=True),
            pointwise(n, n, _FP32, other_elements=n, other_dtype=_FP32, name="rmsnorm r-grad mul"),
            reduce(n, rows, _FP32).renamed("rmsnorm r-grad sum", kernels=True),
            pointwise(rows, rows, _FP32, name="rmsnorm rsqrt-grad pow"),
            pointwise(n, n, _FP32, name="rmsnorm pow-grad mul"),
            self.accumulate(n, _FP32, "rmsnorm x")))
        self.save(n, _FP32)  # x in fp32 (pow's and the scale's input)
        self.save(n, x_dtype)  # the normalized x (the weight's product)
        return out

    def residual(self, rows: Any, x_dtype: str, branch_dtype: str) -> str:
        """x + branch: the promoted precision (fp32 stream + 16-bit branch = fp32)."""
        out = _promote(x_dtype, branch_dtype)
        n = rows * self.m.d_model
        start = len(self.parts)
        if x_dtype == branch_dtype:
            self.add(add(n, x_dtype).renamed("residual add", kernels=True))
        else:
            self.add(pointwise(n, n, branch_dtype, out_dtype=out, other_elements=n, other_dtype=x_dtype, name="residual add"))
        # x also fed the block (its norm, or its first projections): autograd adds the two gradients of x
        self.construct(start, "residual", (self.accumulate(n, x_dtype, "residual stream"),))
        return out

    def dropout_of(self, elements: Any, dtype: str) -> None:
        if self.drop:
            self.add(dropout(elements, dtype))
            self.save(elements, "int8")  # the bool mask

    # ---- the model ------------------------------------------------------------------------------

    def embeddings(self, rows: Any, seq: Any) -> str:
        """Token (and position, token-type) gathers; BERT's LayerNorm; dropout. Returns the stream's precision."""
        m, d = self.m, self.m.d_model
        table = self.wd if self.eager else self.cd  # eager gathers from the stored table (fp32 under AMP)
        self.add(embedding(rows, m.vocab, d, table))
        out = table
        if m.token_types:
            self.add(embedding(rows, m.token_types, d, table).renamed("token type embedding", kernels=True), add(rows * d, table))
        if m.positions == "learned":
            # positions [seq] gathered once per sequence position, broadcast over the batch
            self.add(embedding(seq, cast(int, m.max_positions), d, table).renamed("position embedding", kernels=True),
                     pointwise(rows * d, rows * d + seq * d, table, name="position add"))
        elif self.eager:  # the cos/sin table, once per forward (under torch.no_grad: no gradient)
            start = len(self.parts)
            for _ in range(ROPE_TABLE_KERNELS):
                self.add(pointwise(seq * m.n_head_dim, seq * m.n_head_dim, _FP32, name="rotary table"))
            self.construct(start, "rotary table", gradient=False)
        if m.embedding_norm:
            out = self.norm(rows, out)
        self.dropout_of(rows * d, out)
        return out

    def rotary(self, rows: Any, seq: Any, width: Any, x_dtype: str) -> str:
        """q * cos + rotate_half(q) * sin: mul, neg (half), cat, mul, add (eager); returns the output precision."""
        n, table = rows * width, seq * self.m.n_head_dim  # q [B,H,S,D] * cos [1,1,S,D]
        cos = self.stream  # the table takes the hidden states' precision
        out = _promote(x_dtype, cos)
        start = len(self.parts)
        self.add(pointwise(n, n, x_dtype, out_dtype=out, other_elements=table, other_dtype=cos, name="rotary mul"),
                 pointwise(n / 2, n / 2, x_dtype, name="rotary neg"),
                 concat(n, x_dtype).renamed("rotary cat", kernels=True),
                 pointwise(n, n, x_dtype, out_dtype=out, other_elements=table, other_dtype=cos, name="rotary mul"),
                 pointwise(n, 0, out, other_elements=2 * n, other_dtype=out, name="rotary add"))
        # autograd (H200 profiles): each product's gradient cast back to x's precision; rotate_half's two slices'
        # gradients, each a zeroed tensor and a copy into its half; the result copied out of the heads' layout
        casts = [copy(n, dtype=out, out_dtype=x_dtype).renamed("rotary grad cast", kernels=True)] * 2 if out != x_dtype else []
        halves = [fill(n, x_dtype).renamed("rotary slice-grad zeros", kernels=True),
                  copy(n / 2, dtype=x_dtype).renamed("rotary slice-grad copy", kernels=True)] * 2
        self.construct(start, "rotary", (*casts, *halves, copy(n, dtype=x_dtype).renamed("rotary grad layout copy",
                                                                                          kernels=True)))
        return out

    def attention_block(self, b: Any, s: Any, x_dtype: str) -> str:
        """Norm (pre-norm), QKV, rotary, cache, attention, o_proj, dropout, residual add (post-norm: then the norm)."""
        m, call = self.m, self.call
        t, d, q, kv = b * s, m.d_model, m.q_width, m.kv_width
        biased = m.bias != "none"
        h = self.norm(t, x_dtype) if m.norm_position == "pre" else x_dtype
        start = len(self.parts)
        if not self.eager or m.family == "gpt2":  # one GEMM: fused QKV, GPT-2's c_attn
            dq = dk = self.linear(t, q + 2 * kv, d, h, biased, "qkv")
            # autograd: split's gradient concatenates dq, dk and dv
            self.construct(start, "qkv", (concat(t * (q + 2 * kv), dq).renamed("qkv split-grad cat", kernels=True),))
        else:
            dq = self.linear(t, q, d, h, biased, "q_proj")
            dk = self.linear(t, kv, d, h, biased, "k_proj")
            self.linear(t, kv, d, h, biased, "v_proj")
            # autograd: the input's three gradients added
            self.construct(start, "q, k, v", (self.accumulate(t * d, h, "q, k, v input"),) * 2)
        if m.positions == "rotary" and self.eager:
            dq, dk = self.rotary(t, s, q, dq), self.rotary(t, s, kv, dk)
        context = call.context
        if call.phase != "forward":  # the KV cache
            e_new = t * kv
            if not self.eager:  # written in place: the new keys and values
                self.add(copy(2 * e_new, self.cd, call.kv_dtype).renamed("kv cache write", kernels=True))
            else:  # DynamicCache.update: torch.cat(cache, new) for K and for V
                kept = b * context * kv + e_new
                self.cast(e_new, dk, self.cd)
                self.add(concat(kept, call.kv_dtype).renamed("kv cache cat (k)", kernels=True),
                         concat(kept, call.kv_dtype).renamed("kv cache cat (v)", kernels=True))
                dk = self.cd
        if self.amp:  # SDPA is autocast: q and k (fp32 after rotary) cast to cd
            self.cast(t * q, dq, self.cd)
            self.cast(t * kv, dk, self.cd)
        kv_read = call.kv_dtype if call.phase != "forward" else None  # attention reads the cache as stored
        start = len(self.parts)
        att = attention(b, m.heads, s, s + context, head_dim=m.n_head_dim, kv_heads=m.n_kv_heads, causal=m.causal,
                        impl=cast(AttentionImpl, call.impl), dtype=self.cd, kv_dtype=kv_read)
        if self.autograd and m.attention_dropout > 0 and call.impl == "sdpa":  # cuDNN unpacks its dropout seed first
            att = with_kernels(att, launches=2.0)
        self.add(att)
        if call.impl == "sdpa":
            self.construct(start, "attention", launches=SDPA_GQA_BACKWARD_LAUNCHES if m.n_kv_heads < m.heads
                           else SDPA_BACKWARD_LAUNCHES)
        self.save(t * (q + 2 * kv), self.cd)  # q, k and v (the output is o_proj's input, saved there)
        self.save(b * m.heads * s, _FP32)  # the log-sum-exp per query row
        o = self.linear(t, d, q, self.cd, m.bias == "all", "o_proj")
        self.dropout_of(t * d, o)
        x = self.residual(t, x_dtype, o)
        return self.norm(t, x) if m.norm_position == "post" else x

    def moe(self, t: Any, h: str) -> str:
        """A mixture of experts over t tokens: the router, top_k experts per token, routing taken as balanced.

        The t k routed rows go to min(experts, t k) active experts, ceil(t k / active) rows each (a decode
        step of one token touches top_k experts, one row each; padded rows compute, only the routed ones are
        model FLOPs). fused (MegaBlocks-style, dropless): the router GEMM, its softmax and top-k, the routed
        rows gathered, the active experts' gate/up and down as grouped GEMMs (batch = active experts), act * up,
        and the weighted combine back to t rows; ``capacity_factor`` pads each expert's rows to
        ceil(factor x t k / experts). eager (Hugging Face's Mixtral block): the router, softmax (fp32), top-k, the
        weights normalized and cast, the expert mask, then per hit expert the rows it got gathered, its MLP,
        the routing weight applied and the result index-added back (``capacity_factor`` does not apply: HF
        drops no tokens). Under expert parallelism (``expert_parallel`` shards) the router still scores every
        expert, and each GPU's local experts get the rows all ranks route to them: t k in all.
        """
        m = self.m
        d, f, e, k = m.d_model, m.ffn_width, m.experts, m.top_k
        routed = t * k
        active = np.minimum(e, routed) if isinstance(routed, np.ndarray) else min(float(e), routed)
        rows = np.ceil(routed / active)  # per active expert, balanced
        scores = e * m.expert_parallel  # the router scores every expert, local or not
        self.linear(t, scores, d, h, False, "router")  # x [T,d] @ w [d,E] -> logits [T,E]
        self.add(softmax(t, scores, _FP32 if self.eager else self.cd).renamed("router softmax", kernels=True),
                 reduce(t * scores, routed, _FP32 if self.eager else self.cd).renamed("router top-k", kernels=True))
        self.save(t * scores, _FP32)
        act = silu if m.mlp == "swiglu" else gelu
        if not self.eager:
            cap = np.maximum(np.ceil(m.capacity_factor * routed / e), rows) if m.capacity_factor else rows
            self.add(gather(routed * d, routed, self.cd).renamed("moe permute", kernels=True))
            for name, n, width in (("experts gate_up", (2 if m.gated else 1) * f, d), ("experts down", d, f)):
                if name == "experts down":
                    if m.gated:
                        self.add(elementwise(active * cap * f, inputs=2, outputs=1, flops_per_element=SWIGLU_FLOPS,
                                             dtype=self.cd, name="experts act*up"))
                    else:
                        self.add(act(active * cap * f, self.cd).renamed("experts act", kernels=True))
                # active x ([cap, width] @ [width, n]) -> [active, cap, n]; model FLOPs: the routed rows only
                w = matmul(cap, n, width, dtype=self.cd, batch=active)
                kernel = w.counted[0][0]
                useful = kernel._replace(model_flops=kernel.model_flops * routed / (active * cap))
                self.add(Workload.of(name, ((useful.renamed(name), 1),), w.call))
                self.save(active * cap * width, self.cd)
            self.add(pointwise(t * d, routed * d + routed, self.cd, flops_per_element=2 * k, name="moe combine"))
            return self.cd
        self.add(pointwise(routed, routed, _FP32, name="router weights normalize"),
                 copy(routed, dtype=_FP32, out_dtype=self.cd).renamed(f"cast fp32->{self.cd}", kernels=True),
                 pointwise(routed * scores, routed, "int8", name="expert mask"))
        hit = int(np.max(active))  # NB: a sweep loops over its largest count of hit experts
        expert = _Program(self.call)
        expert.add(gather(rows * d, rows, h).renamed("expert rows", kernels=True))
        gate = expert.linear(rows, f, d, h, False, "expert gate_proj")
        if m.gated:
            expert.linear(rows, f, d, h, False, "expert up_proj")
            expert.add(act(rows * f, gate), pointwise(rows * f, 2 * rows * f, gate, name="act * up"))
            expert.save(3 * rows * f, gate)
        else:
            expert.add(act(rows * f, gate))
            expert.save(rows * f, gate)
        o = expert.linear(rows, d, f, gate, False, "expert down_proj")
        expert.add(pointwise(rows * d, rows * d + rows, o, flops_per_element=1, name="expert routing weight"),
                   pointwise(rows * d, 2 * rows * d, o, name="expert index_add"))
        self.add(chain("expert", *expert.parts).repeat(hit, "experts"))
        self.saved = self.saved + expert.saved * hit
        return o

    def mlp_block(self, t: Any, x_dtype: str) -> str:
        """Norm (pre-norm), up (gate and up), activation, down, dropout, residual add (post-norm: then the norm)."""
        m = self.m
        d, f = m.d_model, m.ffn_width
        biased = m.bias == "all"
        h = self.norm(t, x_dtype) if m.norm_position == "pre" else x_dtype
        if m.moe:
            o = self.moe(t, h)
            self.dropout_of(t * d, o)
            x = self.residual(t, x_dtype, o)
            return self.norm(t, x) if m.norm_position == "post" else x
        if m.gated:
            if self.eager:  # HF: gate_proj, up_proj, act(gate), * up
                start = len(self.parts)
                self.linear(t, f, d, h, biased, "gate_proj")
                self.linear(t, f, d, h, biased, "up_proj")
                self.construct(start, "gate, up", (self.accumulate(t * d, h, "gate, up input"),))
                act = silu if m.mlp == "swiglu" else gelu
                self.add(act(t * f, self.cd))
                start = len(self.parts)
                self.add(pointwise(t * f, 2 * t * f, self.cd, name="act * up"))
                # autograd: the product's second gradient
                self.construct(start, "act * up", (pointwise(t * f, 2 * t * f, self.cd, name="act * up second grad"),))
                self.save(3 * t * f, self.cd)  # gate, act(gate) and up
            else:
                self.linear(t, 2 * f, d, h, biased, "gate_up")  # x [T,d] @ w [d,2*ffn] -> [T,2*ffn]
                self.add(elementwise(t * f, inputs=2, outputs=1, flops_per_element=SWIGLU_FLOPS, dtype=self.cd,
                                     name="act*up"))
                self.save(2 * t * f, self.cd)  # gate and up
        else:
            self.linear(t, f, d, h, biased, "up")  # x [T,d] @ w [d,ffn] -> [T,ffn]
            if self.eager and m.family == "gpt2":  # NewGELUActivation: the tanh form in Python, eight kernels
                n = t * f
                start = len(self.parts)
                if self.amp:  # autocast runs pow in fp32: x cast first
                    self.cast(n, self.cd, _FP32)
                act_dtype = _FP32 if self.amp else self.cd  # the tanh form runs in fp32 after pow's upcast
                for i, (name, inputs) in enumerate(GELU_NEW_KERNELS):
                    half = i == len(GELU_NEW_KERNELS) - 2  # 0.5 * x, on x as it came
                    self.add(pointwise(n, inputs * n, self.cd if half else act_dtype, name=f"gelu_new {name}"))
                # autograd (H200 profiles, 14 launches): pow's and the last product's second kernels, that product's
                # gradient cast back (AMP), and x's gradients from its three uses added twice: one add_ here, the other
                # stood for by the gradient kernel of "+ 1" (which autograd passes through without a kernel)
                casts = (copy(n, dtype=_FP32, out_dtype=self.cd).renamed("gelu_new grad cast", kernels=True),) if self.amp else ()
                self.construct(start, "gelu_new", (pointwise(n, n, act_dtype, name="gelu_new pow-grad pow"),
                                                   pointwise(n, 2 * n, act_dtype, name="gelu_new pow-grad mul"),
                                                   pointwise(n, 2 * n, act_dtype, name="gelu_new product second grad"),
                                                   *casts, self.accumulate(n, self.cd, "gelu_new x")))
                # kept for the backward: x (the pow's fp32 copy under AMP), the tanh's output, 1 + tanh, 0.5 x
                self.save(3 * n, act_dtype)
                self.save(n, self.cd)
            else:
                act_dtype = self.cd
                self.add(gelu(t * f, self.cd))
                self.save(t * f, self.cd)  # gelu's input
        o = self.linear(t, d, f, self.cd if m.gated else act_dtype, biased, "down")  # h [T,ffn] @ w [ffn,d] -> [T,d]
        self.dropout_of(t * d, o)
        x = self.residual(t, x_dtype, o)
        return self.norm(t, x) if m.norm_position == "post" else x

    def head(self, tokens: Any, rows: Any, x_dtype: str) -> Optional[str]:
        """Final norm (pre-norm) over every token; the LM head, or BERT's MLM transform and decoder, over ``rows``."""
        m, d = self.m, self.m.d_model
        h = self.norm(tokens, x_dtype) if m.final_norm else x_dtype
        if m.head == "none":
            return None
        if m.head == "mlm":
            t = self.linear(rows, d, d, h, True, "mlm transform", layer=False)
            self.add(gelu(rows * d, self.cd))
            self.save(rows * d, self.cd)
            h = self.norm(rows, t)
        return self.linear(rows, m.vocab, d, h, m.head == "mlm", "lm_head" if m.head == "lm" else "mlm decoder",
                           layer=False)

    def loss(self, rows: Any, logits: str) -> Workload:
        """Cross-entropy over the vocabulary: log-softmax and NLL, with the upcasts eager AMP runs."""
        v = self.m.vocab
        parts: list[Workload] = []
        if self.m.family == "bert" or not self.eager:  # BertForMaskedLM: log_softmax in the logits' precision, then fp32
            parts.append(softmax(rows, v, logits).renamed("log_softmax", kernels=True))
            if self.eager:
                parts.append(copy(rows * v, dtype=logits, out_dtype=_FP32).renamed(f"cast {logits}->fp32", kernels=True))
        else:  # transformers' ForCausalLMLoss: logits.float(), then cross_entropy in fp32
            parts += [copy(rows * v, dtype=logits, out_dtype=_FP32).renamed(f"cast {logits}->fp32", kernels=True),
                      softmax(rows, v, _FP32).renamed("log_softmax", kernels=True)]
        nll_dtype = _FP32 if self.eager else logits
        parts.append(nll_loss(rows, v, dtype=nll_dtype))
        # alive at the backward: the logits, their fp32 copy (eager) and the log-probabilities (log_softmax's output)
        self.save(rows * v, logits)
        if self.eager:
            self.save(rows * v, _FP32)
        self.save(rows * v, _FP32 if self.eager and self.m.family != "bert" else logits)
        return chain("loss (cross-entropy)", *parts)

    def layer(self, b: Any, s: Any) -> Workload:
        """One layer's kernels, built on their own (the model holds it once with its count); ``layer_saved`` its saved bytes."""
        sub = _Program(self.call)
        x = sub.attention_block(b, s, self.stream)
        sub.mlp_block(b * s, x)
        self.layer_saved = sub.saved
        return chain("layer", *sub.parts)


class Activations(NamedTuple):
    """Bytes autograd keeps for the backward of a training forward: per layer, outside the layers, a layer's input."""

    per_layer: Any
    other: Any  # embeddings, head, loss
    layer_input: Any  # what activation checkpointing keeps of each layer

    def total(self, layers: int, checkpointing: bool = False) -> Any:
        """Every layer's saved tensors; with checkpointing, each layer's input and one layer's recomputed set."""
        if checkpointing:
            return layers * self.layer_input + self.per_layer + self.other
        return layers * self.per_layer + self.other


def build(model: Transformer, phase: str, batch: Any, seq: Any, context: Any = 0, dtype: Any = "bf16", impl: Any = "sdpa",
          kernels: Any = "eager", amp: Any = False, training: Any = False, kv_dtype: Any = None,
          quant: Any = None) -> Workload:
    """A Transformer's program (``phase`` forward, prefill or decode) as a Workload, with its ``recipe``."""
    call = _call(model, choice("phase", phase, PHASES), batch, seq, context, dtype, impl, kernels, amp, training, kv_dtype,
                 quant)
    with naming_overflow(f"{model.name}.{phase}", batch=call.batch, seq=call.seq, context=call.context):
        return _build(call)[0]


def activations(call: ModelCall) -> Activations:
    """The saved-for-backward bytes of ``call``'s program (built as training runs it)."""
    _, p = _build(call._replace(training=True))
    return Activations(p.layer_saved, p.saved, call.tokens * call.model.d_model * storage_bytes(p.stream))


def _call(model: Transformer, phase: str, batch: Any, seq: Any, context: Any, dtype: Any, impl: Any, kernels: Any,
          amp: Any, training: Any, kv_dtype: Any, quant: Any = None) -> ModelCall:
    """Validated arguments of a model call."""
    b, s = dim("batch", batch), dim("seq", seq)
    c = dim("context", context, minimum=0)
    broadcast(batch=b, seq=s, context=c)
    cd = normalize(dtype, "dtype")
    style = choice("kernels", kernels, KERNEL_STYLES)
    window = model.sliding_window
    if window is not None:
        longest = np.max(s + c)
        if longest > window:
            raise OptionError(f"{model.name} has sliding_window={window} (config key 'sliding_window'); windowed attention "
                              f"is not modelled and the sequence reaches {longest:g} tokens: keep seq + context <= {window}")
    if phase != "forward" and not model.causal:
        raise OptionError(f"{model.name} is not causal (an encoder): it has no {phase}; use forward(batch=, seq=)")
    if model.positions == "learned" and model.max_positions is not None:
        if np.max(s + c) > model.max_positions:
            raise ShapeError(f"{model.name} has {model.max_positions} learned positions; seq + context must stay within "
                             f"them, got {np.max(s + c):g}")
    q = None if quant is None else choice("quant", quant, tuple(QUANTIZATIONS))
    if q is not None and flag("training", training):
        raise OptionError(f"quant={q!r} is an inference option; training runs the model in dtype={cd!r}")
    return ModelCall(model, phase, b, s, c, cd, str(impl), style, flag("amp", amp), flag("training", training),
                     normalize(kv_dtype or cd, "kv_dtype"), q)


def _build(call: ModelCall) -> tuple[Workload, _Program]:
    m = call.model
    p = _Program(call)
    b, s = call.batch, call.seq
    t = b * s
    p.embeddings(t, s)
    layer = p.layer(b, s)
    try:
        layers = layer.repeat(m.layers, "layers")
    except ShapeError as exc:
        raise ShapeError(f"{m.name}: layers={count_text(m.layers)} is too many: {exc}") from None
    p.repeated = layers
    p.add(layers)
    rows = b if call.phase == "prefill" else t  # prefill: logits of each sequence's last token only
    logits = p.head(t, rows, p.stream)  # the layers' output: the stream's precision
    name = f"{m.name} {call.phase}"
    if call.training and logits is not None:
        p.add(p.loss(t, logits))
    return Workload.of(name, tuple((w, 1) for w in p.parts), recipe=call), p


def _promote(a: str, b: str) -> str:
    """PyTorch's type promotion of two float precisions: the wider (fp32 over 16-bit)."""
    return a if a == b else _FP32


# ---- the training step ------------------------------------------------------------------------


class _Microbatch(NamedTuple):
    """One microbatch of a step: its forward (as training runs it), its backward, and the whole in order."""

    forward: Workload
    backward: Workload
    body: Workload  # forward, the zeroed logits' gradient, (the recomputed layers,) backward, a tied embedding's add


def _microbatch(call: ModelCall, use_amp: bool, checkpointing: bool) -> _Microbatch:
    """``call``'s forward rebuilt for training, the loss's zeroed gradient, the recomputation and the backward."""
    m = call.model
    with naming_overflow(f"{m.name}.forward", batch=call.batch, seq=call.seq, context=0.0):
        fwd, p = _build(call._replace(context=0.0, amp=use_amp, training=True, quant=None))
    grad = _FP32 if use_amp else call.dtype
    body: list[tuple[Any, int]] = [(fwd, 1)]
    if m.head != "none":  # nll_loss's backward writes into a zeroed gradient of the logits
        body.append((fill(call.tokens * m.vocab, _FP32 if call.kernels == "eager" else call.dtype)
                     .renamed("zero the logits' gradient", kernels=True), 1))
    if checkpointing and p.repeated is not None:
        body.append((recomputed(p.repeated), 1))
    bwd = backward(fwd)
    body.append((bwd, 1))
    if m.tie_embeddings:  # the tied matrix's two gradients (embedding and head) summed
        body.append((foreach(m.vocab * m.d_model, 2, 1, 1, grad, name="tied embedding gradients add"), 1))
    return _Microbatch(fwd, bwd, Workload.of(f"{m.name} forward + backward", tuple(body)))


def _step(call: ModelCall, optimizer: str, amp: Any, microbatches: int, checkpointing: bool) -> Workload:
    """One GPU's whole step: microbatches of forward and backward, the gradients' accumulation, the optimizer."""
    m = call.model
    use_amp = resolve_amp(amp, call.dtype)
    grad = _FP32 if use_amp else call.dtype
    parts: list[tuple[Any, int]] = [(_microbatch(call, use_amp, checkpointing).body, microbatches)]
    if microbatches > 1:  # each later microbatch's gradients added into .grad
        parts.append((foreach(m.params, 2, 1, 1, grad, name="gradient accumulation"), microbatches - 1))
    if optimizer != "none":
        parts.append((optimizer_step(optimizer, m.params, m.param_tensors, _FP32 if use_amp else call.dtype, grad), 1))
    return Workload.of(f"{m.name} training step", tuple(parts), recipe=call._replace(amp=use_amp, training=True, world=1))


def _parallel_step(call: ModelCall, optimizer: str, amp: Any, microbatches: int, checkpointing: bool,
                   split: Split) -> Workload:
    """One GPU's share of a split step (``solkit.models.parallel``): the sharded model's microbatch, then the collectives."""
    m = shard(call.model, split.tp, split.pp, split.ep)
    use_amp = resolve_amp(amp, call.dtype)
    sharded = call._replace(model=m, amp=use_amp, training=True)
    micro = _microbatch(sharded, use_amp, checkpointing)
    grad = master = _FP32 if use_amp else call.dtype

    def opt(params: float, tensors: int) -> Workload:
        return optimizer_step(optimizer, params, tensors, master, grad)

    w = parallel_step(micro.body, m, micro.forward, micro.backward, split, call.tokens, call.dtype, grad, checkpointing,
                      microbatches, None if optimizer == "none" else opt)
    return Workload.of(w.name, w.parts, recipe=sharded._replace(world=split.gpus))
