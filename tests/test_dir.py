"""Names that can be found: ``dir()`` of each public module lists every name of its ``__all__`` (lazy ones included),
and of the facades it lists nothing else but dunders and public submodules (no ``np``, ``Any``, ``dataclass``)."""

from __future__ import annotations

import importlib
import types

import pytest

#: every public module (tests/test_validation_path.py's list, and solkit.ops)
PUBLIC = ("solkit", "solkit.models", "solkit.comm", "solkit.splits", "solkit.planning", "solkit.profile", "solkit.plot",
          "solkit.fusion", "solkit.capture", "solkit.prediction", "solkit.hardware", "solkit.ops", "solkit.cost")
#: the modules whose ``dir()`` is their public surface: ``__all__``, dunders and public submodules
CURATED = ("solkit", "solkit.models", "solkit.planning", "solkit.profile", "solkit.plot", "solkit.capture", "solkit.ops",
           "solkit.comm", "solkit.splits", "solkit.prediction", "solkit.hardware", "solkit.cost", "solkit.fusion")


@pytest.mark.parametrize("name", PUBLIC)
def test_dir_lists_all(name: str) -> None:
    """Every name of ``__all__`` is in ``dir()`` (a lazy ``__getattr__`` has its ``__dir__``): completion finds them."""
    module = importlib.import_module(name)
    assert sorted(set(module.__all__) - set(dir(module))) == []


def test_dir_lists_the_lazy_names() -> None:
    """The names the issue found missing: ``load_profile``, ``measure``, ``host_probe``, ``load_system``, ``Profile``;
    ``preset``, ``from_hf_config``, ``Transformer``."""
    import solkit
    import solkit.models

    assert {"load_profile", "measure", "host_probe", "load_system", "Profile"} <= set(dir(solkit))
    assert {"preset", "from_hf_config", "Transformer"} <= set(dir(solkit.models))


@pytest.mark.parametrize("name", CURATED)
def test_dir_leaks_no_import(name: str) -> None:
    """Beyond ``__all__``: only dunders and the package's own public submodules (``dir(planning)`` has no ``np``)."""
    module = importlib.import_module(name)
    extra = {n for n in dir(module) if n not in module.__all__ and not n.startswith("__")}
    submodules = {n for n in extra if isinstance(getattr(module, n), types.ModuleType)
                  and getattr(module, n).__name__ == f"{name}.{n}"}
    assert sorted(extra - submodules) == []
    assert not any(n.startswith("_") for n in submodules)


def test_planning_dir_has_no_helpers() -> None:
    """The names the issue saw leak from ``dir(planning)``."""
    import solkit.planning

    assert not {"np", "Any", "dataclass", "annotations", "checked_call"} & set(dir(solkit.planning))


@pytest.mark.parametrize("name", CURATED)
def test_every_listed_name_resolves(name: str) -> None:
    """Each name ``dir()`` lists is an attribute (a lazy one loads)."""
    module = importlib.import_module(name)
    for attribute in dir(module):
        getattr(module, attribute)


def test_a_function_is_not_shadowed_by_a_submodule_of_its_name() -> None:
    """models.memory is the function even after its module's siblings are imported (the module was models/memory.py,
    which replaced the function on the package once imported: it is models/footprint.py now)."""
    import solkit.models
    import solkit.models.footprint  # noqa: F401
    import solkit.planning  # noqa: F401

    assert callable(solkit.models.memory) and not isinstance(solkit.models.memory, types.ModuleType)
    assert solkit.models.memory(solkit.models.preset("gpt2"), 1, 1024).weights == 2 * 124_439_808  # bf16 weights, bytes


def test_a_loaded_submodule_is_listed() -> None:
    """The submodules the docs point to (models.footprint, plot.profile_charts, capture.eager) are in dir() once loaded."""
    import solkit.capture.eager  # noqa: F401
    import solkit.models.footprint  # noqa: F401
    import solkit.plot.profile_charts  # noqa: F401

    assert "footprint" in dir(solkit.models) and "profile_charts" in dir(solkit.plot) and "eager" in dir(solkit.capture)
