"""pg_baseline: without a baseline, positive-reward failures gain probability; with one they lose."""

import pytest

from sims import pg_baseline as sim
from sims.common import png_size


@pytest.fixture(scope="module", params=[0, 1, 2], ids=lambda seed: f"seed{seed}")
def result(request):
    return sim.run(sim.Config(seed=request.param))


def test_no_baseline_raises_every_failure(result):
    m = result.metrics
    assert m["failures_up_no_baseline"] == 5
    assert m["min_failure_dlogp_no_baseline"] > 0
    assert m["unsampled_mass_change_no_baseline"] < 0  # the mass came from unsampled tokens


@pytest.mark.parametrize("advantage", ["mean_baseline", "normalised"])
def test_baseline_lowers_every_failure(result, advantage):
    m = result.metrics
    assert m[f"failures_down_{advantage}"] == 5
    assert m[f"max_failure_dlogp_{advantage}"] < 0
    assert m[f"success_dlogp_{advantage}"] > 0


def test_success_rises_most_without_baseline_too(result):
    deltas = result.series["delta_logp"]["no_baseline"]
    assert deltas[-1] == max(deltas)


def test_small_vocabulary_rejected():
    with pytest.raises(ValueError):
        sim.run(sim.Config(vocab=4, failures=5))


def test_deterministic():
    assert sim.run(sim.Config(seed=3)).metrics == sim.run(sim.Config(seed=3)).metrics


def test_plot_is_a_wide_png():
    width, _ = png_size(sim.plot(sim.run(sim.Config())))
    assert 950 <= width <= 1050
