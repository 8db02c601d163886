"""Tables of the Discord adapter: a server's trap of the day, and its opt-in leaderboard."""

from __future__ import annotations

from datetime import date, datetime, time

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

import bot.models  # noqa: F401  (the learner table the leaderboard points at, and the naming convention)


class DiscordGuild(SQLModel, table=True):
    """One server's trap of the day: where and when it is posted, and how the last post went."""

    __tablename__ = "discord_guild"

    id: int | None = Field(default=None, primary_key=True)
    guild_id: str = Field(max_length=32, unique=True)
    channel_id: str = Field(max_length=32)
    post_time: time = Field(default=time(9, 0))
    timezone: str = Field(default="UTC", max_length=64)
    enabled: bool = Field(default=True, sa_column_kwargs={"server_default": sa.true()})
    configured_by: str = Field(default="", max_length=32)  # the member who ran /trapbot-setup
    last_posted_on: date | None = None  # the server's local date of the last claimed post
    last_card_id: str | None = Field(default=None, max_length=16)
    last_message_id: str | None = Field(default=None, max_length=32)
    last_error: str | None = Field(default=None, max_length=200)
    decks: list[str] | None = Field(default=None, sa_type=sa.JSON, nullable=True)  # the trap of the day's decks; None: all
    updated_at: datetime = Field(sa_type=sa.DateTime(timezone=True))


class DiscordLeaderboardMember(SQLModel, table=True):
    """A learner who chose to appear on one server's streak leaderboard."""

    __tablename__ = "discord_leaderboard"
    __table_args__ = (sa.UniqueConstraint("guild_id", "learner_id"),)

    id: int | None = Field(default=None, primary_key=True)
    guild_id: str = Field(max_length=32, index=True)
    learner_id: int = Field(foreign_key="learner.id", ondelete="CASCADE")
    joined_at: datetime = Field(sa_type=sa.DateTime(timezone=True))
