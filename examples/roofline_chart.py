"""Roofline chart of the standard operators on an H200, with the measured times where we have them.

    python examples/roofline_chart.py [OUT_DIR]      # writes OUT_DIR/roofline_h200.png (default: ./out/)

Needs matplotlib (``pip install 'solkit[plot]'``); runs headless. The measured times come from
``data/h200_measurements.json`` (torch on a real H200) when this runs from a source checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

import solkit as sk
from solkit import plot
from solkit.standard import standard_workloads
from solkit.calibration import load_measurements

MEASUREMENTS = Path(__file__).resolve().parents[1] / "data" / "h200_measurements.json"

# standard label -> measured case id of the same shape (data/h200_measurements.json)
MEASURED_CASE = {
    "gemm 8192^3": "matmul/matmul/m=8192,n=8192,k=8192,dtype=bf16",
    "qkv llama3-8b fused": "qkv/qkv_projection/tokens=8192,d_model=4096,heads=32,kv_heads=8,head_dim=128,fused=True,dtype=bf16",
    "attention flash causal 8k": "attention/attention/batch=1,heads=32,seq_q=8192,seq_kv=8192,head_dim=128,kv_heads=8,causal=True,impl=flash,dtype=bf16",
    "conv3x3 nchw": "conv2d/conv2d/batch=32,in_channels=64,height=56,width=56,out_channels=64,kernel=3,stride=1,padding=1,groups=1,layout=nchw,dtype=bf16",
    "rmsnorm": "rmsnorm/rmsnorm/tokens=8192,d_model=4096,dtype=bf16",
}


def measured_seconds() -> dict[str, float]:
    """label -> measured median seconds, for the labels above found in the committed measurements."""
    if not MEASUREMENTS.is_file():
        return {}
    by_id = {c.id: c.seconds for c in load_measurements(MEASUREMENTS).cases if c.ok and c.seconds}
    return {label: by_id[case] for label, case in MEASURED_CASE.items() if case in by_id}


def main(argv: list[str]) -> Path:
    out_dir = Path(argv[1]) if len(argv) > 1 else Path.cwd() / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    gpu = sk.load_gpu("h200")
    fig = plot.roofline(standard_workloads(), gpu, measured=measured_seconds())
    path = Path(plot.save(fig, out_dir / "roofline_h200.png"))
    print(path)
    return path


if __name__ == "__main__":
    main(sys.argv)
