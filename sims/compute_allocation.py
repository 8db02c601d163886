"""Spending thinking tokens where they help: uniform length penalty vs a group-relative one.

Problems have a difficulty d in [0, 1]. The chance of a correct answer after thinking L tokens
rises with log L relative to what the problem needs: p(correct | L, d) = sigmoid(s (log2 L -
need(d))), with need growing with d. A policy sees the problem's difficulty (through a few
radial features) and picks a thinking budget from 64 to 8192 tokens. It is trained with
REINFORCE on groups of samples per problem, the advantage being the reward minus the group's
mean (as in RLOO/GRPO, without dividing by the std so that reward scales stay meaningful).

Objectives compared:
- accuracy only: nothing says "be brief", so easy problems keep long budgets (overthinking);
- correct - lambda * tokens, one flat price per token. It is partly adaptive: with a success
  curve like p = 1 - exp(-n / d) the optimal length n*(d) = d ln(1 / (lambda d)) grows with the
  difficulty d, but it falls off a cliff: once lambda d >= 1 no length pays for itself and
  n* = 0, so the model gives up on hard but solvable problems. Here (a logistic curve in log
  tokens) the same happens: a large lambda grows the budget with d and then drops it to the
  minimum past a cliff, where accuracy collapses. The tiny lambda here (5e-6 per token) leaves
  easy problems at ~2^11 tokens after training: its shortening signal, ~0.01 reward per 2,000
  tokens, is small beside REINFORCE's sampling noise (a training effect; the exact optimum of a
  small flat price is short on easy problems);
- a difficulty-adaptive length cost, here correct-only group-relative shaping (Arora & Zanette
  2025, "Training language models to reason efficiently", arXiv 2502.04463): a correct sample
  earns 1 - alpha * sigmoid((len - mean) / std), the mean and std over the correct samples of
  its own group; a wrong one earns 0. On an easy problem every sample is correct and the shorter
  ones win; on a hard one the only correct samples are long, so being long is not punished
  relative to them, and a wrong answer never gains from being short. (Kimi k1.5's length reward,
  Kimi Team 2025, arXiv 2501.12599, takes its min and max over all the group's samples, so it is
  not correct-only in this sense.) A Lagrangian constraint on length or budget conditioning (L1,
  Aggarwal & Welleck 2025, arXiv 2503.04697) are other adaptive routes.

Each policy sees the problem's difficulty through a few radial features, picks a budget, and is
trained by REINFORCE with the group mean as baseline. Top: the chosen thinking budget (expected
tokens) against difficulty. Bottom: the resulting accuracy against difficulty.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import (
    PALETTE,
    Adam,
    Result,
    legend_below,
    phone_figure,
    save_png,
    seeded,
    style_panel,
)

TITLE = "Thinking-length rewards: a flat per-token price vs a difficulty-adaptive cost"
CAPTION = (
    "Top: tokens the trained policy spends per difficulty. A flat per-token price is partly "
    "adaptive: the budget grows with difficulty, then falls off a cliff (large lambda) where the "
    "model gives up on hard but solvable problems (bottom: accuracy lost); a tiny price (5e-6 "
    "per token) barely moves easy problems in this run, its signal small beside the sampling noise. Correct-only group-relative shaping (Arora & Zanette) keeps easy "
    "problems short and hard ones long, at near-full accuracy."
)

#: Objective name -> label in the plot.
OBJECTIVES = {
    "accuracy_only": "accuracy only",
    "uniform_small": "flat price, small lambda",
    "uniform_large": "flat price, large lambda",
    "group_relative": "correct-only group-relative",
}


@dataclass(frozen=True)
class Config:
    """Problems, budgets, objectives and training."""

    budgets: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
    """Thinking budgets to choose from (tokens)."""
    slope: float = 1.5
    """s in p(correct) = sigmoid(s (log2 L - need(d)))."""
    need_easy: float = 6.0
    """log2 tokens an easy problem (d = 0) needs for a 50% chance."""
    need_hard: float = 12.5
    """log2 tokens the hardest problem (d = 1) needs for a 50% chance."""
    lambda_small: float = 0.005
    """Penalty per 1000 tokens of the small-lambda objective."""
    lambda_large: float = 0.3
    """Penalty per 1000 tokens of the large-lambda objective."""
    length_penalty_alpha: float = 0.2
    """alpha of the correct-only shaping: a correct sample earns 1 - alpha sigmoid(z_len)."""
    features: int = 8
    """Radial features of the difficulty the policy sees."""
    steps: int = 200
    """Policy-gradient steps."""
    problems_per_step: int = 64
    """Problems per step."""
    group: int = 8
    """Samples per problem (the group the advantage and the Kimi reward are relative to)."""
    lr: float = 0.05
    """Adam learning rate."""
    seed: int = 0
    """Seed for every random generator."""


def success_probability(log2_tokens, difficulty, config: Config):
    """p(correct | budget, difficulty); broadcasts."""
    import torch

    need = config.need_easy + (config.need_hard - config.need_easy) * difficulty
    return torch.sigmoid(config.slope * (log2_tokens - need))


def correct_only_length_reward(tokens, correct, alpha: float):
    """Arora & Zanette's reward: correct -> 1 - alpha sigmoid((len - mean) / std), wrong -> 0.

    The mean and std run over the correct samples of each group (last dimension) only; with
    fewer than two correct samples, or all of one length, a correct sample earns 1 - alpha / 2.
    """
    import torch

    weight = correct.float()
    count = weight.sum(-1, keepdim=True)
    mean = (tokens * weight).sum(-1, keepdim=True) / count.clamp_min(1)
    variance = (((tokens - mean) ** 2) * weight).sum(-1, keepdim=True) / count.clamp_min(1)
    std = variance.sqrt()
    z = torch.where(std > 0, (tokens - mean) / std.clamp_min(1e-9), torch.zeros_like(tokens))
    return torch.where(correct, 1 - alpha * torch.sigmoid(z), torch.zeros_like(tokens))


def _difficulty_features(difficulty, count: int):
    import torch

    centres = torch.linspace(0, 1, count)
    width = 1.0 / (count - 1)
    return torch.exp(-0.5 * ((difficulty[..., None] - centres) / width) ** 2)


def run(config: Config = Config()) -> Result:
    """Train one policy per objective side by side; report budgets and accuracy by difficulty."""
    import torch

    gen = seeded(config.seed)
    names = list(OBJECTIVES)
    tokens_per_budget = torch.tensor(config.budgets, dtype=torch.float32)
    log2_tokens = tokens_per_budget.log2()
    weights = torch.zeros(len(names), config.features, len(config.budgets), requires_grad=True)
    optimiser = Adam([([weights], config.lr)])
    penalty = torch.tensor([0.0, config.lambda_small, config.lambda_large, 0.0])[:, None, None]
    adaptive = torch.tensor([False, False, False, True])[:, None, None]

    for _ in range(config.steps):
        difficulty = torch.rand(config.problems_per_step, generator=gen)
        logits = _difficulty_features(difficulty, config.features) @ weights  # [obj, prob, budget]
        log_probs = logits.log_softmax(-1)
        flat = log_probs.detach().exp().reshape(-1, len(config.budgets))
        choice = torch.multinomial(flat, config.group, replacement=True, generator=gen)
        choice = choice.reshape(len(names), config.problems_per_step, config.group)
        p_correct = success_probability(log2_tokens[choice], difficulty[None, :, None], config)
        correct = torch.rand(p_correct.shape, generator=gen) < p_correct
        tokens = tokens_per_budget[choice]
        flat = correct.float() - penalty * tokens / 1000
        shaped = correct_only_length_reward(tokens, correct, config.length_penalty_alpha)
        reward = torch.where(adaptive, shaped, flat)
        advantage = reward - reward.mean(-1, keepdim=True)
        chosen_log_prob = log_probs.gather(-1, choice)
        loss = -(advantage * chosen_log_prob).mean(dim=(1, 2)).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()

    with torch.no_grad():
        grid = torch.linspace(0, 1, 41)
        policy = (_difficulty_features(grid, config.features) @ weights).softmax(-1)
        expected_tokens = policy @ tokens_per_budget  # [obj, grid]
        accuracy = (policy * success_probability(log2_tokens, grid[:, None], config)).sum(-1)
        best_accuracy = success_probability(log2_tokens[-1], grid, config)

    def at(values, d: float) -> float:
        return float(values[round(d * (len(grid) - 1))])

    metrics: dict[str, float] = {}
    for index, name in enumerate(names):
        metrics |= {
            f"tokens_easy_{name}": at(expected_tokens[index], 0.1),
            f"tokens_mid_{name}": at(expected_tokens[index], 0.5),
            f"tokens_hard_{name}": at(expected_tokens[index], 0.9),
            f"accuracy_easy_{name}": at(accuracy[index], 0.1),
            f"accuracy_hard_{name}": at(accuracy[index], 0.9),
            f"accuracy_mean_{name}": float(accuracy[index].mean()),
            f"tokens_mean_{name}": float(expected_tokens[index].mean()),
        }
    metrics["accuracy_mean_max_budget"] = float(best_accuracy.mean())
    series = {
        "difficulty": grid.tolist(),
        "objectives": names,
        "tokens": expected_tokens.tolist(),
        "accuracy": accuracy.tolist(),
        "max_budget_accuracy": best_accuracy.tolist(),
    }
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Expected thinking tokens and accuracy against difficulty, one line per objective."""
    series = result.series
    grid = series["difficulty"]
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=4.0,
        title=(
            "A flat per-token price grows the budget with difficulty, then gives up on hard "
            "problems; an adaptive cost does not"
        ),
    )
    for index, name in enumerate(series["objectives"]):
        style = {"color": PALETTE[index], "lw": 3.4 if name == "group_relative" else 2.4}
        if name == "accuracy_only":  # dashed and on top: it coincides with the small lambda's
            style |= {"ls": (0, (4, 3)), "zorder": 4}
        top.plot(grid, series["tokens"][index], label=OBJECTIVES[name], **style)
        bottom.plot(grid, series["accuracy"][index], label=OBJECTIVES[name], **style)
    top.set_yscale("log", base=2)
    style_panel(top, "Thinking budget chosen", "problem difficulty d", "expected tokens")
    bottom.set_ylim(0, 1.02)
    style_panel(bottom, "Accuracy", "problem difficulty d", "P(correct)")
    legend_below(bottom, ncol=2)
    return save_png(fig)
