"""Real profiles joined to their speed of light: ``load_profile`` (torch.profiler Chrome traces, Nsight Compute CSV).

Layers: ``_read`` (files, formats, the ``KernelRecord``), ``chrome`` and ``ncu`` (parsers),
``timeline`` (kernel, span, idle time, gaps), ``profile`` (``Profile``: kernels, calls, aggregates; each op
call mapped by the registry's ATen adapters, ``solkit.ops.aten``, which capture shares), ``report`` (text, HTML,
dict, frame) and ``measure`` (run a function under torch.profiler; needs torch).
"""

from __future__ import annotations

from .._dir import public_dir
from .._validate import checked_call
from .measure import measure as _measure
from .probe import host_probe
from .profile import L2_RESIDENT, Profile, ProfiledCall, ProfileKernel, load_profile

#: ``measure`` whose call mistakes (no ``gpu=``, a bad positional call) are ArgumentTypeErrors naming them
measure = checked_call(_measure)

__all__ = ["load_profile", "measure", "host_probe", "Profile", "ProfileKernel", "ProfiledCall", "L2_RESIDENT"]


def __dir__() -> list[str]:
    """``__all__`` (lazy names included), the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
