"""Groups (answers attributed to whoever answers) and concurrency (other chats never wait,
one user's updates keep their order and run once each)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlmodel import Session, select

from bot.models import Learner, Review


def learner_id(engine: Any, user_id: int) -> int:
    with Session(engine.db) as session:
        learner = session.exec(
            select(Learner).where(Learner.platform_user_id == str(user_id))
        ).one()
        assert learner.id is not None
        return learner.id


def reviews(engine: Any) -> list[Review]:
    with Session(engine.db) as session:
        return list(session.exec(select(Review).order_by(Review.id)))


ANSWER = "It is a proxy, not the goal, and overoptimization follows."


async def test_group_trap_is_answered_by_whoever_replies(running_bot: Any) -> None:
    api, engine = running_bot.api, running_bot.engine
    group = api.group()
    ada, bob = api.user("Ada"), api.user("Bob")

    mark = api.mark()
    command = api.send_command(ada, "trap", chat=group, address_bot=True)
    question = await api.wait_for("sendMessage", since=mark, chat_id=group["id"])
    assert "rl-91" in question.text
    assert question.params["reply_parameters"]["message_id"] == command["message_id"]

    # Chatter in the group is not an answer; neither is a reply to another member.
    mark = api.mark()
    lurker = api.user("Cy")
    api.send_text(lurker, "just reading along", chat=group)
    api.send_text(bob, "has anyone read the Gao et al. paper?", chat=group)
    chatter = api.send_text(ada, "yes, the one with the gold reward", chat=group)
    api.send_text(bob, "thanks", chat=group, reply_to=chatter)
    api.send_command(bob, "help", chat=group)  # the marker: Bob's updates run in order
    await api.wait_for(
        "sendMessage", since=mark, chat_id=group["id"], where=lambda c: "Commands" in c.text
    )
    assert [c for c in api.calls_since(mark, "sendMessage") if "Commands" not in c.text] == []
    assert reviews(engine) == []
    with Session(engine.db) as session:  # chatter leaves no learner record behind
        assert (
            session.exec(select(Learner).where(Learner.platform_user_id == str(lurker.id))).first()
            is None
        )

    # Bob replies to Ada's trap: graded for Bob, in the group, replying to Bob's message.
    mark = api.mark()
    answer = api.send_text(bob, ANSWER, chat=group, reply_to=question.result)
    confirm = await api.wait_for(
        "sendMessage", since=mark, chat_id=group["id"], where=lambda c: "Check my reading" in c.text
    )
    assert confirm.params["reply_parameters"]["message_id"] == answer["message_id"]
    [review] = reviews(engine)
    assert review.learner_id == learner_id(engine, bob.id) and review.card_id == "rl-91"

    # Ada cannot confirm Bob's grade: only she sees the refusal.
    mark = api.mark()
    confirm_data = next(d for _, d in confirm.buttons() if d.startswith("t1:ok:"))
    query = api.press(ada, confirm.result, confirm_data)
    await api.wait_for("answerCallbackQuery", since=mark)
    assert (
        api.callback_answers[query]["show_alert"]
        and "not yours" in api.callback_answers[query]["text"]
    )
    assert api.calls_since(mark, "sendMessage") == []

    # Bob confirms his own.
    mark = api.mark()
    api.press(bob, confirm.result, confirm_data)
    await api.wait_for(
        "sendMessage", since=mark, chat_id=group["id"], where=lambda c: "Grade" in c.text
    )

    # Ada answers her own trap by mentioning the bot.
    mark = api.mark()
    api.send_text(ada, f"@{api.username} {ANSWER}", chat=group)
    await api.wait_for(
        "sendMessage", since=mark, chat_id=group["id"], where=lambda c: "Check my reading" in c.text
    )
    ada_review = reviews(engine)[-1]
    assert ada_review.learner_id == learner_id(engine, ada.id)
    assert ada_review.answer == ANSWER  # the mention is not part of the answer

    # Group members' chat ids are not their private chats: pushes go nowhere yet.
    with Session(engine.db) as session:
        bob_row = session.get(Learner, learner_id(engine, bob.id))
        assert bob_row is not None and bob_row.chat_id is None


async def test_a_slow_grade_does_not_hold_up_other_chats(running_bot: Any) -> None:
    api, judge = running_bot.api, running_bot.judge
    ada, bob = api.user("Ada"), api.user("Bob")
    mark = api.mark()
    api.send_command(ada, "trap")
    await api.wait_for("sendMessage", since=mark, chat_id=ada.id)

    judge.gate.clear()  # Ada's grading now hangs until the gate opens
    mark = api.mark()
    api.send_text(ada, "slow: " + ANSWER)
    await api.wait_for("sendChatAction", since=mark, chat_id=ada.id)
    api.send_command(bob, "trap")
    bob_question = await api.wait_for("sendMessage", since=mark, chat_id=bob.id)
    assert "rl-91" in bob_question.text
    assert api.calls_since(mark, "sendMessage", chat_id=ada.id) == []  # Ada is still being graded

    judge.gate.set()
    await api.wait_for(
        "sendMessage", since=mark, chat_id=ada.id, where=lambda c: "Check my reading" in c.text
    )


async def test_one_users_quick_answers_are_handled_in_order_once_each(running_bot: Any) -> None:
    api, engine, judge = running_bot.api, running_bot.engine, running_bot.judge
    ada = api.user("Ada")
    mark = api.mark()
    api.send_command(ada, "trap")
    question = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)

    # Both arrive in one getUpdates batch; the first one's grading is the slow one.
    judge.gate.clear()
    mark = api.mark()
    first = "slow first: " + ANSWER
    second = "second: " + ANSWER
    api.send_text(ada, first, reply_to=question.result)
    api.send_text(ada, second, reply_to=question.result)
    await api.wait_for("sendChatAction", since=mark, chat_id=ada.id)
    await api.drained()
    await asyncio.sleep(0.2)  # give a wrongly concurrent second update the chance to overtake
    assert judge.started == [first]
    judge.gate.set()

    def reading(call: Any) -> bool:
        return "Check my reading" in call.text

    one = await api.wait_for("sendMessage", since=mark, chat_id=ada.id, where=reading)
    await api.wait_for("sendMessage", since=one.index + 1, chat_id=ada.id, where=reading)
    await asyncio.sleep(0.1)
    replies = [c for c in api.calls_since(mark, "sendMessage", chat_id=ada.id) if reading(c)]
    assert len(replies) == 2
    stored = reviews(engine)
    assert [r.answer for r in stored] == [first, second]
    assert judge.started == [first, second]
    assert [
        c.params["reply_markup"]["inline_keyboard"][-1][0]["callback_data"] for c in replies
    ] == [
        f"t1:ok:{stored[0].id}:-",
        f"t1:ok:{stored[1].id}:-",
    ]
