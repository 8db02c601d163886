"""reward_overoptimization: proxy up, gold peaks then falls with beta=0; beta>0 holds the gold.

Every claim is asserted on the default config the learner sees: two seeds in the fast run, all
twenty (0-19) in the slow test.
"""

import pytest

from sims import reward_overoptimization as sim

FAST_SEEDS = (0, 9)  # 9 is the seed whose proxy extrapolates least


def assert_claims(m: dict[str, float]) -> None:
    assert m["proxy_ranking_accuracy_ref"] > 0.75  # the proxy is good near the reference
    # beta = 0: the gold first improves, then falls well below its peak while the proxy rises.
    assert m["gold_peak_beta0"] > 0.3 * m["gold_best_possible"]
    assert m["gold_final_beta0"] < m["gold_peak_beta0"] - 1.0
    assert m["proxy_final_beta0"] > m["proxy_at_gold_peak_beta0"] + 0.5
    assert m["kl_final_beta0"] > 3.0 * m["kl_at_gold_peak_beta0"]
    # beta = 1: the run settles near the gold peak, far above the beta = 0 run.
    assert m["gold_final_beta1"] > 0.8 * m["gold_peak_beta1"]
    assert m["gold_final_beta1"] > m["gold_final_beta0"] + 1.0
    assert abs(m["kl_growth_last_tenth_beta1"]) < 0.02 * m["kl_final_beta1"] + 1e-3
    assert m["kl_final_beta0p3"] < m["kl_final_beta0"]


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_claims_on_the_default_config(seed):
    assert_claims(sim.run(sim.Config(seed=seed)).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_on_seeds_0_to_19(seed):
    metrics = sim.run(sim.Config(seed=seed)).metrics
    assert_claims(metrics)


def test_deterministic():
    tiny = sim.Config(n_pairs=100, fit_steps=30, steps=20, mc_samples=32)
    assert sim.run(tiny).metrics == sim.run(tiny).metrics
