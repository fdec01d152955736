"""A training step split over GPUs: data (DDP, ZeRO 1-3 / FSDP), tensor (Megatron), sequence and pipeline parallelism.

The workload is what ONE GPU runs, its collectives included (``solkit.comm``), with where each runs:

- **tensor parallelism** (``tp``): each GPU holds heads/tp attention heads (KV heads/tp, or one replicated
  KV head when tp exceeds them), ffn/tp of the MLP and vocab/tp of the embedding and head (padded up);
  norms and biases after a row-parallel layer are replicated. Megatron's f/g pairs give two all-reduces
  of the layer's activations (tokens x d_model in the compute precision) per layer forward (after the
  attention's and the MLP's row-parallel GEMM) and two in the backward (before the column-parallel ones),
  in line; the vocab-parallel embedding adds one (forward), the head's input gradient one (backward), the
  vocab-parallel cross-entropy three of tokens x 4 bytes (max, sum of exponentials, target logit). With
  ``sp`` (sequence parallelism) each all-reduce is a reduce-scatter and an all-gather of the same buffer.
  With ``checkpointing`` the recomputed forward repeats the forward's two per layer. NB: an eager (Hugging Face)
  forward keeps eager autograd's launches on each shard (``workload.Autograd``), as eager TP over HF modules runs;
  Megatron's fused layers launch fewer (build the forward with ``kernels="fused"``).
- **pipeline parallelism** (``pp``): the GPU holds layers/pp layers (rounded up), and runs ``microbatches``
  forward+backward microbatches in a 1F1B schedule, which takes count + pp - 1 microbatches of time (the
  bubble, ``solkit.workload.Pipeline``), each sending its activations forward and its gradients back
  (two send/recv of tokens x d_model per microbatch; with tp > 1 Megatron's scatter/gather sends 1/tp of
  them and all-gathers them in the node). ``interleave`` v virtual stages per GPU (Megatron's interleaved
  schedule) shrink the bubble to (pp - 1) / v microbatches (rounded up) and send v times as often.
  NB: the stage is modelled with the embedding and the head both (the slowest stage holds the head).
- **data parallelism** (``dp``), the gradients of the master weights (fp32 under AMP):
  ``zero=0`` DDP: buckets of ``bucket_mb`` MB, each gradient scaled into its bucket (one kernel per
  tensor: the H200 profiles of DDP steps show exactly one more launch per parameter tensor, and no copy
  back out), each bucket all-reduced on NCCL's gradient stream as soon as the backward has produced it
  (``overlap=True``; a layer's gradients after its backward, the head's first, the embedding's last), the
  optimizer waiting for all. Only the last microbatch reduces (``no_sync`` before). ``zero=1``: the same all-reduce, the optimizer on a 1/dp shard, then an
  all-gather of the updated parameters. ``zero=2``: bucketed reduce-scatters instead of all-reduces.
  A sharded flat buffer is padded to a multiple of the group, as DeepSpeed's ZeRO and FSDP pad theirs: each rank's
  shard is ceil(elements / dp) and a reduce-scatter's or all-gather's buffer dp x that (``zero_shard``), so any
  parameter count splits over any dp (GPT-2's 124,439,808 over dp=5: shards of 24,887,962, a buffer of 124,439,810).
  ``zero=3`` (FSDP2 ``fully_shard`` per layer): each layer's parameters all-gathered before its forward and
  again before its backward (the next layer's gather prefetched on its own stream), copied out of the
  gathered buffer, its gradients copied in and reduce-scattered after its backward (gradient stream);
  the root group (embeddings, head, final norm) gathered before the forward (kept unsharded through the
  backward, as FSDP2 keeps its root) and reduce-scattered after the backward; the optimizer on the shard. FSDP2's Python hooks cost the CPU ``host_fsdp_group`` per
  layer and pass (charged at the layer's copy out, op ``FSDP_GROUP_OP``).
- **expert parallelism** (``ep``, a mixture of experts only): the experts are split over ``ep`` GPUs of the
  data-parallel group (ep divides dp and the experts); each layer's routed rows (tokens x top_k x d_model)
  go out and come back by two all-to-alls in the forward and two in the backward, in line. Balanced
  routing: each GPU's experts get tokens x top_k / (experts / ep) rows each. NB: the expert weights'
  gradients are reduced over the whole data-parallel group like the dense ones (a real split reduces them
  over dp / ep GPUs: fewer bytes), and the router is counted over the local experts.

Collectives' groups sit as Megatron places them (tensor-parallel neighbours, then data, then pipeline):
a data-parallel group's GPUs are ``tp`` apart, a pipeline's ``tp x dp``. NB: the per-GPU kernels of the
norms, dropouts and residual adds are counted on every token also under ``sp`` (they run on 1/tp of the
tokens there: an upper bound on their time); DDP's first 1 MiB bucket is not modelled.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any


from ..comm import collective
from ..errors import OptionError
from ..ops import foreach
from ..ops.elementwise import copy
from ..precision import storage_bytes
from ..workload import FSDP_GROUP_OP, Join, Pipeline, Workload, chain
from .split import Split

if TYPE_CHECKING:  # pragma: no cover
    from .architecture import Transformer

__all__ = ["shard", "parallel_step", "zero_shard", "padded", "FSDP_GROUP_OP"]

_MIB = 2**20
#: bytes per token of each vocab-parallel cross-entropy all-reduce (one fp32 per token: max, sum, target logit)
_LOSS_REDUCTIONS = 3


def shard(m: Transformer, tp: int = 1, pp: int = 1, ep: int = 1) -> Transformer:
    """What one GPU holds of ``m``: heads, KV heads, ffn and vocab over ``tp``; layers over ``pp`` (rounded up); experts over ``ep``."""
    if tp == 1 and pp == 1 and ep == 1:
        return m
    if ep > 1 and (not m.moe or m.experts % ep):
        raise OptionError(f"ep={ep} must divide {m.name}'s experts ({m.experts}: expert parallelism needs a mixture of "
                          "experts)" if m.moe else f"ep={ep} needs a mixture of experts; {m.name} has a dense MLP")
    if m.heads % tp:
        raise OptionError(f"tp={tp} must divide {m.name}'s {m.heads} attention heads")
    if m.ffn_width % tp:
        raise OptionError(f"tp={tp} must divide {m.name}'s MLP width ffn={m.ffn_width}")
    kv = m.n_kv_heads
    if kv % tp and tp % kv:
        raise OptionError(f"tp={tp} must divide {m.name}'s {kv} KV heads, or be a multiple of them (replicated)")
    if pp > m.layers:
        raise OptionError(f"pp={pp} is more pipeline stages than {m.name}'s {m.layers} layers")
    moe = {"experts": m.experts // ep, "expert_parallel": ep} if m.moe else {}  # top_k stays global
    return m.with_(name=f"{m.name} (tp={tp}, pp={pp} stage{f', ep={ep}' if ep > 1 else ''})", heads=m.heads // tp,
                   kv_heads=max(kv // tp, 1), head_dim=m.n_head_dim, ffn=m.ffn_width // tp, vocab=math.ceil(m.vocab / tp),
                   layers=math.ceil(m.layers / pp), **moe)


def padded(elements: Any, dp: int) -> Any:
    """``elements`` rounded up to a multiple of ``dp``: a flat buffer every rank of the group holds an equal shard of."""
    return math.ceil(elements / dp) * dp if dp > 1 else elements


def zero_shard(m: Transformer, dp: int, zero: int) -> int:
    """Parameters one rank holds under ZeRO stage ``zero`` over ``dp`` GPUs: ceil(params / dp) of the padded flat buffer.

    ``zero=3`` (FSDP2, one unit per layer and the root group): each unit is padded on its own, so the shard is
    layers x ceil(layer_params / dp) + ceil(root / dp). Without ZeRO (or dp=1): every parameter.
    """
    if zero == 0 or dp == 1:
        return m.params
    if zero == 3:
        root = m.params - m.layers * m.layer_params
        return m.layers * -(-m.layer_params // dp) + -(-root // dp)
    return -(-m.params // dp)


def _in_line(op: str, nbytes: Any, n: int, stride: int, dtype: str, name: str) -> Workload:
    return collective(op, nbytes, n, dtype, stride=stride).renamed(name, kernels=True)


def _tensor_parallel(m: Transformer, tokens: Any, split: Split, cd: str, recompute: bool) -> list[tuple[Workload, int]]:
    """The tensor-parallel collectives of one microbatch (in line): per layer and outside the layers."""
    tp, e = split.tp, storage_bytes(cd)
    act = tokens * m.d_model * e  # [T, d] activations in the compute precision
    if split.sp:
        pair = chain("sp reduce-scatter + all-gather", _in_line("reduce_scatter", act, tp, 1, cd, "sp reduce-scatter"),
                     _in_line("all_gather", act, tp, 1, cd, "sp all-gather"))
    else:
        pair = _in_line("all_reduce", act, tp, 1, cd, "tp all-reduce")
    per_layer = _per_layer(recompute)
    loss = _in_line("all_reduce", tokens * 4.0, tp, 1, "fp32", "vocab-parallel loss all-reduce")
    return [(pair, per_layer * m.layers), (pair, 2), (loss, _LOSS_REDUCTIONS)]


def _expert_parallel(m: Transformer, tokens: Any, split: Split, cd: str, recompute: bool) -> list[tuple[Workload, int]]:
    """Expert parallelism's all-to-alls: each layer's routed rows (tokens x top_k x d) dispatched and combined, both ways."""
    routed = tokens * m.top_k * m.d_model * storage_bytes(cd)
    a2a = collective("all_to_all", routed, split.ep, cd, stride=split.tp).renamed("ep all-to-all", kernels=True)
    return [(a2a, _per_layer(recompute) * m.layers)]


def _per_layer(recompute: bool) -> int:
    """A layer's in-line collectives of a kind: two in the forward, two in the backward, two more recomputing."""
    return 4 + (2 if recompute else 0)


def _grad_bytes(params: float, grad: str) -> float:
    return params * storage_bytes(grad)


def _layer_groups(layer_bytes: float, layers: int, bucket: float) -> list[tuple[int, int, int]]:
    """(layers per bucket group, buckets per group, groups) covering ``layers``: DDP's buckets of about ``bucket`` bytes.

    A layer larger than a bucket fills ceil(layer / bucket) buckets; smaller layers share one, as many
    as fit (and the remainder one more group).
    """
    if layer_bytes >= bucket:
        return [(1, math.ceil(layer_bytes / bucket), layers)]
    per = max(1, min(layers, int(bucket // layer_bytes)))
    groups = [(per, 1, layers // per)]
    if layers % per:
        groups.append((layers % per, 1, 1))
    return groups


def _reduction(op: str, elements: Any, dtype: str, split: Split, name: str, overlap: str, pad: bool = True) -> Workload:
    """A data-parallel collective of ``elements`` in ``dtype``; a reduce-scatter's or all-gather's flat buffer padded to dp
    shards (``pad``; a bucket of a flat buffer is not padded on its own: the buffer's padding, at most dp - 1 elements,
    is counted once, in the gather of the updated parameters and in memory)."""
    stride = split.tp  # a data-parallel group's GPUs sit tp apart
    if pad and op in ("reduce_scatter", "all_gather"):
        elements = padded(elements, split.dp)
    return collective(op, _grad_bytes(elements, dtype), split.dp, "fp32", stride=stride,
                      overlap=overlap if split.overlap else "").renamed(name, kernels=True)


def _ddp_backward(bwd: Workload, m: Transformer, split: Split, grad: str) -> Workload:
    """The backward with DDP's (zero 0, 1: all-reduce; zero 2: reduce-scatter) bucketed gradient reductions, then the join.

    The gradients become ready in the backward's order: the head's (and the final norm's) after the head's
    backward, each layer's after its own, the embeddings' (a tied head's included) at the end; each side's
    are cut into ``bucket_mb`` buckets.
    """
    op = "reduce_scatter" if split.zero == 2 else "all_reduce"
    label = f"ddp bucket {op.replace('_', '-')}"
    bucket = split.bucket_mb * _MIB
    layer_params = float(m.layer_params)
    layer_tensors = _layer_tensors(m)
    head_params = float(m.head_params + (m.norm_params if m.final_norm else 0))
    head_tensors = m.param_tensors - m.with_(head="none", tie_embeddings=False, pooler=False).param_tensors \
        + (1 if m.final_norm else 0)
    parts: list[tuple[Any, int]] = []
    layers_seen = False
    for node, count in bwd.parts:
        if isinstance(node, Workload) and node.name == "layers backward":
            parts += _buckets(head_params, head_tensors, split, grad, f"{label} (head)", op)  # ready before the layers'
            layer_bwd = node.parts[0][0]
            for per, buckets, groups in _layer_groups(_grad_bytes(layer_params, grad), m.layers, bucket):
                scale = foreach(per * layer_params, 1, 1, 1, grad, name="ddp scale into bucket")
                unit = Workload.of("layers backward + bucket", (
                    (layer_bwd, per),
                    (scale.kernels[0]._replace(launches=float(per * layer_tensors)), 1),
                    (_reduction(op, per * layer_params / buckets, grad, split, label, "gradients", pad=False), buckets)))
                parts.append((unit, groups))
            layers_seen = True
            continue
        parts.append((node, count))
    if not layers_seen:
        raise OptionError(f"{bwd.name}: no layers' backward to hang DDP's buckets on")
    embedding = float(m.params - m.layers * m.layer_params) - head_params
    embedding_tensors = m.param_tensors - m.layers * layer_tensors - head_tensors
    parts += _buckets(embedding, embedding_tensors, split, grad, f"{label} (embeddings)", op)
    return Workload.of(f"{bwd.name} + gradient {op.replace('_', '-')}", tuple(parts), schedule=Join(("gradients",)))


def _buckets(params: float, tensors: int, split: Split, grad: str, name: str, op: str) -> list[tuple[Any, int]]:
    """``params`` gradients scaled into their buckets (one launch per tensor) and reduced in ``bucket_mb`` buckets."""
    if params <= 0:
        return []
    nbytes = _grad_bytes(params, grad)
    count = max(1, math.ceil(nbytes / (split.bucket_mb * _MIB)))
    scale = foreach(params, 1, 1, 1, grad, name=f"ddp scale into bucket ({name.rsplit('(', 1)[-1]}")
    return [(scale.kernels[0]._replace(launches=float(max(tensors, 1))), 1),
            (_reduction(op, params / count, grad, split, name, "gradients", pad=False), count)]


def _layer_tensors(m: Transformer) -> int:
    """Parameter tensors of one layer."""
    return m.with_(layers=2).param_tensors - m.with_(layers=1).param_tensors


def _fsdp(w: Workload, m: Transformer, split: Split, grad: str, backward: bool) -> Workload:
    """FSDP2 around each layer of a forward (``backward=False``) or a backward: gathers prefetched, gradients reduce-scattered."""
    name = "layers backward" if backward else "layers"
    full = float(m.layer_params)  # a layer's parameters, gathered in fp32
    parts: list[tuple[Any, int]] = []
    for node, count in w.parts:
        if not (isinstance(node, Workload) and node.name == name):
            parts.append((node, count))
            continue
        layer = node.parts[0][0]
        gather = _reduction("all_gather", full, "fp32", split, "fsdp all-gather (next layer)", "prefetch")
        copy_out = copy(m.layer_params, "fp32").renamed("fsdp copy out of the gathered buffer", kernels=True)
        copy_out = Workload.of(copy_out.name, ((copy_out.counted[0][0]._replace(op=FSDP_GROUP_OP), 1),))
        after: list[tuple[Any, int]] = []
        if backward:
            copy_in = copy(m.layer_params, grad).renamed("fsdp copy gradients in", kernels=True)
            after = [(copy_in, 1), (_reduction("reduce_scatter", full, grad, split, "fsdp reduce-scatter", "gradients"), 1)]
        join = Join(("prefetch",), "start")  # this layer's parameters gathered before it computes
        ahead = Workload.of(f"{name} (fsdp)", ((copy_out, 1), (gather, 1), (layer, 1), *after), schedule=join)
        last = Workload.of(f"{name} (fsdp, last)", ((copy_out, 1), (layer, 1), *after), schedule=join)
        first = _reduction("all_gather", full, "fp32", split, "fsdp all-gather (first layer)", "prefetch")
        layers = count * m.layers
        parts += [(first, 1)] + ([(ahead, layers - 1)] if layers > 1 else []) + [(last, 1)]
    root = float(m.params - m.layers * m.layer_params)  # the root group: embeddings, head, final norm
    if backward:  # the root stays unsharded after its forward; its gradients copied in and reduce-scattered last
        parts += [(copy(root, grad).renamed("fsdp copy gradients in (root)", kernels=True), 1),
                  (_reduction("reduce_scatter", root, grad, split, "fsdp reduce-scatter (root)", "gradients"), 1)]
        return Workload.of(f"{w.name} (fsdp)", tuple(parts), schedule=Join(("gradients",)))
    body = Workload.of(f"{w.name} (fsdp)", tuple(parts), schedule=Join(("prefetch",), "start"))
    gather_root = _reduction("all_gather", root, "fp32", split, "fsdp all-gather (root)", "prefetch")
    return Workload.of(f"{w.name} (fsdp, root gathered)", ((gather_root, 1), (body, 1)))


def parallel_step(step: Workload, m: Transformer, forward: Workload, backward: Workload, split: Split, tokens: Any,
                  cd: str, grad: str, recompute: bool, microbatches: int, optimizer: Any) -> Workload:
    """Assemble one GPU's step from its microbatch (``step``'s forward and backward on the sharded model) and ``split``.

    ``optimizer``: a function of (parameters, tensors) giving the optimizer's workload (or None).
    """
    body = [(node, count) for node, count in step.parts]
    tp_parts = _tensor_parallel(m, tokens, split, cd, recompute) if split.tp > 1 else []
    if split.ep > 1:
        tp_parts += _expert_parallel(m, tokens, split, cd, recompute)
    e = storage_bytes(cd)
    if split.pp > 1:  # activations forward, their gradients back: a send/recv each way per microbatch (and chunk)
        act = tokens * m.d_model * e
        # Megatron's scatter/gather: each tensor-parallel rank sends 1/tp of the activations, then they all-gather
        hop = collective("send_recv", act / split.tp, 2, cd, stride=split.tp * split.dp).renamed(
            "pipeline send/recv", kernels=True)
        tp_parts.append((hop, 2 * split.interleave))
        if split.tp > 1:
            tp_parts.append((_in_line("all_gather", act, split.tp, 1, cd, "pipeline all-gather (scatter/gather)"),
                             2 * split.interleave))
    dp_comm = split.dp > 1
    zero3 = dp_comm and split.zero == 3

    def unit(reduce: bool) -> Workload:
        parts = []
        for node, count in body:
            if node is forward and zero3:
                node = _fsdp(forward, m, split, grad, False)
            elif node is backward and zero3:
                node = _fsdp(backward, m, split, grad, True)
            elif node is backward and reduce and dp_comm:
                node = _ddp_backward(backward, m, split, grad)
            parts.append((node, count))
        if tp_parts:
            parts.append((Workload.of("tensor/pipeline-parallel collectives", tuple(tp_parts)), 1))
        return Workload.of(f"{step.name} (microbatch)", tuple(parts))

    parts: list[tuple[Any, int]] = []
    last = unit(True)
    if split.pp > 1:
        plain = unit(zero3)
        pipeline = Workload.of(f"pipeline of {microbatches} microbatches over {split.pp} stages", ((plain, microbatches),),
                               schedule=Pipeline(split.pp, split.interleave))
        parts.append((pipeline, 1))
        if dp_comm and not zero3:  # after the flush, in line
            op = "reduce_scatter" if split.zero == 2 else "all_reduce"
            parts.append((_reduction(op, float(m.params), grad, split, f"dp gradient {op}", ""), 1))
    else:
        if microbatches > 1:
            parts.append((unit(zero3), microbatches - 1))
        parts.append((last, 1))
    shard_params = zero_shard(m, split.dp, split.zero)  # the optimizer's share: a padded 1/dp shard under ZeRO
    if microbatches > 1:
        parts.append((foreach(float(m.params), 2, 1, 1, grad, name="gradient accumulation"), microbatches - 1))
    if optimizer is not None:
        parts.append((optimizer(shard_params, m.param_tensors), 1))
        if dp_comm and split.zero in (1, 2):
            parts.append((_reduction("all_gather", float(m.params), "fp32", split,
                                     "zero all-gather of the updated parameters", ""), 1))
    return Workload.of(f"{m.name} training step ({_label(split)})", tuple(parts))


def _label(split: Split) -> str:
    named = [f"{k}={getattr(split, k)}" for k in ("dp", "tp", "pp") if getattr(split, k) > 1]
    if split.sp:
        named.append("sp")
    if split.zero:
        named.append(f"zero={split.zero}")
    return ", ".join(named) or "one GPU"
