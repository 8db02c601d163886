"""Meta-RL's chicken-and-egg: end-to-end credit for exploration vs DREAM's decoupled objectives.

Each task hides a goal among K doors. The agent gets one exploration step, choosing one of M
probes; only one probe (the sign) reveals the goal, and it is a detour: reading it costs c. Then
one exploitation step: it opens a door, seeing what exploration revealed, and earns 1 for the
right door. End-to-end meta-RL (RL^2-style: Duan et al. 2016, arXiv 1611.02779) trains both steps
by REINFORCE on that one return, 1[right door] - c 1[read the sign]. The expected gradient on the
sign's logit is pi(sign) [P(right | sign read) - c - J] (``sign_logit_gradient``). At the start
the exploiter ignores what it saw, so P(right | sign read) = 1/K = J and the gradient is
-c pi(sign) (1 - pi(sign)) < 0: the explorer learns to avoid the sign, the exploiter then sees
the sign ever more rarely and never learns to read it, and the gradient stays negative. That is
a stable local optimum at chance, not a slow start. With c = 0 the same gradient is exactly 0 at
the start: a plateau, which the exploiter eventually leaves from the 1/M of episodes that read
the sign (the dashed curve; it rises late and at a seed-dependent time). DREAM (Liu, Raghunathan,
Liang & Finn 2021, arXiv 2008.02790) breaks the loop: the exploit policy is trained with the task
id (privileged at training time), a decoder q(goal | observation) is fitted by maximum likelihood,
and the explorer is paid the information it gathers, log q(goal | obs) - log q(goal | nothing),
minus the same cost c; ln K = 2.3 nats outweighs c = 0.1. At test time the agent explores,
decodes the goal and exploits. Tabular softmax policies, batch-mean baselines, exact expected
curves every ``record_every`` iterations, ``seeds`` runs in parallel (curves are their mean;
the claims hold for every run). Top: test success vs iteration. Bottom: P(read the sign).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Meta-exploration: a costly sign traps end-to-end credit; DREAM learns"
CAPTION = (
    "Reading the sign costs 0.1. End-to-end, it pays only once exploitation uses the sign, so "
    "its gradient starts negative and stays so: the agent stops reading it and sits at chance "
    "(on 20 seeds: success <= 0.101, P(sign) < 0.01). Free, it only plateaus (mean 0.69-0.99 by "
    "1000 iterations). DREAM pays the information itself: >= 0.988."
)

SIGN = 0  # index of the probe that reveals the goal


@dataclass(frozen=True)
class Config:
    """Task sizes and the policy-gradient setup."""

    n_doors: int = 10
    """K: possible goals; chance return is 1/K."""
    n_probes: int = 20
    """M: exploration actions; one of them (the sign) reveals the goal."""
    iterations: int = 1000
    """Policy-gradient iterations: the whole run, until the free end-to-end agent escapes."""
    sign_cost: float = 0.1
    """Cost of reading the sign (a detour), paid in the same return as the door's reward."""
    batch_size: int = 32
    """Tasks (episodes) sampled per iteration."""
    learning_rate: float = 2.0
    """SGD step size for every table of logits."""
    seeds: int = 3
    """Independent runs, simulated in parallel; curves are their mean."""
    record_every: int = 10
    """Iterations between exact evaluations of the curves."""
    seed: int = 0
    """Seed for every random generator."""


def softmax(logits):
    shifted = np.exp(logits - logits.max(-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def sample(probs, rng):
    """One categorical draw per leading index (inverse CDF)."""
    draws = rng.random(probs.shape[:-1] + (1,))
    return np.minimum((draws > probs.cumsum(-1)).sum(-1), probs.shape[-1] - 1)


def sample_batch(probs, batch, rng):
    """``batch`` categorical draws from each run's row of ``probs`` (runs, n) -> (runs, batch)."""
    cdf = probs.cumsum(-1)[:, None, :]
    draws = rng.random((probs.shape[0], batch, 1))
    return np.minimum((draws > cdf).sum(-1), probs.shape[-1] - 1)


def one_hot(indices, n):
    return (indices[..., None] == np.arange(n)).astype(float)


def score_function(actions, probs):
    """grad of log softmax(logits)[action] w.r.t. the logits: onehot(action) - probs."""
    return one_hot(actions, probs.shape[-1]) - probs


def table_gradient(shape, rows, weighted_scores):
    """Average of per-episode gradients scattered to the table row each episode used."""
    return np.einsum("sbr,sbc->src", one_hot(rows, shape[1]), weighted_scores) / rows.shape[1]


def observation(probes, goals, n_doors):
    """The goal index if the sign was read, else the 'nothing' symbol n_doors."""
    return np.where(probes == SIGN, goals, n_doors)


def sign_logit_gradient(sign_probability, sign_payoff, expected_return):
    """E[grad of the sign's logit] = sum_a pi(a) (1[a = sign] - pi(sign)) payoff(a)
    = pi(sign) (payoff(sign) - J): positive only if reading the sign beats the average."""
    return sign_probability * (sign_payoff - expected_return)


def train_end_to_end(config: Config, cost: float, rng) -> dict[str, np.ndarray]:
    """RL^2-style: one return, 1[right door] - cost * 1[read the sign], credited to both steps.

    Returns per-seed curves (seeds, iterations) of the exact test success P(right door), the
    exact probability of reading the sign, and the exact expected gradient on the sign's
    logit, sum_a pi(a) (1[a = sign] - pi(sign)) payoff(a) = pi(sign) (payoff(sign) - J)."""
    k, m, seeds, batch, lr = (
        config.n_doors, config.n_probes, config.seeds, config.batch_size, config.learning_rate
    )  # fmt: skip
    seed_rows = np.arange(seeds)[:, None]
    # explore logits over probes; exploit logits per observation (K goals + "nothing")
    explore, exploit = np.zeros((seeds, m)), np.zeros((seeds, k + 1, k))
    curves = {"success": [], "sign": [], "sign_grad": []}
    for iteration in range(config.iterations):
        goals = rng.integers(0, k, size=(seeds, batch))
        explore_probs = softmax(explore)
        probes = sample_batch(explore_probs, batch, rng)
        obs = observation(probes, goals, k)
        door_probs = softmax(exploit)[seed_rows, obs]
        doors = sample(door_probs, rng)
        returns = (doors == goals) - cost * (probes == SIGN)
        advantage = returns - returns.mean(1, keepdims=True)  # batch-mean baseline
        explore += lr * (
            advantage[..., None] * score_function(probes, explore_probs[:, None])
        ).mean(1)
        exploit += lr * table_gradient(
            exploit.shape, obs, advantage[..., None] * score_function(doors, door_probs)
        )
        if iteration % config.record_every:
            continue
        # exact: reading the sign pays mean_g pi(g | g) - cost; any other probe pi(g | nothing)
        p, door = softmax(explore), softmax(exploit)
        success_blind = door[:, k].mean(-1)
        success_sign = np.diagonal(door[:, :k], axis1=1, axis2=2).mean(-1)
        success = p[:, SIGN] * success_sign + (1 - p[:, SIGN]) * success_blind
        curves["success"].append(success)
        curves["sign"].append(p[:, SIGN])
        expected_return = success - cost * p[:, SIGN]
        curves["sign_grad"].append(
            sign_logit_gradient(p[:, SIGN], success_sign - cost, expected_return)
        )
    return {name: np.stack(values, axis=1) for name, values in curves.items()}


def train_dream(config: Config, cost: float, rng) -> dict[str, np.ndarray]:
    """DREAM: exploit on the task id, decoder q(goal | obs) by max likelihood, and the explorer
    paid the information its probe gives about the goal minus the same cost."""
    k, m, seeds, batch, lr = (
        config.n_doors, config.n_probes, config.seeds, config.batch_size, config.learning_rate
    )  # fmt: skip
    seed_rows = np.arange(seeds)[:, None]
    explore, task, decoder = (
        np.zeros((seeds, m)),
        np.zeros((seeds, k, k)),
        np.zeros((seeds, k + 1, k)),
    )
    curves = {"success": [], "sign": []}
    for iteration in range(config.iterations):
        goals = rng.integers(0, k, size=(seeds, batch))
        explore_probs = softmax(explore)
        probes = sample_batch(explore_probs, batch, rng)
        obs = observation(probes, goals, k)
        task_probs = softmax(task)[seed_rows, goals]
        doors = sample(task_probs, rng)
        returns = (doors == goals).astype(float)
        advantage = returns - returns.mean(1, keepdims=True)
        task += lr * table_gradient(
            task.shape, goals, advantage[..., None] * score_function(doors, task_probs)
        )
        posterior = softmax(decoder)
        # information the observation gives about the goal: log q(g | obs) - log q(g | nothing)
        info = np.log(posterior[seed_rows, obs, goals]) - np.log(posterior[seed_rows, k, goals])
        info = info - cost * (probes == SIGN)
        info_advantage = info - info.mean(1, keepdims=True)
        explore += lr * (
            info_advantage[..., None] * score_function(probes, explore_probs[:, None])
        ).mean(1)
        decoder += lr * table_gradient(  # cross-entropy gradient: onehot(goal) - q(. | obs)
            decoder.shape, obs, score_function(goals, posterior[seed_rows, obs])
        )
        if iteration % config.record_every:
            continue
        # exact test success: decode g_hat ~ q(. | obs), open pi_task(. | g_hat)
        p, pi_task, q = softmax(explore), softmax(task), softmax(decoder)
        with_sign = np.einsum("sgh,shg->s", q[:, :k], pi_task) / k
        without_sign = np.einsum("sh,shg->s", q[:, k], pi_task) / k
        curves["success"].append(p[:, SIGN] * with_sign + (1 - p[:, SIGN]) * without_sign)
        curves["sign"].append(p[:, SIGN])
    return {name: np.stack(values, axis=1) for name, values in curves.items()}


def run(config: Config = Config()) -> Result:
    """Train end-to-end with and without the sign's cost, and DREAM with it; exact curves."""
    rng = np.random.default_rng(config.seed)
    costly = train_end_to_end(config, config.sign_cost, rng)
    free = train_end_to_end(config, 0.0, rng)
    dream = train_dream(config, config.sign_cost, rng)
    chance = 1.0 / config.n_doors
    last = max(1, costly["success"].shape[1] // 10)  # the last tenth of the recorded points
    at_400 = min(400 // config.record_every, costly["success"].shape[1] - 1)

    def final(curve: np.ndarray) -> float:
        """Mean over the runs of the last tenth of the iterations, worst run."""
        return float(curve[:, -last:].mean(1).min())

    def final_best(curve: np.ndarray) -> float:
        return float(curve[:, -last:].mean(1).max())

    metrics = {
        "chance_return": chance,
        "sign_cost": config.sign_cost,
        # worst and best of the parallel runs, so a claim holds for every run
        "e2e_cost_final_success_max": final_best(costly["success"]),
        "e2e_cost_final_sign_max": float(costly["sign"][:, -1].max()),
        "e2e_cost_initial_sign_grad": float(costly["sign_grad"][:, 0].max()),
        "e2e_cost_max_sign_grad": float(costly["sign_grad"].max()),
        "e2e_free_final_success_min": final(free["success"]),
        "e2e_free_final_success_mean": float(free["success"][:, -last:].mean()),
        "e2e_free_success_at_400_max": float(free["success"][:, at_400].max()),
        "dream_final_success_min": final(dream["success"]),
        "dream_final_sign_min": float(dream["sign"][:, -1].min()),
        "initial_sign_probability": 1.0 / config.n_probes,
    }
    series = {
        "e2e_cost_success": costly["success"].mean(0).tolist(),
        "e2e_free_success": free["success"].mean(0).tolist(),
        "dream_success": dream["success"].mean(0).tolist(),
        "e2e_cost_sign": costly["sign"].mean(0).tolist(),
        "e2e_free_sign": free["sign"].mean(0).tolist(),
        "dream_sign": dream["sign"].mean(0).tolist(),
        "chance": chance,
        "record_every": config.record_every,
    }
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: test success vs iteration, the whole run. Bottom: probability of reading the sign."""
    s = result.series
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=3.3,
        title="When reading the sign costs a little, end-to-end stops reading it; DREAM learns",
    )
    iterations = np.arange(len(s["e2e_cost_success"])) * s["record_every"]
    top.plot(iterations, s["dream_success"], color=PALETTE[2], label="DREAM, sign costs 0.1")
    top.plot(
        iterations, s["e2e_cost_success"], color=PALETTE[1], label="end-to-end, sign costs 0.1"
    )
    top.plot(
        iterations, s["e2e_free_success"], color=PALETTE[0], ls="--", label="end-to-end, sign free"
    )
    top.axhline(s["chance"], color="gray", ls=":", label="chance (1/K)")
    top.set_ylim(0, 1.05)
    style_panel(top, "Test success after one exploration step", "iteration", "P(right door)")
    legend_below(top, ncol=2)
    bottom.plot(iterations, s["dream_sign"], color=PALETTE[2])
    bottom.plot(iterations, s["e2e_cost_sign"], color=PALETTE[1])
    bottom.plot(iterations, s["e2e_free_sign"], color=PALETTE[0], ls="--")
    bottom.set_ylim(0, 1.05)
    style_panel(bottom, "How often the explorer reads the sign", "iteration", "P(read sign)")
    return save_png(fig)
