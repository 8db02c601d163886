"""offline_q_overestimation: offline SAC's Q runs away from its true return; CQL's does not
(rl-12); the sampled log-sum-exp penalty is biased low and cheap, a max-hunter is slower (rl-10).

Asserted on the default config the learner sees: two seeds fast, seeds 0-19 slow.
"""

from __future__ import annotations

import pytest

from sims import offline_q_overestimation as sim

FAST_SEEDS = (0, 6)  # 6: the hunter ends furthest from the max


def assert_claims(m: dict[str, float]) -> None:
    # rl-12: offline SAC trusts its critic on unseen actions and drives into the skids.
    assert m["sac_overestimation"] > 5
    assert m["sac_true_return"] < 0
    assert m["sac_q_estimate"] > m["sac_q_at_third_of_training"] + 1  # still climbing
    # CQL's Q stays at or below its policy's true return, and the policy is far better.
    assert m["cql_overestimation"] < 0.5
    assert m["cql_max_q_estimate"] < m["best_possible_return"]
    assert m["cql_true_return"] > m["sac_true_return"] + 3
    # rl-10: the importance-sampled log-sum-exp is biased low (Jensen) at every sample size,
    # less so and less spread with more samples.
    assert m["is_bias_fewest_samples"] < m["is_bias_16_samples"] < m["is_bias_most_samples"] < 0
    assert m["is_band_most_samples"] < m["is_band_fewest_samples"]
    # The max-hunter needs more evaluations than CQL's 20 samples to get within 0.1 of the max.
    assert m["hunter_evaluations_to_within_0p1"] > m["cql_samples_per_state"]
    assert m["hunter_final_gap_to_max"] < 0.5
    # The closed form's push-down (softmax(Q)) covers the over-valued actions, not one argmax.
    assert m["push_share_beyond_0p1_of_max"] > 0.5
    assert m["push_share_off_data"] > 0.5


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_claims_on_the_default_config(seed):
    assert_claims(sim.run(sim.Config(seed=seed)).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_on_seeds_0_to_19(seed):
    assert_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_adam_matches_the_textbook_update():
    torch = pytest.importorskip("torch")
    param = torch.tensor([1.0, -2.0], requires_grad=True)
    optimiser = sim.Adam([([param], 0.1)])
    (param**2).sum().backward()
    optimiser.step()
    # First Adam step moves every coordinate by lr against the sign of its gradient.
    assert param.detach().tolist() == pytest.approx([0.9, -1.9], abs=1e-6)


def test_adam_weight_decay_is_l2_on_the_gradient():
    torch = pytest.importorskip("torch")
    param = torch.tensor([1.0], requires_grad=True)
    optimiser = sim.Adam([([param], 0.1)], weight_decay=0.5)
    param.grad = torch.tensor([-0.4])  # -0.4 + 0.5 * 1.0 = +0.1: the step flips to downhill
    optimiser.step()
    assert param.detach().tolist() == pytest.approx([0.9], abs=1e-6)
