"""skill_chaining: B fails on A's end states as the hand-off gap grows; retraining B fixes it."""

from __future__ import annotations

import pytest

from sims import skill_chaining as sim
from sims.common import png_size

SMALL = sim.Config(gaps=(0.0, 0.15, 0.3, 0.5), rollouts=40, map_resolution=10)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_b_works_from_its_own_starts_and_fails_far_from_them(result):
    m = result.metrics
    assert m["own_success_zero_gap"] > 0.9
    assert m["own_success_largest_gap"] < 0.2
    own = result.series["own_success"]
    assert own[-1] < own[1] <= own[0] + 0.05


def test_training_b_on_a_end_states_fixes_the_hand_off(result):
    m = result.metrics
    assert m["retrained_min_success"] > 0.8
    assert m["retrained_min_success"] > m["own_success_largest_gap"] + 0.6


def test_deterministic():
    config = sim.Config(gaps=(0.0, 0.4), rollouts=10, map_resolution=4)
    assert sim.run(config).metrics == sim.run(config).metrics


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
