"""A cache of judgements: same card version, same answer, same judge -> no second call.

Two layers: an in-memory LRU for this process and a small SQLite file that survives
restarts (the directory its owner gives, from ``TRAPBOT_GRADER_CACHE_DIR`` in the bot, else
the user cache directory). The cache stores
the judge's verdicts, not the grade, so a change to the scoring rules applies to cached
answers too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from grader.base import Judgement

if TYPE_CHECKING:
    from cards.schema import Card

log = logging.getLogger(__name__)

CACHE_FILE = "judgements.sqlite3"


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("trapbot", appauthor=False))


def cache_key(card: Card, answer: str, judge: str) -> str:
    """A digest of everything the judgement depends on: card version, answer and judge."""
    material = json.dumps([card.id, card.version, judge, answer], ensure_ascii=False)
    return hashlib.sha256(material.encode()).hexdigest()


class JudgementCache:
    """Judgements by ``cache_key``; ``directory=None`` picks the default, ``disk=False`` keeps
    everything in memory."""

    def __init__(
        self, directory: Path | str | None = None, *, memory_size: int = 512, disk: bool = True
    ):
        self._memory: OrderedDict[str, Judgement] = OrderedDict()
        self._memory_size = memory_size
        self._lock = threading.Lock()
        self._path: Path | None = None
        if disk:
            self._path = self._open(
                Path(directory) if directory is not None else default_cache_dir()
            )

    @property
    def path(self) -> Path | None:
        return self._path

    @staticmethod
    def _open(directory: Path) -> Path | None:
        path = directory / CACHE_FILE
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with sqlite3.connect(path) as connection:
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, judgement TEXT NOT NULL, stored_at REAL NOT NULL)"
                )
        except (OSError, sqlite3.Error) as error:
            log.warning(
                "judgement cache at %s is unusable (%s); caching in memory only", path, error
            )
            return None
        return path

    def get(self, key: str) -> Judgement | None:
        with self._lock:
            found = self._memory.get(key)
            if found is not None:
                self._memory.move_to_end(key)
                return found
        if self._path is None:
            return None
        try:
            with sqlite3.connect(self._path) as connection:
                row = connection.execute(
                    "SELECT judgement FROM judgements WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.Error as error:
            log.warning("judgement cache read failed: %s", error)
            return None
        if row is None:
            return None
        try:
            judgement = Judgement.from_json(json.loads(row[0]))
        except (ValueError, KeyError, TypeError):
            return None
        self._remember(key, judgement)
        return judgement

    def put(self, key: str, judgement: Judgement) -> None:
        self._remember(key, judgement)
        if self._path is None:
            return
        try:
            with sqlite3.connect(self._path) as connection:
                connection.execute(
                    "INSERT OR REPLACE INTO judgements (key, judgement, stored_at) VALUES (?, ?, ?)",
                    (key, json.dumps(judgement.to_json(), ensure_ascii=False), time.time()),
                )
        except sqlite3.Error as error:
            log.warning("judgement cache write failed: %s", error)

    def _remember(self, key: str, judgement: Judgement) -> None:
        with self._lock:
            self._memory[key] = judgement
            self._memory.move_to_end(key)
            while len(self._memory) > self._memory_size:
                self._memory.popitem(last=False)

    async def aget(self, key: str) -> Judgement | None:
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                return self._memory[key]
        return await asyncio.to_thread(self.get, key)

    async def aput(self, key: str, judgement: Judgement) -> None:
        await asyncio.to_thread(self.put, key, judgement)
