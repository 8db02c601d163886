"""argmax_cost: grid argmax costs k^d evaluations; an actor or NAF costs one forward pass."""

from __future__ import annotations

import pytest

from sims import argmax_cost as sim
from sims.common import png_size

SMALL = sim.Config(max_measured_dim=4, repeats=2)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_grid_evaluations_grow_by_k_per_dimension(result):
    evals = result.series["grid_evals"]
    assert evals == [SMALL.bins**d for d in result.series["dims"]]
    assert result.metrics["grid_evals_growth_per_dim"] == pytest.approx(SMALL.bins)
    assert result.metrics["grid_evals_target_dim"] == pytest.approx(1e14)


def test_actor_costs_one_evaluation_at_every_dimension(result):
    assert result.metrics["actor_evals_per_action"] == 1


def test_measured_times_grow_with_the_grid_but_not_for_the_actor(result):
    # Loose ratios only: the machine may be busy. Two dimensions more = 100x the evaluations.
    seconds = result.series["grid_seconds"]
    assert seconds[-1] / seconds[-3] > 5
    assert result.metrics["actor_seconds_ratio_max_to_min_dim"] < 5
    assert result.metrics["naf_seconds_ratio_max_to_min_dim"] < 5
    # Extrapolating the fitted per-evaluation cost to 1e14 evaluations gives far more than a day.
    assert result.metrics["grid_seconds_target_dim_extrapolated"] > 86400


def test_evaluation_counts_are_deterministic():
    config = sim.Config(max_measured_dim=3, repeats=1)
    first, second = sim.run(config), sim.run(config)
    for key in ("grid_evals_growth_per_dim", "grid_evals_target_dim", "actor_evals_per_action"):
        assert first.metrics[key] == second.metrics[key]
    assert first.series["grid_evals"] == second.series["grid_evals"]


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
