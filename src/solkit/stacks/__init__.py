"""What a software stack does, as observed: library heuristics and eager launch counts, one module per stack.

The predictor's physics is the GPU's; which kernel a library picks for a shape, and how many launches eager
PyTorch issues for a module, are the software's. Those facts were read off profiles and source code of one
stack and live in the module named after it, beside the spec's ``measured.stack`` that records the versions.
Only one stack has been measured: ``torch211`` (PyTorch 2.11 with CUDA 13.0 and cuDNN 9.19, on an H200).
"""

from __future__ import annotations

from . import torch211

__all__ = ["torch211"]
