"""Pushes at the reliability edges (issue 42): a retry near local midnight, a timezone change
during a send, a snooze across midnight, /forget just before a send."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlmodel import Session, select

from bot.actions import Action, Verb
from bot.clock import FixedClock
from bot.models import Learner, PushLog, PushStatus
from bot.reminders import ReminderSweeper
from bot.replies import Reply
from bot.transport import PushOutcome
from tests.test_reminders import (
    RecordingTransport,
    SlowTransport,
    add_learner,
    make_engine_for,
    push_rows,
    sweeper_for,
)


class TimedTransport(RecordingTransport):
    """Records each accepted push with the injected clock's time; fails a learner's first
    ``fail_first`` attempts."""

    def __init__(self, clock: FixedClock, fail_first: dict[str, int] | None = None, **kwargs):
        super().__init__(**kwargs)
        self.clock = clock
        self.fail_first = dict(fail_first or {})
        self.at: list[tuple[str, datetime]] = []

    async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
        user = learner.platform_user_id
        if self.fail_first.get(user):
            self.fail_first[user] -= 1
            return PushOutcome.FAILED
        outcome = await super().push(learner, replies)
        if outcome is PushOutcome.SENT:
            self.at.append((user, self.clock.now()))
        return outcome


async def sweep_every(sweeper: ReminderSweeper, clock: FixedClock, start: datetime, end: datetime, step: timedelta) -> None:
    moment = start
    while moment < end:
        clock.set(moment)
        await sweeper.sweep()
        moment += step


def around_midnights(first: date, days: int) -> list[datetime]:
    """Sweep moments: every 2 minutes from 23:56 to 00:12 UTC on each of ``days`` nights, and noon."""
    moments = []
    for n in range(days):
        midnight = datetime.combine(first + timedelta(days=n + 1), datetime.min.time(), tzinfo=UTC)
        moments += [midnight + timedelta(minutes=m) for m in range(-4, 13, 2)] + [midnight + timedelta(hours=12)]
    return moments


def sent_days(engine, learner_id: int) -> list[date]:
    return [row.local_date for row in push_rows(engine) if row.learner_id == learner_id and row.status == PushStatus.SENT]


async def test_a_send_retried_after_the_lease_near_midnight_keeps_its_day(db, small_deck) -> None:
    """23:58 UTC, the first send fails: the retry after the 5-minute lease (00:03+) still counts
    for the day it was due, and the next day's own 23:58 push comes. Three due days, three pushes."""
    clock = FixedClock(datetime(2026, 3, 2, 23, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = TimedTransport(clock, fail_first={"late": 1})
    learner_id = await add_learner(engine, "late", "UTC", "23:58")
    sweeper = sweeper_for(engine, transport)
    for moment in around_midnights(date(2026, 3, 2), 3):
        clock.set(moment)
        await sweeper.sweep()
    assert sent_days(engine, learner_id) == [date(2026, 3, 2), date(2026, 3, 3), date(2026, 3, 4)]
    assert len(transport.users) == 3
    assert transport.at[0][1].date() == date(2026, 3, 3)  # the retry went out after midnight


async def test_a_crash_after_claiming_near_midnight_loses_no_day(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 23, 58, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    learner_id = await add_learner(engine, "late", "UTC", "23:58")
    dying = RecordingTransport(die={"late"})
    try:
        await sweeper_for(engine, dying).sweep()
    except asyncio.CancelledError:
        pass  # the process died mid-send; its claim is held until the lease runs out
    transport = TimedTransport(clock)
    restarted = sweeper_for(make_engine_for(db, small_deck, clock), transport)
    for moment in around_midnights(date(2026, 3, 2), 3)[1:]:
        clock.set(moment)
        await restarted.sweep()
    assert sent_days(engine, learner_id) == [date(2026, 3, 2), date(2026, 3, 3), date(2026, 3, 4)]
    assert len(transport.users) == 3


async def test_a_timezone_change_during_a_send_gives_no_second_push_that_local_day(db, small_deck) -> None:
    """23:00 UTC push; mid-send the learner moves to Tokyo (08:00 on 3 March there). The push
    they got is 3 March's in Tokyo: 23:00 Tokyo on 3 March brings nothing, 4 March does."""
    clock = FixedClock(datetime(2026, 3, 2, 23, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    learner_id = await add_learner(engine, "flyer", "UTC", "23:00")
    transport = SlowTransport(clock)
    transport.hold["flyer"] = asyncio.Event()
    sweep = asyncio.create_task(sweeper_for(engine, transport).sweep())
    await transport.holding.wait()
    await engine.update_settings(learner_id, "timezone", "Asia/Tokyo")
    transport.hold["flyer"].set()
    await sweep
    times: list[datetime] = []

    class Stamped(SlowTransport):
        async def push(self, learner, replies):
            times.append(clock.now())
            return await super().push(learner, replies)

    later = Stamped(clock)
    sweeper = sweeper_for(engine, later)
    await sweep_every(sweeper, clock, datetime(2026, 3, 2, 23, 5, tzinfo=UTC), datetime(2026, 3, 4, 15, 0, tzinfo=UTC),
                      timedelta(minutes=30))
    tokyo = ZoneInfo("Asia/Tokyo")
    days = Counter(moment.astimezone(tokyo).date() for moment in [datetime(2026, 3, 2, 23, 0, tzinfo=UTC), *times])
    assert days == {date(2026, 3, 3): 1, date(2026, 3, 4): 1}, days


async def test_a_twelve_hour_snooze_across_midnight_keeps_the_next_days_push(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    learner_id = await add_learner(engine, "sleepy", "UTC", "09:00")
    transport = TimedTransport(clock)
    sweeper = sweeper_for(engine, transport)
    await sweeper.sweep()
    clock.set(datetime(2026, 3, 2, 13, 0, tzinfo=UTC))
    await engine.act(learner_id, Action(Verb.SNOOZE, arg="12").encode())  # back at 01:00 on 3 March
    await sweep_every(sweeper, clock, datetime(2026, 3, 2, 13, 30, tzinfo=UTC), datetime(2026, 3, 3, 12, 0, tzinfo=UTC),
                      timedelta(minutes=30))
    assert [at for _, at in transport.at] == [datetime(2026, 3, 2, 9, 0, tzinfo=UTC), datetime(2026, 3, 3, 1, 0, tzinfo=UTC),
                                              datetime(2026, 3, 3, 9, 0, tzinfo=UTC)]
    assert sent_days(engine, learner_id) == [date(2026, 3, 2), date(2026, 3, 3)]


async def test_no_push_reaches_a_learner_who_forgot_before_the_send(db, small_deck) -> None:
    """/forget lands after the push was chosen, before its slot: the check right before the
    send finds no learner, and nothing is sent."""
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    first = await add_learner(engine, "first")
    leaving = await add_learner(engine, "leaving")

    class ForgetsOnFirstSend(RecordingTransport):
        async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
            if learner.id == first:
                await asyncio.sleep(0.8)  # the second push's slot is 1 s after the first
                await engine.forget(leaving, confirmed=True)
            return await super().push(learner, replies)

    transport = ForgetsOnFirstSend()
    report = await ReminderSweeper(engine, {"telegram": transport}, rates={"telegram": 1.0}).sweep()
    assert transport.users == ["first"] and report.not_claimed == 1 and report.errors == 0
    with Session(db) as session:
        assert session.exec(select(Learner).where(Learner.id == leaving)).first() is None
        assert [row.learner_id for row in session.exec(select(PushLog))] == [first]
