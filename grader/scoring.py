"""Turn a judge's per-point verdicts into the SM-2 quality, the same way for every judge.

The rules, in order:
1. Evidence: a verdict of present or partial whose quote does not occur in the answer
   is downgraded one step (present -> partial -> absent). Judges cannot invent evidence.
2. Coverage: each key point earns its weight times 1 (present), 0.5 (partial) or 0
   (absent, contradicted); the score is the earned share of the total weight.
3. Cut-points map the score to a quality 0-5 (``QUALITY_CUTS``).
4. Caps: a core point absent or contradicted, or a misconception asserted, caps the
   quality at 2 (a fail in SM-2); a suspected prompt injection caps it at 1.

The cut-points: quality 1 from a score of 0.05, 2 from 0.30, 3 from 0.45, 4 from 0.65 and 5
from 0.80. They were tuned, together with the offline judge's thresholds
(``grader.offline.OfflineParams``), on the tuning split of
``grader/calibration/calibration.jsonl`` (the even-numbered ``rl-`` cards; the other cards
are held out) by coordinate search, maximising quadratic weighted kappa plus half the
pass/fail agreement at quality 3 plus a bonus for grading each card's trap below its
missing-core answer. Against the first guess (0.10, 0.30, 0.50, 0.70, 0.88) they sit lower
because the offline judge credits a point as present only on a close, focused match, so
complete answers rarely reach full coverage. ``trapbot grader eval --split held-out`` gives
the held-out figures.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from typing import TYPE_CHECKING

from grader.base import Grade, Judgement, PointJudgement, PointVerdict

if TYPE_CHECKING:
    from cards.schema import Card

CREDIT = {
    PointVerdict.PRESENT: 1.0,
    PointVerdict.PARTIAL: 0.5,
    PointVerdict.ABSENT: 0.0,
    PointVerdict.CONTRADICTED: 0.0,
}
#: Lower bounds of the score for qualities 1..5 (quality 0 below the first).
QUALITY_CUTS = (0.05, 0.30, 0.45, 0.65, 0.80)
CORE_CAP = 2
INJECTION_CAP = 1


def normalise_text(text: str) -> str:
    """Casefolded NFKC text with runs of whitespace and quote styles made uniform."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.translate(
        str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
    )
    return re.sub(r"\s+", " ", text).strip()


def quote_in_answer(quote: str, answer: str) -> bool:
    """Whether ``quote`` occurs in ``answer``, up to case, Unicode form and whitespace."""
    needle = normalise_text(quote).strip(" .,;:\"'…")
    return bool(needle) and needle in normalise_text(answer)


def _downgrade(verdict: PointVerdict) -> PointVerdict:
    if verdict is PointVerdict.PRESENT:
        return PointVerdict.PARTIAL
    if verdict is PointVerdict.PARTIAL:
        return PointVerdict.ABSENT
    return verdict


def check_evidence(judgement: Judgement, answer: str) -> Judgement:
    """Downgrade every present/partial point whose quote is not in the answer."""
    points = []
    for point in judgement.points:
        if point.verdict in (PointVerdict.PRESENT, PointVerdict.PARTIAL) and not quote_in_answer(
            point.quote, answer
        ):
            point = PointJudgement(point.point_id, _downgrade(point.verdict), point.quote)
        points.append(point)
    return replace(judgement, points=tuple(points))


def quality_from_score(score: float) -> int:
    return sum(score >= cut for cut in QUALITY_CUTS)


def grade_from_judgement(
    card: Card, judgement: Judgement, answer: str, *, check_quotes: bool = True
) -> Grade:
    """The SM-2 quality for ``judgement`` of ``answer`` on ``card``."""
    if check_quotes:
        judgement = check_evidence(judgement, answer)
    earned = sum(
        point.weight * CREDIT[judgement.verdict_for(point.id)] for point in card.key_points
    )
    score = earned / card.total_weight
    quality = quality_from_score(score)
    caps: list[str] = []
    missing_core = [
        point.id
        for point in card.key_points
        if point.core
        and judgement.verdict_for(point.id) in (PointVerdict.ABSENT, PointVerdict.CONTRADICTED)
    ]
    if missing_core and quality > CORE_CAP:
        caps.append("a core point of the mechanism is missing")
        quality = CORE_CAP
    asserted = [m.misconception_id for m in judgement.misconceptions if m.asserted]
    if asserted and quality > CORE_CAP:
        caps.append("the answer asserts a misconception")
        quality = CORE_CAP
    if judgement.injection_suspected and quality > INJECTION_CAP:
        caps.append("the answer tries to instruct the grader")
        quality = INJECTION_CAP
    return Grade(quality=quality, score=round(score, 4), judgement=judgement, caps=tuple(caps))
