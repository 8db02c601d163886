"""Input the bot must survive: stickers, photos, voice, edits, a 20,000-character message,
junk command arguments, stale or forged buttons, strangers. A clear reply or a quiet ignore,
never a crash, nothing lost or graded twice."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, select

from bot.models import Review, ReviewStatus


def reviews(engine: Any) -> list[Review]:
    with Session(engine.db) as session:
        return list(session.exec(select(Review).order_by(Review.id)))


async def open_trap(api: Any, person: Any) -> Any:
    mark = api.mark()
    api.send_command(person, "trap")
    return await api.wait_for("sendMessage", since=mark, chat_id=person.id)


async def settle(api: Any, person: Any, chat: Any = None) -> int:
    """Send /help and wait for it: every earlier update of this user has been handled."""
    mark = api.mark()
    api.send_command(person, "help", chat=chat)
    call = await api.wait_for("sendMessage", since=mark, where=lambda c: "Commands" in c.text)
    return call.index


async def test_non_text_messages(running_bot: Any) -> None:
    api, engine = running_bot.api, running_bot.engine
    ada = api.user("Ada")
    question = await open_trap(api, ada)
    for kind in ("sticker", "photo", "voice", "document", "location"):
        mark = api.mark()
        api.send_content(ada, kind)
        reply = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
        assert "text only" in reply.text, kind
    assert reviews(engine) == []

    # In a group: silence, unless it replies to a trap.
    group = api.group()
    mark = api.mark()
    api.send_content(ada, "sticker", chat=group)
    api.send_content(ada, "voice", chat=group)
    done = await settle(api, ada, group)
    assert [c for c in api.calls_since(mark, "sendMessage") if c.index != done] == []
    # The trap stays open through all of it: an answer is still accepted.
    mark = api.mark()
    api.send_text(ada, "a proxy, not the goal", reply_to=question.result)
    await api.wait_for(
        "sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Check my reading" in c.text
    )
    assert len(reviews(engine)) == 1


async def test_an_edited_answer_is_not_graded_again(running_bot: Any) -> None:
    api, engine = running_bot.api, running_bot.engine
    ada = api.user("Ada")
    await open_trap(api, ada)
    mark = api.mark()
    answer = api.send_text(ada, "the reward is a proxy, not the goal")
    await api.wait_for(
        "sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Check my reading" in c.text
    )
    mark = api.mark()
    api.edit_text(
        ada, answer, "the reward is a proxy, not the goal, and KL keeps it in distribution"
    )
    note = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "not graded again" in note.text
    [review] = reviews(engine)
    assert review.answer == "the reward is a proxy, not the goal"

    # An edited command does not run again either.
    command = api.send_command(ada, "forget")
    await api.wait_for(
        "sendMessage", since=mark, chat_id=ada.id, where=lambda c: "cannot be undone" in c.text
    )
    mark = api.mark()
    api.edit_text(ada, command, "/forget")
    done = await settle(api, ada)
    assert [c for c in api.calls_since(mark, "sendMessage") if c.index != done] == []


async def test_a_long_message_split_by_telegram_is_one_answer(running_bot: Any) -> None:
    api, engine = running_bot.api, running_bot.engine
    ada = api.user("Ada")
    await open_trap(api, ada)

    # 6,000 characters arrive as two messages: graded once, as one answer.
    body = ("The reward is a proxy, not the goal. " * 200)[:6000]
    parts = [body[:4096], body[4096:]]
    mark = api.mark()
    for part in parts:
        api.send_text(ada, part)
    await api.wait_for(
        "sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Check my reading" in c.text
    )
    done = await settle(api, ada)
    [review] = reviews(engine)
    assert review.answer == "\n".join(part.strip() for part in parts)
    readings = [c for c in api.calls_since(mark, "sendMessage") if "Check my reading" in c.text]
    assert len(readings) == 1 and done > readings[0].index

    # 20,000 characters in five parts: one clear refusal, nothing stored, nothing graded.
    long = "x" * 20_000
    mark = api.mark()
    for start in range(0, len(long), 4096):
        api.send_text(ada, long[start : start + 4096])
    refusal = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "limit is 8,000" in refusal.text and "nothing was stored" in refusal.text
    done = await settle(api, ada)
    assert [c.index for c in api.calls_since(mark, "sendMessage")] == [refusal.index, done]
    assert len(reviews(engine)) == 1


async def test_junk_commands_and_arguments(running_bot: Any) -> None:
    api = running_bot.api
    ada = api.user("Ada")
    mark = api.mark()
    api.send_command(ada, "frobnicate", "now")
    unknown = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "/frobnicate" in unknown.text and "/help" in unknown.text

    for command, args in (
        ("trap", "please now 123"),
        ("hint", "x" * 3000),
        ("stats", "<b>"),
        ("undo", "&&&"),
    ):
        mark = api.mark()
        api.send_command(ada, command, args)
        reply = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
        assert reply.ok and reply.text

    mark = api.mark()
    api.send_command(ada, "settings", "timezone <script>&amp;" + "z" * 500)
    refused = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "Send a city" in refused.text and "Saved" not in refused.text

    # Another bot's command in a group is ignored; ours with its @name works there.
    group = api.group()
    mark = api.mark()
    api.send_text(ada, "/trap@some_other_bot", chat=group)
    api.send_text(ada, "/frobnicate", chat=group)
    done = await settle(api, ada, group)
    assert [c.index for c in api.calls_since(mark, "sendMessage")] == [done]


async def test_stale_and_forged_buttons(running_bot: Any) -> None:
    api, engine = running_bot.api, running_bot.engine
    ada, bob = api.user("Ada"), api.user("Bob")
    await open_trap(api, ada)
    mark = api.mark()
    api.send_text(ada, "the reward is a proxy, not the goal")
    confirm = await api.wait_for(
        "sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Check my reading" in c.text
    )
    confirm_data = next(d for _, d in confirm.buttons() if d.startswith("t1:ok:"))
    mark = api.mark()
    api.press(ada, confirm.result, confirm_data)
    await api.wait_for("sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Grade" in c.text)

    for forged in (
        confirm_data,
        "t1:ok:abc:-",
        "garbage",
        "t1:rate:1:9",
        "t9:next:-:-",
        "t1:ans:-:rl-00",
        "€" * 30,
    ):
        mark = api.mark()
        query = api.press(ada, confirm.result, forged, check=False)
        await api.wait_for("answerCallbackQuery", since=mark)
        answer = api.callback_answers[query]
        assert answer["show_alert"] and answer["text"], forged
        assert api.calls_since(mark, "sendMessage") == [], forged
    [review] = reviews(engine)
    assert review.status == ReviewStatus.GRADED  # graded once, however often the button came back

    # A stranger who never wrote to the bot presses Ada's button.
    mark = api.mark()
    query = api.press(bob, confirm.result, confirm_data, check=False)
    await api.wait_for("answerCallbackQuery", since=mark)
    assert api.callback_answers[query]["show_alert"]


async def test_strangers_and_unknown_chats(running_bot: Any) -> None:
    api, engine = running_bot.api, running_bot.engine
    # A first message without /start: a clear pointer, no crash.
    zed = api.user("Zed")
    mark = api.mark()
    api.send_text(zed, "what is this bot?")
    reply = await api.wait_for("sendMessage", since=mark, chat_id=zed.id)
    assert "/trap" in reply.text
    assert [b for _, b in reply.buttons()] == ["t1:next:-:-"]

    # Chatter in a group the bot has never seen is ignored.
    group = api.group("never seen")
    mark = api.mark()
    api.send_text(zed, "hello everyone", chat=group)
    done = await settle(api, zed, group)
    assert [c.index for c in api.calls_since(mark, "sendMessage")] == [done]
    assert reviews(engine) == []


async def test_setup_input_after_start(running_bot: Any) -> None:
    api = running_bot.api
    ada = api.user("Ada")
    mark = api.mark()
    api.send_command(ada, "start")
    await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    mark = api.mark()
    api.send_text(ada, "somewhere nice")
    unread = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "neither a place nor a time" in unread.text
    mark = api.mark()
    api.send_text(ada, "UTC+2")
    saved = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "Etc/GMT-2" in saved.text
    assert [label for label, _ in saved.buttons()] == ["Give me a trap now"]
