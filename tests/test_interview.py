"""Issue 15 in the engine: the interviewer's follow-up on a missed core point, and variants of
the question that rotate across reviews. Real databases, injected time and rng."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta

import pytest
from sqlmodel import Session, select

from bot.actions import Action, Verb
from bot.engine import QuizEngine
from bot.followups import point_to_probe
from bot.models import Asked, CardState, FollowUp, FollowUpStatus, Review, ReviewStatus
from bot.replies import Reply, ReplyKind
from cards.schema import Card
from cards.wording import choose_variant, parse_wording_ref, wording_ref
from grader.base import Assessment, Judgement, PointJudgement, PointVerdict
from grader.scoring import grade_from_judgement
from grader.selfgrade import SelfGrader

CORE = ("kl-keeps-in-distribution", "overoptimization")  # the model card rl-08's core points
ALL = " ".join(("proxy-not-goal", *CORE, "degenerate-outputs", "what-to-do", "diagnose-the-spike"))
HALF = "kl-keeps-in-distribution and not much more to say about it"


class NamedJudge:
    """A point is present when the answer names its id, partial when it says ``partly:<id>``.
    Records the question each call was asked (the wording, or the probe)."""

    name = "named"

    def __init__(self, *, confirm: bool = False, fail_on: str | None = None):
        self.confirm = confirm
        self.fail_on = fail_on
        self.questions: list[str] = []

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        self.questions.append(card.question)
        if self.fail_on and self.fail_on in answer:
            raise TimeoutError("the judge is down")
        points = []
        for point in card.key_points:
            if f"partly:{point.id}" in answer:
                points.append(PointJudgement(point.id, PointVerdict.PARTIAL, answer))
            elif point.id in answer:
                points.append(PointJudgement(point.id, PointVerdict.PRESENT, answer))
            else:
                points.append(PointJudgement(point.id, PointVerdict.ABSENT))
        judgement = Judgement(judge=self.name, points=tuple(points))
        grade = grade_from_judgement(card, judgement, answer)
        return Assessment(self.name, grade, needs_confirmation=self.confirm and interactive)


class FirstOfTies(random.Random):
    """An rng that breaks every tie toward the first candidate (the card's order)."""

    def choice(self, seq):  # type: ignore[override]
        return seq[0]


def make(db, deck, clock, grader=None, **kw) -> QuizEngine:
    return QuizEngine(db, deck, grader or NamedJudge(), clock, interactive=False, **kw)


def button(reply: Reply, label: str) -> str:
    for row in reply.buttons:
        for b in row:
            if b.label == label:
                return b.data
    raise AssertionError(f"no {label!r} among {[b.label for row in reply.buttons for b in row]}")


def labels(reply: Reply) -> list[str]:
    return [b.label for row in reply.buttons for b in row]


def followups(engine: QuizEngine) -> list[FollowUp]:
    with Session(engine.db) as session:
        return list(session.exec(select(FollowUp).order_by(FollowUp.id)))


def reviews(engine: QuizEngine, learner_id: int) -> list[Review]:
    with Session(engine.db) as session:
        return list(
            session.exec(select(Review).where(Review.learner_id == learner_id).order_by(Review.id))
        )


def card_state(engine: QuizEngine, learner_id: int, card_id: str) -> tuple:
    with Session(engine.db) as session:
        s = session.exec(
            select(CardState).where(
                CardState.learner_id == learner_id, CardState.card_id == card_id
            )
        ).one()
        return (
            s.repetitions,
            s.easiness_hundredths,
            s.interval_days,
            s.due_on,
            s.repeat_today,
            s.lapses,
        )


async def missed_one_core(engine: QuizEngine, learner_id: int) -> Reply:
    [question] = await engine.next_trap(learner_id)
    assert question.kind is ReplyKind.QUESTION
    [verdict] = await engine.submit_answer(learner_id, HALF)
    assert verdict.kind is ReplyKind.VERDICT
    return verdict


# ----- follow-ups ----------------------------------------------------------------------------


async def test_a_follow_up_answered_gets_there_and_never_changes_the_grade(
    db, small_deck, clock
) -> None:
    judge = NamedJudge()
    engine = make(db, small_deck, clock, judge)
    ada = engine.learner("terminal", "ada")
    verdict = await missed_one_core(engine, ada.id)
    assert "Grade 2/5" in verdict.text
    # The missed point and the explanation wait until the learner has tried.
    assert "Try the follow-up" in labels(verdict)
    assert "You missed a core point" in verdict.text
    assert "The core you missed" not in verdict.text and "**Why**" not in verdict.text
    before = card_state(engine, ada.id, "rl-91")

    [prompt] = await engine.act(ada.id, button(verdict, "Try the follow-up"))
    card = small_deck.get("rl-91")
    probe = card.key_point("overoptimization").probe
    assert prompt.kind is ReplyKind.FOLLOWUP and probe in prompt.text and "`rl-91`" in prompt.text
    assert "Skip the follow-up" in labels(prompt)

    [result] = await engine.submit_answer(
        ada.id, "it finds overoptimization: outputs that fool the RM"
    )
    assert "You got there." in result.text
    assert (
        card.key_point("overoptimization").text.split()[0] in result.text
    )  # the point, shown after
    assert "**Why**" in result.text and "grade stays" in result.text
    assert judge.questions[-1] == probe  # the judge read the answer against the probe

    [review] = reviews(engine, ada.id)
    assert (review.quality, review.status) == (2, ReviewStatus.GRADED)
    assert card_state(engine, ada.id, "rl-91") == before  # SM-2 untouched
    [row] = followups(engine)
    assert (row.review_id, row.point_id, row.status, row.rescued, row.verdict, row.judge) == (
        review.id,
        "overoptimization",
        FollowUpStatus.ANSWERED,
        True,
        "present",
        "named",
    )
    assert row.answer.startswith("it finds overoptimization")
    [stats] = await engine.stats(ada.id, with_plot=False)
    assert "Follow-ups: 1 of 1 got you to the missed point (100%)" in stats.text
    # Answered: the next free text is not read as a follow-up again.
    [after] = await engine.submit_answer(ada.id, "overoptimization again, as I said before")
    assert "no open trap" in after.text
    assert len(followups(engine)) == 1


async def test_a_wrong_or_partial_follow_up_answer(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    verdict = await missed_one_core(engine, ada.id)
    await engine.act(ada.id, button(verdict, "Try the follow-up"))
    [result] = await engine.submit_answer(ada.id, "the learning rate is too high")
    assert "Not yet." in result.text and "**The point:**" in result.text
    assert followups(engine)[0].rescued is False

    clock.advance(days=1)
    await engine.next_trap(ada.id)  # rl-91 again
    [verdict] = await engine.submit_answer(ada.id, HALF)
    await engine.act(ada.id, button(verdict, "Try the follow-up"))
    [result] = await engine.submit_answer(
        ada.id, "partly:overoptimization, the policy fools the reward somehow"
    )
    assert "You got there, in part." in result.text
    [stats] = await engine.stats(ada.id, with_plot=False)
    assert "Follow-ups: 1 of 2" in stats.text


async def test_the_follow_up_probes_the_most_important_missed_core_point(small_deck) -> None:
    card = small_deck.get("rl-91")

    def judged(**verdicts: PointVerdict) -> Judgement:
        return Judgement(
            "t",
            tuple(
                PointJudgement(p.id, verdicts.get(p.id, PointVerdict.ABSENT))
                for p in card.key_points
            ),
        )

    # Both missing: the first in the key. One partial, one absent: the absent one.
    assert point_to_probe(card, judged()).id == "kl-keeps-in-distribution"
    partial_first = {"kl-keeps-in-distribution": PointVerdict.PARTIAL}
    assert point_to_probe(card, judged(**partial_first)).id == "overoptimization"
    contradicted = {
        "kl-keeps-in-distribution": PointVerdict.PRESENT,
        "overoptimization": PointVerdict.CONTRADICTED,
    }
    assert point_to_probe(card, judged(**contradicted)).id == "overoptimization"
    every_core = {p: PointVerdict.PRESENT for p in CORE}
    assert point_to_probe(card, judged(**every_core)) is None  # non-core gaps bring no follow-up
    assert point_to_probe(card, None) is None


async def test_no_follow_up_when_every_core_point_is_there_or_when_self_graded(
    db, small_deck, clock
) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    await engine.next_trap(ada.id)
    [verdict] = await engine.submit_answer(ada.id, " ".join(CORE))
    assert "Try the follow-up" not in labels(verdict) and "**Why**" in verdict.text
    [refused] = await engine.act(ada.id, Action(Verb.FOLLOWUP, verdict.review_id).encode())
    assert refused.kind is ReplyKind.ERROR and "missed no core point" in refused.text

    selfish = QuizEngine(db, small_deck, SelfGrader(), clock, interactive=True)
    bob = selfish.learner("terminal", "bob")
    await selfish.next_trap(bob.id)
    [confirm] = await selfish.submit_answer(bob.id, "an answer")
    [verdict] = await selfish.act(bob.id, button(confirm, "1"))
    assert verdict.kind is ReplyKind.VERDICT and "Try the follow-up" not in labels(verdict)


async def test_skipping_a_follow_up_by_skip_by_its_button_and_by_next_trap(
    db, small_deck, clock
) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    verdict = await missed_one_core(engine, ada.id)
    await engine.act(ada.id, button(verdict, "Try the follow-up"))
    [skipped] = await engine.skip(ada.id)
    assert "Follow-up skipped." in skipped.text and "**The point:**" in skipped.text
    assert followups(engine)[0].status == FollowUpStatus.SKIPPED
    [nothing] = await engine.submit_answer(ada.id, "overoptimization")  # not a follow-up any more
    assert "no open trap" in nothing.text
    [again] = await engine.act(ada.id, Action(Verb.FOLLOWUP, verdict.review_id, "skip").encode())
    assert again.kind is ReplyKind.ERROR and "not open" in again.text
    # Asked again from the verdict's button, then skipped by its own button.
    [prompt] = await engine.act(ada.id, button(verdict, "Try the follow-up"))
    [skipped] = await engine.act(ada.id, button(prompt, "Skip the follow-up"))
    assert "Follow-up skipped." in skipped.text

    # "Next trap" while a follow-up is open (here SM-2's same-day repeat of rl-91, as a
    # variant): the next free text answers the trap, not the follow-up.
    await engine.act(ada.id, button(verdict, "Try the follow-up"))
    clock.advance(minutes=10)  # the learning step before the repeat
    [question] = await engine.act(ada.id, button(skipped, "Next trap"))
    assert question.kind is ReplyKind.QUESTION and question.wording > 0
    assert followups(engine)[0].status == FollowUpStatus.CLOSED
    [graded] = await engine.submit_answer(ada.id, ALL)
    assert graded.kind is ReplyKind.VERDICT and graded.card_id == question.card_id
    assert len(reviews(engine, ada.id)) == 2


async def test_a_follow_up_answered_after_a_restart_is_matched_to_its_review(
    db_url, small_deck, clock
) -> None:
    from bot.db import make_engine

    first = make(make_engine(db_url), small_deck, clock)
    ada = first.learner("terminal", "ada")
    verdict = await missed_one_core(first, ada.id)
    await first.act(ada.id, button(verdict, "Try the follow-up"))
    first.db.dispose()

    clock.advance(minutes=30)
    restarted = make(make_engine(db_url), small_deck, clock)  # a new process, the same database
    try:
        [result] = await restarted.submit_answer(ada.id, "the optimiser finds overoptimization")
        assert "You got there." in result.text
        [row] = followups(restarted)
        assert row.review_id == verdict.review_id and row.rescued is True
        assert row.answered_at == clock.now()
    finally:
        restarted.db.dispose()


async def test_interview_mode_asks_at_once(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    [bad] = await engine.update_settings(ada.id, "interview", "maybe")
    assert bad.kind is ReplyKind.ERROR and "on or off" in bad.text
    [saved] = await engine.update_settings(ada.id, "interview", "on")
    assert "Interview mode: on" in saved.text
    await engine.next_trap(ada.id)
    verdict, prompt = await engine.submit_answer(ada.id, HALF)
    assert verdict.kind is ReplyKind.VERDICT and "Try the follow-up" not in labels(verdict)
    assert prompt.kind is ReplyKind.FOLLOWUP and prompt.review_id == verdict.review_id
    [result] = await engine.submit_answer(ada.id, "the optimiser finds overoptimization in the RM")
    assert "You got there." in result.text
    # The settings button turns it off.
    [settings] = engine.settings(ada.id)
    [off] = await engine.act(ada.id, button(settings, "Interview mode off"))
    assert "Interview mode: off" in off.text


async def test_a_follow_up_after_assisted_grading_and_a_self_check_when_no_judge_reads_it(
    db, small_deck, clock
) -> None:
    judge = NamedJudge(confirm=True, fail_on="judge-breaker")
    engine = QuizEngine(db, small_deck, judge, clock, interactive=True)
    ada = engine.learner("terminal", "ada")
    await engine.next_trap(ada.id)
    [confirm] = await engine.submit_answer(ada.id, HALF)
    assert confirm.kind is ReplyKind.CONFIRM
    [verdict] = await engine.act(ada.id, button(confirm, "Confirm 2/5"))
    [prompt] = await engine.act(ada.id, button(verdict, "Try the follow-up"))
    assert prompt.kind is ReplyKind.FOLLOWUP
    [check] = await engine.submit_answer(ada.id, "judge-breaker says overoptimization")
    assert "Did your answer get there?" in check.text and "**The point:**" in check.text
    [noted] = await engine.act(ada.id, button(check, "I got there"))
    assert noted.text.startswith("Noted")
    row = followups(engine)[0]
    assert (row.status, row.rescued, row.verdict, row.judge) == (
        FollowUpStatus.ANSWERED,
        True,
        "said-yes",
        "self",
    )
    [stale] = await engine.act(ada.id, button(check, "Not quite"))
    assert stale.kind is ReplyKind.ERROR


async def test_forged_and_stale_follow_up_buttons_get_a_clear_message(
    db, small_deck, clock
) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    bob = engine.learner("terminal", "bob")
    verdict = await missed_one_core(engine, ada.id)
    [theirs] = await engine.act(bob.id, button(verdict, "Try the follow-up"))
    assert theirs.kind is ReplyKind.ERROR and "not yours" in theirs.text
    [odd] = await engine.act(ada.id, Action(Verb.FOLLOWUP, verdict.review_id, "maybe").encode())
    assert odd.kind is ReplyKind.ERROR and "unknown follow-up button" in odd.text
    [gone] = await engine.act(ada.id, Action(Verb.FOLLOWUP, 999999).encode())
    assert gone.kind is ReplyKind.ERROR
    await engine.act(ada.id, button(verdict, "Try the follow-up"))
    await engine.submit_answer(ada.id, "the optimiser finds overoptimization in the RM")
    [twice] = await engine.act(ada.id, button(verdict, "Try the follow-up"))
    assert twice.kind is ReplyKind.ERROR and "already" in twice.text


async def test_undo_closes_the_follow_up_and_forget_deletes_it(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    verdict = await missed_one_core(engine, ada.id)
    await engine.act(ada.id, button(verdict, "Try the follow-up"))
    await engine.undo(ada.id)
    assert followups(engine)[0].status == FollowUpStatus.CLOSED
    [regraded] = await engine.submit_answer(ada.id, ALL)  # answers the reopened trap
    assert regraded.kind is ReplyKind.VERDICT
    await engine.forget(ada.id, confirmed=True)
    with Session(engine.db) as session:
        assert (
            session.exec(select(FollowUp)).all() == [] and session.exec(select(Asked)).all() == []
        )


# ----- variants ------------------------------------------------------------------------------


def test_choose_variant_rules(small_deck) -> None:
    card = small_deck.get("rl-91")
    first, second = (v.id for v in card.variants)
    rng = FirstOfTies()
    assert choose_variant(card, {}, first_meeting=True, rng=rng) is None
    assert choose_variant(card, {None: 1}, first_meeting=False, rng=rng).id == first
    assert choose_variant(card, {None: 1, first: 1}, first_meeting=False, rng=rng).id == second
    assert (
        choose_variant(card, {None: 9, first: 3, second: 2}, first_meeting=False, rng=rng).id
        == second
    )
    picks = {
        choose_variant(card, {}, first_meeting=False, rng=random.Random(seed)).id
        for seed in range(20)
    }
    assert picks == {first, second}  # a tie goes to the injected rng
    bare = card.model_copy(update={"variants": []})
    assert choose_variant(bare, {}, first_meeting=False, rng=rng) is None
    assert parse_wording_ref(wording_ref("rl-91", 2)) == ("rl-91", 2)
    assert parse_wording_ref("rl-91") == ("rl-91", 0) and parse_wording_ref("rl-91.x") == (
        "rl-91",
        0,
    )


async def review_due(engine: QuizEngine, clock, learner_id: int, card_id: str) -> Reply:
    """Move the clock to the card's due day and ask."""
    with Session(engine.db) as session:
        state = session.exec(
            select(CardState).where(
                CardState.learner_id == learner_id, CardState.card_id == card_id
            )
        ).one()
        due = state.due_on
    clock.set(clock.now() + timedelta(days=(due - clock.now().date()).days))
    [question] = await engine.next_trap(learner_id)
    assert question.card_id == card_id
    return question


async def test_variants_rotate_across_reviews_for_one_learner(db, small_deck, clock) -> None:
    judge = NamedJudge()
    engine = make(db, small_deck, clock, judge, rng=FirstOfTies())
    ada = engine.learner("terminal", "ada")
    card = small_deck.get("rl-91")
    first, second = card.variants

    [question] = await engine.next_trap(ada.id)  # the first meeting: the original, with its source
    assert card.question.split()[0] in question.text and card.title in question.text
    assert card.source.date in question.text and question.wording == 0
    await engine.submit_answer(ada.id, ALL)

    asked = []
    for _ in range(3):
        question = await review_due(engine, clock, ada.id, "rl-91")
        # Asking again before answering keeps the wording.
        [again] = await engine.next_trap(ada.id)
        assert again.text == question.text
        asked.append(question)
        await engine.submit_answer(ada.id, ALL)
    assert [q.wording for q in asked] == [1, 2, 1]
    assert first.question in asked[0].text and second.question in asked[1].text
    for q in asked:  # no title or source beside a variant
        assert card.title not in q.text and card.source.date not in q.text and "`rl-91`" in q.text
    assert [r.variant_id for r in reviews(engine, ada.id)] == [None, first.id, second.id, first.id]
    [stats] = await engine.stats(ada.id, with_plot=False)
    assert "In another setting: 3 of 3 reviews recalled (3+)" in stats.text
    # The judge read each answer with the question that was asked.
    assert judge.questions == [card.question, first.question, second.question, first.question]


async def test_variants_are_independent_across_learners(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock, rng=FirstOfTies())
    ada, bob = engine.learner("terminal", "ada"), engine.learner("telegram", "bob")
    card = small_deck.get("rl-91")
    first, second = card.variants
    for learner in (ada, bob):
        [question] = await engine.next_trap(learner.id)
        assert question.wording == 0  # everyone meets the original first
        await engine.submit_answer(learner.id, ALL)
    question = await review_due(engine, clock, ada.id, "rl-91")
    assert question.wording == 1
    await engine.submit_answer(ada.id, ALL)
    # Bob has seen neither variant: his own tie, broken toward the first, not Ada's counts.
    [question] = await engine.next_trap(bob.id)
    assert question.card_id == "rl-91" and question.wording == 1 and first.question in question.text
    await engine.submit_answer(bob.id, ALL)
    question = await review_due(engine, clock, ada.id, "rl-91")
    assert question.wording == 2 and second.question in question.text


async def test_a_push_carries_the_wording_and_a_skipped_variant_comes_back_the_same(
    db, small_deck, clock
) -> None:
    engine = make(db, small_deck, clock, rng=FirstOfTies())
    ada = engine.learner("terminal", "ada")
    await engine.next_trap(ada.id)
    await engine.submit_answer(ada.id, ALL)
    clock.advance(days=1)
    pushed = (await engine.push_replies(ada.id))[-1]
    ref = Action.decode(button(pushed, "Answer now")).arg
    assert ref == "rl-91.1" and pushed.wording == 1
    [opened] = await engine.act(ada.id, button(pushed, "Answer now"))
    assert opened.wording == 1
    await engine.skip(ada.id)
    clock.advance(days=1)
    [question] = await engine.next_trap(ada.id)
    assert question.wording == 1  # shown but never answered: the same wording
    [missing] = await engine.open_card(ada.id, "rl-99.1")
    assert missing.kind is ReplyKind.ERROR


@pytest.mark.parametrize("answer", [HALF])
async def test_a_follow_up_on_a_variant_probes_the_same_key(db, small_deck, clock, answer) -> None:
    engine = make(db, small_deck, clock, rng=FirstOfTies())
    ada = engine.learner("terminal", "ada")
    await engine.next_trap(ada.id)
    await engine.submit_answer(ada.id, ALL)
    clock.advance(days=1)
    [question] = await engine.next_trap(ada.id)
    assert question.wording == 1
    [verdict] = await engine.submit_answer(ada.id, answer)
    [prompt] = await engine.act(ada.id, button(verdict, "Try the follow-up"))
    assert small_deck.get("rl-91").key_point("overoptimization").probe in prompt.text


async def test_what_a_free_text_answers_while_a_follow_up_is_open(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock)
    ada = engine.learner("terminal", "ada")
    verdict = await missed_one_core(engine, ada.id)
    await engine.act(ada.id, button(verdict, "Try the follow-up"))
    # A reply to the trap's own message (its card named) answers the trap again, not the follow-up.
    [graded] = await engine.submit_answer(ada.id, ALL, card_id="rl-91")
    assert graded.kind is ReplyKind.VERDICT and len(reviews(engine, ada.id)) == 2
    assert followups(engine)[0].status == FollowUpStatus.OPEN
    # A reply to the follow-up's message answers it; once answered, such a reply is turned down.
    [result] = await engine.submit_answer(
        ada.id, "the optimiser finds overoptimization in the RM", card_id="rl-91", to_follow_up=True
    )
    assert "You got there." in result.text
    [closed] = await engine.submit_answer(
        ada.id, "one more thought on overoptimization", card_id="rl-91", to_follow_up=True
    )
    assert closed.kind is ReplyKind.ERROR and "closed" in closed.text
    [closed] = await engine.submit_answer(
        ada.id, "and another thought", follow_up_of=verdict.review_id
    )
    assert closed.kind is ReplyKind.ERROR and "closed" in closed.text
    [empty] = await engine.submit_answer(ada.id, " ", follow_up_of=verdict.review_id)
    assert empty.kind is ReplyKind.ERROR and "empty" in empty.text
    assert len(followups(engine)) == 1 and len(reviews(engine, ada.id)) == 2


class HangsOnFollowUps(NamedJudge):
    """Never returns on a follow-up answer, like a process killed while the judge reads it."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        if "hang" in answer:
            self.started.set()
            await asyncio.Event().wait()
        return await super().assess(card, answer, interactive=interactive)


async def test_a_follow_up_answer_left_unread_by_a_crash_is_read_at_the_next_start(
    db_url, small_deck, clock
) -> None:
    from bot.db import make_engine

    judge = HangsOnFollowUps()
    first = make(make_engine(db_url), small_deck, clock, judge)
    ada = first.learner("terminal", "ada")
    verdict = await missed_one_core(first, ada.id)
    await first.act(ada.id, button(verdict, "Try the follow-up"))
    task = asyncio.create_task(first.submit_answer(ada.id, "hang on: overoptimization of the RM"))
    await judge.started.wait()
    task.cancel()  # the process dies while the judge reads
    with pytest.raises(asyncio.CancelledError):
        await task
    first.db.dispose()
    assert followups(first)[0].status == FollowUpStatus.JUDGING  # stored before it was read

    second = make(make_engine(db_url), small_deck, clock)
    try:
        [(learner_id, replies)] = await second.recover_pending()
        assert learner_id == ada.id and "read after a restart" in replies[0].text
        assert "You got there." in replies[1].text
        [row] = followups(second)
        assert (row.status, row.rescued, row.review_id) == (
            FollowUpStatus.ANSWERED,
            True,
            verdict.review_id,
        )
        assert await second.recover_pending() == []  # read once
    finally:
        second.db.dispose()
