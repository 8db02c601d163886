"""A variant is whole in the engine: the judge, the verdict, /hint and the follow-up read the
variant's own labels, probes and hints when the learner was asked that variant."""

from __future__ import annotations

from cards.schema import Card
from cards.wording import as_asked
from tests.test_interview import ALL, HALF, FirstOfTies, NamedJudge, button, make


class CardKeepingJudge(NamedJudge):
    def __init__(self) -> None:
        super().__init__()
        self.cards: list[Card] = []

    async def assess(self, card: Card, answer: str, *, interactive: bool):
        self.cards.append(card)
        return await super().assess(card, answer, interactive=interactive)


async def test_a_variant_answer_is_judged_and_shown_in_the_variants_words(db, small_deck, clock) -> None:
    judge = CardKeepingJudge()
    engine = make(db, small_deck, clock, judge)
    engine.rng = FirstOfTies()
    card = small_deck.get("rl-91")
    variant = card.variants[0]
    relabelled = next(p for p in variant.points if p.label)
    original_label = card.key_point(relabelled.id).label
    ada = engine.learner("terminal", "ada")
    await engine.next_trap(ada.id)
    await engine.submit_answer(ada.id, ALL)  # the original, recalled: due tomorrow
    clock.advance(days=1)
    [question] = await engine.next_trap(ada.id)
    assert question.wording == 1 and variant.question.split()[0] in question.text
    [hint] = await engine.hint(ada.id)
    assert hint.text == f"💡 {variant.hint or card.hint}"
    [verdict] = await engine.submit_answer(ada.id, HALF)
    judged = judge.cards[-1]
    assert judged.question == variant.question
    assert judged.key_point(relabelled.id).label == relabelled.label
    assert relabelled.label in verdict.text and original_label not in verdict.text
    [prompt] = await engine.act(ada.id, button(verdict, "Try the follow-up"))
    asked = as_asked(card, variant.id)
    assert any(p.probe and p.probe.split("?")[0] in prompt.text for p in asked.key_points)
    [shown] = await engine.submit_answer(ada.id, "no idea what to say here really")
    assert judge.questions[-1] in {p.probe for p in asked.key_points}  # read against the variant's probe
    assert shown.card_id == card.id
