"""rft_false_positives: lucky guesses take over the RFT set as N grows; the student gets worse."""

import pytest

from sims import rft_false_positives as sim
from sims.common import png_size

SMALL = {"train_problems": 300, "test_problems": 1000, "sample_counts": (1, 4, 16, 64)}


@pytest.fixture(scope="module", params=[0, 1], ids=lambda seed: f"seed{seed}")
def result(request):
    return sim.run(sim.Config(seed=request.param, **SMALL))


def test_flawed_share_grows_with_n_and_dominates(result):
    m = result.metrics
    assert m["flawed_share_N64"] > m["flawed_share_N1"] + 0.3
    assert m["flawed_share_N64"] > 0.6  # they dominate the fine-tuning set
    assert m["kept_flawed_N64"] > 2 * m["kept_sound_N64"]
    assert m["flawed_share_hard_N64"] > m["flawed_share_N64"]  # hardest problems worst


def test_flawed_samples_come_mostly_from_hard_problems(result):
    m = result.metrics  # hard problems give far more than their share of the flawed samples
    assert m["hard_share_of_flawed_N64"] > 1.3 * m["hard_problem_fraction"]


def test_student_gets_worse_with_n_under_answer_only_check(result):
    m = result.metrics
    assert m["test_error_rft_N64"] > m["test_error_rft_N1"] + 0.1
    assert m["test_error_rft_N64"] > m["base_test_error"]


def test_fixes_keep_the_student_good(result):
    m = result.metrics
    assert m["test_error_process_N64"] < m["test_error_rft_N64"] - 0.2
    assert m["test_error_capped_N64"] < m["test_error_rft_N64"] - 0.1
    assert m["flawed_share_process_N64"] < 0.3
    assert m["flawed_share_capped_N64"] < m["flawed_share_N64"] - 0.2


def test_cap_prefers_recurring_paths():
    import numpy as np

    rng = np.random.default_rng(0)
    counts = np.array([[5, 3, 0], [1, 0, 0]])  # problem 0: two recurring derivations
    lucky = np.array([10, 0])
    sound, flawed = sim.cap_by_frequency(counts, lucky, cap=2, rng=rng)
    assert sound.tolist() == [2, 1] and flawed.tolist() == [0, 0]


def test_deterministic():
    tiny = sim.Config(train_problems=50, test_problems=100, sample_counts=(1, 8))
    assert sim.run(tiny).metrics == sim.run(tiny).metrics


def test_plot_is_a_wide_png():
    result = sim.run(sim.Config(train_problems=50, test_problems=100, sample_counts=(1, 8)))
    width, _ = png_size(sim.plot(result))
    assert 950 <= width <= 1050
