"""Issue 15 on Telegram, through the real PTB stack against the fake Bot API: the follow-up
answered by a reply to its message or by the next message, skipped, answered after a restart,
interview mode from /settings, and a review asking a variant."""

from __future__ import annotations

import random
from typing import Any

from sqlmodel import Session, select

from bot.models import FollowUp, FollowUpStatus, Learner, Review

MISSES = "The KL keeps the policy in distribution of the reward model, that is all."
GETS_THERE = "With nothing holding it, the policy finds overoptimization of the proxy."
EVERYTHING = (
    "proxy not goal; kl keeps in distribution; overoptimization; degenerate outputs; "
    "what to do; diagnose the spike"
)


class FinalJudge:
    """The keyword judge, never asking the learner to confirm (like the LLM judge)."""

    name = "keywords"

    def __init__(self, inner: Any):
        self.inner = inner

    async def assess(self, card: Any, answer: str, *, interactive: bool) -> Any:
        return await self.inner.assess(card, answer, interactive=False)


async def next_message(api: Any, since: int, chat_id: int, containing: str) -> Any:
    return await api.wait_for(
        "sendMessage", since=since, chat_id=chat_id, where=lambda call: containing in call.text
    )


def data_for(call: Any, label: str) -> str:
    for text, data in call.buttons():
        if text == label:
            return data
    raise AssertionError(f"no button {label!r} in {call.buttons()}")


def follow_ups(engine: Any) -> list[FollowUp]:
    with Session(engine.db) as session:
        return list(session.exec(select(FollowUp).order_by(FollowUp.id)))


def reviews(engine: Any) -> list[Review]:
    with Session(engine.db) as session:
        return list(session.exec(select(Review).order_by(Review.id)))


async def graded_with_a_miss(api: Any, user: Any) -> Any:
    mark = api.mark()
    api.send_command(user, "trap")
    await next_message(api, mark, user.id, "rl-91")
    mark = api.mark()
    api.send_text(user, MISSES)
    verdict = await next_message(api, mark, user.id, "Grade")
    assert "You missed a core point" in verdict.text
    return verdict


async def ask_follow_up(api: Any, user: Any, verdict: Any) -> Any:
    mark = api.mark()
    api.press(user, verdict.result, data_for(verdict, "Try the follow-up"))
    prompt = await next_message(api, mark, user.id, "Follow-up")
    assert [label for label, _ in prompt.buttons()] == ["Skip the follow-up"]
    return prompt


async def test_a_follow_up_answered_by_a_reply_to_it(make_bot, keyword_judge) -> None:
    bot = await make_bot(judge=FinalJudge(keyword_judge))
    api, engine = bot.api, bot.engine
    ada = api.user("Ada")
    verdict = await graded_with_a_miss(api, ada)
    prompt = await ask_follow_up(api, ada, verdict)
    probe = engine.deck.get("rl-91").key_point("overoptimization").probe
    assert probe.split("?")[0][:40] in prompt.text

    mark = api.mark()
    api.send_text(ada, GETS_THERE, reply_to=prompt.result)
    result = await next_message(api, mark, ada.id, "You got there")
    assert "The point:" in result.text
    [row] = follow_ups(engine)
    [review] = reviews(engine)
    assert (row.review_id, row.status, row.rescued) == (review.id, FollowUpStatus.ANSWERED, True)
    assert review.quality == 2  # the grade of the first answer stays

    mark = api.mark()
    api.send_command(ada, "stats")
    stats = await next_message(api, mark, ada.id, "Follow-ups")
    assert "Follow-ups: 1 of 1" in stats.text


async def test_the_next_message_answers_it_and_skip_skips_it(make_bot, keyword_judge) -> None:
    bot = await make_bot(judge=FinalJudge(keyword_judge))
    api, engine = bot.api, bot.engine
    ada = api.user("Ada")
    verdict = await graded_with_a_miss(api, ada)
    await ask_follow_up(api, ada, verdict)
    mark = api.mark()
    api.send_text(ada, "I think the learning rate was too high.")
    result = await next_message(api, mark, ada.id, "Not yet")
    assert "The point:" in result.text and follow_ups(engine)[0].rescued is False

    bob = api.user("Bob")
    verdict = await graded_with_a_miss(api, bob)
    await ask_follow_up(api, bob, verdict)
    mark = api.mark()
    api.send_command(bob, "skip")
    await next_message(api, mark, bob.id, "Follow-up skipped.")
    mark = api.mark()
    api.send_text(bob, GETS_THERE)
    await next_message(api, mark, bob.id, "no open trap")
    assert [r.status for r in follow_ups(engine)] == [
        FollowUpStatus.ANSWERED,
        FollowUpStatus.SKIPPED,
    ]
    assert len(reviews(engine)) == 2


async def test_a_follow_up_answered_after_a_restart(make_bot, keyword_judge) -> None:
    first = await make_bot(judge=FinalJudge(keyword_judge))
    api = first.api
    ada = api.user("Ada")
    verdict = await graded_with_a_miss(api, ada)
    prompt = await ask_follow_up(api, ada, verdict)
    await first.transport.stop()

    second = await make_bot(judge=FinalJudge(keyword_judge))  # a new process, the same database
    mark = api.mark()
    api.send_text(ada, GETS_THERE, reply_to=prompt.result)
    await next_message(api, mark, ada.id, "You got there")
    [row] = follow_ups(second.engine)
    assert row.review_id == reviews(second.engine)[0].id and row.rescued is True


async def test_interview_mode_from_settings_and_a_variant_on_review(
    make_bot, keyword_judge
) -> None:
    bot = await make_bot(judge=FinalJudge(keyword_judge))
    api, engine, clock = bot.api, bot.engine, bot.clock
    ada = api.user("Ada")
    mark = api.mark()
    api.send_command(ada, "settings", "interview sometimes")
    await next_message(api, mark, ada.id, "on or off")
    mark = api.mark()
    api.send_command(ada, "settings", "interview on")
    await next_message(api, mark, ada.id, "Interview mode: on")

    mark = api.mark()
    api.send_command(ada, "trap")
    first = await next_message(api, mark, ada.id, "rl-91")
    card = engine.deck.get("rl-91")
    assert card.source.date in first.text
    mark = api.mark()
    api.send_text(ada, MISSES)
    verdict = await next_message(api, mark, ada.id, "Grade")
    prompt = await next_message(api, mark, ada.id, "Follow-up")  # asked at once
    assert prompt.index > verdict.index
    assert "Try the follow-up" not in [label for label, _ in verdict.buttons()]

    # A review on another day: a variant, without the source line; the answer records it.
    with Session(engine.db) as session:
        learner = session.exec(select(Learner).where(Learner.platform_user_id == str(ada.id))).one()
    clock.advance(days=1)
    mark = api.mark()
    api.send_command(ada, "trap")
    review = await next_message(api, mark, ada.id, "rl-91")
    assert (
        "The same mechanism, another setting" in review.text and card.source.date not in review.text
    )
    mark = api.mark()
    api.send_text(ada, EVERYTHING, reply_to=review.result)
    await next_message(api, mark, ada.id, "Grade")
    asked = reviews(engine)[-1]
    assert asked.learner_id == learner.id and asked.variant_id in {v.id for v in card.variants}


class FirstOfTies(random.Random):
    """Breaks every tie toward the card's first variant, so a shared count would show."""

    def choice(self, seq):  # type: ignore[override]
        return seq[0]


async def test_variants_rotate_per_learner_and_independently(make_bot, keyword_judge) -> None:
    bot = await make_bot(judge=FinalJudge(keyword_judge))
    bot.engine.rng = FirstOfTies()
    api, card = bot.api, bot.engine.deck.get("rl-91")

    async def asked(user: Any) -> str:
        """/trap, then an answer missing a core point (SM-2 asks again the same day, after the
        learning step)."""
        bot.clock.advance(minutes=10)
        mark = api.mark()
        api.send_command(user, "trap")
        question = await next_message(api, mark, user.id, "rl-91")
        mark = api.mark()
        api.send_text(user, MISSES, reply_to=question.result)
        await next_message(api, mark, user.id, "Grade")
        for index, variant in enumerate(card.variants, 1):
            if " ".join(variant.question.split()[:8]) in " ".join(question.text.split()):
                return f"variant {index}"
        assert card.source.date in question.text
        return "original"

    ada, bob = api.user("Ada"), api.user("Bob")
    assert [await asked(ada) for _ in range(4)] == [
        "original",
        "variant 1",
        "variant 2",
        "variant 1",
    ]
    assert [await asked(bob) for _ in range(3)] == ["original", "variant 1", "variant 2"]
