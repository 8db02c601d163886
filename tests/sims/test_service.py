"""SimService: cache first, compute off the event loop once, give up waiting without cancelling."""

import asyncio
import logging

import pytest

from sims import cache, registry
from sims.service import SimService

SIM = "pg_baseline"


@pytest.fixture
def fast_compute(monkeypatch):
    """Replace the simulation itself by a stub; cache and service around it stay real."""
    calls = []

    def stub(sim_id, config=None):
        calls.append(sim_id)
        return cache.Computed(
            metrics={"calls": float(len(calls))}, png=b"\x89PNG stub", seconds=0.001
        )

    monkeypatch.setattr(cache, "compute", stub)
    return calls


@pytest.fixture
async def service(tmp_path, fast_compute):
    instance = SimService(cache_dir=tmp_path, executor="thread")
    yield instance
    await instance.close()


async def test_miss_returns_none_then_the_computation_finishes(service):
    assert await service.plot_for(SIM, wait_seconds=0) is None  # not ready: don't block the bot
    later = await service.plot_for(SIM, wait_seconds=120)  # the same computation, still running
    assert later is not None and not later.cached
    assert service.computations_started == 1
    hit = await service.plot_for(SIM, wait_seconds=0)
    assert hit is not None and hit.cached and hit.png_path == later.png_path
    assert service.computations_started == 1


async def test_concurrent_requests_share_one_computation(service):
    results = await asyncio.gather(*(service.plot_for(SIM, wait_seconds=120) for _ in range(3)))
    assert service.computations_started == 1
    assert len({result.png_path for result in results}) == 1


async def test_configs_are_separate_entries(service):
    config = registry.get(SIM).Config(seed=7)
    default, seeded = await asyncio.gather(
        service.plot_for(SIM, 120), service.plot_for(SIM, 120, config=config)
    )
    assert default.png_path != seeded.png_path
    assert service.computations_started == 2


async def test_unknown_sim_raises(service):
    with pytest.raises(KeyError):
        await service.plot_for("no_such_sim")


async def test_failure_is_logged_and_retried(service, fast_compute, monkeypatch, caplog):
    stub = cache.compute

    def explode(sim_id, config=None):
        raise RuntimeError("boom")

    monkeypatch.setattr(cache, "compute", explode)
    with caplog.at_level(logging.ERROR):
        assert await service.plot_for(SIM, wait_seconds=120) is None
    assert "boom" in caplog.text
    monkeypatch.setattr(cache, "compute", stub)
    assert (await service.plot_for(SIM, wait_seconds=120)) is not None
    assert service.computations_started == 2


async def test_warm_all_computes_only_missing(service, monkeypatch):
    monkeypatch.setattr(registry, "sim_ids", lambda: [SIM])
    assert await service.warm_all() == [SIM]
    assert await service.warm_all() == []
    assert service.lookup(SIM) is not None


async def test_close_cancels_background_warming(tmp_path, fast_compute, monkeypatch):
    monkeypatch.setattr(registry, "sim_ids", lambda: [SIM] * 50)
    service = SimService(cache_dir=tmp_path, executor="thread")
    task = service.start_warming()
    assert service.start_warming() is task  # one warming at a time
    await service.close()
    assert task.done()


async def test_process_worker_computes_outside_this_process(tmp_path, monkeypatch):
    """The default executor is a worker process: the parent's (broken) copy of the sim is
    never called, and the event loop keeps running while the worker computes."""
    module = registry.get(SIM)

    def not_here(config):
        raise AssertionError("computed in the event-loop process")

    monkeypatch.setattr(module, "run", not_here)
    service = SimService(cache_dir=tmp_path)
    try:
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        background = asyncio.create_task(ticker())
        entry = await service.plot_for(SIM, wait_seconds=300)
        background.cancel()
        assert entry is not None and entry.png_path.exists() and not entry.cached
        assert ticks > 0  # the loop ran while the worker computed
        assert cache.lookup(SIM, cache_dir=tmp_path) is not None
    finally:
        await service.close()
