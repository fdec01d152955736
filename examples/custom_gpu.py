"""Add your own GPU: copy a shipped spec, change it, cite your source, load it three ways.

Run: python examples/custom_gpu.py
"""

import os
import tempfile
from pathlib import Path

import yaml

import solkit as sk
from solkit.hardware import spec_dirs

shipped = spec_dirs()[-1] / "h100-sxm.yaml"
data = yaml.safe_load(shipped.read_text())

# A power-capped H100 SXM: the operator measured 1.50 GHz sustained under the cap, so the
# compute peaks scale by 1500 / 1830 (the tensor peaks are quoted at 1830 MHz); bandwidth unchanged.
scale = 1500 / 1830
data.update(name="h100-sxm-capped", full_name="NVIDIA H100 SXM (power-capped, 1.5 GHz)", aliases=["h100-capped"])
data["chip"]["boost_clock_mhz"] = 1500
data["sources"].append({"id": "site-measurement", "title": "our cluster: nvidia-smi clocks under the 500 W cap",
                        "url": "https://example.com/our-cluster-notes"})
for peak in data["peaks"]:
    peak["tflops"] = round(peak["tflops"] * scale, 1)
    if peak.get("sparse_tflops"):
        peak["sparse_tflops"] = round(peak["sparse_tflops"] * scale, 1)
    peak["source"] = "site-measurement"

folder = Path(tempfile.mkdtemp())
path = folder / "h100-sxm-capped.yaml"
path.write_text(yaml.safe_dump(data, sort_keys=False))

gpu = sk.load_gpu(path)                                   # 1. by path
assert sk.load_gpu("h100-capped", spec_path=folder) == gpu  # 2. by name from a folder
os.environ["SOLKIT_SPEC_PATH"] = str(folder)              # 3. through the environment
assert "h100-sxm-capped" in sk.list_gpus()
print(repr(gpu))

from solkit import ops  # noqa: E402

w = ops.matmul(8192, 8192, 8192)
for name in ("h100", "h100-capped"):
    r = sk.roofline(w, name)
    print(f"{name:12s} T_SOL {r.t_sol * 1e3:.3f} ms  bf16 peak {sk.load_gpu(name).peak_flops('bf16') / 1e12:.1f} TFLOP/s")

# a typo is a clear error naming the file and the field
data["memory"]["bandwith_tb_s"] = data["memory"].pop("bandwidth_tb_s")
bad = folder / "typo.yaml"
bad.write_text(yaml.safe_dump(data, sort_keys=False))
try:
    sk.load_gpu(bad)
except sk.errors.SpecError as exc:
    print(f"SpecError: {str(exc)[:160]}...")
