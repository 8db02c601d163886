"""When a learner's next daily push is due, in UTC, correct across DST and timezone changes."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from bot.prefs import stored_zone  # a bad stored zone reads as UTC

#: Platforms with daily pushes; learners elsewhere (the terminal chat) have no push moment.
PUSH_PLATFORMS = ("telegram", "discord")


def local_push_moment(day: date, push_time: time, timezone: str) -> datetime:
    """``push_time`` on ``day`` in ``timezone``, as UTC.

    A time that does not exist (the hour skipped when clocks go forward) lands at the same
    wall-clock distance after the jump; a time that happens twice (clocks go back) is the
    first of the two (``fold=0``).
    """
    local = datetime.combine(day, push_time, tzinfo=stored_zone(timezone))
    return local.astimezone(UTC)


def next_push_at(push_time: time, timezone: str, now: datetime, last_pushed_at: datetime | None) -> datetime:
    """Today's push moment (possibly already past, so due now) unless a push already went
    out on this local date; then tomorrow's. Dates are read in the current timezone, so a
    learner who changes timezone after today's push is not pushed twice in one local day."""
    zone = stored_zone(timezone)
    day = now.astimezone(zone).date()
    if last_pushed_at is not None:
        day = max(day, last_pushed_at.astimezone(zone).date() + timedelta(days=1))
    return local_push_moment(day, push_time, timezone)


def tomorrows_push_at(push_time: time, timezone: str, now: datetime) -> datetime:
    """The push moment on the local day after ``now``."""
    day = now.astimezone(stored_zone(timezone)).date() + timedelta(days=1)
    return local_push_moment(day, push_time, timezone)
