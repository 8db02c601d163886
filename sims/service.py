"""Serve simulation plots to the bot without ever computing on its event loop.

``plot_for`` answers from the cache at once. On a miss it starts the computation in a worker
and waits at most ``wait_seconds`` (``None``: until it is done); if the plot is not ready by
then it returns None and the computation keeps going, so a later call finds it: the bot sends
the plot after its verdict once it is. ``prefetch`` starts a computation without waiting (the
bot calls it when it shows a trap, so the plot computes while the learner types). One sim is computed once: concurrent callers share one in-flight task per (sim,
config) here, and the cache's file lock does the same across processes (two bots, or
``trapbot sims warm`` running beside the bot).

Why a worker process and not a thread: torch releases the GIL inside its kernels, but the
simulations are also Python loops over small tensors (optimiser steps, matplotlib drawing),
which hold the GIL and would stall the chat for seconds. A single worker process keeps the
event loop responsive and isolates a crash of the numeric stack. The process is started with
the "forkserver" context (or "spawn" where it does not exist), never "fork": forking a process
that runs an event loop and torch's thread pools can deadlock the child. The worker imports
torch and matplotlib once when it starts and then serves every computation. ``executor="thread"``
is available for tests and for platforms where processes are unwanted.
"""

from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import Executor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Literal

from sims import cache, registry
from sims.cache import CachedSim

log = logging.getLogger(__name__)


def _compute_entry(sim_id: str, config: Any, cache_dir: str) -> CachedSim:
    """Worker side: compute the entry (or find it, if another process just committed it)."""
    return cache.get_or_compute(sim_id, config, cache_dir=cache_dir)


class SimService:
    """Cached simulation plots for an asyncio application."""

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        max_workers: int = 1,
        executor: Literal["process", "thread"] = "process",
    ):
        self.cache_dir = cache.resolve_dir(cache_dir)
        self.max_workers = max_workers
        self.executor_kind = executor
        self.computations_started = 0
        """How many computations this service submitted (tests check sharing with it)."""
        self._executor: Executor | None = None
        self._in_flight: dict[tuple[str, str], asyncio.Task[CachedSim]] = {}
        self._warming: asyncio.Task[list[str]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # where the computations run

    def _get_executor(self) -> Executor:
        if self._executor is None:
            if self.executor_kind == "thread":
                self._executor = ThreadPoolExecutor(self.max_workers, thread_name_prefix="sim")
            else:
                self._executor = cache.new_process_pool(self.max_workers)
        return self._executor

    def lookup(self, sim_id: str, config: Any = None) -> CachedSim | None:
        """The cached entry or None; reads one small JSON file, never computes."""
        return cache.lookup(sim_id, config, self.cache_dir)

    async def plot_for(
        self, sim_id: str, wait_seconds: float | None = 3.0, config: Any = None
    ) -> CachedSim | None:
        """The sim's plot from the cache, or computed within ``wait_seconds`` (None: however
        long it takes), else None.

        Unknown ids raise ``KeyError``. A failed computation is logged and gives None; the next
        call tries again.
        """
        self._loop = asyncio.get_running_loop()
        config = registry.get(sim_id).Config() if config is None else config
        hit = self.lookup(sim_id, config)
        if hit is not None:
            return hit
        task = self._ensure_task(sim_id, config)
        try:
            return await asyncio.wait_for(asyncio.shield(task), wait_seconds)
        except TimeoutError:
            return None
        except Exception:
            log.exception("simulation %s failed", sim_id)
            return None

    def prefetch(self, sim_id: str) -> bool:
        """Start computing ``sim_id``'s plot unless it is cached or under way; never waits.

        Safe from any thread: off the event loop (a push built in a worker thread) the start is
        handed to the loop the service last served on. False when nothing was started.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:
            if self._loop is None or self._loop.is_closed():
                return False
            self._loop.call_soon_threadsafe(self._prefetch_here, sim_id)
            return True
        self._loop = loop
        return self._prefetch_here(sim_id)

    def _prefetch_here(self, sim_id: str) -> bool:
        try:
            config = registry.get(sim_id).Config()
        except KeyError:
            log.warning("no simulation is registered as %s", sim_id)
            return False
        if self.lookup(sim_id, config) is not None:
            return False
        self._ensure_task(sim_id, config)
        return True

    def _ensure_task(self, sim_id: str, config: Any) -> asyncio.Task[CachedSim]:
        # Check-and-insert has no await in between, so on the event loop it is atomic: this dict
        # is the in-process lock that makes concurrent callers share one computation.
        slot = (sim_id, cache.config_json(config))
        task = self._in_flight.get(slot)
        if task is None:
            task = asyncio.create_task(self._compute(sim_id, config), name=f"sim:{sim_id}")
            self._in_flight[slot] = task
            task.add_done_callback(lambda done: self._finished(slot, done))
        return task

    def _finished(self, slot: tuple[str, str], task: asyncio.Task[CachedSim]) -> None:
        self._in_flight.pop(slot, None)
        if not task.cancelled() and task.exception() is not None:
            # Retrieve it here so a computation nobody waited for still gets logged.
            log.error("simulation %s failed: %r", slot[0], task.exception())

    async def _compute(self, sim_id: str, config: Any) -> CachedSim:
        self.computations_started += 1
        loop = asyncio.get_running_loop()
        call = (_compute_entry, sim_id, config, str(self.cache_dir))
        try:
            entry = await loop.run_in_executor(self._get_executor(), *call)
        except BrokenProcessPool:
            # The worker died (killed, out of memory): start a fresh pool for the next call.
            log.error("simulation worker died while computing %s; restarting it", sim_id)
            broken, self._executor = self._executor, None
            if broken is not None:
                broken.shutdown(wait=False, cancel_futures=True)
            raise
        return entry

    async def warm_all(self) -> list[str]:
        """Compute every sim missing from the cache, one at a time; returns the ids computed.

        One at a time, so a learner's request submitted meanwhile waits for at most one sim.
        """
        self._loop = asyncio.get_running_loop()
        computed = []
        for sim_id in registry.sim_ids():
            config = registry.get(sim_id).Config()
            if self.lookup(sim_id, config) is not None:
                continue
            try:
                await asyncio.shield(self._ensure_task(sim_id, config))
            except Exception as error:  # noqa: BLE001 (one failing sim must not stop the rest)
                log.debug("warming %s failed (logged above): %r", sim_id, error)
                continue
            computed.append(sim_id)
        return computed

    def start_warming(self) -> asyncio.Task[list[str]]:
        """Run ``warm_all`` in the background (call at start-up); ``close`` cancels it."""
        if self._warming is None or self._warming.done():
            self._warming = asyncio.create_task(self.warm_all(), name="sims:warm")
        return self._warming

    async def close(self, *, terminate: bool = False) -> None:
        """Stop warming, drop queued work, wait for the running computation and stop workers.

        ``terminate``: end the worker processes at once instead of waiting for a computation
        (a terminal chat that is leaving); the cache's atomic writes make that safe.
        """
        if self._warming is not None and not self._warming.done():
            self._warming.cancel()
            await asyncio.gather(self._warming, return_exceptions=True)
        executor, self._executor = self._executor, None
        if executor is not None and terminate:
            for process in list((getattr(executor, "_processes", None) or {}).values()):
                process.terminate()
            executor.shutdown(wait=False, cancel_futures=True)
            for task in list(self._in_flight.values()):
                task.cancel()
        elif executor is not None:
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
        if self._in_flight:
            await asyncio.gather(*self._in_flight.values(), return_exceptions=True)
