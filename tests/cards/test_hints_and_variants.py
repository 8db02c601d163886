"""The lint of hints (one per key point, a pointer and not a fragment of the key) and of whole
variants (a variant overrides every label, probe and hint that names the original's setting)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cards.deck import DECK_DIR, content_problems, parse_card
from cards.schema import Card, PointInVariant, Variant
from cards.wording import as_asked

CARD = parse_card(DECK_DIR / "rl-01.md")


def with_point(card: Card, point_id: str, **changes: object) -> Card:
    points = [p.model_copy(update=changes) if p.id == point_id else p for p in card.key_points]
    return card.model_copy(update={"key_points": points})


def problems(card: Card) -> list[str]:
    return [line for line in content_problems(card) if ".hint" in line or "situation" in line or "variants" in line]


def test_the_real_card_is_clean() -> None:
    assert problems(CARD) == []


@pytest.mark.parametrize(
    ("hint", "problem"),
    [
        (None, "missing"),
        ("Iterate", "whole sentence"),
        ("covariate shift after the first mistake", "whole sentence"),
        ("Think about how the model has only seen states the expert visits.", "copies the point's text"),
        ("Think about exposure bias after the first slip.", "gives the point away"),
    ],
)
def test_a_bad_hint_is_a_problem(hint: str | None, problem: str) -> None:
    found = problems(with_point(CARD, "covariate-shift", hint=hint))
    assert any(line.startswith("key_points.covariate-shift.hint") and problem in line for line in found), found


def test_a_variant_must_override_what_names_the_originals_setting() -> None:
    bare = CARD.model_copy(update={"variants": [Variant(id="lane", question="Why does the car leave its lane?")]})
    found = problems(bare)
    assert "variants.lane.points.actions-shape-inputs.probe: the original's shows 'coding assistant'; override it" in found
    assert any("covariate-shift.probe" in line and "'edit'" in line for line in found)
    named = Variant(id="lane", question="Why?", points=[PointInVariant(id="actions-shape-inputs", probe="Where does the coding assistant look?")])
    assert any("names the original's setting ('coding assistant')" in line for line in problems(CARD.model_copy(update={"variants": [named]})))


def test_a_shared_term_needs_no_override_and_situation_is_required() -> None:
    sharing = [v.model_copy(update={"shares": ["edit", "human sessions", "coding assistant"], "points": []}) for v in CARD.variants]
    assert problems(CARD.model_copy(update={"variants": sharing})) == []
    assert "situation: missing" in " ".join(problems(CARD.model_copy(update={"situation": None})))
    assert any("'hovercraft' occurs nowhere" in line for line in problems(CARD.model_copy(update={"situation": ["hovercraft"]})))


def test_a_variant_point_must_name_a_key_point() -> None:
    data = CARD.model_dump()
    data["variants"][0]["points"] = [{"id": "no-such-point", "label": "Nothing here"}]
    with pytest.raises(ValidationError, match="points name no key point"):
        Card.model_validate(data)


def test_the_card_as_asked_carries_the_variants_own_words() -> None:
    variant = CARD.variants[1]
    asked = as_asked(CARD, variant.id)
    override = {p.id: p for p in variant.points}["covariate-shift"]
    assert asked.question == variant.question
    assert asked.key_point("covariate-shift").probe == override.probe
    assert asked.key_point("covariate-shift").text == CARD.key_point("covariate-shift").text  # the same key
    assert asked.key_point("covariate-shift").hint == CARD.key_point("covariate-shift").hint  # not overridden
    assert (asked.id, asked.version) == (CARD.id, CARD.version)
