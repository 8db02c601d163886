"""Success-classifier rewards: exploited where the negatives never went, unless refreshed (VICE).

A robot on a 15 x 15 grid over the unit square starts in the bottom-left corner; success is
ending the episode within 0.15 of the middle of the top edge, (0.5, 1). The reward is a success
classifier's probability p(success | s'), learned from 50 positive examples (states sampled
inside the goal region), as when a task is specified by example instead of by a reward
function. Four classifiers, one tabular Q-learner each (the same epsilon-greedy Q-learning on 32
parallel episodes, undirected exploration as with the Gaussian noise of continuous-control
agents):

- memorising: logistic regression on narrow Gaussian bumps centred on the 50 examples (a
  template matcher, what an unregularised high-capacity classifier drifts toward on 50
  positives), trained without regularisation against random negatives: its logit off the
  examples is its bias, so p is ~0 and flat everywhere the robot can be and Q-learning receives
  no signal;
- static, initial negatives: a smooth model (logistic regression on quadratic features of the
  position, L2, label smoothing as mixup does for networks: Zhang et al. 2017, arXiv 1710.09412)
  fitted once, with the states of the initial random policy as negatives, as when the negatives
  are the failures collected so far. Those cover only the bottom-left; the logit keeps rising
  beyond the examples, toward the top-right corner where no negative was, and the Q-learner
  parks there: the static classifier is exploited;
- static, uniform negatives: the same model fitted once against states drawn uniformly over
  the square. Its negatives already cover wherever the policy will go, so it is not exploited;
  outside a toy (camera images, many objects) such negatives are rarely available;
- VICE (Fu, Singh, Ghosh, Yang & Levine 2018, "Variational Inverse Control with Events",
  arXiv 1805.11686): the same model, starting from the initial negatives, refitted every 2
  iterations with the states the policy has visited as negatives (a uniform sample of all of
  them, a replay buffer). The corner the policy exploits becomes a negative, the peak moves to
  the examples and the agent learns the task without negatives supplied in advance. The
  adversarial refits make its success noisier than a classifier that was right from the start.

The classifiers are fitted by Newton's method (IRLS) on the regularised cross-entropy, the
memorising one by gradient descent. The amount of regularisation matters both ways: with l2 ten
times larger the quadratic model bends too little for VICE to settle on the goal (success
0.17-0.43 over seeds 0-5); with l2 = 0.0002 the uniform-negatives classifier gets so sharp on
one seed in ten that it pays almost nothing away from the goal, the memorising failure again
(success 0). Top: success rate of each agent over training, the memorising classifier's first.
Bottom: the memorising, static and VICE rewards along the top edge of the grid (the goal's row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Success-classifier rewards: exploited where negatives never went, unless refreshed (VICE)"
CAPTION = (
    "Top: a classifier that memorised its 50 success examples pays ~0 everywhere outside the "
    "goal, so Q-learning on it never reaches the goal (dashed, flat at 0). A smooth classifier "
    "fitted once on the failures seen so far peaks beyond the examples and is exploited; VICE "
    "refits it on the policy's own states and learns. Bottom: the rewards along the top edge."
)

MOVES = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]])  # right, left, up, down (cells)
GOAL = np.array([0.5, 1.0])
GOAL_RADIUS = 0.15
AGENTS = ("memorised", "static", "uniform", "vice")
LABELS = {
    "memorised": "memorising",
    "static": "fitted once, initial negatives",
    "uniform": "fitted once, uniform negatives",
    "vice": "VICE (refitted)",
}


@dataclass(frozen=True)
class Config:
    """Grid, classifiers and Q-learning."""

    grid: int = 15
    """Cells per side of the unit square."""
    positives: int = 50
    """Success examples (states inside the goal region)."""
    memorise_width: float = 0.01
    """Width of the memorising classifier's bumps around each example."""
    l2: float = 0.0003
    """L2 penalty of the smooth (quadratic) classifiers."""
    label_smoothing: float = 0.05
    """Targets become 1 - eps and eps for the smooth classifiers."""
    iterations: int = 60
    """RL iterations; each runs `parallel` episodes per agent."""
    parallel: int = 32
    """Episodes per iteration (run side by side, sharing one Q table per agent)."""
    horizon: int = 40
    """Steps per episode (the goal is 21 moves away, the far corner 28)."""
    refit_every: int = 2
    """VICE refits its classifier every this many iterations."""
    buffer: int = 2000
    """VICE's negatives: at most this many states, a uniform sample of all the policy visited."""
    epsilon: float = 0.2
    """Exploration rate of epsilon-greedy."""
    learning_rate: float = 1.0
    """Tabular Q-learning step size (1 is fine: moves are deterministic)."""
    gamma: float = 0.95
    """Discount."""
    seed: int = 0
    """Seed for examples, negatives and exploration."""


def cell_centres(grid: int) -> np.ndarray:
    """(grid * grid, 2) positions of the cell centres, index = x + grid * y."""
    coords = (np.arange(grid) + 0.5) / grid
    xs, ys = np.meshgrid(coords, coords)
    return np.stack([xs.ravel(), ys.ravel()], axis=1)


def gaussian_features(points, centres, width: float) -> np.ndarray:
    """exp(-|p - c|^2 / (2 w^2)) for every point and centre, plus a constant bias column."""
    squared = ((points[:, None, :] - centres[None, :, :]) ** 2).sum(2)
    return np.hstack([np.exp(-squared / (2 * width**2)), np.ones((len(points), 1))])


def sigmoid(logits):
    return 1 / (1 + np.exp(-np.clip(logits, -50, 50)))


def fit_logistic_gd(features, targets, steps: int, step_size: float):
    """Gradient descent on mean cross-entropy, no regularisation (the memorising classifier)."""
    weights = np.zeros(features.shape[1])
    for _ in range(steps):
        weights -= step_size * features.T @ (sigmoid(features @ weights) - targets) / len(targets)
    return weights


def quadratic_features(points) -> np.ndarray:
    """(x, y, xy, x^2, y^2, 1): a smooth, low-capacity classifier input."""
    x, y = points[:, 0], points[:, 1]
    return np.stack([x, y, x * y, x**2, y**2, np.ones_like(x)], axis=1)


def fit_smooth(examples, negatives, config: Config, iterations: int = 20):
    """Quadratic logistic classifier, positives and negatives weighted equally, label smoothing,
    L2 on every weight but the bias; Newton's method (IRLS). Returns its weights."""
    eps = config.label_smoothing
    features = quadratic_features(np.vstack([examples, negatives]))
    targets = np.r_[np.full(len(examples), 1 - eps), np.full(len(negatives), eps)]
    share = np.r_[
        np.full(len(examples), 0.5 / len(examples)), np.full(len(negatives), 0.5 / len(negatives))
    ]
    penalty = config.l2 * np.diag([1.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    weights = np.zeros(features.shape[1])
    for _ in range(iterations):
        probs = sigmoid(features @ weights)
        gradient = features.T @ (share * (probs - targets)) + penalty @ weights
        hessian = (features * (share * probs * (1 - probs))[:, None]).T @ features + penalty
        weights = weights - np.linalg.solve(hessian, gradient)
    return weights


def random_walk_states(config: Config, rng) -> np.ndarray:
    """Cells visited by a uniformly random policy from the start: the initial failures."""
    position = np.zeros((config.parallel, 2), dtype=np.int64)
    visited = []
    for _ in range(config.horizon):
        moves = MOVES[rng.integers(0, len(MOVES), config.parallel)]
        position = np.clip(position + moves, 0, config.grid - 1)
        visited.append(position[:, 0] + config.grid * position[:, 1])
    return np.concatenate(visited)


def run_q_learning(rewards, config: Config, rng, refit=None):
    """Tabular Q-learning for several agents at once, one reward table (row) each.

    ``refit(visited cells)`` returns a new reward row for the last agent (VICE) every
    ``refit_every`` iterations. Returns per-iteration success rates (agents, iterations): the
    share of episodes that end inside the goal region.
    """
    grid, n_moves = config.grid, len(MOVES)
    agents = rewards.shape[0]
    rewards = rewards.copy()
    q = np.zeros((agents, grid * grid, n_moves))
    in_goal = np.linalg.norm(cell_centres(grid) - GOAL, axis=1) < GOAL_RADIUS
    agent = np.arange(agents)[:, None]
    seen: list[np.ndarray] = []
    success = np.zeros((agents, config.iterations))
    for iteration in range(config.iterations):
        position = np.zeros((agents, config.parallel, 2), dtype=np.int64)
        visited = []
        for _ in range(config.horizon):
            cell = position[..., 0] + grid * position[..., 1]
            noisy = q[agent, cell] + 1e-9 * rng.random((agents, config.parallel, n_moves))
            action = np.where(
                rng.random((agents, config.parallel)) < config.epsilon,
                rng.integers(0, n_moves, (agents, config.parallel)),
                noisy.argmax(-1),
            )
            position = np.clip(position + MOVES[action], 0, grid - 1)
            next_cell = position[..., 0] + grid * position[..., 1]
            target = rewards[agent, next_cell] + config.gamma * q[agent, next_cell].max(-1)
            # average duplicate (agent, cell, action) updates within the batch
            flat = (agent * grid * grid + cell) * n_moves + action
            counts = np.bincount(flat.ravel(), minlength=q.size)[flat]
            delta = config.learning_rate * (target - q[agent, cell, action]) / counts
            np.add.at(q.reshape(-1), flat.ravel(), delta.ravel())
            visited.append(next_cell[-1])
        success[:, iteration] = in_goal[next_cell].mean(-1)
        seen.append(np.concatenate(visited))
        if refit is not None and (iteration + 1) % config.refit_every == 0:
            rewards[-1] = refit(np.concatenate(seen))
    return success


def run(config: Config = Config()) -> Result:
    """Q-learning on four success-classifier rewards: memorising, static twice, VICE."""
    rng = np.random.default_rng(config.seed)
    centres = cell_centres(config.grid)
    radius = GOAL_RADIUS * np.sqrt(rng.random(config.positives))
    angle = np.pi + np.pi * rng.random(config.positives)  # the half disc inside the square
    examples = GOAL + np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)

    # memorising: bumps on the examples, random negatives, no regularisation
    uniform_negatives = rng.random((500, 2))
    points = np.vstack([examples, uniform_negatives])
    labels = np.r_[np.ones(config.positives), np.zeros(len(uniform_negatives))]
    memorised = fit_logistic_gd(
        gaussian_features(points, examples, config.memorise_width), labels, 2000, 50.0
    )
    reward = {
        "memorised": sigmoid(
            gaussian_features(centres, examples, config.memorise_width) @ memorised
        )
    }

    def smooth_reward(negatives):
        return sigmoid(quadratic_features(centres) @ fit_smooth(examples, negatives, config))

    initial = centres[random_walk_states(config, rng)]
    reward["static"] = smooth_reward(initial)
    reward["uniform"] = smooth_reward(uniform_negatives)

    def refit(visited_cells):
        """VICE: negatives = a uniform sample of every state the policy has visited."""
        if len(visited_cells) > config.buffer:
            visited_cells = rng.choice(visited_cells, config.buffer, replace=False)
        return smooth_reward(centres[visited_cells])

    reward["vice"] = reward["static"].copy()  # VICE starts from the same initial negatives
    table = np.stack([reward[name] for name in AGENTS])
    history = {}

    def refit_and_keep(visited_cells):
        history["vice"] = refit(visited_cells)
        return history["vice"]

    success = run_q_learning(table, config, rng, refit=refit_and_keep)
    reward["vice"] = history.get("vice", reward["vice"])

    in_goal = np.linalg.norm(centres - GOAL, axis=1) < GOAL_RADIUS
    window = max(1, config.iterations // 6)
    metrics: dict[str, float] = {
        "memorised_max_reward_outside_goal": float(reward["memorised"][~in_goal].max()),
    }
    for index, name in enumerate(AGENTS):
        metrics[f"{name}_final_success"] = float(success[index, -window:].mean())
        metrics[f"{name}_peak_to_goal"] = float(
            np.linalg.norm(centres[reward[name].argmax()] - GOAL)
        )
    return Result(
        metrics=metrics,
        series={
            "grid": config.grid,
            "static_reward": reward["static"].reshape(config.grid, config.grid).tolist(),
            "static_peak": centres[reward["static"].argmax()].tolist(),
            "vice_peak": centres[reward["vice"].argmax()].tolist(),
            "vice_reward": reward["vice"].reshape(config.grid, config.grid).tolist(),
            "examples": examples.tolist(),
            # rows of reshape(grid, grid) are y; the last row is the top edge, where the goal is
            "top_row_x": centres[: config.grid, 0].tolist(),
            "top_row": {
                name: reward[name].reshape(config.grid, config.grid)[-1].tolist()
                for name in ("memorised", "static", "vice")
            },
            "success": {name: success[index].tolist() for index, name in enumerate(AGENTS)},
            "parallel": config.parallel,
        },
    )


def plot(result: Result) -> bytes:
    """Top: success of each agent (the memorising classifier's flat zero first). Bottom: each
    classifier's reward along the top row of the grid, where the goal sits."""
    series = result.series
    fig, (curves, profile) = phone_figure(
        2,
        height_per_panel=3.4,
        title=(
            "A memorising success classifier pays ~0 off its own examples, so nothing is "
            "learnt; a smooth one fitted once is exploited"
        ),
    )
    colors = dict(zip(AGENTS, (PALETTE[1], PALETTE[3], PALETTE[0], PALETTE[2])))
    episodes = np.arange(1, len(series["success"]["vice"]) + 1) * series["parallel"]
    for name in AGENTS:
        memorising = name == "memorised"
        curves.plot(
            episodes,
            series["success"][name],
            color=colors[name],
            ls="--" if memorising else "-",
            lw=3.4 if memorising else 2.2,
            zorder=5 if memorising else 2,
            label=LABELS[name],
        )
    curves.set_ylim(-0.05, 1.05)
    style_panel(curves, "Q-learning on each classifier's reward", "episodes", "ends in goal")
    legend_below(curves, ncol=2)

    x = np.array(series["top_row_x"])
    low, high = 0.5 - GOAL_RADIUS, 0.5 + GOAL_RADIUS
    profile.axvspan(low, high, color="gray", alpha=0.2)
    for name in ("memorised", "static", "vice"):
        profile.plot(
            x,
            series["top_row"][name],
            color=colors[name],
            ls="--" if name == "memorised" else "-",
            lw=3.4 if name == "memorised" else 2.2,
            marker="o",
            ms=5,
        )
    profile.set_ylim(-0.05, 1.05)
    profile.set_xticks([0, 0.5, 1])
    style_panel(profile, "Reward along the top edge (goal shaded)", "x position", "reward")
    return save_png(fig)
