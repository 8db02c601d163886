"""Why policy gradients need a baseline: without one, failures with positive reward go up too.

A batch holds six trajectories of a softmax (log-linear) token policy: at each of a few steps
the policy picks one of ``vocab`` tokens with its own logits, uniform before the update. Five
trajectories failed but still earned a small positive reward (partial credit, a format bonus);
one succeeded with a high reward. Each step of each trajectory uses a token that no other
trajectory in the batch used at that step.

One vanilla REINFORCE step (Williams 1992, "Simple statistical gradient-following algorithms
for connectionist reinforcement learning", Machine Learning 8) moves the logits along
mean_i R_i grad log p(tau_i). Every sampled token is pushed up in proportion to its reward, and
the probability it gains comes from the tokens nobody sampled. So when all rewards are
positive, every failure's log-probability rises as well: its reward is small but positive, and
it only has to beat the unsampled tokens, not the success. Subtracting a baseline (the batch
mean, a learned value, or normalising advantages as in PPO/GRPO) makes the failures' advantages
negative; now they lose probability to the success. The expected gradient is the same with or
without the baseline; the sampled step is not (Chung et al. 2021, "Beyond variance reduction:
understanding the true impact of baselines on policy optimization", arXiv 2008.13773).

The change of each trajectory's log-probability is computed exactly after one step.

Plot: left, the change in log-probability of each trajectory for the three advantage choices;
right, where the probability moved: the per-step mass on the failures' tokens, the success's
token and the unsampled tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Result, figure_png, new_figure, seeded, style_axes

TITLE = "Policy-gradient baseline: failures rise without one"
CAPTION = (
    "Left: one policy-gradient step on 5 failures (small positive reward) and 1 success. "
    "Without a baseline every failure's log-probability goes UP (it takes mass from unsampled "
    "tokens); with a mean baseline or normalised advantages the failures go down."
)

#: Advantage choice -> label shown in the plot.
ADVANTAGES = {
    "no_baseline": "no baseline (A = R)",
    "mean_baseline": "mean baseline (A = R - mean R)",
    "normalised": "normalised (A = (R - mean) / std)",
}


@dataclass(frozen=True)
class Config:
    """The batch and the step size."""

    vocab: int = 16
    """Tokens to choose from at each step."""
    horizon: int = 3
    """Steps (tokens) per trajectory."""
    failures: int = 5
    """Failed trajectories in the batch (plus one success)."""
    failure_reward: tuple[float, float] = (0.2, 0.4)
    """Failures' rewards are drawn uniformly from this range (small but positive)."""
    success_reward: float = 1.0
    """The successful trajectory's reward."""
    lr: float = 1.0
    """Step size of the single gradient step on the logits."""
    seed: int = 0
    """Seed for the tokens and the rewards."""


def run(config: Config = Config()) -> Result:
    """One policy-gradient step per advantage choice; exact change of each log-probability."""
    import torch

    gen = seeded(config.seed)
    n = config.failures + 1
    if n > config.vocab:
        raise ValueError("each trajectory needs its own token at every step: vocab >= failures+1")
    # Distinct tokens per step: column t of `tokens` is a random choice of n different tokens.
    tokens = torch.stack(
        [torch.randperm(config.vocab, generator=gen)[:n] for _ in range(config.horizon)], 1
    )  # [trajectory, step]
    low, high = config.failure_reward
    rewards = torch.cat(
        [
            low + (high - low) * torch.rand(config.failures, generator=gen),
            torch.tensor([config.success_reward]),
        ]
    )
    advantages = {
        "no_baseline": rewards,
        "mean_baseline": rewards - rewards.mean(),
        "normalised": (rewards - rewards.mean()) / rewards.std(),
    }
    steps = torch.arange(config.horizon)

    def log_prob(logits):
        return torch.log_softmax(logits, 1)[steps, tokens].sum(1)  # per trajectory

    start = torch.zeros(config.horizon, config.vocab)  # uniform policy
    sampled = torch.zeros(config.horizon, config.vocab, dtype=torch.bool)
    sampled[steps.repeat(n), tokens.flatten()] = True
    metrics: dict[str, float] = {"reward_mean": float(rewards.mean())}
    series: dict = {"rewards": rewards.tolist(), "delta_logp": {}, "mass_change": {}}
    for name, advantage in advantages.items():
        logits = start.clone().requires_grad_(True)
        objective = (advantage * log_prob(logits)).mean()
        (gradient,) = torch.autograd.grad(objective, logits)
        with torch.no_grad():
            updated = start + config.lr * gradient
            delta = log_prob(updated) - log_prob(start)
            probs_before, probs_after = start.softmax(1), updated.softmax(1)
            mass = {}
            for group, index in (
                ("failures", slice(0, config.failures)),
                ("success", slice(config.failures, n)),
            ):
                chosen = tokens[index]
                mass[group] = float(
                    (probs_after[steps, chosen] - probs_before[steps, chosen]).sum(0).mean()
                )
            unsampled = ~sampled
            mass["unsampled"] = float(((probs_after - probs_before) * unsampled).sum(1).mean())
        failure_delta = delta[: config.failures]
        metrics |= {
            f"failures_up_{name}": float((failure_delta > 0).sum()),
            f"failures_down_{name}": float((failure_delta < 0).sum()),
            f"max_failure_dlogp_{name}": float(failure_delta.max()),
            f"min_failure_dlogp_{name}": float(failure_delta.min()),
            f"success_dlogp_{name}": float(delta[-1]),
            f"unsampled_mass_change_{name}": mass["unsampled"],
        }
        series["delta_logp"][name] = delta.tolist()
        series["mass_change"][name] = mass
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Grouped bars of the log-prob change per trajectory; where the probability mass moved."""
    import numpy as np

    series = result.series
    rewards = series["rewards"]
    n = len(rewards)
    fig, (left, right) = new_figure(1, 2, height_px=520)
    width = 0.27
    x = np.arange(n)
    for offset, (name, label) in zip((-width, 0.0, width), ADVANTAGES.items()):
        colour = PALETTE[list(ADVANTAGES).index(name)]
        left.bar(x + offset, series["delta_logp"][name], width, color=colour, label=label)
    left.axhline(0.0, color="black", lw=0.8)
    left.set_xticks(
        x,
        [f"fail {i + 1}\nR={r:.2f}" for i, r in enumerate(rewards[:-1])]
        + [f"success\nR={rewards[-1]:.2f}"],
        fontsize=9,
    )
    style_axes(
        left,
        "Change in log p(trajectory) after one step",
        "trajectory in the batch",
        "delta log-probability (nats)",
    )

    groups = ("failures", "success", "unsampled")
    x = np.arange(len(groups))
    for offset, (name, label) in zip((-width, 0.0, width), ADVANTAGES.items()):
        colour = PALETTE[list(ADVANTAGES).index(name)]
        right.bar(
            x + offset,
            [series["mass_change"][name][g] for g in groups],
            width,
            color=colour,
            label=label,
        )
    right.axhline(0.0, color="black", lw=0.8)
    right.set_xticks(x, ["failures' tokens", "success's token", "unsampled tokens"])
    style_axes(
        right, "Where the probability moved (per step)", "", "change in probability", legend=False
    )
    return figure_png(fig, suptitle="One REINFORCE step, all rewards positive")
