"""compute_allocation: a flat per-token price grows the budget with difficulty then falls off a
cliff; correct-only group-relative shaping adapts the budget and keeps accuracy."""

import pytest
import torch

from sims import compute_allocation as sim
from sims.common import PHONE_WIDTH_PX, png_size


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics."""
    # accuracy only and a small flat price overthink easy problems
    assert m["tokens_easy_accuracy_only"] > 4 * m["tokens_easy_group_relative"]
    assert m["tokens_easy_uniform_small"] > 1.5 * m["tokens_easy_group_relative"]
    # a large flat price is partly adaptive: the budget grows with difficulty ...
    assert m["tokens_mid_uniform_large"] > 1.5 * m["tokens_easy_uniform_large"]
    # ... then falls off a cliff: it gives up on hard but solvable problems
    assert m["tokens_hard_uniform_large"] < 0.1 * m["tokens_mid_uniform_large"]
    assert m["tokens_hard_uniform_large"] < 0.1 * m["tokens_hard_group_relative"]
    assert m["accuracy_hard_uniform_large"] < m["accuracy_hard_group_relative"] - 0.4
    # the adaptive cost: short on easy, long on hard, accuracy kept
    assert m["tokens_hard_group_relative"] > 4 * m["tokens_easy_group_relative"]
    assert m["accuracy_mean_group_relative"] > m["accuracy_mean_accuracy_only"] - 0.06
    assert m["tokens_mean_group_relative"] < 0.6 * m["tokens_mean_accuracy_only"]


def test_claims_hold_at_seed_0():
    check_claims(sim.run(sim.Config()).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_correct_only_length_reward_formula():
    tokens = torch.tensor([[100.0, 200.0, 300.0, 50.0]])
    correct = torch.tensor([[True, True, True, False]])
    reward = sim.correct_only_length_reward(tokens, correct, alpha=0.2)
    # mean 200 and std sqrt(20000/3) over the three correct samples only; the wrong one earns 0
    z = (tokens[0, :3] - 200.0) / (20000.0 / 3) ** 0.5
    assert torch.allclose(reward[0, :3], 1 - 0.2 * torch.sigmoid(z))
    assert reward[0, 3] == 0
    # one correct sample: no length signal, 1 - alpha / 2
    single = sim.correct_only_length_reward(
        torch.tensor([[10.0, 20.0]]), torch.tensor([[True, False]]), alpha=0.2
    )
    assert single[0].tolist() == pytest.approx([0.9, 0.0])


def test_deterministic():
    tiny = sim.Config(steps=10, problems_per_step=8, group=4)
    assert sim.run(tiny).metrics == sim.run(tiny).metrics


def test_plot_is_phone_width():
    result = sim.run(sim.Config(steps=5, problems_per_step=8, group=4))
    assert png_size(sim.plot(result))[0] == PHONE_WIDTH_PX
