"""The records of a profile: each measured kernel (``ProfileKernel``) and each op call with its bound (``ProfiledCall``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..workload import Workload

__all__ = ["L2_RESIDENT", "ProfileKernel", "ProfiledCall"]

#: the label of a call measured below its DRAM-bound T_SOL
L2_RESIDENT = "faster than DRAM SOL (likely L2-resident)"


@dataclass(frozen=True, slots=True)
class ProfileKernel:
    """One measured GPU kernel and the solkit workload of the op call that launched it (shared by its kernels)."""

    name: str
    start: float  # seconds, the trace's clock
    seconds: float
    stream: int
    op: Optional[str]  # the innermost ATen op that launched it
    shapes: tuple[Any, ...]
    dtypes: tuple[str, ...]
    workload: Optional[Workload]  # None when the call is not modelled (see reason)
    reason: str  # the operator it maps to, or why it does not
    measured_bytes: Optional[float]  # DRAM bytes (Nsight Compute only)
    call: int  # index into Profile.calls
    backward: bool


@dataclass(frozen=True, slots=True)
class ProfiledCall:
    """One op call: its kernels' measured time, its workload, bound and calibrated prediction."""

    op: str  # ATen name (or the kernel's own name when no op launched it)
    operator: Optional[str]  # the registered operator it maps to
    backward: bool
    shapes: tuple[Any, ...]
    dtypes: tuple[str, ...]
    kernels: tuple[int, ...]  # indices into Profile.kernels
    seconds: float  # sum of its kernels' durations
    workload: Optional[Workload]
    reason: str
    t_sol: Optional[float]
    predicted: Optional[float]
    notes: tuple[str, ...] = ()
    measured_bytes: Optional[float] = None  # DRAM bytes of its kernels (Nsight Compute), None elsewhere

    @property
    def group(self) -> str:
        """The report's row: the operator (and "backward"), or the unmapped ATen op's own name."""
        if self.operator is None:
            return f"{self.op} (unmodeled)"
        return f"{self.operator} backward" if self.backward else self.operator

    @property
    def sol_fraction(self) -> Optional[float]:
        """T_SOL / measured time; None when unmapped or faster than the DRAM bound (see ``verdict``)."""
        if self.t_sol is None or self.t_sol > self.seconds:
            return None
        return self.t_sol / self.seconds

    @property
    def verdict(self) -> str:
        """How the call stands against its bound, in words."""
        if self.t_sol is None:
            return self.reason
        if self.t_sol > self.seconds:
            return L2_RESIDENT
        return f"{self.t_sol / self.seconds:.0%} of SOL"
