"""Notebook and tool surface: reprs, HTML, to_dict, to_frame and sweep."""

from __future__ import annotations

import json

import numpy as np
import pytest

import solkit as sk
from solkit import ops


def test_reprs_are_short_and_informative():
    """reprs name the object, its key figures and units."""
    gpu = sk.load_gpu("h200")
    assert repr(gpu) == "GPU('h200-sxm': NVIDIA H200 SXM 141GB, 132 SMs, 4.8 TB/s, bf16 989.4 TFLOP/s dense, measured 2026-11-30)"
    r = sk.roofline(ops.matmul(8192, 8192, 8192), gpu)
    assert "T_SOL 1.111 ms, compute-bound" in repr(r)
    assert "sweep of shape (2,)" in repr(sk.roofline(ops.matmul(np.array([1, 2]), 8, 8), gpu))
    p = sk.predict(ops.layernorm_residual(8192, 4096, fused=False), gpu)
    assert "calibrated" in repr(p) and "add: memory" in repr(p)
    c = sk.compare(ops.layernorm_residual(8192, 4096, fused=False), ops.layernorm_residual(8192, 4096), gpu)
    assert "(-20.0%)" in repr(c)


def test_html_reprs():
    """_repr_html_ gives a table with a row per kernel plus a total."""
    gpu = sk.load_gpu("h200")
    w = ops.attention(1, 8, 1024, impl="naive")
    for html in (w._repr_html_(), sk.roofline(w, gpu)._repr_html_(), sk.predict(w, gpu)._repr_html_()):
        assert html.startswith("<table>") and html.count("<tr>") >= 1 + 3 + 1
    assert "h200-page" not in gpu._repr_html_()  # sources appear by title, not id
    assert "NVIDIA H200 Tensor Core GPU product page" in gpu._repr_html_()


def test_to_dict_is_json_ready():
    """Results serialize to JSON unchanged in meaning."""
    gpu = sk.load_gpu("a100")
    w = ops.qkv_projection(4096, 768, fused=False)
    for obj in (sk.roofline(w, gpu), sk.predict(w, gpu), sk.compare(w, ops.qkv_projection(4096, 768), gpu)):
        data = json.loads(json.dumps(obj.to_dict()))
        assert data["gpu"] == "a100-sxm4-80gb"


def test_to_frame_one_row_per_configuration():
    """A 2 x 3 sweep gives 6 rows with unit-named columns."""
    pytest.importorskip("pandas")
    r = sk.roofline(ops.matmul(np.array([[1], [4096]]), np.array([1024, 2048, 4096]), 4096), "h200")
    frame = r.to_frame()
    assert len(frame) == 6
    assert {"t_sol_s", "t_compute_s", "t_memory_s", "bound", "intensity_flop_per_byte", "bytes"} <= set(frame.columns)
    # row 5 is m=4096, n=4096: 2*4096^3 / 989.4e12 = 138.9 us
    assert frame["t_sol_s"].iloc[5] == pytest.approx(2 * 4096**3 / 989.4e12)


def test_sweep_grid_and_options():
    """sweep: numeric lists form a grid, string lists loop: 3 m x 2 n x 2 dtypes = 12 rows."""
    pytest.importorskip("pandas")
    frame = sk.sweep(ops.matmul, "h200", m=[1, 64, 4096], n=[4096, 8192], k=4096, dtype=["bf16", "fp8"])
    assert len(frame) == 12
    assert list(frame.columns[:5]) == ["gpu", "m", "n", "k", "dtype"]
    row = frame[(frame.m == 4096) & (frame.n == 8192) & (frame.dtype == "fp8")].iloc[0]
    assert row.t_sol_s == pytest.approx(2 * 4096 * 8192 * 4096 / 1978.9e12)  # 138.9 us
    assert (frame.predicted_s >= frame.t_sol_s).all()
    assert (frame.sol_fraction <= 1).all()


def test_fmt_bytes_chooses_the_unit():
    """Decimal units: 1.59e12 B is 1.59 TB, 25,165,824 B 25.17 MB, 512 B 512 B, 999,999 B 1000 KB (4 digits)."""
    from solkit._display import fmt_bytes

    assert fmt_bytes(1.59e12) == "1.59 TB"
    assert fmt_bytes(25_165_824) == "25.17 MB"
    assert fmt_bytes(512) == "512 B"
    assert fmt_bytes(999_999) == "1000 KB"
    assert fmt_bytes(2.5e15) == "2.5 PB"
