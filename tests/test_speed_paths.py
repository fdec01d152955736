"""Speed paths: the physical model's sweep paths give each element's own scalar answer; what ``import solkit`` loads."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from solkit._num import off
from solkit.prediction import tiles


def test_split_kv_over_a_sweep_is_each_elements_heuristic():
    """Flash attention's split-KV count over a sweep (once per distinct items and key blocks) is flash_splits of each
    element called alone: 1 where the items fill 80% of the 132 SMs (105.6), the heuristic below."""
    rng = np.random.default_rng(31)
    items = rng.integers(1, 300, 20_000).astype(float)
    blocks = rng.integers(1, 600, 20_000).astype(float)
    got = tiles._splits(items, blocks, 132)
    want = [tiles.flash_splits(float(i), float(b), 132) for i, b in zip(items, blocks)]
    assert np.array_equal(got, want)
    assert np.all(got[items >= 105.6] == 1.0) and np.any(got > 1.0)
    assert tiles._splits(np.array([200.0]), np.array([64.0]), 132).tolist() == [1.0]  # 200 items >= 105.6: no split


def test_a_prediction_loads_neither_the_models_nor_the_charts():
    """``import solkit`` and a scalar predict load no solkit.models or solkit.plot (they load on first use: import time)."""
    code = ("import sys, solkit as sk; from solkit import ops; sk.predict(ops.matmul(64, 64, 64), 'h200').seconds; "
            "loaded = [m for m in sys.modules if m.startswith(('solkit.models', 'solkit.plot'))]; "
            "assert not loaded, loaded; assert sk.models.resnet50 and sk.plot.roofline; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("d", [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 0.5, 3.0, 2.0 ** 40])
def test_off_is_the_remainders_test(d):
    """_num.off(x, d) is numpy's own x % d != 0 (the outside oracle) on integers, fractions, negatives, huge and tiny
    values, infinities and NaN, for powers of two (its fast path) and others."""
    rng = np.random.default_rng(int(d * 7) % 1000)
    x = np.concatenate([rng.integers(1, 1 << 40, 20_000).astype(float), rng.uniform(-1e6, 1e6, 20_000),
                        [0.0, -0.0, -8.0, 2.0 ** 53, 2.0 ** 60 + 2048, 1e308, -1e308, 5e-324, 2.0 ** -1070]])
    with np.errstate(invalid="ignore"):
        assert np.array_equal(off(x, d), x % d != 0)
        for odd in ([np.inf, 8.0], [np.nan, 16.0]):
            assert np.array_equal(off(np.array(odd), d), np.array(odd) % d != 0)
    assert off(24.0, 8.0) is False and off(20.0, 8.0) is True  # a scalar: Python's own %
