"""An offline reading that says where it is unsure: the chats ask only about the points in
doubt, a sure reading asks about none, and the learner can still correct any point."""

from __future__ import annotations

import re

from bot.actions import Action, Verb
from bot.replies import ReplyKind
from cards.schema import Card
from grader.base import Assessment, Judgement, PointJudgement, PointVerdict
from grader.scoring import grade_from_judgement
from tests.test_engine import button, make


class DoubtfulJudge:
    """Credits the first two points; unsure of ``unsure`` (point ids), with a measured margin."""

    name = "doubtful"

    def __init__(self, unsure: tuple[str, ...], margin: float | None = 0.1):
        self.unsure, self.margin = unsure, margin

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        points = tuple(
            PointJudgement(p.id, PointVerdict.PRESENT if i < 2 else PointVerdict.ABSENT, answer if i < 2 else "")
            for i, p in enumerate(card.key_points)
        )
        judgement = Judgement(judge=self.name, points=points, unsure_points=self.unsure, margin=self.margin)
        grade = grade_from_judgement(card, judgement, answer)
        return Assessment(
            grader=self.name, grade=grade, needs_confirmation=interactive, sure=not self.unsure, unsure_points=self.unsure
        )


def ticks(reply) -> list[str]:
    return [Action.decode(b.data).arg for row in reply.buttons for b in row if Action.decode(b.data).verb is Verb.TICK]


async def open_and_answer(engine, text="a long enough answer about the reward model and its proxy"):
    learner = engine.learner("terminal", "ada")
    await engine.next_trap(learner.id)
    [confirm] = await engine.submit_answer(learner.id, text)
    assert confirm.kind is ReplyKind.CONFIRM
    return learner, confirm


async def test_only_the_points_in_doubt_are_asked(db, small_deck, clock) -> None:
    card = small_deck.cards[0]
    third = card.key_points[2].id
    engine = make(db, small_deck, clock, DoubtfulJudge((third,)))
    learner, confirm = await open_and_answer(engine)
    assert ticks(confirm) == ["3", "all"]
    assert "Whether it passes turns on point 3, and I am unsure of it" in confirm.text
    [ticked] = await engine.act(learner.id, button(confirm, Verb.TICK, "3"))
    assert ticks(ticked) == ["3", "all"] and "3. ✅" in ticked.buttons[0][0].label


async def test_a_sure_reading_asks_nothing_but_can_be_corrected(db, small_deck, clock) -> None:
    card = small_deck.cards[0]
    engine = make(db, small_deck, clock, DoubtfulJudge(()))
    learner, confirm = await open_and_answer(engine)
    assert ticks(confirm) == ["all"]
    quality = int(re.search(r"that grades \*\*(\d)/5", confirm.text).group(1))
    assert ("I am sure it passes" if quality >= 3 else "I am sure it does not pass yet") in confirm.text
    [every] = await engine.act(learner.id, button(confirm, Verb.TICK, "all"))
    assert ticks(every) == [str(i) for i in range(1, len(card.key_points) + 1)]
    assert "Tap a point to correct it" in every.text
    [ticked] = await engine.act(learner.id, button(every, Verb.TICK, "4"))  # the choice survives a tick
    assert len(ticks(ticked)) == len(card.key_points)
    [verdict] = await engine.act(learner.id, button(ticked, Verb.CONFIRM))
    assert verdict.kind is ReplyKind.VERDICT and "doubtful + you" in verdict.text


async def test_a_reading_without_a_measured_margin_asks_every_point(db, small_deck, clock) -> None:
    card = small_deck.cards[0]
    engine = make(db, small_deck, clock, DoubtfulJudge((), margin=None))
    _, confirm = await open_and_answer(engine)
    assert ticks(confirm) == [str(i) for i in range(1, len(card.key_points) + 1)]
    assert "Tap a point to correct it" in confirm.text


def test_the_terminal_keeps_one_key_for_correcting_a_sure_reading() -> None:
    from bot.replies import Button
    from bot.terminal import key_for

    assert key_for(Button("Correct a point", Action(Verb.TICK, 7, "all").encode())) == "g"
    assert key_for(Button("3. ❌", Action(Verb.TICK, 7, "3").encode())) == "3"


class TrapReadingJudge(DoubtfulJudge):
    """Credits the first two points and reads the first misconception as asserted; unsure of
    that reading when ``unsure_of_trap``."""

    def __init__(self, unsure_of_trap: bool):
        super().__init__(())
        self.unsure_of_trap = unsure_of_trap

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        from grader.base import MisconceptionJudgement

        points = tuple(
            PointJudgement(p.id, PointVerdict.PRESENT if i < 2 else PointVerdict.ABSENT, answer if i < 2 else "")
            for i, p in enumerate(card.key_points)
        )
        misconceptions = tuple(
            MisconceptionJudgement(m.id, i == 0, answer if i == 0 else "") for i, m in enumerate(card.misconceptions)
        )
        unsure = (card.misconceptions[0].id,) if self.unsure_of_trap else ()
        judgement = Judgement(
            judge=self.name, points=points, misconceptions=misconceptions, unsure_points=unsure, margin=0.1
        )
        grade = grade_from_judgement(card, judgement, answer)
        return Assessment(grader=self.name, grade=grade, needs_confirmation=interactive, sure=not unsure, unsure_points=unsure)


async def test_a_trap_reading_in_doubt_can_be_cleared_and_put_back(db, small_deck, clock) -> None:
    """An unsure reading that the answer asserts the trap gets a button: the learner clears it,
    the grade is no longer capped by it, a second tap puts it back, and the confirmed grade is
    the one shown."""
    engine = make(db, small_deck, clock, TrapReadingJudge(unsure_of_trap=True))
    learner, confirm = await open_and_answer(engine)
    assert ticks(confirm) == ["trap", "all"] and "tap **Not the trap**" in confirm.text
    capped = int(confirm.text.split("that grades **")[1][0])
    [cleared] = await engine.act(learner.id, button(confirm, Verb.TICK, "trap"))
    assert "reads like the trap" not in cleared.text and ticks(cleared) == ["trap", "all"]
    assert [b.label for row in cleared.buttons for b in row if b.label.endswith("trap")] == ["It is the trap"]
    free = int(cleared.text.split("that grades **")[1][0])
    assert free > capped
    [back] = await engine.act(learner.id, button(cleared, Verb.TICK, "trap"))
    assert "reads like the trap" in back.text and int(back.text.split("that grades **")[1][0]) == capped
    [again] = await engine.act(learner.id, button(back, Verb.TICK, "trap"))
    [verdict] = await engine.act(learner.id, button(again, Verb.CONFIRM))
    assert verdict.kind is ReplyKind.VERDICT and f"{free}/5" in verdict.text


async def test_a_sure_trap_reading_is_disputed_through_correct_a_point(db, small_deck, clock) -> None:
    engine = make(db, small_deck, clock, TrapReadingJudge(unsure_of_trap=False))
    learner, confirm = await open_and_answer(engine)
    assert ticks(confirm) == ["all"] and "Not the trap" not in confirm.text
    [every] = await engine.act(learner.id, button(confirm, Verb.TICK, "all"))
    assert "trap" in ticks(every)


def test_the_terminal_has_a_key_for_not_the_trap() -> None:
    from bot.replies import Button
    from bot.terminal import key_for

    assert key_for(Button("Not the trap", Action(Verb.TICK, 7, "trap").encode())) == "b"
