"""gaussian_head: a Gaussian head averages two modes at every width; mixtures keep both."""

from __future__ import annotations

import pytest

from sims import gaussian_head as sim
from sims.common import png_size

SMALL = sim.Config(widths=(16, 256, 1024))


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_gaussian_mean_sits_in_the_gap_at_every_width(result):
    m = result.metrics
    # < 0.5: the mean is closer to the obstacle than to either expert mode, for all widths.
    assert m["gaussian_max_mean_offset_over_clearance"] < 0.45
    # Its density spreads over the gap the expert never steers into.
    assert m["data_gap_fraction"] < 0.02
    assert m["gaussian_gap_mass"] > 0.25


def test_mixture_and_categorical_heads_keep_both_modes(result):
    m = result.metrics
    for head in ("mixture", "categorical"):
        assert m[f"{head}_gap_mass"] < 0.06
        assert m[f"{head}_min_side_mass"] > 0.3
    assert m["mixture_max_mode_error"] < 0.15


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
