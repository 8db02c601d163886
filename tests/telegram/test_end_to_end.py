"""A learner's whole path through the real PTB stack against the fake Bot API.

/start and its settings, a trap, a hint, an answer (typing, then the confirm message), ticking a
point (edited in place), the verdict with the simulation's plot, the SM-2 schedule and the
scheduled review arriving as a push, "I disagree", /undo, /settings, /stats and /forget.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlmodel import Session, select

from bot.models import CardState, Learner, Review, ReviewStatus
from bot.transport import PushOutcome

EXPERT = (
    "No. The reward is a proxy, not the goal: a learned reward model. The KL term keeps the policy in "
    "distribution where the reward model is accurate; without it we get overoptimization, degenerate "
    "outputs, so what to do: reject it and keep beta."
)
PARTIAL = "The reward is a proxy, not the goal; the policy will overoptimization it, degenerate text follows."


async def reply_to(
    api: Any, since: int, chat_id: int, method: str = "sendMessage", **where: Any
) -> Any:
    """The bot's next call of ``method`` to ``chat_id`` since the mark ``since``."""
    contains = where.pop("containing", None)
    return await api.wait_for(
        method,
        since=since,
        chat_id=chat_id,
        where=(lambda call: contains in call.text) if contains else None,
    )


def learner_row(engine: Any, user_id: int) -> Learner | None:
    with Session(engine.db) as session:
        return session.exec(
            select(Learner).where(
                Learner.platform == "telegram", Learner.platform_user_id == str(user_id)
            )
        ).first()


def reviews_of(engine: Any, learner_id: int) -> list[Review]:
    with Session(engine.db) as session:
        return list(
            session.exec(select(Review).where(Review.learner_id == learner_id).order_by(Review.id))
        )


def state_of(engine: Any, learner_id: int, card_id: str) -> CardState | None:
    with Session(engine.db) as session:
        return session.exec(
            select(CardState).where(
                CardState.learner_id == learner_id, CardState.card_id == card_id
            )
        ).first()


def data_for_message(message: dict[str, Any], label_start: str) -> str:
    """The callback data of a stored message's button whose label starts with ``label_start``."""
    for row in message.get("reply_markup", {}).get("inline_keyboard", []):
        for button in row:
            if button["text"].startswith(label_start):
                return button["callback_data"]
    raise AssertionError(f"no button {label_start!r} on message {message.get('message_id')}")


def data_for(call: Any, label_start: str) -> str:
    """The callback data of the button whose label starts with ``label_start``."""
    for label, data in call.buttons():
        if label.startswith(label_start):
            return data
    raise AssertionError(f"no button {label_start!r} in {call.buttons()}")


async def test_start_to_graded_answer_with_plot_and_scheduled_review(
    running_bot: Any, sim_cache: Any
) -> None:
    api, engine, clock = running_bot.api, running_bot.engine, running_bot.clock
    assert [c["command"] for c in api.commands] == [
        "start",
        "trap",
        "hint",
        "skip",
        "stats",
        "settings",
        "decks",
        "undo",
        "forget",
        "help",
    ]
    ada = api.user("Ada", username="ada_l")
    chat = ada.id

    # /start: what trapbot is, the defaults, one tap to keep them; a typed place and time work too.
    mark = api.mark()
    api.send_command(ada, "start")
    welcome = await reply_to(api, mark, chat)
    assert "trapbot" in welcome.text and "Timezone: UTC" in welcome.text and "09:00" in welcome.text
    assert "<b>trapbot</b>" in welcome.html
    mark = api.mark()
    api.send_text(ada, "Berlin 07:30")
    saved = await reply_to(api, mark, chat)
    assert "Europe/Berlin" in saved.text and "07:30" in saved.text
    learner = learner_row(engine, ada.id)
    assert (
        learner is not None and learner.timezone == "Europe/Berlin" and learner.chat_id == str(chat)
    )
    assert learner.push_time.strftime("%H:%M") == "07:30"
    mark = api.mark()
    api.press(ada, welcome.result, data_for(welcome, "Keep these settings"))
    accepted = await reply_to(api, mark, chat, containing="All set")
    assert "07:30" in accepted.text
    cleared = await api.wait_for("editMessageReplyMarkup", since=mark, chat_id=chat)
    assert cleared.params["message_id"] == welcome.result["message_id"]

    # /trap: the question carries its card id; /hint gives the nudge.
    mark = api.mark()
    api.send_command(ada, "trap")
    question = await reply_to(api, mark, chat)
    assert "rl-91" in question.text and "KL Divergence" in question.text
    assert [label for label, _ in question.buttons()] == ["Hint", "Skip"]
    mark = api.mark()
    api.send_command(ada, "hint")
    hint = await reply_to(api, mark, chat)
    assert "reward number" in hint.text

    # The answer, as a reply to the question: typing, then the reading to confirm.
    mark = api.mark()
    api.send_text(ada, PARTIAL, reply_to=question.result)
    confirm = await reply_to(api, mark, chat, containing="Check my reading")
    typing = await api.wait_for("sendChatAction", since=mark, chat_id=chat)
    assert typing.params["action"] == "typing" and typing.index < confirm.index
    assert "grades" in confirm.text

    # Ticking points edits that message in place; no new message is sent.
    def unticked(message: dict) -> list[str]:
        return [
            b["text"].split()[0]
            for row in message["reply_markup"]["inline_keyboard"]
            for b in row
            if "❌" in b["text"] or "🟡" in b["text"]
        ]

    while unticked(api.message(chat, confirm.result["message_id"])):  # until every point is present
        mark = api.mark()
        before = api.message(chat, confirm.result["message_id"])
        label = unticked(before)[0]
        api.press(ada, before, data_for_message(before, label))
        edited = await api.wait_for("editMessageText", since=mark, chat_id=chat)
        assert edited.params["message_id"] == confirm.result["message_id"]
        assert edited.text != before["text"]
        answered = await api.wait_for("answerCallbackQuery", since=mark)
        assert answered.ok
        assert api.calls_since(mark, "sendMessage") == []
    assert "grades 5/5" in api.message(chat, confirm.result["message_id"])["text"]

    # Confirm: the verdict, then the simulation's plot as a photo with a caption.
    mark = api.mark()
    current = api.message(chat, confirm.result["message_id"])
    confirm_data = [
        b["callback_data"] for row in current["reply_markup"]["inline_keyboard"] for b in row
    ][-1]
    api.press(ada, current, confirm_data)
    verdict = await reply_to(api, mark, chat, containing="Grade")
    assert "next review" in verdict.text and "Why" in verdict.text
    assert "✅" in verdict.text  # key points marked
    assert {label for label, _ in verdict.buttons()} == {
        "Full explanation",
        "I disagree",
        "Next trap",
    }
    if sim_cache is not None:
        photo = await api.wait_for("sendPhoto", since=mark, chat_id=chat)
        assert photo.index > verdict.index
        assert api.photo_bytes(photo).startswith(b"\x89PNG")
        assert photo.text  # the sim's title and what to look at
    await api.wait_for("editMessageReplyMarkup", since=mark, chat_id=chat)

    # Stored and scheduled: SM-2 puts the card into the future.
    learner = learner_row(engine, ada.id)
    assert learner is not None
    [review] = reviews_of(engine, learner.id)
    assert review.status == ReviewStatus.GRADED and review.answer == PARTIAL
    state = state_of(engine, learner.id, "rl-91")
    assert state is not None
    today = engine.today(learner)
    assert review.quality == 5 and state.due_on > today
    # The scheduled review: on its due day the reminder push brings the trap back.
    clock.advance(days=(state.due_on - today).days)
    mark = api.mark()
    outcome = await running_bot.transport.push(learner, await engine.next_trap(learner.id))
    assert outcome is PushOutcome.SENT
    pushed = await reply_to(api, mark, chat)
    assert "rl-91" in pushed.text

    # The full explanation button.
    mark = api.mark()
    api.press(ada, verdict.result, data_for(verdict, "Full explanation"))
    explanation = await reply_to(api, mark, chat, containing="References")
    assert "Gao" in explanation.text


async def test_disagree_override_and_undo(running_bot: Any) -> None:
    api, engine = running_bot.api, running_bot.engine
    bea = api.user("Bea")
    chat = bea.id
    mark = api.mark()
    api.send_command(bea, "trap")
    question = await reply_to(api, mark, chat)
    mark = api.mark()
    api.send_text(bea, EXPERT)
    confirm = await reply_to(api, mark, chat, containing="Check my reading")
    mark = api.mark()
    api.press(bea, confirm.result, data_for(confirm, "Confirm"))
    verdict = await reply_to(api, mark, chat, containing="Grade")
    learner = learner_row(engine, bea.id)
    assert learner is not None
    [review] = reviews_of(engine, learner.id)
    judged = review.quality

    mark = api.mark()
    api.press(bea, verdict.result, data_for(verdict, "I disagree"))
    override = await reply_to(api, mark, chat, containing="What should it be")
    new_quality = 0 if judged != 0 else 5
    mark = api.mark()
    api.press(bea, override.result, data_for(override, str(new_quality)))
    noted = await reply_to(api, mark, chat, containing="Noted")
    assert f"{new_quality}/5" in noted.text
    [review] = reviews_of(engine, learner.id)
    assert review.quality == new_quality and review.judge_quality == judged

    # The spent override buttons are gone; a forged press naming someone else's answer is refused.
    assert "reply_markup" not in api.message(chat, override.result["message_id"])
    mark = api.mark()
    query = api.press(bea, override.result, "t1:ovr:999999:3", check=False)
    await api.wait_for("answerCallbackQuery", since=mark)
    assert api.callback_answers[query]["show_alert"] is True
    assert "not yours" in api.callback_answers[query]["text"]
    assert reviews_of(engine, learner.id)[0].quality == new_quality

    # /undo takes the grade back and reopens the trap.
    before = state_of(engine, learner.id, "rl-91")
    mark = api.mark()
    api.send_command(bea, "undo")
    undone = await reply_to(api, mark, chat, containing="Taken back")
    assert "undone" in undone.text
    [review] = reviews_of(engine, learner.id)
    assert review.status == ReviewStatus.UNDONE
    after = state_of(engine, learner.id, "rl-91")
    assert (
        before is not None
        and after is not None
        and after.repetitions == 0
        and after.last_reviewed_on is None
    )
    assert question.text  # the trap is open again: a new answer is accepted
    mark = api.mark()
    api.send_text(bea, PARTIAL)
    await reply_to(api, mark, chat, containing="Check my reading")
    assert len(reviews_of(engine, learner.id)) == 2


async def test_settings_command(running_bot: Any) -> None:
    api, engine = running_bot.api, running_bot.engine
    cleo = api.user("Cleo")
    chat = cleo.id
    mark = api.mark()
    api.send_command(cleo, "settings")
    shown = await reply_to(api, mark, chat, containing="Your settings")
    assert "Timezone: UTC" in shown.text

    for args, expected in (
        ("timezone Berlin", "Europe/Berlin"),
        ("timezone UTC+2", "Etc/GMT-2"),
        ("time 7pm", "19:00"),
        ("new 3", "New traps a day: 3"),
    ):
        mark = api.mark()
        api.send_command(cleo, "settings", args)
        saved = await reply_to(api, mark, chat)
        assert expected in saved.text, (args, saved.text)

    for junk in ("time 99:99", "timezone Atlantis", "colour blue", "new many"):
        mark = api.mark()
        api.send_command(cleo, "settings", junk)
        refused = await reply_to(api, mark, chat)
        assert "Saved" not in refused.text, junk
    learner = learner_row(engine, cleo.id)
    assert learner is not None and learner.timezone == "Etc/GMT-2" and learner.new_per_day == 3

    # Pause and resume, with the button and with the command.
    mark = api.mark()
    api.press(cleo, shown.result, data_for(shown, "Pause"))
    await reply_to(api, mark, chat, containing="paused")
    assert learner_row(engine, cleo.id).paused is True  # type: ignore[union-attr]
    mark = api.mark()
    api.send_command(cleo, "settings", "resume")
    await reply_to(api, mark, chat, containing="Saved")
    assert learner_row(engine, cleo.id).paused is False  # type: ignore[union-attr]


async def test_stats_sends_the_plot(running_bot: Any) -> None:
    api = running_bot.api
    dan = api.user("Dan")
    mark = api.mark()
    api.send_command(dan, "trap")
    await reply_to(api, mark, dan.id)
    mark = api.mark()
    api.send_text(dan, EXPERT)
    confirm = await reply_to(api, mark, dan.id, containing="Check my reading")
    mark = api.mark()
    api.press(dan, confirm.result, data_for(confirm, "Confirm"))
    await reply_to(api, mark, dan.id, containing="Grade")
    mark = api.mark()
    api.send_command(dan, "stats")
    stats = await reply_to(api, mark, dan.id, containing="Your progress")
    assert "Reviews done: 1" in stats.text
    photo = await api.wait_for(
        "sendPhoto", since=mark, chat_id=dan.id, where=lambda c: "Due this week" in c.text
    )
    assert api.photo_bytes(photo).startswith(b"\x89PNG")


async def test_forget_after_confirmation(running_bot: Any) -> None:
    api, engine = running_bot.api, running_bot.engine
    eve = api.user("Eve")
    mark = api.mark()
    api.send_command(eve, "trap")
    await reply_to(api, mark, eve.id)
    mark = api.mark()
    api.send_command(eve, "forget", "right now please")
    ask = await reply_to(api, mark, eve.id, containing="cannot be undone")
    assert learner_row(engine, eve.id) is not None  # nothing deleted before the tap

    mark = api.mark()
    api.press(eve, ask.result, data_for(ask, "Cancel"))
    await reply_to(api, mark, eve.id, containing="Nothing deleted")
    assert learner_row(engine, eve.id) is not None

    mark = api.mark()
    api.send_command(eve, "forget")
    ask = await reply_to(api, mark, eve.id, containing="cannot be undone")
    mark = api.mark()
    api.press(eve, ask.result, data_for(ask, "Delete everything"))
    await reply_to(api, mark, eve.id, containing="everything about you is deleted")
    assert learner_row(engine, eve.id) is None

    # Starting again afterwards is a fresh learner.
    mark = api.mark()
    api.send_command(eve, "start")
    await reply_to(api, mark, eve.id, containing="trapbot")
    learner = learner_row(engine, eve.id)
    assert learner is not None and learner.timezone == "UTC"


async def test_scheduled_review_date_moves_with_the_clock(running_bot: Any) -> None:
    """A trap graded today is not due again today, and is due on the day SM-2 named."""
    api, engine, clock = running_bot.api, running_bot.engine, running_bot.clock
    fay = api.user("Fay")
    mark = api.mark()
    api.send_command(fay, "trap")
    await reply_to(api, mark, fay.id, containing="rl-91")
    mark = api.mark()
    api.send_text(fay, EXPERT)
    confirm = await reply_to(api, mark, fay.id, containing="Check my reading")
    mark = api.mark()
    api.press(fay, confirm.result, data_for(confirm, "Confirm"))
    verdict = await reply_to(api, mark, fay.id, containing="Grade")
    assert "next review tomorrow" in verdict.text
    learner = learner_row(engine, fay.id)
    assert learner is not None
    state = state_of(engine, learner.id, "rl-91")
    assert state is not None and state.due_on == engine.today(learner) + timedelta(days=1)

    clock.advance(days=1)
    mark = api.mark()
    api.send_command(fay, "trap")
    again = await reply_to(api, mark, fay.id)
    assert "rl-91" in again.text
