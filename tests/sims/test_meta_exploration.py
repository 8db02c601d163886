"""meta_exploration: end-to-end credit leaves exploration on a plateau; DREAM's decoupling learns."""

from __future__ import annotations

import pytest

from sims import meta_exploration as sim
from sims.common import PHONE_WIDTH_PX, png_size


def check_claims(result: sim.Result) -> None:
    """Every claim of the caption, on one run."""
    m = result.metrics
    # end-to-end: the return sits at chance and the sign is not learned
    assert m["e2e_final_return"] < m["chance_return"] + 0.03
    assert m["e2e_final_sign_probability"] < 0.15  # starts at 1/20
    # DREAM reads the sign and uses it
    assert m["dream_final_return"] > 0.85
    assert m["dream_final_sign_probability"] > 0.95
    # the end-to-end exploration gradient is ~0
    assert m["dream_mean_grad_norm"] > 10 * m["e2e_mean_grad_norm"]
    assert max(result.series["e2e_grad"]) < 0.1 * max(result.series["dream_grad"])


def test_claims_hold_at_seed_0():
    check_claims(sim.run(sim.Config()))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_claims_hold_on_ten_seeds(seed):
    check_claims(sim.run(sim.Config(seed=seed)))


def test_exploration_gradient_is_zero_when_the_exploiter_ignores_the_sign():
    import numpy as np

    probs = np.full((1, 4), 0.25)
    payoff = np.full((1, 4), 0.1)  # every probe pays chance: the exploiter ignores what it saw
    assert sim.exploration_gradient_norm(probs, payoff)[0] == pytest.approx(0.0)


def test_plot_is_phone_width():
    result = sim.run(sim.Config(iterations=5, seeds=2))
    assert png_size(sim.plot(result))[0] == PHONE_WIDTH_PX
