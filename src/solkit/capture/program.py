"""A captured program's recipe (what ``predict`` and the calibration read of a program), its coverage and memory.

``CapturedProgram`` is the Workload's ``recipe`` (``workload.Program``; ``program_workload`` is the one place that puts
it there): ``kernels`` "eager" (one kernel per ATen kernel call), ``training`` (the autograd engine or an
optimizer ran), ``layers`` (the repeated layers run: what the host's per-layer time counts), ``preamble`` (a Hugging
Face model runs Python before its first launch), ``params``, and ``training_step`` (a program that knows how to
rebuild itself as a step, such as ``hf_model``'s forward; a plain capture is already the step it ran).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..errors import OptionError
from ..workload import HostCalls, Node, Workload

__all__ = ["Coverage", "CaptureMemory", "CapturedProgram", "program_workload", "SOURCE"]

#: how a captured model says where its counts come from (``hf_model(...).source``)
SOURCE = "captured"


@dataclass(frozen=True)
class Coverage:
    """How much of a captured program the registry models: kernel calls and bytes mapped, and the ATen ops it does not.

    An unmapped call stays in the Workload as an unmodeled kernel (its tensors' bytes, no FLOPs), never dropped.
    """

    calls: int  # calls that launch a kernel
    mapped: int  # of them, mapped to a registered operator
    bytes: float  # DRAM bytes of every call (unmodeled ones: inputs read, outputs written)
    mapped_bytes: float
    unmodeled: tuple[tuple[str, int], ...]  # (ATen op, calls), most calls first

    @property
    def fraction(self) -> float:
        """Mapped calls / calls (1.0 for a program of no calls)."""
        return self.mapped / self.calls if self.calls else 1.0

    @property
    def byte_fraction(self) -> float:
        """Bytes of mapped calls / all bytes (1.0 when there are none)."""
        return self.mapped_bytes / self.bytes if self.bytes else 1.0

    def __str__(self) -> str:
        top = ", ".join(f"{op} x{n}" for op, n in self.unmodeled[:6])
        more = "" if len(self.unmodeled) <= 6 else f", ... {len(self.unmodeled) - 6} more"
        return (f"coverage {_floor_pct(self.fraction)} of {self.calls:,} kernel calls, {_floor_pct(self.byte_fraction)} "
                f"of bytes" + (f"; unmodeled: {top}{more}" if self.unmodeled else ""))


def _floor_pct(x: float) -> str:
    """A share as a percentage to 0.1, rounded down: only a whole coverage reads 100.0%."""
    return f"{math.floor(x * 1000) / 10:.1f}%"


@dataclass(frozen=True)
class CaptureMemory:
    """Live tensor bytes at the program's peak (allocation and free order; each storage rounded up to the CUDA caching
    allocator's 512-byte blocks), split by what the storages hold; ``activations`` is everything else live at the
    peak (saved tensors, temporaries, inputs). NB: no CUDA context, workspaces or fragmentation."""

    parameters: int
    gradients: int
    optimizer_states: int
    activations: int
    peak: int
    capacity: Optional[float] = None  # the GPU's memory (bytes), when one was given
    fits: Optional[bool] = None  # peak <= capacity

    @property
    def total(self) -> int:
        """The peak (the sum of the four kinds), as ``MemoryFootprint.total``."""
        return self.peak

    @property
    def weights(self) -> int:
        """The parameters' bytes, as ``MemoryFootprint.weights``."""
        return self.parameters

    def __repr__(self) -> str:
        gb = 1e9
        return (f"CaptureMemory(parameters {self.parameters / gb:.3g} GB, gradients {self.gradients / gb:.3g} GB, "
                f"optimizer_states {self.optimizer_states / gb:.3g} GB, activations {self.activations / gb:.3g} GB, "
                f"peak {self.peak / gb:.3g} GB"
                + ("" if self.capacity is None else f"; {'fits' if self.fits else 'does NOT fit'} in "
                   f"{self.capacity / gb:.3g} GB") + ")")


@dataclass(frozen=True)
class CapturedProgram:
    """How a captured Workload was built (the module docstring): the program protocol, coverage, memory, syncs."""

    name: str
    training: bool
    layers: int
    preamble: bool
    params: int
    coverage: Coverage
    memory: CaptureMemory
    syncs: int  # device-to-host reads recorded as host stalls
    notes: tuple[str, ...] = ()  # what the counts assume
    stalls: tuple[int, ...] = ()  # the kernel calls (in launch order) each stall comes before
    kernels: str = "eager"
    source: str = SOURCE
    silent_calls: int = 0  # ATen calls that launched nothing (views, metadata, allocations)
    module_calls: int = 0  # module forwards run
    host_ops: tuple[tuple[str, int], ...] = ()  # (host key, calls) of the launching calls (capture.host_keys)
    backward_launches: float = 0.0  # launches the autograd engine issued
    after_launches: float = 0.0  # launches outside the autograd engine after its first (the optimizer's step)
    backward_silent: int = 0  # of silent_calls: those the autograd engine ran
    after_silent: int = 0  # of silent_calls: those outside the autograd engine after its first
    step: Optional[Callable[..., Workload]] = field(default=None, compare=False, repr=False)

    @property
    def world(self) -> int:
        """One GPU: a captured program is what one process ran."""
        return 1

    @property
    def host_calls(self) -> HostCalls:
        """The host work counted beyond the launches: ATen calls that launch nothing, module forwards, the launching
        calls by host key."""
        return HostCalls(self.silent_calls, self.module_calls, self.host_ops, self.backward_launches,
                         self.after_launches, self.backward_silent, self.after_silent)

    def training_step(self, optimizer: str, amp: Any, microbatches: int, checkpointing: bool, split: Any) -> Workload:
        """The training step of this program (``models.training_step`` of a captured forward), on one GPU."""
        if split.parallel:
            raise OptionError(f"{self.name!r} is a captured program: a parallel split (dp, tp, pp, ep, zero) is modelled "
                              "for the closed-form Transformer forwards only; capture one GPU's share of the step itself")
        if self.step is None:
            raise OptionError(f"{self.name!r} was captured as it ran (training={self.training}); a plain capture cannot "
                              "rebuild itself as a step: capture the step itself, sk.capture(step_fn, ...), with its "
                              "loss.backward() and optimizer.step()")
        return self.step(optimizer, amp, microbatches, checkpointing)


def program_workload(name: str, parts: tuple[tuple[Node, int], ...], recipe: CapturedProgram) -> Workload:
    """The captured program's Workload: its parts in launch order, the recipe riding on it."""
    return Workload.of(name, parts, recipe=recipe)
