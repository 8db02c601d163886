"""The grade rule means recall on every card: exactly the core is 3, everything is 5."""

from __future__ import annotations

import pytest

from cards.deck import default_deck
from grader.base import Judgement, MisconceptionJudgement, PointJudgement, PointVerdict
from grader.scoring import (
    ASSERTS_MISCONCEPTION,
    CONTRADICTS_POINT,
    INJECTION_CAP,
    INSTRUCTS_GRADER,
    LIFT_CUTS,
    MISSING_CORE,
    PASS_QUALITY,
    check_evidence,
    grade_from_judgement,
    grade_from_labels,
    quote_in_answer,
    valid_quote,
)

DECK = list(default_deck())
QUOTE = "the reward model is only a proxy for what people want"
ANSWER = f"Well, {QUOTE}. The KL term keeps us where it is accurate; beta 0 means reward hacking."


def judgement(card, present=(), *, partial=(), contradicted=(), asserted=(), injection=False):
    def verdict(point_id):
        if point_id in contradicted:
            return PointVerdict.CONTRADICTED
        if point_id in present:
            return PointVerdict.PRESENT
        return PointVerdict.PARTIAL if point_id in partial else PointVerdict.ABSENT

    return Judgement(
        judge="test",
        points=tuple(
            PointJudgement(p.id, verdict(p.id), QUOTE if verdict(p.id) is not PointVerdict.ABSENT else "")
            for p in card.key_points
        ),
        misconceptions=tuple(
            MisconceptionJudgement(m.id, m.id in asserted, QUOTE if m.id in asserted else "")
            for m in card.misconceptions
        ),
        injection_suspected=injection,
    )


def quality(card, **kwargs) -> int:
    return grade_from_judgement(card, judgement(card, **kwargs), ANSWER).quality


def ids(points) -> set[str]:
    return {p.id for p in points}


@pytest.mark.parametrize("card", DECK, ids=lambda card: card.id)
def test_the_rule_means_the_same_on_every_card(card):
    core, extra = ids(card.core_points), ids(card.extra_points)
    assert quality(card, present=core) == PASS_QUALITY
    assert quality(card, present=core | extra) == 5
    for missing in core:
        assert quality(card, present=(core | extra) - {missing}) <= 2
        assert quality(card, present=(core | extra) - {missing}, partial={missing}) == 2
    trap = {card.misconceptions[0].id}
    assert quality(card, asserted=trap) == 0
    assert quality(card, present=extra, asserted=trap) == 0
    assert quality(card, present=core | extra, asserted=trap) == 1
    assert quality(card, present=extra) == 1
    assert quality(card) == 0


@pytest.mark.parametrize("card", DECK, ids=lambda card: card.id)
def test_non_core_coverage_lifts_a_pass_monotonically(card):
    core, extra = ids(card.core_points), [p.id for p in card.extra_points]
    grades = [quality(card, present=core | set(extra[:n])) for n in range(len(extra) + 1)]
    assert grades == sorted(grades) and grades[0] == 3 and grades[-1] == 5


def two_extra_points_card():
    """A deck card cut to its core plus two equally weighted non-core points."""
    card = DECK[0]
    extra = [p.model_copy(update={"weight": 1.0}) for p in card.extra_points[:2]]
    points = card.core_points + extra
    answers = [a.model_copy(update={"credits": None}) for a in card.reference_answers]
    return card.model_copy(update={"key_points": points, "reference_answers": answers})


def test_lift_cut_points():
    card = two_extra_points_card()
    core, (a, b) = ids(card.core_points), [p.id for p in card.extra_points]
    assert LIFT_CUTS == (0.4, 0.8)
    assert quality(card, present=core, partial={a}) == 3  # coverage 0.25
    assert quality(card, present=core | {a}) == 4  # 0.5
    assert quality(card, present=core | {a}, partial={b}) == 4  # 0.75
    assert quality(card, present=core | {a, b}) == 5


def test_reasons_say_why_a_grade_is_not_higher():
    card = DECK[0]
    core, extra = ids(card.core_points), ids(card.extra_points)
    assert grade_from_judgement(card, judgement(card, present=core | extra), ANSWER).caps == ()
    missing = grade_from_judgement(card, judgement(card, present=extra), ANSWER)
    assert missing.caps == (MISSING_CORE,)
    fell = grade_from_judgement(card, judgement(card, asserted={card.misconceptions[0].id}), ANSWER)
    assert fell.caps[0] == ASSERTS_MISCONCEPTION
    wrong_extra = next(iter(extra))
    contradicted = grade_from_judgement(
        card, judgement(card, present=core, contradicted={wrong_extra}), ANSWER
    )
    assert contradicted.quality == 2 and contradicted.caps == (CONTRADICTS_POINT,)


def test_a_suspected_injection_caps_at_one_and_never_raises():
    card = DECK[0]
    everything = ids(card.key_points)
    capped = grade_from_judgement(card, judgement(card, present=everything, injection=True), ANSWER)
    assert capped.quality == INJECTION_CAP and INSTRUCTS_GRADER in capped.caps
    assert quality(card, injection=True) == 0


def test_labels_and_judgements_agree():
    for card in DECK:
        core, extra = ids(card.core_points), ids(card.extra_points)
        assert grade_from_labels(card, core) == 3
        assert grade_from_labels(card, core | extra) == 5
        assert grade_from_labels(card, (), asserts=[card.misconceptions[0].id]) == 0


# ----- evidence -----------------------------------------------------------------------------


def test_verdicts_without_real_evidence_are_absent():
    card = DECK[0]
    everything = ids(card.key_points)
    for bad_quote in ("Goodhart's law in the flesh", "", "e", "the", "  ...  ", "reward model is"[:5]):
        forged = Judgement(
            judge="test",
            points=tuple(PointJudgement(p.id, PointVerdict.PRESENT, bad_quote) for p in card.key_points),
        )
        checked = check_evidence(card, forged, ANSWER)
        assert all(p.verdict is PointVerdict.ABSENT for p in checked.points), bad_quote
        assert grade_from_judgement(card, forged, ANSWER).quality == 0
    trusted = grade_from_judgement(card, judgement(card, present=everything), ANSWER, check_quotes=False)
    assert trusted.quality == 5


def test_a_misconception_needs_a_quote_too():
    card = DECK[0]
    forged = Judgement(
        judge="test",
        points=(),
        misconceptions=(MisconceptionJudgement(card.misconceptions[0].id, True, "never said this"),),
    )
    assert not check_evidence(card, forged, ANSWER).misconceptions[0].asserted


def test_short_quotes_count_only_as_accepted_phrasings():
    answer = "Covariate shift; errors compound, eps T^2."
    assert not valid_quote("errors compound", answer)  # two words, not an accepted phrasing
    assert valid_quote("errors compound", answer, accepts=["errors compound"])
    assert valid_quote("Covariate shift", answer, accepts=["covariate shift"])
    assert valid_quote("shift; errors compound", answer)  # three words
    assert not valid_quote("variate shift", answer, accepts=["variate shift"])  # inside a word


def test_quote_matching_folds_case_width_invisible_and_look_alike_letters():
    answer = "The KL term  keeps the policy\nwhere the reward model's scores are accurate."
    assert quote_in_answer("the kl term keeps the policy where the reward model\u2019s scores", answer)
    assert quote_in_answer("  keeps the policy. ", answer)
    assert quote_in_answer("ｋｅｅｐｓ the po\u200blicy", answer)  # full-width, zero-width space
    assert quote_in_answer("k\u0435eps the p\u043elicy", answer)  # Cyrillic e and o
    assert not quote_in_answer("keeps the policy close", answer)
    assert not quote_in_answer("eeps the polic", answer)  # not on word boundaries
    assert not quote_in_answer("", answer) and not quote_in_answer(" ... ", answer)
