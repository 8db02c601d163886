"""The exemplars' votes (no model: vectors are made by hand) and what may be an exemplar."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cards.deck import default_deck
from grader.calibration.eval import HELDOUT_SET, NEGATION_SET
from grader.exemplars import (
    NEIGHBOURS,
    TRAINING_SET,
    VOTE_FEATURES,
    LabelledAnswer,
    build_exemplars,
    labelled_answers,
    votes,
)


def _unit(*values: float) -> np.ndarray:
    vector = np.zeros(4, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


def _answer(id: str, author: str, points: list[float], misc: list[float], words: int = 5) -> LabelledAnswer:
    return LabelledAnswer(
        id=id,
        card_id="c",
        author=author,
        answer=" ".join(["w"] * words) + f" {id}",
        points=np.asarray(points),
        misconceptions=np.asarray(misc),
    )


VECTORS = {"a": _unit(1, 0), "b": _unit(0, 1), "c": _unit(0, 0, 1)}


def _exemplars(answers: list[LabelledAnswer]):
    return build_exemplars(
        answers, lambda text: (VECTORS[text.split()[-1]], [VECTORS[text.split()[-1]]]), dim=4
    )


def test_the_nearest_exemplar_decides_the_vote():
    exemplars = _exemplars(
        [
            _answer("a", "w1", [1.0, 0.0], [0.0]),
            _answer("b", "w2", [0.0, 1.0], [1.0]),
            _answer("c", "w3", [0.5, 0.5], [0.0], words=200),  # too long to lend its sentences
        ]
    )
    assert len(exemplars.unit_vectors) == 2
    points, misc = votes(exemplars, _unit(1, 0.05), np.stack([_unit(1, 0.05)]), 2, 1)
    assert points.shape == (2, len(VOTE_FEATURES)) and misc.shape == (1, len(VOTE_FEATURES))
    knn_answer, knn_unit, known = (VOTE_FEATURES.index(n) for n in ("knn_answer", "knn_unit", "knn_known"))
    assert points[0, knn_answer] > 0.99 and points[1, knn_answer] < 0.01
    assert points[0, knn_unit] > 0.99 and misc[0, knn_answer] < 0.01
    assert (points[:, known] == 1).all()
    points, misc = votes(exemplars, _unit(0.05, 1), np.stack([_unit(0.05, 1)]), 2, 1)
    assert points[1, knn_answer] > 0.99 and misc[0, knn_answer] > 0.99


def test_equally_near_exemplars_share_the_vote():
    exemplars = _exemplars([_answer("a", "w1", [1.0], []), _answer("b", "w2", [0.0], [])])
    points, _ = votes(exemplars, _unit(1, 1), np.stack([_unit(1, 1)]), 1, 0)
    assert points[0, VOTE_FEATURES.index("knn_answer")] == pytest.approx(0.5, abs=1e-6)
    assert NEIGHBOURS >= 2


def test_no_exemplars_vote_nothing_and_say_so():
    points, misc = votes(None, _unit(1), np.stack([_unit(1)]), 3, 2)
    assert not points.any() and not misc.any()
    empty = _exemplars([_answer("a", "w1", [1.0], [])]).keep(lambda a: a.author == "w1")
    assert len(empty.answers) == 0 and len(empty.unit_vectors) == 0
    points, _ = votes(empty, _unit(1), np.stack([_unit(1)]), 1, 0)
    assert not points.any()


def test_keep_drops_an_authors_answers_and_their_sentences():
    exemplars = _exemplars(
        [_answer("a", "w1", [1.0], []), _answer("b", "w2", [0.0], []), _answer("c", "w1", [0.5], [])]
    )
    kept = exemplars.keep(lambda a: a.author == "w1")
    assert [a.id for a in kept.answers] == ["b"]
    assert len(kept.unit_vectors) == 1 and kept.unit_owner.tolist() == [0]
    assert np.allclose(kept.unit_vectors[0], VECTORS["b"])


def _never_fitted() -> list[dict]:
    """The held-out and negation sets: measured, never an exemplar, never fitted on."""
    return [
        json.loads(line)
        for path in (HELDOUT_SET, NEGATION_SET)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def test_the_held_out_split_is_never_an_exemplar():
    held_out = {row["answer"] for row in _never_fitted()}
    deck = default_deck()
    seen = 0
    for card in deck:
        for answer in labelled_answers(card):
            assert answer.answer not in held_out, answer.id
            seen += 1
    assert seen >= 26 * 17


def test_every_training_answer_is_labelled_against_its_cards_key():
    deck = default_deck()
    rows = [json.loads(line) for line in TRAINING_SET.read_text(encoding="utf-8").splitlines()]
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        card = deck.get(row["card_id"])
        assert set(row["points"]) == {p.id for p in card.key_points}, row["id"]
        assert set(row["misconceptions"]) <= {m.id for m in card.misconceptions}, row["id"]
    held_out_authors = {
        json.loads(line)["author"] for line in HELDOUT_SET.read_text(encoding="utf-8").splitlines()
    }
    # The held-out answers' writers lent no exemplar to any card.
    assert held_out_authors and not held_out_authors & {r["author"] for r in rows}


def test_the_learnt_reading_is_fitted_on_no_held_out_answer():
    from grader.calibration.train import training_rows

    rows = training_rows()
    held_out = _never_fitted()
    assert held_out
    assert not {row["id"] for row in held_out} & {r["id"] for r in rows}
    assert not {row["answer"] for row in held_out} & {r["answer"] for r in rows}
    assert not {row["author"] for row in held_out} & {r.get("author") for r in rows}


def test_the_shipped_model_reads_features_the_judge_computes():
    from grader.offline import (
        ALL_MISCONCEPTION_FEATURES,
        ALL_POINT_FEATURES,
        MODEL_PATH,
        PointModel,
    )

    model = PointModel.load(MODEL_PATH)
    if model is None:
        pytest.skip("no learnt reading is shipped (grader/offline_model.json absent): the rules judge")
    assert set(model.data["point_features"]) <= set(ALL_POINT_FEATURES)
    assert set(model.data["misconception_features"]) <= set(ALL_MISCONCEPTION_FEATURES)
    point = model.data["point"]
    if point.get("kind") == "trees":  # every split reads one of the model's columns
        assert max(max(tree["feature"]) for tree in point["trees"]) < len(model.point_columns)
    else:
        assert len(point["mean"]) == len(model.point_columns)
    assert model.uses_exemplars


def test_the_stored_vectors_fit_every_card_so_a_start_embeds_none():
    """`python -m grader.exemplars` after any change to a card or to the training set."""
    from grader.exemplars import _from_store, fingerprint

    for card in default_deck():
        answers = labelled_answers(card)
        stored = _from_store(card, fingerprint(card, card.version, answers), answers)
        assert stored is not None, f"{card.id}: stored exemplar vectors are stale"
        assert len(stored.answer_vectors) == len(stored.answers) >= 17
        assert len(stored.unit_vectors) == len(stored.unit_owner)


def test_stored_vectors_are_not_used_for_a_changed_card():
    from grader.exemplars import _from_store, fingerprint

    card = default_deck().get("rl-08")
    changed = card.model_copy(update={"version": "something-else"})
    answers = labelled_answers(changed)
    assert _from_store(changed, fingerprint(changed, changed.version, answers), answers) is None


async def test_stored_vectors_match_a_fresh_embedding(offline_judge, rl08):
    from grader.exemplars import build_exemplars, card_exemplars
    from grader.offline import exemplar_vectors

    index = offline_judge.index(rl08)
    stored = card_exemplars(rl08, index.version, lambda text: pytest.fail("embedded a stored card"))
    fresh = build_exemplars(labelled_answers(rl08), lambda text: exemplar_vectors(rl08, index, text))
    assert [a.id for a in stored.answers] == [a.id for a in fresh.answers]
    assert np.allclose(stored.answer_vectors, fresh.answer_vectors, atol=2e-3)
    assert np.allclose(stored.unit_vectors, fresh.unit_vectors, atol=2e-3)
