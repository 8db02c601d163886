"""The engine's ground floor: finding and creating learners, their local day, and the small
lookups every room of the engine shares (``QuizEngine`` and the rooms beside it inherit it)."""

from __future__ import annotations

from datetime import date, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine as DbEngine
from sqlmodel import Session, select

from bot.actions import Action, InvalidAction, Verb
from bot.clock import Clock, local_date
from bot.models import CardState, Learner
from bot.prefs import is_zone
from bot.pushtime import PUSH_PLATFORMS, next_push_at
from bot.replies import Button, Reply, ReplyKind


class LearnerRoom:
    """Learners and shared lookups; the engine sets ``db``, ``clock`` and ``default_new_per_day``."""

    db: DbEngine
    clock: Clock
    default_new_per_day: int
    zone_notices: dict[int, str]  # learner id -> the unreadable zone repaired, not told yet

    def learner(
        self,
        platform: str,
        platform_user_id: str | int,
        *,
        display_name: str = "",
        chat_id: str | int | None = None,
    ) -> Learner:
        """The learner for this platform user, created on first contact."""
        user_id = str(platform_user_id)
        with Session(self.db, expire_on_commit=False) as session:
            found = session.exec(
                select(Learner).where(Learner.platform == platform, Learner.platform_user_id == user_id)
            ).first()
            if found is not None:
                changed = self._repair_zone(found)
                if display_name and found.display_name != display_name[:128]:
                    found.display_name, changed = display_name[:128], True
                if chat_id is not None and found.chat_id != str(chat_id):
                    found.chat_id, changed = str(chat_id), True
                if changed:
                    session.add(found)
                    session.commit()
                return found
            learner = Learner(
                platform=platform,
                platform_user_id=user_id,
                display_name=display_name[:128],
                chat_id=str(chat_id) if chat_id is not None else None,
                new_per_day=self.default_new_per_day,
                created_at=self.clock.now(),
            )
            learner.next_push_at = self._push_moment(learner)
            session.add(learner)
            try:
                session.commit()
            except sa.exc.IntegrityError:  # created by a concurrent first message
                session.rollback()
                return self.learner(platform, user_id, display_name=display_name, chat_id=chat_id)
            return learner

    def set_active(self, learner_id: int | None, active: bool) -> bool:
        """Mark a learner reachable or not (blocked the bot, came back); True when it changed.
        The reminder sweep skips inactive learners."""
        if learner_id is None:
            return False
        with Session(self.db) as session:
            learner = session.get(Learner, learner_id)
            if learner is None or learner.active == active:
                return False
            learner.active = active
            learner.next_push_at = self._push_moment(learner)
            session.add(learner)
            session.commit()
            return True

    def _push_moment(self, learner: Learner) -> datetime | None:
        """The learner's next daily push; None while they cannot be pushed (blocked, paused,
        no push platform), so the reminder sweep never scans them."""
        if not learner.active or learner.paused or learner.platform not in PUSH_PLATFORMS:
            return None
        return next_push_at(learner.push_time, learner.timezone, self.clock.now(), learner.last_pushed_at)

    def get_learner(self, learner_id: int) -> Learner | None:
        with Session(self.db, expire_on_commit=False) as session:
            learner = session.get(Learner, learner_id)
            if learner is not None and self._repair_zone(learner):
                session.add(learner)
                session.commit()
            return learner

    def _repair_zone(self, learner: Learner) -> bool:
        """A stored time zone that is no zone (saved by an older version) becomes UTC, once,
        and the learner is told on their next reply; True when the row changed."""
        if is_zone(learner.timezone):
            return False
        self.zone_notices[learner.id] = learner.timezone  # type: ignore[index]
        learner.timezone = "UTC"
        learner.next_push_at = self._push_moment(learner)
        return True

    def with_notices(self, learner_id: int, replies: list[Reply]) -> list[Reply]:
        """``replies`` after what this learner has not been told yet (a repaired setting)."""
        bad = self.zone_notices.pop(learner_id, None)
        if bad is None:
            return replies
        note = Reply(
            f"Your stored time zone {bad[:64]!r} is not one I can read, so I set it to UTC. "
            "Send `/settings timezone` with your city (Berlin) or offset (UTC+2) to fix it.",
            kind=ReplyKind.INFO,
        )
        return [note, *replies]

    def today(self, learner: Learner) -> date:
        return local_date(self.clock.now(), learner.timezone)

    # ----- helpers ----------------------------------------------------------------------

    def _require(self, learner_id: int) -> Learner:
        learner = self.get_learner(learner_id)
        if learner is None:
            raise InvalidAction("unknown learner; send /start")
        return learner

    def _state(self, session: Session, learner_id: int | None, card_id: str) -> CardState | None:
        return session.exec(
            select(CardState).where(CardState.learner_id == learner_id, CardState.card_id == card_id)
        ).first()

    @staticmethod
    def _no_open_trap() -> Reply:
        return Reply(
            "There is no open trap to answer. Send /trap for one.",
            kind=ReplyKind.INFO,
            buttons=((Button("Give me a trap", Action(Verb.NEXT).encode()),),),
        )

    @staticmethod
    def _unknown_learner() -> Reply:
        return Reply("I don't know you yet: send /start.", kind=ReplyKind.ERROR)
