"""Reward-model over-optimisation: the proxy keeps rising, the gold reward peaks and falls.

Gao, Schulman & Hilton (2022, "Scaling Laws for Reward Model Overoptimization", arXiv
2210.10760) train proxy reward models on labels from a "gold" reward model and optimise a policy
against the proxy: as KL(pi || pi_ref) grows the proxy score rises monotonically while the gold
score rises, peaks and falls. This sim rebuilds that experiment in miniature.

A response is a point x in R^dim. The gold reward is a concave quadratic, g(x) = w.x - 0.5
sum_i a_i x_i^2, whose peak lies at the edge of what the reference policy pi_ref = N(0, I)
produces. The proxy is a small ReLU MLP fitted by Bradley-Terry maximum likelihood on a few
hundred preference pairs sampled from pi_ref and labelled by the gold reward (P(a > b) =
sigmoid(g(a) - g(b))); a BT model's offset and scale are arbitrary, so the proxy is shifted and
scaled to the gold's mean and spread on reference samples. It ranks reference samples well and
extrapolates linearly where it has no data, so it keeps promising more reward ever further out.

The policy pi = N(mu, I) starts at pi_ref and maximises E_pi[proxy] - beta KL(pi || pi_ref) by
Adam on mu for several beta (E_pi[proxy] by Monte Carlo with fixed noise, KL = |mu|^2 / 2 and
E_pi[gold] in closed form). With beta = 0 the proxy keeps rising, the gold peaks and falls and
the KL grows without bound; with beta > 0 the run stops where proxy gradient = beta mu, so the
KL settles and, for a large enough beta, the gold stays near its peak. As Gao et al. note, the KL
penalty picks the point on the gold-vs-KL curve where the run stops (like early stopping); it
does not make the proxy any better.

Plot (stacked for a phone): top, with beta = 0, the proxy (dashed) and gold (solid) reward gain
over pi_ref against the optimisation step; bottom, the gold gain against KL for each beta, a dot
where each run ends.

Robustness: every claim the test asserts holds on seeds 0-19 of the default config (checked by
the slow test; the fast test runs two seeds).
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

TITLE = "Reward over-optimisation: proxy up, gold down as KL grows"
CAPTION = (
    "Top: with beta = 0 the reward model's score (dashed) keeps climbing while the true reward "
    "(solid) peaks and then falls below the reference. Bottom: with beta > 0 the KL settles, and "
    "beta = 1 stops the run near the gold peak."
)


@dataclass(frozen=True)
class Config:
    """Response space, reward-model fit and policy optimisation."""

    dim: int = 8
    """Dimension of the response features x."""
    gold_slope: float = 1.5
    """Norm of w, the gold reward's slope at the reference mean."""
    n_pairs: int = 400
    """Preference pairs (sampled from pi_ref) the proxy reward model is fitted on."""
    hidden: int = 32
    """Width of the proxy MLP's two hidden layers."""
    fit_steps: int = 300
    """Full-batch Adam steps fitting the proxy."""
    fit_lr: float = 3e-3
    """Adam learning rate for the proxy."""
    weight_decay: float = 1e-3
    """Adam weight decay for the proxy."""
    betas: tuple[float, ...] = (0.0, 0.1, 0.3, 1.0)
    """KL coefficients, one policy each; 0 must come first."""
    steps: int = 300
    """Adam steps of policy optimisation."""
    lr: float = 0.02
    """Adam learning rate for the policy mean."""
    mc_samples: int = 256
    """Monte Carlo samples estimating E_pi[proxy] (the same noise every step)."""
    seed: int = 0
    """Seed for every random generator."""


def beta_name(beta: float) -> str:
    """Metric-name form of a beta: 0.3 -> '0p3'."""
    return f"{beta:g}".replace(".", "p")


def fit_bradley_terry(
    model, first, second, first_preferred, steps: int, lr: float, weight_decay: float = 0.0
) -> None:
    """Fit ``model`` (features -> scalar reward) by Bradley-Terry maximum likelihood in place.

    ``first``/``second`` are the two responses' features, ``first_preferred`` is 1.0 where the
    first was preferred. Full-batch Adam; parameters are frozen afterwards.
    """
    import torch.nn.functional as F

    optimiser = Adam([(model.parameters(), lr)], weight_decay=weight_decay)
    for _ in range(steps):
        margin = model(first).squeeze(-1) - model(second).squeeze(-1)
        loss = F.binary_cross_entropy_with_logits(margin, first_preferred)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    for parameter in model.parameters():
        parameter.requires_grad_(False)


def run(config: Config = Config()) -> Result:
    """Fit the proxy, then optimise one policy per beta against it; track gold, proxy and KL."""
    import torch

    gen = seeded(config.seed)
    dim = config.dim

    slope = torch.randn(dim, generator=gen)
    slope = slope / slope.norm() * config.gold_slope
    curvature = 0.3 + 0.7 * torch.rand(dim, generator=gen)

    def gold(x):
        return x @ slope - 0.5 * (x * x) @ curvature

    # Preference data from the reference policy, labelled by the gold reward.
    first = torch.randn(config.n_pairs, dim, generator=gen)
    second = torch.randn(config.n_pairs, dim, generator=gen)
    p_first = torch.sigmoid(gold(first) - gold(second))
    labels = (torch.rand(config.n_pairs, generator=gen) < p_first).float()

    torch.manual_seed(config.seed)  # the MLP's initialisation
    proxy_net = torch.nn.Sequential(
        torch.nn.Linear(dim, config.hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(config.hidden, config.hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(config.hidden, 1),
    )
    fit_bradley_terry(
        proxy_net, first, second, labels, config.fit_steps, config.fit_lr, config.weight_decay
    )

    with torch.no_grad():
        held_a = torch.randn(4096, dim, generator=gen)
        held_b = torch.randn(4096, dim, generator=gen)
        raw_a, raw_b = proxy_net(held_a).squeeze(-1), proxy_net(held_b).squeeze(-1)
        gold_a, gold_b = gold(held_a), gold(held_b)
        ranking_accuracy = ((raw_a > raw_b) == (gold_a > gold_b)).float().mean().item()
        proxy_shift, proxy_scale = raw_a.mean(), gold_a.std() / raw_a.std()

    def proxy_gain(x):
        return (proxy_net(x).squeeze(-1) - proxy_shift) * proxy_scale

    betas = torch.tensor(config.betas)
    mean = torch.zeros(len(config.betas), dim, requires_grad=True)
    noise = torch.randn(config.mc_samples, dim, generator=gen)
    optimiser = Adam([([mean], config.lr)])
    proxy_curve, gold_curve, kl_curve = [], [], []
    for _ in range(config.steps + 1):
        proxy_value = proxy_gain(mean[:, None, :] + noise).mean(1)
        kl = 0.5 * (mean * mean).sum(1)
        with torch.no_grad():
            # E_pi[g] - E_ref[g] in closed form for pi = N(mean, I), pi_ref = N(0, I).
            gold_value = mean @ slope - 0.5 * (mean * mean) @ curvature
        proxy_curve.append(proxy_value.detach())
        gold_curve.append(gold_value)
        kl_curve.append(kl.detach())
        optimiser.zero_grad()
        (-(proxy_value - betas * kl).sum()).backward()
        optimiser.step()

    proxy_t = torch.stack(proxy_curve).T  # [beta, step]
    gold_t = torch.stack(gold_curve).T
    kl_t = torch.stack(kl_curve).T
    optimum = slope / curvature
    metrics = {
        "proxy_ranking_accuracy_ref": ranking_accuracy,
        "gold_best_possible": float(0.5 * (slope * optimum).sum()),
        "kl_at_gold_optimum": float(0.5 * (optimum * optimum).sum()),
    }
    tenth = max(1, config.steps // 10)
    for index, beta in enumerate(config.betas):
        name = beta_name(beta)
        peak = int(gold_t[index].argmax())
        metrics |= {
            f"gold_peak_beta{name}": float(gold_t[index, peak]),
            f"gold_peak_step_beta{name}": float(peak),
            f"kl_at_gold_peak_beta{name}": float(kl_t[index, peak]),
            f"proxy_at_gold_peak_beta{name}": float(proxy_t[index, peak]),
            f"gold_final_beta{name}": float(gold_t[index, -1]),
            f"proxy_final_beta{name}": float(proxy_t[index, -1]),
            f"kl_final_beta{name}": float(kl_t[index, -1]),
            f"kl_growth_last_tenth_beta{name}": float(kl_t[index, -1] - kl_t[index, -1 - tenth]),
        }
    series = {
        "betas": list(config.betas),
        "gold": gold_t.tolist(),
        "proxy": proxy_t.tolist(),
        "kl": kl_t.tolist(),
    }
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: proxy and gold against step with beta = 0. Bottom: gold against KL per beta."""
    import numpy as np

    series, metrics = result.series, result.metrics
    betas = series["betas"]
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=4.1,
        title="With beta = 0 the proxy climbs while the true reward collapses; "
        "a KL penalty stops the run near the gold peak",
    )
    zero = betas.index(0.0)
    steps = np.arange(len(series["gold"][zero]))
    top.plot(steps, series["proxy"][zero], color=PALETTE[1], ls="--", label="proxy (reward model)")
    top.plot(steps, series["gold"][zero], color=PALETTE[1], label="gold (true reward)")
    top.axhline(
        metrics["gold_best_possible"], color="black", lw=1.5, ls=":", label="best possible gold"
    )
    gold_peak = metrics["gold_peak_beta0"]
    proxy_top = max(4.0 * gold_peak, 1.1 * max(series["proxy"][zero]))
    top.set_ylim(-proxy_top, proxy_top)  # the gold leaves through the bottom
    style_panel(top, "beta = 0: reward gain over pi_ref", "optimisation step", "reward gain")
    legend_below(top, ncol=2)

    for index, beta in enumerate(betas):
        kl = np.asarray(series["kl"][index])
        bottom.plot(
            np.sqrt(kl),  # Gao et al. plot against sqrt(KL)
            series["gold"][index],
            color=PALETTE[index % len(PALETTE)],
            marker="o",
            markevery=[len(kl) - 1],  # where the run ends
            label=f"beta = {beta:g}",
        )
    max_kl = max(max(curve) for curve in series["kl"])
    ticks = [value for value in (0, 1, 3, 10, 30, 100, 300) if value <= max_kl * 1.05]
    bottom.set_xticks(np.sqrt(ticks), [str(value) for value in ticks])
    floor = -3.0 * gold_peak
    bottom.set_ylim(floor, 1.6 * metrics["gold_best_possible"])
    for index in range(len(betas)):
        end_x, end_gold = float(np.sqrt(series["kl"][index][-1])), series["gold"][index][-1]
        if end_gold < floor:  # the run ended below the axis: a marker on the edge, its value above
            bottom.annotate(  # text, not a plotted point, so it is no extra series
                f"{end_gold:.0f}\n▼",
                (end_x, floor),
                ha="center",
                va="bottom",
                fontsize=16,
                color=PALETTE[index % len(PALETTE)],
            )
    style_panel(
        bottom,
        "Gold reward gain; dot = end of run (▼ below the axis)",
        "KL(pi || pi_ref), nats (sqrt scale)",
        "gold gain",
    )
    legend_below(bottom, ncol=2)
    return save_png(fig)
