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

Subtracting the batch mean is itself slightly off: R_i - mean_j R_j = (n-1)/n (R_i - mean_{j!=i}
R_j), so the sample's own reward sits in its baseline and the estimate is the unbiased
leave-one-out one scaled by (n-1)/n. The leave-one-out baseline (RLOO: Kool, van Hoof & Welling
2019; Ahmadian et al. 2024, "Back to basics: revisiting REINFORCE style optimization for
learning from human feedback in LLMs", arXiv 2402.14740) or a learned state-value baseline
avoids it. If the failures' rewards are exactly 0, they are ignored rather than pushed up, and
a batch of failures only gives no gradient at all.

Worse than "failures go up": the success can go down. With shared actions (a bandit with three
actions, failures on two of them with reward 1, the success on the third with reward 2, as in
the card), the success logit's gradient is (1/n) sum_i R_i (1[a_i = success] - 1/3) =
(1/6)(2 - 7/3) < 0: the five failures' positive rewards together outweigh it and the
probability of the successful action falls. With RLOO it rises.

Changes of log-probabilities and probabilities are computed exactly after one step.

Top: the change in log-probability of each trajectory for three advantage choices (the
token-per-trajectory batch). Bottom: the three-action batch, change in each action's probability.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, seeded, style_panel

TITLE = "Policy-gradient baseline: failures rise without one, and the success can fall"
CAPTION = (
    "Top: one policy-gradient step on 5 failures (small positive reward) and 1 success. "
    "Without a baseline every failure's log-probability goes UP (it takes mass from unsampled "
    "tokens); with a leave-one-out baseline (RLOO) or normalised advantages they go down. "
    "Bottom: with three shared actions, failures at reward 1 and the success at 2, the "
    "success's probability FALLS without a baseline. Zero-reward failures would be ignored, "
    "and an all-failure batch gives no gradient."
)

#: Advantage choice -> label shown in the plot.
ADVANTAGES = {
    "no_baseline": "no baseline (A = R)",
    "rloo": "leave-one-out (RLOO)",
    "normalised": "normalised (R - mean) / std",
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
    bandit_failures: tuple[int, int] = (3, 2)
    """Three-action batch: failures on action 1 and on action 2 (the success is on action 3)."""
    bandit_failure_reward: float = 1.0
    """Reward of a failure in the three-action batch."""
    bandit_success_reward: float = 2.0
    """Reward of the success in the three-action batch."""
    seed: int = 0
    """Seed for the tokens and the rewards."""


def rloo(rewards):
    """Leave-one-out advantages: R_i minus the mean of the other rewards."""
    n = len(rewards)
    return rewards - (rewards.sum() - rewards) / (n - 1)


def bandit_step(actions, rewards, advantage_of, lr: float, n_actions: int = 3):
    """One exact policy-gradient step from uniform logits; probabilities before and after."""
    import torch

    logits = torch.zeros(n_actions, requires_grad=True)
    objective = (advantage_of(rewards) * torch.log_softmax(logits, 0)[actions]).mean()
    (gradient,) = torch.autograd.grad(objective, logits)
    before = torch.full((n_actions,), 1 / n_actions)
    return before, (lr * gradient).softmax(0), gradient


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
        "rloo": rloo(rewards),
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

    # the batch mean includes the sample: exactly (n-1)/n times the leave-one-out advantage
    metrics["mean_baseline_over_rloo"] = float(
        ((rewards - rewards.mean()) / advantages["rloo"]).mean()
    )
    metrics["batch_size"] = float(n)

    # three shared actions: failures (reward 1) on actions 0 and 1, the success (reward 2) on 2
    first, second = config.bandit_failures
    actions = torch.tensor([0] * first + [1] * second + [2])
    bandit_rewards = torch.tensor(
        [config.bandit_failure_reward] * (first + second) + [config.bandit_success_reward]
    )
    series["bandit_change"] = {}
    for name, advantage_of in (("no_baseline", lambda r: r), ("rloo", rloo)):
        before, after, gradient = bandit_step(actions, bandit_rewards, advantage_of, config.lr)
        metrics[f"bandit_success_logit_grad_{name}"] = float(gradient[2])
        metrics[f"bandit_success_prob_change_{name}"] = float(after[2] - before[2])
        series["bandit_change"][name] = (after - before).tolist()
    series["bandit_failures"] = [first, second]
    # failures at reward 0 only: no gradient at all
    _, _, gradient = bandit_step(actions[:-1], torch.zeros(first + second), lambda r: r, config.lr)
    metrics["all_fail_zero_reward_grad_norm"] = float(gradient.norm())
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: log-prob change per trajectory. Bottom: the three-action batch's probability changes."""
    import numpy as np

    series = result.series
    rewards = series["rewards"]
    n = len(rewards)
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=4.6,
        title="Without a baseline, positive-reward failures go up, and the success can go down",
    )
    width = 0.27
    x = np.arange(n)
    for offset, (index, (name, label)) in zip((-width, 0.0, width), enumerate(ADVANTAGES.items())):
        top.bar(x + offset, series["delta_logp"][name], width, color=PALETTE[index], label=label)
    top.axhline(0.0, color="black", lw=0.8)
    top.set_xticks(x, [f"fail\n{r:.2f}" for r in rewards[:-1]] + [f"success\n{rewards[-1]:.2f}"])
    style_panel(
        top, "Change in log p(trajectory), one step", "trajectory and its reward", "change (nats)"
    )
    legend_below(top)

    first, second = series["bandit_failures"]
    x = np.arange(3)
    for offset, (index, name) in zip((-width / 2, width / 2), enumerate(("no_baseline", "rloo"))):
        bottom.bar(
            x + offset,
            series["bandit_change"][name],
            width,
            color=PALETTE[index],
            label=ADVANTAGES[name],
        )
    bottom.axhline(0.0, color="black", lw=0.8)
    bottom.set_xticks(
        x, [f"{first} failures\nR = 1", f"{second} failures\nR = 1", "1 success\nR = 2"]
    )
    style_panel(
        bottom,
        "Three shared actions: change in each action's probability",
        None,
        "change in probability",
    )
    legend_below(bottom, ncol=2)
    return save_png(fig)
