"""When a program's kernels finish, in max-plus algebra: the CPU issuing launches, the compute stream, two NCCL streams.

The state is four clocks (H, M, G, P): the host's (it has issued everything so far at H), the compute
stream's (its last kernel ends at M), the gradient stream's (G: DDP's bucket all-reduces, FSDP's
reduce-scatters) and the prefetch stream's (P: FSDP's all-gathers of the next layer's parameters).
Each launch maps the clocks by a 4x4 max-plus matrix A, new[i] = max_j (A[i][j] + old[j]):

- a kernel on the compute stream, issued after ``host`` seconds of CPU time, running ``body``:
  H' = H + host, M' = max(M, H + host) + body;
- a collective on the gradient stream waits for the compute issued before it (the gradients it
  reduces, an event): G' = max(G, M, H + host) + body;
- a collective on the prefetch stream needs only its issue: P' = max(P, H + host) + body;
- a host sync (``workload.Sync``: ``.item()`` reads a value the GPU computes): H' = max(H, M);
- a join (``workload.Join``: the optimizer needs the reduced gradients; a layer needs its gathered
  parameters): M' = max(M, the joined streams' clocks).

Composing maps is a max-plus matrix product, so a part repeated n times costs log2(n) products
(``power``), and a model of 10**6 layers costs what one layer does. Entries are floats or numpy arrays
of a sweep; -inf marks "no path".
"""

from __future__ import annotations

import math
from typing import Any

from .._num import maximum

__all__ = ["Map", "STREAMS", "IDENTITY", "compose", "power", "launch", "join", "wait", "clocks"]

_NEG = -math.inf
#: the clocks, in order; ``Link.overlap`` names one of the last two ("" runs on the compute stream)
STREAMS = ("host", "compute", "gradients", "prefetch")
_H, _M, _G, _P = range(4)
_N = len(STREAMS)

Map = tuple[tuple[Any, ...], ...]


def _unit(i: int, j: int) -> Any:
    return 0.0 if i == j else _NEG


IDENTITY: Map = tuple(tuple(_unit(i, j) for j in range(_N)) for i in range(_N))


def _max(a: Any, b: Any) -> Any:
    if type(a) is float and a == _NEG:
        return b
    if type(b) is float and b == _NEG:
        return a
    return maximum(a, b)


def _plus(a: Any, b: Any) -> Any:
    if (type(a) is float and a == _NEG) or (type(b) is float and b == _NEG):
        return _NEG
    return a + b


def compose(first: Map, second: Map) -> Map:
    """``first`` then ``second``: the max-plus product second x first."""
    out = []
    for i in range(_N):
        row = second[i]
        cells = []
        for j in range(_N):
            cell: Any = _NEG
            for k in range(_N):
                cell = _max(cell, _plus(row[k], first[k][j]))
            cells.append(cell)
        out.append(tuple(cells))
    return tuple(out)


def power(m: Map, n: int) -> Map:
    """``m`` applied ``n`` times in a row (repeated squaring)."""
    out = IDENTITY
    base = m
    while n:
        if n & 1:
            out = compose(out, base)
        n >>= 1
        if n:
            base = compose(base, base)
    return out


def launch(host: Any, body: Any, stream: str = "compute") -> Map:
    """A kernel issued after ``host`` seconds of CPU time, running ``body`` seconds on ``stream``."""
    rows = [list(r) for r in IDENTITY]
    rows[_H][_H] = host
    s = STREAMS.index(stream)
    rows[s] = [host + body] + [_NEG] * (_N - 1)
    rows[s][s] = body
    if s == _G:  # waits for the compute issued before it
        rows[s][_M] = body
    return tuple(tuple(r) for r in rows)


def join(streams: tuple[str, ...]) -> Map:
    """The compute stream waits for ``streams``."""
    rows = [list(r) for r in IDENTITY]
    for name in streams:
        rows[_M][STREAMS.index(name)] = 0.0
    return tuple(tuple(r) for r in rows)


def wait(stream: str = "compute") -> Map:
    """The host waits for ``stream`` (a device-to-host sync: ``.item()``, a data-dependent shape): H' = max(H, S)."""
    rows = [list(r) for r in IDENTITY]
    rows[_H][STREAMS.index(stream)] = 0.0
    return tuple(tuple(r) for r in rows)


def clocks(m: Map) -> tuple[Any, ...]:
    """The four clocks after ``m``, all starting at 0: (host, compute, gradients, prefetch)."""
    out = []
    for row in m:
        cell: Any = _NEG
        for x in row:
            cell = _max(cell, x)
        out.append(cell)
    return tuple(out)
