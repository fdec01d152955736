"""examples/notebook.ipynb run in a fresh Jupyter kernel (nbclient): its charts come back as image/png, its results as
text/html, without ``%matplotlib inline``."""

from __future__ import annotations

import os
import struct
from base64 import b64decode
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _tagged(nb: Any, tag: str) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]


@pytest.fixture(scope="module")
def executed() -> Any:
    """The notebook executed top to bottom in a fresh python3 kernel, from examples/ (as Jupyter opens it there)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    src = str(ROOT / "src")  # the kernel imports this checkout's solkit, as the suite does
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    client = nbclient.NotebookClient(nb, timeout=60, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute(env=env)  # a kernel of its own, started for this run and shut down after it
    return nb


def test_the_notebook_is_stored_without_outputs_and_without_the_inline_magic():
    """The committed notebook holds no outputs (the test makes them) and never asks for %matplotlib."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)
    assert not any("%matplotlib" in c.source or "pyplot" in c.source for c in code)
    assert len(_tagged(nb, "chart")) == 2 and len(_tagged(nb, "view")) >= 8


def test_every_chart_cell_shows_a_png(executed):
    """Each chart cell's value is an image/png: a real PNG of the figure's size (roofline: 9 x 6 in at 150 dpi =
    1350 x 900 px; plot.profile: 9 in wide, 1350 px)."""
    sizes = []
    for cell in _tagged(executed, "chart"):
        (result,) = [o for o in cell.outputs if o.output_type == "execute_result"]
        png = b64decode(result.data["image/png"])
        assert png[:8] == PNG_MAGIC and png[12:16] == b"IHDR"
        sizes.append(struct.unpack(">II", png[16:24]))
    assert sizes[0] == (1350, 900)  # 9 in x 150 dpi, 6 in x 150 dpi
    assert sizes[1][0] == 1350  # 9 in x 150 dpi


def test_every_view_cell_shows_html(executed):
    """Each result cell (GPU, Roofline, Prediction, Transformer, MemoryFootprint, frames, Profile) shows text/html."""
    for cell in _tagged(executed, "view"):
        (result,) = [o for o in cell.outputs if o.output_type == "execute_result"]
        assert "<table" in result.data["text/html"], cell.source


def test_no_cell_failed_or_warned(executed):
    """No cell raised or wrote to stderr (a warning in a notebook is a message the reader has to judge)."""
    for cell in executed.cells:
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
            assert not [o for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"], cell.source
