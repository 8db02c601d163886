"""Kappa and Spearman now come from scikit-learn and scipy: the figures must not change.

The expected values were computed with the hand-written versions these replaced (issue 40)."""

from __future__ import annotations

import math

import pytest

from grader.calibration.eval import quadratic_weighted_kappa, spearman


def test_the_library_figures_equal_the_hand_written_ones():
    truth = [0, 1, 2, 3, 4, 5, 3, 3, 2, 1]
    guess = [0, 2, 2, 3, 5, 4, 3, 2, 2, 0]
    assert quadratic_weighted_kappa(truth, guess) == pytest.approx(0.8826291079812206, abs=1e-12)
    assert spearman(truth, guess) == pytest.approx(0.9104247736001707, abs=1e-12)
    # 338 fixed pairs with ties, independent of the labelled files (whose grades move when a
    # card's key does); the expected values are the hand-written functions' (commit 3c898ae).
    labels = [(i * 5 + 3) % 6 for i in range(338)]
    scrambled = [min(5, (g * 7 + (i * 13) % 11) % 6) for i, g in enumerate(labels)]
    assert quadratic_weighted_kappa(labels, scrambled) == pytest.approx(-0.015744032503808736, abs=1e-12)
    assert spearman(labels, scrambled) == pytest.approx(-0.01564383659288882, abs=1e-12)


def test_the_edge_cases_keep_their_values():
    assert quadratic_weighted_kappa([2, 2, 2], [1, 2, 3]) == 0.0
    assert quadratic_weighted_kappa([0, 5], [5, 0]) == pytest.approx(-1.0)
    assert spearman([0, 5], [5, 0]) == pytest.approx(-1.0)
    assert math.isnan(quadratic_weighted_kappa([3, 3], [3, 3]))
    assert math.isnan(quadratic_weighted_kappa([], []))
    assert math.isnan(spearman([1], [1])) and math.isnan(spearman([1, 1, 1], [0, 1, 2]))
