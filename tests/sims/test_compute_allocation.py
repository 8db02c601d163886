"""compute_allocation: uniform length penalties misallocate; the group-relative reward does not."""

import pytest
import torch

from sims import compute_allocation as sim
from sims.common import png_size


@pytest.fixture(scope="module", params=[0, 1], ids=lambda seed: f"seed{seed}")
def metrics(request):
    return sim.run(sim.Config(steps=200, seed=request.param)).metrics


def test_accuracy_only_overthinks_easy_problems(metrics):
    assert metrics["tokens_easy_accuracy_only"] > 4 * metrics["tokens_easy_group_relative"]


def test_small_uniform_penalty_still_overthinks_easy(metrics):
    assert metrics["tokens_easy_uniform_small"] > 2 * metrics["tokens_easy_group_relative"]


def test_large_uniform_penalty_gives_up_on_hard(metrics):
    assert metrics["tokens_hard_uniform_large"] < 0.1 * metrics["tokens_hard_group_relative"]
    assert metrics["accuracy_hard_uniform_large"] < metrics["accuracy_hard_group_relative"] - 0.4


def test_group_relative_reward_scales_with_difficulty_and_keeps_accuracy(metrics):
    assert metrics["tokens_hard_group_relative"] > 4 * metrics["tokens_easy_group_relative"]
    assert metrics["accuracy_mean_group_relative"] > metrics["accuracy_mean_accuracy_only"] - 0.06
    assert metrics["tokens_mean_group_relative"] < 0.6 * metrics["tokens_mean_accuracy_only"]


def test_kimi_length_reward_formula():
    tokens = torch.tensor([[100.0, 200.0, 300.0]])
    correct = torch.tensor([[True, False, True]])
    reward = sim.kimi_length_reward(tokens, correct)
    # lambda = 0.5 - (len - min) / (max - min): 0.5, 0, -0.5; wrong answers get min(0, lambda).
    assert reward.tolist() == [[0.5, 0.0, -0.5]]
    same = sim.kimi_length_reward(torch.tensor([[5.0, 5.0]]), torch.tensor([[True, True]]))
    assert same.tolist() == [[0.0, 0.0]]


def test_deterministic():
    tiny = sim.Config(steps=10, problems_per_step=8, group=4)
    assert sim.run(tiny).metrics == sim.run(tiny).metrics


def test_plot_is_a_wide_png():
    result = sim.run(sim.Config(steps=5, problems_per_step=8, group=4))
    width, _ = png_size(sim.plot(result))
    assert 950 <= width <= 1050
