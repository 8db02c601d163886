"""The slash commands. Thin: each hands the interaction to ``DiscordHandlers``.

(No ``from __future__ import annotations`` here: discord.py reads these annotations at
runtime to build the commands' options.)
"""

import logging
from functools import lru_cache
from zoneinfo import available_timezones

import discord
from discord import app_commands

from bot.discord import texts
from bot.discord.handlers import DiscordHandlers

log = logging.getLogger(__name__)

CHOICES_MAX = 25


@lru_cache(maxsize=1)
def _zones() -> tuple[str, ...]:
    return tuple(
        sorted(
            zone
            for zone in available_timezones()
            if "/" in zone and not zone.startswith(("Etc/", "SystemV/"))
        )
    )


def timezone_choices(typed: str) -> list[app_commands.Choice[str]]:
    """Up to 25 IANA zones matching what the user typed so far (``berl`` -> Europe/Berlin)."""
    needle = typed.strip().casefold().replace(" ", "_")
    found = (
        [zone for zone in _zones() if needle in zone.casefold()] if needle else ["UTC", *_zones()]
    )
    return [app_commands.Choice(name=zone, value=zone) for zone in found[:CHOICES_MAX]]


def build_tree(client: discord.Client, handlers: DiscordHandlers) -> app_commands.CommandTree:
    """Every slash command, registered on a new tree for ``client``."""
    tree = app_commands.CommandTree(client)

    @tree.command(name="trap", description="Your next trap: due reviews first, then a new one")
    async def trap(interaction: discord.Interaction) -> None:
        await handlers.trap(interaction)

    @tree.command(name="hint", description="A nudge for your open trap")
    async def hint(interaction: discord.Interaction) -> None:
        await handlers.hint(interaction)

    @tree.command(name="skip", description="Put your open trap back for later")
    async def skip(interaction: discord.Interaction) -> None:
        await handlers.skip(interaction)

    @tree.command(
        name="stats",
        description="Your streak, reviews, what is due and mastery per mechanism, with a plot",
    )
    async def stats(interaction: discord.Interaction) -> None:
        await handlers.stats(interaction)

    @tree.command(
        name="settings",
        description="Timezone, push time, DM reminders, new traps a day, interview mode",
    )
    @app_commands.describe(
        timezone="Your timezone: a city, a zone like Europe/Berlin, or UTC+2",
        time="When the daily reminder comes, like 09:00 or 7pm",
        reminders="Daily reminders by direct message",
        new_per_day="How many new traps a day (1-10)",
        interview="Interview mode: a missed core point brings the follow-up question at once",
    )
    async def settings(
        interaction: discord.Interaction,
        timezone: app_commands.Range[str, 1, 64] | None = None,
        time: app_commands.Range[str, 1, 16] | None = None,
        reminders: bool | None = None,
        new_per_day: app_commands.Range[int, 1, 10] | None = None,
        interview: bool | None = None,
    ) -> None:
        await handlers.settings(
            interaction,
            timezone=timezone,
            time=time,
            reminders=reminders,
            new_per_day=new_per_day,
            interview=interview,
        )

    @tree.command(name="undo", description="Take back your last grade")
    async def undo(interaction: discord.Interaction) -> None:
        await handlers.undo(interaction)

    @tree.command(
        name="forget", description="Delete everything trapbot stores about you (asks first)"
    )
    async def forget(interaction: discord.Interaction) -> None:
        await handlers.forget(interaction)

    @tree.command(name="help", description="What trapbot does and its commands")
    async def help_(interaction: discord.Interaction) -> None:
        await handlers.help(interaction)

    @tree.command(
        name="trapbot-setup", description="This server's trap of the day: channel, time, timezone"
    )
    @app_commands.default_permissions(manage_guild=True)
    @app_commands.describe(
        channel="Where the trap of the day is posted",
        time="When it is posted, like 09:00",
        timezone="The server's timezone, like Europe/Berlin",
        enabled="Turn the trap of the day on or off",
        decks="The decks it draws from: names separated by commas, or all",
    )
    async def setup(
        interaction: discord.Interaction,
        channel: discord.TextChannel | None = None,
        time: app_commands.Range[str, 1, 16] | None = None,
        timezone: app_commands.Range[str, 1, 64] | None = None,
        enabled: bool | None = None,
        decks: app_commands.Range[str, 1, 200] | None = None,
    ) -> None:
        await handlers.setup_server(
            interaction, channel=channel, time=time, timezone=timezone, enabled=enabled, decks=decks
        )

    @tree.command(name="leaderboard", description="This server's streaks, for those who join it")
    @app_commands.describe(action="Show the leaderboard, or join or leave it")
    @app_commands.choices(
        action=[
            app_commands.Choice(name="show", value="show"),
            app_commands.Choice(name="join", value="join"),
            app_commands.Choice(name="leave", value="leave"),
        ]
    )
    async def leaderboard(
        interaction: discord.Interaction, action: app_commands.Choice[str] | None = None
    ) -> None:
        await handlers.leaderboard(interaction, action.value if action else "show")

    @settings.autocomplete("timezone")
    @setup.autocomplete("timezone")
    async def complete_timezone(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return timezone_choices(current)

    @tree.error
    async def on_error(
        interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        log.error("a slash command failed", exc_info=error)
        await handlers.notice(interaction, texts.FAILED)

    return tree
