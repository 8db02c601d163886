"""classifier_reward: a memorised success classifier gives no signal; VICE's gives a shaped one."""

from __future__ import annotations

import pytest

from sims import classifier_reward as sim
from sims.common import png_size

SMALL = sim.Config(iterations=30)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_memorised_reward_is_flat_zero_off_the_examples(result):
    m = result.metrics
    assert m["memorised_max_reward_outside_goal"] < 0.01
    assert m["memorised_final_success"] < 0.05


def test_vice_reward_is_shaped_and_the_agent_learns(result):
    m = result.metrics
    assert m["vice_reward_progress_correlation"] > 0.7
    assert m["vice_final_success"] > 0.6
    assert m["vice_final_success"] > m["memorised_final_success"] + 0.5


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
