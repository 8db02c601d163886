"""offline_q_overestimation: offline SAC's Q runs away from its true return; CQL's does not."""

from __future__ import annotations

import pytest

from sims import offline_q_overestimation as sim
from sims.common import png_size

SMALL = sim.Config(steps=150)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_offline_sac_overestimates_and_its_policy_is_bad(result):
    m = result.metrics
    assert m["sac_overestimation"] > 5
    assert m["sac_true_return"] < 0  # it drives into the unseen, unsafe speeds
    history = result.series["q_sac"]
    assert history[-1] > history[len(history) // 3] + 1  # still climbing


def test_cql_stays_at_or_below_its_true_return(result):
    m = result.metrics
    assert m["cql_overestimation"] < 0.5
    assert m["cql_max_q_estimate"] < m["best_possible_return"]
    assert m["cql_true_return"] > m["sac_true_return"] + 3


def test_adam_matches_the_textbook_update():
    torch = pytest.importorskip("torch")
    param = torch.tensor([1.0, -2.0], requires_grad=True)
    optimiser = sim.Adam([([param], 0.1)])
    (param**2).sum().backward()
    optimiser.step()
    # First Adam step moves every coordinate by lr against the sign of its gradient.
    assert param.detach().tolist() == pytest.approx([0.9, -1.9], abs=1e-6)


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
