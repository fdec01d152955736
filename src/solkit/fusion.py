"""Set two variants of an operator side by side: bytes, kernels and T_SOL saved.

``compare(baseline, variant, gpu)`` answers "what does fusing (or a layout change, or flash
attention) buy on this GPU?" with the compulsory-traffic figures and the T_SOL ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._display import html_table, plain
from ._validate import as_result
from .hardware import as_gpu
from .sol import roofline
from .workload import Workload, as_workload

__all__ = ["Comparison", "compare"]


@dataclass(frozen=True)
class Comparison:
    """Baseline vs variant on one GPU. Fractions are of the baseline; ``speedup`` = T_SOL ratio."""

    baseline: str
    variant: str
    gpu: str
    bytes_baseline: Any
    bytes_variant: Any
    bytes_read_baseline: Any
    bytes_read_variant: Any
    kernels_baseline: int
    kernels_variant: int
    t_sol_baseline: Any
    t_sol_variant: Any
    flops_baseline: Any
    flops_variant: Any

    @property
    def kernels_saved(self) -> int:
        """Launches the variant saves."""
        return self.kernels_baseline - self.kernels_variant

    @property
    def bytes_saved(self) -> Any:
        """DRAM bytes the variant saves (negative: it moves more)."""
        return as_result(np.asarray(self.bytes_baseline) - np.asarray(self.bytes_variant))

    @property
    def bytes_saved_fraction(self) -> Any:
        """bytes_saved / bytes_baseline."""
        return as_result(np.asarray(self.bytes_saved) / np.asarray(self.bytes_baseline))

    @property
    def bytes_read_saved_fraction(self) -> Any:
        """The share of the baseline's DRAM reads the variant saves."""
        return as_result(1.0 - np.asarray(self.bytes_read_variant) / np.asarray(self.bytes_read_baseline))

    @property
    def speedup(self) -> Any:
        """T_SOL ratio baseline / variant (the bound's speed-up; > 1: the variant is faster)."""
        return as_result(np.asarray(self.t_sol_baseline) / np.asarray(self.t_sol_variant))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        out = {k: plain(v) for k, v in self.__dict__.items()}
        for name in ("kernels_saved", "bytes_saved", "bytes_saved_fraction", "bytes_read_saved_fraction", "speedup"):
            out[name] = plain(getattr(self, name))
        return out

    def __repr__(self) -> str:
        return f"Comparison({self})"

    def _repr_html_(self) -> str:
        if np.ndim(self.speedup):
            return f"<p>{self}</p>"
        rows = [
            (self.baseline, self.kernels_baseline, self.bytes_baseline / 1e6, self.flops_baseline / 1e9, self.t_sol_baseline * 1e6),
            (self.variant, self.kernels_variant, self.bytes_variant / 1e6, self.flops_variant / 1e9, self.t_sol_variant * 1e6),
        ]
        caption = (f"on {self.gpu}: {100 * self.bytes_saved_fraction:.1f}% of the bytes saved, "
                   f"T_SOL ratio {self.speedup:.2f}x")
        return html_table(("variant", "kernels", "MB", "model GFLOP", "T_SOL us"), rows, caption)

    def __str__(self) -> str:
        if np.ndim(self.speedup):
            return f"Comparison({self.baseline!r} -> {self.variant!r} on {self.gpu}, shape {np.shape(self.speedup)})"
        return (
            f"{self.baseline} -> {self.variant} on {self.gpu}: bytes {self.bytes_baseline:.4g} -> "
            f"{self.bytes_variant:.4g} ({-100 * self.bytes_saved_fraction:+.1f}%), kernels "
            f"{self.kernels_baseline} -> {self.kernels_variant}, T_SOL {self.t_sol_baseline * 1e6:.2f} us -> "
            f"{self.t_sol_variant * 1e6:.2f} us ({self.speedup:.2f}x)"
        )


def compare(baseline: Workload, variant: Workload, gpu: Any) -> Comparison:
    """Compare two workloads that do the same job (e.g. unfused vs fused) on ``gpu``."""
    baseline = as_workload(baseline, "baseline")
    variant = as_workload(variant, "variant")
    g = as_gpu(gpu)
    rb, rv = roofline(baseline, g), roofline(variant, g)
    return Comparison(
        baseline=baseline.name,
        variant=variant.name,
        gpu=g.name,
        bytes_baseline=rb.bytes,
        bytes_variant=rv.bytes,
        bytes_read_baseline=as_result(baseline.bytes_read),
        bytes_read_variant=as_result(variant.bytes_read),
        kernels_baseline=len(baseline.kernels),
        kernels_variant=len(variant.kernels),
        t_sol_baseline=rb.t_sol,
        t_sol_variant=rv.t_sol,
        flops_baseline=rb.flops,
        flops_variant=rv.flops,
    )
