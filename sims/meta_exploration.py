"""Meta-RL's chicken-and-egg: end-to-end credit for exploration vs DREAM's decoupled objectives.

Each task hides a goal among K doors. The agent gets one exploration step, choosing one of M
probes; only one probe (the sign) reveals the goal. Then one exploitation step: it opens a door,
seeing what exploration revealed, and earns 1 for the right door. End-to-end meta-RL (RL^2-style:
Duan et al. 2016, arXiv 1611.02779) trains both steps by REINFORCE on that single exploit reward.
The exploration step is credited only through the return, and reading the sign pays only if the
exploit policy already uses the sign: the expected gradient on the sign's logit is P(sign) *
[P(right door | sign read) - J], which at the start is (1/M) * (1/K - 1/K) = 0, and the exploit
policy learns to read signs only from the 1/M of episodes that read one. At initialisation the
exploiter ignores the information, so the expected exploration gradient is exactly zero; if
reading the sign cost something (a detour, a step), it would be negative and end-to-end
training would learn to avoid the sign. Shaping the exploit reward does not help for the same
reason: a policy that does not yet use the information cannot follow it. Both signals are products
of small probabilities, so learning sits on a plateau whose length grows roughly like M*K (with
the defaults the end-to-end return reaches half-way only after ~1100 iterations, measured over 5
seeds; the plot stops at 400). DREAM (Liu, Raghunathan, Liang & Finn 2021, "Decoupling exploration
and exploitation for meta-reinforcement learning without sacrifices", arXiv 2008.02790) breaks the
loop: the exploit policy is trained with the task id (privileged at training time), a decoder
q(goal | observation) is fitted by maximum likelihood, and the exploration policy is rewarded by
the information it gathers, log q(goal | obs) - log q(goal | nothing); the paper's bottlenecked
task embedding is simply the goal here. At test time the agent explores, decodes the goal and
exploits. Tabular softmax policies, batch-mean baselines, exact expected returns. Top: test
return vs iteration. Bottom: norm of the exploration policy's expected gradient (log scale).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Meta-exploration: end-to-end credit vs decoupled (DREAM)"
CAPTION = (
    "End-to-end, exploring only pays if exploitation already uses what was found, so the "
    "exploration gradient is ~P(explore right) x P(exploit right): ~0, and the return sits "
    "at chance. DREAM rewards information directly and trains exploitation on the task id: "
    "it learns."
)

SIGN = 0  # index of the probe that reveals the goal


@dataclass(frozen=True)
class Config:
    """Task sizes and the policy-gradient setup."""

    n_doors: int = 10
    """K: possible goals; chance return is 1/K."""
    n_probes: int = 20
    """M: exploration actions; one of them (the sign) reveals the goal."""
    iterations: int = 400
    """Policy-gradient iterations."""
    batch_size: int = 32
    """Tasks (episodes) sampled per iteration."""
    learning_rate: float = 1.0
    """SGD step size for every table of logits."""
    seeds: int = 5
    """Independent runs, simulated in parallel; curves are their mean."""
    seed: int = 0
    """Seed for every random generator."""


def softmax(logits):
    shifted = np.exp(logits - logits.max(-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def sample(probs, rng):
    """One categorical draw per leading index (inverse CDF)."""
    draws = rng.random(probs.shape[:-1] + (1,))
    return np.minimum((draws > probs.cumsum(-1)).sum(-1), probs.shape[-1] - 1)


def score_function(actions, probs):
    """grad of log softmax(logits)[action] w.r.t. the logits: onehot(action) - probs."""
    return np.eye(probs.shape[-1])[actions] - probs


def table_gradient(shape, rows, weighted_scores):
    """Average of per-episode gradients scattered to the table row each episode used."""
    seeds, batch = rows.shape
    grad = np.zeros(shape)
    np.add.at(grad, (np.arange(seeds)[:, None].repeat(batch, 1), rows), weighted_scores / batch)
    return grad


def observation(probes, goals, n_doors):
    """The goal index if the sign was read, else the 'nothing' symbol n_doors."""
    return np.where(probes == SIGN, goals, n_doors)


def exploration_gradient_norm(explore_probs, payoff):
    """|E[grad log pi_e(a) * payoff(a)]| = |sum_a pi_e(a) (onehot(a) - pi_e) payoff(a)|."""
    mean_payoff = (explore_probs * payoff).sum(-1, keepdims=True)
    return np.linalg.norm(explore_probs * (payoff - mean_payoff), axis=-1)


def run(config: Config = Config()) -> Result:
    """Train both agents; record exact test return and exploration-gradient norm each iteration."""
    rng = np.random.default_rng(config.seed)
    k, m, seeds, batch, lr = (
        config.n_doors,
        config.n_probes,
        config.seeds,
        config.batch_size,
        config.learning_rate,
    )
    seed_rows = np.arange(seeds)[:, None]

    # end-to-end: explore logits over probes; exploit logits per observation (K goals + nothing)
    e2e_explore, e2e_exploit = np.zeros((seeds, m)), np.zeros((seeds, k + 1, k))
    # DREAM: explore logits; exploit logits per task id; decoder logits q(goal | observation)
    dream_explore, dream_task, decoder = (
        np.zeros((seeds, m)),
        np.zeros((seeds, k, k)),
        np.zeros((seeds, k + 1, k)),
    )
    curves = {name: [] for name in ("e2e_return", "dream_return", "e2e_grad", "dream_grad")}

    for _ in range(config.iterations):
        goals = rng.integers(0, k, size=(seeds, batch))

        # --- end-to-end: one return, credited to both the probe and the door ---
        explore_probs = softmax(e2e_explore)
        probes = sample(np.broadcast_to(explore_probs[:, None], (seeds, batch, m)), rng)
        obs = observation(probes, goals, k)
        door_probs = softmax(e2e_exploit)[seed_rows, obs]
        doors = sample(door_probs, rng)
        returns = (doors == goals).astype(float)
        advantage = returns - returns.mean(1, keepdims=True)  # batch-mean baseline
        e2e_explore += lr * (
            advantage[..., None] * score_function(probes, explore_probs[:, None])
        ).mean(1)
        e2e_exploit += lr * table_gradient(
            e2e_exploit.shape, obs, advantage[..., None] * score_function(doors, door_probs)
        )

        # --- DREAM: exploit on the task id, decoder by max likelihood, explore on information ---
        explore_probs = softmax(dream_explore)
        probes = sample(np.broadcast_to(explore_probs[:, None], (seeds, batch, m)), rng)
        obs = observation(probes, goals, k)
        task_probs = softmax(dream_task)[seed_rows, goals]
        doors = sample(task_probs, rng)
        returns = (doors == goals).astype(float)
        advantage = returns - returns.mean(1, keepdims=True)
        dream_task += lr * table_gradient(
            dream_task.shape, goals, advantage[..., None] * score_function(doors, task_probs)
        )
        posterior = softmax(decoder)
        # information gain of the observation about the goal: log q(g | obs) - log q(g | nothing)
        info_reward = np.log(posterior[seed_rows, obs, goals]) - np.log(
            posterior[seed_rows, k, goals]
        )
        info_advantage = info_reward - info_reward.mean(1, keepdims=True)
        dream_explore += lr * (
            info_advantage[..., None] * score_function(probes, explore_probs[:, None])
        ).mean(1)
        decoder += lr * table_gradient(  # cross-entropy gradient: onehot(goal) - q(. | obs)
            decoder.shape, obs, score_function(goals, posterior[seed_rows, obs])
        )

        # --- exact expected test return and exploration-gradient norms ---
        e2e_p, e2e_door = softmax(e2e_explore), softmax(e2e_exploit)
        # expected exploit success per probe: sign -> mean_g pi(g | g); others -> pi(g | nothing)
        e2e_payoff = np.repeat(e2e_door[:, k].mean(-1, keepdims=True), m, axis=1)
        e2e_payoff[:, SIGN] = np.diagonal(e2e_door[:, :k], axis1=1, axis2=2).mean(-1)
        curves["e2e_return"].append((e2e_p * e2e_payoff).sum(-1))
        curves["e2e_grad"].append(exploration_gradient_norm(e2e_p, e2e_payoff))

        dr_p, dr_task, dr_q = softmax(dream_explore), softmax(dream_task), softmax(decoder)
        # test time: decode g_hat ~ q(. | obs), then open pi_task(. | g_hat); success if = goal
        with_sign = np.einsum("sgh,shg->s", dr_q[:, :k], dr_task) / k
        without_sign = np.einsum("sh,shg->s", dr_q[:, k], dr_task) / k
        curves["dream_return"].append(
            dr_p[:, SIGN] * with_sign + (1 - dr_p[:, SIGN]) * without_sign
        )
        info_payoff = np.zeros((seeds, m))
        info_payoff[:, SIGN] = np.mean(
            np.log(np.diagonal(dr_q[:, :k], axis1=1, axis2=2)) - np.log(dr_q[:, k]), axis=-1
        )
        curves["dream_grad"].append(exploration_gradient_norm(dr_p, info_payoff))

    arrays = {name: np.stack(values, axis=1) for name, values in curves.items()}  # (seeds, iters)
    chance = 1.0 / k
    last = max(1, config.iterations // 10)
    metrics = {
        "chance_return": chance,
        "e2e_final_return": float(arrays["e2e_return"][:, -last:].mean()),
        "dream_final_return": float(arrays["dream_return"][:, -last:].mean()),
        "e2e_final_sign_probability": float(softmax(e2e_explore)[:, SIGN].mean()),
        "dream_final_sign_probability": float(softmax(dream_explore)[:, SIGN].mean()),
        # the product the exploration signal is made of, at initialisation
        "initial_signal_product": (1.0 / m) * (1.0 / k),
        "e2e_mean_grad_norm": float(arrays["e2e_grad"].mean()),
        "dream_mean_grad_norm": float(arrays["dream_grad"].mean()),
    }
    series = {name: values.mean(0).tolist() for name, values in arrays.items()}
    series["chance"] = chance
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: test return vs iteration. Bottom: exploration gradient norm (log scale)."""
    s = result.series
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=3.9,
        title="End-to-end, exploring earns no gradient until exploiting uses it; DREAM learns",
    )
    iterations = np.arange(1, len(s["e2e_return"]) + 1)
    top.plot(iterations, s["dream_return"], color=PALETTE[2], label="DREAM (decoupled)")
    top.plot(iterations, s["e2e_return"], color=PALETTE[1], label="end-to-end")
    top.axhline(s["chance"], color="gray", ls=":", label="chance (1/K)")
    top.set_ylim(0, 1.02)
    style_panel(top, "Test return after one exploration step", "iteration", "P(right door)")
    legend_below(top, ncol=3)
    bottom.plot(iterations, s["dream_grad"], color=PALETTE[2], label="DREAM")
    bottom.plot(iterations, s["e2e_grad"], color=PALETTE[1], label="end-to-end")
    bottom.set_yscale("log")
    style_panel(bottom, "Exploration policy's expected gradient", "iteration", "|E[grad]|")
    return save_png(fig)
