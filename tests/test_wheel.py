"""The built wheel carries the spec database and works outside the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

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
from solkit.calibration import data_dir, manifest  # the data folder ships: the manifest loads and checks against it
data = data_dir()
assert 'site-packages' in str(data) and (data / 'manifest.yaml').is_file() and not (data / 'profiles').exists(), data
shipped = [e.file for e in manifest().entries if e.shipped]
assert all((data / name).is_file() for name in shipped) and len(shipped) >= 50, len(shipped)
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
    # the calibration runs from the wheel alone: the fit of the shipped data is the committed spec's
    refit = subprocess.run([str(py), "-m", "solkit.calibration", "fit", "--spec", str(ROOT / "hardware_specs" / "h200-sxm.yaml")],
                           cwd=tmp_path, check=True, capture_output=True, text=True, env=env)
    committed = yaml.safe_load((ROOT / "hardware_specs" / "h200-sxm.yaml").read_text())["measured"]
    printed = yaml.safe_load(refit.stdout)["measured"]
    assert printed["fit"] == committed["fit"] and printed["kernel_latency_us"] == committed["kernel_latency_us"]
    assert printed["method"] == committed["method"]  # the same files, named as in a checkout (data/NAME)
