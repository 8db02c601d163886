"""The Discord transport: ``trapbot run`` starts it when ``DISCORD_BOT_TOKEN`` is set."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import discord

from bot.discord.client import TrapbotClient
from bot.discord.guilds import GuildStore, local_today, trap_of_the_day
from bot.discord.handlers import PLATFORM, ChannelSink, DiscordHandlers
from bot.transport import PushOutcome

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.discord.models import DiscordGuild
    from bot.engine import QuizEngine
    from bot.models import Learner
    from bot.replies import Reply

log = logging.getLogger(__name__)


class PostOutcome(StrEnum):
    POSTED = "posted"
    FORBIDDEN = (
        "forbidden"  # the bot may not post there: recorded, shown to admins in /trapbot-setup
    )
    GONE = "gone"  # the channel was deleted
    FAILED = "failed"  # transient: the claim is released, a later sweep tries again


class DiscordTransport:
    """Slash commands, buttons, DMs and a server's trap of the day, on the shared loop.

    ``client`` is injectable for tests; discord.py itself handles rate limits (429) and
    retries, and nothing here retries on top of it.
    """

    platform = PLATFORM

    def __init__(
        self,
        engine: QuizEngine,
        settings: Settings,
        *,
        client: Any = None,
        handlers: DiscordHandlers | None = None,
    ):
        self.engine = engine
        self.settings = settings
        self.handlers = handlers or DiscordHandlers(engine, GuildStore(engine.db, engine.clock))
        self.store = self.handlers.store
        self.warmup = self.handlers.warmup
        self.client = client if client is not None else TrapbotClient(self.handlers)
        self._connection: asyncio.Task[None] | None = None

    async def start(self) -> None:
        token = self.settings.discord_bot_token
        if token is None:
            raise RuntimeError("DISCORD_BOT_TOKEN is not set")
        try:
            await self.client.login(token.get_secret_value())
        except discord.LoginFailure:
            raise RuntimeError(
                "Discord rejected DISCORD_BOT_TOKEN: copy the bot token again from the Developer Portal"
            ) from None
        self._connection = asyncio.create_task(self.client.connect(), name="discord-gateway")
        self._connection.add_done_callback(_log_gateway_end)

    async def stop(self) -> None:
        await self.handlers.close()
        await self.client.close()
        if self._connection is not None:
            done, _ = await asyncio.wait({self._connection}, timeout=10)
            if not done:
                log.warning("the Discord connection did not close in 10 s; cancelling it")
                self._connection.cancel()

    async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
        """A direct message; closed DMs or a vanished user mean BLOCKED, anything else FAILED."""
        if learner.platform != PLATFORM or learner.chat_id is None:
            return PushOutcome.BLOCKED  # never reached by DM: reminders are not on
        user_id = int(learner.platform_user_id)
        try:
            user = self.client.get_user(user_id) or await self.client.fetch_user(user_id)
            await self.handlers.deliver(replies, ChannelSink(user), owner=user_id)
        except (discord.Forbidden, discord.NotFound):
            return PushOutcome.BLOCKED
        except (TimeoutError, discord.HTTPException, OSError):
            log.warning("a Discord push failed", exc_info=True)
            return PushOutcome.FAILED
        return PushOutcome.SENT

    # ----- a server's trap of the day (the reminders sweep calls these) --------------------

    def trap_of_the_day(self, guild_id: int | str, now: datetime | None = None) -> str:
        """Today's card for a server, in the server's calendar."""
        config = self.store.get(guild_id)
        now = now or self.engine.clock.now()
        day = local_today(config, now) if config else now.date()
        return trap_of_the_day(self.engine.deck, guild_id, day, config.decks if config else None)

    async def post_due_traps(self, now: datetime | None = None) -> list[tuple[str, PostOutcome]]:
        """Post every server's trap of the day that is owed by ``now``; each once a day."""
        now = now or self.engine.clock.now()
        results = []
        for config in self.store.due(now):
            day = local_today(config, now)
            previous = config.last_posted_on
            if not self.store.claim(config, day):
                continue  # another sweep took it
            outcome = await self.post_trap_of_the_day(
                config, trap_of_the_day(self.engine.deck, config.guild_id, day, config.decks), now=now
            )
            if outcome is PostOutcome.FAILED:
                self.store.release(
                    config, previous, "Discord did not take the post; it will be tried again"
                )
            results.append((config.guild_id, outcome))
        return results

    async def post_trap_of_the_day(
        self, config: DiscordGuild, card_id: str, *, now: datetime | None = None
    ) -> PostOutcome:
        """Post one trap to the server's channel, with an Answer button anyone may press."""
        now = now or self.engine.clock.now()
        day = local_today(config, now)
        reply = self.handlers.trap_of_the_day_reply(card_id, day.strftime("%a %d %b %Y"))
        try:
            channel_id = int(config.channel_id)
            channel = self.client.get_channel(channel_id) or await self.client.fetch_channel(
                channel_id
            )
            message = await self.handlers.deliver([reply], ChannelSink(channel), owner=None)
        except discord.Forbidden:
            self.store.record_error(
                config, "I lack View Channel, Send Messages or Embed Links in the channel"
            )
            return PostOutcome.FORBIDDEN
        except discord.NotFound:
            self.store.record_error(config, "the channel no longer exists")
            return PostOutcome.GONE
        except (TimeoutError, discord.HTTPException, OSError):
            log.warning("posting the trap of the day failed", exc_info=True)
            return PostOutcome.FAILED
        self.store.record_post(config, card_id, getattr(message, "id", None))
        return PostOutcome.POSTED


def _log_gateway_end(task: asyncio.Task[None]) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        log.error("the Discord connection ended: %s", error.__class__.__name__, exc_info=error)
