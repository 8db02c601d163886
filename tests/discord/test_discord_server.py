"""A server's trap of the day and leaderboard, the transport's pushes, and how it starts."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta

import discord
import pytest
from sqlmodel import Session, select

from bot.actions import Action, Verb
from bot.app import build_transports
from bot.config import Settings
from bot.discord.client import TrapbotClient
from bot.discord.custom_ids import ButtonId
from bot.discord.guilds import trap_of_the_day
from bot.discord.models import DiscordLeaderboardMember
from bot.discord.transport import DiscordTransport, PostOutcome
from bot.models import CardState, Learner
from bot.reminders import ReminderSweeper
from bot.transport import PushOutcome
from cards.deck import DECK_DIR, load_deck

MANAGER = discord.Permissions(manage_guild=True)


def test_the_trap_of_the_day_is_deterministic_and_walks_the_whole_deck() -> None:
    deck = load_deck(DECK_DIR)
    start = date(2026, 3, 2)
    days = [start + timedelta(days=offset) for offset in range(len(deck))]
    picks = [trap_of_the_day(deck, 4242, day) for day in days]
    assert sorted(picks) == sorted(card.id for card in deck), "every card once before any repeats"
    assert picks == [trap_of_the_day(deck, "4242", day) for day in days]
    assert trap_of_the_day(deck, 4242, start + timedelta(days=len(deck))) == picks[0]
    others = [trap_of_the_day(deck, guild, start) for guild in range(1, 40)]
    assert len(set(others)) > 1, "servers start at different places"


async def setup_command(rig, user, **options):
    return await rig.command("trapbot-setup", user, **options)


async def test_setup_needs_manage_server_and_a_channel_the_bot_can_post_in(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]
    guild_id = rig.guild.id

    refused = await setup_command(rig, ada, channel=rig.channel, time="09:30")
    assert "Manage Server" in refused.text and rig.handlers.store.get(guild_id) is None

    rig.channel.permissions = discord.Permissions(view_channel=True, send_messages=True)
    blind = await setup_command(rig, ada, channel=rig.channel, time="09:30", permissions=MANAGER)
    assert "**Embed Links**" in blind.text and rig.channel.mention in blind.text
    assert rig.handlers.store.get(guild_id) is None

    rig.channel.permissions = discord.Permissions(
        view_channel=True, send_messages=True, embed_links=True
    )
    wrong_time = await setup_command(
        rig, ada, channel=rig.channel, time="25:00", permissions=MANAGER
    )
    assert "00:00 to 23:59" in wrong_time.text and rig.handlers.store.get(guild_id) is None

    missing_time = await setup_command(rig, ada, channel=rig.channel, permissions=MANAGER)
    assert "Pick a channel and a time" in missing_time.text

    done = await setup_command(
        rig, ada, channel=rig.channel, time="9:30", timezone="Berlin", permissions=MANAGER
    )
    config = rig.handlers.store.get(guild_id)
    assert (config.channel_id, config.post_time.strftime("%H:%M"), config.timezone) == (
        "555",
        "09:30",
        "Europe/Berlin",
    )
    assert "<#555>" in done.text and "09:30 (Europe/Berlin)" in done.text and done.last.ephemeral

    status = await setup_command(rig, ada, permissions=MANAGER)
    assert "<#555>" in status.text and "not posted yet" in status.text

    off = await setup_command(rig, ada, enabled=False, permissions=MANAGER)
    assert "is off" in off.text and rig.handlers.store.get(guild_id).enabled is False


async def test_the_trap_of_the_day_is_posted_once_and_answered_privately(
    make_rig, make_transport
) -> None:
    transport, rig, client = make_transport()
    client.channels[rig.channel.id] = rig.channel
    ada, bob = rig.users["ada"], rig.users["bob"]
    await setup_command(
        rig, ada, channel=rig.channel, time="09:30", timezone="Europe/Berlin", permissions=MANAGER
    )

    assert await transport.post_due_traps() == [], "08:00 UTC is 09:00 in Berlin: not yet"
    rig.clock.advance(minutes=31)
    assert await transport.post_due_traps() == [(str(rig.guild.id), PostOutcome.POSTED)]
    assert await transport.post_due_traps() == [], "once a day"
    [post] = rig.channel.posts
    card_id = transport.trap_of_the_day(rig.guild.id)
    assert post.custom_id("Answer") == ButtonId(Action(Verb.ANSWER, arg=card_id), None).encode()
    assert rig.engine.deck.get(card_id).title in post.text and post.ephemeral is None

    press = await rig.press(post, "Answer", bob)
    assert press.events == ["modal"]
    graded = await rig.submit(press.modal, "proxy-not-goal", bob)
    assert graded.deferred_ephemeral is True and "Grade" in graded.text
    with Session(rig.engine.db) as session:
        learner = session.exec(select(Learner).where(Learner.platform_user_id == str(bob.id))).one()
        state = session.exec(select(CardState).where(CardState.learner_id == learner.id)).one()
    assert state.card_id == card_id and state.last_reviewed_on is not None, (
        "bob is scheduled on his own"
    )

    rig.clock.advance(days=1)
    assert await transport.post_due_traps() == [(str(rig.guild.id), PostOutcome.POSTED)]
    assert rig.channel.posts[-1].custom_id("Answer") != post.custom_id("Answer")


async def test_a_post_that_fails_is_reported_or_retried(make_rig, make_transport, fakes) -> None:
    transport, rig, client = make_transport()
    client.channels[rig.channel.id] = rig.channel
    ada = rig.users["ada"]
    await setup_command(rig, ada, channel=rig.channel, time="08:00", permissions=MANAGER)

    rig.channel.send_error = fakes.http_error(discord.HTTPException, 500)
    assert await transport.post_due_traps() == [(str(rig.guild.id), PostOutcome.FAILED)]
    rig.channel.send_error = None
    assert await transport.post_due_traps() == [(str(rig.guild.id), PostOutcome.POSTED)], (
        "a transient failure is retried"
    )

    rig.clock.advance(days=1)
    rig.channel.send_error = fakes.http_error(discord.Forbidden, 403, 50013)
    assert await transport.post_due_traps() == [(str(rig.guild.id), PostOutcome.FORBIDDEN)]
    assert await transport.post_due_traps() == [], "not hammered the same day"
    status = await setup_command(rig, ada, permissions=MANAGER)
    assert "The last post failed" in status.text and "Send Messages" in status.text

    rig.clock.advance(days=1)
    del client.channels[rig.channel.id]
    assert await transport.post_due_traps() == [(str(rig.guild.id), PostOutcome.GONE)]


async def test_leaderboard_is_opt_in(make_rig) -> None:
    rig = make_rig()
    ada, bob = rig.users["ada"], rig.users["bob"]
    carol = rig.users["carol"] = type(ada)(1003, "Carol")
    trap = await rig.command("trap", ada)
    press = await rig.press(trap.last, "Answer", ada)
    await rig.submit(press.modal, "proxy-not-goal", ada)
    await rig.command("trap", carol)

    await rig.command("leaderboard", ada, action=_choice("join"))
    await rig.command("leaderboard", bob, action=_choice("join"))
    shown = await rig.command("leaderboard", carol)
    assert shown.deferred_ephemeral is False
    lines = shown.last.embeds[0].description.split("\n")
    assert lines[:2] == ["1. Ada: 1 day", "2. Bob: 0 days"] and "Carol" not in shown.text

    await rig.command("leaderboard", bob, action=_choice("leave"))
    assert "Bob" not in (await rig.command("leaderboard", ada)).text

    confirm = (await rig.command("forget", ada)).last
    await rig.press(confirm, "Delete everything", ada)
    with Session(rig.engine.db) as session:
        assert session.exec(select(DiscordLeaderboardMember)).all() == []


def _choice(value: str) -> discord.app_commands.Choice[str]:
    return discord.app_commands.Choice(name=value, value=value)


# ----- the transport ---------------------------------------------------------------------


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_push_by_dm_and_its_outcomes(make_transport, fakes) -> None:
    transport, rig, client = make_transport()
    ada, bob = rig.users["ada"], rig.users["bob"]
    client.users[ada.id] = ada
    await rig.command("trap", ada, in_dm=True)
    learner = rig.engine.learner("discord", ada.id)

    replies = await rig.engine.push_replies(learner.id)
    assert await transport.push(learner, replies) == PushOutcome.SENT
    [dm] = ada.dms
    assert [b["label"] for b in dm.buttons][:2] == ["Answer now", "Hint"]
    assert dm.custom_id("Answer now").startswith(f"trapbot:{ada.id}:")

    ada.dms_open = False
    assert await transport.push(learner, replies) == PushOutcome.BLOCKED

    server_only = rig.engine.learner("discord", bob.id)
    calls = list(client.calls)
    assert await transport.push(server_only, replies) == PushOutcome.BLOCKED
    assert client.calls == calls, "no request for a learner who never opened a DM"

    gone = rig.engine.learner("discord", 4040, chat_id=4040)
    assert await transport.push(gone, replies) == PushOutcome.BLOCKED

    ada.dms_open = True
    ada.send = _failing_send(fakes.http_error(discord.HTTPException, 503))
    assert await transport.push(learner, replies) == PushOutcome.FAILED


def _failing_send(error: Exception):
    async def send(**kwargs):
        raise error

    return send


async def test_the_daily_sweep_pushes_dm_learners_only(make_transport) -> None:
    transport, rig, client = make_transport()
    ada, bob = rig.users["ada"], rig.users["bob"]
    client.users.update({ada.id: ada, bob.id: bob})
    await rig.command("trap", ada, in_dm=True)
    await rig.command("trap", bob)  # met in a server only
    rig.clock.advance(hours=1, minutes=1)  # past 09:00 UTC, the default push time
    report = await ReminderSweeper(rig.engine, {"discord": transport}).sweep()
    assert report.sent == 1 and len(ada.dms) == 1 and bob.dms == []


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_start_and_stop_on_the_shared_loop(make_transport) -> None:
    transport, rig, client = make_transport()
    await transport.start()
    await asyncio.sleep(0)
    assert client.calls == ["login", "connect"]
    await transport.stop()
    assert client.calls[-1] == "close" and transport._connection.done()

    no_token = DiscordTransport(rig.engine, Settings(_env_file=None), client=client)  # type: ignore[call-arg]
    with pytest.raises(RuntimeError, match="DISCORD_BOT_TOKEN"):
        await no_token.start()


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_the_real_client_asks_for_no_privileged_intent(make_rig) -> None:
    rig = make_rig()
    [transport] = build_transports(Settings(discord_bot_token="x", _env_file=None), rig.engine)  # type: ignore[call-arg]
    assert isinstance(transport, DiscordTransport) and transport.platform == "discord"
    client = transport.client
    assert isinstance(client, TrapbotClient)
    assert client.intents == discord.Intents.default()
    assert not (
        client.intents.members or client.intents.presences or client.intents.message_content
    )
    names = {command.name for command in client.tree.get_commands()}
    assert names == {
        "trap",
        "hint",
        "skip",
        "stats",
        "settings",
        "undo",
        "forget",
        "help",
        "trapbot-setup",
        "leaderboard",
    }
    setup = client.tree.get_command("trapbot-setup")
    assert setup.default_permissions == discord.Permissions(manage_guild=True)
