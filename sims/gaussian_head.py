"""A unimodal Gaussian policy head averages bimodal demonstrations, at every network width.

The obstacle sits at lateral position c(s) = 0.4 s for an observation s in [-1, 1]; the expert
passes it on the left or on the right with equal probability, a = c(s) +/- 0.5 + noise. Steering
at c(s) hits the obstacle. Behaviour cloning with a Gaussian head minimises the negative
log-likelihood (MSE is the fixed-variance case); for any network its minimiser has mean E[a | s]
= c(s) and a standard deviation as wide as the gap (the NLL floor is then
1/2 log(2 pi e Var[a | s]), the expert's entropy plus the KL from the expert to the Gaussian), so the mean action drives into the obstacle
and sampled actions often land between the modes. More width only reaches that optimum more
exactly: the failure is the output distribution family, not capacity. A mixture-density head
(Bishop 1994, "Mixture Density Networks") with two components, or a categorical head over
discretised actions (as in RT-1, Brohan et al. 2022, arXiv 2212.06817), represents both modes.
All heads sit on a one-hidden-layer MLP; the Gaussian is trained at widths 16 to 1024, and every
model is trained in the same loop (disjoint parameters, so one Adam over all of them is the same
as one Adam each). Under MSE the mean is the optimum: the fit is right, the family is wrong. A
categorical head per action dimension (RT-1) keeps the modes of each dimension but cannot
represent a correlation across dimensions; ACT (Zhao et al. 2023, arXiv 2304.13705) decodes
with z = 0 at test time, so its commitment to one mode comes from predicting action chunks.
Top: the fitted means over the data. Bottom: the action density each head predicts at s = 0.
"""

from __future__ import annotations

import math
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

TITLE = "Gaussian policy head on bimodal demos: the mean steers into the obstacle"
CAPTION = (
    "The expert swerves left or right, never straight. Gaussian heads of every width put their "
    "mean in the gap (into the obstacle) and spread their mass across it; a 2-component "
    "mixture or a categorical head over action bins keeps two separate modes (on seeds 0-19: "
    "at most 0.11 and 0.03 of their mass in the gap, against the Gaussian's 0.39)."
)


@dataclass(frozen=True)
class Config:
    """Demonstrations, network widths and training length."""

    demos: int = 1024
    """Number of (observation, action) pairs from the expert."""
    noise: float = 0.05
    """Standard deviation of the expert's action around its chosen swerve."""
    widths: tuple[int, ...] = (16, 64, 256, 1024)
    """Hidden widths of the Gaussian-head networks."""
    head_width: int = 64
    """Hidden width of the mixture-density and categorical networks."""
    bins: int = 25
    """Action bins of the categorical head, evenly spaced over [-1, 1]."""
    steps: int = 200
    """Adam steps."""
    batch: int = 128
    """Demos per minibatch."""
    learning_rate: float = 0.01
    """Adam step size."""
    seed: int = 0
    """Seed for data and initialisation."""


CLEARANCE = 0.5  # distance of each expert mode from the obstacle


def obstacle_position(observation):
    """c(s): where the obstacle is, the midpoint between the two expert modes."""
    return 0.4 * observation


def backbone(width: int, outputs: int):
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(1, width), torch.nn.ReLU(), torch.nn.Linear(width, outputs)
    )


def gaussian_nll(out, actions):
    """-log N(a; mu, sigma^2) up to a constant, with out = (mu, log sigma)."""
    mean, log_std = out[:, 0], out[:, 1].clamp(-5, 2)
    return (log_std + 0.5 * ((actions - mean) / log_std.exp()) ** 2).mean()


def mixture_log_density(out, actions):
    """log sum_k w_k N(a; mu_k, sigma_k^2), with out = (logits[2], mu[2], log sigma[2])."""
    import torch

    logits, means, log_std = out[:, :2], out[:, 2:4], out[:, 4:6].clamp(-5, 2)
    log_weights = torch.log_softmax(logits, dim=1)
    z = (actions[:, None] - means) / log_std.exp()
    component = -log_std - 0.5 * z**2 - 0.5 * math.log(2 * math.pi)
    return torch.logsumexp(log_weights + component, dim=1)


def run(config: Config = Config()) -> Result:
    """Train Gaussian heads (several widths), a mixture head and a categorical head jointly."""
    generator = seeded(config.seed)
    import torch

    observations = torch.rand(config.demos, generator=generator) * 2 - 1
    side = torch.randint(0, 2, (config.demos,), generator=generator) * 2 - 1
    actions = obstacle_position(observations) + side * CLEARANCE
    actions = actions + config.noise * torch.randn(config.demos, generator=generator)

    gaussians = [backbone(width, 2) for width in config.widths]
    mixture = backbone(config.head_width, 6)
    categorical = backbone(config.head_width, config.bins)
    centres = torch.linspace(-1, 1, config.bins)
    half_bin = float(centres[1] - centres[0]) / 2
    targets = torch.bucketize(actions.clamp(-1, 1), centres + half_bin).clamp(max=config.bins - 1)

    # Adam moves every output weight by ~lr per step, so a width-w output layer moves the output
    # by ~w * lr: scale its step by 16 / w (the muP rule for Adam) or the widest nets blow up.
    groups = []
    for net, width in [
        *zip(gaussians, config.widths),
        (mixture, config.head_width),
        (categorical, config.head_width),
    ]:
        groups.append((net[0].parameters(), config.learning_rate))
        groups.append((net[2].parameters(), config.learning_rate * 16 / width))
    optimiser = Adam(groups)
    for step in range(config.steps):
        batch = torch.randint(0, config.demos, (config.batch,), generator=generator)
        inputs, labels = observations[batch, None], actions[batch]
        loss = sum(gaussian_nll(net(inputs), labels) for net in gaussians)
        loss = loss - mixture_log_density(mixture(inputs), labels).mean()
        loss = loss + torch.nn.functional.cross_entropy(categorical(inputs), targets[batch])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step(lr_scale=1 - 0.9 * step / config.steps)  # linear decay to 10%

    grid = torch.linspace(-1, 1, 101)
    obstacle = obstacle_position(grid)[:, None]
    action_axis = torch.linspace(-1.2, 1.2, 481)
    # Gap: actions closer to the obstacle than to either expert mode, |a - c(s)| < clearance / 2.
    in_gap = (action_axis[None, :] - obstacle).abs() < CLEARANCE / 2
    right_of_obstacle = action_axis[None, :] > obstacle
    with torch.no_grad():
        gaussian_out = [net(grid[:, None]) for net in gaussians]
        mixture_out = mixture(grid[:, None])
        category_probs = torch.softmax(categorical(grid[:, None]), dim=1)
        mean, std = gaussian_out[-1][:, :1], gaussian_out[-1][:, 1:2].clamp(-5, 2).exp()
        gaussian_density = torch.exp(-0.5 * ((action_axis - mean) / std) ** 2) / (
            std * math.sqrt(2 * math.pi)
        )
        mixture_density = (
            mixture_log_density(
                mixture_out.repeat_interleave(len(action_axis), 0), action_axis.repeat(len(grid))
            )
            .exp()
            .view(len(grid), -1)
        )

    def mass(density, mask):
        """Share of a density (rows over action_axis) inside a mask."""
        return (density * mask).sum(1) / density.sum(1)

    gaussian_offsets = torch.stack([out[:, 0] for out in gaussian_out]) - obstacle.T
    mixture_right = mass(mixture_density, right_of_obstacle)
    category_right = (category_probs * (centres[None, :] > obstacle)).sum(1)
    component_offsets = (mixture_out[:, 2:4] - obstacle).abs()
    metrics = {
        # < 0.5 means the mean sits in the gap, closer to the obstacle than to either mode.
        "gaussian_max_mean_offset_over_clearance": float(gaussian_offsets.abs().max() / CLEARANCE),
        "gaussian_gap_mass": float(mass(gaussian_density, in_gap).mean()),
        "mixture_gap_mass": float(mass(mixture_density, in_gap).mean()),
        "mixture_min_side_mass": float(torch.minimum(mixture_right, 1 - mixture_right).min()),
        "mixture_max_mode_error": float((component_offsets - CLEARANCE).abs().max()),
        "categorical_gap_mass": float(
            (category_probs * ((centres[None, :] - obstacle).abs() < CLEARANCE / 2)).sum(1).mean()
        ),
        "categorical_min_side_mass": float(torch.minimum(category_right, 1 - category_right).min()),
        "data_gap_fraction": float(
            ((actions - obstacle_position(observations)).abs() < CLEARANCE / 2).float().mean()
        ),
    }
    middle = len(grid) // 2
    near_middle = observations.abs() < 0.1
    return Result(
        metrics=metrics,
        series={
            "observations": observations[:400].tolist(),
            "actions": actions[:400].tolist(),
            "grid": grid.tolist(),
            "obstacle": obstacle[:, 0].tolist(),
            "widths": list(config.widths),
            "gaussian_means": [out[:, 0].tolist() for out in gaussian_out],
            "mixture_means": mixture_out[:, 2:4].T.tolist(),
            "action_axis": action_axis.tolist(),
            "density_s0_gaussian": gaussian_density[middle].tolist(),
            "density_s0_mixture": mixture_density[middle].tolist(),
            "bins": config.bins,
            "category_centres": centres.tolist(),
            "density_s0_categorical": (category_probs[middle] / (2 * half_bin)).tolist(),
            "actions_near_s0": actions[near_middle].tolist(),
        },
    )


def plot(result: Result) -> bytes:
    """Top: demos and each head's mean(s) over s. Bottom: action densities at s = 0."""
    series = result.series
    fig, (ax_fit, ax_density) = phone_figure(
        2,
        height_per_panel=4.6,
        title="A Gaussian head steers into the obstacle at every width; a mixture keeps both modes",
    )
    ax_fit.scatter(
        series["observations"], series["actions"], s=8, color="lightgray", label="expert demos"
    )
    ax_fit.plot(
        series["grid"], series["obstacle"], color="black", lw=8, alpha=0.3, label="obstacle"
    )
    widths = series["widths"]
    ax_fit.plot(
        series["grid"],
        series["gaussian_means"][-1],
        color=PALETTE[1],
        label=f"Gaussian mean (widths {widths[0]}-{widths[-1]} alike)",
    )
    # both mixture components as one line, broken between them
    grid, (first, second) = series["grid"], series["mixture_means"]
    ax_fit.plot(
        grid + [float("nan")] + grid,
        first + [float("nan")] + second,
        "--",
        color=PALETTE[0],
        label="mixture component means",
    )
    style_panel(
        ax_fit, "Heads fitted to pass-left / pass-right demos", "observation s", "steering a"
    )
    legend_below(ax_fit, ncol=2)

    ax_density.hist(
        series["actions_near_s0"],
        bins=30,
        density=True,
        color="lightgray",
        label="expert, |s| < 0.1",
    )
    ax_density.plot(
        series["action_axis"],
        series["density_s0_gaussian"],
        color=PALETTE[1],
        label=f"Gaussian, width {widths[-1]}",
    )
    ax_density.plot(
        series["action_axis"],
        series["density_s0_mixture"],
        "--",
        color=PALETTE[0],
        label="2-component mixture",
    )
    ax_density.step(
        series["category_centres"],
        series["density_s0_categorical"],
        where="mid",
        color=PALETTE[2],
        label=f"categorical, {series['bins']} bins",
    )
    style_panel(ax_density, "Action density at s = 0 (obstacle at a = 0)", "steering a", "density")
    legend_below(ax_density, ncol=2)
    return save_png(fig)
