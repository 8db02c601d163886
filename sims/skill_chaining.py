"""Skill chaining: the second skill fails where the first one hands over.

A point robot must go through a door (wall at x = 0, opening |y| < 0.15) to a goal at (0.8, 0).
Skill B ("go through the door") is behaviour-cloned from an expert that drives forward, lines up
with the door and drives through, starting from B's own start distribution N((-0.8, 0), 0.08^2
I). B's policy copies the actions of the nearest demonstration states (k-nearest-neighbour
regression, the non-parametric BC of VINN, Pari et al. 2021, arXiv 2112.01511): inside the
demonstrated region it is nearly exact, and outside it does what it did at the most similar
state it has seen. Touching the wall ends the run. Skill A ("reach the door area") ends its runs
at N((-0.8, d), 0.08^2 I); the larger the hand-off gap d, the further B starts from the states
it was trained on (covariate shift). B then copies the actions of the nearest training states,
under-corrects toward the door and hits the wall: its success falls as the gap grows, although B
works perfectly from its own starts. Training B on demonstrations that start from A's actual end
states fixes the hand-off; so does skill chaining in the sense of Konidaris & Barto (2009,
"Skill Discovery in Continuous Reinforcement Learning Domains using Skill Chaining", NeurIPS),
which learns each skill's initiation set (the states from which it succeeds) and makes it the
previous skill's goal. Top: B's initiation set with A's end states. Bottom: success against
the gap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Skill chaining: covariate shift at the hand-off"
CAPTION = (
    "Top: where skill B succeeds from (its initiation set, green) vs where skill A leaves the "
    "robot (red dots). Bottom: B trained on its own starts fails more the further A's end states "
    "are from them; B trained on A's actual end states succeeds at every gap."
)

GOAL = np.array([0.8, 0.0])
DOOR_HALF_WIDTH = 0.15
SPEED = 0.08  # maximum distance per step
B_START = np.array([-0.8, 0.0])


@dataclass(frozen=True)
class Config:
    """Geometry of the hand-off, demonstrations and evaluation."""

    start_spread: float = 0.08
    """Standard deviation (per axis) of B's start states and of A's end states."""
    gaps: tuple[float, ...] = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6)
    """Vertical offsets d of A's end-state mean from B's start mean."""
    demos: int = 16
    """Expert demonstrations for each training start distribution."""
    neighbours: int = 5
    """k of the nearest-neighbour policy."""
    horizon: int = 35
    """Steps per run of skill B."""
    rollouts: int = 50
    """Runs of B per gap."""
    map_resolution: int = 20
    """Grid of start states per axis for the initiation-set map."""
    seed: int = 0
    """Seed for start states, expert noise and motion noise."""


def expert_action(states):
    """Drive forward to x = -0.3, line up with the door, drive through it, then to the goal."""
    x, y = states[:, 0], states[:, 1]
    line_up = np.stack([np.full_like(x, 0.05), np.zeros_like(y)], axis=1)
    forward = np.stack([x + 1.0, y], axis=1)
    target = np.where((x < -0.3)[:, None], forward, np.where((x < 0)[:, None], line_up, GOAL))
    heading = target - states
    return SPEED * heading / np.maximum(np.linalg.norm(heading, axis=1, keepdims=True), 1e-9)


def move(states, actions, rng):
    """Speed-capped motion with a little noise. Returns (next states, crashed into the wall)."""
    norms = np.linalg.norm(actions, axis=1, keepdims=True)
    actions = actions * np.minimum(1.0, SPEED / np.maximum(norms, 1e-9))
    nxt = states + actions + 0.005 * rng.standard_normal(states.shape)
    crashed = (states[:, 0] < 0) & (nxt[:, 0] >= 0) & (np.abs(nxt[:, 1]) >= DOOR_HALF_WIDTH)
    return np.where(crashed[:, None], states, nxt), crashed


def sample_starts(count: int, gap: float, spread: float, rng):
    return B_START + np.array([0.0, gap]) + spread * rng.standard_normal((count, 2))


def demonstrate(starts, horizon: int, rng):
    """Expert runs from the given starts: (states, actions) of every step until the goal."""
    states, actions = [], []
    current = starts
    for _ in range(horizon):
        action = expert_action(current)
        underway = np.linalg.norm(current - GOAL, axis=1) > 0.1
        states.append(current[underway])
        actions.append(action[underway])
        current, _ = move(current, action, rng)
    return np.concatenate(states), np.concatenate(actions)


class NearestNeighbourPolicy:
    """Mean action of the k demonstration states nearest to the query (Euclidean)."""

    def __init__(self, states, actions, neighbours: int):
        self.states, self.actions, self.k = states, actions, neighbours

    def __call__(self, queries):
        distances = (queries[:, :1] - self.states[:, 0]) ** 2 + (
            queries[:, 1:] - self.states[:, 1]
        ) ** 2
        nearest = np.argpartition(distances, self.k, axis=1)[:, : self.k]
        return self.actions[nearest].mean(1)


def success_rate(policy, starts, horizon: int, rng) -> np.ndarray:
    """Per start: reached within 0.15 of the goal before the horizon, without touching the wall."""
    states = starts
    wrecked = np.zeros(len(starts), dtype=bool)
    arrived = np.zeros(len(starts), dtype=bool)
    for _ in range(horizon):
        states, crashed = move(states, policy(states), rng)
        wrecked |= crashed
        arrived |= ~wrecked & (np.linalg.norm(states - GOAL, axis=1) < 0.15)
    return arrived


def run(config: Config = Config()) -> Result:
    """B trained on its own starts vs B trained on A's end states, across hand-off gaps."""
    rng = np.random.default_rng(config.seed)
    spread = config.start_spread
    own_demos = demonstrate(sample_starts(config.demos, 0.0, spread, rng), config.horizon, rng)
    skill_b = NearestNeighbourPolicy(*own_demos, config.neighbours)

    a_ends = [sample_starts(config.rollouts, gap, spread, rng) for gap in config.gaps]
    own_runs = success_rate(skill_b, np.concatenate(a_ends), config.horizon, rng)
    own_success = own_runs.reshape(len(config.gaps), -1).mean(1).tolist()
    retrained_success = []
    for gap, ends in zip(config.gaps, a_ends):
        handoff_demos = demonstrate(
            sample_starts(config.demos, gap, spread, rng), config.horizon, rng
        )
        retrained = NearestNeighbourPolicy(*handoff_demos, config.neighbours)
        retrained_success.append(float(success_rate(retrained, ends, config.horizon, rng).mean()))

    xs = np.linspace(-1.2, -0.2, config.map_resolution)
    ys = np.linspace(-0.9, 0.9, config.map_resolution)
    grid = np.stack(np.meshgrid(xs, ys), -1).reshape(-1, 2)
    initiation = success_rate(skill_b, grid, config.horizon, rng).reshape(len(ys), len(xs))

    gaps_in_spreads = np.array(config.gaps) / spread
    failing = [g for g, s in zip(gaps_in_spreads, own_success) if s < 0.5]
    shown_gap = config.gaps[int(np.argmin(np.abs(np.array(own_success) - 0.2)))]
    return Result(
        metrics={
            "own_success_zero_gap": own_success[0],
            "own_success_largest_gap": own_success[-1],
            "retrained_min_success": min(retrained_success),
            "gap_in_spreads_where_own_below_half": float(failing[0]) if failing else float("nan"),
            "initiation_set_fraction_of_map": float(initiation.mean()),
        },
        series={
            "gaps_in_spreads": gaps_in_spreads.tolist(),
            "own_success": own_success,
            "retrained_success": retrained_success,
            "map_x": xs.tolist(),
            "map_y": ys.tolist(),
            "initiation_set": initiation.astype(float).tolist(),
            "b_starts": own_demos[0][: config.demos].tolist(),
            "shown_gap": shown_gap,
            "a_ends_shown": a_ends[config.gaps.index(shown_gap)][:40].tolist(),
        },
    )


def plot(result: Result) -> bytes:
    """Top: initiation-set map with the hand-off states. Bottom: success vs gap."""
    from matplotlib.patches import Patch

    series = result.series
    fig, (ax_map, ax_gap) = phone_figure(
        2,
        height_per_panel=4.8,
        title="Skill B fails where skill A hands over, unless B is trained on A's end states",
    )
    xs, ys = np.array(series["map_x"]), np.array(series["map_y"])
    ax_map.contourf(
        xs,
        ys,
        np.array(series["initiation_set"]),
        levels=[0.5, 1.5],
        colors=[PALETTE[2]],
        alpha=0.3,
    )
    b_starts = np.array(series["b_starts"])
    a_ends = np.array(series["a_ends_shown"])
    starts = ax_map.scatter(b_starts[:, 0], b_starts[:, 1], s=16, color=PALETTE[0])
    ends = ax_map.scatter(a_ends[:, 0], a_ends[:, 1], s=16, color=PALETTE[1])
    # the wall, broken by the door, as one line
    (wall,) = ax_map.plot(
        [0, 0, np.nan, 0, 0],
        [-1, -DOOR_HALF_WIDTH, np.nan, DOOR_HALF_WIDTH, 1],
        color="black",
        lw=4,
    )
    ax_map.text(
        *GOAL,
        "goal",
        ha="center",
        va="center",
        fontsize=16,
        bbox={"boxstyle": "round", "fc": "white", "ec": "black"},
    )
    ax_map.set_xlim(-1.25, 1.0)
    ax_map.set_ylim(-1.0, 1.0)
    style_panel(ax_map, "Where B works (green) vs where A hands over", "x (m)", "y (m)")
    legend_below(
        ax_map,
        ncol=2,
        handles=[Patch(color=PALETTE[2], alpha=0.4), starts, ends, wall],
        labels=[
            "B succeeds from here",
            "B's training starts",
            f"A's end states (gap {series['shown_gap']})",
            "wall with door",
        ],
    )

    gaps = series["gaps_in_spreads"]
    ax_gap.plot(
        gaps, series["own_success"], "o-", color=PALETTE[1], label="B trained on its own starts"
    )
    ax_gap.plot(
        gaps,
        series["retrained_success"],
        "s-",
        color=PALETTE[0],
        label="B trained on A's end states",
    )
    ax_gap.set_ylim(-0.03, 1.05)
    style_panel(
        ax_gap,
        "Chained success vs hand-off gap",
        "hand-off gap d / start spread",
        "P(B reaches goal)",
    )
    legend_below(ax_gap)
    return save_png(fig)
