"""meta_exploration: a costly sign is a stable trap for end-to-end credit; DREAM's decoupling learns."""

from __future__ import annotations

import numpy as np
import pytest

from sims import meta_exploration as sim
from sims.common import PHONE_WIDTH_PX, png_size


def check_claims(result: sim.Result) -> None:
    """Every claim of the caption, on one run, for every parallel run (margins on seeds 0-19:
    success <= 0.1005, P(sign) <= 0.0087, sign gradient <= -1e-4, free mean >= 0.69, DREAM >= 0.988)."""
    m = result.metrics
    # with the cost, the exploration gradient on the sign starts negative and never turns
    assert m["e2e_cost_initial_sign_grad"] < 0
    assert m["e2e_cost_max_sign_grad"] < 0
    # so end-to-end stops reading the sign (it starts at 1/M = 0.05) and sits at chance
    assert m["e2e_cost_final_sign_max"] < 0.02
    assert m["e2e_cost_final_success_max"] < m["chance_return"] + 0.01
    # without the cost it is a plateau, not a trap: the mean escapes by the end of the run
    assert m["e2e_free_final_success_mean"] > 0.6
    # DREAM reads the sign and uses it despite the cost
    assert m["dream_final_success_min"] > 0.95
    assert m["dream_final_sign_min"] > 0.99


@pytest.mark.parametrize("seed", [0, 1])
def test_claims_hold_on_two_seeds(seed):
    check_claims(sim.run(sim.Config(seed=seed)))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)))


def test_sign_gradient_is_minus_the_cost_when_the_exploiter_ignores_the_sign():
    """At the start P(right | sign) = J = 1/K, so the gradient is pi(sign) * (1/K - c - J)
    with J = 1/K - c pi(sign): -c pi(sign) (1 - pi(sign))."""
    p, k, c = 0.05, 10, 0.1
    expected_return = 1 / k - c * p
    assert sim.sign_logit_gradient(p, 1 / k - c, expected_return) == pytest.approx(-c * p * (1 - p))
    assert sim.sign_logit_gradient(p, 1 / k, 1 / k) == 0.0  # free sign: exactly zero


def test_plot_is_phone_width_and_not_too_tall():
    result = sim.run(sim.Config(iterations=20, seeds=2))
    width, height = png_size(sim.plot(result))
    assert width == PHONE_WIDTH_PX and height <= 1.4 * width
    assert np.isfinite(result.series["dream_success"]).all()
