"""Whole networks composed from ops: transformer layers and models, ResNet-50, training steps.

Each function returns a ``Workload`` (an ordered list of kernels), so ``roofline``, ``predict``,
``mfu`` and ``compare`` apply unchanged. Presets give the published shapes of common models.
"""

from __future__ import annotations

from .resnet import resnet50
from .training import backward, training_step
from .transformer import PRESETS, decoder_layer, preset, transformer

__all__ = ["PRESETS", "backward", "decoder_layer", "preset", "resnet50", "training_step", "transformer"]
