"""Parse what learners type for their timezone and daily push time."""

from __future__ import annotations

import re
from datetime import time
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones


class PreferenceError(ValueError):
    """Input a learner can fix; the message says how."""


@lru_cache(maxsize=1)
def _zones_by_city() -> dict[str, str]:
    zones: dict[str, str] = {}
    for key in sorted(available_timezones()):
        if "/" in key and not key.startswith(("Etc/", "SystemV/")):
            zones.setdefault(key.rsplit("/", 1)[1].replace("_", " ").casefold(), key)
    return zones


_OFFSET = re.compile(r"^(?:utc|gmt)?\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)


def parse_timezone(text: str) -> str:
    """An IANA zone name for ``Europe/Berlin``, ``berlin``, ``UTC``, ``UTC+2`` or ``-05:00``."""
    value = text.strip()
    if not value or len(value) > 64:
        raise PreferenceError("Send a city (Berlin), a zone (Europe/Berlin) or an offset (UTC+2).")
    if value.casefold() in ("utc", "gmt", "z"):
        return "UTC"
    match = _OFFSET.match(value)
    if match:
        sign, hours, minutes = match.group(1), int(match.group(2)), int(match.group(3) or 0)
        if minutes:
            raise PreferenceError(
                "Offsets with minutes need a city or zone name (for example Asia/Kolkata)."
            )
        if hours == 0:
            return "UTC"
        # POSIX inverts the sign: Etc/GMT-2 is two hours ahead of UTC. The tz database has
        # Etc/GMT-14 (UTC+14) to Etc/GMT+12 (UTC-12), nothing beyond.
        zone = f"Etc/GMT{'-' if sign == '+' else '+'}{hours}"
        if (sign == "+" and hours > 14) or (sign == "-" and hours > 12) or not is_zone(zone):
            raise PreferenceError("UTC offsets run from UTC-12 to UTC+14.")
        return zone
    if ("/" in value or value in available_timezones()) and is_zone(value):
        return value
    city = _zones_by_city().get(value.replace("_", " ").casefold())
    if city and is_zone(city):
        return city
    raise PreferenceError(
        f"I don't know the timezone {value!r}. Send a city (Berlin), a zone (Europe/Berlin) "
        "or an offset (UTC+2)."
    )


def is_zone(name: object) -> bool:
    """Whether ``name`` constructs a time zone on this machine (the check before saving)."""
    return zone_or_none(name) is not None


def zone_or_none(name: object) -> ZoneInfo | None:
    if not isinstance(name, str) or not name or len(name) > 64:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a path-like name
        return None


def stored_zone(name: object) -> ZoneInfo:
    """The zone of a stored setting read defensively: UTC when the value (saved by an older
    version, or edited by hand) is no zone, so one bad row never stops anyone else."""
    return zone_or_none(name) or ZoneInfo("UTC")


def parse_push_time(text: str) -> time:
    """A time of day from ``9``, ``09:30``, ``9.30``, ``7pm`` or ``7:15 am``."""
    value = text.strip().casefold().replace(" ", "")
    match = re.fullmatch(r"(\d{1,2})(?:[:.h](\d{2}))?(am|pm)?", value)
    if not match:
        raise PreferenceError("Send a time like 09:00 or 7pm.")
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if half:
        if not 1 <= hour <= 12:
            raise PreferenceError("With am/pm the hour runs from 1 to 12.")
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        raise PreferenceError("Send a time of day from 00:00 to 23:59.")
    return time(hour, minute)


def parse_new_per_day(value: str | int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise PreferenceError("Send a whole number of new traps a day, from 1 to 10.") from None
    if not 1 <= number <= 10:
        raise PreferenceError("New traps a day runs from 1 to 10.")
    return number


def parse_on_off(value: str | bool) -> bool:
    """``on``/``off`` (also yes/no, true/false, 1/0) as a bool."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().casefold()
    if word in ("on", "yes", "true", "1", "y"):
        return True
    if word in ("off", "no", "false", "0", "n"):
        return False
    raise PreferenceError("Send on or off, for example `/settings interview on`.")
