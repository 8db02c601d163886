"""Daily push reminders: one sweep a minute, exactly once per learner per local day.

Design:
- Each learner row carries ``next_push_at`` (UTC, indexed), computed from their push time in
  their own timezone. A sweep is one range scan on that index, in batches.
- Before sending, a sweep *claims* the push: it inserts the push-log row unique on
  (learner, local date), or takes over a row that is snoozed or whose claim went stale.
  Two sweeps never both claim one learner-day; a crash between claim and send leaves a
  claim that a later sweep takes over once its lease expires, so nothing is skipped.
- On PostgreSQL, concurrent workers read due learners with ``FOR UPDATE SKIP LOCKED`` so
  they split the work instead of queuing on each other; the unique claim is what makes it
  exactly once. SQLite is the single-process default.
- Sends are paced per platform by a token bucket, and each sweep sends at most what fits
  in its minute, so a backlog after downtime is spread out, never dropped or burst.
"""

from __future__ import annotations

import asyncio
import logging
import time as _time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlmodel import Session, col, func, select

from bot.clock import local_date
from bot.models import CardState, Learner, PushLog, PushStatus
from bot.ops import DUE_LEARNERS, PUSH_LAG, PUSHES
from bot.pushtime import next_push_at, tomorrows_push_at
from bot.transport import PushOutcome

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.engine import QuizEngine
    from bot.transport import Transport

log = logging.getLogger(__name__)

#: A claim older than this is presumed dead (its process crashed) and is taken over.
CLAIM_LEASE = timedelta(minutes=5)
MAX_ATTEMPTS = 5
#: Sustained sends per second per platform, under each platform's global limit.
PLATFORM_RATE = {"telegram": 25.0, "discord": 5.0}


class TokenBucket:
    """Paces sends to ``rate`` a second with bursts of at most ``burst``."""

    def __init__(self, rate: float, burst: float = 1.0, monotonic=_time.monotonic):
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.monotonic = monotonic
        self.stamp = monotonic()

    async def take(self) -> None:
        while True:
            now = self.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= 1:
                self.tokens -= 1
                return
            await asyncio.sleep((1 - self.tokens) / self.rate)


@dataclass
class SweepReport:
    due: int = 0
    sent: int = 0
    failed: int = 0
    blocked: int = 0
    nothing_to_ask: int = 0
    not_claimed: int = 0
    lag_seconds: list[float] = field(default_factory=list)


class ReminderSweeper:
    """Finds learners whose push is due and pushes each exactly once per local day."""

    def __init__(
        self,
        engine: QuizEngine,
        transports: dict[str, Transport],
        *,
        batch_size: int = 500,
        sweep_seconds: float = 55.0,
        rates: dict[str, float] | None = None,
        deck_size: int | None = None,
    ):
        self.engine = engine
        self.db = engine.db
        self.clock = engine.clock
        self.transports = transports
        self.batch_size = batch_size
        self.sweep_seconds = sweep_seconds
        rates = {**PLATFORM_RATE, **(rates or {})}
        self.buckets = {name: TokenBucket(rates.get(name, 5.0)) for name in transports}
        # A sweep reads no more learners than it could send to in its minute: the rest wait
        # for the next sweep instead of being loaded and dropped.
        self.max_per_sweep = max(batch_size, int(sum(rates.get(name, 5.0) for name in transports) * sweep_seconds))
        self.deck_size = deck_size if deck_size is not None else len(engine.deck)
        self.postgres = self.db.dialect.name == "postgresql"

    # ----- who is due -------------------------------------------------------------------

    def due_learners(self, session: Session, now: datetime, limit: int, after: tuple[datetime, int] | None) -> list[Learner]:
        """Active, unpaused learners whose push moment has come, oldest first (one index scan)."""
        # Only (next_push_at, id) bounds the scan, so the planner walks that index and nothing
        # else (a platform filter here made SQLite pick the (platform, user) index instead).
        query = (
            select(Learner)
            .where(
                col(Learner.next_push_at) <= now,
                Learner.active == sa.true(),
                Learner.paused == sa.false(),
            )
            .order_by(col(Learner.next_push_at), col(Learner.id))
            .limit(limit)
        )
        if after is not None:
            # Keyset paging: a row-value range that starts inside the (next_push_at, id) index.
            query = query.where(sa.tuple_(Learner.next_push_at, Learner.id) > sa.tuple_(*after))
        if self.postgres:
            query = query.with_for_update(skip_locked=True, of=Learner)
        return list(session.exec(query))

    def has_something_to_ask(self, session: Session, learners: list[Learner], now: datetime) -> set[int]:
        """Learners in the batch with a due review or a new trap available today."""
        ids = [learner.id for learner in learners]
        rows = session.exec(
            select(
                CardState.learner_id,
                func.count(),
                func.min(CardState.due_on),
                func.max(CardState.introduced_on),
            )
            .where(col(CardState.learner_id).in_(ids))
            .group_by(CardState.learner_id)
        ).all()
        seen = {row[0]: row[1:] for row in rows}
        ready: set[int] = set()
        for learner in learners:
            today = local_date(now, learner.timezone)
            count, earliest_due, last_new = seen.get(learner.id, (0, None, None))
            due = earliest_due is not None and earliest_due <= today
            new = count < self.deck_size and (last_new is None or last_new < today)
            if due or new:
                ready.add(learner.id)  # type: ignore[arg-type]
        return ready

    # ----- claiming ---------------------------------------------------------------------

    def claim(self, learner_id: int, day: date, now: datetime) -> bool:
        """Atomically take the push for (learner, day); False when another sweep owns it."""
        with Session(self.db) as session:
            try:
                session.add(PushLog(learner_id=learner_id, local_date=day, claimed_at=now, attempts=1))
                session.commit()
                return True
            except sa.exc.IntegrityError:
                session.rollback()
            stale = now - CLAIM_LEASE
            taken = session.exec(  # type: ignore[call-overload]
                sa.update(PushLog)
                .where(
                    PushLog.learner_id == learner_id,
                    PushLog.local_date == day,
                    PushLog.attempts < MAX_ATTEMPTS,
                    sa.or_(
                        PushLog.status == PushStatus.SNOOZED,
                        sa.and_(
                            col(PushLog.status).in_([PushStatus.CLAIMED, PushStatus.FAILED]),
                            PushLog.claimed_at < stale,
                        ),
                    ),
                )
                .values(status=PushStatus.CLAIMED, claimed_at=now, attempts=PushLog.attempts + 1)
            )
            session.commit()
            return taken.rowcount == 1

    def _finish(self, learner_id: int, day: date, status: PushStatus, now: datetime, *, next_at: datetime | None, **learner_values: object) -> None:
        with Session(self.db) as session:
            session.exec(  # type: ignore[call-overload]
                sa.update(PushLog)
                .where(PushLog.learner_id == learner_id, PushLog.local_date == day)
                .values(status=status, sent_at=now if status is PushStatus.SENT else None)
            )
            values = dict(learner_values)
            if next_at is not None:
                values["next_push_at"] = next_at
            if values:
                session.exec(sa.update(Learner).where(Learner.id == learner_id).values(**values))  # type: ignore[call-overload]
            session.commit()

    def _settle_unclaimed(self, learner: Learner, day: date, now: datetime) -> None:
        """A day already settled (sent, skipped, given up) looks again tomorrow; a claim held
        by a live sweep is left to it."""
        with Session(self.db) as session:
            row = session.exec(
                select(PushLog).where(PushLog.learner_id == learner.id, PushLog.local_date == day)
            ).first()
            settled = row is not None and (
                row.status in (PushStatus.SENT, PushStatus.SKIPPED, PushStatus.BLOCKED, PushStatus.ABANDONED)
                or row.attempts >= MAX_ATTEMPTS
            )
            if settled:
                session.exec(  # type: ignore[call-overload]
                    sa.update(Learner)
                    .where(Learner.id == learner.id, Learner.next_push_at == learner.next_push_at)
                    .values(next_push_at=tomorrows_push_at(learner.push_time, learner.timezone, now))
                )
                session.commit()

    # ----- the sweep --------------------------------------------------------------------

    async def sweep(self) -> SweepReport:
        """One pass over everyone due now, within this sweep's send budget."""
        report = SweepReport()
        started = _time.monotonic()
        after: tuple[datetime, int] | None = None
        now = self.clock.now()
        while _time.monotonic() - started < self.sweep_seconds and report.due < self.max_per_sweep:
            with Session(self.db, expire_on_commit=False) as session:
                batch = self.due_learners(session, now, min(self.batch_size, self.max_per_sweep - report.due), after)
                if not batch:
                    break
                reachable = [learner for learner in batch if learner.platform in self.transports]
                ready = self.has_something_to_ask(session, reachable, now)
                idle = [learner for learner in batch if learner.id not in ready]
                for learner in idle:  # nothing due and no new trap: look again tomorrow
                    learner.next_push_at = tomorrows_push_at(learner.push_time, learner.timezone, now)
                    session.add(learner)
                session.commit()  # releases the row locks; the push-log claim guards the rest
            report.due += len(batch)
            DUE_LEARNERS.set(report.due)
            report.nothing_to_ask += len(idle)
            after = (batch[-1].next_push_at, batch[-1].id)  # type: ignore[assignment]
            for learner in batch:
                if learner.id in ready:
                    await self._push_one(learner, now, report)
                if _time.monotonic() - started >= self.sweep_seconds:
                    break
        return report

    async def _push_one(self, learner: Learner, now: datetime, report: SweepReport) -> None:
        day = local_date(now, learner.timezone)
        if not self.claim(learner.id, day, now):  # type: ignore[arg-type]
            report.not_claimed += 1
            self._settle_unclaimed(learner, day, now)
            return
        replies = await self.engine.push_replies(learner.id)  # type: ignore[arg-type]
        if not replies:
            report.nothing_to_ask += 1
            self._finish(learner.id, day, PushStatus.SKIPPED, now,  # type: ignore[arg-type]
                         next_at=tomorrows_push_at(learner.push_time, learner.timezone, now))
            return
        await self.buckets[learner.platform].take()
        try:
            outcome = await self.transports[learner.platform].push(learner, replies)
        except Exception:  # an adapter bug must not stop the sweep for everyone else
            log.exception("push to learner %s failed", learner.id)
            outcome = PushOutcome.FAILED
        sent_at = self.clock.now()
        PUSHES.labels(learner.platform, outcome.value).inc()
        if outcome is PushOutcome.SENT:
            report.sent += 1
            if learner.next_push_at is not None:
                lag = (sent_at - learner.next_push_at).total_seconds()
                report.lag_seconds.append(lag)
                PUSH_LAG.observe(max(lag, 0.0))
            self._finish(
                learner.id, day, PushStatus.SENT, sent_at,  # type: ignore[arg-type]
                next_at=next_push_at(learner.push_time, learner.timezone, sent_at, sent_at),
                last_pushed_at=sent_at,
            )
        elif outcome is PushOutcome.BLOCKED:
            report.blocked += 1
            self._finish(learner.id, day, PushStatus.BLOCKED, sent_at, next_at=None, active=False)  # type: ignore[arg-type]
            log.info("learner %s blocked the bot; deactivated", learner.id)
        else:
            report.failed += 1
            self._finish(learner.id, day, PushStatus.FAILED, sent_at, next_at=None)  # type: ignore[arg-type]


@dataclass
class RunningReminders:
    scheduler: object
    sweeper: ReminderSweeper

    async def stop(self) -> None:
        self.scheduler.shutdown(wait=False)  # type: ignore[attr-defined]


async def start_reminders(settings: Settings, engine: QuizEngine, transports: dict[str, Transport]) -> RunningReminders:
    """Run the sweep every minute on the running event loop (APScheduler 3)."""
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    sweeper = ReminderSweeper(engine, transports)
    scheduler = AsyncIOScheduler(timezone="UTC")

    async def sweep() -> None:
        report = await sweeper.sweep()
        if report.due:
            log.info("push sweep: %s due, %s sent, %s failed, %s blocked", report.due, report.sent, report.failed, report.blocked)
        # A Discord server's trap of the day rides the same sweep.
        for transport in transports.values():
            post_due = getattr(transport, "post_due_traps", None)
            if post_due is not None:
                try:
                    await post_due()
                except Exception:  # one platform's failure must not stop the minute's sweep
                    log.exception("posting the servers' traps of the day failed")

    # One job for everyone; never two sweeps of this process at once; a missed minute is merged.
    scheduler.add_job(sweep, "interval", minutes=1, id="push-sweep", max_instances=1, coalesce=True,
                      next_run_time=datetime.now(tz=None).astimezone())
    scheduler.start()
    return RunningReminders(scheduler, sweeper)
