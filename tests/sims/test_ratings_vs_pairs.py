"""ratings_vs_pairs: pairwise labels + Bradley-Terry rank better than averaged 1-10 ratings."""

from __future__ import annotations

import pytest

from sims import ratings_vs_pairs as sim
from sims.common import png_size

SMALL = sim.Config(n_items=40, judgments_per_item=(1, 4), scatter_budget=4, seeds=8)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


@pytest.mark.parametrize("budget", SMALL.judgments_per_item)
def test_pairs_beat_averaged_ratings_at_equal_budget(result, budget):
    m = result.metrics
    assert m[f"pairs_bt_spearman_{budget}"] > m[f"ratings_mean_spearman_{budget}"] + 0.05


def test_per_labeller_zscoring_does_not_rescue_ratings_at_low_budget(result):
    m = result.metrics
    assert m["pairs_bt_spearman_1"] > m["ratings_zscored_spearman_1"] + 0.1


def test_more_judgments_rank_better(result):
    m = result.metrics
    for method in sim.METHODS:
        assert m[f"{method}_spearman_4"] > m[f"{method}_spearman_1"]


def test_spearman_handles_ties_with_average_ranks():
    import torch

    gold = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    assert sim.spearman(gold * 3 + 1, gold).item() == pytest.approx(1.0)
    assert sim.spearman(-gold, gold).item() == pytest.approx(-1.0)
    tied = torch.tensor([[1.0, 1.0, 2.0, 2.0]])
    assert sim.spearman(tied, gold).item() == pytest.approx(0.8944, abs=1e-3)


def test_item_scores_recover_the_order_of_a_clear_tournament():
    import torch

    # item 2 beats 1 beats 0, each comparison repeated with a few upsets
    winners = torch.tensor([[2, 2, 2, 1, 1, 1, 2, 0, 1]])
    losers = torch.tensor([[1, 1, 0, 0, 0, 0, 0, 1, 2]])
    scores = sim.fit_item_scores(winners, losers, torch.ones(1, 9, dtype=torch.float64), 3, 0.1)
    assert scores[0, 2] > scores[0, 1] > scores[0, 0]


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
