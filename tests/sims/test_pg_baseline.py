"""pg_baseline: without a baseline, positive-reward failures gain probability and, with shared
actions, the success can lose it; RLOO or normalised advantages push failures down."""

import pytest

from sims import pg_baseline as sim
from sims.common import PHONE_WIDTH_PX, png_size


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics."""
    # no baseline: every failure goes up, taking mass from unsampled tokens
    assert m["failures_up_no_baseline"] == 5
    assert m["min_failure_dlogp_no_baseline"] > 0
    assert m["unsampled_mass_change_no_baseline"] < 0
    # with a baseline every failure goes down and the success up
    for advantage in ("rloo", "normalised"):
        assert m[f"failures_down_{advantage}"] == 5
        assert m[f"max_failure_dlogp_{advantage}"] < 0
        assert m[f"success_dlogp_{advantage}"] > 0
    # three shared actions, failures at 1 and the success at 2: the success falls without one
    assert m["bandit_success_logit_grad_no_baseline"] == pytest.approx((2 - 7 / 3) / 6, abs=1e-6)
    assert m["bandit_success_prob_change_no_baseline"] < 0
    assert m["bandit_success_prob_change_rloo"] > 0
    # zero-reward failures only: no gradient; the batch mean is (n-1)/n times leave-one-out
    assert m["all_fail_zero_reward_grad_norm"] == 0
    n = m["batch_size"]
    assert m["mean_baseline_over_rloo"] == pytest.approx((n - 1) / n)


@pytest.mark.parametrize("seed", [0, 1])
def test_claims_hold(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_small_vocabulary_rejected():
    with pytest.raises(ValueError):
        sim.run(sim.Config(vocab=4, failures=5))


def test_deterministic():
    assert sim.run(sim.Config(seed=3)).metrics == sim.run(sim.Config(seed=3)).metrics


def test_plot_is_phone_width():
    assert png_size(sim.plot(sim.run(sim.Config())))[0] == PHONE_WIDTH_PX
