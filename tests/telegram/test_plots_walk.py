"""Every verdict of a walk through the whole deck has its plot: a photo with its caption right
after the verdict, or, for a simulation slower than the verdict, a photo of its own as soon as
the plot is ready. The trap's simulation is started when the trap is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.telegram.handlers import find_card_id
from cards.deck import default_deck
from tests.telegram.flows import graded_trap

PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def every_point(card: Any) -> str:
    """An answer the keyword judge reads as naming every key point."""
    return "My answer: " + "; ".join(" ".join(p.id.split("-")) for p in card.key_points) + "."


async def test_every_verdict_of_the_deck_has_its_plot(
    make_bot: Any, deck_plots: Any, tmp_path: Path
) -> None:
    deck = default_deck()
    try:
        from sims.registry import title
    except ImportError:
        pytest.skip("sims.registry is not there, so plots have no titles")
    slow_sim = deck.cards[1].sim  # the second trap's simulation outlasts its verdict
    plots = deck_plots(tmp_path / "plots", PNG_1x1, slow=frozenset({slow_sim}))
    bot = await make_bot(sims=plots, deck=deck, new_per_day=len(deck.cards), plot_wait_seconds=0.2)
    api = bot.api
    ada = api.user("Ada")
    seen: list[str] = []
    for _ in deck.cards:
        mark = api.mark()
        api.send_command(ada, "trap")
        question = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
        card_id = find_card_id(question.text, deck)
        assert card_id is not None and card_id not in seen, question.text[:80]
        seen.append(card_id)
        card = deck.get(card_id)
        assert plots.prefetched[-1] == card.sim  # computing while the learner types

        mark = api.mark()
        api.send_text(ada, every_point(card))
        confirm = await api.wait_for(
            "sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Check my reading" in c.text
        )
        mark = api.mark()
        api.press(ada, confirm.result, next(d for _, d in confirm.buttons() if d.startswith("t1:ok:")))
        verdict = await api.wait_for(
            "sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Grade" in c.text
        )
        if card.sim == slow_sim and not plots.release.is_set():
            await api.wait_for("editMessageReplyMarkup", since=mark, chat_id=ada.id)
            assert api.calls_since(mark, "sendPhoto") == [], "the slow plot is not ready yet"
            plots.release.set()
        photo = await api.wait_for("sendPhoto", since=verdict.index, chat_id=ada.id)
        assert api.photo_bytes(photo) == PNG_1x1
        assert title(card.sim) in photo.text, (card_id, photo.text[:80])
    assert sorted(seen) == sorted(c.id for c in deck.cards)
    assert len(seen) == 26


async def test_a_plot_that_cannot_be_made_is_said(make_bot: Any, tmp_path: Path) -> None:
    class Failing:
        async def plot_for(self, sim_id: str, wait_seconds: float | None = 3.0) -> Any:
            return None  # the service's answer when the simulation failed

    bot = await make_bot(sims=Failing(), plot_wait_seconds=0.05)
    api = bot.api
    ada = api.user("Ada")
    verdict = await graded_trap(api, ada, "a proxy, not the goal")
    said = await api.wait_for(
        "sendMessage", since=verdict.index, chat_id=ada.id, where=lambda c: "plot" in c.text
    )
    assert "could not be made" in said.text
