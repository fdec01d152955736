"""Whole networks: ``Transformer`` architectures (presets, Hugging Face configs), ResNet-50, training steps, memory.

``preset(name)`` returns a ``Transformer``, a typed description of the architecture, and
``from_hf_config(path_or_dict)`` one where solkit's closed form models the config (else the model captured
from transformers' own code, ``solkit.capture``: a ``CapturedModel`` with the same methods); their
``forward``, ``prefill`` and ``decode`` return Workloads (the kernels eager PyTorch or a fused engine runs),
so ``roofline``, ``predict``, ``mfu`` and ``compare`` apply; a Transformer's ``params``, ``kv_cache_bytes``,
``flops_per_token`` and ``memory`` are closed forms.
``training_step(forward)`` is the whole step. ``decoder_layer`` and ``transformer`` compose the
fused ops directly (shapes, no architecture record). The pydantic-based names load on first use
(``import solkit`` stays light).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._dir import public_dir
from .resnet import resnet50
from .training import backward, training_step
from .transformer import decoder_layer, transformer

#: loaded on first use: name -> its module (these import pydantic); ``from_hf_config`` is the one name this facade
#: takes from the layer above (``solkit.capture.configs``: the closed form where solkit has one, else the model captured)
_LAZY = {"Transformer": ".architecture", "from_hf_config": "solkit.capture.configs", "MemoryFootprint": ".footprint",
         "memory": ".footprint", "PRESETS": ".presets", "preset": ".presets", "preset_names": ".presets"}


if TYPE_CHECKING:  # the names loaded on first use, as a type checker sees them
    from .architecture import Transformer as Transformer
    from .footprint import MemoryFootprint as MemoryFootprint
    from .footprint import memory as memory
    from .presets import PRESETS as PRESETS
    from .presets import preset as preset
    from .presets import preset_names as preset_names

    def from_hf_config(config: Any, name: str | None = None) -> Any:
        """solkit.capture.configs.from_hf_config (the layer above: declared here, loaded from there on first use)."""
else:  # hidden from type checkers, which would take any attribute of a module with a __getattr__
    def __getattr__(name: str) -> Any:
        """The architecture record, presets, configs and memory, imported on first use."""
        if name in _LAZY:
            import importlib

            return getattr(importlib.import_module(_LAZY[name], __name__), name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """``__all__`` (lazy names included), the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)


__all__ = ["PRESETS", "MemoryFootprint", "Transformer", "backward", "decoder_layer", "from_hf_config", "memory", "preset",
           "preset_names", "resnet50", "training_step", "transformer"]
