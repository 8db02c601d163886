"""Labelled answers as exemplars: a nearest-neighbour reading of an answer.

An accepted phrasing says how the key puts a point; people put it in many other ways. The
training set (``grader/calibration/training.jsonl``, answers written and labelled point by
point by writers who saw only the cards) plus the tuning split of the calibration set give each
card a few dozen answers with known labels. For a new answer the judge asks: the labelled
answers nearest to it, and the short ones nearest to each of its sentences, what did they get?

Votes are similarity-weighted means of the neighbours' labels (present 1, partial 1/2, else
0) over the ``k`` nearest, with weights ``exp((sim - best) / temperature)`` so that the closest
neighbour counts most. The learnt reading takes the votes and the nearest similarities as
features beside the phrasing similarities (``grader.offline.POINT_FEATURES``).

Every sentence of a labelled answer carries the whole answer's labels, so a nearest
neighbour cannot say which sentence asserted the misconception of a mostly right answer.
``contrasts`` asks instead which of the new answer's sentences is nearest the sentences of the
answers labelled with it and farthest from those of the answers without it.

The held-out split of the calibration set is never an exemplar.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cards.schema import Card

TRAINING_SET = Path(__file__).resolve().parents[1] / "calibration" / "training.jsonl"
CALIBRATION_SET = Path(__file__).resolve().parents[1] / "calibration" / "answers.jsonl"
LABEL_VALUE = {"present": 1.0, "partial": 0.5, "absent": 0.0, "contradicted": 0.0}
#: Answers at most this long lend their sentences as exemplars of what they were credited with.
SHORT_ANSWER_WORDS = 45
NEIGHBOURS = 5
NON_ANSWER_KIND = "non-answer"
TEMPERATURE = 0.05


@dataclass(frozen=True)
class LabelledAnswer:
    id: str
    card_id: str
    author: str
    answer: str
    points: np.ndarray  # (key points,) label values
    misconceptions: np.ndarray  # (misconceptions,) 1.0 when asserted
    twin_of: str | None = None
    contradicted: np.ndarray | None = None  # (key points,) 1.0 where labelled contradicted


@dataclass(frozen=True)
class Exemplars:
    """One card's labelled answers, embedded."""

    answers: tuple[LabelledAnswer, ...]
    answer_vectors: np.ndarray  # (answers, d)
    unit_vectors: np.ndarray  # (units of short answers, d)
    unit_owner: np.ndarray  # (units,) row of the answer each unit comes from
    claim_vectors: np.ndarray  # (claim units of every answer, d); the short ones are unit_vectors
    claim_owner: np.ndarray  # (claim units,)


    def keep(self, exclude: Callable[[LabelledAnswer], bool]) -> Exemplars:
        """The exemplars without those ``exclude`` names (an answer's own author in training)."""
        kept = np.asarray([not exclude(a) for a in self.answers], dtype=bool)
        if kept.all():
            return self
        new_row = np.cumsum(kept) - 1
        unit_kept = kept[self.unit_owner] if len(self.unit_owner) else np.zeros(0, dtype=bool)
        claim_kept = kept[self.claim_owner] if len(self.claim_owner) else np.zeros(0, dtype=bool)
        return Exemplars(
            answers=tuple(a for a, k in zip(self.answers, kept, strict=True) if k),
            answer_vectors=self.answer_vectors[kept],
            unit_vectors=self.unit_vectors[unit_kept],
            unit_owner=new_row[self.unit_owner[unit_kept]],
            claim_vectors=self.claim_vectors[claim_kept],
            claim_owner=new_row[self.claim_owner[claim_kept]],
        )


#: Answers that say nothing of the question (hedges, and true claims about something else),
#: given to every card as reaching none of its points and asserting no misconception: the
#: written sets hold only on-topic answers, and a reading fitted on them alone credited "I am
#: not sure, I would probably just approve it." with the whole mechanism, its nearest labelled
#: answers being short correct ones.
NON_ANSWERS = (
    "I don't know.",
    "no idea",
    "Not sure, pass.",
    "It depends on the setup.",
    "Hmm, good question, I would have to think about it.",
    "Can you repeat the question?",
    "Transformers use attention over all the tokens in the context.",
    "We should tune the hyperparameters and train for longer.",
    "Yes, that sounds fine to me.",
    "Probably, but I would need more data to say.",
    "Neural networks are universal function approximators.",
    "Overfitting happens when a model memorises its training data.",
    "Adam is usually a good default optimiser.",
    "The learning rate controls the size of each update.",
    "Batch normalisation makes deep networks easier to train.",
    "Convolutional networks share weights across positions in an image.",
)


def non_answer_rows(card: Card) -> list[dict[str, Any]]:
    """``NON_ANSWERS`` as labelled rows of ``card`` (each its own author)."""
    return [
        {
            "id": f"non-answer/{card.id}/{i}",
            "card_id": card.id,
            "kind": NON_ANSWER_KIND,
            "answer": text,
            "author": f"non-answer-{i}",
            "points": {point.id: "absent" for point in card.key_points},
            "misconceptions": [],
            "grade": 0,
        }
        for i, text in enumerate(NON_ANSWERS)
    ]


@functools.cache
def _rows(path: Path) -> tuple[dict[str, Any], ...]:
    """A labelled set's lines, read once per process (not once per card)."""
    if not path.exists():
        return ()
    lines = path.read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines if line.strip())


def labelled_answers(card: Card, paths: Sequence[Path] = (TRAINING_SET, CALIBRATION_SET)) -> list[LabelledAnswer]:
    """The card's labelled answers whose labels fit its key, from the training set and the
    calibration set (the held-out and negation sets never), and ``NON_ANSWERS``."""
    point_ids = [p.id for p in card.key_points]
    misc_ids = [m.id for m in card.misconceptions]
    found = []
    for path in [*paths, None]:
        for row in _rows(path) if path is not None else non_answer_rows(card):
            if row.get("card_id") != card.id:
                continue
            labels = row.get("points") or {}
            if set(labels) != set(point_ids) or set(row.get("misconceptions", ())) - set(misc_ids):
                continue  # labelled against an older key
            found.append(
                LabelledAnswer(
                    id=str(row["id"]),
                    card_id=card.id,
                    author=str(row.get("author", "")),
                    answer=str(row["answer"]),
                    points=np.asarray([LABEL_VALUE[labels[p]] for p in point_ids]),
                    misconceptions=np.asarray(
                        [float(m in row.get("misconceptions", ())) for m in misc_ids]
                    ),
                    twin_of=row.get("twin_of"),
                    contradicted=np.asarray([float(labels[p] == "contradicted") for p in point_ids]),
                )
            )
    return found


def is_short(answer: LabelledAnswer) -> bool:
    """A short answer's claims are exemplars of what it was credited with (its units)."""
    return len(answer.answer.split()) <= SHORT_ANSWER_WORDS


def build_exemplars(
    answers: Sequence[LabelledAnswer],
    answer_vector: Callable[[str], tuple[np.ndarray | None, list[np.ndarray]]],
    dim: int = 384,
) -> Exemplars:
    """Embed ``answers`` with ``answer_vector`` (text -> the answer's vector and the vectors of
    its claim sentences, as the judge reads an answer)."""
    vectors, claims, owners, kept = [], [], [], []
    for answer in answers:
        whole, sentence_vectors = answer_vector(answer.answer)
        if whole is None:
            continue
        row = len(kept)
        kept.append(answer)
        vectors.append(whole)
        for vector in sentence_vectors:
            claims.append(vector)
            owners.append(row)
    short = np.asarray([is_short(a) for a in kept], dtype=bool)
    return _assembled(
        tuple(kept),
        np.asarray(vectors, dtype=np.float32).reshape(len(vectors), dim),
        np.asarray(claims, dtype=np.float32).reshape(len(claims), dim),
        np.asarray(owners, dtype=int),
        short,
    )


def _assembled(
    answers: tuple[LabelledAnswer, ...],
    answer_vectors: np.ndarray,
    claim_vectors: np.ndarray,
    claim_owner: np.ndarray,
    short: np.ndarray,
) -> Exemplars:
    """Exemplars whose short answers (``short``, per answer) lend their claims as units."""
    lends = short[claim_owner] if len(claim_owner) else np.zeros(0, dtype=bool)
    return Exemplars(
        answers=answers,
        answer_vectors=answer_vectors,
        unit_vectors=claim_vectors[lends],
        unit_owner=claim_owner[lends],
        claim_vectors=claim_vectors,
        claim_owner=claim_owner,
    )


def _vote(sims: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, float]:
    """Weighted mean label of the nearest neighbours, and the nearest similarity."""
    k = min(NEIGHBOURS, len(sims))
    nearest = np.argpartition(-sims, k - 1)[:k]
    weights = np.exp((sims[nearest] - sims[nearest].max()) / TEMPERATURE)
    return (weights[:, None] * labels[nearest]).sum(axis=0) / weights.sum(), float(sims[nearest].max())


#: The features ``votes`` returns per key point (and, prefixed ``misc_``, per misconception).
VOTE_FEATURES = ("knn_answer", "knn_answer_sim", "knn_unit", "knn_unit_sim", "knn_known")


def votes(
    exemplars: Exemplars | None,
    whole: np.ndarray | None,
    unit_vectors: np.ndarray,
    n_points: int,
    n_misc: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(points, VOTE_FEATURES) and (misconceptions, VOTE_FEATURES) for one answer, read from its
    vector and its claim units' vectors; zeros with ``knn_known`` 0 when there are no exemplars."""
    points = np.zeros((n_points, len(VOTE_FEATURES)))
    misc = np.zeros((n_misc, len(VOTE_FEATURES)))
    if exemplars is None or not len(exemplars.answers) or whole is None:
        return points, misc
    point_labels = np.vstack([a.points for a in exemplars.answers])
    misc_labels = np.vstack([a.misconceptions for a in exemplars.answers]).reshape(
        len(exemplars.answers), n_misc
    )
    answer_vote, answer_sim = _vote(exemplars.answer_vectors @ whole, np.hstack([point_labels, misc_labels]))
    unit_vote = np.zeros(n_points + n_misc)
    unit_sim = np.zeros(n_points + n_misc)
    if len(exemplars.unit_vectors) and len(unit_vectors):
        labels = np.hstack([point_labels, misc_labels])[exemplars.unit_owner]
        sims = unit_vectors @ exemplars.unit_vectors.T  # (answer units, exemplar units)
        for row in sims:
            vote, sim = _vote(row, labels)
            better = vote > unit_vote
            unit_vote = np.where(better, vote, unit_vote)
            unit_sim = np.where(better, sim, unit_sim)
    both = np.stack(
        [answer_vote, np.full(n_points + n_misc, answer_sim), unit_vote, unit_sim, np.ones(n_points + n_misc)],
        axis=1,
    )
    return both[:n_points], both[n_points:]


#: Per key point: how far the answer's most telling sentence is nearer the sentences of answers
#: labelled as contradicting the point than those of answers credited with it, beside that
#: sentence's similarity to its nearest contradicting sentence.
POINT_CONTRAST_FEATURES = ("contradiction_contrast", "contradiction_contrast_sim")
#: Per misconception: the same between answers that asserted it and answers that did not.
MISC_CONTRAST_FEATURES = ("misc_contrast", "misc_contrast_sim")


def _contrast(sims: np.ndarray, near: np.ndarray, far: np.ndarray) -> np.ndarray:
    """(targets, 2): per target, the largest (nearest in ``near`` - nearest in ``far``) over the
    answer's sentences, and the ``near`` similarity there; (0, -1) where either group is empty.

    An answer that asserts a misconception usually says it in one sentence among right ones;
    every sentence of a labelled answer shares its label, so a single nearest neighbour cannot
    tell which sentence carried it. The sentence that is near the asserting answers and far from
    all the others can (a multiple-instance reading)."""
    out = np.tile([0.0, -1.0], (near.shape[1], 1))
    if not sims.size:
        return out
    for t in range(near.shape[1]):
        if near[:, t].any() and far[:, t].any():
            best_near = sims[:, near[:, t]].max(axis=1)
            gap = best_near - sims[:, far[:, t]].max(axis=1)
            row = int(gap.argmax())
            out[t] = gap[row], best_near[row]
    return out


def contrasts(
    exemplars: Exemplars | None, unit_vectors: np.ndarray, n_points: int, n_misc: int
) -> tuple[np.ndarray, np.ndarray]:
    """(points, POINT_CONTRAST_FEATURES) and (misconceptions, MISC_CONTRAST_FEATURES) for an
    answer's claim vectors, against every claim of the exemplars."""
    points = np.tile([0.0, -1.0], (n_points, 1))
    misc = np.tile([0.0, -1.0], (n_misc, 1))
    if exemplars is None or not len(exemplars.claim_vectors) or not len(unit_vectors):
        return points, misc
    owner = exemplars.claim_owner
    credited = np.vstack([a.points for a in exemplars.answers]) == 1.0
    contradicted = np.vstack(
        [a.contradicted if a.contradicted is not None else np.zeros(n_points) for a in exemplars.answers]
    ).astype(bool)
    asserted = np.vstack([a.misconceptions for a in exemplars.answers]).reshape(-1, n_misc).astype(bool)
    sims = unit_vectors @ exemplars.claim_vectors.T  # (answer claims, exemplar claims)
    points[:] = _contrast(sims, contradicted[owner], credited[owner])
    misc[:] = _contrast(sims, asserted[owner], ~asserted[owner])
    return points, misc


#: Every card's exemplars embedded ahead (``python -m grader.calibration.store_exemplars``), so a
#: start does not spend minutes of CPU on them; a card whose key or answers changed is embedded on
#: first use.
VECTORS_PATH = Path(__file__).resolve().parents[1] / "models" / "exemplars.npz"
_CACHE: dict[tuple[str, str], Exemplars] = {}
_CACHE_LOCK = threading.Lock()
_STORED: dict[str, np.ndarray] | None = None


def fingerprint(card: Card, version: str, answers: Sequence[LabelledAnswer]) -> str:
    """What the stored vectors of a card depend on: its version and its labelled answers."""
    material = json.dumps([card.id, version, [(a.id, a.answer) for a in answers]], ensure_ascii=False)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def _stored() -> dict[str, np.ndarray]:
    global _STORED
    if _STORED is None:
        try:
            with np.load(VECTORS_PATH, allow_pickle=False) as data:
                _STORED = {name: data[name] for name in data.files}
        except (OSError, ValueError):
            _STORED = {}
    return _STORED


def _from_store(card: Card, key: str, answers: Sequence[LabelledAnswer]) -> Exemplars | None:
    stored = _stored()
    if str(stored.get(f"{card.id}/key", "")) != key or f"{card.id}/claims" not in stored:
        return None
    by_id = {a.id: a for a in answers}
    return _assembled(
        tuple(by_id[i] for i in stored[f"{card.id}/ids"].tolist()),
        stored[f"{card.id}/answers"].astype(np.float32),
        stored[f"{card.id}/claims"].astype(np.float32),
        stored[f"{card.id}/owner"].astype(int),
        stored[f"{card.id}/short"].astype(bool),
    )


def card_exemplars(
    card: Card, version: str, answer_vector: Callable[[str], tuple[np.ndarray | None, list[np.ndarray]]]
) -> Exemplars:
    """The card's exemplars: stored when they fit the card, else embedded once per card version
    in this process."""
    cache_key = (card.id, version)
    with _CACHE_LOCK:
        found = _CACHE.get(cache_key)
    if found is None:
        answers = labelled_answers(card)
        found = _from_store(card, fingerprint(card, version, answers), answers)
        if found is None:
            found = build_exemplars(answers, answer_vector)
        with _CACHE_LOCK:
            _CACHE[cache_key] = found
    return found
