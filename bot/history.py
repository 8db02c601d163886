"""Changing the past: "I disagree" (a new grade from the same state), /undo (the last grade taken
back, the trap open again) and /forget (everything about a learner deleted)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col, select

from bot import texts, wordings
from bot.actions import Action, Verb
from bot.clock import local_date
from bot.followups import FollowUps
from bot.learners import LearnerRoom
from bot.locks import LearnerLocks
from bot.models import CardState, GroupChat, Learner, PushLog, Review, ReviewStatus, fit_grader_name
from bot.replies import Button, Reply, ReplyKind
from cards.deck import Deck
from cards.schema import Card


class HistoryRoom(LearnerRoom):
    """Needs the engine's ``_schedule`` (the same SM-2 step an answer takes)."""

    deck: Deck
    followups: FollowUps
    learning_step: timedelta
    _locks: LearnerLocks

    def _override(self, review: Review, card: Card, quality: int) -> list[Reply]:
        """"I disagree": the learner's quality replaces the judge's, rescheduling from the same state."""
        with Session(self.db) as session:
            db_review = session.get(Review, review.id)
            assert db_review is not None and db_review.state_before is not None
            state = self._state(session, review.learner_id, card.id)
            assert state is not None
            _restore(state, db_review.state_before)
            learner = session.get(Learner, review.learner_id)
            assert learner is not None
            today = local_date(self.clock.now(), learner.timezone)
            # The original review day counts, so an override later in the day schedules the same way.
            self._schedule(state, quality, today, self.clock.now(), same_day_repeat=db_review.same_day_repeat)
            if db_review.judge_quality is None:
                db_review.judge_quality = db_review.quality
            db_review.quality = quality
            db_review.grader = fit_grader_name(
                f"{db_review.grader} (overridden by you)" if "overridden" not in (db_review.grader or "") else db_review.grader
            )
            session.add_all([state, db_review])
            session.commit()
            label = texts.next_label(today, state.due_on, repeat_in=self.learning_step if state.repeat_today else None)
        return [
            Reply(
                f"Noted: **{quality}/5** is your grade. {texts.schedule_sentence(label)}",
                buttons=((Button("Next trap", Action(Verb.NEXT).encode()),),),
                review_id=review.id,
            )
        ]

    async def undo(self, learner_id: int) -> list[Reply]:
        """Take back the last grade: the card's state is restored and the trap is open again."""
        async with self._locks[learner_id]:
            with Session(self.db) as session:
                review = session.exec(
                    select(Review)
                    .where(Review.learner_id == learner_id, Review.status == ReviewStatus.GRADED)
                    .order_by(col(Review.graded_at).desc(), col(Review.id).desc())
                ).first()
                if review is None or review.state_before is None:
                    return [Reply("There is no grade to take back.", kind=ReplyKind.INFO)]
                if review.card_id not in self.deck:  # its deck folder was removed: the history stays as it is
                    return [Reply(f"The trap `{review.card_id}` is no longer in the deck, so its grade stays.", kind=ReplyKind.INFO)]
                state = self._state(session, learner_id, review.card_id)
                assert state is not None
                _restore(state, review.state_before)
                review.status = ReviewStatus.UNDONE
                wordings.reopen(session, review.id)  # type: ignore[arg-type]
                learner = session.get(Learner, learner_id)
                assert learner is not None
                learner.current_card_id = review.card_id
                learner.current_asked_at = self.clock.now()
                session.add_all([state, review, learner])
                session.commit()
                card_id, review_id = review.card_id, review.id
            self.followups.close_open(learner_id, review_id=review_id)
            card = self.deck.get(card_id)
            return [
                Reply(
                    f"Taken back: your last grade (`{card.id}`) is undone and its schedule restored. "
                    "Send a new answer whenever you like.",
                    kind=ReplyKind.QUESTION,
                    card_id=card_id,
                )
            ]

    async def forget(self, learner_id: int, *, confirmed: bool = False, cancelled: bool = False) -> list[Reply]:
        if cancelled:
            return [Reply("Nothing deleted.")]
        if not confirmed:
            return [
                Reply(
                    "This deletes everything stored about you: answers, grades, schedule and settings. "
                    "It cannot be undone.",
                    kind=ReplyKind.CONFIRM,
                    buttons=(
                        (
                            Button("Delete everything", Action(Verb.FORGET, arg="yes").encode()),
                            Button("Cancel", Action(Verb.FORGET, arg="no").encode()),
                        ),
                    ),
                )
            ]
        async with self._locks[learner_id]:
            with Session(self.db) as session:
                # Explicit deletes: SQLite enforces ON DELETE CASCADE only with the pragma on.
                FollowUps.forget(session, learner_id)
                wordings.forget(session, learner_id)
                for table in (Review, CardState):
                    session.exec(sa.delete(table).where(table.learner_id == learner_id))  # type: ignore[call-overload]
                session.exec(sa.delete(PushLog).where(PushLog.learner_id == learner_id))  # type: ignore[call-overload]
                learner = session.get(Learner, learner_id)
                if learner is not None:  # a group's decks stay; who last changed them is forgotten
                    session.exec(  # type: ignore[call-overload]
                        sa.update(GroupChat)
                        .where(GroupChat.platform == learner.platform, GroupChat.updated_by == learner.platform_user_id)  # type: ignore[arg-type]
                        .values(updated_by="")
                    )
                session.exec(sa.delete(Learner).where(Learner.id == learner_id))  # type: ignore[call-overload]
                session.commit()
        self._locks.pop(learner_id, None)
        return [Reply("Done: everything about you is deleted. Send /start to begin again.")]


def snapshot_of(state: CardState) -> dict[str, Any]:
    return {
        "exists": state.id is not None,
        "repetitions": state.repetitions,
        "easiness_hundredths": state.easiness_hundredths,
        "interval_days": state.interval_days,
        "due_on": state.due_on.isoformat(),
        "lapses": state.lapses,
        "last_reviewed_on": state.last_reviewed_on.isoformat() if state.last_reviewed_on else None,
        "last_reviewed_at": state.last_reviewed_at.isoformat() if state.last_reviewed_at else None,
        "repeat_today": state.repeat_today,
        "skipped_on": state.skipped_on.isoformat() if state.skipped_on else None,
    }


def _restore(state: CardState, snap: dict[str, Any]) -> None:
    state.repetitions = snap["repetitions"]
    state.easiness_hundredths = snap["easiness_hundredths"]
    state.interval_days = snap["interval_days"]
    state.due_on = date.fromisoformat(snap["due_on"])
    state.lapses = snap["lapses"]
    state.last_reviewed_on = date.fromisoformat(snap["last_reviewed_on"]) if snap["last_reviewed_on"] else None
    state.last_reviewed_at = datetime.fromisoformat(snap["last_reviewed_at"]) if snap["last_reviewed_at"] else None
    state.repeat_today = snap["repeat_today"]
    state.skipped_on = date.fromisoformat(snap["skipped_on"]) if snap.get("skipped_on") else None
