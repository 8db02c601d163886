"""episode_length: long episodes fill the data with the sink and success from the start collapses."""

from __future__ import annotations

import pytest

from sims import episode_length as sim
from sims.common import png_size

SMALL = sim.Config(episode_lengths=(10, 3000), total_steps=4000, seeds=6, eval_rollouts=100)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_long_episodes_collapse_success_from_the_start(result):
    m = result.metrics
    assert m["success_shortest"] > 0.8
    assert m["success_longest"] < 0.3
    assert m["success_shortest"] - m["success_longest"] > 0.5


def test_long_episodes_concentrate_data_in_the_sink(result):
    m = result.metrics
    assert m["sink_share_longest"] > 0.9
    assert m["sink_share_shortest"] < 0.3
    assert m["start_share_shortest"] > 10 * m["start_share_longest"]


def test_time_out_as_terminal_biases_the_start_value_down(result):
    m = result.metrics
    assert m["value_bias_terminal_shortest"] < -0.15
    assert abs(m["value_bias_bootstrap_shortest"]) < 0.1


def test_deterministic():
    config = sim.Config(episode_lengths=(10, 100), total_steps=300, seeds=2, eval_rollouts=10)
    assert sim.run(config).metrics == sim.run(config).metrics


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
