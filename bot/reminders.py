"""Daily push reminders: one sweep a minute, at least once per learner per local day.

Design (README "Running many replicas" says what is guaranteed):
- Each learner row carries ``next_push_at`` (UTC; NULL while they cannot be pushed), indexed
  with the platform and the id, so finding a platform's due learners is one range scan.
- A sweep runs one loop per platform it has a transport for, and each loop *claims* a page
  of that platform's due learners in one statement: ``UPDATE ... WHERE id IN (SELECT ...
  FOR UPDATE SKIP LOCKED LIMIT n) RETURNING``. The claim moves ``next_push_at`` to the
  claim's lease expiry (keeping the moment it replaced in ``push_due_at``), so concurrent
  sweeps read disjoint rows and a learner claimed by a sweep that died is due again once
  the lease runs out. The same transaction inserts the push-log rows, unique on (learner,
  local date), that keep a local day from being pushed twice.
- The page's push content (the trap each learner is asked, stored as their open trap) is
  chosen in one transaction, holding the learners' locks; a learner busy at that moment (an
  answer being graded, here or on another replica) is left out and asked alone at their turn.
- Right before each send, the sweep checks that the learner still holds its claim (a
  snooze, a pause, a settings change or /forget in between wins); right after the platform
  answers, it records the push, conditional on the claim (a send whose claim was lost still
  records when the learner was pushed). Checks and records are coalesced (``Coalescer``):
  one that finds nothing in flight runs at once, alone; those that arrive while one is in
  flight run together in the next statement and commit, so a busy page costs a few round
  trips, not a few per push, and no record waits for more than the one before it.
- Sends are paced per platform by send slots reserved in the database (``PushPace``), so
  every replica together stays under the platform's rate; platforms never wait for each other.
- The next push is computed from the local day that was claimed, never from when the send
  finished, so a 23:59 send that completes after midnight does not lose the next day. A
  claim retried after its lease keeps the first claim's due moment (``push_due_at``), so it
  counts for the day it was due; a snoozed push that comes due after midnight but before the
  new day's own moment counts for the snoozed day.
- A failing push is retried after the lease, ``MAX_ATTEMPTS`` a local day; a learner whose
  every attempt failed on ``STOP_AFTER_DAYS`` days running is paused and told when they next
  write (``bot.learners.take_push_notice``). docs/reminders.md has the whole design and the fault table.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time as _time
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.clock import local_date
from bot.models import CardState, Learner, PushLog, PushPace, PushStatus
from bot.ops import DUE_LEARNERS, PUSH_LAG, PUSHES
from bot.pushtime import STOP_AFTER_DAYS, local_push_moment
from bot.transport import PushOutcome

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.engine import QuizEngine
    from bot.replies import Reply
    from bot.transport import Transport

log = logging.getLogger(__name__)

#: A claim older than this is presumed dead (its process crashed) and is taken over.
CLAIM_LEASE = timedelta(minutes=5)
#: Attempts at one learner's push on one local day; the last failed one gives the day up.
MAX_ATTEMPTS = 5
#: Sustained sends per second per platform, for all replicas together.
PLATFORM_RATE = {"telegram": 25.0, "discord": 5.0}
#: A push sent this long after its moment still counts for the moment's local day (a 23:59
#: backlog finishing after midnight); later than that (downtime) it counts for today.
DAY_GRACE = timedelta(hours=6)
#: Push-log rows older than this are deleted by the sweep, a bounded batch at a time.
PUSH_LOG_DAYS = 35
PRUNE_BATCH = 5_000
#: Seconds of sends one claim covers at the platform's rate: small pages keep a dead
#: process's unsent claims (held for the lease) few.
PAGE_SECONDS = 2.0
#: Waits between attempts to record a push the platform accepted (about 40 s, under the lease).
RECORD_RETRY_SECONDS = (0.5, 2.0, 8.0, 30.0)
#: Seconds before its send slot a push checks that it still holds its claim, at least.
PREPARE_AHEAD = 0.25
#: Checks wake on a grid of this many seconds, so the pushes of one cell (five at 25/s) are
#: checked in one statement instead of one each; a check is then at most 0.45 s before its send.
CHECK_GRID = 0.2
SETTLED = (PushStatus.SENT, PushStatus.SKIPPED, PushStatus.BLOCKED, PushStatus.ABANDONED)
LEARNER = Learner.__table__
PUSH_LOG = PushLog.__table__
PACE = PushPace.__table__

# PostgreSQL writes a page's rows in one set-based statement each (arrays unnested), instead of
# one statement per row: a page of 50 is one round trip and one plan, not 50. SQLite, one
# process on a local file, runs the same writes as executemany.
_PG_CLAIM_DAYS = sa.text("""
    INSERT INTO pushlog (learner_id, local_date, status, claimed_at, attempts)
    SELECT v.learner_id, v.local_date, :claimed, :now, 1
    FROM unnest(CAST(:ids AS bigint[]), CAST(:days AS date[])) AS v(learner_id, local_date)
    ORDER BY v.learner_id
    ON CONFLICT (learner_id, local_date) DO UPDATE
    SET status = :claimed, claimed_at = EXCLUDED.claimed_at, attempts = pushlog.attempts + 1
    WHERE pushlog.attempts < :max_attempts
      AND (pushlog.status IN (:snoozed, :failed) OR (pushlog.status = :claimed AND pushlog.claimed_at < :stale))
    RETURNING learner_id, attempts
""")
_PG_NEXT_DAY = sa.text("""
    UPDATE learner SET next_push_at = v.next_push_at, push_due_at = NULL
    FROM unnest(CAST(:ids AS bigint[]), CAST(:nexts AS timestamptz[])) AS v(id, next_push_at)
    WHERE learner.id = v.id AND learner.next_push_at = :lease
""")
_PG_RECORD_LOG = sa.text("""
    UPDATE pushlog SET status = v.status, sent_at = v.sent_at
    FROM unnest(CAST(:ids AS bigint[]), CAST(:days AS date[]), CAST(:claimed_ats AS timestamptz[]),
                CAST(:statuses AS varchar[]), CAST(:sent_ats AS timestamptz[]))
         AS v(learner_id, local_date, claimed_at, status, sent_at)
    WHERE pushlog.learner_id = v.learner_id AND pushlog.local_date = v.local_date
      AND pushlog.status = :claimed AND pushlog.claimed_at = v.claimed_at
""")
_PG_RECORD_NEXT = sa.text("""
    UPDATE learner SET next_push_at = v.next_push_at, last_pushed_at = coalesce(v.pushed_at, learner.last_pushed_at),
                       push_due_at = NULL
    FROM unnest(CAST(:ids AS bigint[]), CAST(:leases AS timestamptz[]), CAST(:nexts AS timestamptz[]),
                CAST(:pushed_ats AS timestamptz[])) AS v(id, lease, next_push_at, pushed_at)
    WHERE learner.id = v.id AND learner.next_push_at = v.lease
    RETURNING learner.id
""")
_PG_RECORD_BLOCKED = sa.text(
    "UPDATE learner SET active = false, next_push_at = NULL, push_due_at = NULL WHERE id = ANY(CAST(:ids AS bigint[]))"
)


class SharedPace:
    """Send slots per platform, shared by every replica through the database.

    ``reserve(platform, n)`` takes the next ``n`` slots in one UPDATE (a generic cell rate
    algorithm: the row holds when the next free slot is), so N replicas together send at
    the platform's rate, not N times it. Slots are wall-clock Unix times.
    """

    def __init__(self, db: sa.Engine, rates: dict[str, float], wall=_time.time):
        self.db = db
        self.rates = rates
        self.wall = wall
        greatest = sa.func.greatest if db.dialect.name == "postgresql" else sa.func.max
        self._take = (
            sa.update(PACE)
            .where(PACE.c.platform == sa.bindparam("p"))
            .values(next_slot=greatest(PACE.c.next_slot, sa.bindparam("now")) + sa.bindparam("span"))
            .returning(PACE.c.next_slot)
        )

    def reserve(self, platform: str, n: int) -> float:
        """The Unix time of the first of ``n`` consecutive slots now reserved for ``platform``."""
        span = n / self.rates[platform]
        with self.db.begin() as connection:
            params = {"p": platform, "now": self.wall(), "span": span}
            end = connection.execute(self._take, params).scalar()
            if end is None:  # the platform's first send ever
                connection.execute(_insert(self.db, PACE).values(platform=platform, next_slot=0.0).on_conflict_do_nothing())
                end = connection.execute(self._take, params).scalar()
        return float(end) - span


class Coalescer:
    """Runs ``work(items)`` in a worker thread on whatever was submitted while the previous
    call was running: alone and at once when nothing is in flight, together when calls pile up.

    ``await submit(item)`` returns that item's result (``work`` returns one per item, in
    order) or raises what ``work`` raised for the batch. An item whose caller was cancelled
    is still worked on once its batch has started (a record of a push the platform took is
    written all the same).
    """

    def __init__(self, work, limit: int = 500):
        self.work = work
        self.limit = limit
        self.pending: list[tuple[object, asyncio.Future]] = []
        self.draining: asyncio.Task | None = None
        self.calls = 0  # batches run, for tests and benches

    async def submit(self, item: object):
        future = asyncio.get_running_loop().create_future()
        self.pending.append((item, future))
        if self.draining is None:
            self.draining = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        batch: list[tuple[object, asyncio.Future]] = []
        try:
            while self.pending:
                batch, self.pending = self.pending[: self.limit], self.pending[self.limit :]
                self.calls += 1
                try:
                    results = await asyncio.to_thread(self.work, [item for item, _ in batch])
                except BaseException as error:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(error)
                    if isinstance(error, asyncio.CancelledError) and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                        raise
                    continue
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
                batch = []
        finally:
            self.draining = None
            for _, future in batch + self.pending:  # left over only when the drain itself was cancelled
                future.cancel()
            self.pending = []


def _insert(db: sa.Engine, table: sa.Table):
    if db.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


@dataclass
class Claim:
    """One learner-day this sweep owns: the learner row holds ``lease`` until it is recorded."""

    learner: Learner
    day: date
    due_at: datetime
    claimed_at: datetime
    lease: datetime
    attempt: int = 1  # of this local day's push, counting this one


@dataclass
class Page:
    rows: int = 0  # learner rows this claim took
    cleared: int = 0  # of them, rows that cannot be pushed but had a push moment: cleared
    claims: list[Claim] = field(default_factory=list)  # learner-days to push
    idle: int = 0  # nothing due and no new trap: moved to their next day
    settled: int = 0  # the day was already pushed, skipped or given up
    contended: int = 0  # another sweep holds the day's push-log claim


@dataclass
class SweepReport:
    due: int = 0
    sent: int = 0
    failed: int = 0
    blocked: int = 0
    nothing_to_ask: int = 0
    not_claimed: int = 0  # claimed, then found changed (snoozed, paused) before sending
    contended: int = 0
    errors: int = 0
    pruned: int = 0
    cleared: int = 0  # rows that cannot be pushed but had a push moment: cleared
    lag_seconds: list[float] = field(default_factory=list)
    #: Failed pushes by kind: how many, and the first (learner id, error) of each.
    failures: dict[str, list] = field(default_factory=dict)

    def note_failure(self, kind: str, learner_id: int, error: BaseException | None) -> None:
        seen = self.failures.setdefault(kind, [0, learner_id, error])
        seen[0] += 1

    def log_failures(self) -> None:
        """One line per kind of failure this sweep, without a traceback (the adapter's own
        traceback is at DEBUG): a platform outage is a few lines, not one per learner."""
        for kind, (count, learner_id, error) in self.failures.items():
            detail = f": {error}" if error is not None and str(error) else ""
            log.warning("%s push(es) failed this sweep: %s (first: learner %s%s); each is retried after "
                        "the claim's lease, %s attempts a day", count, kind, learner_id, detail, MAX_ATTEMPTS)


def claimed_day(due_at: datetime, now: datetime, timezone: str) -> date:
    """The local day a push claimed at ``now`` for the moment ``due_at`` counts for."""
    if now - due_at <= DAY_GRACE:
        return local_date(due_at, timezone)
    return local_date(now, timezone)


def counted_at(claim: Claim, at: datetime) -> datetime:
    """The push time recorded for a send at ``at`` that counts for ``claim.day``: ``at`` when
    it ended on that local day, else the last moment of that day (a 23:59 send finishing after
    midnight, a snoozed push after midnight), so a settings change the next day still finds
    that day's push owed."""
    if local_date(at, claim.learner.timezone) == claim.day:
        return at
    if local_date(claim.due_at, claim.learner.timezone) == claim.day:
        return claim.due_at
    return local_push_moment(claim.day + timedelta(days=1), time(0, 0), claim.learner.timezone) - timedelta(microseconds=1)


def following_push(learner: Learner, day: date) -> datetime:
    """The push moment on the local day after ``day``."""
    return local_push_moment(day + timedelta(days=1), learner.push_time, learner.timezone)


class ReminderSweeper:
    """Claims the learners of its platforms whose push is due and pushes each once a local day."""

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
        self.rates = {**PLATFORM_RATE, **(rates or {})}
        for name in transports:
            self.rates.setdefault(name, 5.0)
        self.pace = SharedPace(self.db, self.rates)
        # A sweep claims no more learners of a platform than it could send to in its minute:
        # the rest wait for the next sweep instead of being claimed and held.
        self.max_per_sweep = {name: max(1, int(self.rates[name] * sweep_seconds)) for name in transports}
        self.deck_size = deck_size if deck_size is not None else len(engine.deck)
        self.postgres = self.db.dialect.name == "postgresql"
        self._checks = Coalescer(self.still_claimed)
        self._records = Coalescer(self._record_batch)

    # ----- claiming (runs in a worker thread) -------------------------------------------

    def claim_page(self, platform: str, now: datetime, limit: int) -> Page:
        """Claim up to ``limit`` due learners of ``platform`` and their local days, in one transaction."""
        lease = now + CLAIM_LEASE
        # The due query is the index range alone (platform, next_push_at <= now): a row that
        # cannot be pushed but kept a push moment (written by an older version) is picked
        # like any other and loses its moment in the claim, so such rows never pile up in
        # the range every idle minute has to read past.
        pick = (
            sa.select(LEARNER.c.id)
            .where(LEARNER.c.platform == platform, LEARNER.c.next_push_at <= now)
            .order_by(LEARNER.c.next_push_at, LEARNER.c.id)
            .limit(limit)
        )
        if self.postgres:
            pick = pick.with_for_update(skip_locked=True)
        pushable = sa.and_(LEARNER.c.active == sa.true(), LEARNER.c.paused == sa.false())
        claim = (
            sa.update(LEARNER)
            # The outer condition re-checks the row under the claim: a row changed since the
            # pick (snoozed, paused) is not claimed.
            .where(LEARNER.c.id.in_(pick), LEARNER.c.next_push_at <= now)
            .values(
                # A retried claim (the last one failed, or its process died) keeps the moment
                # the first claim took over, so it counts for the local day it was due for.
                push_due_at=sa.case((pushable, sa.func.coalesce(LEARNER.c.push_due_at, LEARNER.c.next_push_at)), else_=None),
                next_push_at=sa.case((pushable, sa.bindparam("lease", lease, type_=LEARNER.c.next_push_at.type)), else_=None),
            )
            .returning(*LEARNER.c)
        )
        page = Page()
        with self.db.connect() as connection, connection.begin():
            # Plain rows with the learner's attributes: ORM instances cost 0.5 ms each here.
            rows: list[Learner] = [SimpleNamespace(**row._mapping) for row in connection.execute(claim)]  # type: ignore[misc]
            page.rows = len(rows)
            learners = [row for row in rows if row.active and not row.paused]
            page.cleared = page.rows - len(learners)
            if not learners:
                return page
            days = {learner.id: claimed_day(learner.push_due_at, now, learner.timezone) for learner in learners}  # type: ignore[arg-type]
            self._snoozed_days(connection, learners, days, now)
            ready = self._has_something_to_ask(connection, learners, days)
            later = [learner for learner in learners if learner.id not in ready]
            page.idle = len(later)
            wanted = [learner for learner in learners if learner.id in ready]
            taken = self._claim_days(connection, wanted, days, now) if wanted else {}
            if len(taken) < len(wanted):
                settled, live = self._unclaimed_days(connection, [x for x in wanted if x.id not in taken], days)
                later += settled
                page.settled, page.contended = len(settled), live
            if later and self.postgres:  # nothing to push today: their next push is on the following local day
                later.sort(key=lambda x: x.id)
                connection.execute(_PG_NEXT_DAY, {"ids": [x.id for x in later], "lease": lease,
                                                  "nexts": [following_push(x, days[x.id]) for x in later]})
            elif later:
                connection.execute(
                    sa.update(LEARNER)
                    .where(LEARNER.c.id == sa.bindparam("b_id"), LEARNER.c.next_push_at == sa.bindparam("b_lease"))
                    .values(next_push_at=sa.bindparam("b_next"), push_due_at=None),
                    [{"b_id": x.id, "b_lease": lease, "b_next": following_push(x, days[x.id])} for x in later],
                )
        page.claims = [
            Claim(learner, days[learner.id], learner.push_due_at, now, lease, taken[learner.id])  # type: ignore[arg-type, index]
            for learner in wanted
            if learner.id in taken
        ]
        return page

    def _snoozed_days(self, connection: Connection, learners: list[Learner], days: dict, now: datetime) -> None:
        """A snoozed push that comes due after local midnight, before that day's own push
        moment (a 12-hour snooze at 13:00), is still the snoozed day's push: it takes over the
        snoozed day in ``days``, so the new day's regular push follows at its time."""
        early = [x for x in learners if now < local_push_moment(days[x.id], x.push_time, x.timezone)]
        if not early:
            return
        snoozed = set(
            connection.execute(
                sa.select(PUSH_LOG.c.learner_id, PUSH_LOG.c.local_date).where(
                    PUSH_LOG.c.learner_id.in_([x.id for x in early]), PUSH_LOG.c.status == PushStatus.SNOOZED.value
                )
            ).all()
        )
        for learner in early:
            day_before = days[learner.id] - timedelta(days=1)
            if (learner.id, day_before) in snoozed:
                days[learner.id] = day_before

    def _has_something_to_ask(self, connection: Connection, learners: list[Learner], days: dict) -> set[int]:
        """Learners with a due review or a new trap available on their claimed day."""
        cards = CardState.__table__
        rows = connection.execute(
            sa.select(cards.c.learner_id, sa.func.count(), sa.func.min(cards.c.due_on), sa.func.max(cards.c.introduced_on))
            .where(cards.c.learner_id.in_([learner.id for learner in learners]))
            .group_by(cards.c.learner_id)
        ).all()
        seen = {row[0]: row[1:] for row in rows}
        ready: set[int] = set()
        for learner in learners:
            day = days[learner.id]
            count, earliest_due, last_new = seen.get(learner.id, (0, None, None))
            due = earliest_due is not None and earliest_due <= day
            new = count < self.deck_size and (last_new is None or last_new < day)
            if due or new:
                ready.add(learner.id)  # type: ignore[arg-type]
        return ready

    def _claim_days(self, connection: Connection, learners: list[Learner], days: dict, now: datetime) -> dict[int, int]:
        """Insert or take over the push-log rows of these learner-days: {id taken: its attempt}."""
        if self.postgres:
            ordered = sorted(learners, key=lambda x: x.id)
            return dict(connection.execute(_PG_CLAIM_DAYS, {
                "ids": [x.id for x in ordered], "days": [days[x.id] for x in ordered], "now": now,
                "stale": now - CLAIM_LEASE, "max_attempts": MAX_ATTEMPTS, "claimed": PushStatus.CLAIMED.value,
                "snoozed": PushStatus.SNOOZED.value, "failed": PushStatus.FAILED.value,
            }).all())
        insert = _insert(self.db, PUSH_LOG)
        insert = insert.on_conflict_do_update(
            index_elements=[PUSH_LOG.c.learner_id, PUSH_LOG.c.local_date],
            set_={"status": PushStatus.CLAIMED.value, "claimed_at": insert.excluded.claimed_at, "attempts": PUSH_LOG.c.attempts + 1},
            where=sa.and_(
                PUSH_LOG.c.attempts < MAX_ATTEMPTS,
                sa.or_(
                    PUSH_LOG.c.status == PushStatus.SNOOZED.value,
                    PUSH_LOG.c.status == PushStatus.FAILED.value,
                    sa.and_(PUSH_LOG.c.status == PushStatus.CLAIMED.value, PUSH_LOG.c.claimed_at < now - CLAIM_LEASE),
                ),
            ),
        )
        # Executed with a list of rows: SQLAlchemy batches them into one cached multi-row statement.
        rows = [
            {"learner_id": x.id, "local_date": days[x.id], "status": PushStatus.CLAIMED.value, "claimed_at": now, "attempts": 1}
            for x in learners
        ]
        return dict(connection.execute(insert.returning(PUSH_LOG.c.learner_id, PUSH_LOG.c.attempts), rows).all())

    def _unclaimed_days(self, connection: Connection, learners: list[Learner], days: dict) -> tuple[list[Learner], int]:
        """Of learner-days whose push-log row could not be claimed: the settled ones, and how
        many are held by a live claim (those keep the lease and are looked at again after it)."""
        rows = connection.execute(
            sa.select(PUSH_LOG.c.learner_id, PUSH_LOG.c.local_date, PUSH_LOG.c.status, PUSH_LOG.c.attempts).where(
                PUSH_LOG.c.learner_id.in_([x.id for x in learners])
            )
        ).all()
        state = {(row.learner_id, row.local_date): row for row in rows}
        settled = []
        for learner in learners:
            row = state.get((learner.id, days[learner.id]))
            if row is None or row.status in SETTLED or row.attempts >= MAX_ATTEMPTS:
                settled.append(learner)
        return settled, len(learners) - len(settled)

    def still_claimed(self, claims: list[Claim]) -> list[bool]:
        """Whether each learner row still holds its claim (a snooze, pause or settings change
        since the claim wins), read in one statement."""
        with self.db.connect() as connection:
            current = dict(
                connection.execute(
                    sa.select(LEARNER.c.id, LEARNER.c.next_push_at).where(LEARNER.c.id.in_({c.learner.id for c in claims}))
                ).all()
            )
            connection.rollback()
        return [current.get(claim.learner.id) == claim.lease for claim in claims]

    def record(self, claim: Claim, status: PushStatus, at: datetime) -> None:
        """Write the outcome of one claimed push (``record_many`` of one)."""
        self.record_many([(claim, status, at)])

    def _record_batch(self, outcomes: list[tuple[Claim, PushStatus, datetime]]) -> list[None]:
        self.record_many(outcomes)
        return [None] * len(outcomes)

    def record_many(self, outcomes: list[tuple]) -> None:
        """Write the outcomes of claimed pushes in one transaction, each only where its claim
        still holds: one multi-row statement per kind of write (psycopg pipelines them).

        An outcome is ``(claim, status, at)`` or ``(claim, status, at, failure kind)``. A
        send the platform accepted after the learner's row changed (a timezone change during
        the send) still records when they were pushed, so the new zone's same local day gets
        no second push. The last failed attempt of a day gives the day up; a learner whose
        pushes were given up on ``STOP_AFTER_DAYS`` days running has their pushes stopped."""
        logs, sent, skipped, blocked, abandoned = [], [], [], [], []
        for claim, status, at, *rest in sorted(outcomes, key=lambda outcome: outcome[0].learner.id):  # one lock order
            learner = claim.learner
            if status is PushStatus.FAILED and claim.attempt >= MAX_ATTEMPTS:
                status = PushStatus.ABANDONED
            logs.append({"b_id": learner.id, "b_day": claim.day, "b_claimed": claim.claimed_at,
                         "b_status": status.value, "b_sent": at if status is PushStatus.SENT else None})
            if status is PushStatus.SENT:
                sent.append({"b_id": learner.id, "b_lease": claim.lease, "b_next": following_push(learner, claim.day),
                             "b_pushed": counted_at(claim, at), "b_at": at})
            elif status is PushStatus.SKIPPED:
                skipped.append({"b_id": learner.id, "b_lease": claim.lease, "b_next": following_push(learner, claim.day)})
            elif status is PushStatus.BLOCKED:
                blocked.append({"b_id": learner.id})
            elif status is PushStatus.ABANDONED:
                abandoned.append({"b_id": learner.id, "b_lease": claim.lease, "b_next": following_push(learner, claim.day),
                                  "b_day": claim.day, "b_kind": (rest[0] if rest else None) or "failed"})
            # FAILED: the learner keeps the lease and is claimed again when it runs out.
        bind = sa.bindparam
        with self.db.connect() as connection, connection.begin():  # learner rows first, on both databases
            if self.postgres:
                lost = self._record_learners_postgres(connection, sent, skipped + abandoned, blocked)
            else:
                lost = self._record_learners_sqlite(connection, sent, skipped + abandoned, blocked)
            if lost:
                self._record_lost_sends(connection, lost)
            if abandoned:
                self._stop_failing(connection, abandoned)
            if self.postgres:
                connection.execute(_PG_RECORD_LOG, {
                    "ids": [x["b_id"] for x in logs], "days": [x["b_day"] for x in logs],
                    "claimed_ats": [x["b_claimed"] for x in logs], "statuses": [x["b_status"] for x in logs],
                    "sent_ats": [x["b_sent"] for x in logs], "claimed": PushStatus.CLAIMED.value,
                })
                return
            connection.execute(
                sa.update(PUSH_LOG)
                .where(
                    PUSH_LOG.c.learner_id == bind("b_id"),
                    PUSH_LOG.c.local_date == bind("b_day"),
                    PUSH_LOG.c.status == PushStatus.CLAIMED.value,
                    PUSH_LOG.c.claimed_at == bind("b_claimed"),
                )
                .values(status=bind("b_status"), sent_at=bind("b_sent")),
                logs,
            )

    def _record_learners_sqlite(self, connection: Connection, sent: list[dict], moved: list[dict], blocked: list[dict]) -> list[dict]:
        """The learner rows of a record on SQLite (executemany); the sends whose claim no longer held."""
        bind = sa.bindparam
        held = sa.and_(LEARNER.c.id == bind("b_id"), LEARNER.c.next_push_at == bind("b_lease"))
        if sent:
            connection.execute(
                sa.update(LEARNER).where(held).values(next_push_at=bind("b_next"), last_pushed_at=bind("b_pushed"), push_due_at=None),
                sent,
            )
        if moved:
            connection.execute(sa.update(LEARNER).where(held).values(next_push_at=bind("b_next"), push_due_at=None), moved)
        if blocked:
            connection.execute(
                sa.update(LEARNER).where(LEARNER.c.id == bind("b_id")).values(active=False, next_push_at=None, push_due_at=None),
                blocked,
            )
        if not sent:
            return []
        now_at = dict(connection.execute(
            sa.select(LEARNER.c.id, LEARNER.c.next_push_at).where(LEARNER.c.id.in_([x["b_id"] for x in sent]))
        ).all())
        return [x for x in sent if x["b_id"] in now_at and now_at[x["b_id"]] != x["b_next"]]

    def _record_learners_postgres(self, connection: Connection, sent: list[dict], moved: list[dict], blocked: list[dict]) -> list[dict]:
        """The learner rows of a record on PostgreSQL, one statement per kind of write for the
        whole batch, in id order; the sends whose claim no longer held. Learner rows are
        written before push-log rows, as a claim and a snooze write them: one lock order
        everywhere, so a record never deadlocks with a snooze of the same learner."""
        rows = sorted(sent + moved, key=lambda x: x["b_id"])
        held: set[int] = set()
        if rows:
            held = set(connection.execute(_PG_RECORD_NEXT, {
                "ids": [x["b_id"] for x in rows], "leases": [x["b_lease"] for x in rows],
                "nexts": [x["b_next"] for x in rows], "pushed_ats": [x.get("b_pushed") for x in rows],
            }).scalars())
        if blocked:
            connection.execute(_PG_RECORD_BLOCKED, {"ids": [x["b_id"] for x in blocked]})
        return [x for x in sent if x["b_id"] not in held]

    def _record_lost_sends(self, connection: Connection, lost: list[dict]) -> None:
        """Pushes the platform accepted after the learner's row changed (a settings change or a
        snooze during the send): when they were pushed is recorded all the same, and a regular
        push moment now falling on the local day of that send (a new timezone) moves to the next day."""
        query = sa.select(LEARNER.c.id, LEARNER.c.next_push_at, LEARNER.c.timezone, LEARNER.c.push_time, LEARNER.c.last_pushed_at)
        query = query.where(LEARNER.c.id.in_([x["b_id"] for x in lost])).order_by(LEARNER.c.id)
        if self.postgres:
            query = query.with_for_update()
        current = {row.id: row for row in connection.execute(query)}
        for send in lost:
            row = current.get(send["b_id"])
            if row is None:  # forgotten meanwhile
                continue
            at = send["b_at"]
            values: dict = {"last_pushed_at": max(at, row.last_pushed_at) if row.last_pushed_at else at}
            moment = row.next_push_at
            if moment is not None:
                sent_day, day = local_date(at, row.timezone), local_date(moment, row.timezone)
                if day <= sent_day and moment == local_push_moment(day, row.push_time, row.timezone):
                    values["next_push_at"] = local_push_moment(sent_day + timedelta(days=1), row.push_time, row.timezone)
            same = LEARNER.c.next_push_at.is_(None) if moment is None else LEARNER.c.next_push_at == moment
            connection.execute(sa.update(LEARNER).where(LEARNER.c.id == row.id, same).values(**values))

    def _stop_failing(self, connection: Connection, abandoned: list[dict]) -> None:
        """Stop the pushes of learners whose push was given up on ``STOP_AFTER_DAYS`` local
        days running (this one included): paused, with the reason kept to tell them."""
        rows = connection.execute(
            sa.select(PUSH_LOG.c.learner_id, PUSH_LOG.c.local_date, PUSH_LOG.c.status)
            .where(PUSH_LOG.c.learner_id.in_([x["b_id"] for x in abandoned]))
        ).all()
        history: dict[int, dict[date, str]] = {}
        for row in rows:
            history.setdefault(row.learner_id, {})[row.local_date] = row.status
        for day in abandoned:
            days = history.get(day["b_id"], {})
            days[day["b_day"]] = PushStatus.ABANDONED.value  # written right after this
            recent = [days[d] for d in sorted(days, reverse=True) if d <= day["b_day"]][:STOP_AFTER_DAYS]
            if len(recent) == STOP_AFTER_DAYS and all(status == PushStatus.ABANDONED.value for status in recent):
                connection.execute(
                    sa.update(LEARNER).where(LEARNER.c.id == day["b_id"])
                    .values(paused=True, next_push_at=None, push_due_at=None, push_stopped=day["b_kind"][:64])
                )
                log.warning("pushes to learner %s failed on %s days running (%s): stopped until they resume",
                            day["b_id"], STOP_AFTER_DAYS, day["b_kind"])

    def release(self, claims: list[Claim]) -> None:
        """Give back claims never sent (the sweep is stopping): due again at once, nothing counted."""
        if not claims:
            return
        with self.db.connect() as connection, connection.begin():
            for claim in claims:
                connection.execute(
                    sa.update(LEARNER)
                    .where(LEARNER.c.id == claim.learner.id, LEARNER.c.next_push_at == claim.lease)
                    .values(next_push_at=claim.due_at, push_due_at=None)
                )
                connection.execute(
                    sa.update(PUSH_LOG)
                    .where(
                        PUSH_LOG.c.learner_id == claim.learner.id,
                        PUSH_LOG.c.local_date == claim.day,
                        PUSH_LOG.c.status == PushStatus.CLAIMED.value,
                        PUSH_LOG.c.claimed_at == claim.claimed_at,
                    )
                    .values(status=PushStatus.FAILED.value, attempts=PUSH_LOG.c.attempts - 1)
                )

    def prune(self, now: datetime) -> int:
        """Delete a bounded batch of push-log rows older than ``PUSH_LOG_DAYS``."""
        cutoff = (now - timedelta(days=PUSH_LOG_DAYS)).date()
        old = sa.select(PUSH_LOG.c.id).where(PUSH_LOG.c.local_date < cutoff).limit(PRUNE_BATCH)
        if self.postgres:
            old = old.with_for_update(skip_locked=True)
        with self.db.connect() as connection, connection.begin():
            return connection.execute(sa.delete(PUSH_LOG).where(PUSH_LOG.c.id.in_(old))).rowcount

    # ----- the sweep --------------------------------------------------------------------

    async def sweep(self) -> SweepReport:
        """One pass: each platform's due learners, within that platform's send budget."""
        report = SweepReport()
        started = _time.monotonic()
        try:
            report.pruned = await asyncio.to_thread(self.prune, self.clock.now())
        except Exception:
            log.exception("pruning the push log failed")
        # Platforms run side by side: a Telegram learner never waits behind Discord's pace.
        results = await asyncio.gather(
            *(self._sweep_platform(platform, started, report) for platform in self.transports), return_exceptions=True
        )
        for platform, result in zip(self.transports, results, strict=True):
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, BaseException):
                log.error("push sweep for %s failed", platform, exc_info=result)
        report.log_failures()
        DUE_LEARNERS.set(report.due)
        return report

    async def _sweep_platform(self, platform: str, started: float, report: SweepReport) -> None:
        rate = self.rates[platform]
        page_size = max(1, min(self.batch_size, int(rate * PAGE_SECONDS)))
        claimed = 0
        while _time.monotonic() - started < self.sweep_seconds and claimed < self.max_per_sweep[platform]:
            page = await asyncio.to_thread(
                self.claim_page, platform, self.clock.now(), min(page_size, self.max_per_sweep[platform] - claimed)
            )
            if not page.rows:
                break
            claimed += page.rows
            report.due += page.rows - page.cleared
            report.cleared += page.cleared
            report.nothing_to_ask += page.idle
            report.contended += page.contended
            if not page.claims:
                continue
            prepared = await self._prepare(page.claims)
            first_slot = await asyncio.to_thread(self.pace.reserve, platform, len(page.claims))
            # Each push starts at its own slot and they overlap, so a slow send or record does
            # not lower the rate; the page ends when its last push is recorded.
            pushes = [
                asyncio.create_task(self._push_one(claim, first_slot + i / rate, report, prepared.get(claim.learner.id)))
                for i, claim in enumerate(page.claims)
            ]
            try:
                await asyncio.gather(*pushes)
            except BaseException:
                for push in pushes:
                    push.cancel()
                await asyncio.gather(*pushes, return_exceptions=True)
                raise

    async def _prepare(self, claims: list[Claim]) -> dict[int, list[Reply]]:
        """The page's push content, chosen and stored in one transaction; a learner missing
        from it (busy at this moment, or the batch failed) is asked alone when their turn comes."""
        try:
            return await self.engine.push_replies_many([claim.learner.id for claim in claims])  # type: ignore[misc]
        except Exception:
            log.exception("choosing a page of pushes failed; each learner is asked alone")
            return {}

    async def _record_sent(self, claim: Claim, status: PushStatus, at: datetime, kind: str | None = None) -> None:
        """Record a push the platform answered; a failing database is retried for well under
        the lease, since an unrecorded send is pushed again once the lease runs out."""
        for delay in (*RECORD_RETRY_SECONDS, None):
            try:
                await self._records.submit((claim, status, at, kind))
                return
            except Exception:
                if delay is None:
                    raise
                log.warning("recording the push to learner %s failed; retrying in %s s", claim.learner.id, delay, exc_info=True)
                await asyncio.sleep(delay)

    async def _push_one(self, claim: Claim, slot: float, report: SweepReport, prepared: list[Reply] | None = None) -> None:
        learner = claim.learner
        sending = False
        kind: str | None = None
        try:
            replies = prepared
            if replies is None:
                # Built alone (the page's batch left this learner out) shortly before the slot,
                # and only for a learner who still holds the claim.
                wait = math.floor((slot - PREPARE_AHEAD) / CHECK_GRID) * CHECK_GRID - self.pace.wall()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not await self._checks.submit(claim):
                    report.not_claimed += 1
                    return
                replies = await self.engine.push_replies(learner.id)  # type: ignore[arg-type]
            if not replies:
                report.nothing_to_ask += 1
                await self._records.submit((claim, PushStatus.SKIPPED, self.clock.now()))
                return
            wait = slot - self.pace.wall()
            if wait < -1 / self.rates[learner.platform] and self.rates[learner.platform] < 1000:
                # Woken after the slot had passed (a busy machine): sending now could double up
                # with another replica's current slot, so take a fresh one.
                slot = await asyncio.to_thread(self.pace.reserve, learner.platform, 1)
                wait = slot - self.pace.wall()
            if wait > 0:
                await asyncio.sleep(wait)
            # Checked right before the send: a snooze, a pause, a settings change or /forget
            # committed before this read stops the push (the read and the send are a few ms apart).
            if not await self._checks.submit(claim):
                report.not_claimed += 1
                return
            sending = True
            try:
                outcome = await self.transports[learner.platform].push(learner, replies)
            except Exception as error:  # an adapter bug must not stop the sweep for everyone else
                kind = f"the adapter raised {type(error).__name__}"
                report.note_failure(kind, learner.id, error)
                log.debug("push to learner %s: the adapter raised", learner.id, exc_info=True)
                outcome = PushOutcome.FAILED
            else:
                if outcome is PushOutcome.FAILED:
                    kind = "the platform refused it or could not be reached"
                    report.note_failure(kind, learner.id, None)
            sent_at = self.clock.now()
            # Recorded at once: a crash from here to the commit is the only way to a second push.
            await self._record_sent(claim, PushStatus(outcome.value), sent_at, kind)
        except asyncio.CancelledError:
            if not sending:  # stopped before this push went out: hand it back, not held for the lease
                self.release([claim])
            raise
        except Exception:  # one learner's bookkeeping must not stop the sweep either
            log.exception("push to learner %s: bookkeeping failed; retried after the claim's lease", learner.id)
            report.errors += 1
            return
        PUSHES.labels(learner.platform, outcome.value).inc()
        if outcome is PushOutcome.SENT:
            report.sent += 1
            lag = (sent_at - claim.due_at).total_seconds()
            report.lag_seconds.append(lag)
            PUSH_LAG.observe(max(lag, 0.0))
        elif outcome is PushOutcome.BLOCKED:
            report.blocked += 1
            log.info("learner %s blocked the bot; deactivated", learner.id)
        else:
            report.failed += 1


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
