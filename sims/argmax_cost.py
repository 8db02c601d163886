"""Cost of argmax_a Q(s, a) over a discretised d-dimensional action space vs an actor or NAF.

Q-learning's greedy step needs max over actions. With k bins per action dimension, a grid search
evaluates Q at k^d actions: 10 bins and a 14-joint arm means 1e14 network evaluations for one
action. Actor-critic methods (DDPG, Lillicrap et al. 2015, arXiv 1509.02971; SAC, Haarnoja et
al. 2018, arXiv 1801.01290) learn an actor mu(s) that outputs the action in one forward pass;
NAF (Gu, Lillicrap, Sutskever & Levine 2016, "Continuous Deep Q-Learning with Model-based
Acceleration", arXiv 1603.00748) makes Q quadratic in the action, Q(s, a) = V(s) - 1/2 (a -
mu(s))^T P(s) (a - mu(s)), so argmax_a Q = mu(s) in closed form. This simulation really times
(time.perf_counter) and counts the Q evaluations of a grid argmax over a small MLP critic for d
= 1..5, fits t(d) = overhead + cost_per_eval * k^d to the measured times and extrapolates to d =
14; the actor's and NAF's costs, measured the same way, do not depend on d. The plot shows
evaluations and wall time against d on a log scale. Wall-time figures vary from run to run; the
evaluation counts are exact.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from itertools import pairwise

import numpy as np

from sims.common import PALETTE, Result, figure_png, new_figure, seeded, style_axes

TITLE = "Argmax over a discretised action space: k^d vs one forward pass"
CAPTION = (
    "Grid argmax over Q(s, a) costs k^d evaluations: x10 per action dimension with 10 bins, "
    "~1e14 for a 14-joint arm (dashed: extrapolated from measured times). An actor network or "
    "NAF's closed-form argmax mu(s) costs one forward pass at every d."
)


@dataclass(frozen=True)
class Config:
    """Network sizes, grid resolution, measured dimensions and the extrapolation target."""

    bins: int = 10
    """k: grid points per action dimension."""
    max_measured_dim: int = 5
    """Measure d = 1..max_measured_dim (10^5 evaluations at d = 5 takes ~0.1 s here)."""
    target_dim: int = 14
    """Extrapolate to this many action dimensions (e.g. a 14-DoF bimanual arm)."""
    state_dim: int = 8
    """Observation size fed to every network."""
    hidden: int = 64
    """Width of the two hidden layers of the critic, the actor and NAF."""
    chunk: int = 65536
    """Grid actions evaluated per batched forward pass (bounds memory, not the count)."""
    repeats: int = 3
    """Timings keep the fastest of this many runs (least disturbed by other processes)."""
    seed: int = 0
    """Seed for network weights and the state."""


def mlp(sizes: list[int], generator):
    """A tanh MLP with weights drawn from the given generator (untrained: cost is what we time)."""
    import torch

    layers: list = []
    for fan_in, fan_out in pairwise(sizes):
        linear = torch.nn.Linear(fan_in, fan_out)
        with torch.no_grad():
            bound = fan_in**-0.5
            linear.weight.uniform_(-bound, bound, generator=generator)
            linear.bias.uniform_(-bound, bound, generator=generator)
        layers += [linear, torch.nn.Tanh()]
    return torch.nn.Sequential(*layers[:-1])


def grid_argmax(critic, state, dim: int, bins: int, chunk: int):
    """Exhaustive argmax of Q(s, a) over the k^d grid on [-1, 1]^d; returns (evaluations, best a).

    Grid points are decoded from flat indices chunk by chunk (digit j of the index in base k is
    the bin of dimension j), so memory stays O(chunk * d) however large k^d is.
    """
    import torch

    levels = torch.linspace(-1.0, 1.0, bins)
    powers = bins ** torch.arange(dim)
    total = bins**dim
    best_value, best_index, evaluations = -float("inf"), 0, 0
    with torch.no_grad():
        for start in range(0, total, chunk):
            flat = torch.arange(start, min(start + chunk, total))
            actions = levels[(flat[:, None] // powers) % bins]
            inputs = torch.cat([state.expand(len(flat), -1), actions], dim=1)
            values = critic(inputs).squeeze(1)
            evaluations += len(flat)
            value, position = values.max(0)
            if value.item() > best_value:
                best_value, best_index = value.item(), start + position.item()
    return evaluations, levels[(best_index // powers) % bins]


class NAFHead:
    """NAF: Q(s, a) = V(s) - 1/2 (a - mu)^T L L^T (a - mu); argmax_a Q(s, a) = mu(s), no search."""

    def __init__(self, state_dim: int, action_dim: int, hidden: int, generator):
        self.action_dim = action_dim
        tril = action_dim * (action_dim + 1) // 2
        self.body = mlp([state_dim, hidden, hidden, 1 + action_dim + tril], generator)

    def argmax(self, state):
        import torch

        with torch.no_grad():
            out = self.body(state)
        return torch.tanh(out[..., 1 : 1 + self.action_dim])  # mu(s); V and L are not needed


def actor_action(actor, state):
    """DDPG/SAC-style greedy action: one forward pass of the actor, squashed to [-1, 1]."""
    import torch

    with torch.no_grad():
        return torch.tanh(actor(state))


def fastest_seconds(fn, repeats: int, calls: int = 1) -> float:
    """Minimum over repeats of the mean wall time of `calls` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def run(config: Config = Config()) -> Result:
    """Count and time grid argmax, actor and NAF action selection for d = 1..max_measured_dim."""
    generator = seeded(config.seed)
    import torch

    state = torch.randn(1, config.state_dim, generator=generator)
    dims = list(range(1, config.max_measured_dim + 1))
    grid_evals, grid_seconds, actor_evals, actor_seconds, naf_seconds = [], [], [], [], []
    for dim in dims:
        critic = mlp([config.state_dim + dim, config.hidden, config.hidden, 1], generator)
        actor = mlp([config.state_dim, config.hidden, config.hidden, dim], generator)
        naf = NAFHead(config.state_dim, dim, config.hidden, generator)

        search = partial(grid_argmax, critic, state, dim, config.bins, config.chunk)
        evaluations, _ = search()
        grid_evals.append(evaluations)
        grid_seconds.append(fastest_seconds(search, config.repeats))

        act = partial(actor_action, actor, state)
        actor_evals.append(len(act()))  # one forward pass -> one action per state
        # One forward pass is ~50 us: extra repeats are cheap and steady these small timings.
        actor_seconds.append(fastest_seconds(act, config.repeats + 4, calls=50))
        naf_seconds.append(fastest_seconds(partial(naf.argmax, state), config.repeats + 4,
                                           calls=50))

    # Fit t(d) = overhead + cost_per_eval * k^d by least squares on relative errors (each
    # measured point weighs the same), then extrapolate that exponential to the target d.
    evals = np.array(grid_evals, dtype=float)
    seconds = np.array(grid_seconds)
    design = np.stack([np.ones_like(evals), evals], axis=1) / seconds[:, None]
    (overhead, cost_per_eval), *_ = np.linalg.lstsq(design, np.ones_like(seconds), rcond=None)
    target_evals = float(config.bins**config.target_dim)
    count_slope = np.polyfit(dims, np.log(evals), 1)[0]
    return Result(
        metrics={
            "grid_evals_growth_per_dim": float(np.exp(count_slope)),
            "grid_time_growth_last_dim": grid_seconds[-1] / grid_seconds[-2],
            "grid_evals_target_dim": target_evals,
            "grid_seconds_target_dim_extrapolated": float(overhead + cost_per_eval * target_evals),
            "grid_seconds_per_eval": float(cost_per_eval),
            "grid_seconds_max_measured_dim": grid_seconds[-1],
            "actor_evals_per_action": float(max(actor_evals)),
            "actor_seconds_ratio_max_to_min_dim": actor_seconds[-1] / actor_seconds[0],
            "naf_seconds_ratio_max_to_min_dim": naf_seconds[-1] / naf_seconds[0],
            "actor_seconds_mean": float(np.mean(actor_seconds)),
        },
        series={
            "dims": dims,
            "bins": config.bins,
            "target_dim": config.target_dim,
            "grid_evals": grid_evals,
            "grid_seconds": grid_seconds,
            "fit_overhead": float(overhead),
            "fit_cost_per_eval": float(cost_per_eval),
            "actor_seconds": actor_seconds,
            "naf_seconds": naf_seconds,
        },
    )


def human_duration(seconds: float) -> str:
    """'3.2 ms', '41 s', '12 days', '3.4e5 years'."""
    for unit, size in (("years", 3.156e7), ("days", 86400.0), ("h", 3600.0), ("s", 1.0)):
        if seconds >= size:
            value = seconds / size
            return f"{value:.2g} {unit}" if value < 1e4 else f"{value:.1e} {unit}"
    return f"{seconds * 1e3:.2g} ms"


def plot(result: Result) -> bytes:
    """Evaluations per argmax and wall time per argmax against action dimension (log y)."""
    series = result.series
    dims = np.array(series["dims"])
    bins, target = series["bins"], series["target_dim"]
    every = np.arange(1, target + 1)
    fig, (ax_evals, ax_time) = new_figure(1, 2, height_px=500)

    ax_evals.semilogy(
        every,
        float(bins) ** every,
        "--",
        color=PALETTE[1],
        alpha=0.6,
        label=f"grid, k^d (k = {bins})",
    )
    ax_evals.semilogy(
        dims, series["grid_evals"], "o", color=PALETTE[1], ms=8, label="grid, counted"
    )
    ax_evals.semilogy(
        every, np.ones_like(every), "-", color=PALETTE[0], lw=2, label="actor / NAF: 1 forward pass"
    )
    style_axes(
        ax_evals, "Q evaluations per greedy action", "action dimensions d", "network evaluations"
    )

    fitted = series["fit_overhead"] + series["fit_cost_per_eval"] * float(bins) ** every
    ax_time.semilogy(
        every,
        fitted,
        "--",
        color=PALETTE[1],
        alpha=0.6,
        label=f"grid, fit {series['fit_cost_per_eval'] * 1e6:.2g} µs x k^d",
    )
    ax_time.semilogy(
        dims, series["grid_seconds"], "o", color=PALETTE[1], ms=8, label="grid, measured"
    )
    ax_time.semilogy(dims, series["actor_seconds"], "s-", color=PALETTE[0], label="actor mu(s)")
    ax_time.semilogy(dims, series["naf_seconds"], "^-", color=PALETTE[2], label="NAF argmax")
    ax_time.annotate(
        f"d = {target}: ~{human_duration(fitted[-1])}",
        (target, fitted[-1]),
        xytext=(-10, -4),
        textcoords="offset points",
        ha="right",
        fontsize=11,
    )
    style_axes(
        ax_time, "Wall time per greedy action (1 CPU thread)", "action dimensions d", "seconds"
    )
    return figure_png(fig, suptitle="Greedy action selection cost vs action dimension")
