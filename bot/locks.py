"""Per-learner mutual exclusion: in this process, and across processes on PostgreSQL.

``LearnerLocks()[learner_id]`` is an async context manager. It always takes an
``asyncio.Lock`` kept in a ``WeakValueDictionary``, so a learner's lock exists only while
someone holds or awaits it (a million learners leave no million locks behind). On
PostgreSQL it then takes a session advisory lock keyed by the learner id on a connection
of its own, so two replicas (a webhook behind a load balancer, a Telegram and a Discord
process) never grade or schedule one learner at once; a crashed holder's lock goes with
its connection. SQLite deployments are one process, where the in-process lock is enough.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa

#: First key of the two-key advisory lock: trapbot's learners (``'tl'``), apart from other users of the database.
ADVISORY_NAMESPACE = 0x746C
_TRY = sa.text("SELECT pg_try_advisory_lock(:ns, :id)")
_UNLOCK = sa.text("SELECT pg_advisory_unlock(:ns, :id)")
#: The same lock held by a transaction: its commit or rollback gives it back.
_TRY_IN_TRANSACTION = sa.text("SELECT pg_try_advisory_xact_lock(:ns, :id)")
#: Tried for many learners in one statement: the ids whose lock this transaction now holds.
_TRY_MANY_IN_TRANSACTION = sa.text(
    "SELECT id FROM unnest(CAST(:ids AS bigint[])) AS id WHERE pg_try_advisory_xact_lock(:ns, CAST(id AS integer)) ORDER BY id"
)
T = TypeVar("T")


class LearnerLocks:
    def __init__(self, db: sa.Engine | None = None, *, max_connections: int = 50):
        self._local: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()
        self._db = None
        self._work_db = None
        if db is not None and db.dialect.name == "postgresql":
            self._work_db = db
            # A pool of its own: a lock holds its connection for as long as a grading takes.
            self._db = sa.create_engine(db.url, pool_size=2, max_overflow=max_connections - 2, pool_pre_ping=True)

    def __getitem__(self, learner_id: int) -> _Held:
        return _Held(self, learner_id)

    def __len__(self) -> int:
        return len(self._local)

    def pop(self, learner_id: int, default: object = None) -> object:
        """Kept for callers that drop a learner's lock; the table forgets unused locks by itself."""
        return default

    def _lock(self, learner_id: int) -> asyncio.Lock:
        lock = self._local.get(learner_id)
        if lock is None:
            lock = asyncio.Lock()
            self._local[learner_id] = lock
        return lock

    async def run(self, learner_id: int, work: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``work(bind, *args, **kwargs)`` in a worker thread, holding the learner's lock (the
        same lock as ``self[learner_id]``). On PostgreSQL ``bind`` is a connection whose
        transaction holds the learner's advisory lock: a session bound to it joins that
        transaction, which commits when ``work`` returns (rolls back if it raises) and so gives
        the lock back, one transaction and one thread hop in all. A lock held elsewhere is tried
        again with back-off, as ``self[learner_id]`` does. Elsewhere ``bind`` is None."""
        lock = self._lock(learner_id)  # a strong reference while this call lives
        async with lock:
            if self._work_db is None:
                return await asyncio.to_thread(work, None, *args, **kwargs)
            delay = 0.005
            while True:
                taken, result = await asyncio.to_thread(self._try_run, learner_id, work, args, kwargs)
                if taken:
                    return result  # type: ignore[return-value]
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.2)

    async def run_free(self, learner_ids: list[int], work: Callable[..., T], /) -> T | None:
        """``work(bind, held)`` in one worker-thread call for those of ``learner_ids`` whose lock
        is free now (``held``, in id order), holding their locks as ``run`` does; its result,
        None when none was free. A learner whose lock is taken, here or on another replica, is
        left out and never waited for: the caller handles it alone."""
        locks = {i: self._lock(i) for i in sorted(set(learner_ids))}  # strong references while this call lives
        free = [i for i, lock in locks.items() if not lock.locked()]
        for i in free:  # none of them is held, so no acquire waits
            await locks[i].acquire()
        try:
            if not free:
                return None
            if self._work_db is None:
                return await asyncio.to_thread(work, None, free)
            return await asyncio.to_thread(self._try_run_free, free, work)
        finally:
            for i in free:
                locks[i].release()

    def _try_run_free(self, learner_ids: list[int], work: Callable[..., T]) -> T | None:
        assert self._work_db is not None
        with self._work_db.connect() as connection, connection.begin():
            held = list(connection.execute(_TRY_MANY_IN_TRANSACTION, {"ns": ADVISORY_NAMESPACE, "ids": learner_ids}).scalars())
            return work(connection, held) if held else None

    def _try_run(self, learner_id: int, work: Callable[..., T], args: tuple, kwargs: dict) -> tuple[bool, T | None]:
        assert self._work_db is not None
        with self._work_db.connect() as connection, connection.begin():
            if not connection.execute(_TRY_IN_TRANSACTION, {"ns": ADVISORY_NAMESPACE, "id": learner_id}).scalar():
                return False, None
            return True, work(connection, *args, **kwargs)

    def dispose(self) -> None:
        if self._db is not None:
            self._db.dispose()


class _Held:
    def __init__(self, table: LearnerLocks, learner_id: int):
        self.table = table
        self.learner_id = learner_id
        self.lock = table._lock(learner_id)  # a strong reference while this holder lives
        self.connection: sa.Connection | None = None

    async def __aenter__(self) -> None:
        await self.lock.acquire()
        if self.table._db is None:
            return
        try:
            self.connection = await asyncio.to_thread(self.table._db.connect)
            delay = 0.005
            # Try, never block: a blocked wait would hold a worker thread for a whole grading.
            while not await asyncio.to_thread(self._try):
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.2)
        except BaseException:
            if self.connection is not None:
                self.connection.close()
                self.connection = None
            self.lock.release()
            raise

    def _try(self) -> bool:
        assert self.connection is not None
        taken = self.connection.execute(_TRY, {"ns": ADVISORY_NAMESPACE, "id": self.learner_id}).scalar()
        self.connection.commit()
        return bool(taken)

    def _unlock(self) -> None:
        assert self.connection is not None
        try:
            self.connection.execute(_UNLOCK, {"ns": ADVISORY_NAMESPACE, "id": self.learner_id})
            self.connection.commit()
        except BaseException:
            self.connection.invalidate()  # closing the session releases its advisory locks
            raise
        finally:
            self.connection.close()

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self.connection is not None:
                await asyncio.to_thread(self._unlock)
        finally:
            self.connection = None
            self.lock.release()
