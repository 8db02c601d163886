"""Confirming a grade before it counts: the self-grading prompt, or the judge's reading point
by point, whose marks the learner taps to correct before confirming."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bot import texts
from bot.actions import Action, Verb
from bot.models import Review
from bot.replies import Button, Reply, ReplyKind
from cards.schema import Card
from grader.base import Judgement, PointJudgement, PointVerdict
from grader.scoring import grade_from_judgement


class ConfirmRoom:
    """Needs the engine's ``_update_review`` and ``_load_review``."""

    _update_review: Callable[..., None]
    _load_review: Callable[[int | None], Review]

    def _confirmation_reply(self, review: Review, card: Card) -> Reply:
        if review.verdict is None:  # self-grading: rate 0-5 after seeing the key
            row = tuple(Button(str(q), Action(Verb.RATE, review.id, str(q)).encode()) for q in range(6))
            return Reply(
                texts.self_grade_prompt(card), kind=ReplyKind.CONFIRM, buttons=(row,), review_id=review.id, card_id=card.id
            )
        judgement = Judgement.from_json(review.verdict)
        grade = grade_from_judgement(card, judgement, review.answer, check_quotes=False)
        second = review.verdict.get("second_reading")
        doubtful = points_in_doubt(card, judgement, show_all=bool(second or review.verdict.get("show_all")))
        asked = range(1, len(card.key_points) + 1) if doubtful is None else doubtful
        ticks = [
            Button(f"{i}. {texts.MARK[judgement.verdict_for(card.key_points[i - 1].id)]}", Action(Verb.TICK, review.id, str(i)).encode())
            for i in asked
        ]
        buttons = _rows(ticks, 3) + _trap_row(review, judgement, doubtful) + (
            (Button(f"Confirm {grade.quality}/5", Action(Verb.CONFIRM, review.id).encode()),),
        )
        if doubtful is not None:
            label = "Correct another point" if doubtful else "Correct a point"
            buttons += ((Button(label, Action(Verb.TICK, review.id, SHOW_ALL).encode()),),)
        return Reply(
            texts.assisted_prompt(card, judgement, grade.quality, second=second, doubtful=doubtful),
            kind=ReplyKind.CONFIRM,
            buttons=buttons,
            review_id=review.id,
            card_id=card.id,
        )

    def _show_every_point(self, review: Review, card: Card) -> Reply:
        """The learner wants to correct a point the judge was sure of: every point gets its button."""
        verdict = dict(review.verdict or {})
        verdict["show_all"] = True
        self._update_review(review.id, verdict=verdict)
        return self._confirmation_reply(self._load_review(review.id), card)

    def _toggle_point(self, review: Review, card: Card, index: int) -> Reply:
        judgement = Judgement.from_json(review.verdict or {"judge": "self", "points": []})
        point = card.key_points[index - 1]
        cycle = {
            PointVerdict.PRESENT: PointVerdict.PARTIAL,
            PointVerdict.PARTIAL: PointVerdict.ABSENT,
            PointVerdict.ABSENT: PointVerdict.PRESENT,
            PointVerdict.CONTRADICTED: PointVerdict.PRESENT,
        }
        new_verdict = cycle[judgement.verdict_for(point.id)]
        points = [p for p in judgement.points if p.point_id != point.id]
        points.append(PointJudgement(point.id, new_verdict, ""))
        order = {p.id: i for i, p in enumerate(card.key_points)}
        points.sort(key=lambda p: order.get(p.point_id, 99))
        judgement = replace(judgement, points=tuple(points))
        second = (review.verdict or {}).get("second_reading")
        verdict = with_second(judgement.to_json(), second)
        if (review.verdict or {}).get("show_all"):
            verdict["show_all"] = True  # the learner asked for every point: ticking keeps them
        if (review.verdict or {}).get("cleared_misconceptions"):
            verdict["cleared_misconceptions"] = review.verdict["cleared_misconceptions"]
        self._update_review(review.id, verdict=verdict)
        return self._confirmation_reply(self._load_review(review.id), card)


    def _toggle_trap(self, review: Review, card: Card) -> Reply:
        """The learner says the answer does not assert the trap the judge read: the asserted
        misconceptions are cleared, and kept so that a second tap puts them back."""
        verdict = dict(review.verdict or {})
        judgement = Judgement.from_json(verdict)
        asserted = {m.misconception_id for m in judgement.misconceptions if m.asserted}
        if asserted:
            verdict["cleared_misconceptions"] = sorted(asserted)
            kept: set[str] = set()
        else:
            kept = set(verdict.pop("cleared_misconceptions", ()))
        misconceptions = tuple(replace(m, asserted=m.misconception_id in kept) for m in judgement.misconceptions)
        verdict.update(replace(judgement, misconceptions=misconceptions).to_json())
        self._update_review(review.id, verdict=verdict)
        return self._confirmation_reply(self._load_review(review.id), card)


#: The tick argument that asks for every point's button, not only the doubtful ones.
SHOW_ALL = "all"
#: The tick argument that says the answer does not assert the trap the judge read.
TRAP = "trap"


def _trap_row(review: Review, judgement: Judgement, doubtful: list[int] | None) -> tuple[tuple[Button, ...], ...]:
    """A button to dispute the trap reading when the judge is unsure of it or every point is
    asked, and one to put it back after the learner cleared it."""
    asserted = [m.misconception_id for m in judgement.misconceptions if m.asserted]
    in_doubt = doubtful is None or any(m in judgement.unsure_points for m in asserted)
    if asserted and in_doubt:
        return ((Button("Not the trap", Action(Verb.TICK, review.id, TRAP).encode()),),)
    if not asserted and (review.verdict or {}).get("cleared_misconceptions"):
        return ((Button("It is the trap", Action(Verb.TICK, review.id, TRAP).encode()),),)
    return ()


def points_in_doubt(card: Card, judgement: Judgement, *, show_all: bool) -> list[int] | None:
    """The 1-based indices of the key points whose verdict the judge is unsure of (empty: it is
    sure of every one), or None when every point is to be asked: the judge did not measure its
    certainty (no margin), a second reading disagrees, or the learner asked to see them all."""
    if show_all or judgement.margin is None:
        return None
    unsure = set(judgement.unsure_points)
    return [i for i, point in enumerate(card.key_points, 1) if point.id in unsure]


def with_second(verdict: dict[str, Any], second: dict[str, Any] | None) -> dict[str, Any]:
    """A verdict with the second judge's reading kept beside it (when there is one)."""
    if second:
        verdict["second_reading"] = second
    return verdict


def _rows(buttons: list[Button], width: int) -> tuple[tuple[Button, ...], ...]:
    return tuple(tuple(buttons[i : i + width]) for i in range(0, len(buttons), width))

