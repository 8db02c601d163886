"""Rejection-sampling fine-tuning with an answer-only check fills up with lucky guesses.

Rejection-sampling fine-tuning (RFT; Yuan et al. 2023, "Scaling Relationship on Learning
Mathematical Reasoning with Large Language Models", arXiv 2308.01825) and STaR (Zelikman et al.
2022, "STaR: Bootstrapping Reasoning With Reasoning", arXiv 2203.14465) sample N reasoning paths
per problem, keep those whose final answer matches the reference, deduplicate them (RFT keeps
distinct reasoning paths) and fine-tune on the result. The check looks at the answer only.

The model here: problem difficulty d is uniform on [0, 1]. A sampled path is careful reasoning
with probability ``careful_rate``; careful reasoning succeeds with a probability e(d) that falls
with difficulty. Everything else (a guess, or careful reasoning that went wrong) is a flawed
path, which still lands on the right answer with probability 1 / ``answer_choices`` (few answer
choices: multiple choice, yes/no, small integers). A problem has only a few distinct correct
derivations but flawed paths are all different, so after deduplication the correct paths per
problem saturate while every lucky flawed path is new. As N grows, hard problems contribute a
growing stream of distinct right-for-the-wrong-reasons samples, and they come to dominate the
fine-tuning set.

The student is a logistic model of "reason carefully vs guess" given a noisy estimate of the
problem's difficulty, fitted by maximum likelihood on the kept set (it imitates the reasoning
style of its data). It is tested on held-out problems with free-form answers, where a guess is
wrong: test accuracy = P(careful) e(d). Three pipelines: RFT as above; the same keeping at most
``cap`` paths per problem, the most often sampled first (correct derivations recur, lucky flawed
paths are singletons, so frequency is a cheap consistency signal); and a process check (a step-level verifier, as in Lightman et
al. 2023, arXiv 2305.20050) that rejects a flawed path with probability ``process_recall``.
With free-form answers (RFT's GSM8K setting) lucky guesses are rare and more samples help; the
trap is answer-only checking when the answer is guessable.

Plot: left, the share of flawed paths in the fine-tuning set against N; right, the student's test
error against N for the three pipelines and the base model.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Result, figure_png, new_figure, style_axes

TITLE = "Rejection sampling with answer-only checks: lucky guesses take over"
CAPTION = (
    "Left: as samples per problem N grow, the share of fine-tuning examples that reached the "
    "right answer by flawed reasoning climbs (mostly from hard problems). Right: a student "
    "trained on them gets worse with N; capping per problem or checking the process prevents it."
)


@dataclass(frozen=True)
class Config:
    """Problems, the base model's sampling, the pipelines and the student."""

    train_problems: int = 400
    """Problems sampled from for fine-tuning."""
    test_problems: int = 4000
    """Held-out problems (free-form answers) for the student's test error."""
    sample_counts: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    """N, samples per problem, increasing."""
    careful_rate: float = 0.8
    """Probability that the base model reasons carefully instead of guessing."""
    skill_midpoint: float = 0.6
    """Difficulty at which careful reasoning succeeds half the time."""
    skill_sharpness: float = 7.0
    """Slope of e(d) = sigmoid(sharpness * (midpoint - d))."""
    answer_choices: int = 4
    """A flawed path hits the right answer with probability 1 / answer_choices."""
    correct_paths: int = 3
    """Distinct correct derivations a problem has (flawed paths are all distinct)."""
    cap: int = 4
    """Per-problem cap of the capped pipeline (most frequently sampled paths first)."""
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

    p_sound = config.careful_rate * careful_success(difficulty, config)
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


def cap_by_frequency(counts, lucky, cap: int, rng):
    """Keep at most ``cap`` distinct paths per problem, the most often sampled first.

    Correct derivations recur; every lucky flawed path is sampled once. Paths seen twice or more
    are kept first, the remaining slots go to randomly chosen singletons. Returns (sound, flawed).
    """
    import numpy as np

    repeated = np.minimum((counts >= 2).sum(1), cap)
    singles = (counts == 1).sum(1)
    slots = np.minimum(cap - repeated, singles + lucky)
    single_sound = rng.hypergeometric(singles, lucky, slots)
    return repeated + single_sound, slots - single_sound


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

    def student_error(sound, flawed) -> float:
        features = np.stack([np.ones_like(seen_train), seen_train], 1)
        both = np.concatenate([features, features])
        labels = np.concatenate([np.ones(len(sound)), np.zeros(len(flawed))])
        weights = np.concatenate([sound, flawed]).astype(float)
        if weights.sum() == 0:
            return float("nan")
        coef = fit_logistic(both, labels, weights)
        careful = 1.0 / (1.0 + np.exp(-test_features @ coef))
        return float(1 - (careful * test_success).mean())

    base_error = float(1 - config.careful_rate * test_success.mean())
    metrics: dict[str, float] = {
        "base_test_error": base_error,
        "hard_problem_fraction": float(hard.mean()),
    }
    curves = {
        key: []
        for key in (
            "share_all",
            "share_hard",
            "share_capped",
            "share_process",
            "error_rft",
            "error_capped",
            "error_process",
            "hard_share_of_flawed",
        )
    }
    for n_samples in config.sample_counts:
        counts, lucky = sample_paths(n_samples, difficulty, config, rng)
        sound = (counts > 0).sum(1)  # RFT keeps each distinct derivation once
        capped_sound, capped_lucky = cap_by_frequency(counts, lucky, config.cap, rng)
        # Process check: each flawed path is rejected with probability process_recall.
        process_lucky = rng.binomial(lucky, 1 - config.process_recall)

        def share(s, f, mask=slice(None)):
            denominator = (s[mask] + f[mask]).sum()
            return float(f[mask].sum() / denominator) if denominator else 0.0

        values = {
            "share_all": share(sound, lucky),
            "share_hard": share(sound, lucky, hard),
            "share_capped": share(capped_sound, capped_lucky),
            "share_process": share(sound, process_lucky),
            "error_rft": student_error(sound, lucky),
            "error_capped": student_error(capped_sound, capped_lucky),
            "error_process": student_error(sound, process_lucky),
            "hard_share_of_flawed": float(lucky[hard].sum() / max(lucky.sum(), 1)),
        }
        for key, value in values.items():
            curves[key].append(value)
        metrics |= {
            f"flawed_share_N{n_samples}": values["share_all"],
            f"flawed_share_hard_N{n_samples}": values["share_hard"],
            f"flawed_share_capped_N{n_samples}": values["share_capped"],
            f"flawed_share_process_N{n_samples}": values["share_process"],
            f"test_error_rft_N{n_samples}": values["error_rft"],
            f"test_error_capped_N{n_samples}": values["error_capped"],
            f"test_error_process_N{n_samples}": values["error_process"],
            f"hard_share_of_flawed_N{n_samples}": values["hard_share_of_flawed"],
            f"kept_sound_N{n_samples}": float(sound.sum()),
            f"kept_flawed_N{n_samples}": float(lucky.sum()),
        }
    series = {"sample_counts": list(config.sample_counts), "base_error": base_error, **curves}
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Flawed share against N; student test error against N per pipeline."""
    series = result.series
    counts = series["sample_counts"]
    fig, (left, right) = new_figure(1, 2, height_px=520)
    left.plot(
        counts,
        series["share_all"],
        color=PALETTE[1],
        lw=2.4,
        marker="o",
        label="answer check (RFT), all problems",
    )
    left.plot(
        counts,
        series["share_hard"],
        color=PALETTE[1],
        lw=1.6,
        ls="--",
        marker="o",
        label="answer check, hard problems only",
    )
    left.plot(
        counts,
        series["share_capped"],
        color=PALETTE[3],
        lw=2.0,
        marker="s",
        label="answer check + cap per problem",
    )
    left.plot(
        counts, series["share_process"], color=PALETTE[2], lw=2.0, marker="^", label="process check"
    )
    left.set_xscale("log", base=2)
    left.set_xticks(counts, [str(count) for count in counts])
    left.set_ylim(0, 1)
    style_axes(
        left,
        "Flawed reasoning in the fine-tuning set",
        "samples per problem N (log)",
        "share of kept paths that are flawed",
    )

    right.plot(
        counts,
        series["error_rft"],
        color=PALETTE[1],
        lw=2.4,
        marker="o",
        label="answer check (RFT)",
    )
    right.plot(
        counts,
        series["error_capped"],
        color=PALETTE[3],
        lw=2.0,
        marker="s",
        label="answer check + cap",
    )
    right.plot(
        counts, series["error_process"], color=PALETTE[2], lw=2.0, marker="^", label="process check"
    )
    right.axhline(series["base_error"], color="black", lw=1.2, ls=":", label="base model")
    right.set_xscale("log", base=2)
    right.set_xticks(counts, [str(count) for count in counts])
    style_axes(
        right,
        "Student's test error (free-form answers)",
        "samples per problem N (log)",
        "test error (1 - accuracy)",
    )
    return figure_png(fig, suptitle="Rejection-sampling fine-tuning with an answer-only check")
