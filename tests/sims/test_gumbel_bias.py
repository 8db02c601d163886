"""gumbel_bias: optimised through Gumbel-softmax, the policy buys soft inputs and its real
samples earn less than REINFORCE's, which reaches the best real response.

Claims asserted on the default config the learner sees: two seeds fast, seeds 0-19 slow.
"""

import pytest

from sims import gumbel_bias as sim

FAST_SEEDS = (0, 5)


def assert_claims(m: dict[str, float]) -> None:
    # The reward model fits the judge on real responses (it is a decent reward model).
    assert m["reward_model_fit_correlation"] > 0.8
    # REINFORCE is unbiased for the real objective but can stop at a second-best response: on
    # seeds 0-19 it ends within 0.01 of the best real response on 11 and 0.835 below it at worst
    # (seed 17), so only "below the best by less than 1" (the spread of one response) is asserted.
    assert m["real_final_reinforce"] > m["best_real_response"] - 1.0
    # Gumbel-softmax at tau = 1 leaves a policy whose real samples earn clearly less (seeds
    # 0-19: by 0.42 at least) ...
    assert m["real_gap_reinforce_minus_gumbel"] > 0.3
    # ... while the soft blends it optimised score far above those samples (seeds 0-19: by 1.142
    # at least): scores its discrete text does not get. (They also topped the best real response
    # on seeds 0-9, but by as little as 0.004 on one, so that is not asserted.)
    assert m["soft_minus_real_gumbel"] > 1.0
    # A lower temperature shrinks the blend, and with it the gap between soft and real.
    assert (
        m["soft_final_gumbel_tau0p3"] - m["real_final_gumbel_tau0p3"] < m["soft_minus_real_gumbel"]
    )


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_claims_on_the_default_config(seed):
    assert_claims(sim.run(sim.Config(seed=seed)).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_on_seeds_0_to_19(seed):
    assert_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_deterministic():
    tiny = sim.Config(vocab=5, train_responses=100, fit_steps=20, steps=20, eval_every=5)
    assert sim.run(tiny).metrics == sim.run(tiny).metrics
