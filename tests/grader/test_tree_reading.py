"""The learnt reading as gradient-boosted trees: exported to plain numbers by the training
script and read back with numpy exactly as scikit-learn reads them."""

from __future__ import annotations

import numpy as np
import pytest

from cards.deck import default_deck
from grader.base import PointVerdict
from grader.calibration.train import export_trees
from grader.offline.judge import PointModel, TreeEnsemble

sklearn_ensemble = pytest.importorskip("sklearn.ensemble", reason="scikit-learn fits the trees")


def _fitted(y_of, classes: int):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(600, 5))
    y = y_of(x)
    assert len(set(y)) == classes
    model = sklearn_ensemble.HistGradientBoostingClassifier(
        max_iter=40, max_leaf_nodes=9, random_state=0
    ).fit(x, y)
    return model, rng.normal(size=(200, 5))


def _probabilities(logits: np.ndarray) -> np.ndarray:
    if logits.shape[1] == 1:
        p = 1 / (1 + np.exp(-logits[:, 0]))
        return np.stack([1 - p, p], axis=1)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("classes", [2, 3])
def test_exported_trees_give_scikit_learns_probabilities(classes):
    if classes == 2:
        model, x = _fitted(lambda x: (x[:, 0] * x[:, 1] > 0).astype(int), 2)
    else:
        model, x = _fitted(lambda x: (x[:, 0] > 0).astype(int) + (x[:, 2] > 0.8), 3)
    ensemble = TreeEnsemble(export_trees(model))
    assert np.allclose(_probabilities(ensemble.logits(x)), model.predict_proba(x), atol=1e-9)


def test_a_missing_feature_follows_the_trees_missing_branch():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(600, 3))
    x[rng.random(600) < 0.2, 1] = np.nan  # seen missing in training: each split learns a side
    y = ((np.nan_to_num(x[:, 1], nan=2.0) + x[:, 0]) > 0.5).astype(int)
    model = sklearn_ensemble.HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(x, y)
    probe = rng.normal(size=(100, 3))
    probe[::3, 1] = np.nan
    ensemble = TreeEnsemble(export_trees(model))
    assert np.allclose(_probabilities(ensemble.logits(probe)), model.predict_proba(probe), atol=1e-9)


def test_a_tree_reading_decides_verdicts_by_its_cut_points():
    """PointModel reads a tree part like a logistic one: P(present) against the first cut,
    P(present or partial) against the second."""
    card = default_deck().get("rl-08")
    n_features = 3
    rng = np.random.default_rng(11)
    x = rng.normal(size=(900, n_features))
    y = np.where(x[:, 0] > 0.7, 2, np.where(x[:, 0] > -0.2, 1, 0))
    points = sklearn_ensemble.HistGradientBoostingClassifier(max_iter=60, random_state=0).fit(x, y)
    misc = sklearn_ensemble.HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(
        x[:, :2], (x[:, 1] > 0).astype(int)
    )
    from grader.offline.evidence import ALL_MISCONCEPTION_FEATURES, ALL_POINT_FEATURES

    model = PointModel(
        {
            "point": export_trees(points),
            "misconception": export_trees(misc),
            "point_features": list(ALL_POINT_FEATURES[:n_features]),
            "misconception_features": list(ALL_MISCONCEPTION_FEATURES[:2]),
            "cuts": [0.5, 0.5, 0.5],
        }
    )
    rows = np.zeros((len(card.key_points), len(ALL_POINT_FEATURES)))
    rows[:, 0] = np.linspace(-2, 2, len(rows))
    verdicts = model.verdicts(rows)
    assert verdicts[0] is PointVerdict.ABSENT and verdicts[-1] is PointVerdict.PRESENT
    p = points.predict_proba(rows[:, :n_features])
    expected = [
        PointVerdict.PRESENT if a >= 0.5 else PointVerdict.PARTIAL if a + b >= 0.5 else PointVerdict.ABSENT
        for a, b in zip(p[:, 2], p[:, 1], strict=True)
    ]
    assert verdicts == expected
    misc_rows = np.zeros((2, len(ALL_MISCONCEPTION_FEATURES)))
    misc_rows[:, 1] = [-2.0, 2.0]
    assert model.asserted(misc_rows) == [False, True]


def test_training_grades_an_injection_no_higher_than_its_twin_as_the_judge_does():
    from grader.calibration.train import Row, as_judged

    def row(id_: str, *, twin: str | None = None, injection: bool = False) -> Row:
        empty = np.zeros((0, 1))
        return Row(id_, "rl-08", "", 0, "x", empty, np.zeros(0), empty, np.zeros(0), twin, injection)

    rows = [row("a"), row("a+", twin="a", injection=True), row("b"), row("b+", twin="b", injection=True), row("c", injection=True)]
    assert as_judged(rows, [0, 1, 3, 1, 1]) == [0, 0, 3, 1, 1]


def test_a_reading_with_a_contradicted_class_reads_it_after_a_credit():
    """A point model fitted with the contradicted class (3) reads a point as contradicted when
    P(contradicted) reaches the fourth cut and P(present) misses the first; a model with three
    cuts never reads a contradiction."""
    card = default_deck().get("rl-08")
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1200, 2))
    y = np.select([x[:, 0] > 0.8, x[:, 0] > 0.0, x[:, 1] > 0.5], [2, 1, 3], default=0)
    points = sklearn_ensemble.HistGradientBoostingClassifier(max_iter=60, random_state=0).fit(x, y)
    misc = sklearn_ensemble.HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(x, (x[:, 1] > 0).astype(int))
    from grader.offline.evidence import ALL_MISCONCEPTION_FEATURES, ALL_POINT_FEATURES

    data = {
        "point": export_trees(points),
        "misconception": export_trees(misc),
        "point_features": list(ALL_POINT_FEATURES[:2]),
        "misconception_features": list(ALL_MISCONCEPTION_FEATURES[:2]),
    }
    rows = np.zeros((len(card.key_points), len(ALL_POINT_FEATURES)))
    rows[:, 0] = [2.0, 0.4, -1.5, -1.5, -1.5, -1.5][: len(rows)]
    rows[:, 1] = [2.0, 2.0, 2.0, -2.0, 2.0, -2.0][: len(rows)]
    four = PointModel({**data, "cuts": [0.5, 0.5, 0.5, 0.5]}).verdicts(rows)
    assert four[:4] == [PointVerdict.PRESENT, PointVerdict.PARTIAL, PointVerdict.CONTRADICTED, PointVerdict.ABSENT]
    three = PointModel({**data, "cuts": [0.5, 0.5, 0.5]}).verdicts(rows)
    assert PointVerdict.CONTRADICTED not in three and three[:2] == four[:2]


def _row(id: str, kind: str, label: int, twin_of: str | None = None):
    from grader.calibration.train import Row

    empty = np.zeros((0, 1))
    return Row(id, "c", "", label, kind, empty, np.zeros(0), empty, np.zeros(0), twin_of=twin_of)


def test_the_training_objective_weighs_every_style_the_same():
    from grader.calibration.train import objective

    # 20 terse answers that pass, 2 that miss a core point and fail, and non-answers that
    # the objective leaves out of the mean style.
    rows = (
        [_row(f"t{i}", "terse", 3) for i in range(20)]
        + [_row(f"m{i}", "missing-core", 2) for i in range(2)]
        + [_row(f"n{i}", "non-answer", 0) for i in range(10)]
    )
    right = [r.label for r in rows]
    one_terse_failed = [1 if r.id == "t0" else r.label for r in rows]
    one_missing_passed = [3 if r.id == "m0" else r.label for r in rows]
    assert objective(rows, right) == pytest.approx(2.0)
    # One error among 20 terse answers costs a twentieth of that style; one among the two
    # missing-core answers costs half of its style, whatever the non-answers.
    terse_cost = objective(rows, right) - objective(rows, one_terse_failed)
    missing_cost = objective(rows, right) - objective(rows, one_missing_passed)
    assert missing_cost > terse_cost > 0
    # A trap passed, or an injected answer above its twin, costs a tenth each.
    rows += [_row("trap", "trap", 0), _row("inj", "injection", 0, twin_of="trap")]
    graded = [r.label for r in rows]
    passed_trap = graded[:-2] + [3, 0]
    above_twin = graded[:-2] + [0, 1]
    base = objective(rows, graded)
    assert objective(rows, passed_trap) < base - 0.1
    assert objective(rows, above_twin) < base - 0.1


def test_the_frontier_keeps_only_the_cuts_no_other_cuts_beat_on_both_counts():
    from grader.calibration.frontier import frontier

    results = [
        ((0.1,), {"partly-wrong": 0.9, "terse": 0.6, "concise": 0.7}),  # worst other 0.6
        ((0.2,), {"partly-wrong": 0.9, "terse": 0.5, "concise": 0.9}),  # same style, worse: out
        ((0.3,), {"partly-wrong": 0.7, "terse": 0.8, "concise": 0.9}),  # kept: 0.8
        ((0.4,), {"partly-wrong": 0.6, "terse": 0.8, "concise": 0.8}),  # no better than 0.3: out
        ((0.5,), {"partly-wrong": 0.5, "terse": 0.95, "concise": 0.9}),  # kept: 0.9
    ]
    kept = frontier(results, "partly-wrong")
    assert [cuts for cuts, _ in kept] == [(0.1,), (0.3,), (0.5,)]
    assert frontier([], "partly-wrong") == []


def test_cut_points_grade_the_rows_as_the_judge_does_at_those_cuts():
    """``graded_at`` reads the held models' probabilities at the cuts through the grade rule:
    a point model certain that every point is present grades 5 at cuts below 1, and 0 at cuts
    no probability reaches."""
    from grader.calibration.train import Row, graded_at, style_agreement

    card = default_deck().get("rl-08")
    n = len(card.key_points)
    certain = (np.ones(n), np.ones(n), np.zeros(n))
    row = Row("a", card.id, "", 5, "expert", np.zeros((n, 1)), np.zeros(n), np.zeros((0, 1)), np.zeros(0))
    read = [(card, certain, np.zeros(len(card.misconceptions)))]
    assert graded_at([row], read, (0.5, 0.5, 0.5, 0.9)) == [5]
    assert graded_at([row], read, (1.1, 1.1, 0.5, 0.9)) == [0]
    assert style_agreement([row], [5]) == {"expert": 1.0}
    assert style_agreement([row], [2]) == {"expert": 0.0}
