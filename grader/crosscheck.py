"""Checking a judge's evidence, so a gullible or lying model cannot give credit the answer has
not earned, without vetoing what a capable model rightly credits.

Every present or partial verdict of the LLM judge must survive three checks, else the point
is absent (``verify``):

1. the quote is real evidence (``grader.scoring.check_evidence``: in the answer on word
   boundaries after folding, ``MIN_QUOTE_WORDS`` words or one of the point's accepted
   phrasings): a forged, trivial or empty quote earns nothing;
2. the quote is not (part of) a sentence the injection detector flagged as instructions to
   the grader (``grader.injection.injection_spans``);
3. the same passage is not credited for unrelated points: a passage credited for more than
   ``MAX_POINTS_PER_PASSAGE`` points (quotes equal or one inside another, after folding) is a
   blanket claim ("the preceding paragraph establishes each mechanism"), and keeps each
   credit only where the passage itself is evidence for that point by our own reading
   (``supports``: an accepted phrasing in it, or the offline judge crediting the point on
   the passage alone).

Whether our own offline reading recognises a point is no longer a check: it does not
recognise a point said in plain words, an analogy, code or formulas, and vetoing on it took
a capable model's right credit back (issue 36). That reading is shown to the learner instead;
see ``grader.llm``.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from grader.base import CREDITED, Judgement, PointJudgement, PointVerdict
from grader.scoring import check_evidence
from grader.textnorm import fold_phrase, occurs_on_word_boundaries

if TYPE_CHECKING:
    from cards.schema import Card

NO_EVIDENCE = "no valid quote"
INJECTED = "quotes the injected instructions"
SHARED = "the same passage is credited for unrelated points"
#: A passage may be the evidence of this many points (a dense sentence can state a mechanism
#: and its consequence); credited for more, each credit needs our own reading's support.
MAX_POINTS_PER_PASSAGE = 2

_READINGS: OrderedDict[tuple[str, str, str, object], Judgement] = OrderedDict()
_READINGS_LOCK = threading.Lock()
_MAX_READINGS = 4096
_READER: Any = None


def loaded_reader() -> Any:
    """The process's offline reader if it has been made, else None (nothing is loaded)."""
    return _READER


def default_reader() -> Any:
    """The offline judge the cross-check reads with (one per process)."""
    global _READER
    if _READER is None:
        from grader.offline import OfflineJudge

        _READER = OfflineJudge()
    return _READER


def _remembered(card: Card, text: str, reading: object, compute: Callable[[], Judgement]) -> Judgement:
    """``compute()``, remembered per card version, text and kind of ``reading``."""
    version = card.version or hashlib.sha256(card.model_dump_json().encode()).hexdigest()[:12]
    key = (card.id, version, text, reading)
    with _READINGS_LOCK:
        found = _READINGS.get(key)
        if found is not None:
            _READINGS.move_to_end(key)
            return found
    judgement = compute()
    with _READINGS_LOCK:
        _READINGS[key] = judgement
        while len(_READINGS) > _MAX_READINGS:
            _READINGS.popitem(last=False)
    return judgement


def reading_of(card: Card, text: str, reader: Any = None, *, rules: bool = False) -> Judgement:
    """The offline judge's verdicts on ``text`` alone (blocking), remembered per card version;
    ``rules``: its hand rules, for a piece of an answer (the learnt reading is fitted on whole
    answers)."""
    reader = reader or default_reader()
    return _remembered(card, text, rules, lambda: reader.judge(card, text, rules=rules))


def reaches_point(card: Card, point_id: str, text: str, reader: Any = None) -> bool:
    """Whether the offline judge's follow-up reading, taking ``text`` as an answer to the
    point's probe, credits the point (blocking; remembered like ``reading_of``). False when
    the reader has no follow-up reading or the point no probe."""
    reader = reader or default_reader()
    point = next((p for p in card.key_points if p.id == point_id), None)
    if getattr(reader, "followup_model", None) is None or point is None or not point.probe:
        return False
    asked = card.model_copy(update={"question": point.probe})
    found = _remembered(card, text, f"follow-up:{point_id}", lambda: reader.judge_followup(asked, text, point_id))
    return found.verdict_for(point_id) in CREDITED


def supports(
    card: Card, point_id: str, quote: str, reader: Any = None, *, answer: str | None = None
) -> bool:
    """Whether ``quote`` is evidence for the key point ``point_id``: it contains one of the
    point's accepted phrasings, or the offline judge, reading the quote alone, credits that
    point (present or partial).

    Given the ``answer``, a quote the offline judge cannot read alone (a clause too short or
    too terse to be a claim by its rules) still counts when the offline judge's reading of the
    whole answer credits the point (a point our own reading credits too),
    or when its reading of the quote's sentence does. Blocking: run it in a thread from async code."""
    point = next((p for p in card.key_points if p.id == point_id), None)
    if point is None or not fold_phrase(quote):
        return False
    if any(occurs_on_word_boundaries(phrase, quote) for phrase in point.accepts if fold_phrase(phrase)):
        return True
    if reading_of(card, quote, reader, rules=True).verdict_for(point_id) in CREDITED:
        return True
    if reaches_point(card, point_id, quote, reader):
        return True
    if not answer:
        return False
    if reading_of(card, answer, reader, rules=True).verdict_for(point_id) in CREDITED:
        return True
    context = sentence_of(quote, answer)
    return bool(context) and reading_of(card, context, reader, rules=True).verdict_for(point_id) in CREDITED


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])(?<!\bal\.)(?<!e\.g\.)(?<!i\.e\.)(?<!\bvs\.)(?<!\bcf\.)\s+|\n+")


def sentence_of(quote: str, answer: str) -> str | None:
    """The shortest run of the answer's sentences (up to three) that contains ``quote``, when
    it is longer than the quote; None otherwise."""
    pieces = [p for p in _SENTENCE_BREAK.split(answer) if p.strip()]
    for width in (1, 2, 3):
        for i in range(len(pieces) - width + 1):
            run = " ".join(pieces[i : i + width])
            if occurs_on_word_boundaries(quote, run):
                return run if fold_phrase(run) != fold_phrase(quote) else None
    return None


@dataclass(frozen=True)
class Check:
    """A judgement after the checks, and the credit each check took back (point id -> why)."""

    judgement: Judgement
    taken_back: dict[str, str]


def shared_passages(points: list[PointJudgement]) -> list[list[PointJudgement]]:
    """Groups of credited points whose quotes are the same passage (equal after folding, or one
    inside the other), largest first; points with a passage of their own are left out."""
    folded = [fold_phrase(p.quote) for p in points]
    parent = list(range(len(points)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(points)):
        for j in range(i + 1, len(points)):
            a, b = folded[i], folded[j]
            if a and b and (a == b or occurs_on_word_boundaries(a, b) or occurs_on_word_boundaries(b, a)):
                parent[root(j)] = root(i)
    groups: dict[int, list[PointJudgement]] = {}
    for i, point in enumerate(points):
        groups.setdefault(root(i), []).append(point)
    return sorted((g for g in groups.values() if len(g) > 1), key=len, reverse=True)


def verify(card: Card, judgement: Judgement, answer: str, reader: Any = None) -> Check:
    """``judgement`` with every credited point that fails a check made absent (blocking)."""
    from grader.injection import injection_spans, quote_is_injection

    checked = check_evidence(card, judgement, answer)
    taken: dict[str, str] = {
        p.point_id: NO_EVIDENCE
        for p, q in zip(judgement.points, checked.points, strict=True)
        if p.verdict in CREDITED and q.verdict is PointVerdict.ABSENT
    }
    spans = injection_spans(answer, [p.id for p in card.key_points])
    credited = []
    for point in checked.points:
        if point.verdict not in CREDITED:
            continue
        if quote_is_injection(point.quote, answer, spans):
            taken[point.point_id] = INJECTED
        else:
            credited.append(point)
    for group in shared_passages(credited):
        if len(group) <= MAX_POINTS_PER_PASSAGE:
            continue
        for point in group:
            if not supports(card, point.point_id, point.quote, reader):
                taken[point.point_id] = SHARED
    points = tuple(
        PointJudgement(p.point_id, PointVerdict.ABSENT, "") if p.point_id in taken else p
        for p in checked.points
    )
    return Check(replace(checked, points=points), taken)


async def verify_async(card: Card, judgement: Judgement, answer: str, reader: Any = None) -> Check:
    return await asyncio.to_thread(verify, card, judgement, answer, reader)
