"""ppo_rlhf_bugs: each bug fails the check that tells it apart; the fixed loop fails none.

Asserted on the default config the learner sees: two seeds fast, seeds 0-19 slow.
"""

import pytest

from sims import ppo_rlhf_bugs as sim

FAST_SEEDS = (0, 2)  # 2 was the seed where the old fixed loop failed its own test

#: The fingerprint of each variant: the checks it fails, and only those.
EXPECTED = {
    "fixed": set(),
    "old_logprobs_sampler": {"ratio_dev_first_minibatch"},
    "wrong_reference": {"kl_step0"},
    "kl_sign_flipped": {"kl_zero_reward_run", "length_growth"},
    "raw_reward_scale": {"reward_std_step0", "length_growth"},
    "no_kl": {"length_growth"},
}


def assert_claims(m: dict[str, float]) -> None:
    assert m["reward_model_length_weight"] > 0.1  # the reward model learned "longer is better"
    assert m["gold_of_proxy_argmax"] < 0.0  # its favourite answer is a padded one
    for variant, expected in EXPECTED.items():
        assert set(sim.failing(m, variant)) == expected, variant
    # The fingerprints differ, so the chart names the bug.
    assert len({frozenset(checks) for checks in EXPECTED.values()}) == len(EXPECTED)
    # With reward 0 and beta > 0 the fixed loop's KL stays near 0 (msft-01's sanity check),
    # and the policy starts exactly at the reference: ratio 1 and KL 0 before any update.
    assert m["kl_zero_reward_run_fixed"] < 0.05
    assert m["ratio_dev_first_minibatch_fixed"] < 1e-6 and m["kl_step0_fixed"] < 1e-4


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_claims_on_the_default_config(seed):
    assert_claims(sim.run(sim.Config(seed=seed)).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_on_seeds_0_to_19(seed):
    assert_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_a_check_fails_only_above_its_threshold():
    metrics = {f"{check}_x": threshold for check, (_, threshold) in sim.CHECKS.items()}
    assert sim.failing(metrics, "x") == []
    metrics["kl_step0_x"] += 1e-3
    assert sim.failing(metrics, "x") == ["kl_step0"]


def test_deterministic():
    tiny = sim.Config(iterations=10, replicates=1, batch=16, epochs=2)
    assert sim.run(tiny).metrics == sim.run(tiny).metrics
