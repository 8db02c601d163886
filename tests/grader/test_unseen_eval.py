"""The unseen-card measurement (``python -m grader.calibration.offline_eval unseen``): each card is
graded by fits that never saw it, as a user's card is, and a re-run reads its cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cards.deck import default_deck
from grader.calibration import train, unseen
from grader.calibration.offline_eval import rows as set_rows
from grader.offline import OfflineJudge
from grader.offline.evidence import ALL_MISCONCEPTION_FEATURES, ALL_POINT_FEATURES, ReaderInput

CARDS = ("rl-01", "rl-02", "rl-08")


def synthetic_rows() -> list[train.Row]:
    """Four fitting rows a card with random features, every point class and both misconception
    labels among them, and units the sentence reader can fit on."""
    deck = default_deck()
    rng = np.random.default_rng(3)
    labels = ("absent", "partial", "present", "contradicted")
    rows = []
    for card_id in CARDS:
        card = deck.get(card_id)
        index = OfflineJudge(model=None).index(card)
        n_points, n_misc = len(card.key_points), len(card.misconceptions)
        for i in range(4):
            point_labels = tuple(labels[(i + k) % 4] for k in range(n_points))
            units = rng.normal(size=(2, 384)).astype(np.float32)
            rows.append(
                train.Row(
                    id=f"{card_id}/{i}",
                    card_id=card_id,
                    answer="",
                    label=i,
                    kind="terse",
                    point_x=rng.normal(size=(n_points, len(ALL_POINT_FEATURES))),
                    point_y=np.asarray([train.POINT_CLASS[label] for label in point_labels]),
                    misc_x=rng.normal(size=(n_misc, len(ALL_MISCONCEPTION_FEATURES))),
                    misc_y=np.asarray([(i + m) % 2 for m in range(n_misc)]),
                    author=f"writer-{i}",
                    read=ReaderInput(
                        units / np.linalg.norm(units, axis=1, keepdims=True),
                        np.ones((2, len(index.points.texts)), dtype=bool),
                        np.ones((2, len(index.misconceptions.texts)), dtype=bool),
                    ),
                    point_labels=point_labels,
                )
            )
    return rows


@pytest.mark.slow  # 9 s: nine small fits and a sentence-reader epoch per fold
def test_each_card_is_graded_by_fits_that_never_saw_it_and_a_rerun_reads_the_cache(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(train, "READER_EPOCHS", (1, 1))
    monkeypatch.setattr(train, "POINT_READER_SEEDS", (0,))
    held = tmp_path / "held.jsonl"
    answers = [r for r in set_rows("heldout.jsonl") if r["card_id"] in CARDS]
    chosen = [r for card_id in CARDS for r in [a for a in answers if a["card_id"] == card_id][:2]]
    held.write_text("".join(json.dumps(r) + "\n" for r in chosen), encoding="utf-8")

    events: list[tuple[str, frozenset[str]]] = []
    fit, fit_reader, grade_rows = train.fit, train.fit_reader, unseen.grade_rows

    def spy_fit(rows, *args, **kwargs):
        events.append(("fit", frozenset(r.card_id for r in rows)))
        return fit(rows, *args, **kwargs)

    def spy_reader(rows):
        events.append(("fit", frozenset(r.card_id for r in rows)))
        reader = fit_reader(rows)
        events.append(
            ("reader keys", frozenset(k.split("/")[0] for k in reader.points.target_bias))
        )
        return reader

    def spy_grade(judge, items, label):
        events.append(("grade", frozenset(r["card_id"] for _, r in items)))
        return grade_rows(judge, items, label)

    monkeypatch.setattr(train, "fit", spy_fit)
    monkeypatch.setattr(train, "fit_reader", spy_reader)
    monkeypatch.setattr(unseen, "grade_rows", spy_grade)
    settings = {
        "folds": 3,
        "inner_folds": None,
        "sets": (str(held),),
        "cards": CARDS,
        "rows": synthetic_rows(),
        "learner": ("logistic", 1.0),
        "cache": tmp_path / "cache",
        "shipped": False,
    }
    first = unseen.unseen(**settings)

    graded_cards = [cards for kind, cards in events if kind == "grade"]
    assert sorted(c for cards in graded_cards for c in cards) == sorted(CARDS)
    fold_start, per_fold = 0, []
    for number, (kind, cards) in enumerate(events):
        if kind == "grade":
            fitted = [seen for _, seen in events[fold_start:number]]
            assert all(not (seen & cards) for seen in fitted)
            per_fold.append(len(fitted))
            fold_start = number + 1
    # A fold: a reader without each of the two other cards (a fit and its reader keys each) to
    # read the plain model's rows as unseen, two cut-point fits, the model, and the fold's
    # reader with its keys. Each of those readers (fitted on one card's rows) serves two folds,
    # so the later folds read them from the cache.
    assert per_fold == [9, 7, 5]
    figures = first["unseen"][str(held)]["all"]
    assert figures["answers"] == 6
    assert set(figures) == {"answers", "qwk", "agree", "unsure", "sure_agree"}

    events.clear()
    assert unseen.unseen(**settings) == first
    assert events == []


def test_a_card_read_without_its_labelled_answers_is_unsure_more_often(offline_judge, rl08):
    """The same judge (shipped model and reader) on rl-08's held-out answers: with the card's
    exemplars it doubts 4 of 13, with only the non-answers a user's card gets 6."""
    from grader.offline.judge import PointModel
    from grader.offline.reader import shipped_reader

    as_user_card = unseen.UnseenCardJudge(PointModel.load(), shipped_reader())
    answers = [r["answer"] for r in set_rows("heldout.jsonl") if r["card_id"] == rl08.id]
    with_exemplars = sum(bool(offline_judge.judge(rl08, a).unsure_points) for a in answers)
    without = sum(bool(as_user_card.judge(rl08, a).unsure_points) for a in answers)
    assert len(answers) == 13 and without > with_exemplars


def test_the_fitting_rows_cache_is_written_into_a_folder_that_does_not_exist_yet(
    monkeypatch, tmp_path
):
    """A fresh machine has no cache folder: the rows, minutes of work, must still be kept."""
    from grader.calibration import train

    monkeypatch.setattr(train, "training_rows", lambda *_: [])
    monkeypatch.setattr(train, "read_rows", lambda data: ["row"])
    monkeypatch.setattr(train, "add_reader_features", lambda rows: None)
    cache = tmp_path / "new" / "folder" / "rows.pkl"
    assert train.fitting_rows(cache=cache) == ["row"]
    assert cache.exists() and train.fitting_rows(cache=cache) == ["row"]


def test_a_card_without_labelled_answers_is_read_by_the_plain_model(
    offline_judge, rl08, small_deck
):
    """A user's card (rl-08's text under another id: no labelled answer is its own) is read by
    the model fitted without the exemplar votes, which there would see only non-answers; a
    built-in card by the main model."""
    user_card = small_deck.get("rl-91")
    assert offline_judge.model.uses_exemplars and not offline_judge.plain_model.uses_exemplars
    assert offline_judge.model_for(rl08) is offline_judge.model
    assert offline_judge.model_for(user_card) is offline_judge.plain_model
    main_only = OfflineJudge(plain_model=None)
    assert main_only.model_for(user_card) is main_only.model


def test_the_plain_models_rows_are_read_by_readers_that_never_saw_their_card(monkeypatch):
    """``train --without-exemplars`` fits on rows read as a user's card is read: each row's
    reader columns, and only those, come from a reader fitted without the row's card."""
    from grader.offline.evidence import READER_MISC_FEATURES, READER_POINT_FEATURES

    monkeypatch.setattr(train, "READER_EPOCHS", (1, 1))
    monkeypatch.setattr(train, "POINT_READER_SEEDS", (0,))
    rows = synthetic_rows()
    reader_knew: dict[str, set[str]] = {}
    fit_reader = train.fit_reader

    def spy_reader(fitted_on):
        reader = fit_reader(fitted_on)
        fitted_ids = {r.id for r in fitted_on}
        for row in rows:
            if row.id not in fitted_ids:
                reader_knew[row.card_id] = {k.split("/")[0] for k in reader.points.target_bias}
        return reader

    monkeypatch.setattr(train, "fit_reader", spy_reader)
    read = train.read_as_unseen(rows, len(CARDS))
    assert set(reader_knew) == set(CARDS)
    assert all(card not in knew and knew for card, knew in reader_knew.items())
    n_point, n_misc = len(READER_POINT_FEATURES), len(READER_MISC_FEATURES)
    assert [r.id for r in read] == [r.id for r in rows]
    for before, after in zip(rows, read, strict=True):
        np.testing.assert_array_equal(before.point_x[:, :-n_point], after.point_x[:, :-n_point])
        np.testing.assert_array_equal(before.misc_x[:, :-n_misc], after.misc_x[:, :-n_misc])
        assert not np.array_equal(before.point_x[:, -n_point:], after.point_x[:, -n_point:])
