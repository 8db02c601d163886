"""The grade rule: SM-2's quality from a judge's per-point verdicts, the same on every card.

SM-2 reads quality 3 and up as "recalled", below 3 as "forgotten" (the card starts over). So
quality 3 means one thing on every card: **the learner recalled the mechanism**, every core
point of the key present and no misconception asserted. Weights no longer decide a pass.

1. Evidence (``check_evidence``): a present or partial verdict counts only with a quote that
   occurs in the answer on word boundaries after ``grader.textnorm.fold`` and is of real
   length: ``MIN_QUOTE_WORDS`` words, or one of the point's ``accepts`` phrasings. Without
   one the point is absent; an asserted misconception without one is not asserted.
2. The rule, first match wins:
   - a misconception asserted: 1 if some core point is credited (present or partial), else 0
     (the trap stated with conviction);
   - every core point present: 3, lifted by the non-core points' weighted coverage
     (present 1, partial 1/2): 4 from ``LIFT_CUTS[0]``, 5 from ``LIFT_CUTS[1]``; but 2 when a
     key point is contradicted (a confident wrong claim beside the mechanism);
   - some core point present or partial: 2 (the mechanism in part);
   - some non-core point present or partial: 1 (familiar words, no mechanism);
   - otherwise 0 (blank, off-topic, nothing of the mechanism).
3. A suspected prompt injection caps the quality at ``INJECTION_CAP``.

Consequences every card satisfies (tests/grader/test_scoring.py checks them on the deck):
exactly the core points give 3, all points give 5, one core point missing gives at most 2,
and the trap (a misconception, no core point) gives at most 1.

The cut-points 0.4 and 0.8 were fixed from the rubric before any answer was graded ("4: a
small gap", "5: complete"): with two non-core points one of them is a 4; with three, two
of them are a 4 and all three a 5.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from grader.base import (
    CREDITED,
    Grade,
    Judgement,
    MisconceptionJudgement,
    PointJudgement,
    PointVerdict,
)
from grader.textnorm import fold_phrase, occurs_on_word_boundaries, word_count

if TYPE_CHECKING:
    from collections.abc import Iterable

    from cards.schema import Card

CREDIT = {
    PointVerdict.PRESENT: 1.0,
    PointVerdict.PARTIAL: 0.5,
    PointVerdict.ABSENT: 0.0,
    PointVerdict.CONTRADICTED: 0.0,
}
PASS_QUALITY = 3
#: Non-core coverage from which a pass is lifted to 4 and to 5.
LIFT_CUTS = (0.4, 0.8)
INJECTION_CAP = 1
#: A quote shorter than this counts only when it is one of the point's accepted phrasings.
MIN_QUOTE_WORDS = 3

MISSING_CORE = "a core point of the mechanism is missing"
ASSERTS_MISCONCEPTION = "the answer asserts a misconception"
CONTRADICTS_POINT = "the answer contradicts a point of the key"
INSTRUCTS_GRADER = "the answer tries to instruct the grader"


def valid_quote(quote: str, answer: str, accepts: Iterable[str] = ()) -> bool:
    """Whether ``quote`` is real evidence in ``answer``: it occurs there on word boundaries
    (after folding) and is at least ``MIN_QUOTE_WORDS`` words or contains an accepted phrase."""
    if not occurs_on_word_boundaries(quote, answer):
        return False
    if word_count(fold_phrase(quote)) >= MIN_QUOTE_WORDS:
        return True
    return any(
        phrase and occurs_on_word_boundaries(phrase, quote)
        for phrase in (fold_phrase(a) for a in accepts)
    )


def quote_in_answer(quote: str, answer: str) -> bool:
    """Whether ``quote`` occurs in ``answer`` on word boundaries, up to ``fold``."""
    return occurs_on_word_boundaries(quote, answer)


def check_evidence(card: Card, judgement: Judgement, answer: str) -> Judgement:
    """The judgement with every verdict that lacks real evidence taken back."""
    accepts = {point.id: point.accepts for point in card.key_points}
    points = []
    for point in judgement.points:
        if point.verdict in CREDITED and not valid_quote(
            point.quote, answer, accepts.get(point.point_id, ())
        ):
            point = PointJudgement(point.point_id, PointVerdict.ABSENT, "")
        points.append(point)
    misconceptions = tuple(
        m
        if not m.asserted or valid_quote(m.quote, answer)
        else MisconceptionJudgement(m.misconception_id, False, "")
        for m in judgement.misconceptions
    )
    return replace(judgement, points=tuple(points), misconceptions=misconceptions)


def extra_coverage(card: Card, judgement: Judgement) -> float:
    """Weighted coverage of the non-core points in [0, 1] (1.0 for a card without any)."""
    extra = card.extra_points
    total = sum(point.weight for point in extra)
    if not total:
        return 1.0
    earned = sum(point.weight * CREDIT[judgement.verdict_for(point.id)] for point in extra)
    return earned / total


def quality_of(card: Card, judgement: Judgement) -> tuple[int, tuple[str, ...]]:
    """The quality by the rule of the module docstring, and why it is not higher."""
    core = [judgement.verdict_for(point.id) for point in card.core_points]
    core_credit = any(verdict in CREDITED for verdict in core)
    asserted = any(m.asserted for m in judgement.misconceptions)
    if asserted:
        quality, reasons = (1 if core_credit else 0), [ASSERTS_MISCONCEPTION]
        if not all(verdict is PointVerdict.PRESENT for verdict in core):
            reasons.append(MISSING_CORE)
    elif all(verdict is PointVerdict.PRESENT for verdict in core):
        contradicted = any(
            judgement.verdict_for(point.id) is PointVerdict.CONTRADICTED for point in card.key_points
        )
        if contradicted:
            quality, reasons = 2, [CONTRADICTS_POINT]
        else:
            lift = extra_coverage(card, judgement)
            quality, reasons = PASS_QUALITY + sum(lift >= cut for cut in LIFT_CUTS), []
    else:
        extra_credit = any(judgement.verdict_for(p.id) in CREDITED for p in card.extra_points)
        quality = 2 if core_credit else 1 if extra_credit else 0
        reasons = [MISSING_CORE]
    if judgement.injection_suspected and quality > INJECTION_CAP:
        quality = INJECTION_CAP
        reasons.append(INSTRUCTS_GRADER)
    elif judgement.injection_suspected:
        reasons.append(INSTRUCTS_GRADER)
    return quality, tuple(reasons)


def coverage(card: Card, judgement: Judgement) -> float:
    """Share of the key covered, core points counting 1 each and the rest by weight; shown and
    stored beside the quality, never used to decide it."""
    weights = [1.0 if point.core else point.weight for point in card.key_points]
    earned = sum(
        w * CREDIT[judgement.verdict_for(p.id)] for w, p in zip(weights, card.key_points, strict=True)
    )
    return earned / sum(weights)


def grade_from_judgement(
    card: Card, judgement: Judgement, answer: str, *, check_quotes: bool = True
) -> Grade:
    """The SM-2 quality for ``judgement`` of ``answer`` on ``card``."""
    if check_quotes:
        judgement = check_evidence(card, judgement, answer)
    quality, reasons = quality_of(card, judgement)
    return Grade(
        quality=quality,
        score=round(coverage(card, judgement), 4),
        judgement=judgement,
        caps=reasons,
    )


def grade_from_labels(
    card: Card,
    credits: Iterable[str],
    partial: Iterable[str] = (),
    asserts: Iterable[str] = (),
    contradicted: Iterable[str] = (),
) -> int:
    """The quality of an answer labelled by hand: the points it states, states in part or
    contradicts, and the misconceptions it asserts."""
    credits, partial, contradicted = set(credits), set(partial), set(contradicted)

    def verdict(point_id: str) -> PointVerdict:
        if point_id in contradicted:
            return PointVerdict.CONTRADICTED
        if point_id in credits:
            return PointVerdict.PRESENT
        return PointVerdict.PARTIAL if point_id in partial else PointVerdict.ABSENT

    asserted = set(asserts)
    judgement = Judgement(
        judge="labels",
        points=tuple(PointJudgement(p.id, verdict(p.id), "") for p in card.key_points),
        misconceptions=tuple(
            MisconceptionJudgement(m.id, m.id in asserted) for m in card.misconceptions
        ),
    )
    return quality_of(card, judgement)[0]
