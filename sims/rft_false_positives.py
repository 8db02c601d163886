"""Rejection-sampling fine-tuning with an answer-only check: it helps, until lucky guesses win.

Rejection-sampling fine-tuning (RFT; Yuan et al. 2023, "Scaling Relationship on Learning
Mathematical Reasoning with Large Language Models", arXiv 2308.01825) and STaR (Zelikman et al.
2022, "STaR: Bootstrapping Reasoning With Reasoning", arXiv 2203.14465) sample N reasoning paths
per problem, keep those whose final answer matches the reference, deduplicate them (RFT keeps
distinct reasoning paths) and fine-tune on the result. The check looks at the answer only: an
imperfect verifier (the same holds for visible unit tests or a format check).

The model: problem difficulty d is uniform on [0, 1]. The base model reasons carefully with
probability c(d) (from ``careful_easy`` down to ``careful_hard``: it guesses more where it is
lost) and then succeeds with probability e(d), falling with d: the sound rate is
p(d) = c(d) e(d). Every other path is flawed (a guess, or careful reasoning
gone wrong) and still lands on the right answer with probability 1 / ``answer_choices`` (small
integers, multiple choice): the lucky rate q(d) = (1 - p(d)) / answer_choices. A problem has
only ``correct_paths`` distinct correct derivations, while flawed paths are all different, so
after deduplication an easy problem's contribution saturates at a few paths while every lucky
flawed path is new. That is why the flawed share grows with N, and "suddenly": a hard problem
(p ~ 0) contributes nothing while N << 1/q and, once N ~ 1/q, a stream of false positives whose
share is q / (p + q). Without deduplication (every accepted sample kept) the share does not
grow, but the set is then dominated by copies of easy problems, the diversity RFT dedups for.

The student is a logistic model of "reason carefully vs guess" given a noisy estimate of the
problem's difficulty, fitted by maximum likelihood on the kept set: it imitates the reasoning
style of its data. It is tested on held-out problems with free-form answers, where a guess is
wrong: test accuracy = P(careful | d) e(d); the base model's is c(d) e(d). At small N the kept set is mostly sound, more
careful than the base model, and RFT helps; at large N lucky guesses take over, the student
learns to guess and falls below the base model. The fix is to verify harder where the false
positives live: a process check (a step-level verifier, Lightman et al. 2023, "Let's verify step
by step", arXiv 2305.20050) rejects a flawed path with probability ``process_recall`` and keeps
the gain at every N, though 1 - recall of the flawed paths still get through. (Dropping
problems whose pass rate is near chance was tried here and helps little: once N is large,
lucky paths come from medium problems too.) Choose N on held-out accuracy either way.

Top: the share of flawed paths in the fine-tuning set against N. Bottom: the student's test
error against N, with the base model's, for the deduplicated set, the set without dedup (which
never crashes: on seeds 0-19 its error moves by at most 0.03 across N and stays at least 0.10
under the base model's) and the process check.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, style_panel

TITLE = "Rejection sampling with answer-only checks: helps at small N, lucky guesses win at large N"
CAPTION = (
    "Top: as samples per problem N grow, the share of deduplicated fine-tuning paths that "
    "reached the right answer by flawed reasoning climbs, most on hard problems (from N ~ 1/q). "
    "Bottom: with dedup the student beats the base model at small N and falls below it at large "
    "N. The crash needs dedup: without it the student stays near 0.44 error at every N (spread "
    "<= 0.03, seeds 0-19), its set full of easy copies. A process check keeps the gain."
)


@dataclass(frozen=True)
class Config:
    """Problems, the base model's sampling, the pipelines and the student."""

    train_problems: int = 400
    """Problems sampled from for fine-tuning."""
    test_problems: int = 4000
    """Held-out problems (free-form answers) for the student's test error."""
    sample_counts: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    """N, samples per problem, increasing."""
    careful_easy: float = 0.9
    """Probability that the base model reasons carefully (not guessing) on the easiest problem."""
    careful_hard: float = 0.4
    """... and on the hardest; linear in between (models guess more where they are lost)."""
    skill_midpoint: float = 0.6
    """Difficulty at which careful reasoning succeeds half the time."""
    skill_sharpness: float = 7.0
    """Slope of e(d) = sigmoid(sharpness * (midpoint - d))."""
    answer_choices: int = 20
    """A flawed path hits the right answer with probability 1 / answer_choices."""
    correct_paths: int = 10
    """Distinct correct derivations a problem has (flawed paths are all distinct)."""
    process_recall: float = 0.95
    """Probability that the process check rejects a flawed path."""
    hard_threshold: float = 0.7
    """Problems with d above this count as hard in the metrics."""
    difficulty_noise: float = 0.3
    """Std of the noise on the difficulty feature the student sees."""
    seed: int = 0
    """Seed for every random generator."""


def careful_success(difficulty, config: Config):
    """e(d): probability that careful reasoning reaches the right answer."""
    import numpy as np

    return 1.0 / (1.0 + np.exp(-config.skill_sharpness * (config.skill_midpoint - difficulty)))


def careful_rate(difficulty, config: Config):
    """c(d): probability that the base model reasons carefully instead of guessing."""
    return config.careful_easy + (config.careful_hard - config.careful_easy) * difficulty


def fit_logistic(features, labels, weights, iterations: int = 30, ridge: float = 1e-3):
    """Weighted logistic regression by Newton's method; returns the coefficients."""
    import numpy as np

    coef = np.zeros(features.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-features @ coef))
        gradient = features.T @ (weights * (labels - p)) - ridge * coef
        hessian = (features * (weights * p * (1 - p))[:, None]).T @ features
        coef += np.linalg.solve(hessian + ridge * np.eye(len(coef)), gradient)
    return coef


def sample_paths(n_samples: int, difficulty, config: Config, rng):
    """Accepted paths per problem under the answer-only check.

    Returns how often each of the problem's distinct correct derivations was sampled
    ([problem, correct_paths]) and the number of lucky flawed paths (each one distinct).
    """
    import numpy as np

    p_sound = careful_rate(difficulty, config) * careful_success(difficulty, config)
    p_lucky = (1 - p_sound) / config.answer_choices
    outcome = rng.multinomial(n_samples, np.stack([p_sound, p_lucky, 1 - p_sound - p_lucky], 1))
    sound_draws, lucky = outcome[:, 0], outcome[:, 1]
    # Each sound draw is one of the problem's `correct_paths` derivations, uniformly.
    choice = rng.integers(0, config.correct_paths, (len(difficulty), n_samples))
    drawn = np.arange(n_samples) < sound_draws[:, None]
    counts = np.stack(
        [((choice == path) & drawn).sum(1) for path in range(config.correct_paths)], 1
    )
    return counts, lucky


def run(config: Config = Config()) -> Result:
    """Build the fine-tuning set for each N and pipeline; fit and test the student."""
    import numpy as np

    rng = np.random.default_rng(config.seed)
    difficulty = rng.random(config.train_problems)
    seen_train = difficulty + config.difficulty_noise * rng.standard_normal(len(difficulty))
    test_difficulty = rng.random(config.test_problems)
    seen_test = test_difficulty + config.difficulty_noise * rng.standard_normal(
        config.test_problems
    )
    test_success = careful_success(test_difficulty, config)
    hard = difficulty > config.hard_threshold
    test_features = np.stack([np.ones_like(seen_test), seen_test], 1)
    train_features = np.stack([np.ones_like(seen_train), seen_train], 1)

    def student_error(sound, flawed) -> float:
        """Fit P(careful | seen difficulty) on the kept paths; free-form test error."""
        labels = np.concatenate([np.ones(len(sound)), np.zeros(len(flawed))])
        weights = np.concatenate([sound, flawed]).astype(float)
        if weights.sum() == 0:
            return float("nan")
        coef = fit_logistic(np.concatenate([train_features, train_features]), labels, weights)
        careful = 1.0 / (1.0 + np.exp(-test_features @ coef))
        return float(1 - (careful * test_success).mean())

    def share(sound, flawed, mask=slice(None)) -> float:
        denominator = (sound[mask] + flawed[mask]).sum()
        return float(flawed[mask].sum() / denominator) if denominator else 0.0

    base_error = float(1 - (careful_rate(test_difficulty, config) * test_success).mean())
    metrics: dict[str, float] = {
        "base_test_error": base_error,
        "hard_problem_fraction": float(hard.mean()),
    }
    keys = (
        "share_rft",
        "share_hard",
        "share_raw",
        "share_process",
        "error_rft",
        "error_raw",
        "error_process",
    )
    curves: dict[str, list[float]] = {key: [] for key in keys}
    for n_samples in config.sample_counts:
        counts, lucky = sample_paths(n_samples, difficulty, config, rng)
        sound_draws = counts.sum(1)
        sound = (counts > 0).sum(1)  # RFT keeps each distinct derivation once
        # process check: each flawed path is rejected with probability process_recall
        process_lucky = rng.binomial(lucky, 1 - config.process_recall)
        values = {
            "share_rft": share(sound, lucky),
            "share_hard": share(sound, lucky, hard),
            "share_raw": share(sound_draws, lucky),  # every accepted sample, no dedup
            "share_process": share(sound, process_lucky),
            "error_rft": student_error(sound, lucky),
            "error_raw": student_error(sound_draws, lucky),
            "error_process": student_error(sound, process_lucky),
        }
        for key, value in values.items():
            curves[key].append(value)
        metrics |= {f"{key}_N{n_samples}": value for key, value in values.items()}
        metrics |= {
            f"hard_share_of_flawed_N{n_samples}": float(lucky[hard].sum() / max(lucky.sum(), 1)),
            f"kept_sound_N{n_samples}": float(sound.sum()),
            f"kept_flawed_N{n_samples}": float(lucky.sum()),
            f"hard_problems_contributing_N{n_samples}": float(((sound + lucky)[hard] > 0).mean()),
        }
    errors = np.array(curves["error_rft"])
    metrics["best_rft_error"] = float(errors.min())
    metrics["best_rft_n"] = float(config.sample_counts[int(errors.argmin())])
    series = {"sample_counts": list(config.sample_counts), "base_error": base_error, **curves}
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Flawed share against N; the student's test error against N per pipeline."""
    series = result.series
    counts = series["sample_counts"]
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=4.6,
        title="With dedup, more samples per problem help, then lucky guesses take over the set",
    )
    top.plot(counts, series["share_rft"], "o-", color=PALETTE[1], label="answer check (RFT)")
    top.plot(
        counts,
        series["share_hard"],
        "o--",
        color=PALETTE[1],
        lw=1.8,
        label="answer check, hard problems",
    )
    top.plot(
        counts,
        series["share_raw"],
        "s:",
        color="gray",
        lw=1.8,
        label="answer check, no dedup",
    )
    top.plot(counts, series["share_process"], "^-", color=PALETTE[2], label="process check")
    top.set_ylim(0, 1)
    style_panel(
        top, "Flawed reasoning in the fine-tuning set", "samples per problem N", "flawed share"
    )
    legend_below(top, ncol=2)

    bottom.plot(counts, series["error_rft"], "o-", color=PALETTE[1], label="answer check (RFT)")
    bottom.plot(counts, series["error_process"], "^-", color=PALETTE[2], label="process check")
    bottom.plot(
        counts, series["error_raw"], "s:", color="gray", lw=1.8, label="answer check, no dedup"
    )
    bottom.axhline(series["base_error"], color="black", lw=1.6, ls=":", label="base model")
    style_panel(
        bottom, "Student's test error (free-form answers)", "samples per problem N", "test error"
    )
    legend_below(bottom, ncol=2)
    for ax in (top, bottom):
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts, [str(count) for count in counts])
    return save_png(fig)
