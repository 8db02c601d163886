"""Non-answers and answers to other questions (issue 42 item 13, issue 37): the cheap screens of
``grader.offline.screens`` alone, then through the offline judge on a small fixed subset of the set
``python -m grader.calibration.offline_eval non-answers`` generates for every card."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from cards.deck import default_deck
from grader.base import Judgement, MisconceptionJudgement, PointJudgement, PointVerdict
from grader.calibration.offline_eval import DENIAL_FRAMES, FILLER, key_terms, memo, whole_key
from grader.offline.judge import doubts
from grader.offline.screens import (
    OFF_TOPIC_MARGIN,
    denial_frame,
    is_term_list,
    restates_question,
    stem_pairs,
    topic_index,
)
from grader.scoring import PASS_QUALITY, grade_from_judgement

DECK = default_deck()


def test_a_copy_of_the_question_restates_it_and_a_short_answer_in_its_words_does_not():
    card = DECK.get("rl-16")
    question = stem_pairs(card.question)
    assert restates_question(" ".join(card.question.split()[:25]), question)
    assert not restates_question("Monte Carlo survives; TD is the one that breaks.", question)


@pytest.mark.parametrize("card_id", ["rl-01", "rl-02", "rl-08"])
def test_the_cards_key_terms_are_a_term_list(card_id):
    terms = key_terms(DECK.get(card_id))
    assert is_term_list(terms) and is_term_list(terms.replace(", ", "\n"))


@pytest.mark.parametrize(
    "text",
    [
        "The reward model is a proxy, so its score can rise while quality falls.",
        "Q explodes: targets use a' ~ pi(.|s') outside the data; the actor exploits the errors.",
    ],
)
def test_claims_and_terse_relations_are_not_term_lists(text):
    assert not is_term_list(text)


@pytest.mark.parametrize("frame", DENIAL_FRAMES)
def test_every_denial_frame_is_read(frame):
    assert denial_frame(f"{frame} the policy keeps close.") == len(frame) + 1


@pytest.mark.parametrize(
    "text",
    [
        "It is not the data that matters, it is the actions.",
        "No. The data is not IID.",
        "It is not obvious that it fails.",
    ],
)
def test_a_cleft_or_a_bare_no_is_not_a_denial_frame(text):
    assert denial_frame(text) == 0


def test_an_answer_is_nearest_its_own_card():
    own = DECK.get("rl-08").reference_answers[0].text
    index = topic_index(DECK.get("rl-08"))
    assert index.margin("rl-08", own) > 0
    assert index.margin("rl-11", own) < OFF_TOPIC_MARGIN


def quality(judge, card, answer: str) -> int:
    return grade_from_judgement(card, judge.judge(card, answer), answer).quality


def test_question_repeats_and_term_lists_earn_nothing(offline_judge):
    for card_id in (
        "rl-06",
        "rl-02",
    ):  # issue 42: the question passed on rl-06, rl-02's terms got 4
        card = DECK.get(card_id)
        assert quality(offline_judge, card, " ".join(card.question.split())) == 0
        assert quality(offline_judge, card, key_terms(card)) == 0


def test_filler_and_an_examiners_memo_pass_nothing(offline_judge):
    card = DECK.get("rl-08")
    assert quality(offline_judge, card, FILLER) == 0
    judgement = offline_judge.judge(card, memo(card))
    assert judgement.injection_suspected


@pytest.mark.parametrize("frame", [DENIAL_FRAMES[0], DENIAL_FRAMES[5]])
def test_a_denial_frame_before_the_whole_key_does_not_pass(offline_judge, frame):
    card = DECK.get("rl-01")  # issue 42: 3 with every frame
    key = whole_key(card)
    assert quality(offline_judge, card, f"{frame} {key[0].lower()}{key[1:]}") < PASS_QUALITY


def test_an_expert_answer_to_another_card_does_not_pass_here(offline_judge):
    answer = DECK.get("rl-08").reference_answers[0].text
    assert quality(offline_judge, DECK.get("rl-08"), answer) >= PASS_QUALITY
    assert quality(offline_judge, DECK.get("rl-11"), answer) < PASS_QUALITY


def test_an_answer_to_another_card_is_a_sure_fail(offline_judge):
    """The screen decides it: no point in doubt is left for the learner to confirm (before,
    half of the newstyles "neighbour" answers asked the learner about points that could not
    make them pass)."""
    answer = DECK.get("rl-01").reference_answers[0].text  # before: rl-14 asked about two points
    judgement = offline_judge.judge(DECK.get("rl-14"), answer)
    assert judgement.feedback.startswith("This reads like an answer to another question")
    assert judgement.unsure_points == () and judgement.margin is None


# ----- sure or unsure ---------------------------------------------------------------------------


def reading(present, asserted, contradicted=None, cuts=(0.3, 0.6, 0.8, 0.9)):
    """A stand-in for the learnt reading's probabilities (``PointModel``'s two methods)."""
    contradicted = np.zeros(len(present)) if contradicted is None else np.asarray(contradicted)
    return SimpleNamespace(
        cuts=cuts,
        point_probabilities=lambda _: (np.asarray(present), np.asarray(present), contradicted),
        asserted_probabilities=lambda _: np.asarray(asserted),
    )


def verdicts(card, present_ids, asserted_ids=()):
    points = tuple(
        PointJudgement(p.id, PointVerdict.PRESENT if p.id in present_ids else PointVerdict.ABSENT)
        for p in card.key_points
    )
    misc = tuple(MisconceptionJudgement(m.id, m.id in asserted_ids) for m in card.misconceptions)
    return Judgement("offline", points, misc)


def test_a_pass_is_unsure_when_a_core_point_is_near_its_cut():
    card = DECK.get("rl-08")
    core = [p.id for p in card.core_points]
    present = [0.35 if p.id == core[0] else (0.95 if p.core else 0.1) for p in card.key_points]
    model = reading(present, [0.05] * len(card.misconceptions))
    read = verdicts(card, set(core))
    unsure, margin = doubts(
        card, model, None, None, read, read.points, read.misconceptions, sure_margin=0.2
    )
    assert unsure == (core[0],) and math.isclose(margin, 0.05)
    unsure, _ = doubts(
        card, model, None, None, read, read.points, read.misconceptions, sure_margin=0.01
    )
    assert unsure == ()


def test_a_fail_is_unsure_only_when_every_reason_it_fails_is_unsure():
    card = DECK.get("rl-08")
    core = [p.id for p in card.core_points]
    near, far = 0.25, 0.02  # one core point just under its cut, one far under it
    present = [
        near if p.id == core[0] else far if p.id == core[1] else 0.1 for p in card.key_points
    ]
    model = reading(present, [0.05] * len(card.misconceptions))
    read = verdicts(card, set())
    unsure, margin = doubts(
        card, model, None, None, read, read.points, read.misconceptions, sure_margin=0.2
    )
    assert unsure == () and margin >= 0.2
    present[present.index(far)] = 0.2
    unsure, _ = doubts(
        card,
        reading(present, [0.05] * len(card.misconceptions)),
        None,
        None,
        read,
        read.points,
        read.misconceptions,
        sure_margin=0.2,
    )
    assert set(unsure) == set(core)


async def test_the_assessment_says_whether_the_judge_is_sure(offline_judge):
    card = DECK.get("rl-08")
    assessment = await offline_judge.assess(card, card.reference_answers[0].text, interactive=True)
    assert assessment.sure is (not assessment.unsure_points)
    assert set(assessment.unsure_points) <= {p.id for p in card.key_points} | {
        m.id for m in card.misconceptions
    }
