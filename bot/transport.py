"""What the process runner and the reminders expect of a chat platform adapter."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from bot.replies import Reply

if TYPE_CHECKING:
    from bot.models import Learner


class PushOutcome(StrEnum):
    SENT = "sent"
    BLOCKED = "blocked"  # the learner blocked the bot or closed DMs: deactivate
    FAILED = "failed"  # transient: try again on a later sweep


class Transport(Protocol):
    """One chat platform, started and stopped on the shared event loop."""

    platform: str

    async def start(self) -> None:
        """Connect and begin serving; returns once running (does not block)."""
        ...

    async def stop(self) -> None: ...

    async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
        """Send replies to a learner unprompted (daily reminder, recovered grade)."""
        ...


#: The note after the first grade that had to wait for the judge's model.
WAITED_FOR_JUDGE = (
    "(That grade took {seconds:.0f} s because the judge was still loading its model; "
    "the next ones are quicker.)"
)


class JudgeWarmup:
    """The judge's model loading in the background since start (``task``, set by the runner).
    ``grade`` runs a grading call and, the first time one had to wait for the model, adds a
    note saying so, so a slow first grade is explained rather than silent."""

    def __init__(self, task: asyncio.Future[Any] | None = None):
        self.task = task
        self.told = False

    def loading(self) -> bool:
        return self.task is not None and not self.task.done()

    async def grade(self, work: Awaitable[list[Reply]]) -> list[Reply]:
        waited = self.loading() and not self.told
        started = time.monotonic()
        replies = await work
        if not waited:
            return replies
        self.told = True
        return [*replies, Reply(WAITED_FOR_JUDGE.format(seconds=time.monotonic() - started))]
