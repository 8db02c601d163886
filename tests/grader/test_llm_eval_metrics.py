"""Kappa and Spearman now come from scikit-learn and scipy: the figures must not change.

The expected values were computed with the hand-written versions these replaced (issue 40)."""

from __future__ import annotations

import math

import pytest

from grader.calibration.eval import HELDOUT_SET, load_set, quadratic_weighted_kappa, spearman


def test_the_library_figures_equal_the_hand_written_ones():
    truth = [0, 1, 2, 3, 4, 5, 3, 3, 2, 1]
    guess = [0, 2, 2, 3, 5, 4, 3, 2, 2, 0]
    assert quadratic_weighted_kappa(truth, guess) == pytest.approx(0.8826291079812206, abs=1e-12)
    assert spearman(truth, guess) == pytest.approx(0.9104247736001707, abs=1e-12)
    rows = load_set(HELDOUT_SET)
    labels = [r.grade for r in rows]
    scrambled = [min(5, (g * 7 + len(r.answer)) % 6) for g, r in zip(labels, rows, strict=True)]
    assert quadratic_weighted_kappa(labels, scrambled) == pytest.approx(0.027067251523778202, abs=1e-12)
    assert spearman(labels, scrambled) == pytest.approx(0.01881684686938, abs=1e-12)


def test_the_edge_cases_keep_their_values():
    assert quadratic_weighted_kappa([2, 2, 2], [1, 2, 3]) == 0.0
    assert quadratic_weighted_kappa([0, 5], [5, 0]) == pytest.approx(-1.0)
    assert spearman([0, 5], [5, 0]) == pytest.approx(-1.0)
    assert math.isnan(quadratic_weighted_kappa([3, 3], [3, 3]))
    assert math.isnan(quadratic_weighted_kappa([], []))
    assert math.isnan(spearman([1], [1])) and math.isnan(spearman([1, 1, 1], [0, 1, 2]))
