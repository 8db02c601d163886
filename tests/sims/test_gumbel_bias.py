"""gumbel_bias: high tau biased but low variance, low tau the reverse; REINFORCE unbiased."""

import pytest

from sims import gumbel_bias as sim
from sims.common import png_size

SMALL = {"samples": 8000, "temperatures": (0.1, 0.5, 2.0, 5.0), "fit_steps": 150}


@pytest.fixture(scope="module", params=[0, 1], ids=lambda seed: f"seed{seed}")
def result(request):
    return sim.run(sim.Config(seed=request.param, **SMALL))


def test_high_temperature_is_biased_but_quiet(result):
    m = result.metrics
    # Bias at tau=5 is many Monte Carlo standard errors away from zero and far above tau=0.1's.
    assert m["gumbel_bias_tau5"] > 10 * m["gumbel_bias_se_tau5"]
    assert m["gumbel_bias_tau5"] > 3 * (m["gumbel_bias_tau0.1"] + 2 * m["gumbel_bias_se_tau0.1"])
    assert m["gumbel_std_tau5"] < 0.2 * m["gumbel_std_tau0.1"]


def test_bias_falls_and_variance_rises_as_tau_shrinks(result):
    bias, std = result.series["bias"], result.series["std"]  # temperatures increasing
    assert std == sorted(std, reverse=True)
    assert bias[-1] > bias[-2] > bias[1]


def test_reinforce_is_unbiased(result):
    m = result.metrics
    assert m["reinforce_bias"] < 4 * m["reinforce_bias_se"]


def test_relaxed_objective_drifts_from_the_true_one(result):
    m = result.metrics
    off_high = abs(m["relaxed_objective_tau5"] - m["objective_true"])
    off_low = abs(m["relaxed_objective_tau0.1"] - m["objective_true"])
    assert off_high > 3 * off_low


def test_deterministic():
    tiny = sim.Config(samples=500, fit_steps=20, temperatures=(0.5, 2.0))
    assert sim.run(tiny).metrics == sim.run(tiny).metrics


def test_plot_is_a_wide_png():
    result = sim.run(sim.Config(samples=200, fit_steps=10, temperatures=(0.5, 2.0)))
    width, _ = png_size(sim.plot(result))
    assert 950 <= width <= 1050
