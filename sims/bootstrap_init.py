"""Bootstrapping from V = -1000: TD's errors look small while every value is off by 1000.

An episodic chain of d states, walked left to right (the policy being evaluated), then a
terminal state. Each step pays a noisy reward N(0, ``reward_noise``^2) and entering the terminal
state pays 1 more, so the true values are V(s) = gamma^(d-1-s), between 0 and 1. Every estimate
starts at V0 = -1000, and both learners see the same kind of data: sampled episodes, one
constant step size alpha, updates in the order the states were visited (like with like).

TD(0) regresses V(s) on r + gamma V(s'). For a non-terminal transition, at initialisation,

    delta = r + gamma V0 - V0 = r + (1 - gamma) * 1000 = r + 10   (gamma = 0.99),

small: a TD loss or TD-error dashboard looks healthy while every value is off by 1000. Only the
transition into the terminal state, whose value is 0 by definition, has delta = 1 + 1000. The
correction enters there and travels back one state per sweep at step size 1 (the expected
update V <- r + gamma P V fixes the last k states after k sweeps), about 1/alpha episodes per
state at step size alpha: a chain of length d needs about d / alpha episodes. Hundreds of
sweeps at gamma = 0.99 is the count for long or continuing tasks, where the error shrinks like
gamma^k (Sutton & Barto 2018, "Reinforcement Learning: An Introduction", ch. 6-7; Kearns &
Singh 2000, "Bias-variance error bounds for temporal difference updates", COLT).

Monte Carlo regresses V(s) on the sampled return G, which does not contain V: its error signal
is G - V0 ~ 1000 on every state, so one update at step size alpha removes a fraction alpha of
the offset everywhere at once, and log(1000 / threshold) / log(1 / (1 - alpha)) episodes wash it
out whatever d is. Those are huge steps: in a table with alpha <= 1 they are harmless, but a
network trained on them takes 1000-times gradients, so "MC survives" assumes a sane learning
rate or normalised targets (PopArt: van Hasselt, Guez, Hessel, Mnih & Silver 2016, "Learning
values across many orders of magnitude", arXiv 1602.07714). Once both have forgotten V0, TD's
lower variance gives it the lower error floor.

Top: one chain of length ``chain_length``: RMS value error of TD and MC against episodes, and
TD's mean |delta| over the non-terminal transitions of each episode, what a loss curve would
show. Bottom: episodes until the RMS error falls below ``threshold`` against the chain length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Bootstrapping from V = -1000: TD's small errors hide values off by 1000"
CAPTION = (
    "Top: from V = -1000 with gamma = 0.99, TD's error on a non-terminal step is r + 10, small, "
    "while every value is off by ~1000; only the step into the terminal state shows ~1000. "
    "Bottom: the fix travels back about one state per sweep, so TD needs episodes in proportion "
    "to the chain length; Monte Carlo's error signal is ~1000 on every state (a huge step: fine "
    "in a table, needs normalised targets in a network) and it forgets -1000 in a few episodes."
)


@dataclass(frozen=True)
class Config:
    """Chain, initial value, step size and budgets."""

    chain_length: int = 50
    """States d of the chain drawn on the top panel."""
    scaling_lengths: tuple[int, ...] = (5, 10, 20, 40, 80)
    """Chain lengths whose episodes-to-threshold are measured (bottom panel)."""
    discount: float = 0.99
    """gamma."""
    initial_value: float = -1000.0
    """V0 for every state."""
    step_size: float = 0.5
    """alpha, the same constant step size for TD(0) and Monte Carlo."""
    reward_noise: float = 0.5
    """Std of the reward of every step (mean 0; entering the terminal state adds 1)."""
    episodes: int = 300
    """Episodes per run (enough for TD to wash out V0 on the longest chain)."""
    threshold: float = 10.0
    """RMS value error that counts as 'V0 forgotten' (1% of the offset)."""
    seed: int = 0
    """Seed of the reward noise."""


def true_values(length: int, discount: float) -> np.ndarray:
    """V(s) = gamma^(d-1-s): the noise has mean 0 and the terminal step pays 1."""
    return discount ** (length - 1 - np.arange(length))


def learn(method: str, length: int, config: Config, rng) -> dict[str, np.ndarray]:
    """Run ``config.episodes`` episodes of TD(0) or every-visit MC from V0; per-episode traces.

    Returns the RMS value error after each episode and, for TD, the mean |delta| over the
    non-terminal transitions and |delta| of the transition into the terminal state; for MC,
    the smallest |G - V| of the first episode (the size of MC's error signal).
    """
    alpha, gamma = config.step_size, config.discount
    values = np.full(length, config.initial_value)
    target = true_values(length, gamma)
    errors = np.empty(config.episodes)
    nonterminal = np.empty(config.episodes)
    terminal = np.empty(config.episodes)
    first_signal = np.nan
    for episode in range(config.episodes):
        rewards = config.reward_noise * rng.standard_normal(length)
        rewards[-1] += 1.0  # entering the terminal state
        if method == "td":
            deltas = np.empty(length)
            for state in range(length):  # online, in the order visited
                bootstrap = values[state + 1] if state + 1 < length else 0.0  # V(terminal) = 0
                deltas[state] = rewards[state] + gamma * bootstrap - values[state]
                values[state] += alpha * deltas[state]
            nonterminal[episode] = np.abs(deltas[:-1]).mean()
            terminal[episode] = abs(deltas[-1])
        else:
            # G_s = r_s + gamma G_{s+1}: discounted reward-to-go, computed backwards
            discounts = gamma ** np.arange(length)
            returns = np.cumsum((rewards * discounts)[::-1])[::-1] / discounts
            if episode == 0:
                first_signal = float(np.abs(returns - values).min())
            values += alpha * (returns - values)
        errors[episode] = np.sqrt(np.mean((values - target) ** 2))
    return {
        "errors": errors,
        "nonterminal": nonterminal,
        "terminal": terminal,
        "first_signal": first_signal,
    }


def episodes_to_threshold(errors: np.ndarray, threshold: float) -> float:
    """1-based episode after which the error first falls below threshold (inf if never)."""
    below = np.flatnonzero(errors < threshold)
    return float(below[0] + 1) if len(below) else float("inf")


def run(config: Config = Config()) -> Result:
    """TD(0) vs Monte Carlo from V0 = -1000 on one chain, then episodes-to-threshold vs length."""
    rng = np.random.default_rng(config.seed)
    d = config.chain_length
    td = learn("td", d, config, rng)
    mc = learn("mc", d, config, rng)
    initial_error = float(
        np.sqrt(np.mean((config.initial_value - true_values(d, config.discount)) ** 2))
    )
    # the first half of the chain's sweeps: the TD error is still small, the values still wrong
    early = slice(0, d // 2)
    ratio = td["nonterminal"][early] / td["errors"][early]

    td_needed, mc_needed = [], []
    for length in config.scaling_lengths:
        td_needed.append(
            episodes_to_threshold(learn("td", length, config, rng)["errors"], config.threshold)
        )
        mc_needed.append(
            episodes_to_threshold(learn("mc", length, config, rng)["errors"], config.threshold)
        )
    lengths = np.array(config.scaling_lengths, dtype=float)
    finite = np.isfinite(td_needed)
    slope = (
        float(np.polyfit(lengths[finite], np.array(td_needed)[finite], 1)[0])
        if finite.sum() >= 2
        else float("nan")
    )
    metrics = {
        "initial_value_error": initial_error,
        "td_nonterminal_delta_first_episode": float(td["nonterminal"][0]),
        "td_terminal_delta_first_episode": float(td["terminal"][0]),
        "td_value_error_first_episode": float(td["errors"][0]),
        "td_value_error_halfway": float(td["errors"][d // 2 - 1]),
        "td_delta_over_value_error_max_early": float(ratio.max()),
        "mc_smallest_first_error_signal": mc["first_signal"],
        "mc_value_error_first_episode": float(mc["errors"][0]),
        "td_final_error": float(td["errors"][-20:].mean()),
        "mc_final_error": float(mc["errors"][-20:].mean()),
        "td_episodes_per_state": slope,
        "td_episodes_longest_chain": td_needed[-1],
        "td_episodes_shortest_chain": td_needed[0],
        "mc_episodes_max": float(max(mc_needed)),
        "mc_episodes_min": float(min(mc_needed)),
    }
    series = {
        "chain_length": d,
        "td_errors": td["errors"].tolist(),
        "mc_errors": mc["errors"].tolist(),
        "td_nonterminal": td["nonterminal"].tolist(),
        "scaling_lengths": list(config.scaling_lengths),
        "td_needed": td_needed,
        "mc_needed": mc_needed,
        "step_size": config.step_size,
        "discount": config.discount,
        "threshold": config.threshold,
    }
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: error and TD |delta| vs episodes (log y). Bottom: episodes to threshold vs d."""
    s = result.series
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=4.3,
        title=(
            "TD's errors of ~10 hide values off by 1000; the fix crawls back one state per sweep"
        ),
    )
    episodes = np.arange(1, len(s["td_errors"]) + 1)
    top.plot(episodes, s["td_errors"], color=PALETTE[1], label="TD(0): RMS value error")
    top.plot(
        episodes,
        s["td_nonterminal"],
        color=PALETTE[1],
        ls=":",
        label="TD(0): mean |TD error|, non-terminal steps",
    )
    top.plot(episodes, s["mc_errors"], color=PALETTE[0], label="Monte Carlo: RMS value error")
    top.set_yscale("log")
    top.set_ylim(0.1, 3000)
    style_panel(
        top,
        f"Chain of {s['chain_length']} states, gamma = {s['discount']}, step {s['step_size']}",
        "episodes",
        "error",
    )
    legend_below(top)

    bottom.plot(s["scaling_lengths"], s["td_needed"], "o-", color=PALETTE[1], label="TD(0)")
    bottom.plot(s["scaling_lengths"], s["mc_needed"], "s-", color=PALETTE[0], label="Monte Carlo")
    lengths = np.array(s["scaling_lengths"], dtype=float)
    bottom.plot(
        lengths, lengths / s["step_size"], "--", color="gray", lw=1.6, label="d / step size"
    )
    style_panel(
        bottom, f"Episodes until RMS error < {s['threshold']:g}", "chain length d", "episodes"
    )
    legend_below(bottom, ncol=3)
    return save_png(fig)
