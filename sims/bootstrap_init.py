"""Bootstrapping from V = -1000: Monte Carlo forgets it at once, TD(0) needs ~1/(1-gamma) sweeps.

A random walk on a chain of states (step left or right with probability 1/2, walls reflect),
reward r(s) in [0, 1] rising to the right, discount gamma, true values V = (I - gamma P)^-1 r.
Every estimate starts at V0 = -1000. A Monte Carlo (MC) update regresses V(s) on a sampled
return G, which does not depend on V at all: after one update (sample average, step 1) the
error is just the return's noise. A TD(0) update regresses V(s) on r + gamma V(s'), which still
contains the -1000 of the next state. Even the best case, the expected TD(0) update with step
size 1 (a synchronous sweep V <- r + gamma P V with the true P, what sampled TD averages to),
only shrinks the error e = V - V_true as e <- gamma P e. The constant offset -1000 is an
eigenvector of P with eigenvalue 1, so the error decays exactly like gamma^k and needs
k = log(|e0| / threshold) / log(1/gamma) ~ log(|e0| / threshold) / (1 - gamma) sweeps; with a
step size alpha the factor per update is 1 - alpha (1 - gamma), slower still, while MC's is 1 -
alpha. (Sutton & Barto 2018, "Reinforcement Learning: An Introduction", ch. 6-7; Kearns & Singh
2000, "Bias-variance error bounds for temporal difference updates", COLT.) Left: RMS value error
vs updates per state for MC and TD(0) at two discounts. Right: TD sweeps until the error falls
below the threshold vs the horizon 1/(1 - gamma), against the prediction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, figure_png, new_figure, style_axes

TITLE = "Bootstrapping from V = -1000: Monte Carlo vs TD(0)"
CAPTION = (
    "Left: one Monte Carlo update wipes out the -1000 start (error = return noise); TD(0), even "
    "noise-free, bootstraps on -1000 and its error shrinks only by gamma per sweep. Right: "
    "sweeps to wash it out grow like log(1000/threshold)/(1-gamma): ~700 at gamma=0.99."
)


@dataclass(frozen=True)
class Config:
    """Random-walk chain, initial value, discounts and budgets."""

    n_states: int = 10
    """States of the random-walk chain."""
    initial_value: float = -1000.0
    """V0 for every state."""
    curve_discounts: tuple[float, ...] = (0.9, 0.99)
    """Discounts drawn on the error-vs-updates panel."""
    sweep_discounts: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998)
    """Discounts whose TD sweeps-to-threshold are measured."""
    threshold: float = 1.0
    """RMS value error that counts as 'washed out' (rewards are in [0, 1])."""
    max_updates: int = 1500
    """Updates per state drawn on the left panel (TD sweeps run until the threshold regardless)."""
    mc_returns: int = 500
    """Sampled returns per state for the MC curve (MC's error after k updates ~ std(G)/sqrt(k))."""
    return_tolerance: float = 1e-4
    """Returns are truncated after T steps with gamma^T below this (bias < tolerance/(1-gamma))."""
    seed: int = 0
    """Seed for every random generator."""


def random_walk_chain(n_states: int):
    """Transition matrix (reflecting walls) and rewards r(s) = s / (n - 1)."""
    transitions = np.zeros((n_states, n_states))
    for s in range(n_states):
        transitions[s, max(s - 1, 0)] += 0.5
        transitions[s, min(s + 1, n_states - 1)] += 0.5
    return transitions, np.linspace(0.0, 1.0, n_states)


def true_values(transitions, rewards, discount: float):
    return np.linalg.solve(np.eye(len(rewards)) - discount * transitions, rewards)


def rms(errors) -> float:
    return float(np.sqrt(np.mean(np.square(errors))))


def td_sweep_errors(transitions, rewards, discount, v_true, v0, n_sweeps):
    """RMS error after each expected TD(0) sweep V <- r + gamma P V (step size 1)."""
    values, errors = v0.copy(), []
    for _ in range(n_sweeps):
        values = rewards + discount * transitions @ values
        errors.append(rms(values - v_true))
    return errors


def td_sweeps_to_threshold(transitions, rewards, discount, v_true, v0, threshold) -> int:
    values, sweeps = v0.copy(), 0
    while rms(values - v_true) >= threshold:
        values = rewards + discount * transitions @ values
        sweeps += 1
    return sweeps


def sampled_returns(transitions, rewards, discount, n_returns, tolerance, rng):
    """(n_states, n_returns) discounted returns of walks started in every state, truncated at T."""
    n_states = len(rewards)
    horizon = int(np.ceil(np.log(tolerance) / np.log(discount)))
    states = np.repeat(np.arange(n_states), n_returns)
    returns = np.zeros(states.shape)
    cumulative = np.cumsum(transitions, axis=1)
    for t in range(horizon):
        returns += discount**t * rewards[states]
        # inverse-CDF sampling of the next state from each row of P
        draws = rng.random(states.shape)[:, None]
        states = np.minimum((draws > cumulative[states]).sum(1), n_states - 1)
    return returns.reshape(n_states, n_returns)


def run(config: Config = Config()) -> Result:
    """MC and TD(0) value error from V0 = -1000; TD sweeps to threshold across discounts."""
    rng = np.random.default_rng(config.seed)
    transitions, rewards = random_walk_chain(config.n_states)
    v0 = np.full(config.n_states, config.initial_value)
    metrics: dict[str, float] = {}
    series: dict = {"curve_discounts": list(config.curve_discounts)}

    for discount in config.curve_discounts:
        v_true = true_values(transitions, rewards, discount)
        returns = sampled_returns(
            transitions, rewards, discount, config.mc_returns, config.return_tolerance, rng
        )
        # MC with sample averaging: after k updates V(s) is the mean of k returns (V0 is gone)
        running_means = np.cumsum(returns, axis=1) / np.arange(1, config.mc_returns + 1)
        mc_errors = [rms(running_means[:, k] - v_true) for k in range(config.mc_returns)]
        td_errors = td_sweep_errors(transitions, rewards, discount, v_true, v0, config.max_updates)
        series[f"mc_errors_{discount}"] = mc_errors
        series[f"td_errors_{discount}"] = td_errors
        metrics[f"initial_error_{discount}"] = rms(v0 - v_true)
        metrics[f"mc_error_after_1_{discount}"] = mc_errors[0]
        metrics[f"td_error_after_1_{discount}"] = td_errors[0]
        metrics[f"return_std_{discount}"] = float(returns.std(axis=1).mean())

    measured, predicted = [], []
    for discount in config.sweep_discounts:
        v_true = true_values(transitions, rewards, discount)
        sweeps = td_sweeps_to_threshold(
            transitions, rewards, discount, v_true, v0, config.threshold
        )
        measured.append(sweeps)
        # e_k = (gamma P)^k e_0 and P has eigenvalue 1 on the constant offset: |e_k| ~ gamma^k |e_0|
        predicted.append(np.log(rms(v0 - v_true) / config.threshold) / np.log(1 / discount))
        metrics[f"td_sweeps_to_threshold_{discount}"] = float(sweeps)
    horizons = 1 / (1 - np.array(config.sweep_discounts))
    metrics["td_sweeps_loglog_slope"] = float(np.polyfit(np.log(horizons), np.log(measured), 1)[0])
    metrics["td_sweeps_over_prediction_max"] = float(np.max(np.array(measured) / predicted))
    metrics["td_sweeps_over_prediction_min"] = float(np.min(np.array(measured) / predicted))
    series.update(
        sweep_horizons=horizons.tolist(),
        sweeps_measured=measured,
        sweeps_predicted=[float(p) for p in predicted],
        threshold=config.threshold,
    )
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Left: error vs updates (log-log). Right: sweeps to threshold vs 1/(1-gamma)."""
    s = result.series
    fig, (left, right) = new_figure(1, 2, height_px=520)
    for color, discount in zip(PALETTE, s["curve_discounts"]):
        mc, td = s[f"mc_errors_{discount}"], s[f"td_errors_{discount}"]
        left.plot(
            np.arange(1, len(mc) + 1), mc, color=color, lw=2, label=f"Monte Carlo, gamma={discount}"
        )
        left.plot(
            np.arange(1, len(td) + 1),
            td,
            "--",
            color=color,
            lw=2,
            label=f"TD(0) expected sweeps, gamma={discount}",
        )
    left.axhline(s["threshold"], color="gray", lw=1, ls=":", label="threshold")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_ylim(1e-4, 5e3)  # TD's noise-free sweeps head to 0 once the bias is gone
    style_axes(left, "Value error from V0 = -1000", "updates per state", "RMS value error")
    left.legend(fontsize=9, loc="lower left")

    right.plot(
        s["sweep_horizons"],
        s["sweeps_measured"],
        "o",
        color=PALETTE[1],
        ms=8,
        label="TD(0) sweeps, measured",
    )
    right.plot(
        s["sweep_horizons"],
        s["sweeps_predicted"],
        "-",
        color="gray",
        label="log(|e0|/threshold) / log(1/gamma)",
    )
    right.set_xscale("log")
    right.set_yscale("log")
    style_axes(right, "TD sweeps until error < threshold", "horizon 1/(1 - gamma)", "sweeps")
    return figure_png(fig)
