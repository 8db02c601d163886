"""Gumbel-softmax gradients are biased; the temperature trades bias for variance.

We want the gradient of J(theta) = E_{k ~ Cat(softmax(theta))}[f(e_k)], where f is a small
reward model (an MLP) trained only on the one-hot inputs e_k, as a reward model only ever sees
real tokens. Because the categories are few, the exact gradient is computable and every
estimator can be scored against it.

- REINFORCE (score function): f(e_k) grad log pi_k. Unbiased for any f; its variance is what it
  is.
- Gumbel-softmax / Concrete (Jang, Gu & Poole 2016, arXiv 1611.01144; Maddison, Mnih & Teh
  2016, arXiv 1611.00712): y = softmax((theta + g) / tau) with Gumbel noise g, and the pathwise
  gradient grad_theta f(y). It is an unbiased estimate of the gradient of a different
  objective, E[f(y_tau)], which equals J only in the limit tau -> 0. At high tau the estimator
  is smooth (low variance) but biased; as tau -> 0 the bias vanishes while the variance grows
  without bound (the relaxed sample jumps between vertices, and its derivative scales as 1/tau).
- The relaxed y is a blend of tokens, a point the reward model never saw: at high tau, f(y) has
  little to do with the rewards of real tokens, so the surrogate objective itself is off.

Plot: left, the bias (distance of the mean estimate from the exact gradient, with its Monte
Carlo error) and the per-sample standard deviation of each estimator against tau; right, the
relaxed objective E[f(y_tau)] against tau next to the true objective J.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Adam, Result, figure_png, new_figure, seeded, style_axes

TITLE = "Gumbel-softmax: bias vs variance across temperatures"
CAPTION = (
    "Left: Gumbel-softmax gradients are biased at high temperature (solid red, far above the "
    "noise floor) and noisy at low temperature (dashed); REINFORCE (blue) is unbiased. Right: at "
    "high tau the reward model is queried on token blends it never saw."
)


@dataclass(frozen=True)
class Config:
    """Categories, reward model and Monte Carlo budget."""

    categories: int = 6
    """Number of tokens K."""
    hidden: int = 32
    """Width of the reward model's hidden layer."""
    fit_steps: int = 300
    """Adam steps fitting the reward model on the one-hot tokens."""
    temperatures: tuple[float, ...] = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    """Gumbel-softmax temperatures tau, increasing."""
    samples: int = 20000
    """Monte Carlo samples per estimator."""
    seed: int = 0
    """Seed for every random generator."""


def fit_token_reward_model(categories: int, hidden: int, steps: int, gen):
    """An MLP fitted to random rewards on the one-hot token vectors only."""
    import torch

    targets = torch.randn(categories, generator=gen)
    model = torch.nn.Sequential(
        torch.nn.Linear(categories, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)
    )
    optimiser = Adam([(model.parameters(), 0.01)])
    one_hot = torch.eye(categories)
    for _ in range(steps):
        loss = ((model(one_hot).squeeze(-1) - targets) ** 2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model


def _summary(per_sample, exact):
    """Bias (norm of mean - exact), its Monte Carlo standard error, per-sample std (trace)."""
    mean = per_sample.mean(0)
    variance = per_sample.var(0).sum()
    n = per_sample.shape[0]
    return {
        "bias": float((mean - exact).norm()),
        "bias_se": float((variance / n).sqrt()),
        "std": float(variance.sqrt()),
    }


def run(config: Config = Config()) -> Result:
    """Score REINFORCE and Gumbel-softmax at each temperature against the exact gradient."""
    import torch

    gen = seeded(config.seed)
    torch.manual_seed(config.seed)  # the MLP's initialisation
    k, n = config.categories, config.samples
    reward_model = fit_token_reward_model(k, config.hidden, config.fit_steps, gen)
    one_hot = torch.eye(k)
    token_rewards = reward_model(one_hot).squeeze(-1)
    theta = torch.randn(k, generator=gen)

    logits = theta.clone().requires_grad_(True)
    objective = (logits.softmax(0) * token_rewards).sum()
    (exact,) = torch.autograd.grad(objective, logits)

    probs = theta.softmax(0)
    drawn = torch.multinomial(probs, n, replacement=True, generator=gen)
    reinforce = token_rewards[drawn, None] * (one_hot[drawn] - probs)  # f(e_k) grad log pi_k
    metrics = {f"reinforce_{key}": value for key, value in _summary(reinforce, exact).items()}
    metrics["objective_true"] = float(objective.detach())

    uniform = torch.rand(n, k, generator=gen).clamp_min(1e-12)
    gumbel = -torch.log(-torch.log(uniform))
    curves = {"bias": [], "bias_se": [], "std": [], "relaxed_objective": []}
    for tau in config.temperatures:
        per_sample_theta = theta.expand(n, k).clone().requires_grad_(True)
        relaxed = ((per_sample_theta + gumbel) / tau).softmax(1)
        values = reward_model(relaxed).squeeze(-1)
        (per_sample,) = torch.autograd.grad(values.sum(), per_sample_theta)
        values = values.detach()
        summary = _summary(per_sample, exact)
        for key, value in summary.items():
            curves[key].append(value)
            metrics[f"gumbel_{key}_tau{tau:g}"] = value
        curves["relaxed_objective"].append(float(values.mean()))
        metrics[f"relaxed_objective_tau{tau:g}"] = float(values.mean())
    metrics["exact_gradient_norm"] = float(exact.norm())
    series = {"temperatures": list(config.temperatures), **curves}
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Bias and std against temperature; relaxed vs true objective against temperature."""
    import numpy as np

    series, metrics = result.series, result.metrics
    taus = np.asarray(series["temperatures"])
    fig, (left, right) = new_figure(1, 2, height_px=520)
    left.plot(
        taus, series["bias"], color=PALETTE[1], lw=2.2, marker="o", label="Gumbel-softmax bias"
    )
    left.plot(
        taus,
        2 * np.asarray(series["bias_se"]),
        color="grey",
        lw=1.2,
        ls=":",
        label="Monte Carlo noise floor (2 s.e.)",
    )
    left.plot(
        taus,
        series["std"],
        color=PALETTE[1],
        lw=1.8,
        ls="--",
        marker="s",
        label="Gumbel-softmax std (one sample)",
    )
    left.axhline(
        metrics["reinforce_bias"], color=PALETTE[0], lw=2.2, label="REINFORCE bias (MC noise only)"
    )
    left.axhline(
        metrics["reinforce_std"],
        color=PALETTE[0],
        lw=1.8,
        ls="--",
        label="REINFORCE std (one sample)",
    )
    left.axhline(
        metrics["exact_gradient_norm"], color="black", lw=1.0, ls="-.", label="|exact gradient|"
    )
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_ylim(top=400 * max(series["std"]))
    style_axes(
        left, "Gradient estimators vs exact gradient", "temperature tau (log)", "norm (log scale)"
    )
    left.legend(fontsize=9, loc="upper left", framealpha=0.9)

    right.plot(
        taus,
        series["relaxed_objective"],
        color=PALETTE[1],
        lw=2.2,
        marker="o",
        label="E[f(relaxed sample)]",
    )
    right.axhline(
        metrics["objective_true"], color=PALETTE[0], lw=2.2, label="true objective E[f(token)]"
    )
    right.set_xscale("log")
    low = min(series["relaxed_objective"] + [metrics["objective_true"]])
    high = max(series["relaxed_objective"] + [metrics["objective_true"]])
    right.set_ylim(low - 0.15 * (high - low), high + 0.15 * (high - low))
    style_axes(
        right, "What the reward model is asked about", "temperature tau (log)", "expected reward"
    )
    return figure_png(fig, suptitle="Gradient of E[f(token)] through a discrete sample")
