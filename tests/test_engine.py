"""The quiz engine end to end on real databases, with time injected."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta

import pytest
from sqlmodel import Session, select

from bot.actions import Action, Verb
from bot.engine import MAX_ANSWER_CHARS, QuizEngine
from bot.models import CardState, Learner, PushLog, Review, ReviewStatus
from bot.replies import ReplyKind
from cards.deck import DECK_DIR, parse_card
from cards.schema import Card
from grader.base import Assessment, Judgement, MisconceptionJudgement, PointJudgement, PointVerdict
from grader.scoring import grade_from_judgement, grade_from_labels
from grader.selfgrade import SelfGrader


class KeywordJudge:
    """A deterministic judge for tests: a point is present when its id's first word appears;
    the whole answer is the quote (the grade rule wants evidence of several words)."""

    name = "keyword"

    def __init__(self, *, confirm: bool = False):
        self.confirm = confirm
        self.calls = 0

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        self.calls += 1
        lowered = answer.lower()
        points = tuple(
            PointJudgement(p.id, PointVerdict.PRESENT, answer)
            if p.id.split("-")[0] in lowered
            else PointJudgement(p.id, PointVerdict.ABSENT)
            for p in card.key_points
        )
        misconceptions = tuple(
            MisconceptionJudgement(m.id, "approve" in lowered, answer if "approve" in lowered else "")
            for m in card.misconceptions
        )
        judgement = Judgement(judge=self.name, points=points, misconceptions=misconceptions)
        grade = grade_from_judgement(card, judgement, answer)
        return Assessment(grader=self.name, grade=grade, needs_confirmation=self.confirm and interactive)


class BrokenJudge:
    name = "broken"

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        raise TimeoutError("the judge is down")


class HangingJudge:
    """Never returns, like a process killed in the middle of grading."""

    name = "hanging"

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


#: The first word of every key point of the model card: the keyword judge credits them all.
FULL = " ".join(dict.fromkeys(p.id.split("-")[0] for p in parse_card(DECK_DIR / "rl-08.md").key_points))


def make(db, small_deck, clock, grader=None, **kw) -> QuizEngine:
    return QuizEngine(db, small_deck, grader or SelfGrader(), clock, **kw)


def state_of(engine: QuizEngine, learner_id: int, card_id: str) -> CardState:
    with Session(engine.db) as session:
        return session.exec(
            select(CardState).where(CardState.learner_id == learner_id, CardState.card_id == card_id)
        ).one()


def reviews_of(engine: QuizEngine, learner_id: int) -> list[Review]:
    with Session(engine.db) as session:
        return list(session.exec(select(Review).where(Review.learner_id == learner_id).order_by(Review.id)))


def button(reply, verb: Verb, arg: str | None = None) -> str:
    for row in reply.buttons:
        for b in row:
            action = Action.decode(b.data)
            if action.verb is verb and (arg is None or action.arg == arg):
                return b.data
    raise AssertionError(f"no {verb} button in {reply.buttons}")


async def answer_and_rate(engine: QuizEngine, learner_id: int, quality: int, text: str = "an answer about the proxy"):
    [confirm] = await engine.submit_answer(learner_id, text)
    assert confirm.kind is ReplyKind.CONFIRM
    return (await engine.act(learner_id, button(confirm, Verb.RATE, str(quality))))[0]


async def test_self_graded_session_schedules_with_sm2(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    learner = engine.learner("terminal", "ada")
    [question] = await engine.next_trap(learner.id)
    assert question.kind is ReplyKind.QUESTION and question.card_id == "rl-91"
    verdict = await answer_and_rate(engine, learner.id, 5)
    assert verdict.kind is ReplyKind.VERDICT
    assert "Grade 5/5" in verdict.text and "tomorrow" in verdict.text
    assert verdict.plot_sim == "reward_overoptimization"
    state = state_of(engine, learner.id, "rl-91")
    assert (state.repetitions, state.interval_days, state.due_on) == (1, 1, date(2026, 3, 3))

    clock.advance(days=1)
    [question] = await engine.next_trap(learner.id)
    assert question.card_id == "rl-91"  # due reviews come before new traps
    verdict = await answer_and_rate(engine, learner.id, 5)
    assert "in 6 days" in verdict.text
    assert state_of(engine, learner.id, "rl-91").due_on == date(2026, 3, 9)


async def test_new_traps_respect_the_daily_limit(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    learner = engine.learner("terminal", "ada")
    await engine.next_trap(learner.id)
    await answer_and_rate(engine, learner.id, 5)
    [done] = await engine.next_trap(learner.id)
    assert done.kind is ReplyKind.INFO and "Nothing due" in done.text
    [extra] = await engine.act(learner.id, button(done, Verb.EXTRA))
    assert extra.card_id == "rl-92"
    await engine.update_settings(learner.id, "new", "3")
    await answer_and_rate(engine, learner.id, 4)
    [third] = await engine.next_trap(learner.id)
    assert third.card_id == "rl-93"


async def test_step_7_repeats_change_neither_easiness_nor_interval(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    learner = engine.learner("terminal", "ada")
    await engine.next_trap(learner.id)
    verdict = await answer_and_rate(engine, learner.id, 3)
    assert "back in 10 minutes" in verdict.text
    after_first = state_of(engine, learner.id, "rl-91")
    assert (after_first.interval_days, after_first.easiness_hundredths) == (1, 236)
    assert after_first.repeat_today

    clock.advance(minutes=10)  # the learning step
    [again] = await engine.next_trap(learner.id)
    assert again.card_id == "rl-91" and "Again today" in again.text
    await answer_and_rate(engine, learner.id, 2)
    still = state_of(engine, learner.id, "rl-91")
    assert (still.interval_days, still.easiness_hundredths, still.repetitions) == (1, 236, 1)
    assert still.repeat_today

    clock.advance(minutes=10)
    await engine.next_trap(learner.id)
    await answer_and_rate(engine, learner.id, 5)
    done = state_of(engine, learner.id, "rl-91")
    assert (done.interval_days, done.easiness_hundredths, done.due_on) == (1, 236, date(2026, 3, 3))
    assert not done.repeat_today
    assert [r.same_day_repeat for r in reviews_of(engine, learner.id)] == [False, True, True]


async def test_bad_answers_get_a_clear_message_and_store_nothing(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    learner = engine.learner("terminal", "ada")
    [no_trap] = await engine.submit_answer(learner.id, "an answer without a question")
    assert "no open trap" in no_trap.text
    await engine.next_trap(learner.id)
    for text in ("", "   \n\t ", "\x00\x07", "x" * 20_000):
        [reply] = await engine.submit_answer(learner.id, text)
        assert reply.kind is ReplyKind.ERROR
    assert "20,000" in reply.text and f"{MAX_ANSWER_CHARS:,}" in reply.text
    assert reviews_of(engine, learner.id) == []
    odd = "KL\u00a0keeps it close 👩\u200d🔬 \u202eevil\u202c مرحبا e\u0301\x1b[31m"
    [confirm] = await engine.submit_answer(learner.id, odd)
    assert confirm.kind is ReplyKind.CONFIRM
    [stored] = reviews_of(engine, learner.id)
    assert "👩\u200d🔬" in stored.answer and "مرحبا" in stored.answer and "\u00e9" in stored.answer
    assert "\x1b" not in stored.answer and "\u202e" not in stored.answer


async def test_answer_is_stored_before_grading_and_recovered_after_a_crash(db, small_deck, clock) -> None:
    hanging = HangingJudge()
    engine = make(db, small_deck, clock, hanging, interactive=False)
    learner = engine.learner("telegram", "42")
    await engine.next_trap(learner.id)
    task = asyncio.create_task(engine.submit_answer(learner.id, FULL))
    await hanging.started.wait()
    [pending] = reviews_of(engine, learner.id)
    assert pending.status == ReviewStatus.PENDING and pending.answer == FULL
    task.cancel()  # the process dies mid-grading

    restarted = make(db, small_deck, clock, KeywordJudge(), interactive=False)
    [(owed_to, replies)] = await restarted.recover_pending()
    assert owed_to == learner.id
    assert replies[-1].kind is ReplyKind.VERDICT and "Grade 5/5" in replies[-1].text
    [graded] = reviews_of(restarted, learner.id)
    assert (graded.status, graded.quality, graded.grader) == (ReviewStatus.GRADED, 5, "keyword")
    assert await restarted.recover_pending() == []


async def test_a_failing_judge_falls_back_to_self_grading(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock, BrokenJudge())
    learner = engine.learner("terminal", "ada")
    await engine.next_trap(learner.id)
    [confirm] = await engine.submit_answer(learner.id, "the proxy is not the goal")
    assert confirm.kind is ReplyKind.CONFIRM and "Rate it 0-5" in confirm.text
    [review] = reviews_of(engine, learner.id)
    assert review.status == ReviewStatus.AWAITING and review.grader == "self"


async def test_judge_verdict_names_the_misconception_and_caps(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock, KeywordJudge())
    learner = engine.learner("terminal", "ada")
    await engine.next_trap(learner.id)
    [verdict] = await engine.submit_answer(learner.id, "approve it, the proxy reward rises")
    assert verdict.kind is ReplyKind.VERDICT
    assert "Grade 0/5" in verdict.text or "Grade 1/5" in verdict.text or "Grade 2/5" in verdict.text
    assert "You fell for the trap" in verdict.text
    [review] = reviews_of(engine, learner.id)
    assert review.verdict is not None and review.verdict["judge"] == "keyword"


async def test_assisted_grading_ticks_and_confirms(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock, KeywordJudge(confirm=True))
    learner = engine.learner("terminal", "ada")
    await engine.next_trap(learner.id)
    [confirm] = await engine.submit_answer(learner.id, "proxy kl overoptimization")
    assert confirm.kind is ReplyKind.CONFIRM and "Confirm" in confirm.buttons[-1][0].label
    # The keyword judge finds the first three points; the grade rule decides what that is worth.
    card = small_deck.cards[0]
    point_ids = [p.id for p in card.key_points]
    assert confirm.buttons[-1][0].label == f"Confirm {grade_from_labels(card, point_ids[:3])}/5"
    # Tick the other points from absent to present one by one, then confirm.
    ticked = confirm
    for number in range(4, len(point_ids) + 1):
        [ticked] = await engine.act(learner.id, button(ticked, Verb.TICK, str(number)))
        expected = grade_from_labels(card, point_ids[:number])
        assert ticked.buttons[-1][0].label == f"Confirm {expected}/5"
        if number == 4:
            assert "1. ✅" in ticked.buttons[0][0].label and "4. ✅" in ticked.buttons[1][0].label
    assert ticked.buttons[-1][0].label == "Confirm 5/5"
    [verdict] = await engine.act(learner.id, button(ticked, Verb.CONFIRM))
    assert "Grade 5/5" in verdict.text and "keyword + you" in verdict.text
    # The same confirm button again is stale.
    [stale] = await engine.act(learner.id, button(ticked, Verb.CONFIRM))
    assert stale.kind is ReplyKind.ERROR and "already graded" in stale.text


async def test_buttons_are_validated(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    eve = engine.learner("terminal", "eve")
    await engine.next_trap(ada.id)
    [confirm] = await engine.submit_answer(ada.id, "an answer about the proxy")
    rate = button(confirm, Verb.RATE, "5")
    [forged] = await engine.act(eve.id, rate)  # someone else's answer
    assert forged.kind is ReplyKind.ERROR and "not yours" in forged.text
    for junk in ("", "hello", "t1:rate:1:9", "t1:nope:1:1", "t0:rate:1:1", "t1:rate:x:1", "t1:rate:999999:5", "t1:" + "a" * 80):
        [reply] = await engine.act(ada.id, junk)
        assert reply.kind is ReplyKind.ERROR, junk
    assert reviews_of(engine, ada.id)[0].status == ReviewStatus.AWAITING


async def test_disagree_overrides_and_undo_restores(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock, KeywordJudge())
    learner = engine.learner("terminal", "ada")
    await engine.next_trap(learner.id)
    [verdict] = await engine.submit_answer(learner.id, "proxy kl")  # core point missing: capped
    before = state_of(engine, learner.id, "rl-91")
    [scale] = await engine.act(learner.id, button(verdict, Verb.DISAGREE))
    [noted] = await engine.act(learner.id, button(scale, Verb.OVERRIDE, "5"))
    assert "5/5" in noted.text
    after = state_of(engine, learner.id, "rl-91")
    assert (after.interval_days, after.easiness_hundredths, after.repeat_today) == (1, 260, False)
    [review] = reviews_of(engine, learner.id)
    assert review.quality == 5 and review.judge_quality is not None and review.judge_quality <= 2
    assert "overridden" in (review.grader or "")

    [undone] = await engine.undo(learner.id)
    assert "Taken back" in undone.text
    restored = state_of(engine, learner.id, "rl-91")
    assert (restored.repetitions, restored.interval_days, restored.last_reviewed_on) == (0, 0, None)
    assert reviews_of(engine, learner.id)[0].status == ReviewStatus.UNDONE
    [again] = await engine.submit_answer(learner.id, FULL)  # the trap is open again
    assert "Grade 5/5" in again.text
    assert (before.repetitions, before.lapses) == (0, 1)  # the judge failed it


async def test_forget_deletes_everything_after_confirmation(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    learner = engine.learner("terminal", "ada")
    await engine.next_trap(learner.id)
    await answer_and_rate(engine, learner.id, 4)
    [ask] = await engine.forget(learner.id)
    [kept] = await engine.act(learner.id, button(ask, Verb.FORGET, "no"))
    assert "Nothing deleted" in kept.text and engine.get_learner(learner.id) is not None
    with Session(engine.db) as session:
        session.add(PushLog(learner_id=learner.id, local_date=date(2026, 3, 2), claimed_at=clock.now()))
        session.commit()
    [gone] = await engine.act(learner.id, button(ask, Verb.FORGET, "yes"))
    assert "deleted" in gone.text
    with Session(engine.db) as session:
        for table in (Learner, CardState, Review, PushLog):
            assert session.exec(select(table)).all() == []


async def test_settings_parse_and_reject(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    learner = engine.learner("telegram", "7")
    [saved] = await engine.update_settings(learner.id, "timezone", "berlin")
    assert "Europe/Berlin" in saved.text
    [saved] = await engine.update_settings(learner.id, "time", "7:30pm")
    assert "19:30" in saved.text
    for field, value in (("timezone", "Atlantis/Nowhere"), ("time", "25:00"), ("new", "0"), ("colour", "blue")):
        [error] = await engine.update_settings(learner.id, field, value)
        assert error.kind is ReplyKind.ERROR
    stored = engine.get_learner(learner.id)
    assert stored is not None and (stored.timezone, stored.push_time.hour, stored.new_per_day) == ("Europe/Berlin", 19, 1)


async def test_due_dates_follow_the_learners_calendar(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    kiribati = engine.learner("telegram", "14")
    await engine.update_settings(kiribati.id, "timezone", "UTC+14")
    # 08:00 UTC on 2 March is 22:00 on 2 March in UTC+14.
    await engine.next_trap(kiribati.id)
    await answer_and_rate(engine, kiribati.id, 5)
    assert state_of(engine, kiribati.id, "rl-91").due_on == date(2026, 3, 3)
    clock.advance(hours=3)  # 01:00 on 3 March in UTC+14: due already
    [question] = await engine.next_trap(kiribati.id)
    assert question.card_id == "rl-91"


async def test_stats_count_streak_forecast_and_mastery(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    learner = engine.learner("terminal", "ada")
    for day in range(3):
        [question] = await engine.next_trap(learner.id)
        if question.kind is not ReplyKind.QUESTION:
            [question] = await engine.act(learner.id, button(question, Verb.EXTRA))
        await answer_and_rate(engine, learner.id, 4)
        clock.advance(days=1)
    clock.advance(days=-1)
    data = engine.stats_data(learner.id)
    assert data.streak_days == 3 and data.reviews_done == 3 and data.cards_total == 3
    assert sum(count for _, count in data.due_forecast) >= 1
    assert data.mastery["kl-control"] == pytest.approx(0.8)
    [reply] = await engine.stats(learner.id, with_plot=False)
    assert "Streak: 3 days" in reply.text and "kl-control: 80%" in reply.text


async def test_answering_a_specific_trap_in_a_group(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock, KeywordJudge())
    asker = engine.learner("telegram", "1")
    answerer = engine.learner("telegram", "2")
    [question] = await engine.next_trap(asker.id)
    [verdict] = await engine.submit_answer(answerer.id, FULL, card_id=question.card_id)
    assert verdict.kind is ReplyKind.VERDICT
    assert [r.learner_id for r in reviews_of(engine, answerer.id)] == [answerer.id]
    assert engine.get_learner(asker.id).current_card_id == question.card_id  # still open for the asker


async def test_two_quick_answers_are_handled_in_order_once_each(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock, KeywordJudge())
    learner = engine.learner("telegram", "9")
    await engine.next_trap(learner.id)
    first, second = await asyncio.gather(
        engine.submit_answer(learner.id, FULL), engine.submit_answer(learner.id, "and one more thing")
    )
    assert first[0].kind is ReplyKind.VERDICT
    assert "no open trap" in second[0].text
    assert len(reviews_of(engine, learner.id)) == 1


async def test_skip_puts_a_new_trap_back_until_tomorrow(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    learner = engine.learner("terminal", "ada")
    [first] = await engine.next_trap(learner.id)
    await engine.skip(learner.id)
    [second] = await engine.next_trap(learner.id)
    assert (first.card_id, second.card_id) == ("rl-91", "rl-92")
    clock.advance(days=1)
    [back] = await engine.next_trap(learner.id)
    assert back.card_id == "rl-91"


def test_learner_is_created_once(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    a = engine.learner("discord", 123, display_name="Ada", chat_id=555)
    b = engine.learner("discord", "123", display_name="Ada L.")
    assert a.id == b.id and b.display_name == "Ada L." and b.chat_id == "555"
    assert engine.today(b) == clock.now().date() - timedelta(days=0)


def test_warmable_finds_the_judge_with_a_model() -> None:
    from grader.base import warmable

    class Offline:
        name = "offline"

        async def warm(self, cards) -> None: ...

    class Llm:
        name = "llm"

        def __init__(self, fallback) -> None:
            self.fallback = fallback

    offline = Offline()
    assert warmable(offline) is offline
    assert warmable(Llm(offline)) is offline
    assert warmable(Llm(None)) is None
    assert warmable(SelfGrader()) is None


def test_a_long_grader_name_is_cut_to_fit_the_column():
    from bot.models import GRADER_CHARS, fit_grader_name

    name = "llm:qwen2.5:7b-instruct-q4_K_M (the offline reading disagrees) (overridden by you)"
    fitted = fit_grader_name(name)
    assert fitted is not None and len(fitted) <= GRADER_CHARS
    assert fitted.startswith("llm:qwen2.5") and fitted.endswith("(overridden by you)")
    assert fit_grader_name("offline") == "offline" and fit_grader_name(None) is None
