"""Module paths while a program runs: which modules' forwards are running, named as ``named_modules`` names them.

A root module (the function's own, or one found in its arguments) names its submodules by their dotted path
("model.layers.3.mlp"); a module outside every root is named by its class, its children under it, where it runs
outside every module, and is the running module's where it runs inside one (transformers 5.25 with ``kernels``
calls ``apply_rotary_pos_emb`` as one global ``Func`` module from every layer's attention: its work is that
attention's). ``Tracker`` keeps
the recorder's stack of running modules up to date through torch's global forward hooks, and knows each repeated
container (a ModuleList or Sequential of two or more children of one class: a model's layers).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from .record import Recorder

__all__ = ["Tracker"]


class Tracker:
    """Global forward hooks feeding ``recorder.modules`` and ``recorder.objects`` (a context manager)."""

    def __init__(self, recorder: Recorder, roots: list[Any]) -> None:
        self.recorder = recorder
        self.names: dict[int, str] = {}
        self.kinds: dict[str, str] = {}  # module path -> class name
        self.containers: dict[str, int] = {}  # path of a repeated container -> its children
        self._held: list[Any] = []  # the modules named, alive while their ids are keys
        for root in roots:
            self._name(root, "" if len(roots) == 1 else type(root).__name__)
        self._handles: list[Any] = []
        self._again: list[tuple[bool, bool]] = []  # per running module: inside the backward, function mode entered
        self.functions: Any = None  # the capture's FunctionMode, re-entered for a forward recomputed in the backward

    def _name(self, module: Any, prefix: str) -> None:
        """Name ``module`` and its descendants under ``prefix``."""
        for name, m in module.named_modules(prefix=prefix, remove_duplicate=False):
            if id(m) in self.names:
                continue
            self.names[id(m)] = name
            self.kinds[name] = type(m).__name__
            self._held.append(m)
            children = list(m.children())
            if isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential)) and len(children) >= 2 \
                    and len({type(c) for c in children}) == 1:
                self.containers[name] = len(children)

    def path(self, module: Any) -> str:
        """The module's path (an unknown module: its class name, its children named under it)."""
        name = self.names.get(id(module))
        if name is None:
            self._name(module, type(module).__name__)
            name = self.names[id(module)]
        return name

    def _pre(self, module: Any, args: Any) -> None:
        if not self.recorder.suppress:
            self.recorder.module_calls += 1
        running = self.recorder.modules
        known = id(module) in self.names
        self.recorder.modules.append(self.path(module) if known or not running else running[-1])
        self.recorder.objects.append(module)
        again = torch._C._current_graph_task_id() != -1  # a forward inside the backward: checkpointing's recompute
        entered = False
        if again:
            self.recorder.recompute += 1
            # torch function modes are off inside the autograd engine: the recompute runs under the program's again
            if self.functions is not None and not torch._C._is_torch_function_mode_enabled():
                self.functions.__enter__()
                entered = True
        self._again.append((again, entered))

    def _post(self, module: Any, args: Any, output: Any) -> None:
        if self.recorder.objects and self.recorder.objects[-1] is module:
            self.recorder.modules.pop()
            self.recorder.objects.pop()
            again, entered = self._again.pop() if self._again else (False, False)
            if entered:
                self.functions.__exit__(None, None, None)
            if again:
                self.recorder.recompute -= 1

    def __enter__(self) -> "Tracker":
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self._handles = [register_module_forward_pre_hook(self._pre),
                         register_module_forward_hook(self._post, always_call=True)]
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def layer(self, path: str) -> Optional[tuple[str, int]]:
        """(container, index) of the outermost repeated container whose child holds ``path``, or None."""
        parts = path.split(".") if path else []
        for i in range(len(parts) - 1):
            head = ".".join(parts[:i + 1])
            if head in self.containers and parts[i + 1].isdigit():
                return head, int(parts[i + 1])
        if len(parts) >= 1 and parts[0].isdigit() and "" in self.containers:
            return "", int(parts[0])
        return None
