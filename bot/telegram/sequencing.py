"""Process updates concurrently across users and strictly in order within one user.

Why a custom update processor: with ``concurrent_updates`` python-telegram-bot starts one task
per update, so a slow grade never holds up another chat, but two messages from the same person
could then be handled out of order (the second answer graded first, a button press overtaking
the answer it belongs to). Non-blocking handlers have the same problem. This processor keeps
PTB's concurrency and adds one FIFO lock per user: PTB creates the update tasks in the order
getUpdates returned them (the order Telegram received them), its semaphore and ``asyncio.Lock``
both wake waiters first-in first-out, so each user's updates run one at a time in arrival order
while other users' updates run beside them. The engine's own per-learner lock then only ever
sees one call at a time from the adapter.

The key is the user, not the chat: in a group, two members answering the same trap are graded
concurrently, and one member's messages in a group and in private stay in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Hashable
from contextlib import asynccontextmanager
from typing import Any

from telegram import Update
from telegram.ext import BaseUpdateProcessor


def sequence_key(update: object) -> Hashable | None:
    """Whose turn an update takes: its user, else its chat, else none (run at once)."""
    if not isinstance(update, Update):
        return None
    if update.effective_user is not None:
        return ("user", update.effective_user.id)
    if update.effective_chat is not None:
        return ("chat", update.effective_chat.id)
    return None


class _Turn:
    __slots__ = ("holders", "lock")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.holders = 0  # tasks holding or waiting for the lock


class UserSequencer(BaseUpdateProcessor):
    """An update processor: concurrent across users, one at a time and in order per user."""

    def __init__(self, max_concurrent_updates: int = 256):
        super().__init__(max_concurrent_updates)
        self._turns: dict[Hashable, _Turn] = {}

    @asynccontextmanager
    async def turn(self, key: Hashable) -> AsyncIterator[None]:
        """Hold ``key``'s turn; work that is not an update (a timer) queues with the updates."""
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = _Turn()
        turn.holders += 1
        try:
            async with turn.lock:
                yield
        finally:
            turn.holders -= 1
            if turn.holders == 0 and self._turns.get(key) is turn:
                del self._turns[key]  # idle users cost nothing

    def busy_keys(self) -> int:
        """How many users have an update running or waiting (for metrics and tests)."""
        return len(self._turns)

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        key = sequence_key(update)
        if key is None:
            await coroutine
            return
        started = False
        try:
            async with self.turn(key):
                started = True
                await coroutine
        finally:
            if not started and asyncio.iscoroutine(coroutine):
                coroutine.close()  # cancelled while queued: never run, so never awaited

    async def initialize(self) -> None:
        """Nothing to allocate."""

    async def shutdown(self) -> None:
        """Nothing to free: turns disappear with their last holder."""
