"""A collective's expected time over the links: latency, hops and bus bytes at the measured link efficiency."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._num import result
from ..comm import steps_at_two
from ..errors import ArgumentTypeError
from ..hardware.parameters import Calibration
from ..sol import link_seconds
from ..workload import Kernel
from .._validate import checked_call

__all__ = ["DEFAULT_LINK_EFFICIENCY", "DEFAULT_LINK_LATENCY", "CHUNK_ALIGNMENT", "MISALIGNED_FROM", "misaligned_chunk",
           "collective_seconds", "link_note"]

#: a collective on a GPU whose spec measured none: the link's full per-direction bandwidth, no latency
DEFAULT_LINK_EFFICIENCY = 1.0
DEFAULT_LINK_LATENCY = 0.0
#: bytes a GPU's chunk of a collective must be a multiple of for NCCL's 16-byte copies (``link_misaligned`` otherwise),
#: from a buffer of ``MISALIGNED_FROM`` bytes: on 2 H200s, all-gathers of 16 MiB and more whose chunk was a multiple of
#: 8 bytes but not 16 took 1.4-1.7x the aligned time, all-to-alls 1.7-2.4x, reduce-scatters 1.2-1.3x in bf16 and
#: 1.0-1.1x in fp32; all-reduces none; below 16 MiB 0.9-1.2x (data/h200x2_collectives_misaligned.json)
CHUNK_ALIGNMENT = 16
MISALIGNED_FROM = 1 << 24


@checked_call
def misaligned_chunk(nbytes: Any, n_gpus: Any) -> Any:
    """Whether a collective of ``nbytes`` over ``n_gpus`` pays ``link_misaligned``: its buffer of ``MISALIGNED_FROM`` bytes
    or more, a GPU's chunk (nbytes / n_gpus) not a multiple of ``CHUNK_ALIGNMENT``."""
    chunk = np.asarray(nbytes) / np.asarray(n_gpus)
    return (np.mod(chunk, CHUNK_ALIGNMENT) != 0) & (np.asarray(nbytes) >= MISALIGNED_FROM)


@checked_call
def collective_seconds(k: Kernel, system: Any, cal: Calibration) -> Any:
    """latency + hops beyond a 2-GPU ring's x hop latency + max(level bytes / (efficiency x level bandwidth)).

    The latency and efficiency are measured per collective on 2 GPUs of one node (``link_latency``,
    ``link_efficiency``; the efficiency times ``link_misaligned`` where ``misaligned_chunk``); each further step costs ``link_hop``, and each step that crosses between nodes
    (``Link.network_hops``) ``network_hop`` instead (NB: NCCL's own figures; 2 GPUs cannot fit them, ``link_hop`` is
    fitted once 4- or 8-GPU collectives are measured, ``calibration.collectives.fit_hops``). The network level
    uses the collective's link efficiency (NB: no multi-node measurement here).
    """
    link = k.link
    if link is None:
        raise ArgumentTypeError(f"k must be a collective kernel (with a Link), got {k.name!r}, a {k.kind} kernel")
    eff: Any = cal.link_efficiency.get(link.collective, DEFAULT_LINK_EFFICIENCY)
    misaligned = cal.link_misaligned.get(link.collective, 1.0)
    if misaligned != 1.0:  # a GPU's chunk off 16-byte alignment: NCCL's copies lose their 16-byte vectors
        eff = np.where(misaligned_chunk(link.nbytes, link.n_gpus), eff * misaligned, eff)
        eff = float(eff) if np.ndim(eff) == 0 else eff
    latency = cal.link_latency.get(link.collective, DEFAULT_LINK_LATENCY)
    t = link_seconds(k, system, eff)
    g = system.gpus_per_node
    crossing = link.network_hops(g)
    inside = np.maximum(link.hops(g) - steps_at_two(link.collective) - crossing, 0.0)
    body = latency + inside * cal.link_hop + crossing * cal.network_hop + t
    body = np.where(np.asarray(link.n_gpus) > 1, body, 0.0)  # one GPU: nothing to move
    return result(body)


def link_note(system: Any, cal: Calibration) -> str:
    """Where the collectives' figures come from."""
    where = (f"collectives on {system.name} x {system.nodes}: {system.link_bandwidth / 1e9:g} GB/s per GPU per direction "
             f"inside a node")
    if system.network is not None and system.nodes > 1:
        where += f", {system.network_bandwidth / 1e9:g} GB/s per GPU across nodes (network level not calibrated)"
    if not cal.link_efficiency:
        where += "; no collectives measured on this GPU: latency and efficiency defaults"
    return where

