"""A content-addressed, crash-safe, multi-process-safe cache of simulation plots and metrics.

An entry's key hashes everything its output depends on: the sim id, the config
(``dataclasses.asdict`` as sorted JSON), the source of the sim's file and of every ``sims``
module it imports (``common.py`` included, found by reading the import statements), and the
torch version. Editing a sim or upgrading torch therefore changes the key and the stale entry
is simply never read again.

Layout: ``<cache dir>/<sim_id>/<key>.png`` and ``<key>.json``. The cache dir is
``$TRAPBOT_SIM_CACHE_DIR`` or else ``platformdirs.user_cache_dir("trapbot")/sims``.

Crash safety: every file is written to a temporary file in the same directory, fsynced and
moved into place with ``os.replace`` (atomic on POSIX). The PNG is written before the JSON, and
the JSON (which records the PNG's size) is the commit marker, so a reader never sees a
half-written PNG: no JSON, or a PNG of the wrong size, is a miss.

Concurrency: computing an entry holds an exclusive ``fcntl.flock`` on ``<key>.lock``; a
second process asking for the same entry waits on the lock, then finds the committed entry and
does not compute it again. The OS drops the lock if the holder dies.

Old entries (from an earlier source or torch version) are never read again; deleting the cache
directory is always safe.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sims import registry

try:
    import fcntl
except ImportError:  # not POSIX: no cross-process lock, writes stay atomic
    fcntl = None  # type: ignore[assignment]

ENV_VAR = "TRAPBOT_SIM_CACHE_DIR"
KEY_LENGTH = 24


@dataclass(frozen=True)
class CachedSim:
    """One simulation's output as stored: metrics, the PNG's path, and how long it took."""

    id: str
    metrics: dict[str, float]
    png_path: Path
    seconds: float
    """Wall time of run() + plot() when the entry was computed."""
    cached: bool
    """True when this call read the entry instead of computing it."""

    def png(self) -> bytes:
        return self.png_path.read_bytes()


@dataclass(frozen=True)
class Computed:
    """What a fresh computation gives before it is stored."""

    metrics: dict[str, float]
    png: bytes
    seconds: float


def resolve_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The explicit directory, else ``$TRAPBOT_SIM_CACHE_DIR``, else the user cache dir."""
    if explicit is not None:
        return Path(explicit)
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("trapbot")) / "sims"


@lru_cache(maxsize=1)
def torch_version() -> str:
    """``torch.__version__`` read from the installed metadata, so no 1 s import of torch."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        import torch

        return torch.__version__


@lru_cache(maxsize=256)
def _imported_sims_modules(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    """Names of the ``sims`` modules a source file imports (memoised per file version)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(
                alias.name.split(".")[1] for alias in node.names if alias.name.startswith("sims.")
            )
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module == "sims":
                names.update(alias.name for alias in node.names)
            elif node.level == 0 and node.module and node.module.startswith("sims."):
                names.add(node.module.split(".")[1])
            elif node.level == 1:
                if node.module:
                    names.add(node.module.split(".")[0])
                else:
                    names.update(alias.name for alias in node.names)
    return tuple(sorted(names))


def source_files(sim_id: str) -> list[Path]:
    """The sim's file and every ``sims/*.py`` it imports, transitively, sorted."""
    seen: dict[str, Path] = {}
    pending = [registry.source_path(sim_id)]
    while pending:
        path = pending.pop()
        if path.name in seen:
            continue
        seen[path.name] = path
        stat = path.stat()
        for name in _imported_sims_modules(str(path), stat.st_mtime_ns, stat.st_size):
            candidate = registry.SIMS_DIR / f"{name}.py"
            if candidate.is_file():
                pending.append(candidate)
    return [seen[name] for name in sorted(seen)]


def source_digest(sim_id: str) -> str:
    digest = hashlib.sha256()
    for path in source_files(sim_id):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def config_json(config: Any) -> str:
    return json.dumps(dataclasses.asdict(config), sort_keys=True, default=str)


def entry_key(sim_id: str, config: Any) -> str:
    """The content address of one (sim, config, source, torch version)."""
    material = json.dumps(
        {
            "sim": sim_id,
            "config": config_json(config),
            "source": source_digest(sim_id),
            "torch": torch_version(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(material.encode()).hexdigest()[:KEY_LENGTH]


@dataclass(frozen=True)
class _EntryPaths:
    png: Path
    json: Path
    lock: Path

    @classmethod
    def of(cls, directory: Path, sim_id: str, key: str) -> _EntryPaths:
        folder = directory / sim_id
        return cls(folder / f"{key}.png", folder / f"{key}.json", folder / f"{key}.lock")


def default_config(sim_id: str) -> Any:
    return registry.get(sim_id).Config()


def compute(sim_id: str, config: Any = None) -> Computed:
    """Run and plot a simulation now, bypassing the cache."""
    module = registry.get(sim_id)
    config = module.Config() if config is None else config
    start = time.perf_counter()
    result = module.run(config)
    png = module.plot(result)
    seconds = time.perf_counter() - start
    if not png.startswith(b"\x89PNG"):
        raise ValueError(f"{sim_id}.plot() did not return PNG bytes")
    try:
        metrics = {str(name): float(value) for name, value in result.metrics.items()}
    except (TypeError, ValueError) as error:
        raise ValueError(f"{sim_id}: every metric must be a number ({error})") from error
    return Computed(metrics=metrics, png=png, seconds=seconds)


def lookup(
    sim_id: str, config: Any = None, cache_dir: str | os.PathLike[str] | None = None
) -> CachedSim | None:
    """The committed entry for this sim and config, or None. Never computes."""
    config = default_config(sim_id) if config is None else config
    paths = _EntryPaths.of(resolve_dir(cache_dir), sim_id, entry_key(sim_id, config))
    return _read(sim_id, paths)


def _read(sim_id: str, paths: _EntryPaths) -> CachedSim | None:
    try:
        record = json.loads(paths.json.read_text(encoding="utf-8"))
        png_size = paths.png.stat().st_size
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if png_size != record.get("png_bytes"):
        return None  # the PNG was replaced or damaged after the commit
    return CachedSim(
        id=sim_id,
        metrics=record["metrics"],
        png_path=paths.png,
        seconds=record["seconds"],
        cached=True,
    )


def _atomic_write(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _fsync_directory(directory: Path) -> None:
    if os.name != "posix":
        return
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    with open(lock_path, "a+b") as lock_file:
        fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)


def _store(sim_id: str, config: Any, paths: _EntryPaths, computed: Computed) -> None:
    record = {
        "id": sim_id,
        "metrics": computed.metrics,
        "seconds": computed.seconds,
        "png_bytes": len(computed.png),
        "config": json.loads(config_json(config)),
        "torch": torch_version(),
        "created": time.time(),
    }
    _atomic_write(paths.png, computed.png)  # the PNG first: the JSON below commits the entry
    _atomic_write(paths.json, json.dumps(record, indent=1, sort_keys=True).encode())
    _fsync_directory(paths.json.parent)


def get_or_compute(
    sim_id: str,
    config: Any = None,
    use_cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
) -> CachedSim:
    """The cached entry, or compute, store and return it.

    With ``use_cache=False`` the entry is recomputed and overwritten (a refresh); the returned
    ``cached`` is then False.
    """
    config = default_config(sim_id) if config is None else config
    paths = _EntryPaths.of(resolve_dir(cache_dir), sim_id, entry_key(sim_id, config))
    if use_cache and (hit := _read(sim_id, paths)) is not None:
        return hit
    paths.png.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(paths.lock):
        # Another process may have committed the entry while this one waited for the lock.
        if use_cache and (hit := _read(sim_id, paths)) is not None:
            return hit
        computed = compute(sim_id, config)
        _store(sim_id, config, paths, computed)
    return CachedSim(sim_id, computed.metrics, paths.png, computed.seconds, cached=False)


def missing(cache_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """Ids of the simulations whose default-config entry is not in the cache."""
    return [sim_id for sim_id in registry.sim_ids() if lookup(sim_id, None, cache_dir) is None]


def _prepare_worker() -> None:
    """Runs once in each worker process: import the heavy modules, one torch thread.

    Ctrl-C in a terminal signals the whole process group; a worker ignores it (it would print
    its own traceback in the middle of the chat), and its parent decides when it stops."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import matplotlib

    matplotlib.use("Agg")
    import torch

    torch.set_num_threads(1)


def new_process_pool(max_workers: int):
    """Worker processes for simulations, started with "forkserver" (or "spawn"), never "fork".

    Forking a process that runs an event loop or torch's thread pools can deadlock the child; a
    fresh interpreter cannot. Each worker imports torch and matplotlib once, when it starts.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    return ProcessPoolExecutor(max_workers, mp_context=context, initializer=_prepare_worker)


def warm(
    cache_dir: str | os.PathLike[str] | None = None,
    on_done: Callable[[CachedSim], None] | None = None,
    jobs: int = 1,
) -> list[CachedSim]:
    """Make sure every simulation's default-config entry exists; compute only the missing ones.

    With ``jobs > 1`` the missing ones are computed in that many worker processes (the entry
    locks keep it safe); ``on_done`` is called in this process as each one finishes.
    """
    from concurrent.futures import as_completed

    done = []

    def finish(entry: CachedSim) -> None:
        done.append(entry)
        if on_done is not None:
            on_done(entry)

    sim_ids = registry.sim_ids()
    if jobs <= 1:
        for sim_id in sim_ids:
            finish(get_or_compute(sim_id, cache_dir=cache_dir))
        return done
    missing_ids = []
    for sim_id in sim_ids:
        hit = lookup(sim_id, None, cache_dir)
        if hit is None:
            missing_ids.append(sim_id)
        else:
            finish(hit)
    if missing_ids:
        directory = str(resolve_dir(cache_dir))
        with new_process_pool(min(jobs, len(missing_ids))) as pool:
            futures = [
                pool.submit(get_or_compute, sim_id, None, True, directory) for sim_id in missing_ids
            ]
            for future in as_completed(futures):
                finish(future.result())
    return done
