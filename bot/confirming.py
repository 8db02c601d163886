"""Confirming a grade before it counts: the self-grading prompt, or the judge's reading point
by point, whose marks the learner taps to correct before confirming."""

from __future__ import annotations

from collections.abc import Callable
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
        ticks = tuple(
            (Button(f"{i}. {texts.MARK[judgement.verdict_for(p.id)]}", Action(Verb.TICK, review.id, str(i)).encode()),)
            for i, p in enumerate(card.key_points, 1)
        )
        buttons = _rows([b for (b,) in ticks], 3) + (
            (Button(f"Confirm {grade.quality}/5", Action(Verb.CONFIRM, review.id).encode()),),
        )
        return Reply(
            texts.assisted_prompt(card, judgement, grade.quality, second=review.verdict.get("second_reading")),
            kind=ReplyKind.CONFIRM,
            buttons=buttons,
            review_id=review.id,
            card_id=card.id,
        )


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
        judgement = Judgement(
            judge=judgement.judge,
            points=tuple(points),
            misconceptions=judgement.misconceptions,
            injection_suspected=judgement.injection_suspected,
            feedback=judgement.feedback,
        )
        second = (review.verdict or {}).get("second_reading")
        self._update_review(review.id, verdict=with_second(judgement.to_json(), second))
        return self._confirmation_reply(self._load_review(review.id), card)


def with_second(verdict: dict[str, Any], second: dict[str, Any] | None) -> dict[str, Any]:
    """A verdict with the second judge's reading kept beside it (when there is one)."""
    if second:
        verdict["second_reading"] = second
    return verdict


def _rows(buttons: list[Button], width: int) -> tuple[tuple[Button, ...], ...]:
    return tuple(tuple(buttons[i : i + width]) for i in range(0, len(buttons), width))

