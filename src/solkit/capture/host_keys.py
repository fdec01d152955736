"""The host key of a captured ATen call: what its host time is looked up by (the spec's ``host_captured_op_weight``).

A call's key is its op's name without the namespace (``aten::topk`` -> ``topk``), with a size class where the op's
CUDA implementation takes another host path: a ``sort`` over more than ``SMALL_SORT`` elements runs cub's segmented
radix sort (``sort_cub``: several kernels, a temporary buffer and copies; measured 90 us against 43 at 3,280
elements, ``data/h200_op_host.json``), an ``index`` that gathers rows of a matrix (an output of two or more dims)
is ``index_rows``. Pure functions of the recorded events; no torch.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

__all__ = ["SMALL_SORT", "host_key", "host_ops"]

#: ATen's CUDA sort keeps a dimension of at most this many elements in one kernel (``should_use_small_sort``)
SMALL_SORT = 4096


def host_key(event: Any) -> str:
    """The host key of one recorded call (``record.Event``). NB: a sort's size is its output's last dimension (the
    dim argument is not read: Hugging Face's routing sorts a flat vector)."""
    name = event.op.split("::")[-1]
    out = event.outputs[0].shape if event.outputs else ()
    if name == "sort" and out and out[-1] > SMALL_SORT:
        return "sort_cub"
    if name == "index" and len(out) >= 2:
        return "index_rows"
    return name


def host_ops(events: Iterable[Any]) -> tuple[tuple[str, int], ...]:
    """(host key, calls) of the launching calls ``events``, sorted by key."""
    return tuple(sorted(Counter(host_key(e) for e in events).items()))
