"""The house: each module imports only its own layer or the layers below it (DESIGN.md, "Decisions: Layers"), and no
module takes another module's private (underscore) name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import solkit as sk
from solkit.prediction import CPU_BOUND, cpu_bound
from solkit.stacks import torch211
from solkit.workload import Autograd, Join, Pipeline, Program, Workload

SRC = Path(__file__).resolve().parents[1] / "src" / "solkit"

#: DESIGN's layers, lowest first: hardware data -> precision -> hardware -> work -> roofline -> ops -> comm -> models ->
#: capture -> prediction -> calibration -> profile -> tune -> planning -> report/plot/cli (the ground: errors, numbers,
#: display and argument helpers, the pickling of frozen results, and the stacks' facts, which import nothing of the layers)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "_num", "_display", "_optional", "_files", "_dir", "_frozen"),
    ("_validate", "_impossible", "precision", "stacks"),
    ("hardware",),
    ("kernel", "workload", "_typing", "typing"),
    ("sol", "cost"),
    ("ops",),
    ("comm", "standard"),
    ("models",),
    ("capture",),
    ("prediction",),
    ("calibration",),
    ("profile",),
    ("tune",),
    ("planning", "splits", "fusion"),
    ("report", "summary", "plot", "_cli_measured", "_cli_sweep", "_cli_output"),
    ("cli", "_cli_help", "_cli_model", "_cli_gpus", "_cli_profile", "_cli_tune"),
    ("__init__", "__main__"),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _imports(path: Path) -> list[tuple[str, tuple[str, ...], list[str]]]:
    """(the importing module's room, the imported module's path inside solkit, the names taken) of each import of
    solkit: relative (``from ..x import y``, ``from . import a, b``: each name its own module) or absolute
    (``import solkit.x``, ``from solkit.x import y``)."""
    rel = path.relative_to(SRC).with_suffix("")
    package = list(rel.parts[:-1])
    room = rel.parts[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level > 0:
                base = package[: len(package) - (node.level - 1)]
            elif (node.module or "").split(".")[0] == "solkit":
                base = []
                node = ast.ImportFrom(module=".".join((node.module or "").split(".")[1:]) or None, names=node.names,
                                      level=1)
            else:
                continue
            target = tuple(base + (node.module.split(".") if node.module else []))
            if target:
                found.append((room, target, [a.name for a in node.names]))
            else:  # from . import a, b: each a module of its own
                found += [(room, (a.name,), []) for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "solkit" and len(parts) > 1:
                    found.append((room, tuple(parts[1:]), []))
    return found


MODULES = sorted(SRC.rglob("*.py"))


def test_every_room_has_a_layer():
    """Every top-level module and package of solkit sits in one of DESIGN's layers."""
    rooms = {p.relative_to(SRC).parts[0].removesuffix(".py") for p in MODULES}
    assert rooms - set(RANK) == set()


#: the one name a facade takes from the layer above: ``models.from_hf_config`` is the closed form where solkit has one,
#: else the model captured (DESIGN: "Captured vs closed form"), so it lives in capture and models re-exports it lazily
FACADE = {"models/__init__.py": "solkit.capture.configs"}


def test_the_facade_takes_one_name_from_above():
    """models/__init__.py names solkit.capture.configs (lazily) for from_hf_config, and nothing else above it."""
    from solkit import models

    above = {name: module for name, module in models._LAZY.items() if not module.startswith(".")}
    assert above == {"from_hf_config": FACADE["models/__init__.py"]}


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(SRC)) for p in MODULES])
def test_imports_run_down_the_layers(path):
    """A module imports its own room or lower layers only (type-checking imports included)."""
    upward = []
    for room, target, _ in _imports(path):
        other = target[0]
        if other != room and RANK.get(other, -1) > RANK[room]:
            upward.append(".".join(target))
    assert upward == [], f"{path.relative_to(SRC)} imports a higher layer: {upward}"


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(SRC)) for p in MODULES])
def test_no_private_name_crosses_a_module(path):
    """``from .x import _y`` takes another module's private helper: it belongs in the module that owns it."""
    private = [f"{'.'.join(target)}.{name}" for _, target, names in _imports(path) for name in names
               if name.startswith("_") and not name.startswith("__")]
    assert private == []


def test_the_hardware_layer_knows_nothing_of_the_predictor():
    """hardware/ imports nothing of prediction/ (the neighbour bank's schema lives with the predictor now)."""
    for path in (SRC / "hardware").glob("*.py"):
        assert not any(target[:1] == ("prediction",) for _, target, _ in _imports(path)), path.name


def test_the_models_implement_the_program_protocol():
    """A Transformer's and a ResNet's programs carry a recipe that is a Program; a bare op's carries none."""
    llama = sk.models.preset("llama3-8b").forward(batch=1, seq=128)
    resnet = sk.models.resnet50(8, kernels="eager")
    for w in (llama, resnet):
        assert isinstance(w.recipe, Program) and w.recipe.kernels == "eager"
    assert (llama.recipe.layers, llama.recipe.preamble) == (32, True)  # Llama-3-8B: 32 layers, a HF preamble
    assert (resnet.recipe.layers, resnet.recipe.preamble) == (16, False)  # 16 bottlenecks, torchvision: none
    plain = sk.ops.matmul(64, 64, 64)
    assert (plain.recipe, plain.autograd, plain.schedule) == (None, None, None)


def test_a_workload_keeps_its_named_slots_when_renamed():
    """recipe, autograd and schedule survive ``renamed`` (a step's parts keep what built them)."""
    w = Workload.of("w", ((sk.ops.matmul(8, 8, 8), 1),), schedule=Join(("gradients",)), autograd=Autograd(launches=2))
    r = w.renamed("v")
    assert (r.schedule, r.autograd, r.recipe) == (Join(("gradients",)), Autograd(launches=2), None)
    assert Workload.of("p", ((w, 3),), schedule=Pipeline(4)).schedule.bubble == 3  # ceil((4 - 1) / 1)


def test_cpu_bound_has_one_definition():
    """A program is CPU-bound when its time is within 10% of its host time: 1.05 ms against 1.0 ms of host is, 1.2 is not."""
    assert CPU_BOUND == 1.1
    assert bool(cpu_bound(1.05e-3, 1.0e-3)) and not bool(cpu_bound(1.2e-3, 1.0e-3))  # 1.05 < 1.1 x 1.0; 1.2 > 1.1


def test_the_stack_module_names_the_spec_stack():
    """The facts' stack is the one the H200 calibration was measured with (its measured.stack)."""
    stack = sk.load_gpu("h200").measured.stack
    assert {key: stack[key] for key in torch211.VERSIONS} == dict(torch211.VERSIONS)


def test_a_spec_measured_with_another_stack_says_so(tmp_path):
    """A GPU whose measured.stack is not the one the library facts were read off gets a note naming both."""
    text = (SRC.parents[1] / "hardware_specs" / "h200-sxm.yaml").read_text(encoding="utf-8")
    (tmp_path / "h200-sxm.yaml").write_text(text.replace("torch: 2.11.0+cu130", "torch: 2.13.0+cu130"), encoding="utf-8")
    (tmp_path / "h200-sxm.neighbours.json").symlink_to(SRC.parents[1] / "hardware_specs" / "h200-sxm.neighbours.json")
    notes = sk.predict(sk.ops.matmul(256, 256, 256), sk.load_gpu(tmp_path / "h200-sxm.yaml")).notes
    assert any("torch 2.11.0+cu130 (solkit.stacks.torch211)" in n and "torch 2.13.0+cu130" in n for n in notes)
    assert not any("solkit.stacks" in n for n in sk.predict(sk.ops.matmul(256, 256, 256), "h200").notes)
