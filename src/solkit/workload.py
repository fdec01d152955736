"""``Kernel`` (one launch) and ``Workload`` (an ordered set of kernels).

A kernel records what it executes (matrix FLOPs on tensor cores, vector FLOPs on CUDA
cores), the useful (model) FLOPs among them, and its compulsory DRAM bytes. Every figure is
a float64 numpy array (0-d for scalar shapes) so that a sweep over shapes broadcasts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Optional

import numpy as np

from .errors import ArgumentTypeError, OptionError, ShapeError
from .precision import normalize

__all__ = ["Kernel", "Workload", "GemmDims", "KERNEL_KINDS", "as_workload", "chain"]

#: what a kernel is, for the predictor's efficiency model: GEMMs, implicit-GEMM convolutions,
#: fused attention, elementwise maps, row reductions (norms, softmax), plain copies, gathers
#: (embedding), layout transforms (NCHW <-> NHWC) and im2col unfolds
KERNEL_KINDS: tuple[str, ...] = ("gemm", "conv", "attention", "elementwise", "reduction", "copy", "gather", "layout", "im2col")



def _f64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


@dataclass(frozen=True)
class GemmDims:
    """The problem a GEMM-like kernel solves: ``batch`` products of [m, k] @ [k, n]."""

    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    batch: np.ndarray = field(default_factory=lambda: np.float64(1.0))
    channels: Optional[np.ndarray] = None  # implicit-GEMM conv: input channels per group (k = channels*R*S)

    def __post_init__(self) -> None:
        for name in ("m", "n", "k", "batch"):
            object.__setattr__(self, name, _f64(getattr(self, name)))
        if self.channels is not None:
            object.__setattr__(self, "channels", _f64(self.channels))


@dataclass(frozen=True)
class Kernel:
    """One kernel launch: executed FLOPs by unit, useful FLOPs, DRAM bytes read and written.

    ``op`` names the operator implementation the kernel comes from (the predictor's
    efficiencies may be keyed by it). ``precision`` is the matrix-unit precision (the operands' storage precision for
    elementwise kernels); vector FLOPs are charged at the ``vector_precision`` CUDA-core rate
    (fp32: normalization and activation kernels compute in fp32 whatever they store).
    """

    name: str
    kind: str
    precision: str
    matrix_flops: Any = 0.0
    vector_flops: Any = 0.0
    bytes_read: Any = 0.0
    bytes_written: Any = 0.0
    model_flops: Any = None
    gemm: Optional[GemmDims] = None
    vector_precision: str = "fp32"
    op: str = ""  # the operator that emits it ("layernorm", "matmul", ...); defaults to ``name``
    launches: Any = 1.0  # launches the usual implementation makes (im2col: one per image); T_SOL ignores it

    def __post_init__(self) -> None:
        if not self.op:
            object.__setattr__(self, "op", self.name)
        if self.kind not in KERNEL_KINDS:
            raise OptionError(f"kind must be one of {', '.join(KERNEL_KINDS)}, got {self.kind!r}")
        object.__setattr__(self, "precision", normalize(self.precision, "precision"))
        object.__setattr__(self, "vector_precision", normalize(self.vector_precision, "vector_precision"))
        for name in ("matrix_flops", "vector_flops", "bytes_read", "bytes_written", "launches"):
            try:
                object.__setattr__(self, name, _f64(getattr(self, name)))
            except (TypeError, ValueError):
                raise ArgumentTypeError(f"{name} must be a number or an array of numbers, got {getattr(self, name)!r}") from None
        try:
            useful = self.matrix_flops + self.vector_flops if self.model_flops is None else _f64(self.model_flops)
        except (TypeError, ValueError):
            raise ArgumentTypeError(f"model_flops must be a number or an array of numbers, got {self.model_flops!r}") from None
        object.__setattr__(self, "model_flops", useful)
        # every figure takes the kernel's broadcast shape, so a sweep never mixes 0-d and n-d
        figures = ("matrix_flops", "vector_flops", "bytes_read", "bytes_written", "model_flops")
        try:
            shaped = np.broadcast_arrays(*(getattr(self, f) for f in figures))
        except ValueError:
            shapes = ", ".join(f"{f} {np.shape(getattr(self, f))}" for f in figures)
            raise ShapeError(f"{self.name}: the shape arguments do not broadcast together ({shapes})") from None
        for name, arr in zip(figures, shaped):
            if not np.all(np.isfinite(arr)):
                raise ShapeError(f"{self.name}: {name} is not finite (a shape too large for float64, about 1.8e308)")
            if np.any(arr < 0):
                raise ShapeError(f"{self.name}: {name} must not be negative")
            object.__setattr__(self, name, arr)

    @property
    def executed_flops(self) -> np.ndarray:
        """FLOPs the kernel computes, matrix plus vector."""
        return self.matrix_flops + self.vector_flops

    @property
    def flops(self) -> np.ndarray:
        """Useful (model) FLOPs."""
        return self.model_flops

    @property
    def bytes(self) -> np.ndarray:
        """Compulsory DRAM bytes: read plus written."""
        return self.bytes_read + self.bytes_written

    @property
    def shape(self) -> tuple[int, ...]:
        """Broadcast shape of the kernel's figures."""
        return np.shape(self.bytes_read)

    def renamed(self, name: str) -> "Kernel":
        """The same kernel under another name."""
        return replace(self, name=name)


def _sum(values: Iterable[np.ndarray]) -> np.ndarray:
    """Sum of kernel figures, broadcast together."""
    total = np.float64(0.0)
    for v in values:
        total = total + v
    return _f64(total)


@dataclass(frozen=True)
class Workload:
    """An ordered set of kernels run one after another (an operator, a layer, a model step)."""

    name: str
    kernels: tuple[Kernel, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.kernels, (tuple, list)):
            raise ArgumentTypeError(f"kernels must be a non-empty sequence of Kernel, got {self.kernels!r}")
        kernels = tuple(self.kernels)
        if not kernels or not all(isinstance(k, Kernel) for k in kernels):
            raise ArgumentTypeError(f"kernels must be a non-empty sequence of Kernel, got {self.kernels!r}")
        object.__setattr__(self, "kernels", kernels)

    @property
    def flops(self) -> np.ndarray:
        """Model (useful) FLOPs: what MFU counts."""
        return _sum(k.model_flops for k in self.kernels)

    @property
    def executed_flops(self) -> np.ndarray:
        """FLOPs the kernels execute (>= flops): what HFU and T_SOL use."""
        return _sum(k.executed_flops for k in self.kernels)

    @property
    def matrix_flops(self) -> np.ndarray:
        """Executed FLOPs on matrix units."""
        return _sum(k.matrix_flops for k in self.kernels)

    @property
    def vector_flops(self) -> np.ndarray:
        """Executed FLOPs on vector units."""
        return _sum(k.vector_flops for k in self.kernels)

    @property
    def bytes_read(self) -> np.ndarray:
        """DRAM bytes read, all kernels."""
        return _sum(k.bytes_read for k in self.kernels)

    @property
    def bytes_written(self) -> np.ndarray:
        """DRAM bytes written, all kernels."""
        return _sum(k.bytes_written for k in self.kernels)

    @property
    def bytes(self) -> np.ndarray:
        """DRAM bytes, all kernels."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> np.ndarray:
        """Executed FLOPs per DRAM byte."""
        return self.executed_flops / self.bytes

    @property
    def precision(self) -> str:
        """Precision of the first matrix-unit kernel (else of the first kernel)."""
        for k in self.kernels:
            if k.kind in ("gemm", "conv", "attention"):
                return k.precision
        return self.kernels[0].precision

    @property
    def shape(self) -> tuple[int, ...]:
        """Broadcast shape of the workload's figures."""
        return np.broadcast_shapes(*(k.shape for k in self.kernels))

    def __len__(self) -> int:
        return len(self.kernels)

    def __add__(self, other: "Workload") -> "Workload":
        if not isinstance(other, Workload):
            return NotImplemented
        return Workload(f"{self.name} + {other.name}", self.kernels + other.kernels)

    def renamed(self, name: str, kernels: bool = False) -> "Workload":
        """The same kernels under another name; ``kernels=True`` renames a single-kernel workload's kernel too."""
        if kernels and len(self.kernels) == 1:
            return Workload(name, (self.kernels[0].renamed(name),))
        return Workload(name, self.kernels)

    def _repr_html_(self) -> str:
        from ._display import html_table

        if self.shape:
            return f"<p>{repr(self)}</p>"
        rows = [(k.name, k.kind, k.precision, float(k.model_flops) / 1e9, float(k.executed_flops) / 1e9,
                 float(k.bytes_read) / 1e6, float(k.bytes_written) / 1e6) for k in self.kernels]
        rows.append(("total", "", "", float(self.flops) / 1e9, float(self.executed_flops) / 1e9,
                     float(self.bytes_read) / 1e6, float(self.bytes_written) / 1e6))
        header = ("kernel", "kind", "precision", "model GFLOP", "executed GFLOP", "MB read", "MB written")
        return html_table(header, rows, self.name)

    def __repr__(self) -> str:
        def show(x: np.ndarray) -> str:
            return f"{float(x):.4g}" if np.ndim(x) == 0 else f"array{np.shape(x)}"

        names = ", ".join(k.name for k in self.kernels)
        return (
            f"Workload({self.name!r}, {len(self.kernels)} kernel(s): [{names}], flops={show(self.flops)}, "
            f"executed_flops={show(self.executed_flops)}, bytes={show(self.bytes)})"
        )


def as_workload(w: Any, argument: str = "workload") -> Workload:
    """A Workload from a Workload or a single Kernel; anything else is a type error naming ``argument``."""
    if isinstance(w, Workload):
        return w
    if isinstance(w, Kernel):
        return Workload(w.name, (w,))
    raise ArgumentTypeError(f"{argument} must be a solkit Workload or Kernel, got {type(w).__name__}")


def chain(name: str, *workloads: Workload) -> Workload:
    """Workloads (or kernels) run back to back, as one workload named ``name``."""
    parts = [as_workload(w, f"workloads[{i}]") for i, w in enumerate(workloads)]
    return Workload(name, tuple(k for w in parts for k in w.kernels))
