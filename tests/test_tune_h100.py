"""The frozen H100 SXM draws of solkit.tune (seeds 3270-3272, measured after 56a7e6e) and the seed-3270 repeat: their
records, and the figures data/h100_tune_test_frozen.md and docs/tune.md claim from them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from solkit import tune
from solkit.calibration.manifest import manifest
from solkit.tune.configs import as_configs, config_table
from solkit.tune.limits import DEFAULT_PARAMS, limits_of
from solkit.tune.models import predict
from test_tune_data import _ranks, _shape  # the H200 files' helpers: the same records

DATA = Path(__file__).resolve().parents[1] / "data"
DRAWS = ("h100_tune_test_seed3270.json", "h100_tune_test_seed3271.json", "h100_tune_test_seed3272.json")
REPEAT = "h100_tune_repeat_seed3270.json"
KERNEL = {"matmul": "triton_matmul", "layernorm": "triton_layernorm", "attention": "triton_flash_attention",
          "softmax": "triton_softmax"}


def _load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _measured(row: dict) -> np.ndarray:
    return np.array([np.nan if s is None else s for s in row["seconds"]], float)


def _pooled(kernel: str, defaults: bool = False) -> tuple[int, int, int, float]:
    """(shapes, predicted best within 10% of the measured best, best quarter within 5%, median Spearman) over the three
    draws, ranked on the H100 SXM (its borrowed fit, or the uncalibrated defaults)."""
    top = quarter = shapes = 0
    rho = []
    for name in DRAWS:
        block = _load(name)["sets"]["test"][kernel]
        for row in block["shapes"]:
            if defaults:
                table = config_table(KERNEL[kernel], as_configs(KERNEL[kernel], block["configs"]))  # as rank fills them
                shape = {k: float(v) if not isinstance(v, bool) else v for k, v in _shape(kernel, row).items()}
                if kernel == "attention":
                    shape["seq_kv"] = shape["seq_q"]
                parts, _ = predict(KERNEL[kernel], table, shape, limits_of("h100"), DEFAULT_PARAMS, "bf16")
                seconds = np.asarray(parts["seconds"], float)
            else:
                seconds = tune.rank(KERNEL[kernel], block["configs"], gpu="h100", **_shape(kernel, row)).seconds
            measured = _measured(row)
            ok = np.isfinite(measured) & np.isfinite(seconds)
            p, m = seconds[ok], measured[ok]
            order = np.argsort(p, kind="stable")
            top += m[order[0]] / m.min() <= 1.10
            quarter += m[order[: math.ceil(len(p) / 4)]].min() / m.min() <= 1.05
            rho.append(float(np.corrcoef(_ranks(p), _ranks(m))[0, 1]))
            shapes += 1
    return shapes, int(top), int(quarter), round(float(np.median(rho)), 3)


def test_the_files_record_their_protocol():
    """Each draw is an H100 SXM's, of its seed, measured after 56a7e6e (the borrowing's commit), as the manifest says."""
    for name in (*DRAWS, REPEAT):
        raw = _load(name)
        entry = manifest().entry(name)
        assert raw["environment"]["gpu_name"] == entry.gpu == "NVIDIA H100 80GB HBM3"
        assert raw["protocol"]["seeds"]["test"] == entry.seed and raw["protocol"]["after"] == entry.after == "56a7e6e"
        assert raw["environment"]["triton_version"] == "3.6.0"
    assert [manifest().entry(n).role for n in (*DRAWS, REPEAT)] == ["test", "test", "test", "repeat"]
    assert manifest().newest_test("tune_configs").file == DRAWS[-1]


# data/h100_tune_test_frozen.md, "The three draws pooled": (shapes, best within 10%, quarter within 5%, median Spearman)
POOLED = {"matmul": (120, 88, 120, 0.835), "layernorm": (48, 28, 47, 0.802), "attention": (42, 30, 40, 0.783),
          "softmax": (36, 22, 35, 0.733)}


@pytest.mark.parametrize("kernel", list(POOLED))
def test_report_figures_with_the_borrowed_fit(kernel):
    """The pooled figures of solkit.tune on the H100 SXM (the H200's fit borrowed), recomputed through tune.rank."""
    assert _pooled(kernel) == POOLED[kernel]


def test_report_figures_with_the_defaults():
    """The LayerNorm with the uncalibrated defaults (the report's comparison): 23 of 48, 43 of 48, 0.749; the GEMM 89 of
    120, 120 of 120, 0.840."""
    assert _pooled("layernorm", defaults=True) == (48, 23, 43, 0.749)
    assert _pooled("matmul", defaults=True) == (120, 89, 120, 0.840)


def test_the_repeat_puts_no_noise_ceiling_below_the_goal():
    """The seed-3270 draw timed twice: the first run's best config is within 10% of the second run's best on every
    shape of every kernel (82 shapes), the same configs and shapes in both files."""
    first, second = _load(DRAWS[0])["sets"]["test"], _load(REPEAT)["sets"]["test"]
    shapes = 0
    for kernel in first:
        assert first[kernel]["configs"] == second[kernel]["configs"]
        for a, b in zip(first[kernel]["shapes"], second[kernel]["shapes"]):
            assert _shape(kernel, a) == _shape(kernel, b)
            ta, tb = _measured(a), _measured(b)
            ok = np.isfinite(ta) & np.isfinite(tb)
            assert tb[ok][np.argmin(ta[ok])] / tb[ok].min() <= 1.10
            shapes += 1
    assert shapes == 40 + 16 + 14 + 12
