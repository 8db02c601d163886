"""Decks on Discord (issue 41): a card from a deck folder (written from the template) answered
in the form and shown with its own picture; a server's trap of the day draws from the decks its
setup picks."""

from __future__ import annotations

from pathlib import Path

import discord
import pytest

from bot.discord.guilds import trap_of_the_day
from cards.deck import Deck, load_decks

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "decks" / "team-traps"
PICTURE = EXAMPLE / "grpo-01-mixed-groups.png"
MANAGER = discord.Permissions(manage_guild=True)


@pytest.fixture
def plot_deck() -> Deck:
    """The built-in deck and the example deck (this module's deck for ``make_rig``)."""
    return load_decks([EXAMPLE])


async def test_a_deck_card_is_answered_and_shown_with_its_picture(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]
    learner = rig.engine.learner("discord", ada.id)
    await rig.engine.update_settings(learner.id, "decks", "team-traps")

    trap = await rig.command("trap", ada)
    question = trap.last
    assert "grpo-01" in question.text and "GRPO on prompts the model always fails" in question.text
    form = (await rig.press(question, "Answer", ada)).modal
    submitted = await rig.submit(form, "My answer: zero-advantage; only-mixed-groups; keep-groups-mixed.", ada)
    verdict = submitted.last
    assert "Grade " in verdict.text and "grpo-01" in verdict.text
    assert list(verdict.files.values()) == [PICTURE.read_bytes()]
    [name] = verdict.files
    assert verdict.embeds[-1].image.url == f"attachment://{name}"
    assert rig.plots.png_path.exists() is False or rig.plots.png_path.read_bytes() != PICTURE.read_bytes()


async def test_the_trap_of_the_day_draws_from_the_decks_its_setup_picks(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]
    rig.channel.permissions = discord.Permissions(view_channel=True, send_messages=True, embed_links=True)
    refused = await rig.command(
        "trapbot-setup", ada, channel=rig.channel, time="09:30", decks="no-such-deck", permissions=MANAGER
    )
    assert "no deck 'no-such-deck'" in refused.text and rig.handlers.store.get(rig.guild.id) is None
    done = await rig.command(
        "trapbot-setup", ada, channel=rig.channel, time="09:30", decks="team-traps", permissions=MANAGER
    )
    config = rig.handlers.store.get(rig.guild.id)
    assert config.decks == ["team-traps"] and "Decks: team-traps." in done.text
    assert "GRPO on prompts the model always fails" in done.text  # today's trap, from that deck
    # Kept when the setup changes something else; "all" goes back to every deck.
    await rig.command("trapbot-setup", ada, time="10:00", permissions=MANAGER)
    assert rig.handlers.store.get(rig.guild.id).decks == ["team-traps"]
    await rig.command("trapbot-setup", ada, decks="all", permissions=MANAGER)
    assert rig.handlers.store.get(rig.guild.id).decks is None


def test_trap_of_the_day_walks_only_the_chosen_decks(plot_deck: Deck) -> None:
    from datetime import date, timedelta

    days = [date(2026, 3, 2) + timedelta(days=n) for n in range(30)]
    assert {trap_of_the_day(plot_deck, 7, day, ["team-traps"]) for day in days} == {"grpo-01"}
    assert len({trap_of_the_day(plot_deck, 7, day, None) for day in days}) > 1
    # A removed deck's name falls back to every loaded deck rather than an empty server.
    assert trap_of_the_day(plot_deck, 7, days[0], ["gone"]) in plot_deck
