"""Compounding errors in behaviour cloning: cost ~ eps*T^2 for BC, ~ eps*T for DAgger.

A car keeps its lane on a 1-D grid of lateral offsets. The expert never leaves the centre, so
its demonstrations contain one state. The learner is any classifier whose error rate on the
states it was trained on is eps (the assumption of the reductions): it takes the wrong action
with probability eps per step. Behaviour cloning (BC) trains on the expert's states only; after
its first mistake it sits in a state it never saw, falls back to the label it saw most ("keep
straight") and stays off the lane, so the probability of being off grows ~ eps*t and the
expected cost over a horizon T grows ~ eps*T^2/2 (Ross & Bagnell 2010, "Efficient Reductions for
Imitation Learning", AISTATS). DAgger (Ross, Gordon & Bagnell 2011, "A Reduction of Imitation
Learning and Structured Prediction to No-Regret Online Learning", arXiv 1011.0686) rolls out the
learner, asks the expert to label the states the learner itself visits, aggregates and refits:
the learner now knows how to steer back, each mistake costs O(1) steps and the cost grows ~
eps*T. Costs are exact expectations (state-distribution propagation), not Monte Carlo. The plot
shows expected cost against T on log-log axes with both slopes, and, at the longest horizon, the
probability of being off the lane at each step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, figure_png, new_figure, style_axes

TITLE = "Compounding errors: behaviour cloning vs DAgger"
CAPTION = (
    "Log-log: BC's expected cost rises with slope ~2 in the horizon T (each mistake leaves the "
    "expert's states for good), DAgger's with slope ~1 (it was trained where it errs and steers "
    "back). Right: BC's chance of being off the lane climbs every step; DAgger's stays ~eps."
)

LEFT, STAY, RIGHT = 0, 1, 2
STEP = (-1, 0, 1)  # lateral move of each action


@dataclass(frozen=True)
class Config:
    """Lane-keeping imitation problem and the horizons to sweep."""

    error_rate: float = 0.0005
    """eps: probability per step that the learner takes a wrong action (its training 0-1 loss)."""
    horizons: tuple[int, ...] = (8, 16, 32, 64, 128, 256)
    """Episode lengths T, increasing; eps * max(T) should stay well below 1 (the bounds' regime)."""
    half_width: int = 4
    """Offsets run from -half_width to +half_width; the edges are road shoulders (clipped)."""
    dagger_iterations: int = 5
    """DAgger rounds: round 1 rolls out the expert, later rounds the current learner."""
    rollouts_per_iteration: int = 2000
    """Trajectories sampled per DAgger round to collect states for the expert to label."""
    seed: int = 0
    """Seed for the DAgger rollouts (the cost evaluation itself is exact)."""


def expert_action(offsets):
    """The expert steers toward the lane centre (offset 0)."""
    return np.where(offsets > 0, LEFT, np.where(offsets < 0, RIGHT, STAY))


def expert_label_counts(offsets, half_width: int):
    """Data set as counts: how often each state (row) got each expert action (column)."""
    n_states = 2 * half_width + 1
    flat = (offsets + half_width) * 3 + expert_action(offsets)
    return np.bincount(flat, minlength=n_states * 3).reshape(n_states, 3)


def fit_table(counts):
    """Tabular classifier: per-state majority label; unseen states fall back to the global majority.

    The fallback is what a classifier does where it has no evidence: it predicts its prior.
    """
    prior = int(counts.sum(0).argmax())
    return np.where(counts.sum(1) > 0, counts.argmax(1), prior)


def action_probabilities(table, error_rate: float):
    """pi(a|s): the fitted action w.p. 1-eps, each of the two other actions w.p. eps/2."""
    probs = np.full((len(table), 3), error_rate / 2)
    probs[np.arange(len(table)), table] = 1 - error_rate
    return probs


def transition_matrix(action_probs, half_width: int):
    """M[s, s'] = sum_a pi(a|s) [s + step(a) = s'] on offsets clipped to the road."""
    n_states = 2 * half_width + 1
    matrix = np.zeros((n_states, n_states))
    for state in range(n_states):
        for action, step in enumerate(STEP):
            nxt = min(max(state + step, 0), n_states - 1)
            matrix[state, nxt] += action_probs[state, action]
    return matrix


def off_lane_probability(table, config: Config, horizon: int):
    """P(offset != 0 at step t) for t = 1..T, propagating the state distribution exactly."""
    matrix = transition_matrix(action_probabilities(table, config.error_rate), config.half_width)
    centre = config.half_width
    dist = np.zeros(2 * centre + 1)
    dist[centre] = 1.0
    off = np.empty(horizon)
    for t in range(horizon):
        dist = dist @ matrix
        off[t] = 1.0 - dist[centre]  # cost 1 for every step spent off the lane centre
    return off


def train_dagger(config: Config, horizon: int, rng):
    """DAgger with beta_1 = 1, beta_i = 0 after: aggregate expert labels on the learner's states."""
    centre = config.half_width
    counts = np.zeros((2 * centre + 1, 3), dtype=np.int64)  # the aggregated data set
    table = None
    for iteration in range(config.dagger_iterations):
        offsets = np.zeros(config.rollouts_per_iteration, dtype=np.int64)
        counts += expert_label_counts(offsets, centre)
        for _ in range(horizon):
            if iteration == 0:
                chosen = expert_action(offsets)  # the expert executes (and never errs)
            else:
                chosen = table[offsets + centre]
                wrong = rng.random(offsets.shape) < config.error_rate
                shift = rng.integers(1, 3, size=offsets.shape)  # one of the two other actions
                chosen = np.where(wrong, (chosen + shift) % 3, chosen)
            offsets = np.clip(offsets + np.take(STEP, chosen), -centre, centre)
            counts += expert_label_counts(offsets, centre)  # the expert labels what we visit
        table = fit_table(counts)
    return table


def growth_exponent(horizons, costs) -> float:
    """Slope of log(cost) against log(T): 2 means quadratic growth, 1 linear."""
    return float(np.polyfit(np.log(horizons), np.log(costs), 1)[0])


def run(config: Config = Config()) -> Result:
    """Expected cost of BC and DAgger learners over a sweep of horizons."""
    rng = np.random.default_rng(config.seed)
    centre, n_states = config.half_width, 2 * config.half_width + 1
    # BC's data: expert demonstrations, which never leave offset 0 however many there are.
    demo_offsets = np.zeros(1000, dtype=np.int64)
    bc_table = fit_table(expert_label_counts(demo_offsets, centre))

    expert_table = expert_action(np.arange(n_states) - centre)
    bc_costs, dagger_costs = [], []
    for horizon in config.horizons:
        dagger_table = train_dagger(config, horizon, rng)
        bc_costs.append(float(off_lane_probability(bc_table, config, horizon).sum()))
        dagger_costs.append(float(off_lane_probability(dagger_table, config, horizon).sum()))

    longest = config.horizons[-1]  # dagger_table now belongs to the longest horizon
    return Result(
        metrics={
            "bc_growth_exponent": growth_exponent(config.horizons, bc_costs),
            "dagger_growth_exponent": growth_exponent(config.horizons, dagger_costs),
            "bc_cost_longest": bc_costs[-1],
            "dagger_cost_longest": dagger_costs[-1],
            "bc_states_with_expert_action": float((bc_table == expert_table).sum()),
            "dagger_states_with_expert_action": float((dagger_table == expert_table).sum()),
        },
        series={
            "horizons": list(config.horizons),
            "bc_cost": bc_costs,
            "dagger_cost": dagger_costs,
            "error_rate": config.error_rate,
            "bc_off_lane": off_lane_probability(bc_table, config, longest).tolist(),
            "dagger_off_lane": off_lane_probability(dagger_table, config, longest).tolist(),
        },
    )


def plot(result: Result) -> bytes:
    """Cost vs horizon (log-log) and per-step off-lane probability at the longest horizon."""
    series = result.series
    horizons = np.array(series["horizons"], dtype=float)
    eps = series["error_rate"]
    fig, (ax_cost, ax_step) = new_figure(1, 2, height_px=480)

    ax_cost.loglog(
        horizons,
        series["bc_cost"],
        "o-",
        color=PALETTE[1],
        lw=2,
        label=f"BC (slope {result.metrics['bc_growth_exponent']:.2f})",
    )
    ax_cost.loglog(
        horizons,
        series["dagger_cost"],
        "s-",
        color=PALETTE[0],
        lw=2,
        label=f"DAgger (slope {result.metrics['dagger_growth_exponent']:.2f})",
    )
    ax_cost.loglog(horizons, eps * horizons**2 / 2, ":", color="gray", label="eps T²/2")
    ax_cost.loglog(horizons, eps * horizons, "--", color="gray", label="eps T")
    style_axes(
        ax_cost, "Expected cost vs horizon", "horizon T (steps)", "expected steps off the lane"
    )

    steps = np.arange(1, len(series["bc_off_lane"]) + 1)
    ax_step.plot(steps, series["bc_off_lane"], color=PALETTE[1], lw=2, label="BC")
    ax_step.plot(steps, series["dagger_off_lane"], color=PALETTE[0], lw=2, label="DAgger")
    style_axes(
        ax_step, f"Off the lane at step t (T = {int(horizons[-1])})", "step t", "P(off the lane)"
    )
    return figure_png(fig, suptitle=f"Imitation with per-step error eps = {eps}")
