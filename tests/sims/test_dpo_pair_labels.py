"""dpo_pair_labels: verifier pairs raise accuracy; a length-biased judge raises length instead."""

from __future__ import annotations

import pytest

from sims import dpo_pair_labels as sim
from sims.common import png_size

SMALL = sim.Config(train_prompts=128, test_prompts=128, seeds=4, rounds=4)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_verifier_labels_improve_accuracy_not_length(result):
    m = result.metrics
    assert m["verifier_accuracy_gain"] > 0.2
    assert abs(m["verifier_length_gain"]) < 0.4
    assert m["initial_accuracy"] + m["verifier_accuracy_gain"] <= m["best_accuracy"] + 1e-6


def test_self_judge_labels_raise_length_not_accuracy(result):
    m = result.metrics
    assert m["self_judge_length_gain"] > 0.5
    assert m["self_judge_accuracy_gain"] < 0.1
    assert m["self_judge_accuracy_gain"] < m["verifier_accuracy_gain"] / 3


def test_pairs_with_no_correctness_difference_carry_no_signal(result):
    m = result.metrics
    assert m["ties_only_accuracy_gain"] < m["verifier_accuracy_gain"] / 2
    # as the policy improves, fewer of its own pairs have exactly one right answer
    assert m["informative_share_last_round"] < m["informative_share_first_round"]


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
