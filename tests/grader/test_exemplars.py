"""The exemplars' votes (no model: vectors are made by hand) and what may be an exemplar."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cards.deck import default_deck
from grader.calibration.eval import (
    HELDOUT_SET,
    NEAR_MISS_SET,
    NEGATION_SET,
    SECOND_HELDOUT_SET,
    SECOND_NEAR_MISS_SET,
)
from grader.offline.exemplars import (
    MISC_CONTRAST_FEATURES,
    NEIGHBOURS,
    POINT_CONTRAST_FEATURES,
    TRAINING_SET,
    VOTE_FEATURES,
    LabelledAnswer,
    build_exemplars,
    contrasts,
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
    assert len(kept.claim_vectors) == 1 and kept.claim_owner.tolist() == [0]


SENTENCES = {
    "core": _unit(1, 0, 0, 0),  # said by every on-topic answer
    "wrong": _unit(0, 1, 0, 0),  # the misconception, said only by the answers labelled with it
    "point": _unit(0, 0, 1, 0),  # the second key point, said only by answers credited with it
    "denial": _unit(0, 0, 0, 1),  # the second key point contradicted
}


def _labelled(id: str, sentences: list[str], points: list[float], misc: list[float], contradicted=None):
    return LabelledAnswer(
        id=id,
        card_id="c",
        author=id,
        answer=" ".join(sentences) + " " + " ".join(["w"] * 60),  # long: lends no units
        points=np.asarray(points),
        misconceptions=np.asarray(misc),
        contradicted=None if contradicted is None else np.asarray(contradicted),
    )


def _by_sentences(answers: list[LabelledAnswer]):
    return build_exemplars(
        answers,
        lambda text: (SENTENCES["core"], [SENTENCES[w] for w in text.split() if w in SENTENCES]),
        dim=4,
    )


def test_the_sentence_that_only_labelled_answers_say_carries_the_contrast():
    exemplars = _by_sentences(
        [
            _labelled("right", ["core", "point"], [1.0, 1.0], [0.0]),
            _labelled("partly-wrong", ["core", "wrong"], [1.0, 0.0], [1.0]),
            _labelled("missing", ["core"], [1.0, 0.0], [0.0]),
            _labelled("denies", ["core", "denial"], [1.0, 0.0], [0.0], contradicted=[0.0, 1.0]),
        ]
    )
    assert not len(exemplars.unit_vectors) and len(exemplars.claim_vectors) == 7
    contrast, near = (MISC_CONTRAST_FEATURES.index(n) for n in ("misc_contrast", "misc_contrast_sim"))
    # A right core beside the wrong claim: the wrong sentence is near an asserting answer only.
    points, misc = contrasts(exemplars, np.stack([SENTENCES["core"], SENTENCES["wrong"]]), 2, 1)
    assert misc.shape == (1, len(MISC_CONTRAST_FEATURES)) and points.shape == (2, len(POINT_CONTRAST_FEATURES))
    assert misc[0, contrast] == pytest.approx(1.0) and misc[0, near] == pytest.approx(1.0)
    # The same core alone: every sentence is as near an answer without the misconception.
    _, misc = contrasts(exemplars, np.stack([SENTENCES["core"]]), 2, 1)
    assert misc[0, contrast] == pytest.approx(0.0)
    # A sentence near an answer that contradicted the second point, and far from every answer
    # credited with it, contrasts it; the point's own sentence, or the shared core, does not.
    contradiction = POINT_CONTRAST_FEATURES.index("contradiction_contrast")
    points, _ = contrasts(exemplars, np.stack([SENTENCES["core"], SENTENCES["denial"]]), 2, 1)
    assert points[1, contradiction] == pytest.approx(1.0)
    assert points[0, contradiction] == 0.0  # no answer contradicted the first point
    points, _ = contrasts(exemplars, np.stack([SENTENCES["core"], SENTENCES["point"]]), 2, 1)
    assert points[1, contradiction] == pytest.approx(0.0)


def test_no_exemplars_or_no_sentences_contrast_nothing():
    for exemplars, units in ((None, np.stack([_unit(1)])), (_exemplars([_answer("a", "w1", [1.0], [])]), np.zeros((0, 4)))):
        points, misc = contrasts(exemplars, units, 1, 1)
        assert points.tolist() == [[0.0, -1.0]] and misc.tolist() == [[0.0, -1.0]]


def _never_fitted() -> list[dict]:
    """The two held-out sets, the negation and the two near-miss sets: measured, never an exemplar,
    never fitted on."""
    return [
        json.loads(line)
        for path in (HELDOUT_SET, SECOND_HELDOUT_SET, NEGATION_SET, NEAR_MISS_SET, SECOND_NEAR_MISS_SET)
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
    from grader.offline.evidence import ALL_MISCONCEPTION_FEATURES, ALL_POINT_FEATURES
    from grader.offline.judge import MODEL_PATH, PointModel

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
    """`python -m grader.calibration.store_exemplars` after any change to a card or to the training set."""
    from grader.offline.exemplars import _from_store, fingerprint

    for card in default_deck():
        answers = labelled_answers(card)
        stored = _from_store(card, fingerprint(card, card.version, answers), answers)
        assert stored is not None, f"{card.id}: stored exemplar vectors are stale"
        assert len(stored.answer_vectors) == len(stored.answers) >= 17
        assert len(stored.unit_vectors) == len(stored.unit_owner)
        assert len(stored.claim_vectors) == len(stored.claim_owner) >= len(stored.unit_vectors)


def test_stored_vectors_are_not_used_for_a_changed_card():
    from grader.offline.exemplars import _from_store, fingerprint

    card = default_deck().get("rl-08")
    changed = card.model_copy(update={"version": "something-else"})
    answers = labelled_answers(changed)
    assert _from_store(changed, fingerprint(changed, changed.version, answers), answers) is None


#: The fast run's answers of rl-08 whose stored vectors are checked against fresh ones: one of
#: each length and form the store holds (long expert and rambling answers with many claims,
#: terse ones that lend their claims as units, bullets, formulas, an injection, a
#: denial, a second writer's, and a non-answer the store leaves out for want of a vector, so
#: the fresh embedding must leave it out too), ten of 68 so the check embeds a seventh of them.
FRESH_SAMPLE = (
    "rl-08/expert/1/writer-b",
    "rl-08/terse/1/writer-b",
    "rl-08/bullets/1/writer-b",
    "rl-08/math/1/writer-b",
    "rl-08/rambling/1/writer-b",
    "rl-08/injection/1/writer-b",
    "rl-08/denies-mechanism/1/writer-i",
    "rl-08/partly-wrong/1/hy2",
    "rl-08/concise/1/hy2",
    "non-answer/rl-08/0",
)


async def test_stored_vectors_of_sample_answers_match_a_fresh_embedding(offline_judge, rl08):
    from grader.offline.evidence import exemplar_vectors
    from grader.offline.exemplars import build_exemplars, card_exemplars

    index = offline_judge.index(rl08)
    stored = card_exemplars(rl08, index.version, lambda text: pytest.fail("embedded a stored card"))
    picked = [a for a in labelled_answers(rl08) if a.id in FRESH_SAMPLE]
    assert len(picked) == len(FRESH_SAMPLE)
    fresh = build_exemplars(picked, lambda text: exemplar_vectors(rl08, index, text))
    ids = [a.id for a in stored.answers]
    rows = [ids.index(a.id) for a in fresh.answers]  # each fresh answer's row in the store
    assert [a.id for a in fresh.answers] == [i for i in ids if i in FRESH_SAMPLE]
    assert np.allclose(stored.answer_vectors[rows], fresh.answer_vectors, atol=2e-3)
    for owner, vectors, fresh_owner, fresh_vectors in (
        (stored.unit_owner, stored.unit_vectors, fresh.unit_owner, fresh.unit_vectors),
        (stored.claim_owner, stored.claim_vectors, fresh.claim_owner, fresh.claim_vectors),
    ):
        kept = np.isin(owner, rows)
        assert [rows.index(o) for o in owner[kept]] == fresh_owner.tolist()
        assert np.allclose(vectors[kept], fresh_vectors, atol=2e-3)


@pytest.mark.slow
async def test_stored_vectors_match_a_fresh_embedding(offline_judge, rl08):
    from grader.offline.evidence import exemplar_vectors
    from grader.offline.exemplars import build_exemplars, card_exemplars

    index = offline_judge.index(rl08)
    stored = card_exemplars(rl08, index.version, lambda text: pytest.fail("embedded a stored card"))
    fresh = build_exemplars(labelled_answers(rl08), lambda text: exemplar_vectors(rl08, index, text))
    assert [a.id for a in stored.answers] == [a.id for a in fresh.answers]
    assert np.allclose(stored.answer_vectors, fresh.answer_vectors, atol=2e-3)
    assert np.allclose(stored.unit_vectors, fresh.unit_vectors, atol=2e-3)
    assert np.allclose(stored.claim_vectors, fresh.claim_vectors, atol=2e-3)
    assert stored.claim_owner.tolist() == fresh.claim_owner.tolist()


def test_the_stored_phrasings_cover_every_card_so_a_start_embeds_none():
    """`python -m grader.calibration.store_exemplars` after any change to a card: every text a
    built-in card's index embeds is stored, so indexing the deck runs no model."""
    from grader.offline.evidence import build_index
    from grader.offline.vectors import recording, stored_phrases

    stored = stored_phrases()
    for card in default_deck():
        with recording() as texts:
            build_index(card)
        assert texts, card.id
        missing = sorted(texts - stored.keys())
        assert not missing, f"{card.id}: {len(missing)} phrasings not stored, e.g. {missing[:2]}"


def test_stored_phrasings_match_a_fresh_embedding(offline_judge):
    from grader.offline.vectors import embed_uncached, stored_phrases

    stored = stored_phrases()
    sample = sorted(stored)[:: max(1, len(stored) // 24)]  # two dozen, spread over the file
    fresh = embed_uncached(sample)
    assert np.allclose(np.stack([stored[t] for t in sample]), fresh, atol=2e-3)


def test_phrasings_stored_for_another_model_are_not_used(tmp_path):
    from grader.offline.vectors import stored_phrases

    path = tmp_path / "phrases.npz"
    vectors = np.ones((1, 384), dtype=np.float32)
    np.savez(path, model=np.asarray("some-other-model==1"), texts=np.asarray(["a b c"]), vectors=vectors)
    assert stored_phrases(path) == {}
    assert stored_phrases(tmp_path / "missing.npz") == {}
