"""Push reminders at 100,000 learners: the sweep's due query and memory, against a job per learner.

Run: .venv/bin/python bench/push_bench.py [--learners 100000] [--postgres URL]

For SQLite and (with --postgres or TEST_DATABASE_URL) PostgreSQL it measures, in one run:
- the time to find every learner due in one sweep (keyset pages of 500 on the indexed
  ``next_push_at``), median of 5, with 1% of learners due (a typical minute) and all due
  (everyone at 09:00 UTC, the worst case);
- the peak Python memory (tracemalloc) of a full sweep over 2,000 due learners with a no-op
  transport, claims and push building included, and of the due query over all 100,000;
and, side by side, the job-per-learner pattern: registering one daily job per learner in
python-telegram-bot's JobQueue (``run_daily``, APScheduler underneath): time and memory.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import statistics
import tempfile
import time
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta
from datetime import time as dtime

import sqlalchemy as sa

from bot.clock import FixedClock
from bot.db import make_engine, migrate, normalise_url
from bot.engine import QuizEngine
from bot.models import Learner
from bot.reminders import ReminderSweeper
from bot.transport import PushOutcome
from cards.deck import default_deck
from grader.selfgrade import SelfGrader

NOW = datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC)


class NoopTransport:
    platform = "telegram"

    async def push(self, learner, replies) -> PushOutcome:
        return PushOutcome.SENT


def populate(url: str, learners: int, due_share: float) -> None:
    """``learners`` rows; ``due_share`` of them due at NOW, the rest spread over the day."""
    rng = random.Random(0)
    engine = make_engine(url)
    rows = []
    for i in range(learners):
        due = rng.random() < due_share
        # Due learners all share one push moment (everyone at 09:00): the hardest case for paging.
        next_at = NOW - timedelta(seconds=30) if due else NOW + timedelta(minutes=rng.randint(1, 1439))
        rows.append(
            {
                "platform": "telegram",
                "platform_user_id": str(i),
                "chat_id": str(i),
                "display_name": "",
                "timezone": "UTC",
                "push_time": dtime(9, 0),
                "new_per_day": 1,
                "paused": False,
                "active": True,
                "reminders": True,
                "next_push_at": next_at,
                "created_at": NOW,
            }
        )
    with engine.begin() as connection:
        connection.execute(sa.delete(Learner.__table__))
        for start in range(0, len(rows), 10_000):
            connection.execute(sa.insert(Learner.__table__), rows[start : start + 10_000])
    with engine.begin() as connection:
        # A live table has planner statistics (autovacuum); a bulk-loaded one must be analysed.
        connection.execute(sa.text("ANALYZE learner"))
    engine.dispose()


def time_due_query(sweeper: ReminderSweeper, cap: int | None = None) -> tuple[float, int]:
    """Read the due learners as the sweep's claims do (pages of the claim's inner SELECT, in
    (next_push_at, id) order), up to ``cap`` (a sweep's send budget); nothing is claimed."""
    cap = cap or sweeper.max_per_sweep["telegram"]
    table = Learner.__table__
    start = time.perf_counter()
    found, after = 0, None
    with sweeper.db.connect() as connection:
        while found < cap:
            query = (
                sa.select(table.c.id, table.c.next_push_at)
                .where(table.c.platform == "telegram", table.c.next_push_at <= NOW,
                       table.c.active == sa.true(), table.c.paused == sa.false())
                .order_by(table.c.next_push_at, table.c.id)
                .limit(min(500, cap - found))
            )
            if after is not None:
                query = query.where(sa.tuple_(table.c.next_push_at, table.c.id) > sa.tuple_(*after))
            batch = connection.execute(query).all()
            if not batch:
                break
            found += len(batch)
            after = (batch[-1].next_push_at, batch[-1].id)
        connection.rollback()
    return time.perf_counter() - start, found


def bench_database(name: str, url: str, learners: int) -> None:
    migrate(url)
    engine = QuizEngine(make_engine(url), default_deck(), SelfGrader(), FixedClock(NOW))
    # The production pacing (Telegram 25/s for a 55 s sweep) sets how many a sweep reads.
    sweeper = ReminderSweeper(engine, {"telegram": NoopTransport()})
    for share in (0.01, 1.0):
        populate(url, learners, share)
        runs = [time_due_query(sweeper) for _ in range(5)]
        median = statistics.median(seconds for seconds, _ in runs)
        print(f"{name}: {share:.0%} of {learners:,} due, one sweep reads {runs[0][1]:,}: median {median * 1000:.0f} ms")
    everyone = [time_due_query(sweeper, cap=learners)[0] for _ in range(3)]
    print(f"{name}: reading all {learners:,} due learners (not what a sweep does): median {statistics.median(everyone):.1f} s")
    gc.collect()
    tracemalloc.start()
    time_due_query(sweeper, cap=learners)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{name}: peak memory while reading all {learners:,} due: {peak / 2**20:.1f} MB")
    sweeper = ReminderSweeper(engine, {"telegram": NoopTransport()}, rates={"telegram": 1e9})

    populate(url, learners, 2_000 / learners)
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    report = asyncio.run(sweeper.sweep())
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"{name}: full sweep pushing {report.sent:,} of {learners:,} (no-op transport): "
        f"{elapsed:.1f} s, peak memory {peak / 2**20:.1f} MB"
    )
    engine.db.dispose()


def bench_job_per_learner(learners: int) -> None:
    """python-telegram-bot's JobQueue.run_daily, one job per learner."""
    from telegram.ext import ApplicationBuilder

    async def noop(context) -> None:
        return None

    async def register() -> tuple[float, int]:
        application = ApplicationBuilder().token("123456:BENCHMARK").build()
        queue = application.job_queue
        assert queue is not None, "install python-telegram-bot[job-queue] for this comparison"
        queue.set_application(application)
        queue.scheduler.start(paused=True)
        gc.collect()
        tracemalloc.start()
        start = time.perf_counter()
        for i in range(learners):
            queue.run_daily(noop, time=dtime(9, i % 60, tzinfo=UTC), name=str(i))
        elapsed = time.perf_counter() - start
        current, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        queue.scheduler.shutdown(wait=False)
        return elapsed, current

    elapsed, memory = asyncio.run(register())
    print(
        f"job per learner (PTB JobQueue.run_daily): registering {learners:,}: {elapsed:.1f} s, "
        f"{memory / 2**20:.0f} MB held ({memory / learners / 1024:.2f} KB and "
        f"{elapsed / learners * 1000:.3f} ms per learner)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=100_000)
    parser.add_argument("--postgres", default=os.environ.get("TEST_DATABASE_URL"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_database("SQLite", f"sqlite:///{tmp}/bench.db", args.learners)
    if args.postgres:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        admin = sa.create_engine(normalise_url(args.postgres))
        with admin.begin() as connection:
            connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        try:
            separator = "&" if "?" in args.postgres else "?"
            bench_database("PostgreSQL", f"{normalise_url(args.postgres)}{separator}options=-csearch_path%3D{schema}", args.learners)
        finally:
            with admin.begin() as connection:
                connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    try:
        bench_job_per_learner(args.learners)
    except AssertionError as error:
        print(f"job per learner: skipped ({error})")


if __name__ == "__main__":
    main()
