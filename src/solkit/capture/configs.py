"""``from_hf_config``: the closed form of a Hugging Face config where solkit has one, else the model captured.

The closed form (``models.hf.closed_form``: a ``Transformer``) is the fast, vectorized path for sweeps and split
searches; a config it does not model (``NotModelledError``: another family, or a key such as a mixture of experts
outside Mixtral or alternating attention layers) is built by transformers' own modeling code on the meta device and
its programs captured (``capture.hf.hf_model``: a ``CapturedModel``, with the same methods). ``m.source`` says
which: "captured", or the closed form's citation of the config; a captured model's first note says why.
"""

from __future__ import annotations

from typing import Any, Optional

from .._optional import require_torch, require_transformers
from ..errors import NotModelledError, OptionalDependencyError
from ..models.hf import closed_form
from .._validate import checked_call

__all__ = ["from_hf_config"]


@checked_call
def from_hf_config(config: Any, name: Optional[str] = None) -> Any:
    """A model from a Hugging Face config (a dict, a ``config.json`` path or folder, or a transformers config): a
    ``Transformer`` where the closed form models it, else a ``CapturedModel`` (needs torch and transformers)."""
    to_dict = getattr(config, "to_dict", None)
    readable = dict(to_dict()) if callable(to_dict) and hasattr(config, "model_type") else config
    try:
        return closed_form(readable, name)
    except NotModelledError as why:
        refused = str(why)
    try:
        require_torch("capture")
        require_transformers()
    except OptionalDependencyError as missing:
        raise OptionalDependencyError(f"{refused}; capturing it from transformers' own modeling code needs torch and "
                                      f"transformers ({missing})") from None
    from .hf import hf_model

    model = hf_model(config, name)
    model.notes = (f"no closed form: {refused}", *model.notes)
    return model
