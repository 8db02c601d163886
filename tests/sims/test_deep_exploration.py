"""deep_exploration: epsilon-greedy's episodes-to-first-reward explode with N, RLSVI's do not."""

from __future__ import annotations

import math

import pytest

from sims import deep_exploration as sim
from sims.common import png_size

SMALL = sim.Config(
    chain_lengths=(4, 6, 8, 10, 12, 14, 16, 24),
    seeds=6,
    budget_episodes=1500,
    curve_chain_length=16,
)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_epsilon_greedy_grows_exponentially_and_fails_on_long_chains(result):
    m = result.metrics
    # log(episodes) rises linearly in N: at least x1.3 per extra state (exact walk: ~x1.6)
    assert m["epsilon_greedy_log_episodes_per_state"] > math.log(1.3)
    assert m["exact_random_walk_log_median_per_state"] > math.log(1.3)
    # at N = 24 the walk succeeds w.p. ~5e-5 per episode: almost no run finds the reward
    assert m["epsilon_greedy_found_fraction_longest"] <= 0.34


def test_rlsvi_stays_polynomial_and_always_finds_the_reward(result):
    m = result.metrics
    assert m["rlsvi_found_fraction_longest"] == 1.0
    assert m["rlsvi_median_episodes_longest"] < SMALL.budget_episodes / 10
    assert m["rlsvi_loglog_slope"] < 4.0


def test_demonstrations_make_the_chain_solvable(result):
    assert result.metrics["demos_found_fraction_longest"] == 1.0
    assert result.metrics["demos_median_episodes_longest"] <= 2


def test_exact_random_walk_tracks_the_measured_epsilon_greedy(result):
    s = result.series
    solved = [
        (exact, measured)
        for exact, measured in zip(
            s["exact_random_walk_median"], s["epsilon_greedy_median_episodes"]
        )
        if measured <= SMALL.budget_episodes and exact >= 20
    ]
    assert solved, "need at least one chain long enough for a meaningful comparison"
    for exact, measured in solved:
        assert exact / 4 < measured < exact * 4


def test_deterministic():
    config = sim.Config(
        chain_lengths=(4, 8, 12), seeds=4, budget_episodes=300, curve_chain_length=8
    )
    assert sim.run(config).metrics == sim.run(config).metrics


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
