"""bootstrap_init: MC forgets V0 = -1000 in one update; TD(0) needs ~log(|e0|/thr)/(1-gamma) sweeps."""

from __future__ import annotations

import pytest

from sims import bootstrap_init as sim
from sims.common import png_size

SMALL = sim.Config(
    curve_discounts=(0.9, 0.99),
    sweep_discounts=(0.5, 0.9, 0.95, 0.99),
    max_updates=200,
    mc_returns=40,
)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


@pytest.mark.parametrize("discount", SMALL.curve_discounts)
def test_one_mc_update_removes_the_initialisation_one_td_update_does_not(result, discount):
    m = result.metrics
    initial = m[f"initial_error_{discount}"]
    assert initial > 900
    # MC's error after one update is the return noise, unrelated to -1000
    assert m[f"mc_error_after_1_{discount}"] < 0.05 * initial
    assert m[f"mc_error_after_1_{discount}"] < 5 * m[f"return_std_{discount}"] + 1
    # TD's target still carries gamma * (-1000): the error barely moves
    assert m[f"td_error_after_1_{discount}"] > 0.85 * initial


def test_td_sweeps_scale_like_the_horizon(result):
    m = result.metrics
    assert 0.85 < m["td_sweeps_loglog_slope"] < 1.2
    assert m["td_sweeps_over_prediction_min"] > 0.95
    assert m["td_sweeps_over_prediction_max"] < 1.1
    assert m["td_sweeps_to_threshold_0.99"] > 500


def test_deterministic():
    config = sim.Config(
        curve_discounts=(0.9,), sweep_discounts=(0.5, 0.9), mc_returns=10, max_updates=20
    )
    assert sim.run(config).metrics == sim.run(config).metrics


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
