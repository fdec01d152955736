"""Real profiles joined to their speed of light: ``load_profile`` (torch.profiler Chrome traces, Nsight Compute CSV).

Layers: ``_read`` (files, formats, the ``KernelRecord``), ``chrome`` and ``ncu`` (parsers),
``timeline`` (kernel, span, idle time, gaps), ``profile`` (``Profile``: kernels, calls, aggregates; each op
call mapped by the registry's ATen adapters, ``solkit.ops.aten``, which capture shares), ``report`` (text, HTML,
dict, frame) and ``measure`` (run a function under torch.profiler; needs torch).
"""

from __future__ import annotations

from .measure import measure
from .probe import host_probe
from .profile import L2_RESIDENT, Profile, ProfiledCall, ProfileKernel, load_profile

__all__ = ["load_profile", "measure", "host_probe", "Profile", "ProfileKernel", "ProfiledCall", "L2_RESIDENT"]
