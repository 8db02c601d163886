"""classifier_reward: a memorising classifier pays nothing; a static one is exploited where its
negatives never went; VICE's refits with the policy's states as negatives fix it."""

from __future__ import annotations

import pytest

from sims import classifier_reward as sim
from sims.common import PHONE_WIDTH_PX, png_size


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics."""
    # memorising: ~0 reward off the examples, the agent never finds the goal
    assert m["memorised_max_reward_outside_goal"] < 0.01
    assert m["memorised_final_success"] < 0.05
    # fitted once on the initial failures: highest reward far past the examples, exploited
    assert m["static_peak_to_goal"] > 0.3
    assert m["static_final_success"] < 0.1
    # VICE: the peak moves onto the examples and the agent learns
    assert m["vice_peak_to_goal"] < 0.25
    assert m["vice_final_success"] > 0.6
    assert m["vice_final_success"] > m["static_final_success"] + 0.5
    # a static classifier works when its negatives already covered the space
    assert m["uniform_peak_to_goal"] < 0.25
    assert m["uniform_final_success"] > 0.8


def test_claims_hold_at_seed_0():
    check_claims(sim.run(sim.Config()).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_newton_fit_separates_examples_from_negatives():
    import numpy as np

    rng = np.random.default_rng(0)
    examples = np.array([[0.5, 0.95]]) + 0.03 * rng.standard_normal((30, 2))
    negatives = rng.random((300, 2)) * [1.0, 0.5]  # the bottom half only
    weights = sim.fit_smooth(examples, negatives, sim.Config())
    scores = sim.sigmoid(sim.quadratic_features(np.array([[0.5, 0.95], [0.5, 0.1]])) @ weights)
    assert scores[0] > 0.9
    assert scores[1] < 0.1


def test_plot_is_phone_width():
    result = sim.run(sim.Config(iterations=4))
    assert png_size(sim.plot(result))[0] == PHONE_WIDTH_PX
