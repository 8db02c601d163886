"""Shared pieces of the push benchmarks: a PostgreSQL schema of their own, learners bulk-loaded
in SQL, and a sweeper whose push content is a constant (the benches measure the sweep's
claims, pacing and bookkeeping, not the engine's choice of trap)."""

from __future__ import annotations

import contextlib
import os
import uuid
from datetime import datetime

import sqlalchemy as sa

from bot.db import make_engine, migrate, normalise_url
from bot.replies import Reply
from bot.transport import PushOutcome

DEFAULT_PG = os.environ.get("BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/bench_replicas")
#: Zones with and without DST, both ends of the clock.
ZONES = ["UTC", "America/New_York", "America/Los_Angeles", "Europe/Berlin", "Europe/London", "Asia/Kolkata",
         "Asia/Tokyo", "Australia/Sydney", "America/Sao_Paulo", "Pacific/Kiritimati", "Etc/GMT+12",
         "Africa/Cairo", "Asia/Kathmandu", "America/St_Johns", "Pacific/Auckland"]
REPLY = [Reply("Your trap of the day")]


def ensure_database(url: str) -> None:
    """Create the bench's database when this server lacks it (a new machine has only
    ``test``, ``root`` and ``postgres``)."""
    target = sa.engine.make_url(normalise_url(url))
    server = sa.create_engine(target.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with server.connect() as connection:
            exists = connection.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": target.database}
            ).first()
            if not exists:
                connection.execute(sa.text(f'CREATE DATABASE "{target.database}"'))
    finally:
        server.dispose()


@contextlib.contextmanager
def pg_schema(base: str = DEFAULT_PG):
    """A fresh schema, migrated to head, dropped afterwards; yields its URL."""
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    ensure_database(base)
    admin = sa.create_engine(normalise_url(base))
    with admin.begin() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in base else "?"
    url = f"{normalise_url(base)}{separator}options=-csearch_path%3D{schema}"
    try:
        migrate(url)
        yield url
    finally:
        with admin.begin() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def load_learners(url: str, count: int, start: datetime, *, inactive: float = 0.0, moment: datetime | None = None,
                  moment_count: int = 0, platforms: tuple[str, ...] = ("telegram",), late_cohort: float = 0.0) -> None:
    """``count`` learners in SQL (generate_series): spread over ZONES, each with a push time
    drawn from the minutes of the day (a ``late_cohort`` share at 23:59), next push at their
    first moment at or after ``start``; ``inactive`` share blocked or paused (no push moment);
    ``moment_count`` of them due together at ``moment``."""
    engine = make_engine(url)
    zones = "(ARRAY[" + ",".join(f"'{zone}'" for zone in ZONES) + "])"
    plats = "(ARRAY[" + ",".join(f"'{p}'" for p in platforms) + "])"
    with engine.begin() as connection:
        connection.execute(sa.text(f"""
            INSERT INTO learner (platform, platform_user_id, chat_id, display_name, timezone, push_time, new_per_day,
                                 paused, active, reminders, created_at)
            SELECT {plats}[1 + i % {len(platforms)}], i::text, i::text, '', {zones}[1 + (i * 7) % {len(ZONES)}],
                   CASE WHEN (hashint4(i) & 1023) < {int(late_cohort * 1024)} THEN time '23:59'
                        ELSE time '00:00' + ((abs(hashint4(i + 7)) % 1440) * interval '1 minute') END,
                   1, (abs(hashint4(i + 3)) % 1000) < {int(inactive * 500)},
                   (abs(hashint4(i + 3)) % 1000) >= {int(inactive * 1000)} OR (abs(hashint4(i + 3)) % 1000) < {int(inactive * 500)},
                   true, :start
            FROM generate_series(1, :n) AS i
        """), {"n": count, "start": start})
        # Active, unpaused learners get their next push moment at or after ``start`` (PostgreSQL's
        # own zone rules; the sweep computes every later one in Python).
        connection.execute(sa.text("""
            UPDATE learner SET next_push_at = CASE WHEN today >= :start THEN today ELSE tomorrow END
            FROM (SELECT id AS lid,
                         ((((:start)::timestamptz AT TIME ZONE timezone)::date + push_time) AT TIME ZONE timezone) AS today,
                         ((((:start)::timestamptz AT TIME ZONE timezone)::date + 1 + push_time) AT TIME ZONE timezone) AS tomorrow
                  FROM learner) AS moments
            WHERE id = lid AND active AND NOT paused
        """), {"start": start})
        if moment_count:
            connection.execute(sa.text("""
                UPDATE learner SET next_push_at = :moment WHERE id IN
                  (SELECT id FROM learner WHERE next_push_at IS NOT NULL ORDER BY id LIMIT :k)
            """), {"moment": moment, "k": moment_count})
    with engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT").execute(sa.text("VACUUM ANALYZE learner"))
    engine.dispose()


class NoopPlatform:
    """Accepts every push at once (or after ``delay`` seconds, like an HTTP round trip)."""

    def __init__(self, platform: str = "telegram", delay: float = 0.0):
        self.platform = platform
        self.delay = delay
        self.pushed = 0

    async def push(self, learner, replies) -> PushOutcome:
        if self.delay:
            import asyncio

            await asyncio.sleep(self.delay)
        self.pushed += 1
        return PushOutcome.SENT


def constant_pushes(engine) -> None:
    """Push content without the engine's trap choice: the benches measure the sweep."""

    async def push_replies(learner_id: int) -> list[Reply]:
        return REPLY

    async def push_replies_many(learner_ids: list[int]) -> dict[int, list[Reply]]:
        return dict.fromkeys(learner_ids, REPLY)

    engine.push_replies = push_replies
    engine.push_replies_many = push_replies_many


def fast_commits(db) -> None:
    """Benchmarks only: commits do not wait for the WAL flush (the machine's disk is shared)."""

    @sa.event.listens_for(db, "connect")
    def _no_flush_wait(dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("SET synchronous_commit = off")
        cursor.close()
        dbapi_connection.commit()


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")
