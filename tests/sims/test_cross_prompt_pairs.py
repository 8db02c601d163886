"""cross_prompt_pairs: cross-prompt labels teach prompt difficulty; same-prompt labels teach quality."""

from __future__ import annotations

import pytest

from sims import cross_prompt_pairs as sim
from sims.common import png_size

SMALL = sim.Config(difficulty_spreads=(0.0, 8.0), seeds=4, train_prompts=60, test_prompts=60)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_without_difficulty_spread_both_pair_types_work(result):
    m = result.metrics
    assert m["same_accuracy_no_spread"] > 0.88
    assert abs(m["same_accuracy_no_spread"] - m["cross_accuracy_no_spread"]) < 0.05


def test_cross_prompt_pairs_drop_toward_chance_at_equal_budget(result):
    m = result.metrics
    assert m["same_accuracy_max_spread"] > 0.88
    assert m["cross_accuracy_max_spread"] < 0.72
    assert m["same_accuracy_max_spread"] - m["cross_accuracy_max_spread"] > 0.2


def test_cross_prompt_model_weights_the_prompt_topic(result):
    m = result.metrics
    assert m["cross_topic_share_max_spread"] > 0.8
    assert m["same_topic_share_max_spread"] < 0.4


def test_bradley_terry_fit_recovers_a_known_direction():
    import torch

    gen = torch.Generator().manual_seed(1)
    true_theta = torch.tensor([[2.0, -1.0, 0.5]], dtype=torch.float64)
    diffs = torch.randn(1, 4000, 3, generator=gen, dtype=torch.float64)
    labels = torch.bernoulli(torch.sigmoid(diffs @ true_theta[0]), generator=gen)
    theta = sim.fit_bradley_terry(diffs, labels, l2=1e-3)
    assert torch.allclose(theta, true_theta, atol=0.2)


def test_within_prompt_accuracy_counts_concordant_pairs():
    import torch

    gold = torch.tensor([[[1.0, 2.0, 3.0]]])
    assert sim.within_prompt_accuracy(gold * 5, gold).item() == 1.0
    assert sim.within_prompt_accuracy(-gold, gold).item() == 0.0
    assert sim.within_prompt_accuracy(torch.zeros_like(gold), gold).item() == 0.5


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20


def test_deterministic():
    config = sim.Config(difficulty_spreads=(0.0, 4.0), seeds=2, train_prompts=20, test_prompts=20)
    assert sim.run(config).metrics == sim.run(config).metrics
