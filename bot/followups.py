"""The interviewer's follow-up: after an answer that missed a core point, the question that
leads to it (the point's ``probe``). The learner answers in their own words; the judge reads
that answer against that one point only, and the reply says whether they got there, then
shows the point.

A follow-up never changes the grade of the first answer (that measured unassisted recall);
it is stored with its review (``FollowUp``, one per review) so it survives a restart and
/stats can say how often a cue brought the point back. The engine calls in here under the
learner's lock; nothing here schedules anything.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine as DbEngine
from sqlmodel import Session, col, select

from bot import texts
from bot.actions import Action, InvalidAction, Verb
from bot.clock import Clock
from bot.models import FollowUp, FollowUpStatus, Review, ReviewStatus
from bot.replies import Button, Reply, ReplyKind
from cards.deck import Deck
from cards.schema import Card, KeyPoint
from cards.wording import as_asked
from grader.base import CREDITED, Grader, Judgement, PointVerdict, read_followup

log = logging.getLogger(__name__)

RESULT = {
    PointVerdict.PRESENT: "✅ **You got there.**",
    PointVerdict.PARTIAL: "🟡 **You got there, in part.**",
    PointVerdict.ABSENT: "❌ **Not yet.**",
    PointVerdict.CONTRADICTED: "⛔ **Not yet: that says the opposite.**",
}
GRADE_UNCHANGED = "_Your grade stays as it was: the follow-up shows what a cue brings back._"


def point_to_probe(card: Card, judgement: Judgement | None) -> KeyPoint | None:
    """The missed core point (verdict not present) an interviewer asks about: a point missing
    outright before one stated in part, then the earlier in the key. None when every core
    point is present, the judge gave no verdicts (self-grading), or no missed point has a probe."""
    if judgement is None or not judgement.points:
        return None
    missed = [
        (judgement.verdict_for(point.id), point)
        for point in card.core_points
        if point.probe and judgement.verdict_for(point.id) is not PointVerdict.PRESENT
    ]
    if not missed:
        return None
    return min(
        missed, key=lambda vp: (vp[0] is PointVerdict.PARTIAL, card.key_points.index(vp[1]))
    )[1]


def judgement_of(review: Review) -> Judgement | None:
    return Judgement.from_json(review.verdict) if review.verdict else None


class FollowUps:
    """Follow-ups stored in the database, judged by the engine's grader."""

    def __init__(self, db: DbEngine, deck: Deck, grader: Grader, clock: Clock):
        self.db = db
        self.deck = deck
        self.grader = grader
        self.clock = clock

    # ----- asking -----------------------------------------------------------------------

    def ask(self, learner_id: int, review: Review, card: Card) -> Reply:
        """Open the follow-up on ``review`` (asked again when it is open already); any other
        open follow-up of this learner is closed."""
        if review.status != ReviewStatus.GRADED:
            raise InvalidAction("that answer has no grade now, so no follow-up")
        point = point_to_probe(card, judgement_of(review))
        if point is None:
            raise InvalidAction("that answer missed no core point, so there is no follow-up")
        now = self.clock.now()
        with Session(self.db, expire_on_commit=False) as session:
            row = session.exec(select(FollowUp).where(FollowUp.review_id == review.id)).first()
            if row is not None and row.status in (
                FollowUpStatus.ANSWERED,
                FollowUpStatus.JUDGING,
                FollowUpStatus.SELF_CHECK,
            ):
                raise InvalidAction("you answered that follow-up already")
            self._close_open(session, learner_id, except_review=review.id)
            if row is None:
                row = FollowUp(
                    review_id=review.id,  # type: ignore[arg-type]
                    learner_id=learner_id,
                    card_id=card.id,
                    point_id=point.id,
                    asked_at=now,
                )
            row.status, row.asked_at = FollowUpStatus.OPEN, now
            session.add(row)
            try:
                session.commit()
            except sa.exc.IntegrityError:  # asked twice at once: the other one stands
                session.rollback()
        return self.prompt(card, point, review.id)  # type: ignore[arg-type]

    @staticmethod
    def prompt(card: Card, point: KeyPoint, review_id: int) -> Reply:
        text = (
            f"**Follow-up**  ·  `{card.id}`\n\n{point.probe}\n\n"
            "_Answer in a sentence or two. It does not change your grade._"
        )
        return Reply(
            text,
            kind=ReplyKind.FOLLOWUP,
            buttons=(
                (Button("Skip the follow-up", Action(Verb.FOLLOWUP, review_id, "skip").encode()),),
            ),
            card_id=card.id,
            review_id=review_id,
        )

    def open_for(self, learner_id: int, *, card_id: str | None = None) -> FollowUp | None:
        """The learner's open follow-up (on ``card_id`` when given): what a free-text answer
        that names no trap answers."""
        with Session(self.db, expire_on_commit=False) as session:
            query = select(FollowUp).where(
                FollowUp.learner_id == learner_id, FollowUp.status == FollowUpStatus.OPEN
            )
            if card_id is not None:
                query = query.where(FollowUp.card_id == card_id)
            return session.exec(
                query.order_by(col(FollowUp.asked_at).desc(), col(FollowUp.id).desc())
            ).first()

    def open_on(self, learner_id: int, review_id: int) -> FollowUp | None:
        """The open follow-up on this learner's review, or None."""
        with Session(self.db, expire_on_commit=False) as session:
            return session.exec(
                select(FollowUp).where(
                    FollowUp.review_id == review_id,
                    FollowUp.learner_id == learner_id,
                    FollowUp.status == FollowUpStatus.OPEN,
                )
            ).first()

    def asked_again(self, learner_id: int) -> Reply | None:
        """The learner's open follow-up asked again (a chat that restarts), or None."""
        row = self.open_for(learner_id)
        card = self._card(row) if row is not None else None
        point = (
            next((p for p in card.key_points if p.id == row.point_id), None)
            if card and row
            else None
        )
        if row is None or card is None or point is None:
            return None
        return self.prompt(card, point, row.review_id)

    @staticmethod
    def closed_reply() -> Reply:
        return Reply(
            "That follow-up is closed: it was answered or skipped, or a new trap came after it. "
            "Your answer was not stored.",
            kind=ReplyKind.ERROR,
            buttons=((Button("Next trap", Action(Verb.NEXT).encode()),),),
        )

    # ----- answering --------------------------------------------------------------------

    async def answer(self, row: FollowUp, text: str) -> list[Reply]:
        """Store the answer, then read it against the one point; never touches the grade."""
        now = self.clock.now()
        card = self._card(row)
        point = next((p for p in card.key_points if p.id == row.point_id), None) if card else None
        with Session(self.db, expire_on_commit=False) as session:
            stored = session.get(FollowUp, row.id)
            if stored is None or stored.status != FollowUpStatus.OPEN:
                raise InvalidAction("that follow-up is closed")
            stored.answer, stored.answered_at = text, now
            stored.status = FollowUpStatus.JUDGING if point else FollowUpStatus.CLOSED
            session.add(stored)
            session.commit()
        if card is None or point is None:
            return [
                Reply(
                    "That follow-up's point is no longer in the deck; your answer is kept.",
                    kind=ReplyKind.INFO,
                )
            ]
        return await self._read(row, card, point, text)

    def left_judging(self) -> list[tuple[int, int]]:
        """(learner id, follow-up id) of answers stored but never read (a crash in between)."""
        with Session(self.db) as session:
            rows = session.exec(
                select(FollowUp.learner_id, FollowUp.id)
                .where(FollowUp.status == FollowUpStatus.JUDGING)
                .order_by(col(FollowUp.id))
            ).all()
        return [(learner_id, row_id) for learner_id, row_id in rows]  # type: ignore[misc]

    async def judge_stored(self, row_id: int) -> list[Reply]:
        """Read a stored follow-up answer left by a crash; nothing when it was read meanwhile."""
        with Session(self.db, expire_on_commit=False) as session:
            row = session.get(FollowUp, row_id)
        if row is None or row.status != FollowUpStatus.JUDGING or row.answer is None:
            return []
        card = self._card(row)
        point = next((p for p in card.key_points if p.id == row.point_id), None) if card else None
        if card is None or point is None:
            self._update(row.id, status=FollowUpStatus.CLOSED)
            return []
        return await self._read(row, card, point, row.answer)

    async def _read(self, row: FollowUp, card: Card, point: KeyPoint, text: str) -> list[Reply]:
        verdict, judge = await self._judge(card, point, text)
        if verdict is None:
            self._update(row.id, status=FollowUpStatus.SELF_CHECK)
            return [self._self_check_reply(card, point, row.review_id)]
        rescued = verdict in CREDITED
        self._update(
            row.id,
            status=FollowUpStatus.ANSWERED,
            verdict=verdict.value,
            judge=judge,
            rescued=rescued,
        )
        return [self._shown(card, point, row.review_id, RESULT[verdict])]

    async def _judge(
        self, card: Card, point: KeyPoint, text: str
    ) -> tuple[PointVerdict | None, str | None]:
        """The verdict of ``point`` alone, by the engine's grader with the probe as the question;
        None when no judge can read it (self-grading, a judge that failed)."""
        asked = card.model_copy(update={"question": point.probe or card.question})
        try:
            assessment = await read_followup(self.grader, asked, text, point.id)
        except Exception:  # the learner says it instead
            log.info("no judge for a follow-up on %s/%s", card.id, point.id, exc_info=True)
            return None, None
        if assessment.grade is None or not assessment.grade.judgement.points:
            return None, None
        return assessment.grade.judgement.verdict_for(point.id), assessment.grader

    def self_check(
        self, learner_id: int, review: Review, card: Card, got_there: bool
    ) -> list[Reply]:
        row = self._row(review.id)
        if row is None or row.learner_id != learner_id or row.status != FollowUpStatus.SELF_CHECK:
            raise InvalidAction("that follow-up is not waiting for your word")
        self._update(
            row.id,
            status=FollowUpStatus.ANSWERED,
            verdict="said-yes" if got_there else "said-no",
            judge="self",
            rescued=got_there,
        )
        return [
            Reply(
                "Noted." if got_there else "Noted: it comes back at the next review.",
                buttons=_after_buttons(review.id),
            )
        ]

    def skip(self, learner_id: int, review: Review | None = None) -> list[Reply] | None:
        """Skip the open follow-up (``review``'s, or the learner's latest); None when none is open."""
        with Session(self.db, expire_on_commit=False) as session:
            query = select(FollowUp).where(
                FollowUp.learner_id == learner_id, FollowUp.status == FollowUpStatus.OPEN
            )
            if review is not None:
                query = query.where(FollowUp.review_id == review.id)
            row = session.exec(query.order_by(col(FollowUp.id).desc())).first()
            if row is None:
                return None
            row.status = FollowUpStatus.SKIPPED
            session.add(row)
            session.commit()
        card = self._card(row)
        point = next((p for p in card.key_points if p.id == row.point_id), None) if card else None
        if card is None or point is None:
            return [
                Reply(
                    "Follow-up skipped.",
                    buttons=((Button("Next trap", Action(Verb.NEXT).encode()),),),
                )
            ]
        return [self._shown(card, point, row.review_id, "Follow-up skipped.")]

    def _shown(self, card: Card, point: KeyPoint, review_id: int, lead: str) -> Reply:
        text = "\n\n".join(
            [
                lead,
                f"**The point:** {point.text}",
                GRADE_UNCHANGED,
                "**Why**\n" + texts.first_paragraph(card.explanation),
            ]
        )
        return Reply(
            text,
            kind=ReplyKind.INFO,
            buttons=_after_buttons(review_id),
            card_id=card.id,
            review_id=review_id,
        )

    def _self_check_reply(self, card: Card, point: KeyPoint, review_id: int) -> Reply:
        text = (
            f"**The point:** {point.text}\n\nNo judge can read follow-ups here. Did your answer get there?\n\n"
            + GRADE_UNCHANGED
        )
        buttons = (
            (
                Button("I got there", Action(Verb.FOLLOWUP, review_id, "yes").encode()),
                Button("Not quite", Action(Verb.FOLLOWUP, review_id, "no").encode()),
            ),
        )
        return Reply(
            text, kind=ReplyKind.CONFIRM, buttons=buttons, card_id=card.id, review_id=review_id
        )

    # ----- closing, stats, forgetting ---------------------------------------------------

    def close_open(self, learner_id: int | None, *, review_id: int | None = None) -> None:
        """Close open follow-ups: all of the learner's (a new trap was opened), or one review's
        (its grade was undone)."""
        with Session(self.db) as session:
            if review_id is not None:
                session.exec(
                    sa.update(FollowUp)
                    .where(
                        col(FollowUp.review_id) == review_id,
                        col(FollowUp.status) == FollowUpStatus.OPEN,
                    )
                    .values(status=FollowUpStatus.CLOSED)
                )  # type: ignore[call-overload]
            else:
                self._close_open(session, learner_id)
            session.commit()

    def close_open_in(self, session: Session, learner_ids: Collection[int]) -> None:
        """``close_open`` of all these learners' follow-ups, in the caller's session (it
        commits). A plain UPDATE: the caller holds no follow-up objects to keep in step."""
        session.connection().execute(
            sa.update(FollowUp)
            .where(col(FollowUp.learner_id).in_(learner_ids), col(FollowUp.status) == FollowUpStatus.OPEN)
            .values(status=FollowUpStatus.CLOSED)
        )

    @staticmethod
    def _close_open(
        session: Session, learner_id: int | None, *, except_review: int | None = None
    ) -> None:
        query = sa.update(FollowUp).where(
            col(FollowUp.learner_id) == learner_id, col(FollowUp.status) == FollowUpStatus.OPEN
        )
        if except_review is not None:
            query = query.where(col(FollowUp.review_id) != except_review)
        session.exec(query.values(status=FollowUpStatus.CLOSED))  # type: ignore[call-overload]

    def counts(self, learner_id: int) -> tuple[int, int]:
        """(follow-ups answered, of them the ones that got the point), over grades not undone."""
        with Session(self.db) as session:
            rows: Sequence[Any] = session.exec(
                select(FollowUp.rescued)
                .join(Review, col(Review.id) == FollowUp.review_id)
                .where(
                    FollowUp.learner_id == learner_id,
                    FollowUp.status == FollowUpStatus.ANSWERED,
                    Review.status == ReviewStatus.GRADED,
                )
            ).all()
        return len(rows), sum(1 for rescued in rows if rescued)

    @staticmethod
    def forget(session: Session, learner_id: int) -> None:
        session.exec(sa.delete(FollowUp).where(col(FollowUp.learner_id) == learner_id))  # type: ignore[call-overload]

    def _card(self, row: FollowUp) -> Card | None:
        """The follow-up's card as its review was asked (a variant's own labels, probes, hints)."""
        if row.card_id not in self.deck:
            return None
        with Session(self.db) as session:
            variant_id = session.exec(select(Review.variant_id).where(Review.id == row.review_id)).first()
        return as_asked(self.deck.get(row.card_id), variant_id)

    def _row(self, review_id: int | None) -> FollowUp | None:
        with Session(self.db, expire_on_commit=False) as session:
            return session.exec(select(FollowUp).where(FollowUp.review_id == review_id)).first()

    def _update(self, row_id: int | None, **values: Any) -> None:
        with Session(self.db) as session:
            row = session.get(FollowUp, row_id)
            assert row is not None
            for name, value in values.items():
                setattr(row, name, value)
            session.add(row)
            session.commit()


def _after_buttons(review_id: int) -> tuple[tuple[Button, ...], ...]:
    return (
        (Button("Full explanation", Action(Verb.EXPLAIN, review_id).encode()),),
        (Button("Next trap", Action(Verb.NEXT).encode()),),
    )


def rescue_line(answered: int, rescued: int) -> str | None:
    """The /stats line; None before the first follow-up."""
    if not answered:
        return None
    return f"- Follow-ups: {rescued} of {answered} got you to the missed point ({round(100 * rescued / answered)}%)"
