"""Settings that cannot break anyone: a zone is saved only when it constructs, and a bad zone
stored by an older version is read as UTC, repaired once, and told to its learner once."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest
import sqlalchemy as sa
from sqlmodel import Session

from bot.clock import FixedClock, local_date
from bot.discord.guilds import GuildStore, is_due, local_today
from bot.discord.models import DiscordGuild
from bot.engine import QuizEngine
from bot.models import Learner
from bot.prefs import PreferenceError, parse_timezone
from bot.pushtime import next_push_at
from bot.replies import ReplyKind
from grader.selfgrade import SelfGrader

BAD_ZONE = "Etc/GMT+13"  # what `/settings timezone UTC-13` used to store: no such zone


@pytest.mark.parametrize("text", ["UTC-13", "UTC-14", "GMT-13", "-13", "UTC+15", BAD_ZONE, "Etc/GMT-15"])
def test_offsets_beyond_the_tz_database_are_refused(text: str) -> None:
    with pytest.raises(PreferenceError, match="UTC-12 to UTC\\+14|don't know"):
        parse_timezone(text)


@pytest.mark.parametrize(("text", "zone"), [("UTC-12", "Etc/GMT+12"), ("UTC+14", "Etc/GMT-14"), ("UTC+13", "Etc/GMT-13")])
def test_offsets_at_the_edges_are_zones(text: str, zone: str) -> None:
    assert parse_timezone(text) == zone


async def test_a_refused_zone_is_not_saved(db, small_deck, clock: FixedClock) -> None:
    engine = QuizEngine(db, small_deck, SelfGrader(), clock)
    learner = engine.learner("telegram", "ada")
    [reply] = await engine.update_settings(learner.id, "timezone", "UTC-13")
    assert reply.kind is ReplyKind.ERROR and "UTC-12 to UTC+14" in reply.text
    assert engine.get_learner(learner.id).timezone == "UTC"


def _store_zone(db, learner_id: int, zone: str) -> None:
    with db.begin() as connection:  # as an older version left it, past every check
        connection.execute(sa.update(Learner).where(Learner.id == learner_id).values(timezone=zone))


async def test_a_bad_stored_zone_is_repaired_and_told_once(db, small_deck, clock: FixedClock) -> None:
    engine = QuizEngine(db, small_deck, SelfGrader(), clock)
    ada, bob = engine.learner("telegram", "ada"), engine.learner("telegram", "bob")
    _store_zone(db, ada.id, BAD_ZONE)
    _store_zone(db, bob.id, "Europe/Berlin")
    first = await engine.next_trap(ada.id)
    assert first[0].kind is ReplyKind.INFO and BAD_ZONE in first[0].text and "UTC" in first[0].text
    assert first[-1].kind is ReplyKind.QUESTION  # the command itself still works
    with Session(db) as session:
        repaired = session.get(Learner, ada.id)
        assert repaired.timezone == "UTC" and repaired.next_push_at is not None
    assert not any(BAD_ZONE in reply.text for reply in engine.settings(ada.id))
    [bob_trap] = await engine.next_trap(bob.id)
    assert bob_trap.kind is ReplyKind.QUESTION
    assert engine.get_learner(bob.id).timezone == "Europe/Berlin"


async def test_a_bad_stored_zone_never_stops_settings_or_stats(db, small_deck, clock: FixedClock) -> None:
    engine = QuizEngine(db, small_deck, SelfGrader(), clock)
    learner = engine.learner("terminal", "ada")
    _store_zone(db, learner.id, BAD_ZONE)
    replies = await engine.update_settings(learner.id, "time", "07:30")
    assert replies[0].kind is ReplyKind.INFO and BAD_ZONE in replies[0].text
    assert replies[-1].kind is ReplyKind.SETTINGS and "07:30" in replies[-1].text
    _store_zone(db, learner.id, "Mars/Olympus")
    stats = await engine.stats(learner.id, with_plot=False)
    assert stats[0].kind is ReplyKind.INFO and stats[-1].kind is ReplyKind.STATS
    _store_zone(db, learner.id, BAD_ZONE)  # the Discord sweep re-saves the stored zone as typed
    replies = await engine.update_settings(learner.id, "timezone", BAD_ZONE)
    assert [reply.kind for reply in replies] == [ReplyKind.INFO, ReplyKind.ERROR]
    assert engine.get_learner(learner.id).timezone == "UTC"


def test_time_helpers_read_a_bad_zone_as_utc() -> None:
    now = datetime(2026, 3, 2, 23, 30, tzinfo=UTC)
    assert local_date(now, BAD_ZONE) == now.date()
    assert next_push_at(time(9), BAD_ZONE, now, None) == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_a_server_with_a_bad_zone_stops_no_other_server(db, clock: FixedClock) -> None:
    store = GuildStore(db, clock)
    with pytest.raises(PreferenceError):
        store.configure(1, channel_id=10, post_time=time(7), timezone=BAD_ZONE, configured_by=5)
    store.configure(2, channel_id=20, post_time=time(7), timezone="Europe/Berlin", configured_by=5)
    with db.begin() as connection:
        connection.execute(sa.insert(DiscordGuild).values(
            guild_id="3", channel_id="30", post_time=time(7), timezone=BAD_ZONE, enabled=True,
            configured_by="5", updated_at=clock.now()))
    later = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    assert {config.guild_id for config in store.due(later)} == {"2", "3"}
    bad = next(config for config in store.due(later) if config.guild_id == "3")
    assert local_today(bad, later) == later.date() and is_due(bad, later)
