"""The plot cache: content addressing, crash safety, and two processes warming at once."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from sims import cache, registry
from sims.common import png_size

SIM = "pg_baseline"  # the fastest real simulation


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV_VAR, str(tmp_path))
    return tmp_path


@pytest.fixture
def fast_compute(monkeypatch):
    """Replace the simulation itself by a stub; the cache around it stays real."""
    calls = []

    def stub(sim_id, config=None):
        calls.append(sim_id)
        return cache.Computed(
            metrics={"calls": float(len(calls))}, png=b"\x89PNG stub", seconds=0.001
        )

    monkeypatch.setattr(cache, "compute", stub)
    return calls


def entry_files(directory: Path, sim: str = SIM) -> list[str]:
    return sorted(
        path.name for path in (directory / sim).iterdir() if not path.name.endswith(".lock")
    )


def test_compute_then_hit(cache_dir):
    assert cache.lookup(SIM) is None
    first = cache.get_or_compute(SIM)
    assert not first.cached
    assert first.png_path.parent == cache_dir / SIM
    assert png_size(first.png())[0] > 900
    second = cache.get_or_compute(SIM)
    assert second.cached
    assert second.metrics == first.metrics and second.png_path == first.png_path
    assert cache.lookup(SIM) == second
    record = json.loads(first.png_path.with_suffix(".json").read_text())
    assert record["png_bytes"] == first.png_path.stat().st_size
    config = dataclasses.asdict(registry.get(SIM).Config())
    assert record["config"] == json.loads(json.dumps(config))  # tuples stored as lists


def test_key_depends_on_config_source_and_torch(monkeypatch):
    config = registry.get(SIM).Config()
    key = cache.entry_key(SIM, config)
    assert cache.entry_key(SIM, registry.get(SIM).Config()) == key
    assert cache.entry_key(SIM, dataclasses.replace(config, seed=config.seed + 1)) != key
    monkeypatch.setattr(cache, "source_digest", lambda sim_id: "edited")
    assert cache.entry_key(SIM, config) != key
    monkeypatch.undo()
    monkeypatch.setattr(cache, "torch_version", lambda: "0.0.0")
    assert cache.entry_key(SIM, config) != key


def test_source_files_follow_sims_imports():
    names = [path.name for path in cache.source_files("ppo_rlhf_bugs")]
    assert names == ["common.py", "ppo_rlhf_bugs.py", "reward_overoptimization.py"]


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV_VAR, str(tmp_path / "from_env"))
    assert cache.resolve_dir() == tmp_path / "from_env"
    assert cache.resolve_dir(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.delenv(cache.ENV_VAR)
    assert cache.resolve_dir().parts[-2:] == ("trapbot", "sims")


def test_half_written_entries_are_misses(cache_dir, fast_compute):
    entry = cache.get_or_compute(SIM)
    json_path = entry.png_path.with_suffix(".json")
    entry.png_path.write_bytes(entry.png()[:4])  # a truncated PNG under a committed JSON
    assert cache.lookup(SIM) is None
    assert not cache.get_or_compute(SIM).cached  # recomputed and repaired
    assert cache.lookup(SIM) is not None
    json_path.unlink()  # a PNG without its commit marker
    assert cache.lookup(SIM) is None


def test_failed_write_leaves_no_entry_and_no_temp_files(cache_dir, fast_compute, monkeypatch):
    real_replace = os.replace

    def crash_on_json(source, target):
        if str(target).endswith(".json"):
            raise OSError("disk full")
        real_replace(source, target)

    monkeypatch.setattr(cache.os, "replace", crash_on_json)
    with pytest.raises(OSError, match="disk full"):
        cache.get_or_compute(SIM)
    monkeypatch.setattr(cache.os, "replace", real_replace)
    assert cache.lookup(SIM) is None
    assert not [name for name in entry_files(cache_dir) if name.endswith(".tmp")]


def test_no_cache_recomputes_and_overwrites(cache_dir, fast_compute):
    first = cache.get_or_compute(SIM)
    again = cache.get_or_compute(SIM, use_cache=False)
    assert not again.cached and again.png_path == first.png_path
    assert fast_compute == [SIM, SIM]
    assert cache.lookup(SIM).metrics == again.metrics != first.metrics  # overwritten


def test_missing_and_warm(cache_dir, fast_compute, monkeypatch):
    monkeypatch.setattr(registry, "sim_ids", lambda: [SIM])
    assert cache.missing() == [SIM]
    seen = []
    entries = cache.warm(on_done=seen.append)
    assert [entry.cached for entry in entries] == [False] and seen == entries
    assert cache.missing() == []
    assert [entry.cached for entry in cache.warm()] == [True]


def test_compute_rejects_bad_outputs(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class Config:
        seed: int = 0

    def fake(metrics, png):
        return SimpleNamespace(
            Config=Config, run=lambda c: SimpleNamespace(metrics=metrics), plot=lambda r: png
        )

    monkeypatch.setattr(registry, "get", lambda sim_id: fake({"a": 1.0}, b"GIF89a"))
    with pytest.raises(ValueError, match="PNG"):
        cache.compute("fake")
    monkeypatch.setattr(registry, "get", lambda sim_id: fake({"a": "high"}, b"\x89PNG...."))
    with pytest.raises(ValueError, match="number"):
        cache.compute("fake")


WARM_ONE = textwrap.dedent("""
    import json, sys
    from sims import cache
    entry = cache.get_or_compute(sys.argv[1])
    print(json.dumps({"cached": entry.cached, "png": str(entry.png_path)}))
""")


def wait_for_blocked_lockers(inode: int, count: int, timeout: float = 180.0) -> int:
    """Poll /proc/locks until ``count`` processes wait on the flock of this inode."""
    deadline = time.monotonic() + timeout
    blocked = 0
    while time.monotonic() < deadline:
        lines = Path("/proc/locks").read_text().splitlines()
        blocked = sum(
            1
            for line in lines
            if "->" in line and "FLOCK" in line and line.split()[-3].endswith(f":{inode}")
        )
        if blocked >= count:
            break
        time.sleep(0.05)
    return blocked


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux /proc/locks")
def test_two_processes_warming_the_same_sim(cache_dir):
    """The test holds the entry's lock while two real processes start, so both must queue on
    it; then exactly one computes and the other reads the committed entry. (The numpy-only
    rft_false_positives keeps the children from importing torch.)"""
    import fcntl

    sim = "rft_false_positives"
    key = cache.entry_key(sim, registry.get(sim).Config())
    (cache_dir / sim).mkdir()
    env = {**os.environ, cache.ENV_VAR: str(cache_dir)}
    with open(cache_dir / sim / f"{key}.lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", WARM_ONE, sim],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        waiting = wait_for_blocked_lockers(os.fstat(lock.fileno()).st_ino, count=2)
        assert waiting == 2, "both processes should be queued on the entry's lock"
        assert not (cache_dir / sim / f"{key}.json").exists()  # nobody computed past the lock
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err
        results.append(json.loads(out))
    assert sorted(result["cached"] for result in results) == [False, True]
    assert {result["png"] for result in results} == {str(cache_dir / sim / f"{key}.png")}
    assert entry_files(cache_dir, sim) == [f"{key}.json", f"{key}.png"]
    entry = cache.lookup(sim)
    assert entry is not None and png_size(entry.png())[0] > 900


def test_parallel_warm_uses_worker_processes(cache_dir, monkeypatch):
    """jobs=2 computes the missing sims in two worker processes; cached ones are not resubmitted."""
    two = [SIM, "rft_false_positives"]
    monkeypatch.setattr(registry, "sim_ids", lambda: two)
    cache.get_or_compute(SIM)
    seen = []
    entries = cache.warm(on_done=seen.append, jobs=2)
    assert sorted(entry.id for entry in entries) == sorted(two) and seen == entries
    assert {entry.id: entry.cached for entry in entries} == {SIM: True, two[1]: False}
    assert cache.missing() == []
