"""Grading a student's game: reward the tester for discrepancies from the reference, not for play.

Grading a student's program by playing it is classifying an MDP: is this game the instructor's,
or a buggy variant (Play to Grade: Nie, Brunskill & Piech 2021, arXiv 2110.14615)? A tester
should therefore be rewarded for information about the bug label, not for playing well
(DreamGrader: Liu, Stephan, Nie, Piech, Brunskill & Finn 2022, "Giving feedback on interactive
student programs with meta-exploration", arXiv 2211.08802, with a Breakout example).

A toy student game: M areas (situations the tester can steer into: a paddle edge, a brick row,
the scoring wall, a level change), each hiding a few bugs; a test action probes one area and
triggers each of its bugs independently with that bug's discoverability p (0.6 for an obvious
crash in area 0, log-uniform from 0.005 to 0.3 elsewhere). Most bugs are behavioural (a wrong
bounce, a score not incremented, a brick that does not break): the game runs on, so they trip
neither a crash nor a generic invariant; a share ``crash_share`` crash. Area 0 is where good
play scores points, and where a generic invariant check also raises a flaky alarm half the time.
Two oracles: a crash/invariant detector, which sees crashes and the flaky alarm only; and a
discrepancy check, which replays the tester's actions in the instructor's reference
implementation and flags any divergence of state, which sees every bug and never the flaky
alarm (a discrepancy reproduces). The tester is an epsilon-greedy bandit over areas with
recency-weighted values, trained with one of four rewards:
- score: the game's points (the tester learns to play well, in area 0);
- per crash report: +1 per crash or invariant alarm, repeats included (the trap's reward);
- novel discrepancy: +1 the first time each discrepancy from the reference is seen;
- novel discrepancy plus a count-based coverage bonus beta / sqrt(visits of the area)
  (Bellemare et al. 2016, arXiv 1606.01868; for game testing, Gordillo et al. 2021,
  arXiv 2103.13798).
Paid for score, the tester plays where the points are; paid per report it farms the obvious
crash and the flaky alarm (specification gaming; Amodei et al. 2016, arXiv 1606.06565), and its
oracle cannot see a behavioural bug at all. Top: distinct real bugs detected against test steps.
Bottom: the bugs each tester detected by the end, crashes and behavioural bugs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Bug-finding reward for grading games: discrepancies from the reference, not score"
CAPTION = (
    "Top: distinct real bugs detected. Paid for score the tester plays well where the points are; "
    "paid per crash report it farms one crash and a flaky alarm, and a crash detector never sees "
    "the behavioural bugs (wrong bounce, score not incremented) that most student bugs are. "
    "Paid for new discrepancies from the instructor's reference, plus a coverage bonus, it "
    "explores and detects far more (bottom: by type)."
)

AGENTS = ("score", "crash_reports", "novel_discrepancy", "discrepancy_coverage")
LABELS = {
    "score": "score",
    "crash_reports": "crash reports",
    "novel_discrepancy": "discrepancy",
    "discrepancy_coverage": "discrepancy + coverage",
}


@dataclass(frozen=True)
class Config:
    """Game, oracles, agents and budget."""

    n_areas: int = 20
    """M: areas the tester can probe; area 0 scores points and holds the obvious crash."""
    bugs_per_area: int = 2
    """Hidden bugs in each of areas 1..M-1."""
    crash_share: float = 0.2
    """Share of the bugs outside area 0 that crash; the rest are behavioural."""
    easy_bug_probability: float = 0.6
    """Discoverability of the obvious crash in area 0."""
    alarm_probability: float = 0.5
    """Chance per probe of area 0 that the generic invariant check raises a flaky alarm."""
    min_probability: float = 0.005
    """Discoverability of the rarest bugs (log-uniform between this and max_probability)."""
    max_probability: float = 0.3
    """Discoverability of the most visible bugs outside area 0."""
    other_points: float = 0.3
    """Points per step elsewhere are uniform on [0, other_points]; area 0 pays 1."""
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
    """Area, discoverability and crash flag of every real bug; bug 0 is area 0's crash."""
    areas = np.repeat(np.arange(1, config.n_areas), config.bugs_per_area)
    log_p = rng.uniform(np.log(config.min_probability), np.log(config.max_probability), areas.size)
    bug_area = np.concatenate([[0], areas])
    bug_probability = np.concatenate([[config.easy_bug_probability], np.exp(log_p)])
    # exactly crash_share of them crash, on randomly chosen bugs (a coin per bug let one seed in
    # twenty draw 41% crashes, against the claim that most bugs are behavioural)
    crashing = np.zeros(areas.size, dtype=bool)
    crashing[rng.permutation(areas.size)[: round(config.crash_share * areas.size)]] = True
    crashes = np.concatenate([[True], crashing])
    points = np.concatenate([[1.0], config.other_points * rng.random(config.n_areas - 1)])
    return bug_area, bug_probability, crashes, points


def run(config: Config = Config()) -> Result:
    """Run the four rewards on the same game; count the distinct bugs each tester detects."""
    rng = np.random.default_rng(config.seed)
    bug_area, bug_probability, crashes, points = make_game(config, rng)
    n_bugs = bug_area.size
    rows = len(AGENTS) * config.seeds
    agent = np.repeat(np.arange(len(AGENTS)), config.seeds)
    is_agent = {name: agent == index for index, name in enumerate(AGENTS)}
    # what each tester's oracle can see: crash detector vs discrepancy from the reference
    visible = np.where(is_agent["crash_reports"][:, None], crashes[None, :], True)

    values = np.zeros((rows, config.n_areas))
    visits = np.zeros((rows, config.n_areas))
    detected = np.zeros((rows, n_bugs), dtype=bool)
    row = np.arange(rows)
    distinct = np.zeros((rows, config.steps))
    for t in range(config.steps):
        jitter = rng.random(values.shape) * 1e-9  # random tie-breaking among equal values
        greedy = np.argmax(values + jitter, axis=1)
        explore = rng.random(rows) < config.epsilon
        area = np.where(explore, rng.integers(0, config.n_areas, rows), greedy)
        visits[row, area] += 1

        triggered = (bug_area[None, :] == area[:, None]) & (
            rng.random((rows, n_bugs)) < bug_probability[None, :]
        )
        seen = triggered & visible
        alarm = (area == 0) & (rng.random(rows) < config.alarm_probability)
        novel = (seen & ~detected).sum(1)  # a discrepancy reproduces: no flaky alarms here
        detected |= seen

        reward = np.select(
            [is_agent["score"], is_agent["crash_reports"]],
            [points[area], seen.sum(1) + alarm],
            default=novel,
        ).astype(float)
        reward += is_agent["discrepancy_coverage"] * (
            config.coverage_bonus / np.sqrt(visits[row, area])
        )
        values[row, area] += config.step_size * (reward - values[row, area])
        distinct[:, t] = detected.sum(1)

    metrics: dict[str, float] = {
        "n_real_bugs": float(n_bugs),
        "behavioural_share": float(1 - crashes.mean()),
    }
    series: dict = {"n_real_bugs": n_bugs, "n_crashes": int(crashes.sum())}
    for name in AGENTS:
        mine = is_agent[name]
        metrics[f"{name}_distinct_bugs"] = float(distinct[mine, -1].mean())
        metrics[f"{name}_behavioural_bugs"] = float((detected[mine] & ~crashes).sum(1).mean())
        metrics[f"{name}_crash_bugs"] = float((detected[mine] & crashes).sum(1).mean())
        metrics[f"{name}_share_in_area0"] = float((visits[mine, 0] / config.steps).mean())
        metrics[f"{name}_share_in_top_area"] = float((visits[mine].max(1) / config.steps).mean())
        series[f"{name}_distinct"] = distinct[mine].mean(0).tolist()
        series[f"{name}_distinct_low"] = np.percentile(distinct[mine], 10, axis=0).tolist()
        series[f"{name}_distinct_high"] = np.percentile(distinct[mine], 90, axis=0).tolist()
        series[f"{name}_behavioural"] = metrics[f"{name}_behavioural_bugs"]
        series[f"{name}_crash"] = metrics[f"{name}_crash_bugs"]
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: distinct bugs detected vs steps. Bottom: bugs detected by type, per reward."""
    s = result.series
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=4.9,
        title="Reward the tester for new discrepancies from the reference game, not for score",
    )
    colors = dict(zip(AGENTS, (PALETTE[3], PALETTE[1], PALETTE[0], PALETTE[2])))
    steps = np.arange(1, len(s["score_distinct"]) + 1)
    for name in AGENTS:
        top.plot(steps, s[f"{name}_distinct"], color=colors[name], label=LABELS[name])
        top.fill_between(
            steps,
            s[f"{name}_distinct_low"],
            s[f"{name}_distinct_high"],
            color=colors[name],
            alpha=0.15,
        )
    top.set_ylim(0, s["n_real_bugs"])
    style_panel(
        top,
        f"Distinct bugs detected, of {s['n_real_bugs']}",
        "test steps",
        "bugs detected",
    )
    legend_below(top)

    names = list(reversed(AGENTS))
    positions = np.arange(len(names))
    behavioural = [s[f"{name}_behavioural"] for name in names]
    bottom.barh(
        positions,
        [s[f"{name}_crash"] for name in names],
        color=PALETTE[1],
        label=f"crashes (of {s['n_crashes']})",
    )
    bottom.barh(
        positions,
        behavioural,
        left=[s[f"{name}_crash"] for name in names],
        color=PALETTE[0],
        label=f"behavioural (of {s['n_real_bugs'] - s['n_crashes']})",
    )
    bottom.set_yticks(positions, [LABELS[name] for name in names])
    style_panel(bottom, "Bugs detected by the end, by type", "bugs detected")
    legend_below(bottom, ncol=2)
    return save_png(fig)
