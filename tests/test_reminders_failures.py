"""Pushes that cannot go out (issue 42): paused learners keep no push moment, and a push that
keeps failing is bounded, then stopped, and the learner told."""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from bot.actions import Action, Verb
from bot.clock import FixedClock
from bot.learners import take_push_notice
from bot.models import Learner, PushStatus
from bot.reminders import CLAIM_LEASE, MAX_ATTEMPTS, STOP_AFTER_DAYS
from bot.replies import Reply
from bot.transport import PushOutcome
from tests.test_reminders import (
    RecordingTransport,
    add_learner,
    make_engine_for,
    push_rows,
    sweeper_for,
)
from tests.test_reminders_faults import TimedTransport, sweep_every


async def test_a_paused_learner_never_gets_a_push_moment_back(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    learner_id = await add_learner(engine, "resting")
    await engine.update_settings(learner_id, "pause", "")
    await engine.act(learner_id, Action(Verb.SNOOZE, arg="3").encode())
    assert engine.get_learner(learner_id).next_push_at is None
    await engine.act(learner_id, Action(Verb.SKIP_TODAY).encode())
    assert engine.get_learner(learner_id).next_push_at is None
    await engine.update_settings(learner_id, "resume", "")
    assert engine.get_learner(learner_id).next_push_at is not None  # resuming brings it back


async def test_the_sweep_clears_push_moments_an_older_version_left_on_paused_and_blocked_rows(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    paused, blocked, _ = [await add_learner(engine, name) for name in ("paused", "blocked", "live")]
    with db.begin() as connection:  # as a snooze by a paused learner wrote it before this fix
        connection.execute(sa.text("UPDATE learner SET paused = :t, next_push_at = :at WHERE id = :id"),
                           {"t": True, "at": datetime(2026, 3, 2, 9, 0), "id": paused})
        connection.execute(sa.text("UPDATE learner SET active = :f, next_push_at = :at WHERE id = :id"),
                           {"f": False, "at": datetime(2026, 3, 1, 9, 0), "id": blocked})
    transport = RecordingTransport()
    report = await sweeper_for(engine, transport).sweep()
    assert transport.users == ["live"] and report.cleared == 2 and report.due == 1
    assert engine.get_learner(paused).next_push_at is None and engine.get_learner(blocked).next_push_at is None


class Refusing(RecordingTransport):
    """A platform that never takes this learner's push: the message is too long for it."""

    def __init__(self, clock: FixedClock):
        super().__init__()
        self.clock = clock
        self.attempts: list[datetime] = []

    async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
        self.attempts.append(self.clock.now())
        raise ValueError("Message is too long")


async def test_a_push_that_always_fails_is_stopped_and_the_learner_told(db, small_deck, caplog) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    learner_id = await add_learner(engine, "long", "UTC", "09:00")
    transport = Refusing(clock)
    sweeper = sweeper_for(engine, transport)
    caplog.set_level(logging.WARNING, logger="bot.reminders")
    for day in range(STOP_AFTER_DAYS + 2):
        start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC) + timedelta(days=day)
        await sweep_every(sweeper, clock, start, start + 7 * (CLAIM_LEASE + timedelta(minutes=1)), CLAIM_LEASE + timedelta(minutes=1))
    per_day = Counter(at.date() for at in transport.attempts)
    assert list(per_day.values()) == [MAX_ATTEMPTS] * STOP_AFTER_DAYS  # bounded, then nothing more
    learner = engine.get_learner(learner_id)
    assert learner.paused and learner.next_push_at is None and "ValueError" in learner.push_stopped
    failures = [r for r in caplog.records if "failed this sweep" in r.getMessage()]
    assert len(failures) == MAX_ATTEMPTS * STOP_AFTER_DAYS  # one line a sweep for the one kind
    assert all(r.exc_info is None for r in caplog.records) and "Message is too long" in failures[0].getMessage()
    assert [row.status for row in push_rows(engine)] == [PushStatus.ABANDONED.value] * STOP_AFTER_DAYS
    notice, *_ = await engine.next_trap(learner_id)  # the next time they write
    assert "paused" in notice.text and "/settings resume" in notice.text and "ValueError" in notice.text
    assert take_push_notice(db, learner_id) is None  # told once
    assert "paused" not in (await engine.act(learner_id, Action(Verb.NEXT).encode()))[0].text
    await engine.update_settings(learner_id, "resume", "")
    assert engine.get_learner(learner_id).next_push_at is not None


async def test_failures_on_some_days_only_never_stop_the_pushes(db, small_deck) -> None:
    """A day given up between delivered days (a platform outage) does not count towards stopping."""
    clock = FixedClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    learner_id = await add_learner(engine, "flaky", "UTC", "09:00")
    transport = TimedTransport(clock)
    sweeper = sweeper_for(engine, transport)
    for day in range(2 * STOP_AFTER_DAYS):
        transport.fail_first["flaky"] = MAX_ATTEMPTS if day % 2 == 0 else 0  # every other day refused
        start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC) + timedelta(days=day)
        await sweep_every(sweeper, clock, start, start + 7 * (CLAIM_LEASE + timedelta(minutes=1)), CLAIM_LEASE + timedelta(minutes=1))
    assert not engine.get_learner(learner_id).paused
    assert len(transport.users) == STOP_AFTER_DAYS


def test_the_upgrade_clears_push_moments_left_on_learners_who_cannot_be_pushed(tmp_path) -> None:
    from alembic import command

    from bot.db import alembic_config, make_engine

    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_engine(url).dispose()
    command.upgrade(alembic_config(url), "i15_interview")  # the schema before issue 42
    db = make_engine(url)
    moment = datetime(2026, 3, 2, 9, 0)
    with db.begin() as connection:
        for user, paused, active in (("paused", True, True), ("blocked", False, False), ("live", False, True)):
            connection.execute(sa.text(
                "INSERT INTO learner (platform, platform_user_id, display_name, timezone, push_time, new_per_day, paused, "
                "active, reminders, interview, next_push_at, created_at) VALUES ('telegram', :u, '', 'UTC', '09:00:00', 1, "
                ":p, :a, 1, 0, :m, :m)"), {"u": user, "p": paused, "a": active, "m": moment})
    command.upgrade(alembic_config(url), "head")
    with db.connect() as connection:
        moments = dict(connection.execute(sa.text("SELECT platform_user_id, next_push_at FROM learner")).all())
    db.dispose()
    assert moments["paused"] is None and moments["blocked"] is None and moments["live"] is not None
