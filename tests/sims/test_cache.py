"""The plot cache: content addressing, crash safety, and two processes warming at once.

Every computation here is a real simulation (the fast ones from conftest.py); "computed once"
is shown by the ``cached`` flag, the files' inodes and the number of entries on disk.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sims import cache, registry
from sims.common import PLOT_WIDTH_PX, png_size

SIMS_PACKAGE = Path(cache.__file__).resolve().parent


def inode(path: Path) -> int:
    return path.stat().st_ino


def test_compute_then_hit(cache_dir, fast_sim, entry_files):
    assert cache.lookup(fast_sim) is None
    first = cache.get_or_compute(fast_sim)
    assert not first.cached
    assert first.png_path.parent == cache_dir / fast_sim
    assert png_size(first.png())[0] == PLOT_WIDTH_PX
    second = cache.get_or_compute(fast_sim)
    assert second.cached
    assert second.metrics == first.metrics and second.png_path == first.png_path
    assert second.seconds == first.seconds  # the stored compute time, not the read time
    assert cache.lookup(fast_sim) == second
    assert len(entry_files(fast_sim)) == 2  # one PNG and its JSON
    record = json.loads(first.png_path.with_suffix(".json").read_text())
    assert record["png_bytes"] == first.png_path.stat().st_size
    config = dataclasses.asdict(registry.get(fast_sim).Config())
    assert record["config"] == json.loads(json.dumps(config))  # tuples stored as lists


@pytest.fixture
def sims_copy(tmp_path):
    """A copy of the ``sims`` package: a fresh Python process can import it instead of ours."""
    root = tmp_path / "copy"
    shutil.copytree(SIMS_PACKAGE, root / "sims", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def run_python(script: str, *args: str, path: list[Path], cwd: Path) -> str:
    """Run a script in a fresh interpreter whose imports look in ``path`` first."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(entry) for entry in path)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


PRINT_KEY = textwrap.dedent("""
    import sys
    from sims import cache, registry
    assert cache.__file__.startswith(sys.argv[2]), cache.__file__
    print(cache.entry_key(sys.argv[1], registry.get(sys.argv[1]).Config()))
""")


def test_key_depends_on_config_source_and_torch(fast_sim, sims_copy, tmp_path):
    """Seed changes the key here; an edit to an imported file or another installed torch
    changes it in a fresh process that imports a copy of the package."""
    config = registry.get(fast_sim).Config()
    key = cache.entry_key(fast_sim, config)
    assert cache.entry_key(fast_sim, registry.get(fast_sim).Config()) == key
    assert cache.entry_key(fast_sim, dataclasses.replace(config, seed=config.seed + 1)) != key

    def key_in_copy(*before: Path) -> str:
        return run_python(
            PRINT_KEY, fast_sim, str(sims_copy), path=[*before, sims_copy], cwd=sims_copy
        ).strip()

    assert key_in_copy() == key  # the same source elsewhere on disk: the same address
    other_torch = tmp_path / "other-torch"
    metadata = other_torch / "torch-0.0.0.dist-info" / "METADATA"
    metadata.parent.mkdir(parents=True)
    metadata.write_text("Metadata-Version: 2.1\nName: torch\nVersion: 0.0.0\n")
    assert key_in_copy(other_torch) != key
    with (sims_copy / "sims" / "common.py").open("a") as common:  # imported, not the sim itself
        common.write("\n# an edit that changes nothing but the source\n")
    assert key_in_copy() != key


def test_source_files_follow_sims_imports():
    names = [path.name for path in cache.source_files("ppo_rlhf_bugs")]
    assert names == ["common.py", "ppo_rlhf_bugs.py", "reward_overoptimization.py"]


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV_VAR, str(tmp_path / "from_env"))
    assert cache.resolve_dir() == tmp_path / "from_env"
    assert cache.resolve_dir(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.delenv(cache.ENV_VAR)
    assert cache.resolve_dir().parts[-2:] == ("trapbot", "sims")


def test_half_written_entries_are_misses(cache_dir, fast_sim, seed_cache):
    seed_cache()
    entry = cache.lookup(fast_sim)
    json_path = entry.png_path.with_suffix(".json")
    entry.png_path.write_bytes(entry.png()[:4])  # a truncated PNG under a committed JSON
    assert cache.lookup(fast_sim) is None
    repaired = cache.get_or_compute(fast_sim)
    assert not repaired.cached and png_size(repaired.png())[0] == PLOT_WIDTH_PX
    assert cache.lookup(fast_sim) is not None
    json_path.unlink()  # a PNG without its commit marker
    assert cache.lookup(fast_sim) is None


def test_failed_write_leaves_no_entry_and_no_temp_files(
    cache_dir, fast_sim, entry_files, monkeypatch
):
    real_replace = os.replace

    def crash_on_json(source, target):
        if str(target).endswith(".json"):
            raise OSError("disk full")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", crash_on_json)
    with pytest.raises(OSError, match="disk full"):
        cache.get_or_compute(fast_sim)
    monkeypatch.setattr(os, "replace", real_replace)
    assert cache.lookup(fast_sim) is None
    assert entry_files(fast_sim)  # the PNG landed before the crash ...
    assert not [name for name in entry_files(fast_sim) if name.endswith(".tmp")]  # ... no temps


def test_no_cache_recomputes_and_overwrites(cache_dir, fast_sim, entry_files, seed_cache):
    seed_cache()
    first = cache.lookup(fast_sim)
    first_inodes = inode(first.png_path), inode(first.png_path.with_suffix(".json"))
    hit = cache.get_or_compute(fast_sim)
    assert hit.cached
    assert (inode(hit.png_path), inode(hit.png_path.with_suffix(".json"))) == first_inodes
    again = cache.get_or_compute(fast_sim, use_cache=False)
    assert not again.cached and again.png_path == first.png_path
    # Both files were replaced by new ones (os.replace of a fresh temporary file).
    assert inode(again.png_path) != first_inodes[0]
    assert inode(again.png_path.with_suffix(".json")) != first_inodes[1]
    assert len(entry_files(fast_sim)) == 2
    assert cache.lookup(fast_sim).seconds == again.seconds  # the new computation's record


def test_missing_and_warm(cache_dir, fast_sim, seed_cache):
    seeded = seed_cache(fast_sim)
    assert cache.missing() == [fast_sim]
    seen = []
    entries = cache.warm(on_done=seen.append)
    assert seen == entries
    assert {entry.id: entry.cached for entry in entries} == {
        sim_id: sim_id != fast_sim for sim_id in registry.sim_ids()
    }
    assert len(seeded) == len(entries) - 1
    assert cache.missing() == []
    assert all(entry.cached for entry in cache.warm())


SIM_MODULE = textwrap.dedent("""
    from dataclasses import dataclass
    from sims.common import Result

    TITLE = "bad"
    CAPTION = "bad"

    @dataclass(frozen=True)
    class Config:
        seed: int = 0

    def run(config):
        return Result(metrics={{"a": {metric}}})

    def plot(result):
        return {png}
""")


def test_compute_rejects_bad_outputs(sims_copy):
    """Two sims with broken outputs, added to a copy of the package and computed there."""
    (sims_copy / "sims" / "gif_plot.py").write_text(
        SIM_MODULE.format(metric="1.0", png="b'GIF89a'")
    )
    (sims_copy / "sims" / "word_metric.py").write_text(
        SIM_MODULE.format(metric="'high'", png="b'\\x89PNG....'")
    )
    script = textwrap.dedent("""
        import json, sys
        from sims import cache
        errors = {}
        for sim_id in sys.argv[1:]:
            try:
                cache.compute(sim_id)
            except ValueError as error:
                errors[sim_id] = str(error)
        print(json.dumps(errors))
    """)
    errors = json.loads(
        run_python(script, "gif_plot", "word_metric", path=[sims_copy], cwd=sims_copy)
    )
    assert set(errors) == {"gif_plot", "word_metric"}
    assert "PNG" in errors["gif_plot"]
    assert "number" in errors["word_metric"]


WARM_ONE = textwrap.dedent("""
    import json, sys
    from sims import cache
    entry = cache.get_or_compute(sys.argv[1])
    print(json.dumps({"cached": entry.cached, "png": str(entry.png_path)}))
""")


def wait_for_blocked_lockers(inode_number: int, count: int, timeout: float = 180.0) -> int:
    """Poll /proc/locks until ``count`` processes wait on the flock of this inode."""
    deadline = time.monotonic() + timeout
    blocked = 0
    while time.monotonic() < deadline:
        lines = Path("/proc/locks").read_text().splitlines()
        blocked = sum(
            1
            for line in lines
            if "->" in line and "FLOCK" in line and line.split()[-3].endswith(f":{inode_number}")
        )
        if blocked >= count:
            break
        time.sleep(0.05)
    return blocked


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux /proc/locks")
def test_two_processes_warming_the_same_sim(cache_dir, fast_sim, entry_files):
    """The test holds the entry's lock while two real processes start, so both must queue on
    it; then exactly one computes and the other reads the committed entry. (The fast sim is
    numpy-only, which keeps the children from importing torch.)"""
    import fcntl

    key = cache.entry_key(fast_sim, registry.get(fast_sim).Config())
    (cache_dir / fast_sim).mkdir(parents=True)
    env = {**os.environ, cache.ENV_VAR: str(cache_dir)}
    with open(cache_dir / fast_sim / f"{key}.lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", WARM_ONE, fast_sim],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        waiting = wait_for_blocked_lockers(os.fstat(lock.fileno()).st_ino, count=2)
        assert waiting == 2, "both processes should be queued on the entry's lock"
        assert not (cache_dir / fast_sim / f"{key}.json").exists()  # nobody got past the lock
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err
        results.append(json.loads(out))
    assert sorted(result["cached"] for result in results) == [False, True]
    assert {result["png"] for result in results} == {str(cache_dir / fast_sim / f"{key}.png")}
    assert entry_files(fast_sim) == [f"{key}.json", f"{key}.png"]  # exactly one entry
    entry = cache.lookup(fast_sim)
    assert entry is not None and entry.png().startswith(b"\x89PNG")
    assert png_size(entry.png())[0] == PLOT_WIDTH_PX


def test_parallel_warm_uses_worker_processes(cache_dir, fast_sims, seed_cache, entry_files):
    """jobs=2 computes the missing sims in two worker processes; cached ones are not resubmitted."""
    seeded = seed_cache(*fast_sims)
    seeded_inodes = {sim_id: inode(cache.lookup(sim_id).png_path) for sim_id in seeded}
    seen = []
    entries = cache.warm(on_done=seen.append, jobs=2)
    assert seen == entries
    assert sorted(entry.id for entry in entries) == registry.sim_ids()
    assert sorted(entry.id for entry in entries if not entry.cached) == sorted(fast_sims)
    assert cache.missing() == []
    for sim_id in fast_sims:
        assert len(entry_files(sim_id)) == 2
        assert png_size(cache.lookup(sim_id).png())[0] == PLOT_WIDTH_PX
    # The seeded entries were read, never rewritten.
    assert {sim_id: inode(cache.lookup(sim_id).png_path) for sim_id in seeded} == seeded_inodes


def test_a_worker_survives_the_terminals_ctrl_c():
    """Ctrl-C reaches every process of the terminal's group: a simulation worker ignores it
    (no traceback of its own in the chat) and goes on serving until its parent stops it."""
    import os
    import signal

    pool = cache.new_process_pool(1)
    try:
        worker = pool.submit(os.getpid).result(timeout=120)
        os.kill(worker, signal.SIGINT)
        assert pool.submit(os.getpid).result(timeout=60) == worker
    finally:
        pool.shutdown(wait=True)
