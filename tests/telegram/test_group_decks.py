"""A Telegram group's decks (issue 41, "Choosing decks"), through the real PTB stack against the
loopback Bot API: an admin picks them with /decks, /trap and "Next trap" in the group draw only
from them while private chats keep each member's own, a member who is not an admin cannot
change them, a button from an older deck list says it no longer applies, and the choice
follows the group when it becomes a supergroup."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from bot.actions import Action, Verb
from bot.groups import ONLY_ADMINS, deck_tag
from bot.models import GroupChat
from cards.deck import DECK_DIR, Deck, load_decks

ANSWER = "It is a proxy, not the goal, and overoptimization follows."


def _deck_folder(folder: Path, ids: list[str]) -> Path:
    source = (DECK_DIR / "rl-08.md").read_text(encoding="utf-8")
    folder.mkdir(parents=True)
    for card_id in ids:
        (folder / f"{card_id}.md").write_text(re.sub(r"^id: rl-08$", f"id: {card_id}", source, count=1, flags=re.MULTILINE), encoding="utf-8")
    return folder


@pytest.fixture
def test_deck(tmp_path: Path) -> Deck:
    """Two decks, ``alpha`` first: a learner on every deck meets alpha-01 first."""
    return load_decks(
        [_deck_folder(tmp_path / "alpha", ["alpha-01", "alpha-02"]), _deck_folder(tmp_path / "beta", ["beta-01", "beta-02"])],
        builtin=None,
    )


def stored(engine: Any, chat_id: int) -> GroupChat | None:
    with Session(engine.db) as session:
        return session.exec(select(GroupChat).where(GroupChat.chat_id == str(chat_id))).first()


async def decks_list(api: Any, person: Any, group: dict[str, Any]) -> Any:
    mark = api.mark()
    api.send_command(person, "decks", chat=group, address_bot=True)
    return await api.wait_for("sendMessage", since=mark, chat_id=group["id"], where=lambda c: "This group's decks" in c.text)


async def press_and_answer(api: Any, person: Any, message: dict[str, Any], data: str) -> dict[str, Any]:
    mark = api.mark()
    query = api.press(person, message, data)
    await api.wait_for("answerCallbackQuery", since=mark)
    return api.callback_answers[query]


async def test_an_admin_picks_the_groups_decks_and_trap_there_draws_only_from_them(make_bot: Any) -> None:
    bot = await make_bot(new_per_day=3)
    api, engine = bot.api, bot.engine
    group = api.group()
    olga, bob = api.user("Olga"), api.user("Bob")
    api.make_admin(group, olga, owner=True)

    # Anyone sees the group's decks; every deck until an admin chooses.
    listing = await decks_list(api, bob, group)
    assert "✓ alpha (alpha): 2 traps" in listing.text and "✓ beta (beta): 2 traps" in listing.text
    alpha_button, beta_button = (data for _, data in listing.buttons())
    assert [label for label, _ in listing.buttons()] == ["✓ alpha", "✓ beta"]

    # Bob is no admin: a short alert to him alone, nothing stored, nothing sent to the group.
    mark = api.mark()
    refused = await press_and_answer(api, bob, listing.result, alpha_button)
    assert refused == {"text": ONLY_ADMINS, "show_alert": True}
    assert stored(engine, group["id"]) is None
    assert api.calls_since(mark, "sendMessage") == [] and api.calls_since(mark, "editMessageText") == []

    # Olga drops alpha: the list is redrawn in place.
    mark = api.mark()
    saved = await press_and_answer(api, olga, listing.result, alpha_button)
    assert saved == {"text": "Saved.", "show_alert": False}
    edit = await api.wait_for("editMessageText", since=mark, chat_id=group["id"])
    assert edit.params["message_id"] == listing.result["message_id"]
    assert [label for label, _ in edit.buttons()] == ["Add alpha", "✓ beta"]
    assert "· alpha (alpha)" in edit.text and "✓ beta (beta)" in edit.text
    row = stored(engine, group["id"])
    assert row is not None and row.decks == ["beta"] and row.updated_by == str(olga.id)

    # Dropping the last deck is refused.
    refused = await press_and_answer(api, olga, api.message(group["id"], listing.result["message_id"]), beta_button)
    assert refused["show_alert"] and "only deck" in refused["text"]
    assert stored(engine, group["id"]).decks == ["beta"]

    # Bob studies alpha alone; his /trap in the group still brings beta's first card.
    mark = api.mark()
    api.send_command(bob, "settings", "decks alpha")
    await api.wait_for("sendMessage", since=mark, chat_id=bob.id, where=lambda c: "Saved" in c.text)
    mark = api.mark()
    api.send_command(bob, "trap", chat=group, address_bot=True)
    question = await api.wait_for("sendMessage", since=mark, chat_id=group["id"])
    assert "beta-01" in question.text
    mark = api.mark()
    api.send_text(bob, ANSWER, chat=group, reply_to=question.result)
    confirm = await api.wait_for("sendMessage", since=mark, chat_id=group["id"], where=lambda c: "Check my reading" in c.text)
    mark = api.mark()
    api.press(bob, confirm.result, confirm.buttons()[-1][1])  # Confirm
    verdict = await api.wait_for("sendMessage", since=mark, chat_id=group["id"], where=lambda c: "Grade" in c.text)
    # "Next trap" pressed in the group draws from the group's decks too.
    mark = api.mark()
    api.press(bob, verdict.result, Action(Verb.NEXT).encode())
    following = await api.wait_for("sendMessage", since=mark, chat_id=group["id"], where=lambda c: "Answer in a message" in c.text)
    assert "beta-02" in following.text

    # In private, Bob's own decks apply: alpha's first card (beta-02, open in the group, waits there).
    mark = api.mark()
    api.send_command(bob, "trap")
    private = await api.wait_for("sendMessage", since=mark, chat_id=bob.id)
    assert "alpha-01" in private.text

    # An admin adds alpha back: every deck again, stored as "all" (so decks loaded later count too).
    relisted = await decks_list(api, olga, group)
    assert [label for label, _ in relisted.buttons()] == ["Add alpha", "✓ beta"]
    await press_and_answer(api, olga, relisted.result, relisted.buttons()[0][1])
    assert stored(engine, group["id"]).decks is None


async def test_a_button_from_an_older_deck_list_says_it_no_longer_applies(make_bot: Any) -> None:
    bot = await make_bot()
    api, engine = bot.api, bot.engine
    group = api.group()
    olga = api.user("Olga")
    api.make_admin(group, olga)
    listing = await decks_list(api, olga, group)
    # The list was sent while a deck "gamma" sat second (its folder has since been removed),
    # and a list from when there were more decks than now.
    for arg in (f"1.{deck_tag('gamma')}", f"5.{deck_tag('beta')}"):
        mark = api.mark()
        query = api.press(olga, listing.result, Action(Verb.GROUP_DECK, arg=arg).encode(), check=False)
        await api.wait_for("answerCallbackQuery", since=mark)
        answer = api.callback_answers[query]
        assert answer["show_alert"] and answer["text"].startswith("That button no longer applies: the loaded decks have changed")
        assert "send /decks" in answer["text"]
    assert stored(engine, group["id"]) is None
    # A group deck button pressed in a private chat is no group's.
    mark = api.mark()
    elsewhere = {"message_id": 1, "date": 1, "chat": api.private_chat(olga), "from": api.bot_user, "text": "a list"}
    query = api.press(olga, elsewhere, listing.buttons()[0][1], check=False)
    await api.wait_for("answerCallbackQuery", since=mark)
    assert api.callback_answers[query] == {"text": "That button belongs to a group's deck list.", "show_alert": True}


async def test_an_anonymous_admin_sees_the_list_and_private_decks_are_the_learners(make_bot: Any) -> None:
    bot = await make_bot()
    api = bot.api
    group = api.group()
    # An anonymous admin writes as the group itself (Telegram's GroupAnonymousBot).
    mark = api.mark()
    api.enqueue(
        message={
            "message_id": 9001,
            "from": {"id": 1087968824, "is_bot": True, "first_name": "Group", "username": "GroupAnonymousBot"},
            "sender_chat": group,
            "chat": group,
            "date": 1,
            "text": "/decks",
            "entities": [{"type": "bot_command", "offset": 0, "length": 6}],
        }
    )
    listing = await api.wait_for("sendMessage", since=mark, chat_id=group["id"])
    assert "This group's decks" in listing.text and len(listing.buttons()) == 2
    # In private, /decks is the learner's own choice, with the settings toggles.
    ada = api.user("Ada")
    mark = api.mark()
    api.send_command(ada, "decks")
    own = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "Your decks" in own.text and "Decks: all: alpha (alpha), beta (beta)" in own.text
    assert [label for label, _ in own.buttons()] == ["✓ alpha", "✓ beta"]
    assert all(data.startswith("t1:set:") for _, data in own.buttons())
    # /settings in a group says which decks apply there.
    mark = api.mark()
    api.send_command(ada, "settings", chat=group, address_bot=True)
    settings = await api.wait_for("sendMessage", since=mark, chat_id=group["id"])
    assert "Your settings" in settings.text and "In this group, /trap draws from the group's decks (/decks)" in settings.text


async def test_the_groups_decks_follow_it_when_it_becomes_a_supergroup(make_bot: Any) -> None:
    bot = await make_bot()
    api, engine = bot.api, bot.engine
    group = api.group(basic=True)
    olga, bob = api.user("Olga"), api.user("Bob")
    api.make_admin(group, olga, owner=True)
    listing = await decks_list(api, olga, group)
    await press_and_answer(api, olga, listing.result, listing.buttons()[0][1])  # drop alpha
    assert stored(engine, group["id"]).decks == ["beta"]
    supergroup = api.migrate(group)
    for _ in range(250):  # the service messages run on their own turn: wait for the move
        if stored(engine, supergroup["id"]) is not None:
            break
        await asyncio.sleep(0.02)
    mark = api.mark()
    api.send_command(bob, "trap", chat=supergroup, address_bot=True)
    question = await api.wait_for("sendMessage", since=mark, chat_id=supergroup["id"])
    assert "beta-01" in question.text
    assert stored(engine, group["id"]) is None and stored(engine, supergroup["id"]).decks == ["beta"]
