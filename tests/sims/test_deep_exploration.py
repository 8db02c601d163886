"""deep_exploration: epsilon-greedy settles on the distractor and its wait explodes with N;
RLSVI's stays polynomial; two demonstrations solve every chain at once (rl-14, rl-15).

Asserted on the default config the learner sees: two seeds fast, seeds 0-19 slow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sims import deep_exploration as sim

FAST_SEEDS = (0, 3)


def assert_claims(m: dict[str, float], config: sim.Config) -> None:
    # Epsilon-greedy finds the small reward and walks back to it (the local optimum) ...
    assert m["epsilon_greedy_settled_on_distractor"] >= 0.9
    # ... so its wait for the far reward grows exponentially (x1.5 or more per extra state),
    # far beyond even a uniform random walk's, and it never finds it on the longest chain.
    assert m["epsilon_greedy_log_episodes_per_state"] > math.log(1.5)
    assert m["epsilon_greedy_over_random_walk_longest"] > 100
    assert m["epsilon_greedy_found_fraction_longest"] == 0.0
    # RLSVI commits to one sampled Q function per episode: every run finds it, polynomially.
    assert m["rlsvi_found_fraction_longest"] == 1.0
    assert m["rlsvi_median_episodes_longest"] < config.budget_episodes / 10
    assert m["rlsvi_loglog_slope"] < 4.0
    # Demonstrations put the reward on the path: found in the first episodes at every length.
    assert m["demos_found_fraction_longest"] == 1.0
    assert m["demos_median_episodes_longest"] <= 2


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_claims_on_the_default_config(seed):
    config = sim.Config(seed=seed)
    assert_claims(sim.run(config).metrics, config)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_on_seeds_0_to_19(seed):
    config = sim.Config(seed=seed)
    assert_claims(sim.run(config).metrics, config)


def test_hitting_probability_matches_the_random_walk():
    # With P(right) = 1/2 everywhere the settled-policy formula is the uniform random walk's.
    for n in (4, 8, 12):
        exact = sim.random_walk_success_probability(n, n + 9)
        got = sim.hitting_probability(np.full((1, n), 0.5), np.array([n]), np.array([n + 9]))
        assert got[0] == pytest.approx(exact, rel=1e-12)


def test_distractor_pays_only_for_pushing_left_at_the_wall():
    states, actions = np.array([0, 0, 1, 3]), np.array([sim.LEFT, sim.RIGHT, sim.LEFT, sim.RIGHT])
    _, rewards = sim.step(states, actions, 5)
    assert rewards.tolist() == [sim.DISTRACTOR_REWARD, 0.0, 0.0, 1.0]


def test_deterministic():
    config = sim.Config(
        chain_lengths=(4, 8, 12), seeds=4, budget_episodes=300, curve_chain_length=8
    )
    assert sim.run(config).metrics == sim.run(config).metrics
