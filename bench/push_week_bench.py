"""A simulated week of daily pushes with faults: learners over 15 zones (2% at 23:59), a
platform that refuses 1% of sends at random, and the sweep process killed (SIGKILL) once every
simulated hour at a random moment, restarted at once from the minute it died in. Counts the
learner-days missed (a push moment in the week with no push recorded for its local day) and
the learners pushed twice for one day (accepted by the platform more often than recorded).

Run: .venv/bin/python bench/push_week_bench.py [--learners 10000] [--days 7] [--fail 0.01] [--seed 0]

An injected clock: one sweep per simulated minute, as fast as the machine goes. Each
simulated hour a process is forked (imports done once, in this process), sweeps from the
minute the last one died in, and is killed in a random minute of its hour, a random time into
that minute's sweep (up to the length of the last sweep that pushed). The platform notes a push
at the moment it accepts it (an ``os.write`` to an append-only file, which survives the kill),
then answers after ``--answer-ms``. PostgreSQL from BENCH_DATABASE_URL, a schema of its own.
A line per simulated hour shows progress.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import random
import signal
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from push_common import constant_pushes, fast_commits, load_learners, pg_schema

from bot.clock import FixedClock
from bot.db import make_engine
from bot.engine import QuizEngine
from bot.pushtime import local_push_moment
from bot.reminders import ReminderSweeper
from bot.transport import PushOutcome
from cards.deck import default_deck
from grader.selfgrade import SelfGrader

#: A week across New York's fall-back (1 November 2026).
SIM_START = datetime(2026, 10, 29, 0, 0, tzinfo=UTC)


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


class FlakyPlatform:
    """Accepts a push (noted in ``accepted_fd`` at once) or, with probability ``fail``, refuses it."""

    def __init__(self, platform: str, clock: FixedClock, accepted_fd: int, rng: random.Random, fail: float, answer_ms: float):
        self.platform, self.clock, self.fd, self.rng, self.fail, self.answer = platform, clock, accepted_fd, rng, fail, answer_ms / 1000

    async def push(self, learner, replies) -> PushOutcome:
        if self.rng.random() < self.fail:
            return PushOutcome.FAILED
        os.write(self.fd, f"{learner.id} {self.clock.now().isoformat()}\n".encode())
        if self.answer:
            await asyncio.sleep(self.answer)  # the platform's answer is still on its way back
        return PushOutcome.SENT


def sweep_from(url: str, first_minute: int, last_minute: int, kill_minute: int | None, seed: int, fail: float,
               answer_ms: float, accepted: str, progress: str) -> None:
    """One sweep process: a sweep per simulated minute from ``first_minute``; in ``kill_minute``
    a timer kills the process with SIGKILL a random time into the sweep."""
    logging.getLogger("bot.reminders").setLevel(logging.ERROR)  # the 1% refusals are counted, not logged
    rng = random.Random(seed)
    db = make_engine(url)
    fast_commits(db)
    clock = FixedClock(SIM_START + timedelta(minutes=first_minute))
    engine = QuizEngine(db, default_deck(), SelfGrader(), clock)
    constant_pushes(engine)
    accepted_fd = os.open(accepted, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    progress_fd = os.open(progress, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    transports = {name: FlakyPlatform(name, clock, accepted_fd, rng, fail, answer_ms) for name in ("telegram", "discord")}
    sweeper = ReminderSweeper(engine, transports, batch_size=100, rates={"telegram": 1e9, "discord": 1e9}, sweep_seconds=1e9)

    async def run() -> None:
        busy = 0.02  # seconds: the length of the last sweep that pushed anyone
        for minute in range(first_minute, last_minute):
            clock.set(SIM_START + timedelta(minutes=minute))
            if minute == kill_minute:
                delay = rng.uniform(0, busy)
                threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL)).start()
            began = time.perf_counter()
            report = await sweeper.sweep()
            if report.sent or report.failed:
                busy = time.perf_counter() - began
            os.write(progress_fd, f"{minute} {report.sent} {report.failed} {report.errors}\n".encode())

    asyncio.run(run())


def expected_days(url: str, end: datetime) -> dict[int, set]:
    """{learner id: local dates whose push moment lies in [SIM_START, end)} for active learners."""
    found: dict[int, set] = {}
    plans: dict = {}
    db = make_engine(url)
    with db.connect() as connection:
        rows = connection.execute(sa.text("SELECT id, timezone, push_time FROM learner WHERE active AND NOT paused")).all()
    db.dispose()
    for lid, zone, at in rows:
        plan = plans.get((zone, at))
        if plan is None:
            plan = set()
            day = SIM_START.date() - timedelta(days=1)
            while day <= end.date() + timedelta(days=1):
                if SIM_START <= local_push_moment(day, at, zone) < end:
                    plan.add(day)
                day += timedelta(days=1)
            plans[(zone, at)] = plan
        found[lid] = plan
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--fail", type=float, default=0.01, help="share of sends the platform refuses")
    parser.add_argument("--answer-ms", type=float, default=0.0, help="time from the platform accepting to its answer")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    total = args.days * 24 * 60
    context = multiprocessing.get_context("fork")  # imports once; each process starts in milliseconds
    with pg_schema() as url, tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        load_learners(url, args.learners, SIM_START, platforms=("telegram", "discord"), late_cohort=0.02)
        say(f"loaded {args.learners:,} learners in {time.perf_counter() - began:.0f} s; {args.days} simulated days from "
            f"{SIM_START:%Y-%m-%d %H:%M} UTC, {args.fail:.0%} of sends refused, a SIGKILL every simulated hour")
        accepted, progress = f"{tmp}/accepted.txt", f"{tmp}/progress.txt"
        Path(progress).touch()
        minute, kills, runs = 0, 0, 0
        killed_hours: set[int] = set()
        began = time.perf_counter()
        cpu_began = os.times()
        while minute < total:
            # One kill in every simulated hour: this hour's if it has had none yet, else the next's.
            hour = minute // 60 + (minute // 60 in killed_hours)
            kill_minute = max(minute, hour * 60 + rng.randrange(60)) if hour < total // 60 else None
            if kill_minute is not None and kill_minute // 60 != hour:
                kill_minute = None
            if kill_minute is not None:
                killed_hours.add(hour)
            worker = context.Process(target=sweep_from, args=(url, minute, total, kill_minute, rng.randrange(1 << 30),
                                                              args.fail, args.answer_ms, accepted, progress))
            worker.start()
            worker.join()
            runs += 1
            lines = Path(progress).read_text().split("\n")
            done = [line.split() for line in lines if line]
            last = int(done[-1][0]) if done else minute - 1
            if worker.exitcode == -signal.SIGKILL:
                kills += 1
            elif worker.exitcode != 0:
                raise SystemExit(f"a sweep process failed with exit code {worker.exitcode}")
            minute = last + 1
            pushes = sum(int(d[1]) for d in done)
            if runs % 6 == 0 or minute >= total:
                at = SIM_START + timedelta(minutes=minute)
                say(f"simulated {at:%a %H:%M}: {kills} kills, {pushes:,} pushes recorded, "
                    f"{sum(int(d[2]) for d in done):,} refused, {sum(int(d[3]) for d in done)} errors, "
                    f"{time.perf_counter() - began:.0f} s")
        elapsed = time.perf_counter() - began
        cpu = os.times()
        children_cpu = (cpu.children_user - cpu_began.children_user) + (cpu.children_system - cpu_began.children_system)
        say(f"{args.days} simulated days in {elapsed:.0f} s (sweep processes' CPU {children_cpu:.0f} s), {kills} kills")

        end = SIM_START + timedelta(minutes=total) - timedelta(hours=1)  # a moment in the last hour may still be in retry
        expected = expected_days(url, end)
        db = make_engine(url)
        with db.connect() as connection:
            sent_rows = connection.execute(sa.text("SELECT learner_id, local_date FROM pushlog WHERE status = 'sent'")).all()
            statuses = dict(connection.execute(sa.text("SELECT status, count(*) FROM pushlog GROUP BY status")).all())
        db.dispose()
        sent: dict[int, Counter] = defaultdict(Counter)
        for lid, day in sent_rows:
            sent[lid][day] += 1
        accepted_per = Counter(int(line.split()[0]) for line in Path(accepted).read_text().split("\n") if line)
        expected_total = sum(len(days) for days in expected.values())
        missed = sum(1 for lid, days in expected.items() for day in days if not sent[lid][day])
        recorded = sum(sum(c.values()) for c in sent.values())
        doubled_learners = sum(1 for lid, n in accepted_per.items() if n > sum(sent[lid].values()))
        doubles = sum(max(0, n - sum(sent[lid].values())) for lid, n in accepted_per.items())
        say(f"learner-days expected {expected_total:,}; missed {missed}; pushes accepted by the platform "
            f"{sum(accepted_per.values()):,}, recorded sent {recorded:,}; accepted more often than recorded "
            f"(pushed twice for one day): {doubles} pushes to {doubled_learners} learners; push-log rows by status {statuses}")
        say(f"kills: {kills}; doubles per kill {doubles / max(kills, 1):.2f}")


if __name__ == "__main__":
    main()
