"""Check ``solkit.measure`` on a real GPU: profile a small bf16 MLP block and print its report and figures as JSON.

    PYTHONPATH=src python benchmarks/profiling/measure_check.py [OUT_DIR]
"""

from __future__ import annotations

import json
import sys

import torch

import solkit as sk


def block(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """y = gelu(x @ w1) @ w2 + x."""
    return torch.nn.functional.gelu(x @ w1) @ w2 + x


def main() -> int:
    dev = torch.device("cuda")
    x = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    w1 = torch.randn(4096, 14336, device=dev, dtype=torch.bfloat16)
    w2 = torch.randn(14336, 4096, device=dev, dtype=torch.bfloat16)
    trace = f"{sys.argv[1]}/measure_block.json" if len(sys.argv) > 1 else None
    p = sk.measure(block, x, w1, w2, gpu="h200", trace=trace)
    print(p)
    print(json.dumps({"kernels": len(p.kernels), "kernel_seconds": p.kernel_seconds, "coverage": p.coverage,
                      "flops": p.flops, "sol_seconds": p.sol_seconds, "mfu": p.mfu,
                      "groups": [(r["group"], r["measured_s"], r["t_sol_s"]) for r in p.groups()]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
