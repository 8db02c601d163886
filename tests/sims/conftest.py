"""Fixtures for the sims tests: a private cache directory and real fast sims.

Nothing here replaces trapbot code. The cache, service and CLI tests run real simulations; the
two chosen below are the cheapest of the registry (trajectory_stitching is numpy-only and runs
in about 0.1 s of CPU before plotting; the torch sims take 0.3 to 1.5 s of CPU warm).

Tests marked ``slow`` prove a claim on all twenty seeds 0-19 of a sim's default config; the root
conftest skips them unless RUN_SLOW=1 (``make test-slow``); the fast tests run two seeds.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sims import cache, registry

#: Tests that check every sim of the registry at its default config (a whole set): each runs
#: fast on the fastest sim only and is marked ``slow`` for the others (``make test-slow``).
#: Every sim's own file keeps a fast plot check on a small config (test_plot_is_phone_width).
WHOLE_REGISTRY_TESTS = ("test_plot_reads_on_a_phone",)


@pytest.hookimpl(tryfirst=True)  # before -m selects and the root conftest skips
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` the whole-registry tests' items for every sim but the fastest."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if (
            getattr(item, "originalname", None) in WHOLE_REGISTRY_TESTS
            and callspec is not None
            and callspec.params.get("sim_id") != FAST_SIMS[0]
        ):
            item.add_marker(pytest.mark.slow)


#: The two fastest sims. trajectory_stitching is numpy-only, so a fresh process computing it
#: never imports torch; pg_baseline is the fastest of those that do.
FAST_SIMS = ("trajectory_stitching", "pg_baseline")


@pytest.fixture(scope="session")
def fast_sims() -> tuple[str, str]:
    """Two real sims that compute in about half a second each."""
    for sim_id in FAST_SIMS:
        registry.get(sim_id)  # fail loudly here if one was renamed
    return FAST_SIMS


@pytest.fixture(scope="session")
def fast_sim(fast_sims) -> str:
    """The fastest real sim."""
    return fast_sims[0]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory of this test's own, also set as ``$TRAPBOT_SIM_CACHE_DIR``."""
    directory = tmp_path / "sim-cache"
    monkeypatch.setenv(cache.ENV_VAR, str(directory))
    return directory


@pytest.fixture
def entry_files(cache_dir: Path) -> Callable[..., list[str]]:
    """Names of the files one sim has in a cache directory (lock files left out), sorted."""

    def list_files(sim_id: str, directory: Path | None = None) -> list[str]:
        folder = (cache_dir if directory is None else directory) / sim_id
        if not folder.exists():
            return []
        return sorted(path.name for path in folder.iterdir() if not path.name.endswith(".lock"))

    return list_files


@pytest.fixture(scope="session")
def fast_entry(tmp_path_factory: pytest.TempPathFactory, fast_sim: str) -> cache.CachedSim:
    """The fast sim's real entry, computed once per session in a cache of its own."""
    directory = tmp_path_factory.mktemp("fast-entry")
    return cache.get_or_compute(fast_sim, cache_dir=directory)


@pytest.fixture
def seed_cache(cache_dir: Path, fast_entry: cache.CachedSim) -> Callable[..., list[str]]:
    """Commit an entry for every registered sim except the ones named, without computing them.

    Warming the whole registry for real would take half a minute, so the tests start from a
    cache that already holds everything else. Each seeded entry is a byte copy of the fast
    sim's real PNG and JSON, placed under the other sim's key in the documented layout
    ``<cache dir>/<sim id>/<key>.png|.json``; the fast sim's own copy is its genuine entry.
    Returns the ids seeded.
    """

    def seed(*missing: str) -> list[str]:
        source_png = fast_entry.png_path
        source_json = source_png.with_suffix(".json")
        seeded = [sim_id for sim_id in registry.sim_ids() if sim_id not in missing]
        for sim_id in seeded:
            key = cache.entry_key(sim_id, registry.get(sim_id).Config())
            folder = cache_dir / sim_id
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source_png, folder / f"{key}.png")
            shutil.copyfile(source_json, folder / f"{key}.json")
        return seeded

    return seed
