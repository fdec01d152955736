"""solkit.tune: tile-level models of tunable Triton kernels: which configs can launch, and which run fastest.

    from solkit import tune
    r = tune.rank("triton_matmul", tune.triton_matmul_space(), gpu="h200", m=4096, n=4096, k=4096)
    r.best, r.seconds, r.reasons, r.prune(0.25)

Kernels: "triton_matmul" (Triton's tutorial GEMM), "triton_softmax", "triton_layernorm" (the tutorials' row kernels),
"triton_flash_attention" (the tutorial's fused attention forward). ``early_config_prune`` plugs into
``triton.autotune(prune_configs_by={"early_config_prune": ...})``.
"""

from __future__ import annotations

from .._dir import public_dir
from .api import early_config_prune, rank, triton_attention_space, triton_matmul_space, triton_row_space
from .configs import KERNELS
from .ranking import Ranking

__all__ = ["rank", "Ranking", "early_config_prune", "triton_matmul_space", "triton_row_space",
           "triton_attention_space", "KERNELS"]


def __dir__() -> list[str]:
    """``__all__``, the dunders and the submodules loaded."""
    return public_dir(globals(), __all__)
