"""A card from a deck folder (examples/decks/team-traps, written from the template) served
through the real PTB stack against the fake Bot API, with its own picture (issue 41)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cards.deck import Deck, load_decks

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "decks" / "team-traps"
PICTURE = EXAMPLE / "grpo-01-mixed-groups.png"


@pytest.fixture
def test_deck() -> Deck:
    """The example deck alone (this module's deck for ``make_bot``)."""
    return load_decks([EXAMPLE], builtin=None)


async def test_a_deck_card_is_asked_graded_and_shown_with_its_picture(make_bot: Any, gated_plots: Any) -> None:
    bot = await make_bot(sims=gated_plots(b""))  # a simulation service that never has a plot ready
    api = bot.api
    ada = api.user("Ada")
    mark = api.mark()
    api.send_command(ada, "trap")
    question = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "grpo-01" in question.text and "GRPO on prompts the model always fails" in question.text

    mark = api.mark()
    api.send_text(ada, "The advantage is zero in an all-fail group, so only mixed groups teach anything.")
    confirm = await api.wait_for("sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Check my reading" in c.text)
    mark = api.mark()
    api.press(ada, confirm.result, confirm.buttons()[-1][1])  # Confirm
    verdict = await api.wait_for("sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Grade" in c.text)
    assert "Grade 3/5" in verdict.text
    photo = await api.wait_for("sendPhoto", since=mark, chat_id=ada.id)
    assert photo.index > verdict.index
    assert api.photo_bytes(photo) == PICTURE.read_bytes()
    assert "two prompts in three teach nothing" in " ".join(photo.text.split())
