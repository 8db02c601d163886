"""Deep exploration on a chain: epsilon-greedy dithers, randomised value functions commit.

A chain of N states, start at the left end, reward 1 for reaching the right end, horizon
H = N + 9, and, as in the chain of Osband et al. 2016, a small distractor reward (1/1000) for
pushing LEFT against the left wall. Epsilon-greedy Q-learning (zero-initialised, random
tie-breaking) finds the distractor within a few episodes; its value propagates to the states
nearby and the greedy policy walks left and stays there, so only the epsilon-random steps move
right, and reaching the far end needs about N of them in a row: it settles into the local
optimum. Even without the distractor, dithering is a uniform random walk that reaches the end
within H steps with probability p(N) ~ 2^-N * poly(N) (computed exactly, by propagating the
walk's state distribution, and drawn as the reference: episodes to the first reward grow
exponentially in N).
Randomised least-squares value iteration (RLSVI, Osband, Van Roy & Wen 2014, "Generalization and
exploration via randomized value functions", arXiv 1402.0635), the tabular form of the posterior
sampling that bootstrapped DQN approximates (Osband, Blundell, Pritzel & Van Roy 2016, "Deep
exploration via bootstrapped DQN", arXiv 1602.04621), samples one plausible Q function per
episode and follows it greedily for the whole episode; unvisited state-actions keep prior noise,
so some sample always values the unexplored end of the chain and the agent commits to walking
there: episodes to the first reward grow polynomially, and the distractor's 1/1000 is lost in
the prior noise. A few demonstrations replayed into the Q table before acting (Nair et al. 2018,
"Overcoming exploration in reinforcement learning with demonstrations", arXiv 1709.10089; Hester
et al. 2017, DQfD, arXiv 1704.03732) put reward on the path and make the chain solvable at once.

Two cards read this plot. rl-14 (epsilon-greedy against Thompson sampling): the top panel,
episodes to the first reward against N, and the epsilon-greedy runs stuck on the distractor.
rl-15 (a robot arm whose success needs a long precise sequence): the same exponential hitting
probability, and the demonstrations line, the production answer (demos, then RL).

Plot (stacked for a phone): top, episodes to the first far reward against N (log scale; above
the dotted line, epsilon-greedy's medians come from its settled policy's exact hitting
probability); bottom, fraction of runs that found the reward against episode at one chain
length.

Robustness: the asserted claims hold on seeds 0-19 of the default config (slow test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Deep exploration: epsilon-greedy vs randomised value functions on a chain"
CAPTION = (
    "Top (log scale): epsilon-greedy settles on the small reward at the start and almost never "
    "reaches the far one; RLSVI (a random Q function per episode, Thompson-style) finds it in "
    "polynomially many episodes; two demonstrations find it at once."
)
CAPTIONS = {
    "rl-14": (
        "Top (log scale): epsilon-greedy finds the 1/1000 reward by the start, walks back to it "
        "and needs ~N random steps in a row to see the far reward: exponential. RLSVI samples one "
        "Q function per episode and commits to it: polynomial. Bottom: runs that found it, N = 20."
    ),
    "rl-15": (
        "A success that needs a long exact sequence: random exploration hits it with probability "
        "shrinking exponentially in its length (grey: a random walk's median episodes). Two "
        "demonstrations replayed before acting (green) find it in 1-2 episodes at every length."
    ),
}
DISTRACTOR_REWARD = 0.001
"""Reward for pushing LEFT against the left wall (Osband et al. 2016's chain)."""

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
    epsilon_simulated_episodes: int = 200
    """Epsilon-greedy episodes simulated; a run that has not found the goal by then has settled,
    and its median wait is computed exactly from its policy's per-episode hitting probability."""
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
    """Deterministic chain: RIGHT moves right, LEFT moves left, walls clip; reward 1 on reaching
    N-1 (terminal), DISTRACTOR_REWARD for pushing LEFT at state 0.

    n_states may be an array (one chain length per row) to run several chains in one batch.
    """
    next_states = np.clip(states + np.where(actions == RIGHT, 1, -1), 0, n_states - 1)
    rewards = (next_states == n_states - 1).astype(float)
    rewards += DISTRACTOR_REWARD * ((states == 0) & (actions == LEFT))
    return next_states, rewards


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


def hitting_probability(right_probability, n_rows, steps):
    """Exact P(reach N-1 within H steps from state 0) per row, moving right w.p. right_probability
    [row, state] (left otherwise, walls clip), by propagating the state distribution."""
    rows, width = right_probability.shape
    index = np.arange(width)
    dist = np.zeros((rows, width))
    dist[:, 0] = 1.0
    hit = np.zeros(rows)
    goal_mask = index[None, :] == (n_rows - 1)[:, None]
    for h in range(int(steps.max())):
        live = (h < steps)[:, None]
        moved = np.zeros_like(dist)
        right = np.minimum(index + 1, n_rows[:, None] - 1)
        np.add.at(moved, (np.arange(rows)[:, None], right), dist * right_probability)
        np.add.at(
            moved,
            (np.arange(rows)[:, None], np.maximum(index - 1, 0)),
            dist * (1 - right_probability),
        )
        moved = np.where(live, moved, dist)
        hit += np.where(live[:, 0], (moved * goal_mask).sum(1), 0.0)
        dist = np.where(goal_mask, 0.0, moved)  # the goal is terminal
    return hit


def epsilon_greedy_first_reward(chain_lengths, config: Config, rng):
    """Epsilon-greedy Q-learning from zero: episode of the first goal reward, per (length, seed).

    All chain lengths and seeds run as rows of one batch, padded to the longest chain. The first
    ``epsilon_simulated_episodes`` are simulated. A run that has not reached the goal by then has
    settled: its greedy action is LEFT wherever the distractor's value has spread (ties elsewhere
    go either way), so each later episode succeeds with a fixed probability p, computed exactly
    from its Q table, and its median wait is the simulated episodes plus the median of a
    geometric(p) (Q-learning keeps running on those episodes but only reinforces LEFT).
    Also returns, per row, whether the greedy action at the start state is LEFT: settled on the
    distractor.
    """
    n_rows = np.repeat(np.asarray(chain_lengths), config.seeds)
    rows, width = len(n_rows), int(n_rows.max())
    goal, steps = n_rows - 1, n_rows + config.extra_horizon
    q_table = np.zeros((rows, width, 2))
    first = np.full(rows, np.inf)
    for episode in range(1, config.epsilon_simulated_episodes + 1):
        act = np.flatnonzero(~np.isfinite(first))
        if act.size == 0:
            break
        states = np.zeros(act.size, dtype=int)
        alive = np.ones(act.size, dtype=bool)
        q_act, goal_act, n_act, steps_act = q_table[act], goal[act], n_rows[act], steps[act]
        sub = np.arange(act.size)
        for h in range(int(steps_act.max())):
            alive &= h < steps_act
            actions = epsilon_greedy(q_act[sub, states], config.epsilon, rng)
            next_states, rewards = step(states, actions, n_act)
            done = next_states == goal_act
            # Q-learning: Q(s, a) += lr * (r + gamma * max_a' Q(s', a') - Q(s, a)), 0 past the goal
            target = rewards + config.discount * ~done * q_act[sub, next_states].max(-1)
            update = config.learning_rate * (target - q_act[sub, states, actions]) * alive
            q_act[sub, states, actions] += update
            hit = alive & (rewards >= 1)
            first[act[hit]] = np.minimum(first[act[hit]], episode)
            alive &= ~done
            states = np.where(alive, next_states, states)
        q_table[act] = q_act
    waiting = ~np.isfinite(first)
    if waiting.any():
        q_wait = q_table[waiting]
        greedy_right = np.where(
            q_wait[..., RIGHT] > q_wait[..., LEFT],
            1.0,
            np.where(q_wait[..., RIGHT] == q_wait[..., LEFT], 0.5, 0.0),
        )
        right_probability = (1 - config.epsilon) * greedy_right + config.epsilon / 2
        p_hit = hitting_probability(right_probability, n_rows[waiting], steps[waiting])
        first[waiting] = config.epsilon_simulated_episodes + np.ceil(
            np.log(0.5) / np.log1p(-np.clip(p_hit, 1e-300, 1 - 1e-12))
        )
    settled_left = q_table[:, 0, LEFT] > q_table[:, 0, RIGHT]
    shape = (len(chain_lengths), config.seeds)
    return first.reshape(shape), settled_left.reshape(shape)


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
            first = np.where(active & (rewards >= 1), episode, first)
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
            hit = alive & (rewards >= 1)
            first[act[hit]] = np.minimum(first[act[hit]], episode)
            alive &= next_states < goal_act
            states = next_states
    return first.reshape(len(chain_lengths), config.seeds)


def run(config: Config = Config()) -> Result:
    """Episodes to the first reward per agent and chain length (medians over seeds)."""
    rng = np.random.default_rng(config.seed)
    lengths = list(config.chain_lengths)
    epsilon_first, settled_left = epsilon_greedy_first_reward(lengths, config, rng)
    first_reward = {
        "epsilon_greedy": epsilon_first,
        "rlsvi": rlsvi_first_reward(lengths, config, rng),
        "demos": np.stack([demo_seeded_first_reward(n, config, rng) for n in lengths]),
    }
    # median of the geometric number of i.i.d. random-walk episodes until the first success
    success_probs = [random_walk_success_probability(n, horizon(n, config)) for n in lengths]
    exact = [float(np.ceil(np.log(0.5) / np.log1p(-p))) if p < 1 else 1.0 for p in success_probs]

    budget = config.budget_episodes
    long_chains = np.array(lengths) >= 10
    metrics: dict[str, float] = {
        # runs on chains of 10+ states whose greedy action at the start is LEFT at the end
        "epsilon_greedy_settled_on_distractor": float(settled_left[long_chains].mean()),
    }
    series: dict = {
        "chain_lengths": lengths,
        "exact_random_walk_median": exact,
        "budget": budget,
        "epsilon_simulated_episodes": config.epsilon_simulated_episodes,
    }
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
    # every run has a median wait (simulated or, once settled, exact for its policy)
    metrics["epsilon_greedy_log_episodes_per_state"] = float(
        np.polyfit(lengths, np.log(series["epsilon_greedy_median_episodes"]), 1)[0]
    )
    metrics["epsilon_greedy_over_random_walk_longest"] = float(
        series["epsilon_greedy_median_episodes"][-1] / exact[-1]
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
    """Top: episodes to the first far reward against N. Bottom: runs that found it by episode."""
    s = result.series
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=4.1,
        title="A first success N steps away in a row: dithering needs exponentially many "
        "episodes, sampled Q functions and demos do not",
    )
    lengths = np.array(s["chain_lengths"])
    labels = {
        "epsilon_greedy": "epsilon-greedy",
        "rlsvi": "RLSVI (Thompson-style)",
        "demos": "epsilon-greedy + 2 demos",
    }
    colours = {"epsilon_greedy": PALETTE[1], "rlsvi": PALETTE[0], "demos": PALETTE[2]}
    for name, label in labels.items():
        top.plot(lengths, s[f"{name}_median_episodes"], "o-", color=colours[name], label=label)
    top.plot(
        lengths, s["exact_random_walk_median"], "--", color="grey", label="random walk (exact)"
    )
    top.axhline(s["epsilon_simulated_episodes"], color="black", lw=1.2, ls=":")

    top.set_yscale("log")
    style_panel(
        top,
        # epsilon-greedy's medians past its simulated budget come from its exact hitting rate
        "Episodes to the far reward (median; above the dotted line: computed)",
        "chain length N (states)",
        "episodes (log)",
    )
    legend_below(top, ncol=2)

    episodes = np.arange(1, s["budget"] + 1)
    for name, label in labels.items():
        bottom.plot(episodes, s[f"{name}_found_by_episode"], color=colours[name], label=label)
    bottom.set_xscale("log")
    bottom.set_ylim(-0.03, 1.03)
    style_panel(
        bottom,
        f"Chain of N = {s['curve_chain_length']} states",
        "episode (log)",
        "runs that found it",
    )
    legend_below(bottom, ncol=2)
    return save_png(fig)
