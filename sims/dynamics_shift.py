"""Hindsight relabelling fixes goals, not dynamics: concrete data do not teach sand.

A robot pushes a puck once; it slides v^2 / (2 mu) before friction stops it (v: push speed).
Concrete has mu = 1, sand mu = 2.5 (more drag, shorter slides). The robot's data are random
pushes on concrete, each relabelled with the goal it did reach (HER, Andrychowicz et al. 2017,
arXiv 1707.01495, "final" strategy): every push becomes a correct example of how to reach the
place where the puck stopped. A goal-conditioned policy v = pi(g) is fitted to them by
regression (for one-step tasks relabelled data are exact demonstrations, as in GCSL, Ghosh et
al. 2019, arXiv 1912.06088). Relabelling multiplies the goals covered; it cannot change which
dynamics produced the data. On concrete the policy is accurate from a few dozen pushes on; on
sand its error sits at the bias of the concrete inverse model (the puck stops at 0.4 g, 60%
short) however many concrete pushes are added. A few dozen relabelled sand pushes, with the
surface as an input, remove the bias; so would identifying the dynamics online (domain
randomisation or system identification). All policies train together as one batched set of small
MLPs. HER addresses sparse goal-reaching; a change of dynamics is a different problem, which no
relabelling of the same transitions can fix. Top: goal error against the amount of concrete
data. Bottom: the learned push speed against the ideal one on each surface.
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
from sims.offline_q_overestimation import BatchedMLP

TITLE = "Hindsight relabelling vs a change of dynamics"
CAPTION = (
    "Relabelled concrete pushes teach concrete (blue, small error), but on sand (red) the "
    "puck stops 60% short at every data size: HER invents new goals, not new physics. Adding "
    "a few dozen relabelled sand pushes with the surface as input (green) fixes sand."
)

FRICTION = {"concrete": 1.0, "sand": 2.5}


@dataclass(frozen=True)
class Config:
    """Data amounts, noise, network and training length."""

    concrete_pushes: tuple[int, ...] = (16, 64, 256, 1024, 4096)
    """Amounts of relabelled concrete data to sweep."""
    sand_pushes: int = 32
    """Relabelled sand pushes added for the fixed variant."""
    slide_noise: float = 0.05
    """Relative noise of the slide distance (multiplicative, per push)."""
    max_push: float = 3.0
    """Random pushes are uniform on [0, max_push] (covers goals up to 1.8 m on sand)."""
    goal_range: tuple[float, float] = (0.2, 1.5)
    """Test goals (m) are evenly spaced over this range."""
    hidden: int = 32
    """Hidden width of the policies (two hidden layers)."""
    steps: int = 200
    """Adam steps."""
    batch: int = 64
    """Relabelled pushes per step and policy (even: sand-aware policies draw half from sand)."""
    learning_rate: float = 0.015
    """Adam step size."""
    seed: int = 0
    """Seed for data, initialisation and minibatches."""


def slide_distance(push_speed, friction: float):
    """Where the puck stops: v^2 / (2 mu) (constant deceleration mu, g absorbed into mu)."""
    return push_speed**2 / (2 * friction)


def ideal_push(goal, friction: float):
    """The inverse model: the push speed that stops the puck exactly at the goal."""
    return (2 * friction * goal) ** 0.5


def relabelled_pushes(count: int, friction: float, config: Config, generator):
    """Random pushes, each relabelled with the goal it reached: (achieved goal, push speed)."""
    import torch

    speeds = torch.rand(count, generator=generator) * config.max_push
    noise = 1 + config.slide_noise * torch.randn(count, generator=generator)
    return slide_distance(speeds, friction) * noise, speeds


def run(config: Config = Config()) -> Result:
    """Train surface-blind HER policies on growing concrete data, and surface-aware ones + sand."""
    generator = seeded(config.seed)
    import torch

    largest = max(config.concrete_pushes)
    concrete_goals, concrete_speeds = relabelled_pushes(
        largest, FRICTION["concrete"], config, generator
    )
    sand_goals, sand_speeds = relabelled_pushes(
        config.sand_pushes, FRICTION["sand"], config, generator
    )
    # Member i < m: surface-blind policy on the first n_i concrete pushes (surface flag 0).
    # Member m + i: the same concrete pushes plus the sand pushes, surface flag as an input;
    # half of its minibatch is sand (balanced replay), or the sand pushes would be drowned out.
    sizes = list(config.concrete_pushes)
    members = 2 * len(sizes)
    per_member = torch.tensor(sizes * 2, dtype=torch.float32)[:, None]
    sand_share = torch.zeros(members, config.batch, dtype=torch.bool)
    sand_share[len(sizes) :, : config.batch // 2] = True

    policies = BatchedMLP(members, [2, config.hidden, config.hidden, 1], generator)
    optimiser = Adam([(policies.params, config.learning_rate)])
    for _ in range(config.steps):
        uniform = torch.rand(members, config.batch, generator=generator)
        concrete_pick = (uniform * per_member).long()
        sand_pick = (uniform * config.sand_pushes).long()
        goals = torch.where(sand_share, sand_goals[sand_pick], concrete_goals[concrete_pick])
        speeds = torch.where(sand_share, sand_speeds[sand_pick], concrete_speeds[concrete_pick])
        predicted = policies(torch.stack([goals, sand_share.float()], -1))[..., 0]
        loss = ((predicted - speeds) ** 2).mean(1).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()

    test_goals = torch.linspace(*config.goal_range, 101)
    errors = {}
    pushes = {}
    with torch.no_grad():
        for surface, friction in FRICTION.items():
            flag = 1.0 if surface == "sand" else 0.0
            flags = torch.full((members, len(test_goals)), flag)
            flags[: len(sizes)] = 0.0  # the blind policies never see the surface
            speeds = policies(torch.stack([test_goals.expand(members, -1), flags], -1))[..., 0]
            reached = slide_distance(speeds.clamp(min=0), friction)
            errors[surface] = (reached - test_goals).abs().mean(1)
            pushes[surface] = speeds

    blind, aware = slice(0, len(sizes)), slice(len(sizes), members)
    return Result(
        metrics={
            "concrete_error_least_data": float(errors["concrete"][0]),
            "concrete_error_most_data": float(errors["concrete"][len(sizes) - 1]),
            "sand_error_least_data": float(errors["sand"][0]),
            "sand_error_most_data": float(errors["sand"][len(sizes) - 1]),
            "sand_error_with_sand_data": float(errors["sand"][members - 1]),
            "concrete_error_with_sand_data": float(errors["concrete"][members - 1]),
            # Bias of the exact concrete inverse model on sand: it stops at g * mu_c / mu_s.
            "sand_error_of_exact_concrete_model": float(
                (1 - FRICTION["concrete"] / FRICTION["sand"]) * test_goals.mean()
            ),
        },
        series={
            "concrete_pushes": sizes,
            "sand_pushes": config.sand_pushes,
            "blind_error_concrete": errors["concrete"][blind].tolist(),
            "blind_error_sand": errors["sand"][blind].tolist(),
            "aware_error_sand": errors["sand"][aware].tolist(),
            "test_goals": test_goals.tolist(),
            "ideal_concrete": ideal_push(test_goals, FRICTION["concrete"]).tolist(),
            "ideal_sand": ideal_push(test_goals, FRICTION["sand"]).tolist(),
            "blind_push": pushes["sand"][len(sizes) - 1].tolist(),
            "aware_push_sand": pushes["sand"][members - 1].tolist(),
        },
    )


def plot(result: Result) -> bytes:
    """Top: goal error vs concrete data. Bottom: learned vs ideal push speed per surface."""
    series = result.series
    fig, (ax_error, ax_push) = phone_figure(
        2,
        height_per_panel=5.0,
        title="Relabelling goals does not relabel dynamics: concrete data never teach sand",
    )
    sizes = series["concrete_pushes"]
    ax_error.semilogx(
        sizes,
        series["blind_error_concrete"],
        "o-",
        color=PALETTE[0],
        label="concrete data, on concrete",
    )
    ax_error.semilogx(
        sizes, series["blind_error_sand"], "s-", color=PALETTE[1], label="concrete data, on sand"
    )
    ax_error.semilogx(
        sizes,
        series["aware_error_sand"],
        "^-",
        color=PALETTE[2],
        label=f"+ {series['sand_pushes']} sand pushes, on sand",
    )
    ax_error.axhline(
        result.metrics["sand_error_of_exact_concrete_model"],
        color="gray",
        ls=":",
        label="exact concrete model, on sand",
    )
    style_panel(
        ax_error, "Goal error (HER-relabelled pushes)", "concrete pushes", "|stop - goal| (m)"
    )
    ax_error.set_ylim(bottom=0)
    legend_below(ax_error)

    goals = series["test_goals"]
    ax_push.plot(
        goals,
        series["ideal_concrete"],
        color=PALETTE[0],
        lw=6,
        alpha=0.35,
        label="ideal, concrete",
    )
    ax_push.plot(
        goals, series["ideal_sand"], color=PALETTE[1], lw=6, alpha=0.35, label="ideal, sand"
    )
    ax_push.plot(
        goals, series["blind_push"], "--", color=PALETTE[1], label="learned, concrete data"
    )
    ax_push.plot(
        goals, series["aware_push_sand"], "--", color=PALETTE[2], label="learned, + sand data"
    )
    style_panel(ax_push, "Push speed chosen for each goal", "goal distance (m)", "push speed (m/s)")
    legend_below(ax_push, ncol=2)
    return save_png(fig)
