"""dynamics_shift: relabelled concrete data never teach sand; a little sand data does."""

from __future__ import annotations

import pytest

from sims import dynamics_shift as sim
from sims.common import png_size

SMALL = sim.Config(concrete_pushes=(16, 256, 2048), steps=200)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_concrete_policy_is_accurate_on_concrete_only(result):
    m = result.metrics
    assert m["concrete_error_most_data"] < 0.08
    assert m["sand_error_most_data"] > 0.8 * m["sand_error_of_exact_concrete_model"]


def test_more_concrete_data_does_not_help_on_sand(result):
    m = result.metrics
    assert m["sand_error_most_data"] > 0.85 * m["sand_error_least_data"]


def test_a_little_sand_data_fixes_sand(result):
    m = result.metrics
    assert m["sand_error_with_sand_data"] < 0.25 * m["sand_error_most_data"]
    assert m["concrete_error_with_sand_data"] < 0.1


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
