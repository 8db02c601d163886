"""compounding_error: BC's expected cost grows ~T^2, DAgger's ~T (Ross, Gordon, Bagnell 2011)."""

from __future__ import annotations

import pytest

from sims import compounding_error as sim
from sims.common import png_size

SMALL = sim.Config(error_rate=0.002, horizons=(8, 16, 32, 64), rollouts_per_iteration=1000,
                   dagger_iterations=3)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_bc_cost_grows_quadratically_dagger_linearly(result):
    m = result.metrics
    assert 1.7 < m["bc_growth_exponent"] < 2.3
    assert 0.8 < m["dagger_growth_exponent"] < 1.25
    assert m["bc_growth_exponent"] > m["dagger_growth_exponent"] + 0.6


def test_costs_match_the_bounds_at_the_longest_horizon(result):
    m = result.metrics
    eps, horizon = SMALL.error_rate, SMALL.horizons[-1]
    # BC: ~eps T^2 / 2 while eps*T << 1 (a little under it, as 1 - (1 - eps)^t < eps t).
    assert 0.6 * eps * horizon**2 / 2 < m["bc_cost_longest"] < 1.05 * eps * horizon**2 / 2
    # DAgger: about one step off the lane per mistake.
    assert 0.5 * eps * horizon < m["dagger_cost_longest"] < 2 * eps * horizon


def test_only_dagger_learns_recovery_actions(result):
    m = result.metrics
    assert m["bc_states_with_expert_action"] == 1  # the lane centre, all the demos ever show
    assert m["dagger_states_with_expert_action"] >= 3  # centre and both neighbours


def test_deterministic():
    config = sim.Config(horizons=(8, 16), rollouts_per_iteration=200, dagger_iterations=2)
    assert sim.run(config).metrics == sim.run(config).metrics


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
