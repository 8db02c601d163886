"""Reward per bug report gets farmed; reward for novel, verified bugs finds more of them.

A toy game to test: M areas, each hiding a few bugs; a test action probes one area and
triggers each of its bugs independently with that bug's discoverability p (from 0.6 for an
obvious crash down to 0.005 for a rare one). Area 0 also shows a flaky visual glitch half the
time, which never reproduces. A testing agent (an epsilon-greedy bandit over areas with
recency-weighted value estimates) is trained with one of three rewards: per report (every
triggered bug or glitch pays 1, duplicates included); novel verified bugs (pays 1 only the
first time a bug is reported, and only if it reproduces); and novel verified bugs plus a
count-based coverage bonus beta / sqrt(visits of the area) (Bellemare et al. 2016, "Unifying
count-based exploration and intrinsic motivation", arXiv 1606.01868; for game testing,
Gordillo, Bergdahl, Tollmar & Gisslen 2021, "Improving playtesting coverage via curiosity
driven reinforcement learning agents", arXiv 2103.13798). The per-report agent maximises its
reward by re-triggering the obvious crash and the glitch in area 0 over and over
(specification gaming; Amodei et al. 2016, "Concrete problems in AI safety", arXiv 1606.06565):
its reward climbs fastest while the number of distinct bugs it finds stalls. Left: distinct
real bugs found vs test steps. Right: reports filed, which is what the per-report reward pays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, figure_png, new_figure, style_axes

TITLE = "Bug-finding reward: per report vs novel verified bugs"
CAPTION = (
    "Paid per report, the tester farms the obvious crash and a flaky glitch: the most reports "
    "(right), the fewest distinct bugs (left). Paying only for new, reproducible bugs, plus a "
    "coverage bonus, sends it to unexplored areas and finds far more."
)

AGENTS = ("per_report", "novel_verified", "novel_plus_coverage")


@dataclass(frozen=True)
class Config:
    """Game, agents and budget."""

    n_areas: int = 20
    """M: areas the tester can probe; area 0 holds the obvious crash and the flaky glitch."""
    bugs_per_area: int = 2
    """Hidden bugs in each of areas 1..M-1."""
    easy_bug_probability: float = 0.6
    """Discoverability of the obvious crash in area 0."""
    glitch_probability: float = 0.5
    """Chance per probe of area 0 that the glitch shows (a report that never reproduces)."""
    min_probability: float = 0.005
    """Discoverability of the rarest bugs (log-uniform between this and max_probability)."""
    max_probability: float = 0.3
    """Discoverability of the most visible bugs outside area 0."""
    steps: int = 2000
    """Test actions per run."""
    epsilon: float = 0.05
    """Exploration rate of the bandit."""
    step_size: float = 0.1
    """Recency-weighted value update Q <- Q + step_size (r - Q) (tracks non-stationary rewards)."""
    coverage_bonus: float = 0.3
    """beta in the count-based bonus beta / sqrt(visits)."""
    seeds: int = 16
    """Independent runs per agent, in parallel."""
    seed: int = 0
    """Seed for every random generator (the game's bugs and the agents)."""


def make_game(config: Config, rng):
    """Area and discoverability of every real bug; bug 0 is the obvious crash in area 0."""
    areas = np.repeat(np.arange(1, config.n_areas), config.bugs_per_area)
    log_p = rng.uniform(np.log(config.min_probability), np.log(config.max_probability), areas.size)
    bug_area = np.concatenate([[0], areas])
    bug_probability = np.concatenate([[config.easy_bug_probability], np.exp(log_p)])
    return bug_area, bug_probability


def run(config: Config = Config()) -> Result:
    """Run the three reward schemes on the same game; count distinct bugs and reports."""
    rng = np.random.default_rng(config.seed)
    bug_area, bug_probability = make_game(config, rng)
    n_bugs = bug_area.size
    rows = len(AGENTS) * config.seeds
    agent_of_row = np.repeat(np.arange(len(AGENTS)), config.seeds)
    pays_per_report = agent_of_row == AGENTS.index("per_report")
    has_bonus = agent_of_row == AGENTS.index("novel_plus_coverage")

    values = np.zeros((rows, config.n_areas))
    visits = np.zeros((rows, config.n_areas))
    found = np.zeros((rows, n_bugs), dtype=bool)
    row = np.arange(rows)
    distinct = np.zeros((rows, config.steps))
    reports = np.zeros((rows, config.steps))
    filed = np.zeros(rows)
    for t in range(config.steps):
        jitter = rng.random(values.shape) * 1e-9  # random tie-breaking among equal values
        greedy = np.argmax(values + jitter, axis=1)
        explore = rng.random(rows) < config.epsilon
        area = np.where(explore, rng.integers(0, config.n_areas, rows), greedy)
        visits[row, area] += 1

        triggered = (bug_area[None, :] == area[:, None]) & (
            rng.random((rows, n_bugs)) < bug_probability[None, :]
        )
        glitch = (area == 0) & (rng.random(rows) < config.glitch_probability)
        n_reports = triggered.sum(1) + glitch
        novel = (triggered & ~found).sum(1)  # verification drops the glitch; dedup drops repeats
        found |= triggered

        reward = np.where(pays_per_report, n_reports, novel).astype(float)
        reward += has_bonus * config.coverage_bonus / np.sqrt(visits[row, area])
        values[row, area] += config.step_size * (reward - values[row, area])

        filed += n_reports
        distinct[:, t] = found.sum(1)
        reports[:, t] = filed

    metrics: dict[str, float] = {"n_real_bugs": float(n_bugs)}
    series: dict = {"n_real_bugs": n_bugs}
    for index, name in enumerate(AGENTS):
        mine = agent_of_row == index
        metrics[f"{name}_distinct_bugs"] = float(distinct[mine, -1].mean())
        metrics[f"{name}_reports"] = float(reports[mine, -1].mean())
        metrics[f"{name}_share_in_area0"] = float((visits[mine, 0] / config.steps).mean())
        metrics[f"{name}_share_in_top_area"] = float((visits[mine].max(1) / config.steps).mean())
        series[f"{name}_distinct"] = distinct[mine].mean(0).tolist()
        series[f"{name}_distinct_low"] = np.percentile(distinct[mine], 10, axis=0).tolist()
        series[f"{name}_distinct_high"] = np.percentile(distinct[mine], 90, axis=0).tolist()
        series[f"{name}_reports"] = reports[mine].mean(0).tolist()
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Left: distinct verified bugs vs steps. Right: reports filed vs steps."""
    s = result.series
    fig, (left, right) = new_figure(1, 2, height_px=520)
    labels = {
        "per_report": "reward per report",
        "novel_verified": "reward per novel verified bug",
        "novel_plus_coverage": "novel verified + coverage bonus",
    }
    colors = (PALETTE[1], PALETTE[0], PALETTE[2])
    steps = np.arange(1, len(s["per_report_distinct"]) + 1)
    for color, (name, label) in zip(colors, labels.items()):
        left.plot(steps, s[f"{name}_distinct"], color=color, lw=2, label=label)
        left.fill_between(
            steps, s[f"{name}_distinct_low"], s[f"{name}_distinct_high"], color=color, alpha=0.15
        )
        right.plot(steps, s[f"{name}_reports"], color=color, lw=2, label=label)
    left.axhline(s["n_real_bugs"], color="gray", ls=":", label="real bugs in the game")
    left.set_ylim(0, s["n_real_bugs"] * 1.35)  # headroom for the legend
    style_axes(left, "Distinct real bugs found (mean, 10-90%)", "test steps", "distinct bugs")
    left.legend(fontsize=9, loc="upper left")
    style_axes(
        right,
        "Reports filed (what per-report reward pays)",
        "test steps",
        "reports, duplicates and glitches included",
    )
    return figure_png(fig)
