"""rft_false_positives: RFT helps at small N; at large N lucky guesses take over the deduplicated
set and the student falls below the base model; a process check keeps the gain."""

import pytest

from sims import rft_false_positives as sim
from sims.common import PHONE_WIDTH_PX, png_size

DEFAULT = sim.Config()


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics."""
    base = m["base_test_error"]
    # at small N the fine-tuning set is more careful than the base model: RFT helps
    assert m["error_rft_N1"] < base - 0.08
    # at large N the student learns to guess and falls below the base model
    assert m["error_rft_N256"] > base + 0.03
    assert m["error_rft_N256"] > m["error_rft_N1"] + 0.15
    # the flawed share grows with N, most on hard problems ...
    assert m["share_rft_N256"] > m["share_rft_N1"] + 0.3
    assert m["share_hard_N256"] > m["share_rft_N256"]
    assert m["hard_share_of_flawed_N256"] > 1.3 * m["hard_problem_fraction"]
    # ... which contribute little at N = 1 and all of them by N ~ 1/q
    assert m["hard_problems_contributing_N1"] < 0.25
    assert m["hard_problems_contributing_N256"] > 0.95
    # without dedup the share stays flat (easy copies fill the set instead), and so does the
    # student's error: the crash needs dedup (seeds 0-19: spread <= 0.028, >= 0.105 under base)
    assert abs(m["share_raw_N256"] - m["share_raw_N1"]) < 0.05
    raw_errors = [m[f"error_raw_N{n}"] for n in DEFAULT.sample_counts]
    assert max(raw_errors) - min(raw_errors) < 0.05
    assert max(raw_errors) < base - 0.08
    # a process check keeps the gain at every N, but it is not perfect
    assert m["error_process_N256"] < base - 0.08
    assert m["error_process_N256"] < m["error_rft_N256"] - 0.15
    assert 0 < m["share_process_N256"] < 0.1


def test_claims_hold_at_seed_0():
    check_claims(sim.run(DEFAULT).metrics)


def test_claims_hold_at_seed_1():
    check_claims(sim.run(sim.Config(seed=1)).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_free_form_answers_remove_the_effect():
    """With many answer choices a lucky guess is rare: more samples no longer hurt."""
    m = sim.run(sim.Config(answer_choices=10_000)).metrics
    assert m["error_rft_N256"] < m["base_test_error"] - 0.08
    assert m["share_rft_N256"] < 0.02


def test_deterministic():
    tiny = sim.Config(train_problems=50, test_problems=100, sample_counts=(1, 8))
    assert sim.run(tiny).metrics == sim.run(tiny).metrics


def test_plot_is_phone_width():
    result = sim.run(sim.Config(train_problems=50, test_problems=100, sample_counts=(1, 8)))
    assert png_size(sim.plot(result))[0] == PHONE_WIDTH_PX
