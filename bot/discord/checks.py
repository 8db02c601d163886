"""Where a command may run, and who may configure a server: plain checks, each one message."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import discord


class Place(StrEnum):
    ANYWHERE = "anywhere"
    SERVER = "server"  # needs a server the bot is a member of
    DM = "dm"  # needs a direct message with the bot


#: What the bot needs in the channel it posts a server's trap of the day to.
POST_PERMISSIONS = {
    "view_channel": "View Channel",
    "send_messages": "Send Messages",
    "embed_links": "Embed Links",
}


def place_problem(interaction: Any, needs: Place) -> str | None:
    """Why this interaction is in the wrong place for the command, or None."""
    in_server = interaction.guild_id is not None
    if needs is Place.SERVER:
        if not in_server:
            return "This command works in a server: run it in one of the server's channels."
        if interaction.guild is None:
            return "I am not a member of this server yet: a server admin has to invite me first (see /help)."
    if needs is Place.DM and in_server:
        return "This works in a direct message with me: open my profile and press Message."
    return None


def can_manage_server(permissions: discord.Permissions | None) -> bool:
    """Manage Server (or Administrator): what /trapbot-setup asks of the member."""
    return permissions is not None and bool(permissions.manage_guild or permissions.administrator)


def missing_post_permissions(permissions: discord.Permissions) -> list[str]:
    """The permissions the bot lacks to post the trap of the day, by their names in Discord."""
    if permissions.administrator:
        return []
    return [label for name, label in POST_PERMISSIONS.items() if not getattr(permissions, name)]
