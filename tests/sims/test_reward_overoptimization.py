"""reward_overoptimization: proxy up, gold peaks then falls with beta=0; beta>0 holds the gold."""

import pytest

from sims import reward_overoptimization as sim
from sims.common import png_size

SMALL = sim.Config(n_pairs=300, fit_steps=200, steps=200, mc_samples=128, betas=(0.0, 0.3, 1.0))


@pytest.fixture(scope="module", params=[0, 1], ids=lambda seed: f"seed{seed}")
def result(request):
    return sim.run(SMALL.__class__(**{**SMALL.__dict__, "seed": request.param}))


def test_proxy_is_accurate_near_the_reference(result):
    assert result.metrics["proxy_ranking_accuracy_ref"] > 0.75


def test_beta_zero_overoptimises(result):
    m = result.metrics
    assert m["gold_peak_beta0"] > 0.3 * m["gold_best_possible"]  # it first improves the gold
    assert m["gold_final_beta0"] < m["gold_peak_beta0"] - 1.0  # then the gold falls well below
    assert m["gold_final_beta0"] < 0.0  # ... even below the reference policy
    assert m["proxy_final_beta0"] > m["proxy_at_gold_peak_beta0"] + 0.5  # the proxy keeps rising
    assert m["kl_final_beta0"] > 2.5 * m["kl_at_gold_peak_beta0"]
    assert m["kl_growth_last_tenth_beta0"] > 0.05 * m["kl_final_beta0"]  # still growing


def test_kl_penalty_keeps_the_gold_near_its_peak(result):
    m = result.metrics
    assert m["gold_final_beta1"] > 0.8 * m["gold_peak_beta1"]
    assert m["gold_final_beta1"] > m["gold_final_beta0"] + 1.0
    assert abs(m["kl_growth_last_tenth_beta1"]) < 0.02 * m["kl_final_beta1"] + 1e-3  # settled
    assert m["kl_final_beta0p3"] < m["kl_final_beta0"]


def test_deterministic():
    tiny = sim.Config(n_pairs=100, fit_steps=30, steps=20, mc_samples=32)
    assert sim.run(tiny).metrics == sim.run(tiny).metrics


def test_plot_is_a_wide_png():
    result = sim.run(sim.Config(n_pairs=50, fit_steps=10, steps=10, mc_samples=16))
    width, height = png_size(sim.plot(result))
    assert 950 <= width <= 1050 and height > 300
