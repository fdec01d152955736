"""``capture``: a PyTorch callable run on fake tensors, its ATen calls as a solkit Workload.

The function runs once, on fake tensors (``FakeTensorMode``: shapes, dtypes and strides, no data, nothing allocated
at the real size), with the modules, optimizers and tensors it reaches swapped for fakes (``fake``), under CUDA's
semantics (``functions``: autocast, SDPA, foreach optimizers), while ``Recorder`` writes down every ATen call and
``Tracker`` the module each comes from. ``build`` maps the calls through the registry's ATen adapters (the table
profiles read) and holds repeated layers once; ``program_workload`` puts the recipe on the result.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, NamedTuple, Optional

from .._validate import checked_call, choice
from ..errors import ArgumentTypeError
from ..workload import Workload
from .._optional import require_torch
from ..errors import CaptureError
from .host_keys import host_ops
from .program import CaptureMemory, CapturedProgram, program_workload

__all__ = ["capture", "capture_call", "calls", "SYNCS"]

#: what a device-to-host read (``.item()``) becomes: a recorded host stall (its value read as zero) or an error
SYNCS = ("stall", "error")


@checked_call
def capture(fn: Any, /, *args: Any, **kwargs: Any) -> Workload:
    """The Workload of ``fn(*args, **kwargs)`` as eager PyTorch runs it on a GPU, run on fake tensors (see
    ``capture_call`` for the options)."""
    return capture_call(fn, args, kwargs)


def _name_of(fn: Any) -> str:
    """A function's or module's name."""
    if isinstance(fn, require_torch("capture").nn.Module):
        return type(fn).__name__
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__)


def _checked(fn: Any, args: Any, kwargs: Any, syncs: str) -> str:
    """The sync policy, after checking the call's arguments."""
    if not callable(fn):
        raise ArgumentTypeError(f"fn must be a callable (a function or a module), got {type(fn).__name__}")
    if not isinstance(args, (tuple, list)):
        raise ArgumentTypeError(f"args must be a tuple of fn's positional arguments, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ArgumentTypeError(f"kwargs must be a dict of fn's keyword arguments, got {type(kwargs).__name__}")
    return str(choice("syncs", syncs, SYNCS))


#: one capture at a time in the process: a capture patches torch's autocast and installs global module and optimizer
#: hooks while it runs, so a second thread's capture (or its real modules) would see the first's (a reentrant lock:
#: a capture inside a capture's own program, such as hf_model's step, runs in the same thread)
_ONE_AT_A_TIME = threading.RLock()

class _Run(NamedTuple):
    """One run of a program on fake tensors: what the recorder wrote, the modules it knew, the parameters."""

    recorder: Any
    tracker: Any
    params: int
    stepped: bool


def _run(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], policy: str, label: str) -> _Run:
    """Run ``fn`` once on fake tensors under the recorder (the module docstring)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.optim.optimizer import register_optimizer_step_post_hook

    from .fake import fake_program
    from .functions import FunctionMode, cuda_semantics
    from .modules import Tracker
    from .record import Recorder

    from .fake import Faked

    mode = FakeTensorMode()
    recorder = Recorder(policy)
    faked = Faked(mode)
    hooks: list[Any] = []
    stepped: list[Any] = []
    with _ONE_AT_A_TIME:  # torch's autocast, optimizer and module hooks are patched process-wide while a capture runs
        try:
            fargs, fkwargs = fake_program(faked, fn, args, kwargs)
            params = _parameters(faked, recorder, hooks)
            hooks.append(register_optimizer_step_post_hook(lambda opt, a, k: stepped.append(_mark_states(opt,
                                                                                                          recorder))))
            tracker = Tracker(recorder, faked.modules)
            functions = FunctionMode(recorder)
            tracker.functions = functions
            with cuda_semantics(functions), tracker, mode, recorder, functions:
                out = fn(*fargs, **fkwargs)
                recorder.memory.clock += 1  # the program ends: what it returns stays alive
            del out
        except CaptureError:
            raise
        except Exception as exc:
            op, module = recorder.last
            where = f" at {op}" if op else ""
            where += f" in module {module!r}" if module else ""
            raise CaptureError(f"capturing {label!r} failed{where}: {type(exc).__name__}: {exc}") from exc
        finally:
            for h in hooks:
                h.remove()
            faked.undo()  # the caller's modules, optimizers and closures hold their real tensors again, whatever failed
    return _Run(recorder, tracker, params, bool(stepped))


@checked_call
def calls(fn: Any, /, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """The ATen calls ``fn(*args, **kwargs)`` makes on fake tensors, each an ``Event`` (op, trace-form arguments as a
    profiler records them, outputs, backward, module path), in order: what ``capture`` maps."""
    require_torch("capture")
    policy = _checked(fn, args, kwargs, "stall")
    return tuple(_run(fn, tuple(args), dict(kwargs), policy, _name_of(fn)).recorder.events)


@checked_call
def capture_call(fn: Any, args: Any = (), kwargs: Any = None, *, name: Optional[str] = None, syncs: str = "stall",
                 preamble: bool = False, step: Optional[Callable[..., Workload]] = None,
                 notes: tuple[str, ...] = ()) -> Workload:
    """The Workload of ``fn(*args, **kwargs)`` run on fake tensors; its ``recipe`` is the ``CapturedProgram``.

    ``args`` and ``kwargs`` may hold real, meta or fake tensors, modules and optimizers (swapped for fakes while it
    runs; what ``fn`` reaches only through a global is not found: pass it or close over it). ``syncs``: "stall"
    records a device-to-host read (``.item()``) as a host stall, its value read as zero (NB: a branch on it takes
    the zero side), "error" raises a CaptureError there. ``preamble``: the program runs Python before its first
    launch (a Hugging Face model). ``step(optimizer, amp, microbatches, checkpointing)``: how the program rebuilds
    itself as a training step (``models.training_step``). ``notes``: assumptions of the caller, kept on the recipe.
    """
    require_torch("capture")
    policy = _checked(fn, args, kwargs, syncs)
    label = _name_of(fn) if name is None else name
    from .build import build

    run = _run(fn, tuple(args), dict(kwargs or {}), policy, label)
    recorder = run.recorder
    built = build(recorder.events, run.tracker.layer, run.tracker.kinds, recorder.syncs)
    if not built.parts:
        raise CaptureError(f"{label!r} launched no kernel on fake tensors (its ATen calls were views and metadata only)")
    peak, split = recorder.memory.peak()
    memory = CaptureMemory(split.get("parameters", 0), split.get("gradients", 0), split.get("optimizer_states", 0),
                           sum(v for k, v in split.items() if k not in ("parameters", "gradients", "optimizer_states")),
                           peak)
    notes = tuple(dict.fromkeys([*recorder.notes, *built.notes, *notes]))
    if recorder.syncs:
        notes += (f"{len(recorder.syncs)} device-to-host sync(s) recorded as host stalls",)
    training = any(e.backward for e in recorder.events) or run.stepped
    recipe = CapturedProgram(label, training, built.layers, bool(preamble), run.params, built.coverage, memory,
                             len(recorder.syncs), notes, built.stalls, step=step, silent_calls=recorder.silent_calls,
                             module_calls=recorder.module_calls, host_ops=host_ops(recorder.events),
                             backward_launches=built.phases[0], after_launches=built.phases[1],
                             backward_silent=recorder.backward_silent, after_silent=recorder.after_silent)
    return program_workload(label, built.parts, recipe)


def _parameters(faked: Any, recorder: Any, hooks: list[Any]) -> int:
    """The distinct parameters' elements; their storages (and buffers', inputs') noted as alive from the start;
    hooks that mark each accumulated gradient, added to ``hooks`` (removed by the caller, whatever happens)."""
    torch = require_torch("capture")
    seen: dict[int, Any] = {}
    for root in faked.modules:
        for p in root.parameters():
            if id(p) not in seen:
                seen[id(p)] = p
                recorder.memory.track(p, "parameters")
                if p.requires_grad:
                    hooks.append(p.register_post_accumulate_grad_hook(
                        lambda q: recorder.memory.mark(q.grad, "gradients") if q.grad is not None else None))
        for b in root.buffers():
            recorder.memory.track(b, "parameters")
    for t in faked.memo.values():
        if isinstance(t, torch.Tensor) and id(t) not in seen:
            recorder.memory.track(t)
    return sum(int(p.numel()) for p in seen.values())


def _mark_states(opt: Any, recorder: Any) -> int:
    """Mark an optimizer's state tensors (after its step) as optimizer states; their count."""
    torch = require_torch("capture")
    n = 0
    for state in opt.state.values():
        for v in state.values():
            if isinstance(v, torch.Tensor) and v.dim() > 0:
                recorder.memory.mark(v, "optimizer_states")
                n += 1
    return n
