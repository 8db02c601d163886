"""Embed every card's labelled answers as the offline judge reads them and store the vectors
(``grader.exemplars.VECTORS_PATH``), so a start embeds none: ``python -m
grader.calibration.store_exemplars [CARD_ID ...]`` after any change to a card or to the training
set (with card ids, only those cards are embedded again and the others' vectors are kept)."""

from __future__ import annotations

import sys

from cards.deck import default_deck
from grader.exemplars import VECTORS_PATH, store
from grader.reading import exemplar_reading


def store_exemplars(card_ids: list[str] | None = None) -> None:
    """Write the stored exemplars of the whole deck, or of ``card_ids`` only (others kept)."""
    deck = default_deck()
    cards = [deck.get(card_id) for card_id in card_ids] if card_ids else list(deck)
    store(cards, exemplar_reading, keep_others=bool(card_ids))
    print(f"wrote {VECTORS_PATH}")


if __name__ == "__main__":
    store_exemplars(sys.argv[1:] or None)
