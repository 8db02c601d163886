"""Follow-up answers (issue 15): the labelled sets in grader/calibration/ (followups.jsonl, on
which the follow-up reading is fitted, and followups-heldout.jsonl, which measures it), the
offline judge reading each answer against its one point, and ``trapbot grader eval
--followups``."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.cli import build_parser
from cards.deck import default_deck
from grader.calibration.followups import (
    CREDITED,
    FOLLOWUP_SET,
    HELDOUT_FOLLOWUP_SET,
    RIGHT_KINDS,
    followup_metrics,
    format_followup_metrics,
    judge_followups,
    load_followups,
    problems,
)

KINDS = {"right-plain", "right-terse", "wrong", "wrong-trap"}


def run_cli(argv, capsys):
    args = build_parser().parse_args(argv)
    code = args.func(args)
    return code, capsys.readouterr()


@pytest.fixture(scope="module")
def deck():
    return default_deck()


@pytest.fixture(scope="module")
def answers():
    return load_followups(FOLLOWUP_SET)


@pytest.fixture(scope="module")
def heldout():
    return load_followups(HELDOUT_FOLLOWUP_SET)


@pytest.mark.parametrize("path", [FOLLOWUP_SET, HELDOUT_FOLLOWUP_SET], ids=["tune", "held-out"])
def test_each_set_covers_every_core_probe_of_the_deck_with_right_and_wrong_answers(deck, path) -> None:
    answers = load_followups(path)
    assert problems(deck, answers) == []
    kinds: dict[tuple[str, str], set[str]] = {}
    for a in answers:
        kinds.setdefault((a.card_id, a.point_id), set()).add(a.kind)
        if a.kind in RIGHT_KINDS:
            assert a.label in CREDITED, a.id
    for card in deck:
        for point in card.core_points:
            assert kinds.get((card.id, point.id)) == KINDS, f"{card.id}/{point.id}"


def test_a_malformed_line_is_named(tmp_path) -> None:
    path = tmp_path / "f.jsonl"
    good = {
        "id": "a",
        "card_id": "rl-08",
        "point_id": "overoptimization",
        "kind": "wrong",
        "answer": "x y",
        "label": "absent",
    }
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "label": "maybe"}) + "\n")
    with pytest.raises(ValueError, match=r"f\.jsonl:2"):
        load_followups(path)


def test_eval_followups_refuses_what_it_cannot_do(capsys) -> None:
    code, out = run_cli(["grader", "eval", "--followups", "--grader", "baseline"], capsys)
    assert code == 2 and "offline or llm" in out.err
    code, out = run_cli(["grader", "eval", "/nonexistent.jsonl", "--followups"], capsys)
    assert code == 2 and "nonexistent" in out.err
    # The second held-out split has whole answers only.
    code, out = run_cli(["grader", "eval", "--followups", "--split", "held-out-2"], capsys)
    assert code == 2 and "no follow-up answers for --split held-out-2" in out.err


def test_eval_followups_reports_per_kind(offline_judge, answers, tmp_path, capsys) -> None:
    rows = [a for a in answers if a.card_id == "rl-08" and a.point_id == "overoptimization" and a.author == "first"]
    assert {a.kind for a in rows} == KINDS
    path = tmp_path / "rl08.jsonl"
    path.write_text(
        "\n".join(json.dumps({**a.__dict__, "label": a.label.value}) for a in rows) + "\n"
    )
    code, out = run_cli(["grader", "eval", str(path), "--followups", "--json"], capsys)
    figures = json.loads(out.out)
    assert code == 0 and figures["n"] == 4 and figures["cards"] == 1 and figures["errors"] == 0
    assert set(figures["per_kind"]["core"]) == KINDS
    text = format_followup_metrics("offline", figures)
    assert "right-plain" in text and "credited" in text


#: Cards the judge test reads (indexing a card costs about 1.5 s of CPU, the whole deck 40 s;
#: ``trapbot grader eval --followups --split held-out`` measures every card).
SAMPLE = ("rl-01", "rl-08", "rl-13", "rl-19", "msft-01")


def readings_on(judge, deck, answers, cards):
    picked = [a for a in answers if a.card_id in cards and deck.get(a.card_id).key_point(a.point_id).core]
    readings, errors = asyncio.run(judge_followups(judge, deck, picked))
    assert errors == 0
    return followup_metrics(deck, picked, readings)


def test_the_follow_up_reading_credits_right_answers_and_not_wrong_ones(offline_judge, deck, heldout) -> None:
    """On the held-out set, sample cards, core probes: every plain one-sentence right answer
    is credited (the issue's goal), terse ones nearly all, wrong ones and the trap rarely.
    Floors near what was measured when the reading was fitted (right-plain 100%, right-terse
    100%, wrong 9%, wrong-trap 9%, agreement 0.95), so a change that loses ground fails."""
    assert offline_judge.followup_model is not None
    figures = readings_on(offline_judge, deck, heldout, SAMPLE)
    kinds = figures["per_kind"]["core"]
    assert figures["plain_core_answers_not_credited"] == []
    # 10 core probes: rl-19's baseline-fix is no longer core (issue 39)
    assert kinds["right-plain"]["n"] == 10 and kinds["right-plain"]["credited"] == 1.0
    assert kinds["right-terse"]["credited"] >= 0.9
    assert kinds["wrong"]["credited"] <= 0.1 and kinds["wrong-trap"]["credited"] <= 0.1
    assert figures["agreement"] >= 0.93


def test_the_rules_alone_credit_wrong_follow_up_answers_far_more_often(deck, heldout) -> None:
    """Why the follow-up reading exists: the hand rules on the same answers credit the right
    ones as well but also about 40% of the wrong ones (agreement 0.71 on the sample)."""
    from grader.offline import OfflineJudge

    figures = readings_on(OfflineJudge(followup_model=None), deck, heldout, SAMPLE)
    kinds = figures["per_kind"]["core"]
    assert kinds["right-plain"]["credited"] == 1.0
    assert kinds["wrong"]["credited"] + kinds["wrong-trap"]["credited"] >= 0.6
    assert figures["agreement"] < 0.8


def test_the_exemplar_margin_leaves_out_a_writers_own_answers(offline_judge, deck, answers) -> None:
    """Fitting reads each answer as a stranger's: its own writer's answers to the probe are not
    exemplars (the answer itself would otherwise be its own nearest neighbour)."""
    from grader.offline.followup import exemplar_margin

    right = next(a for a in answers if a.card_id == "rl-08" and a.kind == "right-plain" and a.author)
    with_own = exemplar_margin(right.card_id, right.point_id, right.answer)
    without_own = exemplar_margin(right.card_id, right.point_id, right.answer, leave_out=right.author)
    assert with_own > without_own
    assert exemplar_margin("rl-08", "no-such-point", right.answer) == 0.0


def test_the_follow_up_reading_decides_only_the_probed_point(offline_judge, deck) -> None:
    from grader.offline.followup import followup_features

    card = deck.get("rl-08")
    point = card.key_point("overoptimization")
    asked = card.model_copy(update={"question": point.probe})
    answer = "With beta at zero the policy exploits the reward model's errors: proxy reward rises while true quality falls."
    row, rules = followup_features(offline_judge, asked, point.id, answer)
    judgement = offline_judge.followup_model.judgement(asked, point.id, row, rules, answer)
    probed = next(p for p in judgement.points if p.point_id == point.id)
    assert probed.verdict.value == "present" and probed.quote == answer
    others = [p for p in judgement.points if p.point_id != point.id]
    assert others == [p for p in rules.points if p.point_id != point.id]


def test_the_stored_follow_up_vectors_match_the_labelled_set(deck) -> None:
    """``python -m grader.calibration.train_followups`` stores them; a set changed since then
    would be embedded on first use instead: correct but slow, so it fails here."""
    from grader.offline.followup import _answers_key, _labelled, _stored_vectors

    for card in deck:
        answers = _labelled(card.id)
        stored = _stored_vectors(card.id, _answers_key(answers))
        assert stored is not None and stored.shape == (len(answers), 384), card.id


def test_a_follow_up_answer_that_says_nothing_is_not_credited(offline_judge, deck) -> None:
    """Non-answers the reading was not fitted on (its fit adds eight others to every point):
    none reaches any core point of the sample cards."""
    from grader.offline.followup import followup_features

    nothing = ("No clue, sorry.", "Could you rephrase that?", "Let me skip this one.", "The capital of France is Paris.")
    for card in (deck.get(card_id) for card_id in SAMPLE):
        for point in card.core_points:
            asked = card.model_copy(update={"question": point.probe})
            for text in nothing:
                row, _ = followup_features(offline_judge, asked, point.id, text)
                assert offline_judge.followup_model.probability(row)[0] < offline_judge.followup_model.cut, (card.id, point.id, text)
