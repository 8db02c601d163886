"""Time, injected: the engine asks a clock, never ``datetime.now()``."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from bot.prefs import stored_zone


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that moves only when told to; for tests and benchmarks."""

    def __init__(self, start: datetime):
        if start.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now

    def set(self, moment: datetime) -> None:
        self._now = moment.astimezone(UTC)


def local_date(moment: datetime, timezone: str) -> date:
    """The calendar date at ``moment`` for someone living in ``timezone``."""
    return moment.astimezone(stored_zone(timezone)).date()
