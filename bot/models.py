"""Tables: learners, their card states, every review, and the push log."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

# Stable constraint names, so Alembic can alter them on SQLite (batch mode) and PostgreSQL.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UtcDateTime(sa.TypeDecorator):
    """A timezone-aware UTC datetime on every database (SQLite drops the offset on its own)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are ambiguous; pass an aware one")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _utc_datetime(**kwargs: Any) -> Any:
    return Field(sa_type=UtcDateTime, **kwargs)


class Learner(SQLModel, table=True):
    """A person on one platform; the same human on Telegram and Discord is two learners."""

    __table_args__ = (
        sa.UniqueConstraint("platform", "platform_user_id"),
        # Each platform's sweep claims its due learners in (next_push_at, id) order; thousands
        # share one push moment (everyone at 09:00), so the id is in the index too.
        sa.Index("ix_learner_push_due", "platform", "next_push_at", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    platform: str = Field(max_length=16)  # "telegram", "discord", "terminal"
    platform_user_id: str = Field(max_length=64)
    chat_id: str | None = Field(default=None, max_length=64)  # where pushes go
    display_name: str = Field(default="", max_length=128)
    timezone: str = Field(default="UTC", max_length=64)
    push_time: time = Field(default=time(9, 0), sa_column_kwargs={"server_default": "09:00:00"})
    new_per_day: int = Field(default=1, sa_column_kwargs={"server_default": "1"})
    paused: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    active: bool = Field(default=True, sa_column_kwargs={"server_default": sa.true()})
    reminders: bool = Field(default=True, sa_column_kwargs={"server_default": sa.true()})
    # The daily push: the next moment it is due (UTC; indexed, so a sweep is one range scan).
    # NULL while the learner cannot be pushed (blocked, paused, terminal): never scanned.
    # A sweep's claim moves it to the claim's lease expiry and keeps the moment it replaced
    # in ``push_due_at``.
    next_push_at: datetime | None = _utc_datetime(default=None, nullable=True)
    push_due_at: datetime | None = _utc_datetime(default=None, nullable=True)
    last_pushed_at: datetime | None = _utc_datetime(default=None, nullable=True)
    # Why daily pushes were stopped after failing on several days running (the platform kept
    # refusing the message); told to the learner the next time they write, then cleared.
    push_stopped: str | None = Field(default=None, max_length=64)
    current_card_id: str | None = Field(default=None, max_length=16)
    current_asked_at: datetime | None = _utc_datetime(default=None, nullable=True)
    # Interview mode: a missed core point brings the interviewer's follow-up straight away.
    interview: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    # The decks this learner studies, by name ("builtin", a TRAPBOT_DECKS folder's name); None: all.
    decks: list[str] | None = Field(default=None, sa_type=sa.JSON, nullable=True)
    created_at: datetime = _utc_datetime()


def _keep_push_moment_consistent(_mapper: object, _connection: object, learner: Learner) -> None:
    """Every ORM write of a learner keeps two rules of the push schedule, whoever wrote it:
    a learner who cannot be pushed (paused, blocked, no push platform) has no push moment,
    so no snooze or "skip today" gives one back; and a push moment set anew (a snooze, a
    settings change) drops the due moment a sweep's claim kept, so the claim's day is not
    carried over to the new moment."""
    from bot.pushtime import PUSH_PLATFORMS

    if learner.paused or not learner.active or learner.platform not in PUSH_PLATFORMS:
        learner.next_push_at = None
        learner.push_due_at = None
        return
    if sa.inspect(learner).attrs.next_push_at.history.has_changes():
        learner.push_due_at = None


sa.event.listen(Learner, "before_insert", _keep_push_moment_consistent)
sa.event.listen(Learner, "before_update", _keep_push_moment_consistent)


class CardState(SQLModel, table=True):
    """SM-2 state of one card for one learner; ``due_on`` is in the learner's own calendar."""

    __table_args__ = (sa.UniqueConstraint("learner_id", "card_id"),)

    id: int | None = Field(default=None, primary_key=True)
    learner_id: int = Field(foreign_key="learner.id", index=True, ondelete="CASCADE")
    card_id: str = Field(max_length=16)
    repetitions: int = 0
    easiness_hundredths: int = 250
    interval_days: int = 0
    due_on: date = Field(index=True)
    lapses: int = 0
    introduced_on: date  # local date the learner first met the card
    last_reviewed_at: datetime | None = _utc_datetime(default=None, nullable=True)
    last_reviewed_on: date | None = None  # local date of the last scheduling review
    repeat_today: bool = False  # SM-2 step 7: asked again today until it scores 4+
    skipped_on: date | None = None  # /skip puts the card back until the next day


#: The longest grader name a review keeps ("llm:<model> (...) (overridden by you)").
GRADER_CHARS = 64


def fit_grader_name(name: str | None) -> str | None:
    """``name`` cut to fit the column, keeping its start (the judge) and its end (what the
    learner did): PostgreSQL refuses a longer value, SQLite would silently keep it."""
    if name is None or len(name) <= GRADER_CHARS:
        return name
    return name[: GRADER_CHARS - 25].rstrip() + "…" + name[-24:]


class ReviewStatus(StrEnum):
    PENDING = "pending"  # stored, not graded yet (a crash here is recovered at start)
    AWAITING = "awaiting"  # a proposed grade waits for the learner to confirm
    GRADED = "graded"
    UNDONE = "undone"
    FAILED = "failed"  # could not be graded; kept, never lost


class Review(SQLModel, table=True):
    """One submitted answer. Stored before it is graded."""

    id: int | None = Field(default=None, primary_key=True)
    learner_id: int = Field(foreign_key="learner.id", index=True, ondelete="CASCADE")
    card_id: str = Field(max_length=16)
    card_version: str = Field(default="", max_length=32)
    answer: str = Field(sa_type=sa.Text)
    variant_id: str | None = Field(default=None, max_length=64)  # the wording asked; None: the original
    status: str = Field(default=ReviewStatus.PENDING, max_length=16, index=True)
    same_day_repeat: bool = False  # step-7 repeat: changes neither EF nor the interval
    grader: str | None = Field(default=None, max_length=GRADER_CHARS)
    score: float | None = None
    quality: int | None = None
    judge_quality: int | None = None  # what the judge gave before an "I disagree" override
    verdict: dict[str, Any] | None = Field(default=None, sa_type=sa.JSON)
    state_before: dict[str, Any] | None = Field(default=None, sa_type=sa.JSON)  # for /undo
    created_at: datetime = _utc_datetime()
    graded_at: datetime | None = _utc_datetime(default=None, nullable=True)


class PushStatus(StrEnum):
    CLAIMED = "claimed"  # a sweep owns it and is sending; a stale claim is taken over
    SENT = "sent"
    FAILED = "failed"  # transient; retried by a later sweep
    SNOOZED = "snoozed"  # sent, then snoozed by the learner: due again later today
    SKIPPED = "skipped"  # "skip today"
    BLOCKED = "blocked"  # the learner blocked the bot
    ABANDONED = "abandoned"  # failed too often today


class PushLog(SQLModel, table=True):
    """One daily push per learner per local date: claimed before sending, marked sent after."""

    __table_args__ = (sa.UniqueConstraint("learner_id", "local_date"), sa.Index("ix_pushlog_local_date", "local_date"))

    id: int | None = Field(default=None, primary_key=True)
    learner_id: int = Field(foreign_key="learner.id", ondelete="CASCADE")
    local_date: date
    status: str = Field(default=PushStatus.CLAIMED, max_length=16)
    claimed_at: datetime = _utc_datetime()
    sent_at: datetime | None = _utc_datetime(default=None, nullable=True)
    attempts: int = 0


class PushPace(SQLModel, table=True):
    """Send slots shared by every replica: each reserves the next ``n`` slots of a platform
    in one UPDATE, so all replicas together send no faster than the platform's rate."""

    platform: str = Field(primary_key=True, max_length=16)
    next_slot: float = Field(default=0.0, sa_type=sa.Double)  # Unix time of the next free slot


class Asked(SQLModel, table=True):
    """One wording of a card shown to a learner: the original (``variant_id`` None) or a
    variant. Open (``review_id`` None) until answered, so showing the open trap again shows
    the same wording, and the answer records which wording it answered."""

    __table_args__ = (sa.Index("ix_asked_learner_card", "learner_id", "card_id"),)

    id: int | None = Field(default=None, primary_key=True)
    learner_id: int = Field(foreign_key="learner.id", ondelete="CASCADE")
    card_id: str = Field(max_length=16)
    variant_id: str | None = Field(default=None, max_length=64)
    asked_at: datetime = _utc_datetime()
    review_id: int | None = Field(default=None, foreign_key="review.id", ondelete="CASCADE")


class FollowUpStatus(StrEnum):
    OPEN = "open"  # asked; the learner's next free text answers it
    JUDGING = "judging"  # the answer is stored, the judge is reading it
    SELF_CHECK = "self"  # no judge could read it: the learner says whether they got there
    ANSWERED = "answered"
    SKIPPED = "skipped"  # /skip or "Skip the follow-up"
    CLOSED = "closed"  # a new trap was opened, or the grade was undone, before an answer


class FollowUp(SQLModel, table=True):
    """The interviewer's follow-up after an answer that missed a core point: one per review.
    It never changes the review's grade; ``rescued`` says whether the learner got there."""

    id: int | None = Field(default=None, primary_key=True)
    review_id: int = Field(foreign_key="review.id", unique=True, ondelete="CASCADE")
    learner_id: int = Field(foreign_key="learner.id", index=True, ondelete="CASCADE")
    card_id: str = Field(max_length=16)
    point_id: str = Field(max_length=64)
    status: str = Field(default=FollowUpStatus.OPEN, max_length=16)
    asked_at: datetime = _utc_datetime()
    answer: str | None = Field(default=None, sa_type=sa.Text)
    verdict: str | None = Field(default=None, max_length=16)  # the point's verdict, or the learner's word
    judge: str | None = Field(default=None, max_length=64)
    rescued: bool | None = None
    answered_at: datetime | None = _utc_datetime(default=None, nullable=True)


class GroupChat(SQLModel, table=True):
    """A group chat's own settings (a Telegram group): the decks /trap draws from there.
    Its members keep their own schedules; in the group the group's decks apply, in private
    each member's own. ``revision`` counts changes, so two admins' toggles never overwrite
    each other (each one is a compare-and-set on it)."""

    __tablename__ = "group_chat"
    __table_args__ = (sa.UniqueConstraint("platform", "chat_id"),)

    id: int | None = Field(default=None, primary_key=True)
    platform: str = Field(max_length=16)
    chat_id: str = Field(max_length=64)
    decks: list[str] | None = Field(default=None, sa_type=sa.JSON, nullable=True)  # None: all
    revision: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    updated_by: str = Field(default="", max_length=64)  # the platform user id of the last change
    updated_at: datetime = _utc_datetime()
