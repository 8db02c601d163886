"""The daily push as the learner sees it: the trap with snooze and skip-today buttons, and
what those buttons do."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import sqlalchemy as sa
from sqlmodel import Session, select

from bot.actions import Action, Verb
from bot.learners import LearnerRoom
from bot.locks import LearnerLocks
from bot.models import Learner, PushLog, PushStatus
from bot.pushtime import tomorrows_push_at
from bot.replies import Button, Reply, ReplyKind
from cards.wording import wording_ref


class SnoozeRoom(LearnerRoom):
    """Needs the engine's ``_locks`` and ``_next_trap``/``_next_traps_in`` (the choice of trap)."""

    _locks: LearnerLocks

    async def _snooze(self, learner_id: int, action: Action) -> list[Reply]:
        """Snooze today's push for some hours, or skip it until tomorrow."""
        learner = self._require(learner_id)
        now = self.clock.now()
        today = self.today(learner)
        if action.verb is Verb.SKIP_TODAY:
            due, status = tomorrows_push_at(learner.push_time, learner.timezone, now), PushStatus.SKIPPED
            message = "No more reminders today. See you tomorrow."
        else:
            hours = action.int_arg(1, 12)
            due, status = now + timedelta(hours=hours), PushStatus.SNOOZED
            message = f"Snoozed: I'll remind you in {hours} h."
        with Session(self.db) as session:
            db_learner = session.get(Learner, learner_id)
            assert db_learner is not None
            db_learner.next_push_at = due
            log_row = session.exec(
                select(PushLog).where(PushLog.learner_id == learner_id, PushLog.local_date == today)
            ).first()
            if log_row is None:
                log_row = PushLog(learner_id=learner_id, local_date=today, claimed_at=now)
            log_row.status = status
            session.add_all([db_learner, log_row])
            session.commit()
        return [Reply(message)]

    async def push_replies(self, learner_id: int) -> list[Reply]:
        """The daily push: the next trap with answer, snooze and skip-today buttons; empty when
        there is nothing to ask."""
        # The lock, the database work and the unlock run in one worker-thread call, off the
        # event loop.
        replies = await self._locks.run(
            learner_id, lambda bind: self._next_trap(learner_id, extra_new=False, bind=bind)
        )
        return self._as_push(replies)

    async def push_replies_many(self, learner_ids: list[int]) -> dict[int, list[Reply]]:
        """``push_replies`` for a page of learners in one transaction (the sweep's path). A
        learner left out (busy right now, or unknown) is the caller's to ask with
        ``push_replies``."""

        def work(bind: sa.Connection | None, held: list[int]) -> dict[int, list[Reply]]:
            with Session(bind or self.db, expire_on_commit=False) as session:
                return self._next_traps_in(session, held, extra_new=False)

        chosen = await self._locks.run_free(learner_ids, work)
        return {learner_id: self._as_push(replies) for learner_id, replies in (chosen or {}).items()}

    def _as_push(self, replies: list[Reply]) -> list[Reply]:
        question = replies[-1]
        if question.kind not in (ReplyKind.QUESTION, ReplyKind.CONFIRM):
            return []
        extra = (
            Button("Snooze 1 h", Action(Verb.SNOOZE, arg="1").encode()),
            Button("Snooze 3 h", Action(Verb.SNOOZE, arg="3").encode()),
            Button("Skip today", Action(Verb.SKIP_TODAY).encode()),
        )
        first = ()
        if question.kind is ReplyKind.QUESTION and question.card_id:
            ref = wording_ref(question.card_id, question.wording)
            first = ((Button("Answer now", Action(Verb.ANSWER, arg=ref).encode()),),)
        pushed = replace(question, buttons=first + question.buttons + (extra,), ephemeral=False)
        return [*replies[:-1], pushed]
