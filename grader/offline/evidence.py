"""Evidence: what the learnt reading reads of an answer against one card.

A card's phrasings (``card_index``, embedded once per card version): per key point its text,
sentences and clauses, the expert answers' clauses clearly nearest to it and its accepted
phrasings of three words or more; per misconception its text, its sentences, the trap answers'
sentences clearly nearest to it and its phrasings.

An answer (``analyse``) is cut into units (clauses, and sentences of several clauses), each
embedded (a sentence as the mean of its clauses) and compared with every phrasing. A unit
supports a phrasing only when the words they share are negated on the same side
(``text.same_polarity``): "the KL term does not keep the policy close" is near the point that it
keeps the policy close, but it is an opposite-sign match, not support.

``features`` turns that into card-agnostic numbers per key point and per misconception, beside
the votes of the card's labelled answers (``exemplars``) and the sentence reader (``reader``).
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from grader.injection import INJECTION_PROTOTYPES, addresses_grader, injection_matches
from grader.offline.exemplars import (
    MISC_CONTRAST_FEATURES,
    POINT_CONTRAST_FEATURES,
    VOTE_FEATURES,
    Exemplars,
    contrasts,
    votes,
)
from grader.offline.reader import SentenceReader
from grader.offline.text import (
    Lexicon,
    Span,
    Tokens,
    clauses,
    is_claim,
    lexicon,
    phrase_hit,
    polarity,
    same_polarity,
    scoped_tokens,
    sentences,
    word_count,
    words,
)
from grader.offline.vectors import embed

if TYPE_CHECKING:
    from cards.schema import Card

#: Longer answers are read up to here; the engine refuses answers over 8,000 characters.
MAX_ANSWER_CHARS = 8000
#: A unit this close to an injection prototype, and speaking to the grader, is an instruction.
INJECTION_SIMILARITY = 0.62
#: A unit with more comma-separated items than this, and no claim, is a list of terms.
LIST_ITEMS = 5
#: A unit proves only the points it is within this of its best point (one sentence, one point).
EXCLUSIVE_GAP = 0.03
#: An opposite-sign match this much closer than the best support says the opposite.
CONTRADICTION_MARGIN = 0.03


@dataclass(frozen=True)
class Phrasings:
    """Reference sentences, each tied to a target (a key point or misconception index)."""

    texts: tuple[str, ...]
    target: np.ndarray  # (n,) target index
    lexicons: tuple[Lexicon, ...]
    vectors: np.ndarray  # (n, d) unit vectors


@dataclass(frozen=True)
class CardIndex:
    card_id: str
    version: str
    points: Phrasings
    misconceptions: Phrasings
    injection: np.ndarray  # the injection prototypes' vectors
    accepts: tuple[tuple[Tokens, ...], ...]  # per key point, its accepted phrasings
    asserts: tuple[tuple[Tokens, ...], ...]  # per misconception, its phrasings


def _phrases_of(text: str, *, with_clauses: bool = True) -> list[str]:
    """A reference text, its sentences and (``with_clauses``) clauses of four words or more.

    Misconceptions keep whole sentences: "the reward is climbing, so the model is getting
    better" is wrong as a whole; its first clause alone is the question's premise."""
    found = [" ".join(text.split())]
    for sentence in sentences(text):
        found.append(sentence.text)
        if with_clauses:
            found.extend(clause.text for clause in clauses(text, sentence))
    return list(dict.fromkeys(p for p in found if word_count(p) >= 4))


def _claims_in(texts: Sequence[str], *, with_clauses: bool) -> list[str]:
    found = [
        piece.text
        for text in texts
        for sentence in sentences(text)
        for piece in (clauses(text, sentence) if with_clauses else [sentence])
        if is_claim(piece.text)
    ]
    return list(dict.fromkeys(found))


def _assign(candidates: list[str], vectors: np.ndarray, targets: list[int]) -> list[tuple[str, int]]:
    """The candidates clearly nearest one target: cosine 0.45 or more, 0.05 ahead of the next."""
    if not candidates:
        return []
    ids = sorted(set(targets))
    target_of = np.asarray(targets)
    chosen = []
    for text, row in zip(candidates, embed(candidates) @ vectors.T, strict=True):
        per_target = np.asarray([row[target_of == t].max() for t in ids])
        order = np.argsort(per_target)[::-1]
        runner_up = per_target[order[1]] if len(order) > 1 else -1.0
        if per_target[order[0]] >= 0.45 and per_target[order[0]] - runner_up >= 0.05:
            chosen.append((text, ids[int(order[0])]))
    return chosen


def _phrasings(texts: list[str], targets: list[int]) -> Phrasings:
    return Phrasings(tuple(texts), np.asarray(targets, dtype=np.int64), tuple(map(lexicon, texts)), embed(texts))


def build_index(card: Card) -> CardIndex:
    """Embed the card's phrasings (see the module docstring)."""
    point = [(p, k) for k, key in enumerate(card.key_points) for p in _phrases_of(key.text)]
    misc = [(p, m) for m, mis in enumerate(card.misconceptions) for p in _phrases_of(mis.text, with_clauses=False)]
    expert = [a.text for a in card.reference_answers if a.kind == "expert"]
    trap = [card.trap] + [a.text for a in card.reference_answers if a.kind == "trap"]
    point += _assign(_claims_in(expert, with_clauses=True), embed([t for t, _ in point]), [k for _, k in point])
    misc += _assign(_claims_in(trap, with_clauses=False), embed([t for t, _ in misc]), [m for _, m in misc])
    # Accepted phrasings of three words or more are paraphrases: they join the embedded ones.
    accepted = [[(a, k) for a in key.accepts] for k, key in enumerate(card.key_points)]
    asserted = [[(a, m) for a in mis.phrasings] for m, mis in enumerate(card.misconceptions)]
    for found, extra in ((point, accepted), (misc, asserted)):
        for phrase, target in (pair for pairs in extra for pair in pairs):
            if word_count(phrase) >= 3 and phrase not in {t for t, _ in found}:
                found.append((phrase, target))
    return CardIndex(
        card_id=card.id,
        version=card.version,
        points=_phrasings([t for t, _ in point], [k for _, k in point]),
        misconceptions=_phrasings([t for t, _ in misc], [m for _, m in misc]),
        injection=embed(INJECTION_PROTOTYPES),
        accepts=tuple(tuple(map(scoped_tokens, p.accepts)) for p in card.key_points),
        asserts=tuple(tuple(map(scoped_tokens, m.phrasings)) for m in card.misconceptions),
    )


_INDEXES: OrderedDict[tuple[str, str], CardIndex] = OrderedDict()
_INDEX_LOCK = threading.Lock()
MAX_INDEXED_CARDS = 256


def card_index(card: Card) -> CardIndex:
    """The embedded phrasings of ``card``, built once per card version in this process."""
    version = card.version or hashlib.sha256(card.model_dump_json().encode()).hexdigest()[:12]
    key = (card.id, version)
    with _INDEX_LOCK:
        if key in _INDEXES:
            _INDEXES.move_to_end(key)
            return _INDEXES[key]
    built = build_index(card)
    with _INDEX_LOCK:
        _INDEXES[key] = built
        while len(_INDEXES) > MAX_INDEXED_CARDS:
            _INDEXES.popitem(last=False)
    return built


# ----- one answer -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    span: Span
    is_clause: bool  # a clause, rather than a sentence of several clauses
    claim: bool  # reads as a statement, not a list of terms
    lexicon: Lexicon
    injection_pattern: bool  # one of grader.injection's patterns fires on it
    injection_similarity: float  # best cosine to the injection prototypes
    tokens: Tokens  # stems in order, each negated or not

    def instructs(self, threshold: float = INJECTION_SIMILARITY) -> bool:
        """An instruction to the grader: a pattern, or near a prototype and speaking to the grader."""
        return self.injection_pattern or (
            self.injection_similarity >= threshold and addresses_grader(self.span.text)
        )


@dataclass(frozen=True)
class Analysis:
    """An answer's units and their similarities to a card's phrasings; no decisions yet."""

    answer: str
    units: tuple[Unit, ...]
    vectors: np.ndarray  # (units, d)
    point_sims: np.ndarray  # (units, point phrasings)
    misc_sims: np.ndarray  # (units, misconception phrasings)
    point_same: np.ndarray  # (units, point phrasings): same polarity
    misc_same: np.ndarray
    injection_found: tuple[str, ...]  # patterns that fire on the whole answer

    @property
    def listed(self) -> np.ndarray:
        """Units that can be evidence: not instructions, and a claim or a short list."""
        return np.asarray([not u.instructs() and (u.claim or _items(u) <= LIST_ITEMS) for u in self.units], dtype=bool)

    @property
    def usable(self) -> np.ndarray:
        """Listed units that are claims."""
        return self.listed & np.asarray([u.claim for u in self.units], dtype=bool)

    @property
    def stated(self) -> np.ndarray:
        """Units that can assert a misconception: an instruction beside the trap takes nothing back."""
        return np.asarray([u.claim or _items(u) <= LIST_ITEMS for u in self.units], dtype=bool)

    @property
    def instructs(self) -> bool:
        return bool(self.injection_found) or any(u.instructs() for u in self.units)

    def without_instructions(self) -> str:
        """The answer with every unit that instructs the grader cut out."""
        pieces, cursor = [], 0
        for start, end in sorted((u.span.start, u.span.end) for u in self.units if u.instructs()):
            pieces.append(self.answer[cursor:start] if start > cursor else "")
            cursor = max(cursor, end)
        pieces.append(self.answer[cursor:])
        return " ".join(" ".join(piece.split()) for piece in pieces if piece.strip())


def _items(unit: Unit) -> int:
    return len([item for item in re.split(r"[,/|;]|\band\b", unit.span.text) if item.strip()])


def _normalised(vector: np.ndarray) -> np.ndarray | None:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else None


def analyse(card: Card, index: CardIndex, answer: str) -> Analysis:
    """Cut ``answer`` into units and compare each with every phrasing of the card."""
    answer = answer[:MAX_ANSWER_CHARS]
    point_ids = [point.id for point in card.key_points]
    found = tuple(injection_matches(answer, point_ids))
    spans: list[tuple[Span, list[int]]] = []  # a unit and the clause rows it is the mean of
    clause_texts: list[str] = []
    for sentence in sentences(answer):
        parts = clauses(answer, sentence)
        first = len(clause_texts)
        for part in parts:
            spans.append((part, [len(clause_texts)]))
            clause_texts.append(part.text)
        if len(parts) > 1:
            spans.append((sentence, list(range(first, len(clause_texts)))))
    # Only clauses go through the model (nearly all of the time spent).
    clause_vectors = embed(clause_texts)
    vectors = np.zeros((len(spans), 384), dtype=np.float32)
    for row, (_, rows) in enumerate(spans):
        mean = clause_vectors[rows].mean(axis=0)
        vectors[row] = _normalised(mean) if _normalised(mean) is not None else mean
    prototypes = vectors @ index.injection.T
    units = tuple(
        Unit(
            span=span,
            is_clause=len(rows) == 1,
            claim=is_claim(span.text),
            lexicon=lexicon(span.text),
            # A pattern that fires on a unit fires on the whole answer, so clean answers skip this.
            injection_pattern=bool(found) and bool(injection_matches(span.text, point_ids)),
            injection_similarity=float(prototypes[row].max()),
            tokens=scoped_tokens(span.text),
        )
        for row, (span, rows) in enumerate(spans)
    )

    def same(phrasings: Phrasings) -> np.ndarray:
        return np.asarray(
            [[same_polarity(u.lexicon, p) for p in phrasings.lexicons] for u in units], dtype=bool
        ).reshape(len(units), len(phrasings.lexicons))

    return Analysis(
        answer=answer,
        units=units,
        vectors=vectors,
        point_sims=vectors @ index.points.vectors.T,
        misc_sims=vectors @ index.misconceptions.vectors.T,
        point_same=same(index.points),
        misc_same=same(index.misconceptions),
        injection_found=found,
    )


def by_target(sims: np.ndarray, phrasings: Phrasings, targets: int, match: np.ndarray) -> np.ndarray:
    """(units, targets): the best similarity over each target's phrasings that ``match`` allows."""
    best = np.full((sims.shape[0], targets), -1.0)
    if not sims.size:
        return best
    masked = np.where(match, sims, -1.0)
    for target in range(targets):
        columns = phrasings.target == target
        if columns.any():
            best[:, target] = masked[:, columns].max(axis=1)
    return best


# ----- features --------------------------------------------------------------------------------

POINT_FEATURES = (
    "support_any",  # best same-sign similarity of a listed unit to the point
    "support_claim",  # ... of a unit that reads as a claim
    "support_focused",  # ... of a unit whose best point this is (within EXCLUSIVE_GAP)
    "similarity_raw",  # best similarity, sign ignored
    "answer_similarity",  # the whole answer's vector against the point's phrasings
    "opposed_any",  # best opposite-sign similarity of a claim to the point
    "nearest_opposed",  # ... beats the support by CONTRADICTION_MARGIN
    "answer_words",  # log(1 + words): a terse answer's weaker match can be complete
)
MISCONCEPTION_FEATURES = (
    "misc_any",  # best same-sign similarity of a unit to the misconception
    "misc_margin",  # ... less that unit's best key-point support
    "key_cover",  # mean support_any over the key points
    "misc_answer_words",
)
#: The sentence reader's: P(some sentence states the point), and that less the best of the
#: card's other points; P(some sentence asserts the misconception).
READER_POINT_FEATURES = ("reader_point", "reader_margin")
READER_MISC_FEATURES = ("reader_asserted",)
ALL_POINT_FEATURES = POINT_FEATURES + VOTE_FEATURES + POINT_CONTRAST_FEATURES + READER_POINT_FEATURES
ALL_MISCONCEPTION_FEATURES = (
    MISCONCEPTION_FEATURES
    + tuple(f"misc_{name}" for name in VOTE_FEATURES)
    + MISC_CONTRAST_FEATURES
    + READER_MISC_FEATURES
)
READER_FEATURES = frozenset((*READER_POINT_FEATURES, *READER_MISC_FEATURES))
EXEMPLAR_FEATURES = frozenset(
    (*VOTE_FEATURES, *(f"misc_{name}" for name in VOTE_FEATURES), *POINT_CONTRAST_FEATURES, *MISC_CONTRAST_FEATURES)
)


def _best(values: np.ndarray, mask: np.ndarray) -> float:
    return float(values[mask].max()) if mask.any() else -1.0


def features(
    card: Card,
    index: CardIndex,
    analysis: Analysis,
    exemplars: Exemplars | None = None,
    reader: SentenceReader | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(key points, ALL_POINT_FEATURES) and (misconceptions, ALL_MISCONCEPTION_FEATURES); the
    reader's columns are NaN without a ``reader``."""
    n_points, n_misc = len(card.key_points), len(card.misconceptions)
    listed, usable, stated = analysis.listed, analysis.usable, analysis.stated
    support = by_target(analysis.point_sims, index.points, n_points, analysis.point_same)
    opposed = by_target(analysis.point_sims, index.points, n_points, ~analysis.point_same)
    raw = by_target(analysis.point_sims, index.points, n_points, np.ones_like(analysis.point_same))
    misc = by_target(analysis.misc_sims, index.misconceptions, n_misc, analysis.misc_same)
    best_point = support.max(axis=1) if n_points else np.zeros(len(analysis.units))
    clause_rows = [i for i, u in enumerate(analysis.units) if u.is_clause]
    whole = _normalised(analysis.vectors[clause_rows].mean(axis=0)) if clause_rows else None
    answer_words = math.log1p(len(words(analysis.answer)))
    points = np.zeros((n_points, len(POINT_FEATURES)))
    for k in range(n_points):
        columns = index.points.target == k
        support_any = _best(support[:, k], listed)
        opposed_any = _best(opposed[:, k], usable)
        points[k] = (
            support_any,
            _best(support[:, k], usable),
            _best(support[:, k], listed & (support[:, k] >= best_point - EXCLUSIVE_GAP)),
            _best(raw[:, k], listed),
            float((index.points.vectors[columns] @ whole).max()) if columns.any() and whole is not None else 0.0,
            opposed_any,
            float(len(analysis.units) > 0 and opposed_any >= support_any + CONTRADICTION_MARGIN),
            answer_words,
        )
    key_cover = float(points[:, 0].mean()) if n_points else 0.0
    misconceptions = np.zeros((n_misc, len(MISCONCEPTION_FEATURES)))
    for m in range(n_misc):
        margin = misc[:, m] - best_point if len(analysis.units) else np.zeros(0)
        misconceptions[m] = (
            _best(misc[:, m], stated),
            _best(margin, stated) if len(analysis.units) else -2.0,
            key_cover,
            answer_words,
        )
    whole, unit_vectors = claim_vectors(analysis)
    point_votes, misc_votes = votes(exemplars, whole, unit_vectors, n_points, n_misc)
    point_contrasts, misc_contrasts = contrasts(exemplars, unit_vectors, n_points, n_misc)
    point_read, misc_read = reader_features(card, index, reader_input(analysis), reader)
    return (
        np.hstack([points, point_votes, point_contrasts, point_read]),
        np.hstack([misconceptions, misc_votes, misc_contrasts, misc_read]),
    )


@dataclass(frozen=True)
class Negations:
    """What the negation rules read (``judge.negation_rules``): per key point, whether an
    accepted phrasing is said with its own sign and whether only under a negation; the same per
    misconception, and whether the unit most like it has the other polarity."""

    point_said: np.ndarray  # (points,) bool
    point_denied: np.ndarray
    misc_said: np.ndarray  # (misconceptions,) bool
    misc_denied: np.ndarray
    misc_negated: np.ndarray


def _hits(analysis: Analysis, mask: np.ndarray, targets: Sequence[Sequence[Tokens]]) -> np.ndarray:
    """(units, targets): +1 a unit says one of the target's phrasings, -1 only under a negation."""
    found = np.zeros((len(analysis.units), len(targets)), dtype=np.int8)
    for row, unit in enumerate(analysis.units):
        for column, phrases in enumerate(targets):
            hits = [phrase_hit(unit.tokens, phrase) for phrase in phrases] if mask[row] else []
            found[row, column] = 1 if 1 in hits else -1 if -1 in hits else 0
    return found


def negations(card: Card, index: CardIndex, analysis: Analysis) -> Negations:
    points = _hits(analysis, analysis.listed, index.accepts)
    misc_hits = _hits(analysis, analysis.stated, index.asserts)
    misc = by_target(analysis.misc_sims, index.misconceptions, len(card.misconceptions), analysis.misc_same)
    stated = analysis.stated
    negated = np.zeros(len(card.misconceptions), dtype=bool)
    for m, misconception in enumerate(card.misconceptions):
        if stated.any():
            unit = analysis.units[int(np.where(stated, misc[:, m], -2.0).argmax())]
            negated[m] = unit.lexicon.polarity != polarity(misconception.text)
    return Negations(
        (points == 1).any(axis=0), (points == -1).any(axis=0), (misc_hits == 1).any(axis=0), (misc_hits == -1).any(axis=0), negated
    )


class ReaderInput(NamedTuple):
    """What the sentence reader reads of an answer: the listed units' vectors, and which of
    their pairs with the card's point and misconception phrasings have the same sign."""

    units: np.ndarray
    point_same: np.ndarray
    misc_same: np.ndarray


def reader_input(analysis: Analysis) -> ReaderInput:
    listed = analysis.listed
    return ReaderInput(analysis.vectors[listed], analysis.point_same[listed], analysis.misc_same[listed])


def reader_features(
    card: Card, index: CardIndex, read: ReaderInput, reader: SentenceReader | None
) -> tuple[np.ndarray, np.ndarray]:
    """(points, READER_POINT_FEATURES) and (misconceptions, READER_MISC_FEATURES); NaN
    without a ``reader``."""
    n_points, n_misc = len(card.key_points), len(card.misconceptions)
    if reader is None:
        return np.full((n_points, 2), np.nan), np.full((n_misc, 1), np.nan)
    units, same_points, same_misc = read
    stated = reader.points.probabilities(
        card.id, [p.id for p in card.key_points], index.points.vectors, index.points.target, units, same_points
    )
    others = np.asarray([np.delete(stated, k).max() if n_points > 1 else 0.0 for k in range(n_points)])
    asserted = reader.misconceptions.probabilities(
        card.id,
        [m.id for m in card.misconceptions],
        index.misconceptions.vectors,
        index.misconceptions.target,
        units,
        same_misc,
    )
    return np.column_stack([stated, stated - others]), asserted[:, None]


def claim_vectors(analysis: Analysis) -> tuple[np.ndarray | None, np.ndarray]:
    """How an answer meets the exemplars: the normalised mean of its usable units (None when
    there are none) and their vectors."""
    unit_vectors = analysis.vectors[analysis.usable]
    if not len(unit_vectors):
        return None, unit_vectors
    return _normalised(unit_vectors.mean(axis=0)), unit_vectors


def exemplar_vectors(
    card: Card, index: CardIndex, answer: str, analysis: Analysis | None = None
) -> tuple[np.ndarray | None, list[np.ndarray]]:
    """An exemplar read as the judge reads an answer: its vector and its claim units' vectors."""
    whole, unit_vectors = claim_vectors(analysis or analyse(card, index, answer))
    return (whole, list(unit_vectors)) if whole is not None else (None, [])


def exemplar_reading(card: Card) -> tuple[str, Callable[[str], tuple[np.ndarray | None, list[np.ndarray]]]]:
    """The card's version and how its exemplars are read (``grader.calibration.store_exemplars``)."""
    index = card_index(card)
    return index.version, lambda text: exemplar_vectors(card, index, text)
