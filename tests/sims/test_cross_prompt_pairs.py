"""cross_prompt_pairs: cross-prompt labels teach prompt difficulty; same-prompt labels teach quality."""

from __future__ import annotations

import pytest

from sims import cross_prompt_pairs as sim
from sims.common import PHONE_WIDTH_PX, png_size


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics (6 datasets per setting)."""
    # without difficulty spread both pair types work
    assert m["same_accuracy_no_spread"] > 0.9
    assert abs(m["same_accuracy_no_spread"] - m["cross_accuracy_no_spread"]) < 0.05
    # with a wide spread cross-prompt pairs fall toward chance at equal budget
    assert m["same_accuracy_max_spread"] > 0.9
    assert m["cross_accuracy_max_spread"] < 0.65
    # ... because the cross-prompt model weights the prompt's topic
    assert m["cross_topic_share_max_spread"] > 0.9
    assert m["same_topic_share_max_spread"] < 0.3


def test_claims_hold_at_seed_0():
    check_claims(sim.run(sim.Config()).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


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


def test_plot_is_phone_width():
    config = sim.Config(difficulty_spreads=(0.0, 4.0), seeds=2, train_prompts=20, test_prompts=20)
    assert png_size(sim.plot(sim.run(config)))[0] == PHONE_WIDTH_PX


def test_deterministic():
    config = sim.Config(difficulty_spreads=(0.0, 4.0), seeds=2, train_prompts=20, test_prompts=20)
    assert sim.run(config).metrics == sim.run(config).metrics
