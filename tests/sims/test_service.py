"""SimService: cache first, compute off the event loop once, give up waiting without cancelling.

The simulations are real (the fast ones from conftest.py); a computation is "shared" or "not
repeated" when ``computations_started`` and the entries on disk say so.
"""

import asyncio
import dataclasses
import json
import logging
import subprocess
import sys
import textwrap

import pytest

from sims import cache, registry
from sims.common import PLOT_WIDTH_PX, png_size
from sims.service import SimService


@pytest.fixture
async def service(cache_dir):
    instance = SimService(cache_dir=cache_dir, executor="thread")
    yield instance
    await instance.close()


async def test_miss_returns_none_then_the_computation_finishes(service, fast_sim, entry_files):
    # 10 ms is far less than the sim's half second of plotting: not ready, don't block the bot.
    assert await service.plot_for(fast_sim, wait_seconds=0.01) is None
    assert service.computations_started == 1
    later = await service.plot_for(fast_sim, wait_seconds=120)  # the same, still running
    assert later is not None and not later.cached
    assert service.computations_started == 1
    assert len(entry_files(fast_sim)) == 2
    hit = await service.plot_for(fast_sim, wait_seconds=0)
    assert hit is not None and hit.cached and hit.png_path == later.png_path
    assert hit.seconds == later.seconds
    assert service.computations_started == 1


async def test_concurrent_requests_share_one_computation(service, fast_sim, entry_files):
    results = await asyncio.gather(
        *(service.plot_for(fast_sim, wait_seconds=120) for _ in range(3))
    )
    assert service.computations_started == 1
    assert len({result.png_path for result in results}) == 1
    assert not any(result.cached for result in results)  # all three got the one computation
    assert len(entry_files(fast_sim)) == 2


async def test_configs_are_separate_entries(service, fast_sim, entry_files):
    default_config = registry.get(fast_sim).Config()
    config = dataclasses.replace(default_config, seed=default_config.seed + 7)
    default, seeded = await asyncio.gather(
        service.plot_for(fast_sim, 120), service.plot_for(fast_sim, 120, config=config)
    )
    assert default.png_path != seeded.png_path
    assert service.computations_started == 2
    assert len(entry_files(fast_sim)) == 4


async def test_unknown_sim_raises(service):
    with pytest.raises(KeyError):
        await service.plot_for("no_such_sim")


async def test_failure_is_logged_and_retried(service, cache_dir, fast_sim, caplog):
    """A real, transient failure: a directory sits where the entry's lock file must be opened."""
    key = cache.entry_key(fast_sim, registry.get(fast_sim).Config())
    blocker = cache_dir / fast_sim / f"{key}.lock"
    blocker.mkdir(parents=True)
    with caplog.at_level(logging.ERROR):
        assert await service.plot_for(fast_sim, wait_seconds=120) is None
    assert f"simulation {fast_sim} failed" in caplog.text
    assert "IsADirectoryError" in caplog.text
    blocker.rmdir()
    entry = await service.plot_for(fast_sim, wait_seconds=120)
    assert entry is not None and not entry.cached
    assert service.computations_started == 2


async def test_warm_all_computes_only_missing(service, fast_sim, seed_cache):
    seed_cache(fast_sim)
    assert await service.warm_all() == [fast_sim]
    assert await service.warm_all() == []
    assert service.lookup(fast_sim) is not None
    assert service.computations_started == 1


async def test_close_cancels_background_warming(cache_dir, fast_sims, seed_cache):
    """close() stops warming mid-way: the running sim is finished, the queued one dropped."""
    first, second = sorted(fast_sims, key=registry.sim_ids().index)
    seed_cache(*fast_sims)
    service = SimService(cache_dir=cache_dir, executor="thread")
    task = service.start_warming()
    assert service.start_warming() is task  # one warming at a time

    async def first_submitted():
        while service.computations_started == 0:
            await asyncio.sleep(0)

    await asyncio.wait_for(first_submitted(), 60)
    await service.close()
    assert task.cancelled()
    assert service.computations_started == 1
    assert service.lookup(first) is not None  # close waited for the running computation
    assert service.lookup(second) is None  # and never started the next one
    assert cache.missing() == [second]


RUN_IN_SERVICE = textwrap.dedent("""
    import asyncio, json, sys
    from sims.service import SimService

    async def main(sim_id, cache_dir):
        service = SimService(cache_dir=cache_dir)  # the default executor: a worker process
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        background = asyncio.create_task(ticker())
        try:
            entry = await service.plot_for(sim_id, wait_seconds=300)
        finally:
            background.cancel()
            await service.close()
        return {
            "cached": entry.cached,
            "png": str(entry.png_path),
            "ticks": ticks,
            "heavy_modules_here": [name for name in ("torch", "matplotlib") if name in sys.modules],
        }

    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
""")


def test_process_worker_computes_outside_this_process(cache_dir, fast_sim):
    """The default executor is a worker process: the event loop's process never imports the
    plotting stack (the sim drew its plot elsewhere), and the loop keeps running meanwhile."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_IN_SERVICE, fast_sim, str(cache_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["heavy_modules_here"] == []
    assert result["ticks"] > 0  # the loop ran while the worker computed
    assert result["cached"] is False
    entry = cache.lookup(fast_sim, cache_dir=cache_dir)
    assert entry is not None and str(entry.png_path) == result["png"]
    assert png_size(entry.png())[0] == PLOT_WIDTH_PX


async def test_prefetch_starts_the_computation_without_waiting(service, fast_sim, entry_files):
    # The bot calls it when it shows a trap: nothing is awaited, one computation starts.
    assert service.prefetch(fast_sim) is True
    assert service.computations_started == 0  # the task is scheduled, not yet run: no wait here
    assert service.prefetch(fast_sim) is True  # asked twice while in flight: still one task
    found = await service.plot_for(fast_sim, wait_seconds=None)  # None: until it is done
    assert found is not None and not found.cached
    assert service.computations_started == 1
    assert len(entry_files(fast_sim)) == 2
    assert service.prefetch(fast_sim) is False  # cached now: nothing to start


async def test_prefetch_from_a_worker_thread_runs_on_the_service_loop(service, fast_sims):
    fast_sim, other = fast_sims
    assert service.prefetch("no-such-sim") is False
    await service.plot_for(fast_sim, wait_seconds=0)  # the service learns its loop
    started = await asyncio.to_thread(service.prefetch, other)  # as a push built off the loop
    assert started is True
    await asyncio.sleep(0)  # the loop runs the handed-over start
    assert any(slot[0] == other for slot in service._in_flight)
    await service.close(terminate=True)  # leaves at once, whatever is still computing
    assert service._executor is None


async def test_a_thread_without_a_loop_and_no_loop_known_starts_nothing(cache_dir, fast_sim):
    fresh = SimService(cache_dir=cache_dir, executor="thread")
    assert await asyncio.to_thread(fresh.prefetch, fast_sim) is False
    await fresh.close()
