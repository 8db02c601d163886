"""Daily pushes: on time in every timezone, exactly once, across crashes, restarts and workers."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select

from bot.actions import Action, Verb
from bot.clock import FixedClock
from bot.db import make_engine
from bot.engine import QuizEngine
from bot.models import Learner, PushLog, PushStatus
from bot.pushtime import local_push_moment, next_push_at
from bot.reminders import CLAIM_LEASE, Coalescer, ReminderSweeper, SharedPace
from bot.replies import Reply
from bot.transport import PushOutcome
from grader.selfgrade import SelfGrader


class RecordingTransport:
    """A platform that records every push; it can fail, block or die on chosen learners."""

    platform = "telegram"

    def __init__(
        self,
        *,
        blocked: set[str] = frozenset(),
        fail: set[str] = frozenset(),
        die: set[str] = frozenset(),
        hang_after: int | None = None,
    ):
        self.sent: list[tuple[str, list[Reply]]] = []
        self.blocked, self.fail, self.die = set(blocked), set(fail), set(die)
        self.hang_after = hang_after
        self.hanging = asyncio.Event()

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
        user = learner.platform_user_id
        if self.hang_after is not None and len(self.sent) >= self.hang_after:
            self.hanging.set()
            await asyncio.Event().wait()  # stuck mid-send until the process is killed
        if user in self.die:
            self.die.discard(user)
            raise asyncio.CancelledError  # the process is killed between claim and send
        if user in self.blocked:
            return PushOutcome.BLOCKED
        if user in self.fail:
            return PushOutcome.FAILED
        self.sent.append((user, replies))
        return PushOutcome.SENT

    @property
    def users(self) -> list[str]:
        return [user for user, _ in self.sent]


def make_engine_for(db, deck, clock) -> QuizEngine:
    return QuizEngine(db, deck, SelfGrader(), clock)


def sweeper_for(engine: QuizEngine, transport: RecordingTransport) -> ReminderSweeper:
    return ReminderSweeper(engine, {"telegram": transport}, rates={"telegram": 10_000.0})


async def add_learner(engine: QuizEngine, user: str, tz: str = "UTC", at: str = "09:00") -> int:
    learner = engine.learner("telegram", user, chat_id=user)
    await engine.update_settings(learner.id, "timezone", tz)
    await engine.update_settings(learner.id, "time", at)
    return learner.id  # type: ignore[return-value]


def push_rows(engine: QuizEngine) -> list[PushLog]:
    with Session(engine.db) as session:
        return list(session.exec(select(PushLog).order_by(PushLog.learner_id, PushLog.local_date)))


def test_push_moments_across_dst() -> None:
    ny = "America/New_York"
    # 02:30 does not exist on 8 March 2026 in New York: it lands at 03:30 EDT = 07:30 UTC.
    assert local_push_moment(date(2026, 3, 8), time(2, 30), ny) == datetime(2026, 3, 8, 7, 30, tzinfo=UTC)
    # 01:30 happens twice on 1 November 2026: the first (EDT, 05:30 UTC) is the push.
    assert local_push_moment(date(2026, 11, 1), time(1, 30), ny) == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
    assert local_push_moment(date(2026, 11, 2), time(1, 30), ny) == datetime(2026, 11, 2, 6, 30, tzinfo=UTC)
    pushed = datetime(2026, 3, 2, 9, tzinfo=UTC)
    assert next_push_at(time(9), "UTC", pushed, pushed) == datetime(2026, 3, 3, 9, tzinfo=UTC)
    assert next_push_at(time(9), "UTC", datetime(2026, 3, 2, 12, tzinfo=UTC), None) == pushed


async def test_learners_at_the_ends_of_the_clock(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 1, 18, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = RecordingTransport()
    sweeper = sweeper_for(engine, transport)
    await add_learner(engine, "kiritimati", "UTC+14")  # 09:00 local on 2 March = 19:00 UTC on 1 March
    await add_learner(engine, "baker", "UTC-12")  # 09:00 local on 1 March = 21:00 UTC on 1 March
    await sweeper.sweep()
    assert transport.users == []
    clock.set(datetime(2026, 3, 1, 19, 0, tzinfo=UTC))
    await sweeper.sweep()
    assert transport.users == ["kiritimati"]
    clock.set(datetime(2026, 3, 1, 21, 0, tzinfo=UTC))
    await sweeper.sweep()
    await sweeper.sweep()
    assert transport.users == ["kiritimati", "baker"]
    days = {(row.learner_id, row.local_date, row.status) for row in push_rows(engine)}
    assert {(d, s) for _, d, s in days} == {(date(2026, 3, 2), "sent"), (date(2026, 3, 1), "sent")}


async def test_dst_days_push_once(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 8, 5, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = RecordingTransport()
    sweeper = sweeper_for(engine, transport)
    await add_learner(engine, "spring", "America/New_York", "02:30")
    for minute in range(0, 6 * 60, 30):  # 05:00 to 11:00 UTC in 30-minute sweeps
        clock.set(datetime(2026, 3, 8, 5, 0, tzinfo=UTC) + timedelta(minutes=minute))
        await sweeper.sweep()
        if clock.now() < datetime(2026, 3, 8, 7, 30, tzinfo=UTC):
            assert transport.users == []
    assert transport.users == ["spring"]

    clock.set(datetime(2026, 11, 1, 4, 0, tzinfo=UTC))
    fall = await add_learner(engine, "fall", "America/New_York", "01:30")
    # Learner "spring" has its own next push; only look at "fall".
    for minute in range(0, 4 * 60, 15):  # 04:00 to 08:00 UTC covers both 01:30s
        clock.set(datetime(2026, 11, 1, 4, 0, tzinfo=UTC) + timedelta(minutes=minute))
        await sweeper.sweep()
    assert transport.users.count("fall") == 1
    assert [r.local_date for r in push_rows(engine) if r.learner_id == fall] == [date(2026, 11, 1)]


async def test_timezone_change_after_todays_push_does_not_push_again(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = RecordingTransport()
    sweeper = sweeper_for(engine, transport)
    learner_id = await add_learner(engine, "traveller", "UTC+14", "09:00")  # UTC+14: already 23:00 on 2 March
    await sweeper.sweep()
    assert transport.users == ["traveller"]
    # Flies west to UTC-12, where it is 21:00 on 1 March. The push for 2 March already went
    # out, so 09:00 on 2 March in UTC-12 (21:00 UTC) brings nothing; 3 March does.
    await engine.update_settings(learner_id, "timezone", "UTC-12")
    for hours in range(36):
        clock.set(datetime(2026, 3, 2, 9, 0, tzinfo=UTC) + timedelta(hours=hours))
        await sweeper.sweep()
    assert transport.users == ["traveller"]
    clock.set(datetime(2026, 3, 3, 21, 0, tzinfo=UTC))  # 09:00 on 3 March in UTC-12
    await sweeper.sweep()
    assert transport.users == ["traveller", "traveller"]
    assert [row.local_date for row in push_rows(engine)] == [date(2026, 3, 2), date(2026, 3, 3)]


async def test_crash_between_claim_and_send_is_retried_once(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = RecordingTransport(die={"ada"})
    sweeper = sweeper_for(engine, transport)
    await add_learner(engine, "ada")
    with pytest.raises(asyncio.CancelledError):
        await sweeper.sweep()
    [row] = push_rows(engine)
    assert row.status == PushStatus.CLAIMED and transport.users == []
    # A restarted process inside the lease leaves the claim alone: no double send.
    restarted = sweeper_for(make_engine_for(db, small_deck, clock), transport)
    clock.advance(minutes=1)
    await restarted.sweep()
    assert transport.users == []
    clock.advance(seconds=CLAIM_LEASE.total_seconds())
    await restarted.sweep()
    await restarted.sweep()
    assert transport.users == ["ada"]
    [row] = push_rows(engine)
    assert (row.status, row.attempts) == (PushStatus.SENT, 2)


async def test_two_sweeps_at_once_push_each_learner_once(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine_a = make_engine_for(db, small_deck, clock)
    engine_b = make_engine_for(db, small_deck, clock)
    for i in range(40):
        await add_learner(engine_a, f"u{i}")
    transport = RecordingTransport()
    a = ReminderSweeper(engine_a, {"telegram": transport}, batch_size=7, rates={"telegram": 10_000.0})
    b = ReminderSweeper(engine_b, {"telegram": transport}, batch_size=5, rates={"telegram": 10_000.0})
    await asyncio.gather(a.sweep(), b.sweep())
    await asyncio.gather(a.sweep(), b.sweep())
    assert sorted(transport.users) == sorted(f"u{i}" for i in range(40))


async def test_restart_mid_sweep_loses_and_duplicates_nothing(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    for i in range(30):
        await add_learner(engine, f"u{i}")
    transport = RecordingTransport(hang_after=10)
    # Paced at 20/s: the next send of the page is still waiting for its slot when the 11th hangs.
    first_run = ReminderSweeper(engine, {"telegram": transport}, batch_size=4, rates={"telegram": 20.0})
    task = asyncio.create_task(first_run.sweep())
    await transport.hanging.wait()
    task.cancel()  # killed in the middle of the sweep, during the 11th send
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(transport.sent) == 10
    transport.hang_after = None
    restarted = sweeper_for(make_engine_for(db, small_deck, clock), transport)
    await restarted.sweep()  # the 11th learner's claim is still within its lease: left alone
    assert len(transport.users) == 29
    clock.advance(seconds=CLAIM_LEASE.total_seconds() + 60)
    await restarted.sweep()  # the dead claim has expired: taken over and sent, once
    assert sorted(transport.users) == sorted(f"u{i}" for i in range(30))


async def test_blocked_learners_are_deactivated_and_idle_ones_wait(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = RecordingTransport(blocked={"gone"})
    sweeper = sweeper_for(engine, transport)
    gone = await add_learner(engine, "gone")
    done = await add_learner(engine, "done")
    paused = await add_learner(engine, "paused")
    await engine.update_settings(paused, "pause", "")
    # "done" has already met today's new trap and has nothing due.
    await engine.next_trap(done)
    [confirm] = await engine.submit_answer(done, "the proxy reward is not the goal")
    await engine.act(done, Action(Verb.RATE, confirm.review_id, "5").encode())
    report = await sweeper.sweep()
    assert transport.users == [] and report.blocked == 1 and report.nothing_to_ask == 1
    assert engine.get_learner(gone).active is False
    clock.advance(days=1)
    await sweeper.sweep()
    assert transport.users == ["done"]  # due again; "gone" is never pushed again, "paused" waits


async def test_push_carries_the_trap_and_snooze_buttons(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = RecordingTransport()
    sweeper = sweeper_for(engine, transport)
    learner_id = await add_learner(engine, "ada")
    await sweeper.sweep()
    [(_, replies)] = transport.sent
    push = replies[-1]
    datas = [Action.decode(b.data) for row in push.buttons for b in row]
    assert push.card_id == "rl-91" and not push.ephemeral
    assert Action(Verb.ANSWER, arg="rl-91") in datas and Action(Verb.SKIP_TODAY) in datas
    snooze = next(a for a in datas if a.verb is Verb.SNOOZE and a.arg == "3")
    [reply] = await engine.act(learner_id, snooze.encode())
    assert "3 h" in reply.text
    clock.advance(hours=2)
    await sweeper.sweep()
    assert len(transport.sent) == 1
    clock.advance(hours=1, minutes=1)
    await sweeper.sweep()
    assert len(transport.sent) == 2  # the snoozed push comes back, once
    [reply] = await engine.act(learner_id, Action(Verb.SKIP_TODAY).encode())
    clock.advance(hours=4)
    await sweeper.sweep()
    assert len(transport.sent) == 2


WORKER = """
import asyncio, sys
from datetime import datetime
from pathlib import Path
from bot.clock import FixedClock
from bot.db import make_engine
from bot.engine import QuizEngine
from bot.reminders import ReminderSweeper
from bot.transport import PushOutcome
from cards.deck import load_deck
from grader.selfgrade import SelfGrader

url, deck_dir, out, start = sys.argv[1:5]


class FileTransport:
    platform = "telegram"

    async def push(self, learner, replies):
        with open(out, "a") as handle:  # one short line per push: appends never interleave
            handle.write(learner.platform_user_id + "\\n")
        return PushOutcome.SENT


engine = QuizEngine(make_engine(url), load_deck(Path(deck_dir)), SelfGrader(), FixedClock(datetime.fromisoformat(start)))
sweeper = ReminderSweeper(engine, {"telegram": FileTransport()}, batch_size=25, rates={"telegram": 10_000.0})
report = asyncio.run(sweeper.sweep())
print(report.due, report.sent, report.contended, report.not_claimed)
"""


@pytest.mark.slow  # the PostgreSQL soak: 300 learners, two processes (make test-slow)
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_two_worker_processes_on_postgresql(db_url: str, small_deck, tmp_path: Path) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(make_engine(db_url), small_deck, clock)

    async def setup() -> None:
        for i in range(300):
            await add_learner(engine, f"u{i}")

    asyncio.run(setup())
    out = tmp_path / "pushed.txt"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    args = [sys.executable, str(script), db_url, str(tmp_path / "deck"), str(out), clock.now().isoformat()]
    workers = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    reports = []
    for worker in workers:
        report, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        reports.append([int(n) for n in report.split()])
    pushed = out.read_text().split()
    assert len(pushed) == 300 and len(set(pushed)) == 300
    # The claims were disjoint: between them the two sweeps read each due learner once.
    assert sum(due for due, *_ in reports) == 300
    assert sum(sent for _, sent, *_ in reports) == 300
    assert all(contended == 0 and changed == 0 for *_, contended, changed in reports)


class SlowTransport(RecordingTransport):
    """A platform whose sends take ``delay`` on the injected clock, and can be held on a learner."""

    def __init__(self, clock: FixedClock, delay: timedelta = timedelta(0), platform: str = "telegram", **kwargs):
        super().__init__(**kwargs)
        self.clock, self.delay, self.platform = clock, delay, platform
        self.hold: dict[str, asyncio.Event] = {}
        self.holding = asyncio.Event()

    async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
        gate = self.hold.get(learner.platform_user_id)
        if gate is not None:
            self.holding.set()
            await gate.wait()
        self.clock.advance(seconds=self.delay.total_seconds())
        return await super().push(learner, replies)


async def test_a_send_finishing_after_local_midnight_keeps_the_next_day(db, small_deck) -> None:
    """The 23:59 cohort: sends that end after midnight must not push the next push to the day after."""
    clock = FixedClock(datetime(2026, 3, 2, 23, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = SlowTransport(clock, delay=timedelta(seconds=40))
    sweeper = sweeper_for(engine, transport)
    users = [f"late{i}" for i in range(4)]
    for user in users:
        await add_learner(engine, user, "UTC", "23:59")
    # Sweep every 10 minutes for three days; four sends of 40 s at 23:59 cross midnight.
    moment = datetime(2026, 3, 2, 23, 0, tzinfo=UTC)
    while moment < datetime(2026, 3, 6, 0, 30, tzinfo=UTC):
        moment += timedelta(minutes=1 if moment.minute >= 55 else 10)
        clock.set(max(moment, clock.now()))
        await sweeper.sweep()
    sent_days = {(row.learner_id, row.local_date) for row in push_rows(engine) if row.status == PushStatus.SENT}
    for user in users:
        learner_id = engine.learner("telegram", user).id
        assert {day for who, day in sent_days if who == learner_id} == {date(2026, 3, d) for d in (2, 3, 4, 5)}, user
    assert sorted(transport.users) == sorted(users * 4)


async def test_a_settings_change_after_a_late_push_keeps_that_day(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 23, 59, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = SlowTransport(clock, delay=timedelta(seconds=90))  # the send ends at 00:00:30 on 3 March
    learner_id = await add_learner(engine, "late", "UTC", "23:59")
    await sweeper_for(engine, transport).sweep()
    assert transport.users == ["late"]
    await engine.update_settings(learner_id, "time", "08:00")  # on 3 March, nothing pushed for it yet
    assert engine.get_learner(learner_id).next_push_at == datetime(2026, 3, 3, 8, 0, tzinfo=UTC)


async def test_a_platform_split_replica_leaves_the_other_platforms_learners(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    telegram, discord = SlowTransport(clock), SlowTransport(clock, platform="discord")
    for i in range(6):
        await add_learner(engine, f"t{i}")
        learner = engine.learner("discord", f"d{i}", chat_id=f"d{i}")
        await engine.update_settings(learner.id, "time", "09:00")
    only_telegram = ReminderSweeper(engine, {"telegram": telegram}, rates={"telegram": 10_000.0})
    only_discord = ReminderSweeper(make_engine_for(db, small_deck, clock), {"discord": discord}, rates={"discord": 10_000.0})
    await only_telegram.sweep()
    await only_discord.sweep()
    assert sorted(telegram.users) == [f"t{i}" for i in range(6)]
    assert sorted(discord.users) == [f"d{i}" for i in range(6)]


async def test_a_snooze_is_not_overtaken_by_a_concurrent_sweep(db, small_deck) -> None:
    """Sweep B is held on a slow send while the learner behind it in B's page is pushed
    and snoozes; B must not push that learner again before the snooze is over."""
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    slow, quick = SlowTransport(clock), SlowTransport(clock)
    first = await add_learner(engine, "first")
    second = await add_learner(engine, "second")
    slow.hold["first"] = asyncio.Event()
    b = ReminderSweeper(engine, {"telegram": slow}, batch_size=2, rates={"telegram": 10_000.0})
    a = ReminderSweeper(make_engine_for(db, small_deck, clock), {"telegram": quick}, rates={"telegram": 10_000.0})
    held = asyncio.create_task(b.sweep())
    await slow.holding.wait()
    await a.sweep()
    # Whoever pushed "second" (A, or B later), the learner snoozes for an hour right now.
    await engine.act(second, Action(Verb.SNOOZE, arg="1").encode())
    slow.hold["first"].set()
    await held
    pushes = lambda: (slow.users + quick.users).count("second")
    assert pushes() <= 1
    before = pushes()
    clock.advance(minutes=30)
    await a.sweep()
    await b.sweep()
    assert pushes() == before  # still snoozed
    clock.advance(minutes=31)
    await a.sweep()
    await b.sweep()
    assert pushes() == before + 1  # the snoozed push, once
    assert (slow.users + quick.users).count("first") == 1
    assert first != second


async def test_crash_after_delivery_before_the_record_pushes_once_more(db, small_deck) -> None:
    """The one window of a duplicate (README "Running many replicas"): the platform accepted
    the push and the process died before recording it. After the lease it is pushed again, once."""
    clock = FixedClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = RecordingTransport()
    await add_learner(engine, "ada")
    sweeper = sweeper_for(engine, transport)

    def killed(*_args) -> None:
        raise asyncio.CancelledError  # the process dies as the record starts

    sweeper.record_many = killed  # type: ignore[method-assign]
    with pytest.raises(asyncio.CancelledError):
        await sweeper.sweep()
    assert transport.users == ["ada"]
    restarted = sweeper_for(make_engine_for(db, small_deck, clock), transport)
    clock.advance(minutes=4)
    await restarted.sweep()
    assert transport.users == ["ada"]  # within the lease: nobody touches the claim
    clock.advance(minutes=1, seconds=1)
    await restarted.sweep()
    await restarted.sweep()
    assert transport.users == ["ada", "ada"]  # the duplicate: at least once, not exactly once
    [row] = push_rows(engine)
    assert (row.status, row.attempts) == (PushStatus.SENT, 2)
    clock.advance(hours=3)
    await restarted.sweep()
    assert transport.users == ["ada", "ada"]


async def test_a_failing_record_is_retried_before_the_lease_runs_out(db, small_deck, monkeypatch) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = RecordingTransport()
    await add_learner(engine, "ada")
    sweeper = sweeper_for(engine, transport)
    monkeypatch.setattr("bot.reminders.RECORD_RETRY_SECONDS", (0.0, 0.0, 0.0))
    real_record, failures = sweeper.record_many, [2]

    def flaky(*args) -> None:
        if failures[0]:
            failures[0] -= 1
            raise OSError("database unreachable")
        real_record(*args)

    sweeper.record_many = flaky  # type: ignore[method-assign]
    report = await sweeper.sweep()
    assert report.sent == 1 and report.errors == 0
    [row] = push_rows(engine)
    assert row.status == PushStatus.SENT
    clock.advance(minutes=10)
    await sweeper.sweep()
    assert transport.users == ["ada"]


async def test_shared_pace_gives_replicas_disjoint_slots_at_the_platform_rate(db) -> None:
    wall = [1000.0]
    replicas = [SharedPace(db, {"telegram": 25.0}, wall=lambda: wall[0]) for _ in range(3)]
    starts = []
    for replica in replicas * 2:
        starts.append(replica.reserve("telegram", 50))  # two seconds of sends each
    assert starts == [1000.0 + 2.0 * i for i in range(6)]  # back to back, never overlapping
    wall[0] = 2000.0  # idle for a while: the next reservation starts now, not in the past
    assert replicas[1].reserve("telegram", 1) == 2000.0


async def test_learners_who_cannot_be_pushed_have_no_push_moment(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    transport = RecordingTransport(blocked={"gone"})
    paused = await add_learner(engine, "paused")
    gone = await add_learner(engine, "gone")
    terminal = engine.learner("terminal", "ada").id
    await engine.update_settings(paused, "pause", "")
    await sweeper_for(engine, transport).sweep()
    moments = {i: engine.get_learner(i).next_push_at for i in (paused, gone, terminal)}
    assert moments == {paused: None, gone: None, terminal: None}  # never in the due range
    await engine.update_settings(paused, "resume", "")
    assert engine.set_active(gone, True)  # wrote to the bot again
    # Back in the schedule: today's push is still owed to the paused learner; the blocked one's
    # day is settled (its push log says blocked), so the sweep moves them to tomorrow.
    assert engine.get_learner(paused).next_push_at == engine.get_learner(gone).next_push_at == datetime(2026, 3, 2, 9, tzinfo=UTC)
    await sweeper_for(engine, transport).sweep()
    assert transport.users == ["paused"]
    assert engine.get_learner(gone).next_push_at == datetime(2026, 3, 3, 9, tzinfo=UTC)


async def test_the_sweep_prunes_old_push_log_rows(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    learner_id = await add_learner(engine, "ada")
    with Session(engine.db) as session:
        for age in (36, 40, 300, 35, 1):
            day = date(2026, 3, 2) - timedelta(days=age)
            session.add(PushLog(learner_id=learner_id, local_date=day, claimed_at=clock.now(), status=PushStatus.SENT))
        session.commit()
    report = await sweeper_for(engine, RecordingTransport()).sweep()
    assert report.pruned == 3
    assert [row.local_date for row in push_rows(engine)] == [date(2026, 1, 26), date(2026, 3, 1), date(2026, 3, 2)]


async def test_a_bookkeeping_error_for_one_learner_does_not_stop_the_sweep(db, small_deck, monkeypatch) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    ids = [await add_learner(engine, f"u{i}") for i in range(5)]
    real, real_many = engine.push_replies, engine.push_replies_many

    async def broken_for_one(learner_id: int) -> list[Reply]:
        if learner_id == ids[2]:
            raise RuntimeError("a bug outside transport.push")
        return await real(learner_id)

    async def broken_page(learner_ids: list[int]) -> dict[int, list[Reply]]:
        if ids[2] in learner_ids:
            raise RuntimeError("a bug outside transport.push")
        return await real_many(learner_ids)

    monkeypatch.setattr(engine, "push_replies", broken_for_one)
    monkeypatch.setattr(engine, "push_replies_many", broken_page)
    transport = RecordingTransport()
    report = await sweeper_for(engine, transport).sweep()
    # The page's batch failed, so each learner was asked alone, and only the broken one failed.
    assert sorted(transport.users) == ["u0", "u1", "u3", "u4"] and report.errors == 1
    monkeypatch.setattr(engine, "push_replies", real)
    monkeypatch.setattr(engine, "push_replies_many", real_many)
    clock.advance(seconds=CLAIM_LEASE.total_seconds() + 1)
    await sweeper_for(engine, transport).sweep()
    assert sorted(transport.users) == ["u0", "u1", "u2", "u3", "u4"]  # retried after the lease


async def test_telegram_learners_do_not_wait_behind_discord_pacing(db, small_deck) -> None:
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    log: list[str] = []

    class Logged(RecordingTransport):
        async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
            log.append(learner.platform_user_id)
            return await super().push(learner, replies)

    for i in range(3):  # the Discord learners come first in the due order
        learner = engine.learner("discord", f"d{i}", chat_id=f"d{i}")
        await engine.update_settings(learner.id, "time", "09:00")
    for i in range(3):
        await add_learner(engine, f"t{i}")
    telegram, discord = Logged(), Logged()
    discord.platform = "discord"
    # Discord at 4 sends a second: its third send is half a second after its first.
    sweeper = ReminderSweeper(engine, {"discord": discord, "telegram": telegram}, rates={"telegram": 10_000.0, "discord": 4.0})
    await sweeper.sweep()
    assert sorted(log) == ["d0", "d1", "d2", "t0", "t1", "t2"]
    assert log.index("t2") < log.index("d2")  # Telegram's sends never queued behind Discord's pace


async def test_a_page_of_pushes_is_checked_and_recorded_in_a_few_statements(db, small_deck) -> None:
    """The claims of a page that go out together are checked in one read and recorded in one
    write per kind, not one round trip each (the loop and the database do less per push)."""
    import sqlalchemy as sa

    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    for i in range(20):
        await add_learner(engine, f"u{i}")
    statements: list[str] = []

    def seen(_conn, _cursor, statement: str, *_args) -> None:
        statements.append(" ".join(statement.split()).lower())

    transport = RecordingTransport(blocked={"u3"}, fail={"u4"})
    sweeper = sweeper_for(engine, transport)
    sa.event.listen(db, "before_cursor_execute", seen)
    try:
        report = await sweeper.sweep()
    finally:
        sa.event.remove(db, "before_cursor_execute", seen)
    assert (report.sent, report.blocked, report.failed) == (18, 1, 1)
    records = [s for s in statements if s.startswith("update pushlog set status")]
    checks = [s for s in statements if s.startswith("select learner.id, learner.next_push_at")]
    assert 1 <= len(records) < 10 and 1 <= len(checks) < 10  # 20 of each before
    rows = push_rows(engine)
    assert sorted(PushStatus(row.status).value for row in rows) == ["blocked", "failed"] + ["sent"] * 18
    clock.advance(hours=1)
    await sweeper.sweep()
    assert sorted(transport.users) == sorted(f"u{i}" for i in range(20) if i not in (3, 4))


async def test_coalescer_runs_alone_when_idle_and_together_when_busy() -> None:
    calls: list[list[int]] = []
    release = asyncio.Event()
    loop = asyncio.get_running_loop()

    def work(items: list[int]) -> list[int]:
        calls.append(items)
        if len(calls) == 1:
            asyncio.run_coroutine_threadsafe(release.wait(), loop).result()
        if 13 in items:
            raise OSError("database unreachable")
        return [item * 2 for item in items]

    coalescer = Coalescer(work)
    first = asyncio.create_task(coalescer.submit(1))
    while not calls:
        await asyncio.sleep(0.001)
    later = [asyncio.create_task(coalescer.submit(n)) for n in (2, 3, 4)]
    await asyncio.sleep(0.01)
    release.set()
    assert await first == 2  # alone, at once
    assert [await task for task in later] == [4, 6, 8]
    assert calls == [[1], [2, 3, 4]]  # the ones that piled up went together
    failing = [asyncio.create_task(coalescer.submit(n)) for n in (12, 13)]
    for task in failing:
        with pytest.raises(OSError):
            await task  # each caller sees the batch's error
    assert await coalescer.submit(5) == 10 and coalescer.draining is None


async def test_a_page_of_push_content_is_chosen_as_each_learner_alone_would_be(db, small_deck, clock) -> None:
    """``push_replies_many`` gives every learner what ``push_replies`` would, in a fixed number
    of statements however many learners: new, due, waiting for a confirmation, nothing left."""
    import sqlalchemy as sa

    async def learners(engine: QuizEngine, prefix: str) -> list[int]:
        ids = [await add_learner(engine, f"{prefix}{i}") for i in range(6)]
        await engine.next_trap(ids[1])  # an open trap: asked again in the same wording
        await engine.submit_answer(ids[2], "The reward model is a proxy that the policy exploits off-distribution.")
        for _ in small_deck:  # every card met and skipped today: nothing to push
            await engine.next_trap(ids[3], extra_new=True)
            await engine.skip(ids[3])
        return ids

    engine = make_engine_for(db, small_deck, clock)
    alone_ids = await learners(engine, "a")
    together_ids = await learners(engine, "b")
    engine.rng = random.Random(7)  # both ask their repeats' wordings from the same draws
    alone = [await engine.push_replies(i) for i in alone_ids]
    engine.rng = random.Random(7)
    statements: list[str] = []

    def seen(_conn, _cursor, statement: str, *_args) -> None:
        statements.append(statement)

    sa.event.listen(db, "before_cursor_execute", seen)
    try:
        together = await engine.push_replies_many([*together_ids, 10_000_000])
    finally:
        sa.event.remove(db, "before_cursor_execute", seen)
    assert sorted(together) == together_ids  # the unknown id is left out
    texts = lambda replies: [(r.kind, r.text, r.card_id, r.wording, [[b.label for b in row] for row in r.buttons]) for r in replies]
    assert [texts(together[i]) for i in together_ids] == [texts(replies) for replies in alone]
    assert [bool(r) for r in alone] == [True, True, True, False, True, True]
    assert len(statements) <= 10  # one per kind of read and write, however many learners


async def test_a_learner_busy_when_their_page_is_chosen_is_pushed_alone(db, small_deck) -> None:
    """A learner whose lock is held (answering right now) is left out of the page's batch and
    asked alone once the lock is free: pushed once, nobody skipped."""
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    ids = [await add_learner(engine, f"u{i}") for i in range(4)]
    busy = engine._locks[ids[1]]
    await busy.__aenter__()
    asked_alone: list[int] = []
    real = engine.push_replies

    async def alone(learner_id: int) -> list[Reply]:
        asked_alone.append(learner_id)
        return await real(learner_id)

    engine.push_replies = alone  # type: ignore[method-assign]
    transport = RecordingTransport()
    sweep = asyncio.create_task(sweeper_for(engine, transport).sweep())
    for _ in range(200):
        await asyncio.sleep(0.01)
        if len(transport.sent) == 3:
            break
    assert sorted(transport.users) == ["u0", "u2", "u3"]
    await busy.__aexit__(None, None, None)
    report = await sweep
    assert sorted(transport.users) == ["u0", "u1", "u2", "u3"] and asked_alone == [ids[1]] and report.sent == 4


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_a_record_and_a_snooze_of_one_learner_never_deadlock(db, small_deck) -> None:
    """A snooze writes the learner row, then the push-log row (``_snooze``'s flush order); a
    record in between must wait on the learner row before it locks the push-log row, or the
    two deadlock (PostgreSQL aborts one after a second). The snooze wins, the record is a no-op."""
    import threading

    import sqlalchemy as sa

    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = make_engine_for(db, small_deck, clock)
    learner_id = await add_learner(engine, "u0")
    sweeper = sweeper_for(engine, RecordingTransport())
    claim = sweeper.claim_page("telegram", clock.now(), 10).claims[0]
    snoozed_until = clock.now() + timedelta(hours=1)
    errors: list[BaseException] = []
    with db.connect() as snooze:
        snooze.begin()
        snooze.execute(sa.text("UPDATE learner SET next_push_at = :t WHERE id = :id"), {"t": snoozed_until, "id": learner_id})

        def record() -> None:
            try:
                sweeper.record_many([(claim, PushStatus.SENT, clock.now())])
            except BaseException as error:  # noqa: BLE001 - the deadlock, reported below
                errors.append(error)

        recording = threading.Thread(target=record)
        recording.start()
        await asyncio.sleep(0.3)  # the record is now waiting on the learner row
        snooze.execute(sa.text("UPDATE pushlog SET status = 'snoozed' WHERE learner_id = :id"), {"id": learner_id})
        snooze.commit()
    recording.join(timeout=10)
    assert not errors
    with Session(db) as session:
        assert session.get(Learner, learner_id).next_push_at == snoozed_until  # type: ignore[union-attr]
        assert [row.status for row in session.exec(select(PushLog))] == [PushStatus.SNOOZED.value]
