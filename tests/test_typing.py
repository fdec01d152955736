"""Types that help: ``mypy --strict`` passes on correct user code and flags each of four mistakes; the ops stub is the
registry's, and every Literal of solkit._typing is the choice list the code checks against."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from solkit import _typing, precision
from solkit.comm import ALGORITHMS
from solkit.models.program import KERNEL_STYLES, QUANTIZATIONS
from solkit.ops import _stub
from solkit.ops.attention import IMPLS
from solkit.ops.conv import LAYOUTS

ROOT = Path(__file__).resolve().parents[1]
TYPING = ROOT / "tests" / "typing"


def test_ops_stub_is_the_registry_s() -> None:
    """The checked-in ops/__init__.pyi is what the registry generates now (``python -m solkit.ops._stub`` rewrites it)."""
    assert _stub.PATH.read_text(encoding="utf-8") == _stub.render()


def test_stub_types_each_parameter_kind() -> None:
    """matmul's stub signature: dims as Dim, precisions as DType (out_dtype optional), the epilogue a Literal."""
    text = _stub.render()
    start = text.index("def matmul(")
    matmul = text[start:text.index(") -> Workload:", start)]
    assert "    m: Dim,\n" in matmul and "    batch: Dim = 1,\n" in matmul
    assert "    dtype: DType = 'bf16',\n" in matmul and "    out_dtype: DType | None = None,\n" in matmul
    assert "    bias: bool = False,\n" in matmul
    assert "    epilogue: Literal['none', 'relu', 'gelu', 'silu'] = 'none',\n" in matmul


@pytest.mark.parametrize("alias, choices", [
    (_typing.KernelStyle, KERNEL_STYLES),
    (_typing.Quantization, tuple(QUANTIZATIONS)),
    (_typing.AttentionImpl, IMPLS),
    (_typing.ConvLayout, LAYOUTS),
    (_typing.Algorithm, ALGORITHMS),
])
def test_literals_are_the_code_s_choices(alias: object, choices: tuple[str, ...]) -> None:
    """Each option's Literal lists exactly the tuple its run-time check takes, in the same order."""
    assert get_args(alias) == tuple(choices)


def test_precision_literal_is_every_name_and_alias() -> None:
    """``Precision`` is the canonical names, then every alias that is not also a canonical name."""
    aliases = [a for a in precision._ALIASES if a not in precision.PRECISIONS]
    assert get_args(_typing.Precision) == (*precision.PRECISIONS, *aliases)


def _mypy(*files: Path, tmp_path: Path) -> list[tuple[str, int, str]]:
    """(file name, line, message) of each error ``mypy --strict`` reports on ``files`` (the worktree's solkit)."""
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), "--no-color-output", "--hide-error-context", *map(str, files)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    if "No module named mypy" in run.stderr:
        pytest.fail("mypy is not installed: it belongs to the test extra (pip install -e '.[test]')")
    found = re.finditer(r"^(.*?):(\d+): error: (.*)$", run.stdout, re.MULTILINE)
    errors = [(Path(m[1]).name, int(m[2]), m[3]) for m in found]
    assert run.returncode == (1 if errors else 0), run.stdout + run.stderr  # 2 would be mypy's own failure
    return errors


def test_mypy_strict_passes_good_code_and_flags_each_mistake(tmp_path: Path) -> None:
    """usage_ok.py: no error; usage_bad.py: exactly one error on each ``# mistake`` line, none elsewhere."""
    errors = _mypy(TYPING / "usage_ok.py", TYPING / "usage_bad.py", tmp_path=tmp_path)
    assert [e for e in errors if e[0] == "usage_ok.py"] == []
    lines = (TYPING / "usage_bad.py").read_text(encoding="utf-8").splitlines()
    marked = [i for i, line in enumerate(lines, start=1) if "  # mistake: " in line]
    assert len(marked) == 8  # the issue's four (a GPU as 42, dtyp=, batch="one", kernels="fusd"), and predict's, load_profile's and resnet50's two
    flagged = sorted(line for name, line, _ in errors if name == "usage_bad.py")
    assert flagged == marked, errors
    messages = {line: message for name, line, message in errors if name == "usage_bad.py"}
    assert "roofline" in messages[marked[0]] and '"int"' in messages[marked[0]]
    assert 'Unexpected keyword argument "dtyp"' in messages[marked[1]]
    assert 'Argument "batch"' in messages[marked[2]]
    assert 'Argument "kernels"' in messages[marked[3]]
