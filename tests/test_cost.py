"""solkit.cost: GPU-hours, the energy bound at the spec's board power, and a price at the user's rate, by hand."""

from __future__ import annotations

import numpy as np
import pytest

import solkit as sk
from solkit import cost
from solkit.errors import ArgumentTypeError, OptionError, ShapeError


@pytest.mark.parametrize("gpu, watts", [("h200", 700.0), ("h100-sxm", 700.0), ("h200-nvl", 600.0), ("l40s", 350.0),
                                        ("a100-sxm4-80gb", 400.0), ("b200", 1000.0)])
def test_board_power_is_the_specs_sourced_tdp(gpu, watts):
    """The specs' chip.tdp_w (product pages: H200 SXM up to 700 W, H200 NVL 600 W, L40S 350 W, A100 SXM 400 W, B200 1 kW)."""
    assert cost.tdp_watts(gpu) == watts


def test_gpu_hours_by_hand():
    """3,600 s on 8 GPUs: 8 GPU-hours; 90 s on 1: 0.025."""
    assert cost.gpu_hours(3600, 8) == 8.0
    assert cost.gpu_hours(90) == pytest.approx(0.025)


def test_energy_bound_by_hand():
    """10 s on 8 H200 SXM at 700 W: 10 * 8 * 700 = 56,000 J; a System's GPU counts."""
    assert cost.energy_bound(10, "h200", 8) == 56_000.0
    assert cost.energy_bound(10, sk.load_system("hgx-h200"), 8) == 56_000.0


def test_price_by_hand():
    """1,800 s on 4 GPUs at $2.50 per GPU-hour: 0.5 h * 4 * 2.5 = $5."""
    assert cost.price(1800, 2.5, 4) == pytest.approx(5.0)


def test_cost_bundles_the_three_and_has_no_default_price():
    """cost(): GPU-hours, joules and dollars together; without a rate the price is None, never a guess."""
    c = cost.cost(7200, "h200", n_gpus=2, usd_per_gpu_hour=3.0, what="per job")
    assert (c.gpu_hours, c.energy_j, c.usd, c.tdp_w, c.n_gpus) == (4.0, 7200 * 2 * 700.0, 12.0, 700.0, 2)
    assert c.energy_kwh == pytest.approx(7200 * 2 * 700 / 3.6e6)  # 2.8 kWh
    assert "4 GPU-hours" in str(c) and "2.8 kWh" in str(c) and "$12" in str(c)
    free = cost.cost(1.0, "h200")
    assert free.usd is None and "no price" in str(free)
    assert "<table" in c._repr_html_() and c.to_frame()["usd"].iloc[0] == 12.0


def test_arrays_broadcast():
    """A sweep of seconds gives arrays of its shape."""
    s = np.array([3600.0, 7200.0])
    assert cost.gpu_hours(s, 2).tolist() == [2.0, 4.0]
    assert cost.cost(s, "h200", 1, 1.0).usd.tolist() == [1.0, 2.0]


def test_bad_input():
    """A non-positive time, a zero GPU count, a rate that is not a number or is negative: solkit errors."""
    with pytest.raises(ShapeError, match="seconds"):
        cost.gpu_hours(-1.0)
    with pytest.raises(ValueError, match="n_gpus"):
        cost.gpu_hours(1.0, 0)
    with pytest.raises(ArgumentTypeError, match="usd_per_gpu_hour"):
        cost.price(1.0, "3")
    with pytest.raises(OptionError, match="usd_per_gpu_hour"):
        cost.price(1.0, -2.0)
    with pytest.raises(LookupError):
        cost.tdp_watts("h300")
