"""The built wheel carries the spec database and works outside the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHECK = """
import pathlib, solkit, solkit.hardware as h
names = solkit.list_gpus()
specs = [solkit.load_gpu(n) for n in names]
folder = h.spec_dirs()[-1]
assert 'site-packages' in str(folder), folder
assert len(list(folder.glob('*.yaml'))) == len(names)
from solkit.prediction import calibration
bank = calibration(solkit.load_gpu('h200')).neighbours  # the shipped neighbour bank is in the wheel and loads
assert bank is not None and len(bank) > 10_000, bank
p = solkit.predict(solkit.ops.matmul(25, 8, 6984, dtype='fp32', batch=2), 'h200')
assert p.kernels[0].neighbour > 1.0, p.kernels[0]
print(len(names), folder)
"""


@pytest.mark.slow
def test_wheel_installs_and_loads_every_spec(tmp_path):
    """Build the wheel, install it into a fresh venv outside the checkout, load every spec there."""
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], check=True,
                   capture_output=True, text=True)
    wheels = list(dist.glob("solkit-*.whl"))
    assert len(wheels) == 1
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / ("Scripts" if os.name == "nt" else "bin") / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(wheels[0])], check=True, capture_output=True, text=True)
    shipped = sorted(p.stem for p in (ROOT / "hardware_specs").glob("*.yaml"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SOLKIT_SPEC_PATH")}
    out = subprocess.run([str(py), "-c", CHECK], cwd=tmp_path, check=True, capture_output=True, text=True, env=env)
    count = int(out.stdout.split()[0])
    assert count == len(shipped)
    cli = subprocess.run([str(py), "-m", "solkit", "gpus"], cwd=tmp_path, check=True, capture_output=True, text=True, env=env)
    for name in shipped:
        assert name in cli.stdout
