"""meta_exploration: end-to-end credit leaves exploration on a plateau; DREAM's decoupling learns."""

from __future__ import annotations

import pytest

from sims import meta_exploration as sim
from sims.common import png_size

SMALL = sim.Config(n_doors=8, n_probes=16, iterations=200, seeds=3)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_end_to_end_stays_at_chance(result):
    m = result.metrics
    assert m["e2e_final_return"] < m["chance_return"] + 0.05
    assert m["e2e_final_sign_probability"] < 0.25  # starts at 1/16


def test_dream_learns_to_read_the_sign_and_use_it(result):
    m = result.metrics
    assert m["dream_final_return"] > 0.6
    assert m["dream_final_return"] > 4 * m["chance_return"]
    assert m["dream_final_sign_probability"] > 0.8


def test_exploration_gradient_is_tiny_end_to_end(result):
    m = result.metrics
    assert m["dream_mean_grad_norm"] > 10 * m["e2e_mean_grad_norm"]
    assert max(result.series["e2e_grad"]) < 0.1 * max(result.series["dream_grad"])


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
