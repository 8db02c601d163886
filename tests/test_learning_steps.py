"""Learning steps: a trap graded below 4 comes back after the other traps due now and after a
pause (10 minutes by default), never as the very next question; /skip on a repeat skips it for
the day. Time is the injected clock."""

from __future__ import annotations

from bot.actions import Verb
from bot.replies import ReplyKind
from tests.test_engine import answer_and_rate, button, make


async def _next_card(engine, learner_id: int) -> str | None:
    replies = await engine.next_trap(learner_id)
    return replies[-1].card_id if replies[-1].kind is ReplyKind.QUESTION else None


async def test_a_missed_trap_waits_behind_every_due_trap_and_its_step(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    await engine.update_settings(ada.id, "new", "3")
    for card_id in ("rl-91", "rl-92", "rl-93"):  # day 1: all three met and recalled
        assert await _next_card(engine, ada.id) == card_id
        await answer_and_rate(engine, ada.id, 5)
    clock.advance(days=1)  # day 2: all three due
    assert await _next_card(engine, ada.id) == "rl-91"
    verdict = await answer_and_rate(engine, ada.id, 2)
    assert "back in 10 minutes" in verdict.text
    clock.advance(minutes=11)  # past the step, yet the other due traps still come first
    assert await _next_card(engine, ada.id) == "rl-92"
    await answer_and_rate(engine, ada.id, 4)
    assert await _next_card(engine, ada.id) == "rl-93"
    await answer_and_rate(engine, ada.id, 4)
    [again] = await engine.next_trap(ada.id)
    assert again.card_id == "rl-91" and "Again today" in again.text


async def test_a_missed_new_trap_never_comes_straight_back(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    await engine.update_settings(ada.id, "new", "2")
    assert await _next_card(engine, ada.id) == "rl-91"
    await answer_and_rate(engine, ada.id, 1)
    assert await _next_card(engine, ada.id) == "rl-92"  # today's other new trap first
    await answer_and_rate(engine, ada.id, 5)
    clock.advance(minutes=4)
    [wait] = await engine.next_trap(ada.id)
    assert wait.kind is ReplyKind.INFO and "`rl-91` comes back in 6 minutes" in wait.text
    clock.advance(minutes=6)
    assert await _next_card(engine, ada.id) == "rl-91"


async def test_the_first_session_offers_one_more_new_trap_and_the_repeat_on_request(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)  # one new trap a day
    ada = engine.learner("terminal", "ada")
    assert await _next_card(engine, ada.id) == "rl-91"
    await answer_and_rate(engine, ada.id, 2)
    [done] = await engine.next_trap(ada.id)
    assert "comes back in 10 minutes" in done.text and "one more" in done.text
    [extra] = await engine.act(ada.id, button(done, Verb.EXTRA))
    assert extra.kind is ReplyKind.QUESTION and extra.card_id == "rl-92"
    await answer_and_rate(engine, ada.id, 5)
    [done] = await engine.next_trap(ada.id)
    [now] = await engine.act(ada.id, button(done, Verb.NEXT, "repeat"))
    assert now.card_id == "rl-91" and "Again today" in now.text


async def test_skip_on_a_repeat_skips_it_for_the_day(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    assert await _next_card(engine, ada.id) == "rl-91"
    await answer_and_rate(engine, ada.id, 2)
    clock.advance(minutes=10)
    assert await _next_card(engine, ada.id) == "rl-91"
    [skipped] = await engine.skip(ada.id)
    assert "Skipped for today" in skipped.text and "tomorrow" in skipped.text
    [after] = await engine.act(ada.id, button(skipped, Verb.NEXT))
    assert after.kind is ReplyKind.INFO and after.card_id is None and "rl-91" not in after.text
    clock.advance(minutes=30)
    assert await _next_card(engine, ada.id) is None
    clock.advance(days=1)
    assert await _next_card(engine, ada.id) == "rl-91"  # due again at its next review
