"""What the process runner and the reminders expect of a chat platform adapter."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bot.models import Learner
    from bot.replies import Reply


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
