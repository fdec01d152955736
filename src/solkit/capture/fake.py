"""A program's tensors as fake tensors: real, meta or another mode's fake tensors become this capture's, nothing at the
real size is allocated, and the modules and optimizers the function reaches hold fakes while it runs.

Found: the function itself or its ``__self__`` (a module's forward), modules, optimizers and tensors in its arguments
(lists, tuples and dicts too), and in its closure. Each distinct tensor becomes one fake of the same shape, strides,
dtype and ``requires_grad`` (so tied weights stay tied), on the CPU (``functions`` gives them CUDA's semantics); a
Parameter stays a Parameter. NB: storage shared between different tensors (views of one buffer) is not kept.
Everything is put back when the capture ends.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

__all__ = ["Faked", "fake_program"]


@dataclass
class Faked:
    """The fake stand-ins of one program and how to put the real objects back."""

    mode: Any
    memo: dict[int, Any] = field(default_factory=dict)  # id(real tensor) -> its fake
    keep: list[Any] = field(default_factory=list)  # the real tensors, alive while their ids are keys
    restore: list[Callable[[], None]] = field(default_factory=list)
    modules: list[Any] = field(default_factory=list)  # the root modules found
    optimizers: list[Any] = field(default_factory=list)

    def tensor(self, t: Any) -> Any:
        """The fake of ``t`` (made once per distinct tensor)."""
        hit = self.memo.get(id(t))
        if hit is not None:
            return hit
        with self.mode:
            f = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="cpu")
        if isinstance(t, torch.nn.Parameter):
            f = torch.nn.Parameter(f, requires_grad=t.requires_grad)
        elif t.requires_grad:
            f.requires_grad_(True)
        self.memo[id(t)] = f
        self.keep.append(t)
        return f

    def value(self, v: Any) -> Any:
        """An argument with its tensors faked (modules and optimizers faked in place)."""
        if isinstance(v, torch.Tensor):
            return self.tensor(v)
        if isinstance(v, torch.nn.Module):
            self.module(v)
            return v
        if isinstance(v, torch.optim.Optimizer):
            self.optimizer(v)
            return v
        if isinstance(v, (list, tuple)):
            items = [self.value(x) for x in v]
            return type(v)(*items) if hasattr(v, "_fields") else type(v)(items)
        if isinstance(v, dict):
            return type(v)((k, self.value(x)) for k, x in v.items())
        return v

    def module(self, root: Any) -> None:
        """Swap the parameters and buffers of ``root`` and its submodules for fakes (once per module)."""
        if any(root is m for m in self.modules):
            return
        self.modules.append(root)
        for m in root.modules():
            for table in (m._parameters, m._buffers):
                for name, t in list(table.items()):
                    if t is None or (isinstance(t, torch.Tensor) and id(t) in self.memo and self.memo[id(t)] is t):
                        continue
                    table[name] = self.tensor(t)
                    self.restore.append(functools.partial(table.__setitem__, name, t))

    def optimizer(self, opt: Any) -> None:
        """Point an optimizer's groups and state at the fakes of its parameters."""
        if any(opt is o for o in self.optimizers):
            return
        self.optimizers.append(opt)
        groups = [list(g["params"]) for g in opt.param_groups]
        state = opt.state

        def back() -> None:
            for g, params in zip(opt.param_groups, groups):
                g["params"] = params
            opt.state = state

        self.restore.append(back)  # registered before anything changes: a failure below is undone too
        for g in opt.param_groups:
            g["params"] = [self.tensor(p) for p in g["params"]]
        faked_state = copy.copy(state)  # the same kind of mapping (a torch optimizer's is a defaultdict(dict))
        faked_state.clear()
        faked_state.update({self.tensor(p): {k: self.value(v) for k, v in s.items()} for p, s in state.items()})
        opt.state = faked_state

    def undo(self) -> None:
        """Put every real tensor back where it was."""
        for fn in reversed(self.restore):
            fn()
        self.restore.clear()


def _cells(fn: Any) -> list[Any]:
    """The closure cells of ``fn`` (a partial's function's too)."""
    inner = fn.func if isinstance(fn, functools.partial) else fn
    inner = getattr(inner, "__func__", inner)
    return list(getattr(inner, "__closure__", None) or ())


def fake_program(faked: Faked, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...],
                                                                                            dict[str, Any]]:
    """Fake what ``fn`` reaches (itself, its ``__self__``, a partial's arguments, its closure: cells holding tensors are
    rewritten while it runs) into ``faked`` (whose ``undo`` puts back all it changed, a failure part way included);
    ``fn``'s arguments with their tensors faked."""
    for thing in (fn, getattr(fn, "__self__", None), getattr(getattr(fn, "func", None), "__self__", None)):
        if isinstance(thing, (torch.nn.Module, torch.optim.Optimizer)):
            faked.value(thing)
    if isinstance(fn, functools.partial):
        for thing in (*fn.args, *fn.keywords.values()):
            if isinstance(thing, (torch.nn.Module, torch.optim.Optimizer)):
                faked.value(thing)
    for cell in _cells(fn):
        try:
            held = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        new = faked.value(held)
        if new is not held:
            cell.cell_contents = new
            faked.restore.append(functools.partial(setattr, cell, "cell_contents", held))
    fargs = tuple(faked.value(a) for a in args)
    fkwargs = {k: faked.value(v) for k, v in kwargs.items()}
    return fargs, fkwargs
