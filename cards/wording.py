"""Which wording of a card to ask: the original at the first meeting, then the variant the
learner has seen least, so reviews test the mechanism rather than a remembered question."""

from __future__ import annotations

import random
from collections.abc import Mapping

from cards.schema import Card, Variant


def choose_variant(
    card: Card,
    seen: Mapping[str | None, int],
    *,
    first_meeting: bool,
    rng: random.Random,
) -> Variant | None:
    """The variant to ask, or None for the original wording.

    ``seen`` counts how often this learner was shown each wording (key None: the original).
    The first meeting is always the original; a review shows the variant seen least, ties
    broken by ``rng``. A card without variants is always asked in its original wording.
    """
    if first_meeting or not card.variants:
        return None
    fewest = min(seen.get(v.id, 0) for v in card.variants)
    least = [v for v in card.variants if seen.get(v.id, 0) == fewest]
    return least[0] if len(least) == 1 else rng.choice(least)


def variant_of(card: Card, variant_id: str | None) -> Variant | None:
    """The card's variant with this id; None for the original or an id the card no longer has."""
    if variant_id is None:
        return None
    return next((v for v in card.variants if v.id == variant_id), None)


def as_asked(card: Card, variant_id: str | None) -> Card:
    """The card as the learner who was asked this wording sees it: the variant's question,
    hint, and its labels, probes and hints where it overrides a key point (the same key text,
    version and id). The judge, the verdict and the follow-up all read this card."""
    variant = variant_of(card, variant_id)
    if variant is None:
        return card
    overrides = {point.id: point for point in variant.points}
    points = []
    for point in card.key_points:
        override = overrides.get(point.id)
        if override is None:
            points.append(point)
            continue
        changed = {name: getattr(override, name) for name in ("label", "probe", "hint") if getattr(override, name)}
        points.append(point.model_copy(update=changed))
    return card.model_copy(
        update={"question": variant.question, "hint": variant.hint or card.hint, "key_points": points}
    )


def wording_ref(card_id: str, variant_index: int) -> str:
    """A short reference to one wording for button data: ``rl-08`` (the original) or
    ``rl-08.2`` (the card's second variant)."""
    return card_id if variant_index <= 0 else f"{card_id}.{variant_index}"


def parse_wording_ref(ref: str) -> tuple[str, int]:
    """``(card id, variant index)`` from ``wording_ref``'s output; index 0 is the original.
    A malformed index reads as the original (the card id is checked by the caller)."""
    card_id, _, index = ref.partition(".")
    return card_id, int(index) if index.isdigit() and len(index) <= 2 else 0


def question_for(card: Card, variant_index: int) -> str:
    """The question text of a wording by index; the original when the index is out of range."""
    if 1 <= variant_index <= len(card.variants):
        return card.variants[variant_index - 1].question
    return card.question


def variant_index(card: Card, variant_id: str | None) -> int:
    for index, variant in enumerate(card.variants, 1):
        if variant.id == variant_id:
            return index
    return 0
