"""A server's trap of the day and its leaderboard: storage, and which trap a day brings."""

from __future__ import annotations

import hashlib
from datetime import date, datetime, time

import sqlalchemy as sa
from sqlalchemy.engine import Engine as DbEngine
from sqlmodel import Session, col, select

from bot.clock import Clock
from bot.discord.models import DiscordGuild, DiscordLeaderboardMember
from bot.prefs import parse_timezone, stored_zone
from cards.deck import Deck


def trap_of_the_day(deck: Deck, guild_id: int | str, day: date) -> str:
    """The card a server meets on ``day``: the deck in order, from a per-server start.

    Deterministic (same server and date, same card), and a server walks the whole deck
    before any card comes back; servers start at different places.
    """
    if len(deck) == 0:
        raise ValueError("the deck is empty")
    start = int.from_bytes(hashlib.sha256(str(guild_id).encode()).digest()[:4], "big")
    return deck.cards[(day.toordinal() + start) % len(deck)].id


def local_today(config: DiscordGuild, now: datetime) -> date:
    return now.astimezone(stored_zone(config.timezone)).date()


def is_due(config: DiscordGuild, now: datetime) -> bool:
    """Whether the server's post for its local today is owed at ``now``."""
    local = now.astimezone(stored_zone(config.timezone))
    return (
        config.enabled
        and local.time() >= config.post_time
        and config.last_posted_on != local.date()
    )


class GuildStore:
    """Reads and writes the Discord tables. Calls are short synchronous transactions."""

    def __init__(self, db: DbEngine, clock: Clock):
        self.db = db
        self.clock = clock

    def get(self, guild_id: int | str) -> DiscordGuild | None:
        with Session(self.db, expire_on_commit=False) as session:
            return session.exec(
                select(DiscordGuild).where(DiscordGuild.guild_id == str(guild_id))
            ).first()

    def configure(
        self,
        guild_id: int | str,
        *,
        channel_id: int | str,
        post_time: time,
        timezone: str,
        configured_by: int | str,
        enabled: bool = True,
    ) -> DiscordGuild:
        """Create or replace the server's settings; a change of time may post again today."""
        with Session(self.db, expire_on_commit=False) as session:
            config = session.exec(
                select(DiscordGuild).where(DiscordGuild.guild_id == str(guild_id))
            ).first()
            if config is None:
                config = DiscordGuild(
                    guild_id=str(guild_id), channel_id=str(channel_id), updated_at=self.clock.now()
                )
            config.channel_id = str(channel_id)
            config.post_time = post_time
            config.timezone = parse_timezone(timezone)  # a zone that constructs, or PreferenceError
            config.enabled = enabled
            config.configured_by = str(configured_by)
            config.last_error = None
            config.updated_at = self.clock.now()
            session.add(config)
            try:
                session.commit()
            except sa.exc.IntegrityError:  # configured concurrently: the other one wins, then ours
                session.rollback()
                return self.configure(
                    guild_id,
                    channel_id=channel_id,
                    post_time=post_time,
                    timezone=timezone,
                    configured_by=configured_by,
                    enabled=enabled,
                )
            return config

    def due(self, now: datetime) -> list[DiscordGuild]:
        with Session(self.db, expire_on_commit=False) as session:
            configs = session.exec(select(DiscordGuild).where(DiscordGuild.enabled == True)).all()
        return [config for config in configs if is_due(config, now)]

    def claim(self, config: DiscordGuild, day: date) -> bool:
        """Mark today's post as taken; False if another sweep took it first."""
        with Session(self.db) as session:
            result = session.exec(  # type: ignore[call-overload]
                sa.update(DiscordGuild)
                .where(
                    DiscordGuild.id == config.id,
                    sa.or_(
                        col(DiscordGuild.last_posted_on).is_(None),
                        DiscordGuild.last_posted_on != day,
                    ),
                )
                .values(last_posted_on=day)
            )
            session.commit()
            return result.rowcount == 1

    def release(self, config: DiscordGuild, previous: date | None, error: str) -> None:
        """Give the claim back after a transient failure, so a later sweep tries again."""
        self._update(config, last_posted_on=previous, last_error=error[:200])

    def record_post(self, config: DiscordGuild, card_id: str, message_id: int | str | None) -> None:
        self._update(
            config,
            last_card_id=card_id,
            last_message_id=str(message_id) if message_id is not None else None,
            last_error=None,
        )

    def record_error(self, config: DiscordGuild, error: str) -> None:
        self._update(config, last_error=error[:200])

    def _update(self, config: DiscordGuild, **values: object) -> None:
        with Session(self.db) as session:
            session.exec(
                sa.update(DiscordGuild).where(DiscordGuild.id == config.id).values(**values)
            )  # type: ignore[call-overload]
            session.commit()

    # ----- leaderboard -------------------------------------------------------------

    def join_leaderboard(self, guild_id: int | str, learner_id: int) -> bool:
        """Opt in; False if already on it."""
        with Session(self.db) as session:
            session.add(
                DiscordLeaderboardMember(
                    guild_id=str(guild_id), learner_id=learner_id, joined_at=self.clock.now()
                )
            )
            try:
                session.commit()
            except sa.exc.IntegrityError:
                return False
            return True

    def leave_leaderboard(self, guild_id: int | str, learner_id: int) -> bool:
        with Session(self.db) as session:
            result = session.exec(  # type: ignore[call-overload]
                sa.delete(DiscordLeaderboardMember).where(
                    DiscordLeaderboardMember.guild_id == str(guild_id),
                    DiscordLeaderboardMember.learner_id == learner_id,
                )
            )
            session.commit()
            return result.rowcount > 0

    def leaderboard_members(self, guild_id: int | str) -> list[int]:
        with Session(self.db) as session:
            return list(
                session.exec(
                    select(DiscordLeaderboardMember.learner_id).where(
                        DiscordLeaderboardMember.guild_id == str(guild_id)
                    )
                ).all()
            )

    def forget_learner(self, learner_id: int) -> None:
        """Remove a learner from every leaderboard (the engine deletes the rest on /forget)."""
        with Session(self.db) as session:
            session.exec(
                sa.delete(DiscordLeaderboardMember).where(
                    DiscordLeaderboardMember.learner_id == learner_id
                )
            )  # type: ignore[call-overload]
            session.commit()
