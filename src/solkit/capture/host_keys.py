"""The host key of a captured ATen call: what its host time is looked up by (the spec's ``op_host_weight``).

A call's key is its op's name without the namespace (``aten::topk`` -> ``topk``), with a size class where the op's
CUDA implementation takes another host path: a sort of one slice longer than ``SMALL_SORT`` runs cub's radix sort
(``sort_cub``: several kernels, a temporary buffer and copies; measured 90 us a call at 6,792 elements against 43 at
3,280, ``data/h200_op_host.json``), of several such slices ATen's segmented sort (``sort_segmented``); an ``index``
that gathers rows of a matrix (an output of two or more dims) is ``index_rows``. ``HOST_KEYS`` (``stacks.torch211``)
are the keys a spec may weigh: those ``benchmarks/programs/op_host.py`` measures. Pure functions of the recorded
events.
"""

from __future__ import annotations

from collections import Counter
from math import prod
from typing import Any, Iterable

from ..stacks.torch211 import HOST_KEYS, SMALL_SORT
from .eager import sort_slice

__all__ = ["HOST_KEYS", "host_key", "host_ops"]


def host_key(event: Any) -> str:
    """The host key of one recorded call (``record.Event``): a sort's slices as ``capture.eager`` counts its launches."""
    name = event.op.split("::")[-1]
    if name == "sort":
        found = sort_slice(event)
        if found is not None and found[0][found[1]] > SMALL_SORT:
            shape, dim = found
            return "sort_cub" if prod(shape) == shape[dim] else "sort_segmented"
        return name
    out = event.outputs[0].shape if event.outputs else ()
    if name == "index" and len(out) >= 2:
        return "index_rows"
    return name


def host_ops(events: Iterable[Any]) -> tuple[tuple[str, int], ...]:
    """(host key, calls) of the launching calls ``events``, sorted by key."""
    return tuple(sorted(Counter(host_key(e) for e in events).items()))
