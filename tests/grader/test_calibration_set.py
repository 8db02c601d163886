"""The labelled answers stay true to the deck, and the eval reads any style."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from cards.deck import default_deck
from grader.calibration.eval import (
    DEFAULT_SET,
    HELDOUT_SET,
    NEAR_MISS_SET,
    NEGATION_SET,
    SECOND_HELDOUT_SET,
    SECOND_NEAR_MISS_SET,
    load_set,
    load_split,
    metrics,
)
from grader.calibration.regrade import rule_grade, stale_labels
from grader.offline.exemplars import TRAINING_SET


def _rows(path: Path) -> list[dict]:
    """A labelled set's rows, as written."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


SETS = {path.name: _rows(path) for path in (DEFAULT_SET, HELDOUT_SET, SECOND_HELDOUT_SET)}
each_set = pytest.mark.parametrize("name", list(SETS))
STYLES = (
    "expert", "concise", "terse", "bullets", "math", "non-native", "rambling", "alt-route",
    "partly-wrong", "missing-core", "trap", "trap-jargon", "injection",
)  # fmt: skip


@each_set
def test_every_card_has_at_least_twelve_answers_in_every_style(name):
    rows = SETS[name]
    deck = default_deck()
    per_card = Counter(row["card_id"] for row in rows)
    assert set(per_card) == set(deck.ids)
    assert min(per_card.values()) >= 12
    for card_id in deck.ids:
        styles = {row["kind"] for row in rows if row["card_id"] == card_id}
        assert set(STYLES) <= styles, card_id


@pytest.mark.parametrize("name", [*SETS, TRAINING_SET.name])
def test_every_grade_is_the_rule_applied_to_its_labels(name):
    rows = SETS.get(name) or _rows(TRAINING_SET)
    deck = default_deck()
    for row in rows:
        card = deck.get(row["card_id"])
        assert not stale_labels(card, row), row["id"]
        assert row["grade"] == rule_grade(card, row), row["id"]


@each_set
def test_injections_name_a_twin_on_the_same_card(name):
    rows = SETS[name]
    by_id = {row["id"]: row for row in rows}
    injections = [row for row in rows if row["kind"] == "injection"]
    assert len(injections) == len(default_deck())
    for row in injections:
        twin = by_id[row["twin_of"]]
        assert twin["card_id"] == row["card_id"] and twin["kind"] != "injection"


def test_the_splits_are_the_three_files_and_share_no_answer_or_writer():
    paths = {"tune": DEFAULT_SET, "held-out": HELDOUT_SET, "held-out-2": SECOND_HELDOUT_SET}
    splits = {name: load_split(name) for name in paths}
    for name, path in paths.items():
        assert [e.id for e in splits[name]] == [e.id for e in load_set(path)]
    assert len(load_split("all")) == sum(len(split) for split in splits.values())
    answers = [{e.answer for e in split} for split in splits.values()]
    authors = [{row["author"] for row in _rows(path)} for path in paths.values()]
    for i in range(len(paths)):
        for j in range(i + 1, len(paths)):
            assert not answers[i] & answers[j]
            assert not authors[i] & authors[j]


def test_metrics_report_any_style_and_the_goals(tmp_path):
    rows = [
        {"id": "1", "card_id": "rl-01", "kind": "one-liner", "grade": 3, "answer": "x"},
        {"id": "2", "card_id": "rl-01", "kind": "concise", "grade": 3, "answer": "x"},
        {"id": "3", "card_id": "rl-01", "kind": "trap", "grade": 0, "answer": "x"},
        {"id": "4", "card_id": "rl-01", "kind": "expert", "grade": 5, "answer": "x"},
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    examples = load_set(path)
    figures = metrics(examples, {"1": 3, "2": 2, "3": 3, "4": 4})
    assert set(figures["per_kind"]) == {"one-liner", "concise", "trap", "expert"}
    assert figures["concise_passed_cards"] == 0.0
    assert figures["traps_passed"] == 1 and figures["expert_4_or_5"] == 1.0


@pytest.mark.parametrize("bad", ['{"id": "1"}', '{"id": "1", "card_id": "rl-01", "kind": "", "grade": 3, "answer": "x"}'])
def test_a_malformed_line_is_named(tmp_path, bad):
    path = tmp_path / "bad.jsonl"
    path.write_text(bad + "\n")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_set(path)


def test_the_negation_set_denies_the_key_on_every_card():
    """``negations.jsonl`` (never fitted on): on every card, answers that deny or
    reverse the core claims grade at most 1, half-denied ones at most 2, and a right answer
    phrased through true negations passes."""
    deck = default_deck()
    rows = _rows(NEGATION_SET)
    ceiling = {"negated-short": 1, "negated-long": 1, "reversed-causality": 1, "half-negated": 2}
    for card in deck:
        kinds = {row["kind"]: row for row in rows if row["card_id"] == card.id}
        assert set(kinds) == {*ceiling, "correct-with-negations"}, card.id
        for kind, row in kinds.items():
            grade = rule_grade(card, row)
            assert grade == row["grade"], row["id"]
            assert grade <= ceiling[kind] if kind in ceiling else grade >= 3, row["id"]


def test_the_second_near_miss_set_fails_its_near_misses_and_passes_its_rambling_answers():
    """``near-misses-2.jsonl`` (never fitted on): on every card three partly wrong answers, two
    missing a core point, each below the pass mark by its own labels, and one rambling answer
    that states the whole mechanism and passes; the writers (hz1-hz6) wrote nothing else."""
    deck = default_deck()
    rows = _rows(SECOND_NEAR_MISS_SET)
    assert len({row["id"] for row in rows}) == len(rows) == 6 * len(list(deck))
    assert {row["author"] for row in rows} == {f"hz{n}" for n in range(1, 7)}
    for card in deck:
        mine = [row for row in rows if row["card_id"] == card.id]
        kinds = sorted(row["kind"] for row in mine)
        assert kinds == ["missing-core"] * 2 + ["partly-wrong"] * 3 + ["rambling"], card.id
        core = {point.id for point in card.key_points if point.core}
        for row in mine:
            assert not stale_labels(card, row), row["id"]
            grade = rule_grade(card, row)
            assert grade == row["grade"], row["id"]
            if row["kind"] == "rambling":
                assert grade >= 3, row["id"]
                continue
            if row.get("key_changed"):  # written as a near miss; a later key makes it a pass
                assert grade >= 3, row["id"]
                continue
            assert grade <= 2, row["id"]
            if row["kind"] == "missing-core":
                assert any(row["points"][point] in ("absent", "partial") for point in core), row["id"]
            else:
                assert row["misconceptions"] or "contradicted" in row["points"].values(), row["id"]


def test_the_near_miss_set_fails_on_every_card():
    """``near-misses.jsonl`` (never fitted on): on every card, two answers missing a core point
    and two partly wrong ones, each below the pass mark by its own labels."""
    deck = default_deck()
    rows = _rows(NEAR_MISS_SET)
    assert len({row["id"] for row in rows}) == len(rows)
    for card in deck:
        mine = [row for row in rows if row["card_id"] == card.id]
        assert sorted(row["kind"] for row in mine) == ["missing-core"] * 2 + ["partly-wrong"] * 2, card.id
        core = {point.id for point in card.key_points if point.core}
        for row in mine:
            grade = rule_grade(card, row)
            if row.get("key_changed"):  # written as a near miss; a later key makes it a pass
                assert grade == row["grade"] >= 3, row["id"]
                continue
            assert grade == row["grade"] and grade <= 2, row["id"]
            if row["kind"] == "missing-core":
                assert any(row["points"][point] in ("absent", "partial") for point in core), row["id"]
            else:
                assert row["misconceptions"] or "contradicted" in row["points"].values(), row["id"]
