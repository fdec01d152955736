"""A training step: the forward kernels, then each operator's backward, in reverse order.

Each operator's backward is its own registered formula (``solkit.ops.registry``), computed
from the arguments it was called with: GEMMs and convolutions a data and a weight gradient,
flash attention one recomputing kernel, naive attention autograd's four products and the
softmax's gradient, memory-bound kernels ``memory_bound_backward``. Every backward counts twice
its forward's model FLOPs, so a step's model FLOPs are 3x the forward's (the usual MFU
convention), whatever the operators: naive causal attention included.
"""

from __future__ import annotations

from .._validate import checked_call
from ..errors import OptionError
from ..ops.registry import REGISTRY
from ..workload import Kernel, Node, Workload, as_workload

__all__ = ["training_step", "backward"]


@checked_call
def backward(forward: Workload) -> Workload:
    """The backward pass of ``forward``: each operator's gradient, last operator first; repeated parts stay counted."""
    w = as_workload(forward, "forward")
    if w.call is not None:
        return REGISTRY[w.call.op].gradient(w.call, w.name)
    parts: list[tuple[Node, int]] = []
    for node, count in reversed(w.parts):
        if isinstance(node, Kernel):
            raise OptionError(
                f"forward: kernel {node.name!r} was not built by a registered operator, so its backward formula is "
                f"unknown; build the workload from solkit.ops (registered operators: {', '.join(REGISTRY)})"
            )
        parts.append((backward(node), count))
    return Workload.of(f"{w.name} backward", tuple(parts))


@checked_call
def training_step(forward: Workload) -> Workload:
    """Forward then backward (operators in reverse order); model FLOPs are 3x the forward's."""
    w = as_workload(forward, "forward")
    return Workload.of(f"{w.name} + backward", ((w, 1), (backward(w), 1)))
