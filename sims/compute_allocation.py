"""Spending thinking tokens where they help: uniform length penalty vs a group-relative one.

Problems have a difficulty d in [0, 1]. The chance of a correct answer after thinking L tokens
rises with log L relative to what the problem needs: p(correct | L, d) = sigmoid(s (log2 L -
need(d))), with need growing with d. A policy sees the problem's difficulty (through a few
radial features) and picks a thinking budget from 64 to 8192 tokens. It is trained with
REINFORCE on groups of samples per problem, the advantage being the reward minus the group's
mean (as in RLOO/GRPO, without dividing by the std so that reward scales stay meaningful).

Objectives compared:
- accuracy only: nothing says "be brief", so easy problems keep long budgets (overthinking);
- correct - lambda * tokens with a small lambda: a price low enough to leave hard problems
  their thousands of tokens also lets easy ones buy the last half-percent of accuracy with
  thousands of tokens (overthinking easy problems);
- the same with a large lambda: easy problems get short, but the hard ones need thousands of
  tokens and at a uniform per-token price they are no longer worth trying (underthinking: the
  accuracy on hard problems is lost). Because returns per token fall like 1/L, one price per
  token cannot suit problems whose needs differ by orders of magnitude;
- the length reward of Kimi k1.5 (Kimi Team 2025, arXiv 2501.12599): within the group of
  samples for one problem, lambda_i = 0.5 - (len_i - min_len) / (max_len - min_len); a correct
  sample gets lambda_i, a wrong one min(0, lambda_i), added (here with weight
  ``length_reward_weight``) to the correctness reward. It is
  relative to the problem's own group (the same push on easy and hard problems, whatever their
  absolute lengths) and gated by correctness (a short wrong answer is never rewarded for being
  short), so the policy learns short budgets for easy problems and long ones for hard problems
  while keeping accuracy. L1 (Aggarwal & Welleck 2025, arXiv 2503.04697) instead puts a target
  length in the prompt and rewards matching it.

Plot: left, the chosen thinking budget (expected tokens) against difficulty per objective;
right, the resulting accuracy against difficulty.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Adam, Result, figure_png, new_figure, seeded, style_axes

TITLE = "Thinking-length rewards: uniform penalty vs group-relative"
CAPTION = (
    "Left: tokens the trained policy spends per difficulty. A uniform per-token penalty either "
    "leaves easy problems long (small lambda) or gives up on hard ones (large lambda, right: "
    "accuracy lost); the correctness-gated, group-relative length reward (Kimi k1.5) grows "
    "the budget with difficulty."
)

#: Objective name -> label in the plot.
OBJECTIVES = {
    "accuracy_only": "accuracy only",
    "uniform_small": "uniform penalty, small lambda",
    "uniform_large": "uniform penalty, large lambda",
    "group_relative": "group-relative length reward (Kimi k1.5)",
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
    length_reward_weight: float = 0.1
    """Weight of the Kimi length reward added to the 0/1 correctness reward."""
    features: int = 8
    """Radial features of the difficulty the policy sees."""
    steps: int = 300
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


def kimi_length_reward(tokens, correct):
    """Kimi k1.5 length reward within each group (last dimension of ``tokens``)."""
    import torch

    shortest = tokens.min(-1, keepdim=True).values
    longest = tokens.max(-1, keepdim=True).values
    spread = (longest - shortest).clamp_min(1e-9)
    lam = torch.where(
        longest > shortest, 0.5 - (tokens - shortest) / spread, torch.zeros_like(tokens)
    )
    return torch.where(correct, lam, lam.clamp(max=0.0))


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
    kimi = torch.tensor([False, False, False, True])[:, None, None]

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
        reward = correct.float() - penalty * tokens / 1000
        reward = reward + kimi * config.length_reward_weight * kimi_length_reward(tokens, correct)
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
    fig, (left, right) = new_figure(1, 2, height_px=520)
    for index, name in enumerate(series["objectives"]):
        colour = PALETTE[index]
        width = 2.8 if name == "group_relative" else 1.8
        left.plot(grid, series["tokens"][index], color=colour, lw=width, label=OBJECTIVES[name])
        right.plot(grid, series["accuracy"][index], color=colour, lw=width, label=OBJECTIVES[name])
    right.plot(
        grid,
        series["max_budget_accuracy"],
        color="black",
        lw=1.0,
        ls=":",
        label="always 8192 tokens",
    )
    left.set_yscale("log", base=2)
    style_axes(left, "Thinking budget chosen", "problem difficulty d", "expected tokens (log)")
    right.set_ylim(0, 1.02)
    style_axes(right, "Accuracy", "problem difficulty d", "P(correct)", legend=False)
    return figure_png(fig, suptitle="Rewarding short reasoning: which length reward?")
