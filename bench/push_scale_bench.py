"""Push reminders at scale on PostgreSQL: the due query at 1,000,000 learners, and simulated
days (a fake clock, one sweep a simulated minute, a no-op platform) checking that every
active learner is pushed once per local day across a DST change and a 23:59 cohort, with
the process's memory per simulated day.

Run:
  .venv/bin/python bench/push_scale_bench.py due  [--learners 1000000] [--inactive 0.3]
  .venv/bin/python bench/push_scale_bench.py due-sqlite  [--learners 1000000] [--inactive 0.3]
  .venv/bin/python bench/push_scale_bench.py due-mixed  [--learners 1000000] [--inactive 0.3] [--snoozed 0.05]
  .venv/bin/python bench/push_scale_bench.py days [--learners 20000] [--days 4] [--inactive 0.3] [--procs 1] [--page 500]

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
from bot.pushtime import local_push_moment
from bot.reminders import LEARNER, ReminderSweeper
from bot.transport import PushOutcome
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
        .where(LEARNER.c.platform == platform, LEARNER.c.next_push_at <= now)
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


#: The due benches' clock: a typical minute, and the moment 10,000 learners share an hour later.
DUE_START = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
DUE_MOMENT = DUE_START + timedelta(hours=1)


def load_due_learners(url: str, learners: int, inactive: float) -> sa.Engine:
    """``learners`` on both platforms, ``inactive`` blocked or paused, 10,000 due at DUE_MOMENT."""
    load_learners(url, learners, DUE_START, inactive=inactive, moment=DUE_MOMENT, moment_count=10_000,
                  platforms=("telegram", "discord"))
    return make_engine(url)


def bench_due(learners: int, inactive: float) -> None:
    start, moment = DUE_START, DUE_MOMENT
    with pg_schema() as url:
        began = time.perf_counter()
        db = load_due_learners(url, learners, inactive)
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


#: The sweep's due query as PostgreSQL receives it (``ReminderSweeper.claim_page``'s inner SELECT).
DUE_SQL = ("SELECT id FROM learner WHERE platform = :p AND next_push_at <= :now "
           "ORDER BY next_push_at, id LIMIT :n FOR UPDATE SKIP LOCKED")
#: The same before issue 42: it skipped paused and blocked rows in the query instead of clearing them.
FILTERED_DUE_SQL = ("SELECT id FROM learner WHERE platform = :p AND next_push_at <= :now AND active AND NOT paused "
                    "ORDER BY next_push_at, id LIMIT :n FOR UPDATE SKIP LOCKED")


def explain_due(db: sa.Engine, sql: str, params: dict, runs: int = 15) -> tuple[float, float, str]:
    """Median execution time by EXPLAIN ANALYZE (server side, ms), median round trip of the
    query itself (ms), and the plan's nodes, for ``sql``."""
    import json

    server, trips, plan = [], [], ""
    with db.connect() as connection:
        for _ in range(runs):
            started = time.perf_counter()
            connection.execute(sa.text(sql), params).all()
            trips.append(time.perf_counter() - started)
            connection.rollback()
            [result] = connection.execute(sa.text("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql), params).scalar()
            connection.rollback()
            result = result if isinstance(result, dict) else json.loads(result)
            server.append(result["Execution Time"])
            nodes, node = [], result["Plan"]
            while node:
                name = node["Node Type"] + (f" on {node['Index Name']}" if "Index Name" in node else "")
                nodes.append(f"{name} (rows {node.get('Actual Rows')}, buffers {node.get('Shared Hit Blocks', 0)})")
                node = (node.get("Plans") or [None])[0]
            plan = " > ".join(nodes)
    return statistics.median(server), statistics.median(trips) * 1000, plan


def bench_due_mixed(learners: int, inactive: float, snoozed: float) -> None:
    """The due query at ``learners`` with every kind of row that is not due mixed in: blocked
    and paused (no push moment), snoozed (a moment later today), and paused rows that kept a
    push moment in the past (a snooze by a paused learner, as versions before issue 42 wrote
    it): first with those stray rows in place, then after the upgrade's cleanup clears them."""
    start, moment = DUE_START, DUE_MOMENT
    with pg_schema() as url:
        began = time.perf_counter()
        db = load_due_learners(url, learners, inactive)
        with db.begin() as connection:
            connection.execute(sa.text("""
                UPDATE learner SET next_push_at = :start + (1 + abs(hashint4(id + 11)) % 720) * interval '1 minute'
                WHERE active AND NOT paused AND abs(hashint4(id + 5)) % 10000 < :share
            """), {"start": start, "share": int(snoozed * 10000)})
            connection.execute(sa.text("""
                UPDATE learner SET next_push_at = :start - (1 + abs(hashint4(id + 13)) % 1440) * interval '1 minute'
                WHERE paused
            """), {"start": start})
        with db.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").execute(sa.text("VACUUM ANALYZE learner"))
            counts = connection.execute(sa.text("""
                SELECT count(*), count(*) FILTER (WHERE NOT active), count(*) FILTER (WHERE paused),
                       count(*) FILTER (WHERE active AND NOT paused AND next_push_at > :start + interval '1 minute'
                                        AND next_push_at <> :m),
                       count(*) FILTER (WHERE next_push_at = :m)
                FROM learner"""), {"start": start, "m": moment}).one()
        say(f"loaded {counts[0]:,} learners in {time.perf_counter() - began:.0f} s: {counts[1]:,} blocked (no push moment), "
            f"{counts[2]:,} paused with a push moment in the past (stray), {counts[4]:,} due together at one moment, "
            f"the other active ones (snoozed ones included) due later")
        old_idle = {"p": "telegram", "now": start - timedelta(seconds=1), "n": 50}
        ms, trip, plan = explain_due(db, FILTERED_DUE_SQL, old_idle)
        say(f"before issue 42 (paused rows skipped by the query), idle minute, with the stray rows: {ms:.2f} ms "
            f"(EXPLAIN ANALYZE median of 15; round trip {trip:.2f} ms); plan: {plan}")
        ms, trip, plan = explain_due(db, DUE_SQL, old_idle, runs=3)
        say(f"now, the same minute with the stray rows: the query returns a page of them ({ms:.2f} ms) and the claim clears it; plan: {plan}")
        began = time.perf_counter()
        with db.begin() as connection:  # what migration r42_push_failures runs on upgrade
            cleared = connection.execute(sa.text(
                "UPDATE learner SET next_push_at = NULL, push_due_at = NULL "
                "WHERE next_push_at IS NOT NULL AND (NOT active OR paused OR platform NOT IN ('telegram', 'discord'))"
            )).rowcount
        with db.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").execute(sa.text("VACUUM ANALYZE learner"))
        say(f"the upgrade's cleanup cleared {cleared:,} stray push moments in {time.perf_counter() - began:.1f} s (with VACUUM)")
        with db.connect() as connection:
            typical = connection.execute(sa.text("SELECT count(*) FROM learner WHERE next_push_at <= :now"), {"now": start}).scalar()
        for platform, page in (("telegram", 50), ("discord", 10), ("telegram", 500)):
            cases = (("idle minute (nobody due)", start - timedelta(seconds=1)), (f"typical minute ({typical:,} due)", start),
                     ("10,000-learner moment", moment))
            for label, now in cases:
                ms, trip, plan = explain_due(db, DUE_SQL, {"p": platform, "now": now, "n": page})
                say(f"due query, {platform}, page of {page}, {label}: {ms:.3f} ms server (EXPLAIN ANALYZE median of 15), "
                    f"{trip:.2f} ms round trip; plan: {plan}")
        db.dispose()


class CountingPlatform(NoopPlatform):
    """Accepts every push and counts it per learner and simulated day of the send (bytes,
    so a million learners over four days cost 4 MB): the platform's view, doubles included."""

    def __init__(self, platform: str, clock: FixedClock, counts: bytearray, learners: int):
        super().__init__(platform)
        self.clock, self.counts, self.stride = clock, counts, learners + 1

    async def push(self, learner, replies) -> PushOutcome:
        day = (self.clock.now() - SIM_START) // timedelta(days=1)
        at = day * self.stride + learner.id
        self.counts[at] = min(255, self.counts[at] + 1)
        self.pushed += 1
        return PushOutcome.SENT


def sweep_process(url: str, index: int, procs: int, learners: int, days: int, page: int, barrier, pushes, rss, out: str) -> None:
    """One of ``procs`` sweep processes sharing the run: each sweeps every simulated minute
    (a fake clock), then waits for the others before the clock moves on."""
    db = make_engine(url)
    fast_commits(db)
    clock = FixedClock(SIM_START)
    engine = QuizEngine(db, default_deck(), SelfGrader(), clock)
    constant_pushes(engine)
    counts = bytearray(days * (learners + 1))
    transports = {name: CountingPlatform(name, clock, counts, learners) for name in ("telegram", "discord")}
    sweeper = ReminderSweeper(engine, transports, batch_size=page, rates={"telegram": 1e9, "discord": 1e9}, sweep_seconds=1e9)
    gc.collect()
    rss[index * (days + 1)] = rss_mb()
    began = time.perf_counter()

    async def run() -> None:
        for minute in range(days * 24 * 60):
            clock.set(SIM_START + timedelta(minutes=minute))
            report = await sweeper.sweep()
            with pushes.get_lock():
                pushes.value += report.sent
            if (minute + 1) % (24 * 60) == 0:
                gc.collect()
                rss[index * (days + 1) + (minute + 1) // (24 * 60)] = rss_mb()
            barrier.wait()  # every process has swept this minute
            if index == 0 and (minute + 1) % 60 == 0:
                hour = (minute + 1) // 60
                say(f"simulated day {(hour - 1) // 24 + 1} hour {(hour - 1) % 24 + 1:2d}: {pushes.value:,} pushes so far, "
                    f"{time.perf_counter() - began:.0f} s, {pushes.value / (time.perf_counter() - began):.0f}/s")

    asyncio.run(run())
    Path(out).write_bytes(counts)
    db.dispose()


def expected_moments(push_time, timezone: str, start: datetime, end: datetime) -> dict:
    """{local date: simulated day} of the push moments of (push time, zone) in [start, end)."""
    found = {}
    day = start.date() - timedelta(days=2)
    while day <= end.date() + timedelta(days=2):
        moment = local_push_moment(day, push_time, timezone)
        if start <= moment < end:
            found[day] = (moment - start) // timedelta(days=1)
        day += timedelta(days=1)
    return found


def check_days(url: str, learners: int, days: int, sends: list[bytearray]) -> None:
    """Per simulated day: learner-days expected, pushed once, missed, pushed twice, pushed on
    a local day not expected, inactive learners pushed; from the push log and the platform's counts."""
    end = SIM_START + timedelta(days=days)
    stride = learners + 1
    sent = bytearray(days * stride)  # platform sends per (simulated day, learner), all processes
    for counts in sends:
        for at in range(len(sent)):
            if counts[at]:
                sent[at] = min(255, sent[at] + counts[at])
    logged = bytearray(days * stride)  # push-log rows "sent", by the simulated day of sent_at
    expected_at = bytearray(days * stride)  # 1: a learner-day expected in that simulated day; 2: and pushed
    plans: dict = {}
    plan_of: dict[int, dict] = {}
    active = bytearray(stride)
    db = make_engine(url)
    with db.connect() as connection:
        for lid, zone, at, is_active, paused in connection.execute(
            sa.text("SELECT id, timezone, push_time, active, paused FROM learner")
        ):
            key = (zone, at)
            plan = plans.get(key)
            if plan is None:
                plan = plans[key] = expected_moments(at, zone, SIM_START, end)
            plan_of[lid] = plan
            if is_active and not paused:
                active[lid] = 1
                for day in plan.values():
                    expected_at[day * stride + lid] = 1
        wrong = [0] * days
        result = connection.execution_options(stream_results=True, yield_per=50_000).execute(
            sa.text("SELECT learner_id, local_date, sent_at FROM pushlog WHERE status = 'sent'")
        )
        for lid, local_day, sent_at in result:
            day = (sent_at - SIM_START) // timedelta(days=1)
            logged[day * stride + lid] += 1
            due_day = plan_of[lid].get(local_day)
            if due_day is None or not active[lid]:
                wrong[day] += 1
            else:
                expected_at[due_day * stride + lid] = 2
    db.dispose()
    say("day | pushes | learner-days expected | pushed once | missed | pushed twice | on a wrong day | inactive pushed")
    for day in range(days):
        base = day * stride
        pushes = expected = once = missed = doubled = inactive_pushed = 0
        for lid in range(1, stride):
            n = sent[base + lid]
            pushes += n
            extra = n - logged[base + lid]
            if extra > 0:
                doubled += extra
            if n and not active[lid]:
                inactive_pushed += 1
            state = expected_at[base + lid]
            if state:
                expected += 1
                if state == 1:
                    missed += 1
                elif extra <= 0:
                    once += 1
        say(f"{day + 1} | {pushes:,} | {expected:,} | {once:,} | {missed} | {doubled} | {wrong[day]} | {inactive_pushed}")


def vacuum_while(url: str, workers: list, every: float = 120.0) -> int:
    """Vacuum the learner and push-log tables every ``every`` seconds until the workers end,
    when the server's autovacuum is off (as on the development machine): each push updates
    two rows, and without vacuum the due index bloats and every claim slows down."""
    db = make_engine(url)
    with db.connect() as connection:
        on = connection.execute(sa.text("SHOW autovacuum")).scalar() == "on"
    vacuums = 0
    last = time.perf_counter()
    while any(worker.is_alive() for worker in workers):
        for worker in workers:
            worker.join(timeout=1.0)
        if not on and time.perf_counter() - last >= every:
            with db.connect() as connection:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
                connection.execute(sa.text("VACUUM (ANALYZE) learner"))
                connection.execute(sa.text("VACUUM (ANALYZE) pushlog"))
            vacuums += 1
            last = time.perf_counter()
    db.dispose()
    return vacuums


def bench_days(learners: int, days: int, inactive: float, procs: int, page: int) -> None:
    import multiprocessing
    import tempfile

    with pg_schema() as url:
        began = time.perf_counter()
        load_learners(url, learners, SIM_START, inactive=inactive, platforms=("telegram", "discord"), late_cohort=0.02)
        db = make_engine(url)
        with db.connect() as connection:
            active, late = connection.execute(sa.text(
                "SELECT count(*) FILTER (WHERE active AND NOT paused), "
                "count(*) FILTER (WHERE active AND NOT paused AND push_time = time '23:59') FROM learner")).one()
        db.dispose()
        say(f"loaded {learners:,} learners ({active:,} active, {late:,} of them at 23:59) in {time.perf_counter() - began:.0f} s; "
            f"{procs} sweep process(es), pages of {page}, {days} simulated days from {SIM_START:%Y-%m-%d %H:%M} UTC")
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(procs)
        pushes = context.Value("q", 0)
        rss = context.Array("d", procs * (days + 1))
        began = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            outs = [f"{tmp}/sends-{i}.bin" for i in range(procs)]
            workers = [
                context.Process(target=sweep_process, args=(url, i, procs, learners, days, page, barrier, pushes, rss, outs[i]))
                for i in range(procs)
            ]
            for worker in workers:
                worker.start()
            vacuums = vacuum_while(url, workers)
            if vacuums:
                say(f"autovacuum is off on this server: the bench vacuumed learner and pushlog {vacuums} times meanwhile")
            if any(worker.exitcode for worker in workers):
                raise SystemExit(f"a sweep process failed: exit codes {[w.exitcode for w in workers]}")
            elapsed = time.perf_counter() - began
            say(f"{days} simulated days: {pushes.value:,} pushes in {elapsed:.0f} s ({pushes.value / elapsed:.0f}/s)")
            for i in range(procs):
                say(f"RSS of sweep process {i + 1} by simulated day (MB): "
                    + ", ".join(f"{day}: {rss[i * (days + 1) + day]:.1f}" for day in range(days + 1)))
            sends = [bytearray(Path(out).read_bytes()) for out in outs]
        began = time.perf_counter()
        check_days(url, learners, days, sends)
        say(f"checked in {time.perf_counter() - began:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["due", "due-sqlite", "due-mixed", "days"])
    parser.add_argument("--snoozed", type=float, default=0.05, help="share of active learners snoozed (due-mixed)")
    parser.add_argument("--learners", type=int)
    parser.add_argument("--days", type=int, default=4)
    parser.add_argument("--inactive", type=float, default=0.3)
    parser.add_argument("--procs", type=int, default=1, help="sweep processes sharing the simulated days")
    parser.add_argument("--page", type=int, default=500, help="learners a sweep claims at a time")
    args = parser.parse_args()
    if args.what == "due":
        bench_due(args.learners or 1_000_000, args.inactive)
    elif args.what == "due-mixed":
        bench_due_mixed(args.learners or 1_000_000, args.inactive, args.snoozed)
    elif args.what == "due-sqlite":
        bench_due_sqlite(args.learners or 1_000_000, args.inactive)
    else:
        bench_days(args.learners or 20_000, args.days, args.inactive, args.procs, args.page)


if __name__ == "__main__":
    main()
