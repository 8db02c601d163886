"""Trajectory stitching: step-level values beat cloning the successful traces.

A solution is a chain of decisions. On track, the "correct" step keeps the solution on track and
the "other" step is a mistake; the last step on track decides success. Off track, continuing
never succeeds, and a repair gets back on track with probability p (luck) and otherwise fails.
The data hold two kinds of flawed traces: A takes every step right but fumbles the last one
(failure); B makes an early mistake and sometimes repairs it by luck (the lucky ones succeed).
Filtering for successful traces and cloning them (rejection-sampling SFT / filtered BC) copies
B, mistake included, so its success rate is B's luck p. Offline Q-learning on all steps (fitted
Q iteration on the data's empirical model, actions never tried valued at 0) learns from A that
its prefix leads to the last decision and from B that the last decision can be made right, and
stitches them: success 1, better than either trace. (It trusts its empirical model: when every
repair in the data happened to work, at p = 0.9 on one seed in ten, the mistake looks as good as
the right step and it splits between them, success 0.95.) Step-level credit is what process reward
models give (Lightman et al. 2023, "Let's Verify Step by Step", arXiv 2305.20050); when offline
RL beats BC on such data is analysed by Kumar, Hong, Singh & Levine 2022, "When Should We Prefer
Offline Reinforcement Learning Over Behavioral Cloning?", arXiv 2204.05618. The plot shows the
success of each learner and how SFT tracks B's luck while Q-learning does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Trajectory stitching: offline Q-learning vs SFT on successes"
CAPTION = (
    "SFT on the successful traces of a fixed set clones trace B's early mistake, so it succeeds "
    "only as often as B's lucky repair (p). Offline step-level Q-learning joins A's correct "
    "prefix to the correct last step seen in B and succeeds (nearly) every time, whatever p is. "
    "Online "
    "outcome-reward RL is unbiased and learns too, but from hundreds of new episodes."
)

CORRECT, OTHER = 0, 1


@dataclass(frozen=True)
class Config:
    """Chain length, the data set of flawed traces and the sweep of recovery luck."""

    steps: int = 4
    """Decisions per solution (>= 3, so that B can make a mistake, repair it and finish)."""
    recovery_probability: float = 0.3
    """p: chance that repairing an off-track solution gets it back on track."""
    traces_a: int = 10
    """Copies of trace A (right prefix, wrong last step) in the data."""
    attempts_b: int = 200
    """Attempts of trace B (early mistake, then a repair that succeeds with probability p); 200
    make a data set without one successful repair unlikely even at p = 0.1 (0.9^200 ~ 7e-10;
    with 40, seed 15 had none)."""
    sweep: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    """Recovery probabilities for the bottom panel."""
    online_iterations: int = 40
    """Online outcome-reward policy gradient: updates, each on ``online_batch`` fresh episodes."""
    online_batch: int = 8
    """Episodes per online update (leave-one-out baseline within the batch)."""
    online_learning_rate: float = 2.0
    """Step size on the tabular logits of the online learner."""
    seed: int = 0
    """Seed for the repairs' luck in the data."""


class ChainMDP:
    """States: on-track step k (index k), off-track step k (index L+k), success, failure."""

    def __init__(self, steps: int, recovery_probability: float):
        self.steps = steps
        self.p = recovery_probability
        self.success, self.failure = 2 * steps, 2 * steps + 1
        self.n_states = 2 * steps + 2

    def on(self, k: int) -> int:
        return k

    def off(self, k: int) -> int:
        return self.steps + k

    def transitions(self, state: int, action: int) -> list[tuple[float, int]]:
        """[(probability, next state)] of the true dynamics; terminal states absorb."""
        last = self.steps - 1
        if state in (self.success, self.failure):
            return [(1.0, state)]
        if state < self.steps:  # on track at step k
            k = state
            if k == last:
                return [(1.0, self.success if action == CORRECT else self.failure)]
            return [(1.0, self.on(k + 1) if action == CORRECT else self.off(k + 1))]
        k = state - self.steps  # off track at step k
        if k == last:
            return [(1.0, self.failure)]
        if action == CORRECT:  # carrying on with a flawed solution stays flawed
            return [(1.0, self.off(k + 1))]
        return [(self.p, self.on(k + 1)), (1.0 - self.p, self.failure)]  # a failed repair is fatal

    def step(self, state: int, action: int, rng) -> int:
        outcomes = self.transitions(state, action)
        probs = [prob for prob, _ in outcomes]
        return outcomes[rng.choice(len(outcomes), p=probs)][1]

    def success_probability(self, policy) -> float:
        """Exact P(success) of a stochastic policy (array n_states x 2) from on-track step 0."""
        dist = np.zeros(self.n_states)
        dist[self.on(0)] = 1.0
        for _ in range(self.steps):
            nxt = np.zeros(self.n_states)
            for state in np.flatnonzero(dist):
                for action in (CORRECT, OTHER):
                    for prob, target in self.transitions(state, action):
                        nxt[target] += dist[state] * policy[state, action] * prob
            dist = nxt
        return float(dist[self.success])


def rollout(mdp: ChainMDP, choose_action, rng) -> list[tuple[int, int, int]]:
    """One trajectory of (state, action, next state) until a terminal state."""
    trace, state = [], mdp.on(0)
    for k in range(mdp.steps):
        action = choose_action(k, state < mdp.steps)
        nxt = mdp.step(state, action, rng)
        trace.append((state, action, nxt))
        state = nxt
        if state in (mdp.success, mdp.failure):
            break
    return trace


def trace_a_action(k: int, on_track: bool, steps: int) -> int:
    """A: every step right except the last."""
    return CORRECT if k < steps - 1 else OTHER


def trace_b_action(k: int, on_track: bool) -> int:
    """B: a mistake at the first step, a repair at the second, then right to the end."""
    if k == 0:
        return OTHER
    return CORRECT if on_track else OTHER


def collect_traces(mdp: ChainMDP, config: Config, rng):
    """The offline data: A-type traces (all fail) and B-type attempts (the lucky ones succeed)."""
    traces_a = [
        rollout(mdp, lambda k, on: trace_a_action(k, on, mdp.steps), rng)
        for _ in range(config.traces_a)
    ]
    traces_b = [rollout(mdp, trace_b_action, rng) for _ in range(config.attempts_b)]
    return traces_a, traces_b


def clone(mdp: ChainMDP, traces) -> np.ndarray:
    """BC: per-state action frequencies over the given traces (uniform where a state is unseen)."""
    counts = np.zeros((mdp.n_states, 2))
    for trace in traces:
        for state, action, _ in trace:
            counts[state, action] += 1
    totals = counts.sum(1, keepdims=True)
    return np.where(totals > 0, counts / np.maximum(totals, 1), 0.5)


def offline_q_learning(mdp: ChainMDP, traces) -> tuple[np.ndarray, np.ndarray]:
    """Fitted Q iteration on the data's empirical model (gamma = 1, reward 1 on reaching success).

    Q(s, a) = sum_s' P_hat(s'|s, a) [r(s') + max_a' Q(s', a')]; a pair the data never tried keeps
    Q = 0, so the greedy policy only picks actions it has evidence for.
    """
    counts = np.zeros((mdp.n_states, 2, mdp.n_states))
    for trace in traces:
        for state, action, nxt in trace:
            counts[state, action, nxt] += 1
    tried = counts.sum(2)
    model = counts / np.maximum(tried, 1)[..., None]
    reward = np.zeros(mdp.n_states)
    reward[mdp.success] = 1.0
    q = np.zeros((mdp.n_states, 2))
    for _ in range(mdp.steps + 1):
        value = q.max(1)
        value[[mdp.success, mdp.failure]] = 0.0  # terminal: the episode ends
        q = model @ (reward + value)
    best = np.isclose(q, q.max(1, keepdims=True))
    greedy = best / best.sum(1, keepdims=True)  # ties split evenly: no free prior for CORRECT
    return q, greedy


def online_outcome_rl(config: Config, probabilities, rng) -> np.ndarray:
    """On-policy REINFORCE on the 0/1 outcome, fresh episodes, one tabular policy per p.

    Every row runs its own chain (recovery probability ``probabilities[row]``) from a uniform
    policy; the advantage is the outcome minus the mean outcome of the batch's other episodes
    (leave-one-out). Returns the exact success probability of each final policy.
    """
    steps, batch = config.steps, config.online_batch
    rows = len(probabilities)
    mdp = ChainMDP(steps, 0.0)  # state indexing only; the dynamics below use each row's p
    p = np.asarray(probabilities)[:, None]
    logits = np.zeros((rows, mdp.n_states, 2))
    row = np.arange(rows)[:, None]
    for _ in range(config.online_iterations):
        probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        state = np.zeros((rows, batch), dtype=int)  # on track at step 0
        taken = []  # (state, action, alive) per step
        for k in range(steps):
            alive = state < 2 * steps  # not yet success or failure
            action = (rng.random((rows, batch)) < probs[row, state, OTHER]).astype(int)
            on = state < steps
            last = k == steps - 1
            repaired = rng.random((rows, batch)) < p
            nxt_on = np.where(
                action == CORRECT,
                mdp.success if last else k + 1,
                mdp.failure if last else steps + k + 1,
            )
            nxt_off = np.where(
                action == CORRECT,
                mdp.failure if last else steps + k + 1,
                np.where(repaired & (not last), k + 1, mdp.failure),
            )
            taken.append((state, action, alive))
            state = np.where(alive, np.where(on, nxt_on, nxt_off), state)
        outcome = (state == mdp.success).astype(float)
        advantage = outcome - (outcome.sum(1, keepdims=True) - outcome) / (batch - 1)
        gradient = np.zeros_like(logits)
        for visited, action, alive in taken:
            score = -probs[row, visited]  # grad of log softmax: onehot(action) - probs
            score[row, np.arange(batch)[None, :], action] += 1
            weight = (advantage * alive)[..., None]
            np.add.at(gradient, (np.broadcast_to(row, visited.shape), visited), weight * score)
        logits += config.online_learning_rate * gradient / batch
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    return np.array(
        [ChainMDP(steps, q).success_probability(probs[i]) for i, q in enumerate(probabilities)]
    )


def evaluate(config: Config, recovery_probability: float, rng) -> dict[str, float]:
    """Success of cloning A, of SFT on the successes, and of offline Q-learning on one data set."""
    mdp = ChainMDP(config.steps, recovery_probability)
    traces_a, traces_b = collect_traces(mdp, config, rng)
    traces = traces_a + traces_b
    successes = [trace for trace in traces if trace[-1][2] == mdp.success]
    q, greedy = offline_q_learning(mdp, traces)
    return {
        "trace_a": mdp.success_probability(clone(mdp, traces_a)),
        "sft": mdp.success_probability(clone(mdp, successes)),
        "q_learning": mdp.success_probability(greedy),
        "data_success_rate": len(successes) / len(traces),
        "q_first_step_gap": float(q[mdp.on(0), CORRECT] - q[mdp.on(0), OTHER]),
    }


def run(config: Config = Config()) -> Result:
    """One data set at the default luck p, plus a sweep over p."""
    rng = np.random.default_rng(config.seed)
    main = evaluate(config, config.recovery_probability, rng)
    sweep = [evaluate(config, p, rng) for p in config.sweep]
    online = online_outcome_rl(config, [config.recovery_probability, *config.sweep], rng)
    return Result(
        metrics={
            "trace_a_success": main["trace_a"],
            "sft_success": main["sft"],
            "q_learning_success": main["q_learning"],
            "data_success_rate": main["data_success_rate"],
            "q_first_step_gap": main["q_first_step_gap"],
            "sweep_min_q_minus_sft": float(min(s["q_learning"] - s["sft"] for s in sweep)),
            "online_rl_success": float(online[0]),
            "sweep_min_online_rl": float(online[1:].min()),
            "online_rl_episodes": float(config.online_iterations * config.online_batch),
        },
        series={
            "recovery_probability": config.recovery_probability,
            "sweep_p": list(config.sweep),
            "sweep_sft": [s["sft"] for s in sweep],
            "sweep_q_learning": [s["q_learning"] for s in sweep],
            "sweep_online": online[1:].tolist(),
            "online_episodes": config.online_iterations * config.online_batch,
        },
    )


def plot(result: Result) -> bytes:
    """Top: success per learner. Bottom: success against the recovery luck p."""
    metrics, series = result.metrics, result.series
    fig, (ax_bar, ax_sweep) = phone_figure(
        2,
        height_per_panel=4.4,
        title="SFT on successful traces clones their luck; step-level values stitch the good parts",
    )
    names = ["trace A", "SFT on successes", "offline Q-learning", "online outcome RL"]
    values = [
        metrics["trace_a_success"],
        metrics["sft_success"],
        metrics["q_learning_success"],
        metrics["online_rl_success"],
    ]
    positions = np.arange(len(names))[::-1]
    ax_bar.barh(positions, values, color=[PALETTE[4], PALETTE[1], PALETTE[0], PALETTE[2]])
    for position, value in zip(positions, values):
        ax_bar.text(value + 0.02, position, f"{value:.2f}", va="center", fontsize=16)
    ax_bar.set_yticks(positions, names)
    ax_bar.set_xlim(0, 1.18)
    style_panel(
        ax_bar, f"Success (B's repair works w.p. {series['recovery_probability']})", "P(success)"
    )

    p = series["sweep_p"]
    ax_sweep.plot(p, series["sweep_q_learning"], "s-", color=PALETTE[0], label="offline Q-learning")
    ax_sweep.plot(p, series["sweep_sft"], "o-", color=PALETTE[1], label="SFT on successes")
    ax_sweep.plot(
        p,
        series["sweep_online"],
        "^-",
        color=PALETTE[2],
        label=f"online outcome RL ({series['online_episodes']} new episodes)",
    )
    ax_sweep.plot([0, 1], [0, 1], ":", color="gray", label="B's own success (p)")
    ax_sweep.set_ylim(0, 1.05)
    style_panel(ax_sweep, "Success vs B's luck", "recovery probability p", "P(success)")
    legend_below(ax_sweep)
    return save_png(fig)
