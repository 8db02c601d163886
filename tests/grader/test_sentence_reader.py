"""The sentence reader: its fit finds the one sentence that states a point, it saves and loads
exactly, and the training folds never let a row be read by a reader fitted on its author."""

from __future__ import annotations

import numpy as np
import pytest

from grader.calibration.reader_fit import Example, fit_part, save
from grader.offline.reader import READER_PATH, SentenceReader


def _unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.normal(size=(n, 384))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _answers(rng: np.random.Generator, points: np.ndarray, count: int) -> list[Example]:
    """Answers of filler sentences; half also state point 0 in one sentence (its phrasing plus
    noise), and every one states point 1, a neighbour of point 0 (a long answer that covers the
    rest of the key)."""
    examples = []
    for i in range(count):
        filler = _unit_rows(rng, 6)
        near_1 = points[1] + 0.3 * _unit_rows(rng, 1)[0]
        units = [*filler, near_1 / np.linalg.norm(near_1)]
        states = i % 2 == 0
        if states:
            near_0 = points[0] + 0.3 * _unit_rows(rng, 1)[0]
            units.append(near_0 / np.linalg.norm(near_0))
        examples.append(Example("card/p0", points[:1], np.asarray(units), float(states)))
    return examples


def _neighbours(rng: np.random.Generator) -> np.ndarray:
    """Two point phrasings at cosine about 0.8: a plain similarity confuses them."""
    base = _unit_rows(rng, 1)[0]
    points = np.stack([base + 0.5 * _unit_rows(rng, 1)[0], base + 0.5 * _unit_rows(rng, 1)[0]])
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def test_the_fit_tells_the_sentence_that_states_a_point_from_its_neighbour():
    rng = np.random.default_rng(0)
    points = _neighbours(rng)
    part = fit_part(_answers(rng, points, 120), epochs=15)
    fresh = _answers(rng, points, 40)
    read = [part.probabilities("card", ["p0"], points[:1], np.zeros(1, dtype=int), e.units)[0] for e in fresh]
    stated = [p for p, e in zip(read, fresh, strict=True) if e.target == 1.0]
    missing = [p for p, e in zip(read, fresh, strict=True) if e.target == 0.0]
    assert min(stated) > 0.5 > max(missing), (min(stated), max(missing))


def test_an_answer_with_no_sentences_reads_as_no_similarity():
    rng = np.random.default_rng(1)
    points = _neighbours(rng)
    part = fit_part(_answers(rng, points, 20), epochs=1)
    empty = part.probabilities("card", ["p0"], points[:1], np.zeros(1, dtype=int), np.zeros((0, 384)))
    assert empty[0] == pytest.approx(1 / (1 + np.exp(-(part.bias + part.target_bias["card/p0"]))))


def test_a_point_the_reader_never_saw_gets_no_offset_of_its_own():
    rng = np.random.default_rng(2)
    points = _neighbours(rng)
    part = fit_part(_answers(rng, points, 20), epochs=2)
    units = _unit_rows(rng, 3)
    owner = np.zeros(1, dtype=int)
    known = part.probabilities("card", ["p0"], points[:1], owner, units)[0]
    unknown = part.probabilities("other-card", ["p0"], points[:1], owner, units)[0]
    logit = lambda p: np.log(p / (1 - p))
    assert logit(known) - logit(unknown) == pytest.approx(part.target_bias["card/p0"])


def test_a_saved_reader_loads_to_the_same_reading(tmp_path):
    rng = np.random.default_rng(3)
    points = _neighbours(rng)
    part = fit_part(_answers(rng, points, 20), epochs=2)
    reader = SentenceReader(part, part)
    path = tmp_path / "reader.npz"
    save(reader, path)
    loaded = SentenceReader.load(path)
    assert loaded is not None
    units = _unit_rows(rng, 4)
    owner = np.zeros(1, dtype=int)
    for before, after in ((reader.points, loaded.points), (reader.misconceptions, loaded.misconceptions)):
        assert after.target_bias == before.target_bias
        np.testing.assert_allclose(
            after.probabilities("card", ["p0"], points[:1], owner, units),
            before.probabilities("card", ["p0"], points[:1], owner, units),
            rtol=1e-6,
        )
    assert SentenceReader.load(tmp_path / "missing.npz") is None


def test_the_shipped_reader_knows_every_point_and_misconception_of_the_deck():
    from cards.deck import default_deck

    reader = SentenceReader.load(READER_PATH)
    assert reader is not None, "grader/models/sentence_reader.npz is not installed"
    for card in default_deck():
        for point in card.key_points:
            assert f"{card.id}/{point.id}" in reader.points.target_bias
        for misconception in card.misconceptions:
            assert f"{card.id}/{misconception.id}" in reader.misconceptions.target_bias


def test_every_author_is_read_by_a_reader_fitted_without_them():
    from grader.calibration.train import READER_FOLDS, reader_folds, training_rows

    rows = training_rows()
    fold_of = reader_folds(row.get("author") or row["id"] for row in rows)
    writers = {row["author"] for row in rows if row["kind"] != "non-answer"}
    assert len(writers) >= READER_FOLDS
    sizes = np.bincount([fold_of[writer] for writer in writers], minlength=READER_FOLDS)
    # One author, one fold; every fold leaves out as many writers as the next, give or take one.
    assert sizes.max() - sizes.min() <= 1, sizes


def test_a_sentence_of_the_other_polarity_does_not_state_the_point():
    """Only (sentence, phrasing) pairs negated on the same side are read: the sentence that
    matches the point but denies it reads as if nothing were said."""
    rng = np.random.default_rng(4)
    points = _neighbours(rng)
    part = fit_part(_answers(rng, points, 120), epochs=15)
    stating = next(e for e in _answers(rng, points, 2) if e.target == 1.0)
    owner = np.zeros(1, dtype=int)
    same = np.ones((len(stating.units), 1), dtype=bool)
    read = part.probabilities("card", ["p0"], points[:1], owner, stating.units, same)[0]
    same[-1] = False  # the sentence that states point 0, now denying it
    denied = part.probabilities("card", ["p0"], points[:1], owner, stating.units, same)[0]
    assert read > 0.5 > denied
    nothing = part.probabilities("card", ["p0"], points[:1], owner, stating.units, np.zeros_like(same))[0]
    empty = part.probabilities("card", ["p0"], points[:1], owner, np.zeros((0, 384)))[0]
    assert nothing == pytest.approx(empty)


def test_a_model_that_reads_the_reader_refuses_to_grade_without_it(monkeypatch):
    """A broken install says so at once instead of grading with the reader's columns empty."""
    from grader.offline import OfflineJudge, judge
    from grader.offline.judge import PointModel

    model = PointModel.load()
    assert model is not None and model.uses_reader
    monkeypatch.setattr(judge, "shipped_reader", lambda: None)
    with pytest.raises(FileNotFoundError, match="sentence reader"):
        OfflineJudge(model=model).reader()


def test_a_fitting_rows_reader_columns_come_from_a_reader_that_never_saw_its_writer(monkeypatch):
    """``add_reader_features`` fills each row from the reader fitted on the other folds' writers:
    refitting on exactly those rows gives the same columns, and the reader fitted on every
    row (which saw the writer) does not."""
    from cards.deck import default_deck
    from grader.calibration import train
    from grader.offline import OfflineJudge
    from grader.offline.evidence import (
        ALL_MISCONCEPTION_FEATURES,
        ALL_POINT_FEATURES,
        ReaderInput,
        reader_features,
    )

    monkeypatch.setattr(train, "READER_EPOCHS", (2, 2))
    card = default_deck().get("rl-01")
    index = OfflineJudge(model=None).index(card)
    rng = np.random.default_rng(5)
    labels = ("present", "absent", "partial", "contradicted")
    rows = []
    for i in range(2 * train.READER_FOLDS):
        units = _unit_rows(rng, 3)
        if i % 2:  # every other answer says the first point in one sentence
            units[0] = index.points.vectors[index.points.target == 0][0]
        rows.append(
            train.Row(
                id=f"row-{i}",
                card_id=card.id,
                answer="",
                label=0,
                kind="terse",
                point_x=np.zeros((len(card.key_points), len(ALL_POINT_FEATURES))),
                point_y=np.zeros(len(card.key_points), dtype=int),
                misc_x=np.zeros((len(card.misconceptions), len(ALL_MISCONCEPTION_FEATURES))),
                misc_y=rng.integers(0, 2, len(card.misconceptions)),
                author=f"writer-{i % train.READER_FOLDS}",
                read=ReaderInput(
                    units,
                    np.ones((3, len(index.points.texts)), dtype=bool),
                    np.ones((3, len(index.misconceptions.texts)), dtype=bool),
                ),
                point_labels=tuple(
                    "present" if (i % 2 and k == 0) else labels[(i + k) % 4] for k in range(len(card.key_points))
                ),
            )
        )
    train.add_reader_features(rows)
    fold_of = train.reader_folds(r.author for r in rows)
    everyone = train.fit_reader(rows)
    for row in rows[: train.READER_FOLDS]:
        without = train.fit_reader([r for r in rows if fold_of[r.author] != fold_of[row.author]])
        expected, _ = reader_features(card, index, row.read, without)
        np.testing.assert_allclose(row.point_x[:, -2:], expected, rtol=1e-6)
        leaked, _ = reader_features(card, index, row.read, everyone)
        assert not np.allclose(row.point_x[:, -2:], leaked)


def test_an_ensemble_reads_the_mean_of_its_members_and_loads_as_saved(tmp_path):
    from grader.offline.reader import PartEnsemble

    rng = np.random.default_rng(6)
    points = _neighbours(rng)
    examples = _answers(rng, points, 20)
    members = tuple(fit_part(examples, epochs=2, seed=seed) for seed in (0, 1))
    ensemble = PartEnsemble(members)
    units = _unit_rows(rng, 4)
    owner = np.zeros(1, dtype=int)
    each = [m.probabilities("card", ["p0"], points[:1], owner, units) for m in members]
    assert not np.allclose(each[0], each[1])  # two seeds, two readers
    read = ensemble.probabilities("card", ["p0"], points[:1], owner, units)
    np.testing.assert_allclose(read, (each[0] + each[1]) / 2)
    path = tmp_path / "reader.npz"
    save(SentenceReader(ensemble, members[0]), path)
    loaded = SentenceReader.load(path)
    assert loaded is not None
    assert isinstance(loaded.points, PartEnsemble) and len(loaded.points.members) == 2
    assert not isinstance(loaded.misconceptions, PartEnsemble)
    np.testing.assert_allclose(loaded.points.probabilities("card", ["p0"], points[:1], owner, units), read, rtol=1e-6)


def test_the_fits_read_the_core_point_a_missing_core_answer_leaves_out_more_often():
    """The sentence reader's fit repeats that (answer, point) example and the point
    classifier's fit weighs it (``point_weights``, in the fit's order); nothing else is."""
    from cards.deck import default_deck
    from grader.calibration import train
    from grader.offline import OfflineJudge
    from grader.offline.evidence import ALL_MISCONCEPTION_FEATURES, ALL_POINT_FEATURES, ReaderInput

    card = default_deck().get("rl-01")
    index = OfflineJudge(model=None).index(card)
    core = next(k for k, p in enumerate(card.key_points) if p.core)
    other = next(k for k, p in enumerate(card.key_points) if not p.core)
    labels = tuple("absent" if k in (core, other) else "present" for k in range(len(card.key_points)))

    def row(kind: str) -> train.Row:
        return train.Row(
            id=kind, card_id=card.id, answer="", label=2, kind=kind,
            point_x=np.zeros((len(card.key_points), len(ALL_POINT_FEATURES))),
            point_y=np.zeros(len(card.key_points), dtype=int),
            misc_x=np.zeros((len(card.misconceptions), len(ALL_MISCONCEPTION_FEATURES))),
            misc_y=np.zeros(len(card.misconceptions), dtype=int),
            read=ReaderInput(
                _unit_rows(np.random.default_rng(7), 2),
                np.ones((2, len(index.points.texts)), dtype=bool),
                np.ones((2, len(index.misconceptions.texts)), dtype=bool),
            ),
            point_labels=labels,
        )

    def times(kind: str, k: int) -> int:
        points, _ = train.reader_examples([row(kind)])
        return sum(e.key == f"{card.id}/{card.key_points[k].id}" for e in points)

    assert times("missing-core", core) == train.HARD_ABSENT_REPEAT > 1
    assert times("missing-core", other) == 1  # a non-core point left out is not the hard case
    assert times("terse", core) == 1  # nor is a core point another style leaves out

    n = len(card.key_points)
    weights = train.point_weights([row("terse"), row("missing-core")])
    assert weights.shape == (2 * n,)
    np.testing.assert_array_equal(weights[:n], 1.0)
    expected = [train.HARD_ABSENT_WEIGHT if k == core else 1.0 for k in range(n)]
    assert train.HARD_ABSENT_WEIGHT > 1
    np.testing.assert_array_equal(weights[n:], expected)

