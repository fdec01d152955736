"""``Ranking``: a kernel's configs ordered by predicted time for one shape, with the reasons some cannot launch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from .._display import fmt_seconds, fmt_value, html_table, whole
from ..errors import ArgumentTypeError, ShapeError

__all__ = ["Ranking"]

#: the model's parts a ranking shows per config (where the kernel's model has them)
PARTS = ("programs", "waves", "occupancy", "k_steps", "key_blocks", "chunks", "smem", "regs", "dram_bytes")
#: the rows' keys in the CLI's JSON naming scheme (times end in _s, bytes in _bytes)
_JSON_KEYS = {"seconds": "predicted_s", "smem": "shared_memory_bytes", "regs": "registers_per_thread"}


@dataclass(frozen=True, eq=False)
class Ranking:
    """A kernel's configs for one shape, with the predicted seconds of each (``seconds``, in the order given).

    ``seconds[i]`` is NaN exactly where config ``i`` cannot launch; ``reasons[i]`` then says why (with the numbers),
    else it is None. ``order`` lists the launchable configs fastest first; ``best`` is the first of them.
    """

    kernel: str
    gpu: str
    dtype: str
    shape: Mapping[str, Any]
    configs: tuple[Mapping[str, int], ...]  # each config as checked, with the defaults filled in
    given: tuple[Any, ...]  # the configs as the caller passed them (dicts or triton.Config objects)
    seconds: np.ndarray
    reasons: tuple[str | None, ...]
    parts: Mapping[str, np.ndarray]
    calibrated: bool
    source: str

    @property
    def order(self) -> np.ndarray:
        """Indices of the configs that can launch, fastest predicted first (ties keep the given order)."""
        ok = np.flatnonzero(np.isfinite(self.seconds))
        return ok[np.argsort(self.seconds[ok], kind="stable")]

    @property
    def launchable(self) -> int:
        """How many configs can launch."""
        return int(np.isfinite(self.seconds).sum())

    @property
    def best(self) -> Mapping[str, int]:
        """The config predicted fastest (as checked, defaults filled in); ``ShapeError`` if none can launch."""
        return self.configs[self._best_index()]

    @property
    def best_seconds(self) -> float:
        """The predicted seconds of ``best``."""
        return float(self.seconds[self._best_index()])

    def _best_index(self) -> int:
        order = self.order
        if not len(order):
            raise ShapeError(f"none of the {len(self.configs)} configs can launch on the {self.gpu}: "
                             f"{self.reasons[0]}")
        return int(order[0])

    def _count(self, keep: Any) -> int:
        """How many configs ``keep`` asks for: a share in (0, 1] of the launchable ones (rounded up), or a count >= 1."""
        if isinstance(keep, bool) or not isinstance(keep, (int, float, np.integer, np.floating)):
            raise ArgumentTypeError(f"keep must be a share in (0, 1] or a whole count >= 1, got {keep!r}")
        k = float(keep)
        if not math.isfinite(k) or k <= 0:
            raise ShapeError(f"keep must be a share in (0, 1] or a whole count >= 1, got {keep!r}")
        if k <= 1 and not isinstance(keep, (int, np.integer)):
            return max(1, math.ceil(k * self.launchable))
        if not k.is_integer():
            raise ShapeError(f"keep must be a share in (0, 1] or a whole count >= 1, got {keep!r}")
        return int(k)

    def top(self, keep: Any = 0.25) -> np.ndarray:
        """Indices of the fastest ``keep`` configs (a share of the launchable ones, rounded up, or a count)."""
        return self.order[: self._count(keep)]

    def prune(self, keep: Any = 0.25) -> list[Any]:
        """The fastest ``keep`` configs (a share in (0, 1] of those that can launch, rounded up; or a count),
        fastest first, as the caller gave them (a ``triton.Config`` stays one): what an autotuner should time.
        ``ShapeError`` if none can launch (an autotuner handed no config fails far from the cause)."""
        self._best_index()
        return [self.given[i] for i in self.top(keep)]

    def rows(self) -> list[dict[str, Any]]:
        """One row per config in the given order: its keys, predicted seconds, rank (1 = fastest), reason, parts."""
        rank = np.zeros(len(self.configs), int)
        rank[self.order] = np.arange(1, len(self.order) + 1)
        out = []
        for i, config in enumerate(self.configs):
            row: dict[str, Any] = {**config, "seconds": float(self.seconds[i]), "rank": int(rank[i]) or None,
                                   "reason": self.reasons[i]}
            for name in PARTS:
                if name in self.parts:
                    row[name] = float(np.asarray(self.parts[name])[i])
            out.append(row)
        return out

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per config in the given order (pandas imported only here)."""
        from .._optional import require_pandas

        pd = require_pandas()
        return pd.DataFrame(self.rows())

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """JSON-ready, in the CLI's naming scheme: the kernel, GPU, shape, the configs fastest first (``top`` of them:
        their keys, ``predicted_s``, rank and the model's parts), then those that cannot launch with their reasons."""
        rows = [{_JSON_KEYS.get(k, k): whole(v) for k, v in r.items()} for r in self.rows()]
        ranked = [rows[i] for i in (self.order if top is None else self.order[:top])]
        return {"kernel": self.kernel, "gpu": self.gpu, "dtype": self.dtype,
                "shape": {k: whole(v) for k, v in self.shape.items()},
                "calibrated": self.calibrated, "source": self.source, "n_configs": len(self.configs),
                "n_launchable": self.launchable, "ranked": ranked,
                "cannot_launch": [{**r, "predicted_s": None} for r in rows if r["reason"] is not None]}

    def _label(self, config: Mapping[str, int]) -> str:
        return " ".join(f"{k}={v}" for k, v in config.items())

    def report(self, top: int = 10) -> str:
        """A text table of the ``top`` fastest configs, then up to ``top`` of the configs that cannot launch (why)."""
        shape = ", ".join(f"{k}={fmt_value(v)}" for k, v in self.shape.items())
        lines = [f"{self.kernel} on {self.gpu} ({self.dtype}), {shape}: {len(self.configs)} configs, "
                 f"{self.launchable} can launch" + ("" if self.calibrated else f" ({self.source})")]
        for r, i in enumerate(self.order[:top], 1):
            extra = ", ".join(f"{n} {fmt_value(float(np.asarray(self.parts[n])[i]))}" for n in ("waves", "occupancy")
                              if n in self.parts)
            lines.append(f"{r:>4}. {fmt_seconds(self.seconds[i]):>10}  {self._label(self.configs[i])}  ({extra})")
        refused = [i for i, why in enumerate(self.reasons) if why is not None]
        for i in refused[:top]:
            lines.append(f"   -  cannot launch: {self._label(self.configs[i])}: {self.reasons[i]}")
        if len(refused) > top:
            lines.append(f"   -  and {len(refused) - top} more that cannot launch (to_frame() or --json lists them)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        shape = ", ".join(f"{k}={fmt_value(v)}" for k, v in self.shape.items())
        best = f", best {fmt_seconds(self.best_seconds)} {self._label(self.best)}" if self.launchable else ""
        return (f"Ranking({self.kernel} on {self.gpu}, {shape}: {len(self.configs)} configs, "
                f"{self.launchable} can launch{best})")

    def _repr_html_(self) -> str:
        keys = list(self.configs[0]) if self.configs else []
        rows = [[r["rank"] or "-", *(r[k] for k in keys), fmt_seconds(r["seconds"]) if r["rank"] else "-",
                 r["reason"] or ""] for r in sorted(self.rows(), key=lambda r: (r["rank"] is None, r["rank"] or 0))]
        shape = ", ".join(f"{k}={fmt_value(v)}" for k, v in self.shape.items())
        return html_table(["rank", *keys, "predicted", "cannot launch"], rows,
                          f"{self.kernel} on {self.gpu} ({self.dtype}), {shape}")
