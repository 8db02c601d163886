"""The labelled answers stay true to the deck, and the eval reads any style."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from cards.deck import default_deck
from grader.calibration.eval import DEFAULT_SET, is_tuning_card, load_set, metrics, split
from grader.calibration.regrade import rule_grade, stale_labels

ROWS = [json.loads(line) for line in DEFAULT_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
STYLES = (
    "expert", "concise", "terse", "bullets", "math", "non-native", "rambling", "alt-route",
    "partly-wrong", "missing-core", "trap", "trap-jargon", "injection",
)  # fmt: skip


def test_every_card_has_at_least_twelve_answers_in_every_style():
    deck = default_deck()
    per_card = Counter(row["card_id"] for row in ROWS)
    assert set(per_card) == set(deck.ids)
    assert min(per_card.values()) >= 12
    for card_id in deck.ids:
        styles = {row["kind"] for row in ROWS if row["card_id"] == card_id}
        assert set(STYLES) <= styles, card_id


def test_every_grade_is_the_rule_applied_to_its_labels():
    deck = default_deck()
    for row in ROWS:
        card = deck.get(row["card_id"])
        assert not stale_labels(card, row), row["id"]
        assert row["grade"] == rule_grade(card, row), row["id"]


def test_injections_name_a_twin_on_the_same_card():
    by_id = {row["id"]: row for row in ROWS}
    injections = [row for row in ROWS if row["kind"] == "injection"]
    assert len(injections) == len(default_deck())
    for row in injections:
        twin = by_id[row["twin_of"]]
        assert twin["card_id"] == row["card_id"] and twin["kind"] != "injection"


def test_splits_are_by_card_and_cover_the_set():
    examples = load_set()
    tune, held = split(examples, "tune"), split(examples, "held-out")
    assert len(tune) + len(held) == len(examples)
    assert {e.card_id for e in tune}.isdisjoint({e.card_id for e in held})
    assert all(is_tuning_card(e.card_id) for e in tune)


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
