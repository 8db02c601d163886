"""The discord.py client: default intents only, commands synced at login, one router."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord

from bot.discord.commands import build_tree

if TYPE_CHECKING:
    from bot.discord.handlers import DiscordHandlers

log = logging.getLogger(__name__)


def intents() -> discord.Intents:
    """``Intents.default()``: no privileged intent (members, presences, message content)."""
    return discord.Intents.default()


class TrapbotClient(discord.Client):
    def __init__(self, handlers: DiscordHandlers):
        super().__init__(intents=intents(), allowed_mentions=discord.AllowedMentions.none())
        self.handlers = handlers
        self.tree = build_tree(self, handlers)

    async def setup_hook(self) -> None:
        """Register the slash commands with Discord (an idempotent bulk overwrite)."""
        try:
            synced = await self.tree.sync()
        except discord.HTTPException as error:
            log.error(
                "could not register the slash commands (%s): invite the bot with the "
                "applications.commands scope",
                error.status,
            )
        else:
            log.info("registered %d slash commands", len(synced))

    async def on_ready(self) -> None:
        log.info("Discord: logged in to %d servers", len(self.guilds))

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        await self.handlers.route(interaction)

    async def on_message(self, message: discord.Message) -> None:
        await self.handlers.on_direct_message(message)
