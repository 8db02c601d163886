"""Deep exploration on a chain: epsilon-greedy dithers, randomised value functions commit.

A chain of N states, start at the left end, reward 1 only for reaching the right end, horizon
H = N + 9 (the chain of Osband et al. 2016, without its small distractor reward at the left). Until
the first reward every Q-learning target is 0, so a zero-initialised Q table stays exactly 0
and epsilon-greedy with random tie-breaking is a uniform random walk: it reaches the end within H
steps with probability p(N) ~ 2^-N * poly(N), so the episodes to the first reward grow
exponentially in N (p(N) is also computed exactly, by propagating the walk's state distribution).
Randomised least-squares value iteration (RLSVI, Osband, Van Roy & Wen 2014, "Generalization and
exploration via randomized value functions", arXiv 1402.0635), the tabular form of the posterior
sampling that bootstrapped DQN approximates (Osband, Blundell, Pritzel & Van Roy 2016, "Deep
exploration via bootstrapped DQN", arXiv 1602.04621), samples one plausible Q function per
episode and follows it greedily for the whole episode; unvisited state-actions keep prior noise,
so some sample always values the unexplored end of the chain and the agent commits to walking
there: episodes to the first reward grow polynomially. A few demonstrations replayed into the Q
table before acting (Nair et al. 2018, "Overcoming exploration in reinforcement learning with
demonstrations", arXiv 1709.10089; Hester et al. 2017, DQfD, arXiv 1704.03732) put reward on the
path and make the chain solvable at once. Left panel: episodes to first reward vs N (log scale);
right panel: fraction of runs that found the reward vs episode at one chain length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, figure_png, new_figure, style_axes

TITLE = "Deep exploration: epsilon-greedy vs randomised value functions on a chain"
CAPTION = (
    "Log scale: epsilon-greedy needs ~1.6x more episodes per extra state (a random walk must "
    "get lucky), and misses the reward entirely past ~20 states. RLSVI (Thompson-style random "
    "Q functions) and epsilon-greedy seeded with 2 demos find it in a few episodes."
)

LEFT, RIGHT = 0, 1


@dataclass(frozen=True)
class Config:
    """Chain lengths, agents and budget."""

    chain_lengths: tuple[int, ...] = (4, 6, 8, 10, 12, 14, 16, 18, 20, 24, 28)
    """Numbers of states N; the reward sits at state N-1, the agent starts at state 0."""
    extra_horizon: int = 9
    """Episode length is N + extra_horizon steps (Osband et al. 2016 use N + 9)."""
    seeds: int = 10
    """Independent runs per chain length and agent."""
    budget_episodes: int = 3000
    """Episodes an agent gets to find the reward; runs that never find it count as failures."""
    epsilon: float = 0.1
    """Exploration rate of the epsilon-greedy agents."""
    learning_rate: float = 0.5
    """Q-learning step size of the demonstration-seeded agent."""
    discount: float = 0.99
    """Discount of the demonstration-seeded Q-learner."""
    n_demos: int = 2
    """Expert demonstrations (walk right to the end) replayed before the agent acts."""
    rlsvi_noise: float = 1.0
    """RLSVI: standard deviation sigma of the Gaussian noise on the regression targets."""
    rlsvi_prior_precision: float = 1.0
    """RLSVI: lambda, prior precision in units of one observation (prior std sigma/sqrt(lambda))."""
    curve_chain_length: int = 20
    """Chain length whose fraction-found-vs-episode curve is drawn on the right panel."""
    seed: int = 0
    """Seed for every random generator."""


def horizon(n_states: int, config: Config) -> int:
    return n_states + config.extra_horizon


def step(states, actions, n_states):
    """Deterministic chain: RIGHT moves right, LEFT moves left, walls clip; reward on reaching N-1.

    n_states may be an array (one chain length per row) to run several chains in one batch.
    """
    next_states = np.clip(states + np.where(actions == RIGHT, 1, -1), 0, n_states - 1)
    return next_states, (next_states == n_states - 1).astype(float)


def epsilon_greedy(q_values, epsilon, rng):
    """Greedy action, ties broken at random; with probability epsilon a uniformly random action."""
    jitter = rng.random(q_values.shape) * 1e-9  # breaks exact ties uniformly, never real gaps
    greedy = np.argmax(q_values + jitter, axis=-1)
    random_actions = rng.integers(0, 2, size=greedy.shape)
    return np.where(rng.random(greedy.shape) < epsilon, random_actions, greedy)


def random_walk_success_probability(n_states: int, n_steps: int) -> float:
    """Exact P(a uniform random walk from state 0 hits state N-1 within n_steps), clipped walls."""
    dist = np.zeros(n_states)
    dist[0] = 1.0
    hit = 0.0
    for _ in range(n_steps):
        moved = np.zeros(n_states)
        np.add.at(moved, np.maximum(np.arange(n_states) - 1, 0), 0.5 * dist)
        np.add.at(moved, np.minimum(np.arange(n_states) + 1, n_states - 1), 0.5 * dist)
        hit += moved[-1]
        moved[-1] = 0.0  # the goal is terminal
        dist = moved
    return hit


def epsilon_greedy_first_reward(n_states: int, config: Config, rng, chunk: int = 250):
    """Episode (1-based) of each seed's first reward for zero-initialised epsilon-greedy Q-learning.

    Before the first reward every TD target r + gamma * max Q(s') is 0, so Q stays exactly 0 and
    the episodes are i.i.d.; that lets us roll a chunk of episodes of every seed at once, with the
    Q table each of them would see (all zeros). Returns budget + 1 where none succeeded.
    """
    q_table = np.zeros((n_states, 2))
    first = np.full(config.seeds, config.budget_episodes + 1)
    for start in range(0, config.budget_episodes, chunk):
        searching = first > config.budget_episodes
        if not searching.any():
            break
        size = min(chunk, config.budget_episodes - start)
        states = np.zeros((int(searching.sum()), size), dtype=int)
        succeeded = np.zeros(states.shape, dtype=bool)
        for _ in range(horizon(n_states, config)):
            actions = epsilon_greedy(q_table[states], config.epsilon, rng)
            states, reward = step(states, actions, n_states)
            succeeded |= reward > 0
            states = np.where(succeeded, n_states - 1, states)  # finished episodes stay put
        found = succeeded.any(1)
        first[np.flatnonzero(searching)[found]] = start + succeeded[found].argmax(1) + 1
    return first


def demo_seeded_first_reward(n_states: int, config: Config, rng) -> np.ndarray:
    """Episode of the first own reward for epsilon-greedy Q-learning pre-trained on demos.

    Each demonstration (a walk straight to the goal; the expert is deterministic, so all are
    identical) is replayed 2N times, in order, through ordinary Q-learning updates, which carries
    the goal reward back to the start state.
    """
    seeds = config.seeds
    q_table = np.zeros((seeds, n_states, 2))
    demo_states = np.arange(n_states - 1)
    for _ in range(2 * n_states * config.n_demos):
        next_states, rewards = step(demo_states, np.full(n_states - 1, RIGHT), n_states)
        not_done = next_states < n_states - 1
        targets = rewards + config.discount * not_done * q_table[:, next_states].max(-1)
        q_table[:, demo_states, RIGHT] += config.learning_rate * (
            targets - q_table[:, demo_states, RIGHT]
        )
    first = np.full(seeds, config.budget_episodes + 1)
    batch = np.arange(seeds)
    for episode in range(1, config.budget_episodes + 1):
        states = np.zeros(seeds, dtype=int)
        active = first > config.budget_episodes  # seeds still looking for their first reward
        if not active.any():
            break
        for _ in range(horizon(n_states, config)):
            actions = epsilon_greedy(q_table[batch, states], config.epsilon, rng)
            next_states, rewards = step(states, actions, n_states)
            not_done = next_states < n_states - 1
            target = rewards + config.discount * not_done * q_table[batch, next_states].max(-1)
            td_error = target - q_table[batch, states, actions]
            q_table[batch, states, actions] += config.learning_rate * td_error * active
            first = np.where(active & (rewards > 0), episode, first)
            active &= not_done
            states = np.where(active, next_states, states)
    return first


def rlsvi_first_reward(chain_lengths, config: Config, rng) -> np.ndarray:
    """Episode of the first reward for tabular RLSVI; returns (chain lengths, seeds).

    With one-hot features, Bayesian linear regression of the targets y = r + V_{h+1}(s') on
    (s, a) with noise variance sigma^2 and prior N(0, sigma^2/lambda) has the closed-form posterior
    Q_h(s, a) ~ N(sum(y) / (n + lambda), sigma^2 / (n + lambda)), n = visits of (s, a).
    Each episode draws one sample of Q_h for every step h (backwards from V_H = 0) and acts
    greedily on it. The chain is deterministic, so the empirical model of (s, a) is its observed
    successor. All chain lengths and seeds run as rows of one batch, padded to the longest chain.
    """
    n_rows = np.repeat(np.asarray(chain_lengths), config.seeds)  # chain length of each row
    rows = len(n_rows)
    width, goal = int(n_rows.max()), n_rows - 1
    steps = n_rows + config.extra_horizon
    lam, sigma = config.rlsvi_prior_precision, config.rlsvi_noise
    visits = np.zeros((rows, width, 2))
    reward_sum = np.zeros((rows, width, 2))
    successor = np.zeros((rows, width, 2), dtype=int)  # meaningful where visits > 0
    first = np.full(rows, config.budget_episodes + 1)
    for episode in range(1, config.budget_episodes + 1):
        # only rows still searching are simulated (finished rows no longer matter)
        act = np.flatnonzero(first > config.budget_episodes)
        if act.size == 0:
            break
        n_act, goal_act, steps_act = n_rows[act], goal[act], steps[act]
        horizon_max, sub = int(steps_act.max()), np.arange(act.size)
        visits_act, reward_act, successor_act = visits[act], reward_sum[act], successor[act]
        noise = rng.standard_normal((horizon_max, act.size, width, 2))
        q_samples = np.empty_like(noise)
        value_next = np.zeros((act.size, width))  # V_{h+1}
        for h in reversed(range(horizon_max)):
            # sum of the n targets y = n * (mean reward + V_{h+1}(successor))
            target_sum = reward_act + visits_act * value_next[sub[:, None, None], successor_act]
            q_samples[h] = (target_sum + sigma * np.sqrt(visits_act + lam) * noise[h]) / (
                visits_act + lam
            )
            value_next = np.maximum(q_samples[h, ..., LEFT], q_samples[h, ..., RIGHT])
            value_next[sub, goal_act] = 0.0  # the goal is terminal
            value_next[h >= steps_act] = 0.0  # V_H = 0 at each row's own horizon H
        states = np.zeros(act.size, dtype=int)
        alive = np.ones(act.size, dtype=bool)
        for h in range(horizon_max):
            alive &= h < steps_act
            actions = q_samples[h, sub, states].argmax(-1)
            next_states, rewards = step(states, actions, n_act)
            live, s_live, a_live = act[alive], states[alive], actions[alive]
            visits[live, s_live, a_live] += 1
            reward_sum[live, s_live, a_live] += rewards[alive]
            successor[live, s_live, a_live] = next_states[alive]
            hit = alive & (rewards > 0)
            first[act[hit]] = np.minimum(first[act[hit]], episode)
            alive &= next_states < goal_act
            states = next_states
    return first.reshape(len(chain_lengths), config.seeds)


def run(config: Config = Config()) -> Result:
    """Episodes to the first reward per agent and chain length (medians over seeds)."""
    rng = np.random.default_rng(config.seed)
    lengths = list(config.chain_lengths)
    first_reward = {
        "epsilon_greedy": np.stack([epsilon_greedy_first_reward(n, config, rng) for n in lengths]),
        "rlsvi": rlsvi_first_reward(lengths, config, rng),
        "demos": np.stack([demo_seeded_first_reward(n, config, rng) for n in lengths]),
    }
    # median of the geometric number of i.i.d. random-walk episodes until the first success
    success_probs = [random_walk_success_probability(n, horizon(n, config)) for n in lengths]
    exact = [float(np.ceil(np.log(0.5) / np.log1p(-p))) if p < 1 else 1.0 for p in success_probs]

    budget = config.budget_episodes
    metrics: dict[str, float] = {}
    series: dict = {"chain_lengths": lengths, "exact_random_walk_median": exact, "budget": budget}
    for name, firsts in first_reward.items():
        found = firsts <= budget
        medians = np.median(firsts, axis=1)
        series[f"{name}_median_episodes"] = medians.tolist()
        series[f"{name}_found_fraction"] = found.mean(1).tolist()
        metrics[f"{name}_found_fraction_longest"] = float(found[-1].mean())
        metrics[f"{name}_median_episodes_longest"] = float(medians[-1])
        solved = found.mean(1) == 1.0
        metrics[f"{name}_longest_chain_always_solved"] = float(
            max([n for n, ok in zip(lengths, solved) if ok], default=0)
        )
    # growth rates: log(episodes) vs N for epsilon-greedy (exponential => linear in N, slope > 0)
    # and log(episodes) vs log(N) for RLSVI (polynomial => bounded slope), over chains always solved
    eps_ok = first_reward["epsilon_greedy"].max(1) <= budget
    eps_lengths = np.array(lengths)[eps_ok]
    eps_medians = np.array(series["epsilon_greedy_median_episodes"])[eps_ok]
    metrics["epsilon_greedy_log_episodes_per_state"] = float(
        np.polyfit(eps_lengths, np.log(eps_medians), 1)[0]
    )
    metrics["exact_random_walk_log_median_per_state"] = float(
        np.polyfit(lengths, np.log(exact), 1)[0]
    )
    rlsvi_ok = first_reward["rlsvi"].max(1) <= budget
    metrics["rlsvi_loglog_slope"] = float(
        np.polyfit(
            np.log(np.array(lengths)[rlsvi_ok]),
            np.log(np.array(series["rlsvi_median_episodes"])[rlsvi_ok]),
            1,
        )[0]
    )
    curve_index = lengths.index(config.curve_chain_length)
    episodes = np.arange(1, budget + 1)
    series["curve_chain_length"] = config.curve_chain_length
    for name, firsts in first_reward.items():
        series[f"{name}_found_by_episode"] = (
            (firsts[curve_index][:, None] <= episodes[None, :]).mean(0).tolist()
        )
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Left: episodes to first reward vs N. Right: fraction of runs that found it vs episode."""
    s = result.series
    fig, (left, right) = new_figure(1, 2, height_px=520)
    lengths = np.array(s["chain_lengths"])
    budget = s["budget"]
    labels = {
        "epsilon_greedy": "epsilon-greedy Q-learning",
        "rlsvi": "RLSVI (randomised value functions)",
        "demos": "epsilon-greedy + 2 demos",
    }
    for color, (name, label) in zip(PALETTE, labels.items()):
        medians = np.array(s[f"{name}_median_episodes"], dtype=float)
        ok = medians <= budget
        left.plot(lengths[ok], medians[ok], "o-", color=color, label=label)
        if (~ok).any():
            left.plot(
                lengths[~ok],
                np.full((~ok).sum(), budget),
                "x",
                color=color,
                markersize=9,
                label=f"{label}: not found in {budget} episodes",
            )
    left.plot(
        lengths,
        s["exact_random_walk_median"],
        "--",
        color="gray",
        label="uniform random walk, exact median",
    )
    left.set_yscale("log")
    style_axes(
        left,
        "Episodes until the first reward",
        "chain length N (states)",
        "episodes (median over seeds)",
    )
    left.legend(fontsize=8, loc="upper left")

    episodes = np.arange(1, budget + 1)
    for color, (name, label) in zip(PALETTE, labels.items()):
        right.plot(episodes, s[f"{name}_found_by_episode"], color=color, label=label)
    right.set_xscale("log")
    right.set_ylim(-0.03, 1.03)
    style_axes(
        right,
        f"Chain of N = {s['curve_chain_length']} states",
        "episode",
        "fraction of runs that found the reward",
    )
    right.legend(fontsize=9, loc="center left")
    return figure_png(fig)
