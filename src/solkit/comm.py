"""Collectives between GPUs as Workloads: NCCL's operations, their link traffic counted by algorithm.

``nbytes`` is the whole buffer, nccl-tests' "size": an all-reduce's buffer, an all-gather's OUTPUT, a
reduce-scatter's INPUT, an all-to-all's buffer, a broadcast's buffer, the buffer each GPU sends in a
send/recv. Each GPU sends ``bus_bytes = nbytes x bus factor`` over its links (nccl-tests' bus bandwidth
convention), and the ring takes ``steps`` hops in a row:

| collective | bus factor | ring steps | DRAM bytes per GPU (read, written) | vector FLOPs per GPU |
|---|---|---|---|---|
| all_reduce | 2(n-1)/n | 2(n-1) | nbytes, nbytes | (n-1)/n x elements (the adds) |
| all_gather | (n-1)/n | n-1 | nbytes/n, nbytes | 0 |
| reduce_scatter | (n-1)/n | n-1 | nbytes, nbytes/n | (n-1)/n x elements |
| all_to_all | (n-1)/n | 1 | nbytes, nbytes | 0 |
| broadcast | 1 | n-1 | 0, nbytes | 0 |
| send_recv | 1 | 1 | nbytes, nbytes | 0 |

A ring all-reduce's GPU sends each of its n chunks (nbytes/n) 2(n-1) times: n-1 reduce-scatter steps and
n-1 all-gather steps, so 2(n-1)/n x nbytes. ``algorithm="tree"`` (all-reduce only) is NCCL's tree: a
chain inside the node and a double binary tree across nodes, with the same bytes per GPU and
2 (L - 1 + ceil(log2(nodes))) steps (``Link.hops``), L of its GPUs per node. The roofline charges ``bus_bytes`` to the links (intra-node NVLink,
inter-node network: ``Link.level_bytes``); DRAM ``bytes`` hold only each GPU's compulsory reads and writes.
NB: broadcast counts the receivers' write (the root reads instead); bytes are not rounded to NCCL's chunks.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from ._dir import public_dir
from ._typing import Algorithm, Dim, DType, Figure
from ._validate import checked_call, choice, dim, positive, whole
from .errors import ShapeError
from .precision import normalize, storage_bytes
from .workload import Kernel, Link, Workload

__all__ = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv", "collective",
           "COLLECTIVES", "ALGORITHMS", "OVERLAPS", "bus_factor", "steps_at_two"]

ALGORITHMS = ("ring", "tree")


class _Rule(NamedTuple):
    bus: Callable[[Any], Any]  # bus factor of n
    steps: Callable[[Any], Any]  # ring steps of n
    read: Callable[[Any, Any], Any]  # DRAM bytes read per GPU of (nbytes, n)
    written: Callable[[Any, Any], Any]
    reduces: bool  # adds (n-1)/n of the elements


_RULES: dict[str, _Rule] = {
    "all_reduce": _Rule(lambda n: 2 * (n - 1) / n, lambda n: 2 * (n - 1), lambda s, n: s, lambda s, n: s, True),
    "all_gather": _Rule(lambda n: (n - 1) / n, lambda n: n - 1, lambda s, n: s / n, lambda s, n: s, False),
    "reduce_scatter": _Rule(lambda n: (n - 1) / n, lambda n: n - 1, lambda s, n: s, lambda s, n: s / n, True),
    "all_to_all": _Rule(lambda n: (n - 1) / n, lambda n: np.minimum(n - 1, 1) if isinstance(n, np.ndarray) else min(n - 1, 1),
                        lambda s, n: s, lambda s, n: s, False),
    "broadcast": _Rule(lambda n: np.where(n > 1, 1.0, 0.0) if isinstance(n, np.ndarray) else float(n > 1),
                       lambda n: n - 1, lambda s, n: 0.0, lambda s, n: s, False),
    "send_recv": _Rule(lambda n: np.where(n > 1, 1.0, 0.0) if isinstance(n, np.ndarray) else float(n > 1),
                       lambda n: np.minimum(n - 1, 1) if isinstance(n, np.ndarray) else min(n - 1, 1),
                       lambda s, n: s, lambda s, n: s, False),
}

#: the collectives, in the order nccl-tests lists its programs
COLLECTIVES: tuple[str, ...] = tuple(_RULES)


@checked_call
def bus_factor(collective: str, n_gpus: Dim) -> Figure:
    """nccl-tests' bus factor: bus bandwidth = nbytes / seconds x this (2(n-1)/n for an all-reduce)."""
    op = choice("collective", collective, COLLECTIVES)
    return _RULES[op].bus(dim("n_gpus", n_gpus))


@checked_call
def steps_at_two(collective: str) -> float:
    """The ring steps of ``collective`` on 2 GPUs (what a 2-GPU measurement's latency already holds)."""
    return float(_RULES[choice("collective", collective, COLLECTIVES)].steps(2.0))


#: where a collective runs (``Link.overlap``): in line, or on one of NCCL's streams beside the compute
OVERLAPS = ("", "gradients", "prefetch")


@checked_call
def collective(op: str, nbytes: Dim, n_gpus: Dim = 8, dtype: DType = "bf16", algorithm: Algorithm = "ring",
               stride: Dim = 1, overlap: str = "") -> Workload:
    """One NCCL collective over ``n_gpus`` GPUs of a buffer of ``nbytes`` (nccl-tests' size), as a one-kernel Workload.

    ``stride``: how far apart the group's GPUs sit (1: neighbours, filling a node first; the system's
    node size, given to ``roofline``/``predict``, then says how many share a node): a tensor-parallel
    group of 8 inside a node and a data-parallel group beside it (stride 8, one GPU per node) differ
    only here. ``overlap``: "" in line; "gradients" or "prefetch" on NCCL's streams beside the compute
    (``solkit.workload.Link``), as DDP's buckets and FSDP's gathers run.
    """
    name = choice("op", op, COLLECTIVES)
    size = positive("nbytes", nbytes, ShapeError)
    n = dim("n_gpus", n_gpus)
    precision = normalize(dtype, "dtype")
    method = choice("algorithm", algorithm, ALGORITHMS)
    if method == "tree" and name != "all_reduce":
        raise ShapeError(f"algorithm='tree' is NCCL's for all_reduce only, got it for {name}")
    spacing = float(whole("stride", stride, ShapeError))
    where = OVERLAPS[OVERLAPS.index(overlap)] if overlap in OVERLAPS else choice("overlap", overlap, OVERLAPS)
    rule = _RULES[name]
    bus = size * rule.bus(n)
    steps = rule.steps(n)  # the ring's; a tree's depend on the nodes it spans (Link.hops)
    elements = size / storage_bytes(precision)
    adds = elements * (n - 1) / n if rule.reduces else 0.0
    link = Link(name, method, n, size, bus, steps, spacing, where)
    kernel = Kernel(name, "collective", precision, vector_flops=adds, bytes_read=rule.read(size, n),
                    bytes_written=rule.written(size, n), model_flops=0.0, link=link)
    return Workload.of(name, ((kernel, 1),))


@checked_call
def all_reduce(nbytes: Dim, n_gpus: Dim = 8, dtype: DType = "bf16", algorithm: Algorithm = "ring",
               stride: Dim = 1) -> Workload:
    """Sum a buffer of ``nbytes`` across ``n_gpus`` GPUs, every GPU getting the sum (ring: 2(n-1)/n x nbytes sent per GPU)."""
    return collective("all_reduce", nbytes, n_gpus, dtype, algorithm, stride)


@checked_call
def all_gather(nbytes: Dim, n_gpus: Dim = 8, dtype: DType = "bf16", stride: Dim = 1) -> Workload:
    """Every GPU gets every GPU's nbytes/n shard; ``nbytes`` is the gathered OUTPUT ((n-1)/n x nbytes sent per GPU)."""
    return collective("all_gather", nbytes, n_gpus, dtype, "ring", stride)


@checked_call
def reduce_scatter(nbytes: Dim, n_gpus: Dim = 8, dtype: DType = "bf16", stride: Dim = 1) -> Workload:
    """Sum an INPUT of ``nbytes`` across GPUs, each keeping one nbytes/n shard of the sum ((n-1)/n x nbytes sent per GPU)."""
    return collective("reduce_scatter", nbytes, n_gpus, dtype, "ring", stride)


@checked_call
def all_to_all(nbytes: Dim, n_gpus: Dim = 8, dtype: DType = "bf16", stride: Dim = 1) -> Workload:
    """Every GPU sends nbytes/n to every other GPU (MoE dispatch): (n-1)/n x nbytes sent per GPU."""
    return collective("all_to_all", nbytes, n_gpus, dtype, "ring", stride)


@checked_call
def broadcast(nbytes: Dim, n_gpus: Dim = 8, dtype: DType = "bf16", stride: Dim = 1) -> Workload:
    """One GPU's buffer of ``nbytes`` to all (a pipelined ring: nbytes sent per GPU)."""
    return collective("broadcast", nbytes, n_gpus, dtype, "ring", stride)


@checked_call
def send_recv(nbytes: Dim, n_gpus: Dim = 2, dtype: DType = "bf16", stride: Dim = 1) -> Workload:
    """Each GPU sends ``nbytes`` to the next and receives as much from the previous (pipeline stages' activations)."""
    return collective("send_recv", nbytes, n_gpus, dtype, "ring", stride)


def __dir__() -> list[str]:
    """``__all__``, the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
