"""How the offline judge reads an answer against a card: the per-card phrasings (``card_index``),
the analysis of an answer (``analyse``), the evidence and features the learnt reading reads
(``evidence``, ``features``), and the hand rules' decision (``decide``). ``grader.offline.judge``
holds the learnt reading and the judge around it; ``grader.offline.followup`` reads a follow-up answer
with these same functions, so they sit below both. ``grader.offline.judge`` describes the whole reading.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from grader.base import Judgement, MisconceptionJudgement, PointJudgement, PointVerdict
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

# ----- per-card phrasings, embedded once per card version ---------------------------------------


@dataclass(frozen=True)
class Phrasings:
    """Reference sentences, each tied to a target (a key point or misconception index)."""

    texts: tuple[str, ...]
    target: np.ndarray  # int index of the key point / misconception
    lexicons: tuple[Lexicon, ...]
    vectors: np.ndarray  # (n, d) unit vectors


@dataclass(frozen=True)
class CardIndex:
    card_id: str
    version: str
    points: Phrasings
    misconceptions: Phrasings
    opposites: Phrasings  # per key point, the claims that say its reverse
    injection: np.ndarray  # prototype vectors
    expert: np.ndarray  # whole expert answers and key points, for the answer's overall stance
    trap: np.ndarray  # the trap, the trap answers and the misconceptions, likewise
    accepts: tuple[tuple[Tokens, ...], ...] = ()  # per key point, its accepted phrasings
    asserts: tuple[tuple[Tokens, ...], ...] = ()  # per misconception, its phrasings


def _phrases_of(text: str, *, with_clauses: bool = True) -> list[str]:
    """A reference text as itself plus its sentences (and clauses), each long enough to be a claim.

    Misconceptions keep whole sentences only: "the reward is climbing, so the model is getting
    better" is wrong as a whole, while its first clause alone is merely the question's premise."""
    found = [" ".join(text.split())]
    for sentence in sentences(text):
        found.append(sentence.text)
        if with_clauses:
            found.extend(clause.text for clause in clauses(text, sentence))
    unique = []
    for phrase in found:
        if word_count(phrase) >= 4 and phrase not in unique:
            unique.append(phrase)
    return unique


def build_index(
    card: Card, *, assign_threshold: float = 0.45, assign_margin: float = 0.05
) -> CardIndex:
    """Embed the card's phrasings. Clauses of the expert answers join the key point they are
    clearly nearest to, sentences of the trap answers their nearest misconception; pieces
    that sit between two targets are left out."""
    point_texts: list[str] = []
    point_target: list[int] = []
    for index, point in enumerate(card.key_points):
        for phrase in _phrases_of(point.text):
            point_texts.append(phrase)
            point_target.append(index)
    misc_texts: list[str] = []
    misc_target: list[int] = []
    for index, misconception in enumerate(card.misconceptions):
        for phrase in _phrases_of(misconception.text, with_clauses=False):
            misc_texts.append(phrase)
            misc_target.append(index)
    point_vectors = embed(point_texts)
    misc_vectors = embed(misc_texts)

    def assign(
        candidates: list[str], vectors: np.ndarray, targets: list[int]
    ) -> list[tuple[str, int]]:
        if not candidates:
            return []
        sims = embed(candidates) @ vectors.T
        chosen = []
        target_ids = np.asarray(targets)
        for row, text in zip(sims, candidates, strict=True):
            per_target = np.asarray([row[target_ids == t].max() for t in sorted(set(targets))])
            order = np.argsort(per_target)[::-1]
            runner_up = per_target[order[1]] if len(order) > 1 else -1.0
            if (
                per_target[order[0]] >= assign_threshold
                and per_target[order[0]] - runner_up >= assign_margin
            ):
                chosen.append((text, sorted(set(targets))[int(order[0])]))
        return chosen

    expert = [a.text for a in card.reference_answers if a.kind == "expert"]
    trap = [card.trap] + [a.text for a in card.reference_answers if a.kind == "trap"]
    extra_points = assign(_claims_in(expert, with_clauses=True), point_vectors, point_target)
    extra_misc = assign(_claims_in(trap, with_clauses=False), misc_vectors, misc_target)
    point_texts += [text for text, _ in extra_points]
    point_target += [target for _, target in extra_points]
    misc_texts += [text for text, _ in extra_misc]
    misc_target += [target for _, target in extra_misc]
    # Accepted phrasings of three words or more are paraphrases: they join the embedded ones.
    for index, point in enumerate(card.key_points):
        for phrase in point.accepts:
            if word_count(phrase) >= 3 and phrase not in point_texts:
                point_texts.append(phrase)
                point_target.append(index)
    for index, misconception in enumerate(card.misconceptions):
        for phrase in misconception.phrasings:
            if word_count(phrase) >= 3 and phrase not in misc_texts:
                misc_texts.append(phrase)
                misc_target.append(index)
    return CardIndex(
        card_id=card.id,
        version=card.version,
        points=_phrasings(point_texts, point_target),
        misconceptions=_phrasings(misc_texts, misc_target),
        opposites=_phrasings(
            [o for p in card.key_points for o in p.opposites],
            [k for k, p in enumerate(card.key_points) for _ in p.opposites],
        ),
        injection=_prototype_vectors(),
        expert=embed(expert + [" ".join(p.text.split()) for p in card.key_points]),
        trap=embed(trap + [m.text for m in card.misconceptions]),
        accepts=tuple(tuple(scoped_tokens(a) for a in p.accepts) for p in card.key_points),
        asserts=tuple(tuple(scoped_tokens(a) for a in m.phrasings) for m in card.misconceptions),
    )


_PROTOTYPES: np.ndarray | None = None


def _prototype_vectors() -> np.ndarray:
    global _PROTOTYPES
    if _PROTOTYPES is None:
        _PROTOTYPES = embed(INJECTION_PROTOTYPES)
    return _PROTOTYPES


def _claims_in(texts: Iterable[str], *, with_clauses: bool) -> list[str]:
    """Claims of reference answers: their clauses (or, without ``with_clauses``, sentences)."""
    found: list[str] = []
    for text in texts:
        for sentence in sentences(text):
            for piece in clauses(text, sentence) if with_clauses else [sentence]:
                if is_claim(piece.text) and piece.text not in found:
                    found.append(piece.text)
    return found


def _phrasings(texts: list[str], targets: list[int]) -> Phrasings:
    return Phrasings(
        texts=tuple(texts),
        target=np.asarray(targets, dtype=np.int64),
        lexicons=tuple(lexicon(text) for text in texts),
        vectors=embed(texts),
    )


# ----- reading one answer ----------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    span: Span
    is_clause: bool  # a clause (negation is scoped to it) rather than a whole sentence
    claim: bool
    lexicon: Lexicon
    injection_pattern: bool  # matches one of INJECTION_PATTERNS
    injection_similarity: float  # best cosine to INJECTION_PROTOTYPES
    tokens: Tokens = Tokens((), ())  # noqa: RUF009 - a frozen dataclass

    def instructs(self, threshold: float) -> bool:
        """Flagged as instructions to the grader: a pattern, or this close to a prototype and
        speaking to the grader."""
        if self.injection_pattern:
            return True
        return self.injection_similarity >= threshold and addresses_grader(self.span.text)


@dataclass(frozen=True)
class Analysis:
    """The similarities between an answer's units and a card's phrasings; no decisions yet."""

    answer: str
    units: tuple[Unit, ...]
    point_sims: np.ndarray  # (units, point phrasings)
    misc_sims: np.ndarray  # (units, misconception phrasings)
    point_same: np.ndarray  # (units, point phrasings): same polarity
    misc_same: np.ndarray
    opposite_sims: np.ndarray  # (units, opposite claims of the key points)
    opposite_same: np.ndarray
    stance: float  # closeness of the whole answer to the trap minus closeness to the expert key
    injection_found: tuple[str, ...]
    answer_vector: np.ndarray | None = None  # the normalised mean of the claim clauses
    vectors: np.ndarray | None = None  # (units, d) each unit's vector


@dataclass(frozen=True)
class OfflineParams:
    """Thresholds on cosine similarity; tuned on the calibration set's tuning split."""

    present: float = 0.62
    partial: float = 0.42
    contradicted: float = 0.60
    contradiction_margin: float = 0.03
    misconception: float = 0.65
    misconception_margin: float = 0.10  # how much closer to the trap than to any key point
    misconception_min_words: int = 8  # shorter units embed too vaguely to convict
    trap_stance: float = 0.0  # an answer whose stance exceeds this leans to the trap, and then:
    trap_margin: float = 0.0  # ... the margin to convict a unit of a misconception
    trap_evidence_gap: float = 0.15  # ... and a unit this close to the trap is no evidence
    expert_stance: float = -0.12  # an answer whose stance is below this leans to the key, and then:
    expert_margin: float = 0.20  # ... the margin to convict a unit of a misconception
    exclusive_gap: float = 0.03  # a unit proves a point only if it is within this of its best point
    partial_gap: float = 0.10  # ... and gives partial credit only within this
    injection: float = 0.62
    use_accepts: bool = True  # accepted phrasings found in the answer are evidence
    list_items: int = 5  # a list of terms with more items than this is stuffing: no evidence
    embedded_contradiction: bool = True  # a close match of opposite sign contradicts a point


def list_items(text: str) -> int:
    """How many comma- or slash-separated items a unit has."""
    return len([item for item in re.split(r"[,/|;]|\band\b", text) if item.strip()])


def lexical_hits(
    index: CardIndex, units: Sequence[Unit], usable: np.ndarray, params: OfflineParams
) -> tuple[np.ndarray, np.ndarray]:
    """Accepted phrasings found in each unit: (units, points) and (units, misconceptions), +1
    stated, -1 stated under a negation, 0 absent. A unit that is a long list of terms (keyword
    stuffing) and units flagged as instructions find nothing."""
    return (
        phrase_hits(units, usable, index.accepts, params),
        phrase_hits(units, usable, index.asserts, params),
    )


def phrase_hits(
    units: Sequence[Unit],
    usable: np.ndarray,
    targets: Sequence[Sequence[Tokens]],
    params: OfflineParams,
) -> np.ndarray:
    """(units, targets): +1 when a unit says one of the target's phrasings, -1 when it says one
    only under a negation, 0 otherwise (see ``lexical_hits``)."""
    found = np.zeros((len(units), len(targets)), dtype=np.int8)
    if not params.use_accepts:
        return found
    for row, unit in enumerate(units):
        if not usable[row] or (not unit.claim and list_items(unit.span.text) > params.list_items):
            continue
        for column, phrases in enumerate(targets):
            hits = [phrase_hit(unit.tokens, phrase) for phrase in phrases]
            found[row, column] = 1 if 1 in hits else -1 if -1 in hits else 0
    return found


def analyse(card: Card, index: CardIndex, answer: str) -> Analysis:
    """Cut ``answer`` into units and compare each with every phrasing of the card."""
    answer = answer[:MAX_ANSWER_CHARS]
    point_ids = [point.id for point in card.key_points]
    found = tuple(injection_matches(answer, point_ids))
    spans: list[tuple[Span, bool]] = []
    members: list[list[int]] = []  # for a sentence unit, the rows of its clauses
    for sentence in sentences(answer):
        parts = clauses(answer, sentence)
        first = len(spans)
        spans.extend((part, True) for part in parts)
        members.extend([row] for row in range(first, len(spans)))
        if len(parts) > 1:
            spans.append((sentence, False))
            members.append(list(range(first, first + len(parts))))
    # Only clauses go through the model (it is nearly all of the time spent); a sentence's
    # vector is the normalised mean of its clauses' vectors.
    clause_rows = [row for row, (_, is_clause) in enumerate(spans) if is_clause]
    clause_vectors = embed([spans[row][0].text for row in clause_rows])
    position = {row: i for i, row in enumerate(clause_rows)}
    vectors = np.zeros(
        (len(spans), clause_vectors.shape[1] if len(clause_rows) else 384), dtype=np.float32
    )
    for row, rows in enumerate(members):
        mean = clause_vectors[[position[r] for r in rows]].mean(axis=0)
        norm = float(np.linalg.norm(mean))
        vectors[row] = mean / norm if norm else mean
    texts = [span.text for span, _ in spans]
    injection_sims = vectors @ index.injection.T if len(texts) else np.zeros((0, 1))
    units = tuple(
        Unit(
            span=span,
            is_clause=is_clause,
            claim=is_claim(span.text),
            lexicon=lexicon(span.text),
            # A pattern that fires on a unit fires on the whole answer (units are substrings
            # cut at word edges), so clean answers skip the per-unit scan.
            injection_pattern=bool(found) and bool(injection_matches(span.text, point_ids)),
            injection_similarity=float(injection_sims[row].max()),
            tokens=scoped_tokens(span.text),
        )
        for row, (span, is_clause) in enumerate(spans)
    )
    return Analysis(
        answer=answer,
        units=units,
        point_sims=vectors @ index.points.vectors.T
        if len(texts)
        else np.zeros((0, len(index.points.texts))),
        misc_sims=vectors @ index.misconceptions.vectors.T
        if len(texts)
        else np.zeros((0, len(index.misconceptions.texts))),
        point_same=_same_polarity(units, index.points),
        misc_same=_same_polarity(units, index.misconceptions),
        opposite_sims=vectors @ index.opposites.vectors.T
        if len(texts)
        else np.zeros((0, len(index.opposites.texts))),
        opposite_same=_same_polarity(units, index.opposites),
        stance=_stance(vectors, units, index),
        injection_found=found,
        answer_vector=_mean_vector(vectors, units),
        vectors=vectors,
    )


def _mean_vector(vectors: np.ndarray, units: Sequence[Unit]) -> np.ndarray | None:
    rows = [i for i, unit in enumerate(units) if unit.is_clause]
    if not rows:
        return None
    mean = vectors[rows].mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm else None


def _stance(vectors: np.ndarray, units: Sequence[Unit], index: CardIndex) -> float:
    """How much closer the answer as a whole (the mean of its claim clauses) is to the trap than
    to the expert key; positive leans to the trap."""
    rows = [i for i, unit in enumerate(units) if unit.claim and unit.is_clause]
    if not rows:
        return 0.0
    mean = vectors[rows].mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if norm == 0.0:
        return 0.0
    mean = mean / norm
    return float((index.trap @ mean).max() - (index.expert @ mean).max())


def _same_polarity(units: Sequence[Unit], phrasings: Phrasings) -> np.ndarray:
    return np.asarray(
        [[same_polarity(unit.lexicon, phrase) for phrase in phrasings.lexicons] for unit in units],
        dtype=bool,
    ).reshape(len(units), len(phrasings.lexicons))


def _by_target(
    sims: np.ndarray, phrasings: Phrasings, targets: int, match: np.ndarray
) -> np.ndarray:
    """Best similarity per (unit, target) over the phrasings ``match`` allows."""
    best = np.full((sims.shape[0], targets), -1.0)
    if not sims.size:
        return best
    masked = np.where(match, sims, -1.0)
    for target in range(targets):
        columns = phrasings.target == target
        if columns.any():
            best[:, target] = masked[:, columns].max(axis=1)
    return best


POINT_FEATURES = (
    "support_any",  # best same-sign similarity of any unit (claims or not) to the point
    "support_claim",  # ... of a unit that reads as a claim
    "support_focused",  # ... of a unit whose best point this is (within exclusive_gap)
    "similarity_raw",  # best similarity ignoring sign
    "said",  # an accepted phrasing occurs, same sign
    "denied",  # an accepted phrasing occurs under a negation
    "stem_cover",  # best share of an accepted phrasing's stems found in one unit, any order
    "answer_similarity",  # the whole answer's vector against the point's phrasings
    "trap_lean_of_best",  # in the unit most like the point: misconception similarity - support
    "stance",  # the answer's lean to the trap (+) or the key (-)
    "asserts_any",  # some unit asserts a misconception (the rules' reading)
    "opposed_any",  # best opposite-sign similarity of a claim to the point
    "nearest_opposed",  # its closest match says the opposite (opposed beats support by the margin)
    "answer_words",  # log(1 + words in the answer): a terse answer's weaker match can be complete
    "against_any",  # best same-sign similarity of a claim to the point's opposites (its reverse)
    "against_margin",  # ... minus that claim's support for the point
)
MISCONCEPTION_FEATURES = (
    "misc_any",  # best same-sign similarity of a unit to the misconception
    "misc_margin",  # ... minus that unit's best key-point similarity
    "misc_said",  # one of its phrasings occurs, same sign
    "misc_denied",  # ... under a negation
    "misc_stem_cover",  # best share of a phrasing's stems in one unit
    "stance",
    "key_cover",  # how much of the key the answer covers (mean of the points' support_any)
    "misc_nearest_negated",  # the unit most like it has the other polarity ("X does not fix it")
    "misc_rejected",  # ... or calls something wrong, a myth, the trap, not enough
    "misc_framed",  # ... or is quoted, framed as what others say, or rebutted by the next sentence
    "misc_answer_words",  # as answer_words
)
_REJECTION = re.compile(
    r"\b(wrong|myth|mistaken?|misconception|trap|fallacy|not enough|insufficient|"
    r"doesn'?t|does not|won'?t|will not|isn'?t|is not|cannot|can'?t|fails? to|no longer|"
    r"rather than|instead of|common answer|tempting|naive|naively)\b",
    re.IGNORECASE,
)
#: The sentence reader's (``grader.offline.reader``): P(some sentence states the point), and
#: that less the best P of the card's other points (one sentence proves one thing).
READER_POINT_FEATURES = ("reader_point", "reader_margin")
READER_MISC_FEATURES = ("reader_asserted",)
#: Below this P from the sentence reader, a credit whose closest match says the opposite is
#: taken back (``decide_learnt``); 0.1 to 0.5 cross-fitted within 0.0006 of each other.
READER_DENIAL_CUT = 0.5
#: Every feature ``features`` returns; a fitted model names the ones it reads.
ALL_POINT_FEATURES = (
    POINT_FEATURES + VOTE_FEATURES + POINT_CONTRAST_FEATURES + READER_POINT_FEATURES
)
ALL_MISCONCEPTION_FEATURES = (
    MISCONCEPTION_FEATURES
    + tuple(f"misc_{name}" for name in VOTE_FEATURES)
    + MISC_CONTRAST_FEATURES
    + READER_MISC_FEATURES
)
READER_FEATURES = frozenset((*READER_POINT_FEATURES, *READER_MISC_FEATURES))
#: The features read from the card's labelled answers (``grader.offline.exemplars``).
EXEMPLAR_FEATURES = frozenset(
    (
        *VOTE_FEATURES,
        *(f"misc_{name}" for name in VOTE_FEATURES),
        *POINT_CONTRAST_FEATURES,
        *MISC_CONTRAST_FEATURES,
    )
)


@dataclass(frozen=True)
class Evidence:
    """What ``decide`` reads, per unit and target; also the features of the learnt reading."""

    support: np.ndarray  # (units, points) same-sign similarity
    opposed: np.ndarray  # (units, points) opposite-sign similarity
    misc: np.ndarray  # (units, misconceptions)
    usable: np.ndarray  # (units,) a claim not flagged as instructions
    listed: np.ndarray  # (units,) not flagged as instructions
    point_hits: np.ndarray  # (units, points) +1 / -1 / 0
    misc_hits: np.ndarray  # (units, misconceptions)
    stated: np.ndarray  # (units,) a claim or a short list, flagged or not: what can assert
    point_cover: np.ndarray  # (units, points) stem cover of the best accepted phrasing
    misc_cover: np.ndarray  # (units, misconceptions)
    against: np.ndarray  # (units, points) same-sign similarity to the point's opposites


def _stem_cover(unit: Tokens, phrases: Sequence[Tokens]) -> float:
    """Best share of a phrasing's stems found in ``unit`` in any order, counting a stem only
    when it has the same sign in both (a negated "keeps" does not cover "keeps")."""
    affirmed = {s for s, negated in zip(unit.stems, unit.negated, strict=True) if not negated}
    denied = {s for s, negated in zip(unit.stems, unit.negated, strict=True) if negated}
    best = 0.0
    for phrase in phrases:
        present = denied if any(phrase.negated) else affirmed
        stems = set(phrase.stems)
        if len(stems) >= 2:
            best = max(best, len(stems & present) / len(stems))
    return best


def evidence(card: Card, index: CardIndex, analysis: Analysis, params: OfflineParams) -> Evidence:
    units = analysis.units
    n_points, n_misc = len(card.key_points), len(card.misconceptions)
    # Evidence comes from claims and short lists ("covariate shift, errors compound"), never
    # from a long list of terms (keyword stuffing) or a unit flagged as instructions.
    listed = np.asarray(
        [
            not u.instructs(params.injection)
            and (u.claim or list_items(u.span.text) <= params.list_items)
            for u in units
        ],
        dtype=bool,
    )
    usable = np.asarray([u.claim for u in units], dtype=bool) & listed
    # A misconception is asserted wherever it is said: an instruction to the grader beside the
    # trap does not take the trap back.
    stated = np.asarray(
        [u.claim or list_items(u.span.text) <= params.list_items for u in units], dtype=bool
    )
    point_hits = phrase_hits(units, listed, index.accepts, params)
    misc_hits = phrase_hits(units, stated, index.asserts, params)
    point_cover = np.asarray(
        [
            [_stem_cover(u.tokens, phrases) if listed[i] else 0.0 for phrases in index.accepts]
            for i, u in enumerate(units)
        ],
        dtype=float,
    ).reshape(len(units), len(index.accepts))
    misc_cover = np.asarray(
        [
            [_stem_cover(u.tokens, phrases) if stated[i] else 0.0 for phrases in index.asserts]
            for i, u in enumerate(units)
        ],
        dtype=float,
    ).reshape(len(units), len(index.asserts))
    return Evidence(
        support=_by_target(analysis.point_sims, index.points, n_points, analysis.point_same),
        opposed=_by_target(analysis.point_sims, index.points, n_points, ~analysis.point_same),
        misc=_by_target(analysis.misc_sims, index.misconceptions, n_misc, analysis.misc_same),
        usable=usable,
        listed=listed,
        point_hits=point_hits,
        misc_hits=misc_hits,
        stated=stated,
        point_cover=point_cover,
        misc_cover=misc_cover,
        against=_by_target(
            analysis.opposite_sims, index.opposites, n_points, analysis.opposite_same
        ),
    )


def _masked_max(values: np.ndarray, mask: np.ndarray, empty: float = -1.0) -> float:
    return float(values[mask].max()) if mask.any() else empty


def features(
    card: Card,
    index: CardIndex,
    analysis: Analysis,
    params: OfflineParams,
    rules: Judgement,
    ev: Evidence | None = None,
    exemplars: Exemplars | None = None,
    reader: SentenceReader | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per key point and per misconception, the features named in ALL_POINT_FEATURES and
    ALL_MISCONCEPTION_FEATURES (card-agnostic, so a model fitted on some cards reads others);
    ``ev`` when the caller already has the evidence; the reader's columns are NaN without a
    ``reader``."""
    ev = ev if ev is not None else evidence(card, index, analysis, params)
    n_units = len(analysis.units)
    n_points, n_misc = len(card.key_points), len(card.misconceptions)
    asserts_any = float(any(m.asserted for m in rules.misconceptions))
    answer_words = math.log1p(len(words(analysis.answer)))
    raw = _by_target(analysis.point_sims, index.points, n_points, np.ones_like(analysis.point_same))
    best_point = ev.support.max(axis=1) if n_units and n_points else np.zeros(n_units)
    answer_vector = analysis.answer_vector
    points = np.zeros((n_points, len(POINT_FEATURES)))
    for k in range(n_points):
        column = ev.support[:, k] if n_units else np.zeros(0)
        focused = (
            ev.listed & (column >= best_point - params.exclusive_gap) if n_units else ev.listed
        )
        best_unit = int(np.where(ev.listed, column, -2).argmax()) if n_units else 0
        trap_lean = (
            float(ev.misc[best_unit].max() - column[best_unit]) if n_units and n_misc else -1.0
        )
        phrasing_columns = index.points.target == k
        answer_sim = (
            float((index.points.vectors[phrasing_columns] @ answer_vector).max())
            if phrasing_columns.any() and answer_vector is not None
            else 0.0
        )
        support_any = _masked_max(column, ev.listed)
        opposed_any = _masked_max(ev.opposed[:, k], ev.usable) if n_units else -1.0
        points[k] = (
            support_any,
            _masked_max(column, ev.usable),
            _masked_max(column, focused),
            _masked_max(raw[:, k], ev.listed) if n_units else -1.0,
            float((ev.point_hits[:, k] == 1).any()) if n_units else 0.0,
            float((ev.point_hits[:, k] == -1).any()) if n_units else 0.0,
            float(ev.point_cover[:, k].max()) if n_units else 0.0,
            answer_sim,
            trap_lean,
            analysis.stance,
            asserts_any,
            opposed_any,
            float(n_units > 0 and opposed_any >= support_any + params.contradiction_margin),
            answer_words,
            *_against(ev, k),
        )
    key_cover = float(points[:, 0].mean()) if n_points else 0.0
    misconceptions = np.zeros((n_misc, len(MISCONCEPTION_FEATURES)))
    for m in range(n_misc):
        column = ev.misc[:, m] if n_units else np.zeros(0)
        misconceptions[m] = (
            _masked_max(column, ev.stated),
            _masked_max(column - best_point, ev.stated) if n_units else -2.0,
            float((ev.misc_hits[:, m] == 1).any()) if n_units else 0.0,
            float((ev.misc_hits[:, m] == -1).any()) if n_units else 0.0,
            float(ev.misc_cover[:, m].max()) if n_units else 0.0,
            analysis.stance,
            key_cover,
            *_rejection_features(card, analysis, ev, m),
            answer_words,
        )
    point_votes, misc_votes = answer_votes(analysis, ev.usable, exemplars, n_points, n_misc)
    point_read, misc_read = reader_features(card, index, reader_input(analysis, ev), reader)
    return np.hstack([points, point_votes, point_read]), np.hstack(
        [misconceptions, misc_votes, misc_read]
    )


@dataclass(frozen=True)
class ReaderInput:
    """What the sentence reader reads of an answer: the vectors of the units not flagged as
    instructions and not a long list of terms (``Evidence.listed``), and which of their pairs
    with the card's phrasings have the same polarity."""

    units: np.ndarray  # (units, d)
    point_same: np.ndarray  # (units, point phrasings)
    misc_same: np.ndarray  # (units, misconception phrasings)


def reader_input(analysis: Analysis, ev: Evidence) -> ReaderInput:
    if analysis.vectors is None or not len(analysis.vectors):
        return ReaderInput(
            np.zeros((0, 384), dtype=np.float32),
            np.zeros((0, analysis.point_same.shape[1]), dtype=bool),
            np.zeros((0, analysis.misc_same.shape[1]), dtype=bool),
        )
    return ReaderInput(
        analysis.vectors[ev.listed], analysis.point_same[ev.listed], analysis.misc_same[ev.listed]
    )


def reader_features(
    card: Card, index: CardIndex, read: ReaderInput, reader: SentenceReader | None
) -> tuple[np.ndarray, np.ndarray]:
    """(points, READER_POINT_FEATURES) and (misconceptions, READER_MISC_FEATURES)."""
    n_points, n_misc = len(card.key_points), len(card.misconceptions)
    if reader is None:
        return (
            np.full((n_points, len(READER_POINT_FEATURES)), np.nan),
            np.full((n_misc, len(READER_MISC_FEATURES)), np.nan),
        )
    stated = reader.points.probabilities(
        card.id,
        [p.id for p in card.key_points],
        index.points.vectors,
        index.points.target,
        read.units,
        read.point_same,
    )
    others = np.asarray(
        [np.delete(stated, k).max() if n_points > 1 else 0.0 for k in range(n_points)]
    )
    asserted = reader.misconceptions.probabilities(
        card.id,
        [m.id for m in card.misconceptions],
        index.misconceptions.vectors,
        index.misconceptions.target,
        read.units,
        read.misc_same,
    )
    return np.column_stack([stated, stated - others]), asserted[:, None]


def _against(ev: Evidence, k: int) -> tuple[float, float]:
    """How closely a claim of the answer says the reverse of point ``k``, and by how much more
    than it says the point."""
    if not ev.usable.any():
        return -1.0, -2.0
    column = np.where(ev.usable, ev.against[:, k], -2.0)
    row = int(column.argmax())
    return float(column[row]), float(column[row] - ev.support[row, k])


def _rejection_features(
    card: Card, analysis: Analysis, ev: Evidence, m: int
) -> tuple[float, float, float]:
    """Whether the unit most like misconception ``m`` says it negated, rejects something, or
    is reported rather than asserted (``reported``)."""
    if not len(analysis.units) or not ev.stated.any():
        return 0.0, 0.0, 0.0
    row = int(np.where(ev.stated, ev.misc[:, m], -2.0).argmax())
    unit = analysis.units[row]
    negated = unit.lexicon.polarity != polarity(card.misconceptions[m].text)
    return (
        float(negated),
        float(bool(_REJECTION.search(unit.span.text))),
        float(reported(analysis.answer, unit.span)),
    )


#: What others say, before the claim in its sentence: "the usual answer is", "it's tempting
#: to say", "people think".
_FRAMING = re.compile(
    r"\b(?:(?:usual|common|tempting|obvious|naive|reflex|standard|textbook|stock|typical|first|easy)"
    r"\s+(?:\w+\s+)?(?:answer|reply|response|reaction|fix|instinct|take|story|explanation|claim)"
    r"|tempting to (?:say|think|blame|answer)|people (?:often |usually )?(?:say|think|claim|assume|blame)"
    r"|(?:one|you) might (?:think|say|expect)|the trap is|it'?s easy to (?:say|think|blame)"
    r"|(?:many|most) candidates)\b",
    re.IGNORECASE,
)
#: A rebuttal opening the next sentence: "That's not it.", "Both halves are wrong."
_REBUTTAL = re.compile(
    r"^\W*(?:(?:that|this|it|which|both(?: halves| parts)?|neither)(?:'s| is| are)?\s+"
    r"(?:not (?:it|right|true|the (?:reason|cause|problem|issue))|wrong|false|mistaken|incorrect|a myth|the trap|backwards)"
    r"|wrong\b|nope\b|not quite\b|not so\b)",
    re.IGNORECASE,
)
_QUOTES = re.compile(r"[\"“”]")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?:\s|$)|\n")


def reported(answer: str, span: Span) -> bool:
    """Whether the claim at ``span`` is reported rather than asserted: inside quotation marks,
    after a framing such as "the usual answer is" in its own sentence, or rebutted by the
    sentence after it."""
    before = answer[: span.start]
    if len(_QUOTES.findall(before)) % 2 == 1:
        return True
    own_sentence = _SENTENCE_END.split(before[-200:])[-1]
    if _FRAMING.search(own_sentence + span.text[:80]):
        return True
    after = answer[span.end :]
    end = _SENTENCE_END.search(after)
    following = after[end.end() :] if end else ""
    return bool(_REBUTTAL.match(following[:80]))


def claim_vectors(analysis: Analysis, usable: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """The vectors of the ``usable`` units (claims, not instructions to the grader) and their
    normalised mean, None when there are none: how an answer meets the exemplars."""
    vectors = analysis.vectors if analysis.vectors is not None else np.zeros((0, 384))
    unit_vectors = vectors[usable] if len(vectors) else vectors
    if not len(unit_vectors):
        return None, unit_vectors
    mean = unit_vectors.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / norm if norm else None), unit_vectors


def answer_votes(
    analysis: Analysis, usable: np.ndarray, exemplars: Exemplars | None, n_points: int, n_misc: int
) -> tuple[np.ndarray, np.ndarray]:
    """The exemplars' votes and contrasts (``grader.offline.exemplars``) for this answer."""
    whole, unit_vectors = claim_vectors(analysis, usable)
    point_votes, misc_votes = votes(exemplars, whole, unit_vectors, n_points, n_misc)
    point_contrasts, misc_contrasts = contrasts(exemplars, unit_vectors, n_points, n_misc)
    return np.hstack([point_votes, point_contrasts]), np.hstack([misc_votes, misc_contrasts])


def exemplar_vectors(
    card: Card, index: CardIndex, answer: str, analysis: Analysis | None = None
) -> tuple[np.ndarray | None, list[np.ndarray]]:
    """An exemplar read as the judge reads an answer: its vector and its claim units' vectors."""
    analysis = analysis or analyse(card, index, answer)
    whole, unit_vectors = claim_vectors(
        analysis, evidence(card, index, analysis, OfflineParams()).usable
    )
    return (whole, list(unit_vectors)) if whole is not None else (None, [])


def exemplar_reading(
    card: Card,
) -> tuple[str, Callable[[str], tuple[np.ndarray | None, list[np.ndarray]]]]:
    """The card's version and how its exemplars are read (``grader.calibration.store_exemplars.store``)."""
    index = card_index(card)
    return index.version, lambda text: exemplar_vectors(card, index, text)


def decide(card: Card, index: CardIndex, analysis: Analysis, params: OfflineParams) -> Judgement:
    """Per-point verdicts and asserted misconceptions from the similarities."""
    units = analysis.units
    n_points, n_misc = len(card.key_points), len(card.misconceptions)
    injected_units = np.asarray([unit.instructs(params.injection) for unit in units], dtype=bool)
    usable = np.asarray([unit.claim for unit in units], dtype=bool) & ~injected_units
    clause = np.asarray([unit.is_clause for unit in units], dtype=bool)
    support = _by_target(analysis.point_sims, index.points, n_points, analysis.point_same)
    opposed = _by_target(analysis.point_sims, index.points, n_points, ~analysis.point_same)
    misc = _by_target(analysis.misc_sims, index.misconceptions, n_misc, analysis.misc_same)

    best_point = support.max(axis=1) if n_points and len(units) else np.zeros(len(units))
    best_misc = misc.max(axis=1) if n_misc and len(units) else np.full(len(units), -1.0)
    leans_to_trap = analysis.stance > params.trap_stance
    margin = params.misconception_margin
    if leans_to_trap:
        margin = params.trap_margin
    elif analysis.stance < params.expert_stance:
        margin = params.expert_margin
    long_enough = np.asarray(
        [word_count(u.span.text) >= params.misconception_min_words for u in units], dtype=bool
    )
    asserting = np.zeros((len(units), n_misc), dtype=bool)
    if len(units) and n_misc:
        asserting = (
            (usable & long_enough)[:, None]
            & (misc >= params.misconception)
            & (misc - best_point[:, None] >= margin)
        )
    listed = ~injected_units
    point_hits, misc_hits = lexical_hits(index, units, listed, params)
    if len(units) and n_misc:
        asserting |= misc_hits == 1
    evidence = usable & ~asserting.any(axis=1)
    if leans_to_trap:
        evidence &= best_misc < best_point - params.trap_evidence_gap
    # A unit that asserts a misconception proves no point, even in the key's words.
    stated = (point_hits == 1) & ~asserting.any(axis=1)[:, None] if len(units) else point_hits == 1

    points = []
    for k, point in enumerate(card.key_points):
        column = np.where(evidence, support[:, k], -1.0) if len(units) else np.array([-1.0])
        # One sentence about point A often resembles point B too; it proves only what it is closest to.
        focused = (
            np.where(support[:, k] >= best_point - params.exclusive_gap, column, -1.0)
            if len(units)
            else column
        )
        proof_unit = int(focused.argmax())
        proof = float(focused[proof_unit])
        column = (
            np.where(support[:, k] >= best_point - params.partial_gap, column, -1.0)
            if len(units)
            else column
        )
        best_unit = int(column.argmax())
        best = float(column[best_unit])
        against = np.where(usable & clause, opposed[:, k], -1.0) if len(units) else np.array([-1.0])
        worst_unit = int(against.argmax())
        worst = float(against[worst_unit])
        said = np.flatnonzero(stated[:, k]) if len(units) else []
        denied = np.flatnonzero(point_hits[:, k] == -1) if len(units) else []
        if len(said):
            shortest = min(said, key=lambda row: len(units[row].span.text))
            points.append(PointJudgement(point.id, PointVerdict.PRESENT, units[shortest].span.text))
        elif proof >= params.present:
            points.append(
                PointJudgement(point.id, PointVerdict.PRESENT, units[proof_unit].span.text)
            )
        elif len(denied) and best < params.present:
            points.append(
                PointJudgement(point.id, PointVerdict.CONTRADICTED, units[denied[0]].span.text)
            )
        elif (
            params.embedded_contradiction
            and worst >= params.contradicted
            and worst >= best + params.contradiction_margin
        ):
            points.append(
                PointJudgement(point.id, PointVerdict.CONTRADICTED, units[worst_unit].span.text)
            )
        elif best >= params.partial:
            points.append(
                PointJudgement(point.id, PointVerdict.PARTIAL, units[best_unit].span.text)
            )
        else:
            points.append(PointJudgement(point.id, PointVerdict.ABSENT))
    misconceptions = []
    for m, misconception in enumerate(card.misconceptions):
        rows = np.flatnonzero(asserting[:, m]) if len(units) else []
        if len(rows):
            row = int(rows[np.argmax(misc[rows, m] + 2 * (misc_hits[rows, m] == 1))])
            misconceptions.append(
                MisconceptionJudgement(misconception.id, True, units[row].span.text)
            )
        else:
            misconceptions.append(MisconceptionJudgement(misconception.id, False))
    injected = bool(analysis.injection_found) or bool(injected_units.any())
    judgement = Judgement(
        judge="offline",
        points=tuple(points),
        misconceptions=tuple(misconceptions),
        injection_suspected=injected,
    )
    return replace(judgement, feedback=feedback_for(card, judgement))


def feedback_for(card: Card, judgement: Judgement) -> str:
    """Two or three sentences for the learner, built from the verdicts."""
    sentences_out: list[str] = []
    if judgement.injection_suspected:
        sentences_out.append(
            "Your answer contains instructions to the grader; they were ignored and the grade is capped at 1."
        )
    asserted = {m.misconception_id for m in judgement.misconceptions if m.asserted}
    for misconception in card.misconceptions:
        if misconception.id in asserted:
            sentences_out.append(f"It repeats the trap: {misconception.text.rstrip('.')}.")
            break
    missing = [
        point
        for point in card.key_points
        if judgement.verdict_for(point.id) in (PointVerdict.ABSENT, PointVerdict.CONTRADICTED)
    ]
    core_missing = [point for point in missing if point.core]
    vague = [
        point
        for point in card.key_points
        if judgement.verdict_for(point.id) is PointVerdict.PARTIAL
    ]
    if core_missing:
        sentences_out.append(f"The core point I could not find: {_short(core_missing[0].text)}")
    elif missing:
        sentences_out.append(f"To make it complete, add: {_short(missing[0].text)}")
    elif vague:
        sentences_out.append(
            f"Every key point is touched; say this one more precisely: {_short(vague[0].text)}"
        )
    else:
        sentences_out.append("Every key point of the mechanism is there.")
    return " ".join(sentences_out[:3])


def _short(text: str) -> str:
    first = sentences(text)[0].text if sentences(text) else text
    first = re.split(r";\s", first)[0].strip().rstrip(".")
    return first + "."


_INDEXES: OrderedDict[tuple[str, str], CardIndex] = OrderedDict()
_INDEX_LOCK = threading.Lock()
MAX_INDEXED_CARDS = 256


def card_index(card: Card) -> CardIndex:
    """The embedded phrasings of ``card``, built once per card version in this process."""
    version = card.version or hashlib.sha256(card.model_dump_json().encode()).hexdigest()[:12]
    key = (card.id, version)
    with _INDEX_LOCK:
        found = _INDEXES.get(key)
        if found is not None:
            _INDEXES.move_to_end(key)
            return found
    built = build_index(card)
    with _INDEX_LOCK:
        _INDEXES[key] = built
        while len(_INDEXES) > MAX_INDEXED_CARDS:
            _INDEXES.popitem(last=False)
    return built
