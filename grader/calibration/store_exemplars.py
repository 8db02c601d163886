"""Embed every card's labelled answers as the offline judge reads them and store the vectors
(``grader.offline.exemplars.VECTORS_PATH``), and store the vectors of every phrasing the built-in cards'
indexes embed (``grader.offline.vectors.PHRASES_PATH``), so a start embeds none of them:
``python -m grader.calibration.store_exemplars [CARD_ID ...]`` after any change to a card or to
the training set (with card ids, only those cards' exemplars are embedded again and the others'
are kept; the phrasings are always gathered from the whole deck, and only new ones embedded)."""

from __future__ import annotations

import os
import sys

from cards.deck import default_deck
from grader.injection import INJECTION_PROTOTYPES
from grader.offline.evidence import build_index, exemplar_reading
from grader.offline.exemplars import VECTORS_PATH, store
from grader.offline.vectors import PHRASES_PATH, recording, store_phrases


def store_exemplars(card_ids: list[str] | None = None) -> None:
    """Write the stored exemplars of the whole deck, or of ``card_ids`` only (others kept), and
    the stored phrasings of the whole deck."""
    # Stored vectors are float32 whatever this CPU would use: they serve every machine.
    os.environ["TRAPBOT_EMBED_PRECISION"] = "float32"
    deck = default_deck()
    cards = [deck.get(card_id) for card_id in card_ids] if card_ids else list(deck)
    store(cards, exemplar_reading, keep_others=bool(card_ids))
    print(f"wrote {VECTORS_PATH}")
    with recording() as texts:
        for number, card in enumerate(deck, 1):
            build_index(card)
            print(f"  [{number}/{len(deck)}] {card.id}: phrasings gathered", file=sys.stderr, flush=True)
    texts.update(INJECTION_PROTOTYPES)  # every index embeds them, once a process: maybe before
    store_phrases(sorted(texts))
    print(f"wrote {PHRASES_PATH}: {len(texts)} phrasings")


if __name__ == "__main__":
    store_exemplars(sys.argv[1:] or None)
