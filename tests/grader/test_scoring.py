"""The grade is computed from the verdicts, the same way for every judge."""

from __future__ import annotations

import pytest

from grader.base import Judgement, MisconceptionJudgement, PointJudgement, PointVerdict
from grader.scoring import (
    CORE_CAP,
    INJECTION_CAP,
    QUALITY_CUTS,
    check_evidence,
    grade_from_judgement,
    quality_from_score,
    quote_in_answer,
)

ANSWER = "The reward model is a proxy. The KL term keeps us where it is accurate. Beta 0 means reward hacking."


def judgement(card, verdicts=None, *, asserted=(), injection=False):
    verdicts = verdicts or {}
    return Judgement(
        judge="test",
        points=tuple(
            PointJudgement(
                p.id,
                verdicts.get(p.id, (PointVerdict.PRESENT, "The reward model is a proxy"))[0],
                verdicts.get(p.id, (PointVerdict.PRESENT, "The reward model is a proxy"))[1],
            )
            for p in card.key_points
        ),
        misconceptions=tuple(
            MisconceptionJudgement(m.id, m.id in asserted, "x" if m.id in asserted else "")
            for m in card.misconceptions
        ),
        injection_suspected=injection,
    )


def test_cut_points_are_increasing_and_map_the_ends():
    assert list(QUALITY_CUTS) == sorted(QUALITY_CUTS) and len(QUALITY_CUTS) == 5
    assert quality_from_score(0.0) == 0 and quality_from_score(1.0) == 5
    assert [quality_from_score(cut) for cut in QUALITY_CUTS] == [1, 2, 3, 4, 5]
    assert [quality_from_score(cut - 1e-6) for cut in QUALITY_CUTS] == [0, 1, 2, 3, 4]


def test_everything_present_is_five(rl08):
    grade = grade_from_judgement(rl08, judgement(rl08), ANSWER)
    assert grade.quality == 5 and grade.score == 1.0 and grade.caps == ()


def test_a_missing_core_point_caps_at_two(rl08):
    core = next(p for p in rl08.key_points if p.core)
    for verdict in (PointVerdict.ABSENT, PointVerdict.CONTRADICTED):
        grade = grade_from_judgement(rl08, judgement(rl08, {core.id: (verdict, "")}), ANSWER)
        assert grade.score > QUALITY_CUTS[-2]  # would be a 4 without the cap
        assert grade.quality == CORE_CAP
        assert grade.caps == ("a core point of the mechanism is missing",)


def test_a_missing_optional_point_only_costs_its_weight(rl08):
    optional = next(p for p in rl08.key_points if not p.core)
    grade = grade_from_judgement(
        rl08, judgement(rl08, {optional.id: (PointVerdict.ABSENT, "")}), ANSWER
    )
    assert grade.score == pytest.approx(1 - optional.weight / rl08.total_weight, abs=1e-4)
    assert grade.quality == quality_from_score(grade.score) and grade.caps == ()


def test_an_asserted_misconception_caps_at_two(rl08):
    grade = grade_from_judgement(
        rl08, judgement(rl08, asserted={rl08.misconceptions[0].id}), ANSWER
    )
    assert grade.quality == CORE_CAP and "the answer asserts a misconception" in grade.caps


def test_a_suspected_injection_caps_at_one(rl08):
    grade = grade_from_judgement(rl08, judgement(rl08, injection=True), ANSWER)
    assert (
        grade.quality == INJECTION_CAP and "the answer tries to instruct the grader" in grade.caps
    )


def test_caps_never_raise_a_low_grade(rl08):
    nothing = {p.id: (PointVerdict.ABSENT, "") for p in rl08.key_points}
    grade = grade_from_judgement(rl08, judgement(rl08, nothing, injection=True), ANSWER)
    assert grade.quality == 0


def test_a_quote_not_in_the_answer_downgrades_one_step(rl08):
    first, second = rl08.key_points[0].id, rl08.key_points[1].id
    invented = judgement(
        rl08,
        {
            first: (PointVerdict.PRESENT, "Goodhart's law in the flesh"),
            second: (PointVerdict.PARTIAL, "not said"),
        },
    )
    checked = check_evidence(invented, ANSWER)
    assert checked.verdict_for(first) is PointVerdict.PARTIAL
    assert checked.verdict_for(second) is PointVerdict.ABSENT
    trusted = grade_from_judgement(rl08, invented, ANSWER, check_quotes=False)
    checked_grade = grade_from_judgement(rl08, invented, ANSWER)
    assert trusted.quality >= 4 and trusted.caps == ()
    assert checked_grade.quality == CORE_CAP  # the second (core) point is now absent


def test_quote_matching_ignores_case_whitespace_and_curly_quotes():
    answer = "The KL term  keeps the policy\nwhere the reward model's scores are accurate."
    assert quote_in_answer(
        "the kl term keeps the policy where the reward model\u2019s scores", answer
    )
    assert quote_in_answer("  keeps the policy. ", answer)
    assert not quote_in_answer("keeps the policy close", answer)
    assert not quote_in_answer("", answer) and not quote_in_answer(" ... ", answer)
