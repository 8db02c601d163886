"""One test double for the adapters' plot walks: a plot for every simulation at once, except
the ``slow`` sims', which are ready only once ``release`` is set (a simulation that takes
longer than the verdict); ``prefetch`` records what was started."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any


class DeckPlots:
    def __init__(self, directory: Path, png: bytes, slow: frozenset[str] = frozenset()):
        self.directory = directory
        self.png = png
        self.slow = slow
        self.release = asyncio.Event()
        self.prefetched: list[str] = []

    def prefetch(self, sim_id: str) -> bool:
        self.prefetched.append(sim_id)
        return True

    async def plot_for(self, sim_id: str, wait_seconds: float | None = 3.0) -> Any:
        if sim_id in self.slow:
            try:
                await asyncio.wait_for(asyncio.shield(self.release.wait()), wait_seconds)
            except TimeoutError:
                return None
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{sim_id}.png"
        path.write_bytes(self.png)
        return SimpleNamespace(png_path=path)
