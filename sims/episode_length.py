"""Longer episodes, same data: the agent drifts into a sink, the start state is forgotten.

A 1-D world: cells 0..L-1, the agent starts in cell 5, the goal (reward 1, terminal) is the last
cell, and cells 0-2 are a sink: mud where stepping right succeeds only 5% of the time. A wind
pushes the agent one cell left 20% of the time, so an untrained agent drifts into the sink.
Tabular Q-learning with epsilon-greedy gets the same budget of environment steps at every
episode length H. With short episodes the time limit keeps resetting it to the start, so the
replay data covers the start region and the path to the goal. With long episodes (fewer resets,
towards reset-free training) the first failure parks it in the sink for the rest of the episode:
almost all data comes from the sink, coverage near the start collapses, and the greedy policy's
success from the start state falls to that of a random walk. (Sharma, Gupta, Levine, Hausman &
Finn 2021, "Autonomous reinforcement learning via subgoal curricula" / VaPRL, arXiv 2107.12931,
on learning with few resets.) Second effect, at short H: treating the time-limit cut as a
terminal state (target r instead of r + gamma max Q(s')) teaches the agent that states where
time ran out are worth 0, biasing values down; partial-episode bootstrapping removes the bias
(Pardo, Tavakoli, Levdik & Kormushev 2018, "Time limits in reinforcement learning",
arXiv 1712.00378). Top: success, sink share and start coverage vs H. Bottom: learned V(start)
vs the true V*(start) for both time-limit treatments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Episode length: long episodes drift into the sink"
CAPTION = (
    "Same 5000 steps of data: with long episodes the agent drifts into the sink and stays, so "
    "most data comes from there, the start is barely seen and success from the start collapses. "
    "Bottom: cutting short episodes as if terminal biases V(start) low; bootstrapping does not."
)

LEFT, RIGHT = 0, 1


@dataclass(frozen=True)
class Config:
    """World, learner and the episode lengths to sweep."""

    n_cells: int = 12
    """Cells 0..n_cells-1; the goal is the last cell."""
    sink_width: int = 3
    """Cells 0..sink_width-1 form the sink."""
    start_cell: int = 5
    """Where every episode starts."""
    wind: float = 0.2
    """Probability per step of being pushed one cell left whatever the action."""
    sink_escape: float = 0.05
    """In the sink, probability that a step right succeeds (when the wind does not blow)."""
    episode_lengths: tuple[int, ...] = (10, 20, 50, 100, 300, 1000, 5000)
    """Time limits H to compare."""
    total_steps: int = 5000
    """Environment steps of training data, the same for every H."""
    discount: float = 0.95
    """Gamma."""
    learning_rate: float = 0.2
    """Q-learning step size."""
    epsilon: float = 0.1
    """Exploration rate (greedy ties are broken at random, so an untrained agent walks randomly)."""
    seeds: int = 8
    """Independent learners per setting, run in parallel."""
    eval_rollouts: int = 200
    """Greedy rollouts from the start state per learner to measure success."""
    eval_horizon: int = 100
    """Steps allowed in an evaluation rollout."""
    seed: int = 0
    """Seed for every random generator."""


def transition_matrix(config: Config):
    """P[s, a, s'] of the windy world with a muddy sink; the goal is absorbing."""
    n = config.n_cells
    probs = np.zeros((n, 2, n))
    for cell in range(n):
        left, right = max(cell - 1, 0), min(cell + 1, n - 1)
        probs[cell, LEFT, left] += 1.0
        probs[cell, RIGHT, left] += config.wind
        calm = 1.0 - config.wind
        if cell < config.sink_width:
            probs[cell, RIGHT, right] += calm * config.sink_escape
            probs[cell, RIGHT, cell] += calm * (1.0 - config.sink_escape)
        else:
            probs[cell, RIGHT, right] += calm
    goal = n - 1
    probs[goal] = 0.0
    probs[goal, :, goal] = 1.0
    return probs


def sample_next(cdf, cells, actions, rng):
    """Draw s' ~ P[s, a, .] for arrays of cells and actions; cdf = P.cumsum(-1) (inverse CDF)."""
    draws = rng.random(cells.shape)[..., None]
    return np.minimum((draws > cdf[cells, actions]).sum(-1), cdf.shape[-1] - 1)


def greedy_random_ties(q_pairs, rng):
    """argmax over two actions, ties broken uniformly at random."""
    coin = rng.integers(0, 2, q_pairs.shape[:-1])
    return np.where(
        q_pairs[..., RIGHT] > q_pairs[..., LEFT],
        RIGHT,
        np.where(q_pairs[..., RIGHT] < q_pairs[..., LEFT], LEFT, coin),
    )


def optimal_values(probs, config: Config):
    """V* of the unlimited-time task (reward 1 on entering the goal) by value iteration."""
    goal = config.n_cells - 1
    reward = np.zeros(config.n_cells)
    reward[goal] = 1.0
    continuing = np.ones(config.n_cells)
    continuing[goal] = 0.0
    values = np.zeros(config.n_cells)
    for _ in range(2000):
        q_values = probs @ (reward + config.discount * continuing * values)
        values = q_values.max(-1)
        values[goal] = 0.0
    return values


def train(config: Config, cdf, horizons, timeout_is_terminal, rng):
    """Q-learning for one learner per row; returns Q tables and per-cell visit counts."""
    rows = len(horizons)
    goal = config.n_cells - 1
    q_table = np.zeros((rows, config.n_cells, 2))
    visits = np.zeros((rows, config.n_cells))
    row = np.arange(rows)
    cells = np.full(rows, config.start_cell)
    clock = np.zeros(rows, dtype=int)
    for _ in range(config.total_steps):
        greedy = greedy_random_ties(q_table[row, cells], rng)
        explore = rng.random(rows) < config.epsilon
        actions = np.where(explore, rng.integers(0, 2, rows), greedy)
        next_cells = sample_next(cdf, cells, actions, rng)
        visits[row, cells] += 1
        clock += 1
        reached = next_cells == goal
        timed_out = (clock >= horizons) & ~reached
        # the goal is a true terminal; a time-out is one only for the 'terminal' learners
        bootstrap = ~reached & ~(timed_out & timeout_is_terminal)
        target = reached + config.discount * bootstrap * q_table[row, next_cells].max(-1)
        q_table[row, cells, actions] += config.learning_rate * (
            target - q_table[row, cells, actions]
        )
        reset = reached | timed_out
        cells = np.where(reset, config.start_cell, next_cells)
        clock = np.where(reset, 0, clock)
    return q_table, visits


def success_from_start(q_table, cdf, config: Config, rng):
    """Fraction of greedy rollouts from the start cell that reach the goal, per learner."""
    goal = config.n_cells - 1
    cells = np.full((len(q_table), config.eval_rollouts), config.start_cell)
    row = np.arange(len(q_table))[:, None]
    reached = np.zeros(cells.shape, dtype=bool)
    for _ in range(config.eval_horizon):
        actions = greedy_random_ties(q_table[row, cells], rng)
        cells = sample_next(cdf, cells, actions, rng)
        reached |= cells == goal
    return reached.mean(1)


def run(config: Config = Config()) -> Result:
    """Train at every H with both time-limit treatments; evaluate from the start state."""
    rng = np.random.default_rng(config.seed)
    probs = transition_matrix(config)
    v_star = optimal_values(probs, config)
    lengths = np.array(config.episode_lengths)
    horizons = np.tile(np.repeat(lengths, config.seeds), 2)
    timeout_is_terminal = np.repeat([False, True], len(lengths) * config.seeds)
    cdf = probs.cumsum(-1)
    q_table, visits = train(config, cdf, horizons, timeout_is_terminal, rng)
    success = success_from_start(q_table, cdf, config, rng)

    def per_length(values, terminal: bool):
        """Mean over seeds for each H, for one time-limit treatment."""
        chosen = values[timeout_is_terminal == terminal]
        return chosen.reshape(len(lengths), config.seeds).mean(1)

    share = visits / visits.sum(1, keepdims=True)
    sink_share = share[:, : config.sink_width].sum(1)
    near = slice(config.start_cell - 1, config.start_cell + 2)
    start_share = share[:, near].sum(1)
    v_start = q_table[:, config.start_cell].max(-1)

    series = {
        "episode_lengths": lengths.tolist(),
        "success": per_length(success, False).tolist(),
        "sink_share": per_length(sink_share, False).tolist(),
        "start_share": per_length(start_share, False).tolist(),
        "v_start_bootstrap": per_length(v_start, False).tolist(),
        "v_start_terminal": per_length(v_start, True).tolist(),
        "success_terminal": per_length(success, True).tolist(),
        "v_star_start": float(v_star[config.start_cell]),
        "total_steps": config.total_steps,
    }
    metrics = {
        "success_shortest": series["success"][0],
        "success_longest": series["success"][-1],
        "sink_share_shortest": series["sink_share"][0],
        "sink_share_longest": series["sink_share"][-1],
        "start_share_shortest": series["start_share"][0],
        "start_share_longest": series["start_share"][-1],
        "v_star_start": series["v_star_start"],
        "value_bias_bootstrap_shortest": series["v_start_bootstrap"][0] - series["v_star_start"],
        "value_bias_terminal_shortest": series["v_start_terminal"][0] - series["v_star_start"],
        "success_terminal_shortest": series["success_terminal"][0],
    }
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: success / sink share / start coverage vs H. Bottom: V(start) for both treatments."""
    s = result.series
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=4.5,
        title="Same data budget: long episodes park the agent in the sink and it forgets the start",
    )
    lengths = s["episode_lengths"]
    top.plot(lengths, s["success"], "o-", color=PALETTE[2], label="success from start")
    top.plot(lengths, s["sink_share"], "s-", color=PALETTE[1], label="data in sink")
    top.plot(lengths, s["start_share"], "^-", color=PALETTE[0], label="data near start")
    top.set_xscale("log")
    top.set_ylim(-0.03, 1.03)
    style_panel(top, f"Same {s['total_steps']} steps at every H", "episode length H", "fraction")
    legend_below(top, ncol=2)

    bottom.plot(
        lengths, s["v_start_bootstrap"], "o-", color=PALETTE[0], label="bootstrap at time-out"
    )
    bottom.plot(lengths, s["v_start_terminal"], "s-", color=PALETTE[3], label="time-out = terminal")
    bottom.axhline(s["v_star_start"], color="gray", ls="--", label="true V*(start)")
    bottom.set_xscale("log")
    style_panel(bottom, "Learned value of the start state", "episode length H", "max_a Q(start, a)")
    legend_below(bottom, ncol=2)
    return save_png(fig)
