"""Issue 15 in the terminal chat (in process, on a real SQLite file): the follow-up answered on
the next line, skipped with /skip, answered after the chat restarts; variants on review."""

from __future__ import annotations

import io
import random
from datetime import timedelta

import pytest
from sqlmodel import Session, select

from bot.db import make_engine
from bot.engine import QuizEngine
from bot.models import Asked, CardState, FollowUp, FollowUpStatus, Learner, Review
from bot.terminal import TerminalChat
from cards.schema import Card
from grader.base import Assessment, Judgement, PointJudgement, PointVerdict
from grader.scoring import grade_from_judgement

HALF = "kl-keeps-in-distribution and not much more to say about it"
GETS_THERE = "the optimiser finds overoptimization in the reward model"


class NamedJudge:
    """A point is present when the answer names its id (the whole answer is the quote)."""

    name = "named"

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        points = tuple(
            PointJudgement(p.id, PointVerdict.PRESENT, answer)
            if p.id in answer
            else PointJudgement(p.id, PointVerdict.ABSENT)
            for p in card.key_points
        )
        judgement = Judgement(judge=self.name, points=points)
        return Assessment(self.name, grade_from_judgement(card, judgement, answer))


@pytest.fixture
def named_judge() -> NamedJudge:
    return NamedJudge()


async def run_chat(engine: QuizEngine, lines: list[str]) -> str:
    out = io.StringIO()
    chat = TerminalChat(engine, io.StringIO("\n".join(lines) + "\n"), out, user="ada")
    await chat.run()
    return out.getvalue()


def engine_on(db_url: str, deck, clock, grader) -> QuizEngine:
    return QuizEngine(make_engine(db_url), deck, grader, clock, interactive=False)


def rows(engine: QuizEngine) -> list[FollowUp]:
    with Session(engine.db) as session:
        return list(session.exec(select(FollowUp)))


async def test_the_follow_up_answered_on_the_next_line(
    db_url, small_deck, clock, named_judge
) -> None:
    engine = engine_on(db_url, small_deck, clock, named_judge)
    out = await run_chat(engine, ["a", "/trap", HALF, "a", GETS_THERE, "/stats", "/quit"])
    probe = small_deck.get("rl-91").key_point("overoptimization").probe
    assert "[a] Try the follow-up" in out
    assert " ".join(probe.split()[:6]) in " ".join(out.split())
    assert "(Your next line answers the follow-up; /skip skips it.)" in out
    assert "You got there." in out and "Follow-ups: 1 of 1" in out
    [row] = rows(engine)
    assert row.status == FollowUpStatus.ANSWERED and row.answer == GETS_THERE
    engine.db.dispose()


async def test_the_follow_up_skipped_with_slash_skip(
    db_url, small_deck, clock, named_judge
) -> None:
    engine = engine_on(db_url, small_deck, clock, named_judge)
    out = await run_chat(engine, ["a", "/trap", HALF, "a", "/skip", GETS_THERE, "/quit"])
    assert "Follow-up skipped." in out and "There is no open trap" in out
    assert rows(engine)[0].status == FollowUpStatus.SKIPPED
    engine.db.dispose()


async def test_the_follow_up_answered_after_the_chat_restarts(
    db_url, small_deck, clock, named_judge
) -> None:
    first = engine_on(db_url, small_deck, clock, named_judge)
    await run_chat(first, ["a", "/trap", HALF, "a", "/quit"])
    first.db.dispose()
    clock.advance(hours=2)
    second = engine_on(db_url, small_deck, clock, named_judge)  # a new process
    out = await run_chat(second, [GETS_THERE, "/quit"])
    assert "Your follow-up is still open" in out and "You got there." in out
    [row] = rows(second)
    with Session(second.db) as session:
        [review] = session.exec(select(Review)).all()
    assert row.review_id == review.id and row.rescued is True
    second.db.dispose()


async def test_a_review_in_the_chat_asks_a_variant(db_url, small_deck, clock, named_judge) -> None:
    engine = engine_on(db_url, small_deck, clock, named_judge)
    card = small_deck.get("rl-91")
    everything = " ".join(p.id for p in card.key_points) + " and that is the whole story"
    out = await run_chat(engine, ["a", "/trap", everything, "/quit"])
    assert card.source.date in out
    with Session(engine.db) as session:
        due = session.exec(select(CardState)).one().due_on
    clock.set(clock.now() + timedelta(days=(due - clock.now().date()).days))
    out = await run_chat(engine, ["/quit"])  # the chat opens on the due review
    assert "The same mechanism, another setting" in out and card.source.date not in out
    assert any(" ".join(v.question.split()[:6]) in " ".join(out.split()) for v in card.variants)
    engine.db.dispose()


class FirstOfTies(random.Random):
    """Breaks every tie toward the card's first variant, so a shared count would show."""

    def choice(self, seq):  # type: ignore[override]
        return seq[0]


async def test_variants_rotate_per_learner_and_independently(
    db_url, small_deck, clock, named_judge
) -> None:
    engine = engine_on(db_url, small_deck, clock, named_judge)
    engine.rng = FirstOfTies()
    engine.learning_step = timedelta(0)  # each /trap repeats the missed trap at once: rotation is what is tested
    card = small_deck.get("rl-91")

    async def session(user: str, answers: int) -> str:
        out = io.StringIO()
        lines = ["a"] + ["/trap", HALF] * answers + ["/quit"]
        await TerminalChat(engine, io.StringIO("\n".join(lines) + "\n"), out, user=user).run()
        return out.getvalue()

    ada = await session("ada", 4)
    bob = await session("bob", 3)
    first, second = (v.id for v in card.variants)
    assert asked(engine, "ada") == [None, first, second, first]
    assert asked(engine, "bob") == [None, first, second]  # his own least seen, not Ada's
    flat = " ".join(ada.split())
    for variant in card.variants:
        assert " ".join(variant.question.split()[:8]) in flat
    assert "The same mechanism, another setting" in bob
    engine.db.dispose()


def asked(engine: QuizEngine, user: str) -> list[str | None]:
    """The wordings shown to a terminal learner, in order."""
    with Session(engine.db) as session:
        learner = session.exec(select(Learner).where(Learner.platform_user_id == user)).one()
        rows = session.exec(select(Asked).where(Asked.learner_id == learner.id).order_by(Asked.id))
        return [row.variant_id for row in rows]
