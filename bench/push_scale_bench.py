"""Push reminders at scale on PostgreSQL: the due query at 1,000,000 learners, and simulated
days (a fake clock, one sweep a simulated minute, a no-op platform) checking that every
active learner is pushed once per local day across a DST change and a 23:59 cohort, with
the process's memory per simulated day.

Run:
  .venv/bin/python bench/push_scale_bench.py due  [--learners 1000000] [--inactive 0.3]
  .venv/bin/python bench/push_scale_bench.py due-sqlite  [--learners 1000000] [--inactive 0.3]
  .venv/bin/python bench/push_scale_bench.py days [--learners 20000] [--days 4] [--inactive 0.3]

Uses BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/bench_replicas), in a
schema of its own that is dropped afterwards. Each phase prints a line as it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from push_common import (
    NoopPlatform,
    constant_pushes,
    fast_commits,
    load_learners,
    pg_schema,
    rss_mb,
)

from bot.clock import FixedClock
from bot.db import make_engine
from bot.engine import QuizEngine
from bot.models import Learner
from bot.pushtime import local_push_moment
from bot.reminders import LEARNER, ReminderSweeper
from cards.deck import default_deck
from grader.selfgrade import SelfGrader

#: Four days around the US fall-back (1 November 2026: 01:00-02:00 happens twice in New York).
SIM_START = datetime(2026, 10, 30, 12, 0, tzinfo=UTC)


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def time_pick(db: sa.Engine, platform: str, now: datetime, limit: int, runs: int = 15, lock: bool = True) -> float:
    """Median ms of the sweep's due query (the claim's inner SELECT ... FOR UPDATE SKIP LOCKED)."""
    pick = (
        sa.select(LEARNER.c.id)
        .where(LEARNER.c.platform == platform, LEARNER.c.next_push_at <= now,
               LEARNER.c.active == sa.true(), LEARNER.c.paused == sa.false())
        .order_by(LEARNER.c.next_push_at, LEARNER.c.id)
        .limit(limit)
    )
    if lock:
        pick = pick.with_for_update(skip_locked=True)
    samples = []
    with db.connect() as connection:
        for _ in range(runs):
            started = time.perf_counter()
            connection.execute(pick).all()
            samples.append(time.perf_counter() - started)
            connection.rollback()
    return statistics.median(samples) * 1000


def bench_due(learners: int, inactive: float) -> None:
    start = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    moment = start + timedelta(hours=1)
    with pg_schema() as url:
        began = time.perf_counter()
        load_learners(url, learners, start, inactive=inactive, moment=moment, moment_count=10_000,
                      platforms=("telegram", "discord"))
        db = make_engine(url)
        with db.connect() as connection:
            counts = connection.execute(sa.text(
                "SELECT count(*), count(next_push_at), count(*) FILTER (WHERE next_push_at = :m) FROM learner"), {"m": moment}).one()
        say(f"loaded {counts[0]:,} learners ({counts[0] - counts[1]:,} blocked or paused, no push moment; "
            f"{counts[2]:,} due together at one moment) in {time.perf_counter() - began:.0f} s")
        with db.connect() as connection:
            typical = connection.execute(sa.text("SELECT count(*) FROM learner WHERE next_push_at <= :now"), {"now": start}).scalar()
        for platform, page in (("telegram", 50), ("discord", 10), ("telegram", 500)):
            idle = time_pick(db, platform, start - timedelta(seconds=1), page)
            usual = time_pick(db, platform, start, page)
            busy = time_pick(db, platform, moment, page)
            say(f"due query, {platform}, page of {page}: idle minute (nobody due) {idle:.2f} ms, a typical minute "
                f"({typical:,} due) {usual:.2f} ms, 10,000-learner moment {busy:.2f} ms (median of 15)")
        engine = QuizEngine(db, default_deck(), SelfGrader(), FixedClock(moment))
        sweeper = ReminderSweeper(engine, {"telegram": NoopPlatform()})
        samples = []
        for _ in range(5):
            began = time.perf_counter()
            page = sweeper.claim_page("telegram", moment, 50)
            samples.append(time.perf_counter() - began)
        say(f"claiming a Telegram page of 50 at the moment (UPDATE ... RETURNING + push-log rows, committed): "
            f"median {statistics.median(samples) * 1000:.1f} ms; last page {page.rows} rows")
        db.dispose()


def bench_due_sqlite(learners: int, inactive: float) -> None:
    """The same due query on a SQLite file: push moments spread over the day in UTC (the
    query does not care about zones), ``inactive`` without one, 10,000 at one moment."""
    import tempfile

    from bot.db import migrate

    start = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    moment = start + timedelta(hours=1)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/scale.db"
        migrate(url)
        db = make_engine(url)
        began = time.perf_counter()
        with db.begin() as connection:
            connection.execute(sa.text("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
                INSERT INTO learner (platform, platform_user_id, chat_id, display_name, timezone, push_time, new_per_day,
                                     paused, active, reminders, next_push_at, created_at)
                SELECT CASE i % 2 WHEN 0 THEN 'telegram' ELSE 'discord' END, i, i, '', 'UTC', '09:00:00.000000', 1,
                       (i * 7919) % 1000 < :paused, (i * 7919) % 1000 >= :blocked OR (i * 7919) % 1000 < :paused, 1,
                       CASE WHEN (i * 7919) % 1000 < :blocked THEN NULL
                            WHEN i <= 14286 THEN :moment
                            ELSE strftime('%Y-%m-%d %H:%M:%f', :start, '+' || ((i * 104729) % 1440) || ' minutes') END,
                       :start
                FROM n
            """), {"count": learners, "paused": int(inactive * 500), "blocked": int(inactive * 1000),
                   "moment": moment.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f"),
                   "start": start.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")})
            connection.execute(sa.text("ANALYZE"))
        with db.connect() as connection:
            counts = connection.execute(sa.text(
                "SELECT count(*), count(next_push_at), count(*) FILTER (WHERE next_push_at = :m) FROM learner"),
                {"m": moment.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")}).one()
        say(f"SQLite: loaded {counts[0]:,} learners ({counts[0] - counts[1]:,} without a push moment, {counts[2]:,} at one moment) "
            f"in {time.perf_counter() - began:.0f} s")
        for platform, page in (("telegram", 50), ("discord", 10), ("telegram", 500)):
            idle = time_pick(db, platform, start - timedelta(seconds=1), page, lock=False)
            usual = time_pick(db, platform, start + timedelta(minutes=1), page, lock=False)
            busy = time_pick(db, platform, moment, page, lock=False)
            say(f"SQLite due query, {platform}, page of {page}: idle minute (nobody due) {idle:.2f} ms, "
                f"a typical minute {usual:.2f} ms, 10,000-learner moment {busy:.2f} ms (median of 15)")
        db.dispose()


def expected_days(learner: Learner, start: datetime, end: datetime) -> set:
    days = set()
    day = start.astimezone(UTC).date() - timedelta(days=2)
    while day <= end.date() + timedelta(days=2):
        moment = local_push_moment(day, learner.push_time, learner.timezone)
        if start <= moment < end:
            days.add(day)
        day += timedelta(days=1)
    return days


async def simulate(url: str, days: int) -> tuple[int, dict]:
    db = make_engine(url)
    fast_commits(db)
    clock = FixedClock(SIM_START)
    engine = QuizEngine(db, default_deck(), SelfGrader(), clock)
    constant_pushes(engine)
    transports = {"telegram": NoopPlatform("telegram"), "discord": NoopPlatform("discord")}
    sweeper = ReminderSweeper(engine, transports, rates={"telegram": 1e9, "discord": 1e9}, sweep_seconds=1e9)
    sent = 0
    memory = {}
    gc.collect()
    memory[0] = rss_mb()
    began = time.perf_counter()
    for minute in range(days * 24 * 60):
        clock.set(SIM_START + timedelta(minutes=minute))
        report = await sweeper.sweep()
        sent += report.sent
        if (minute + 1) % (24 * 60) == 0:
            gc.collect()
            day = (minute + 1) // (24 * 60)
            memory[day] = rss_mb()
            say(f"simulated day {day}: {sent:,} pushes so far, {time.perf_counter() - began:.0f} s, RSS {memory[day]:.1f} MB")
    db.dispose()
    return sent, memory


def bench_days(learners: int, days: int, inactive: float) -> None:
    end = SIM_START + timedelta(days=days)
    with pg_schema() as url:
        began = time.perf_counter()
        load_learners(url, learners, SIM_START, inactive=inactive, platforms=("telegram", "discord"), late_cohort=0.02)
        say(f"loaded {learners:,} learners in {time.perf_counter() - began:.0f} s")
        sent, memory = asyncio.run(simulate(url, days))
        db = make_engine(url)
        with db.connect() as connection:
            people = [Learner(**row._mapping) for row in connection.execute(sa.select(LEARNER))]
            rows = connection.execute(sa.text("SELECT learner_id, local_date, status FROM pushlog")).all()
        db.dispose()
        pushed = defaultdict(set)
        for learner_id, day, status in rows:
            if status == "sent":
                pushed[learner_id].add(day)
        active = [p for p in people if p.active and not p.paused]
        missed = doubled = 0
        late_cohort = sum(1 for p in active if p.push_time.hour == 23 and p.push_time.minute == 59)
        for person in active:
            want = expected_days(person, SIM_START, end)
            missed += len(want - pushed[person.id])
            doubled += len(pushed[person.id] - want)
        inactive_pushed = sum(1 for p in people if not (p.active and not p.paused) and pushed[p.id])
        say(f"{len(active):,} active learners ({late_cohort:,} at 23:59) over {days} days: {sent:,} pushes; "
            f"learner-days missed {missed}, pushed on a day not expected {doubled}; inactive learners pushed {inactive_pushed}")
        say("RSS by simulated day (MB): " + ", ".join(f"{day}: {mb:.1f}" for day, mb in memory.items()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["due", "due-sqlite", "days"])
    parser.add_argument("--learners", type=int)
    parser.add_argument("--days", type=int, default=4)
    parser.add_argument("--inactive", type=float, default=0.3)
    args = parser.parse_args()
    if args.what == "due":
        bench_due(args.learners or 1_000_000, args.inactive)
    elif args.what == "due-sqlite":
        bench_due_sqlite(args.learners or 1_000_000, args.inactive)
    else:
        bench_days(args.learners or 20_000, args.days, args.inactive)


if __name__ == "__main__":
    main()
