"""Embed every card's labelled answers as the offline judge reads them and store the vectors
(``grader.offline.exemplars.VECTORS_PATH``), and store the vectors of every phrasing the built-in cards'
indexes embed (``grader.offline.vectors.PHRASES_PATH``), so a start embeds none of them:
``python -m grader.calibration.store_exemplars [CARD_ID ...]`` after any change to a card or to
the training set (with card ids, only those cards' exemplars are embedded again and the others'
are kept; the phrasings are always gathered from the whole deck, and only new ones embedded)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from cards.deck import default_deck
from cards.schema import Card
from grader.injection import INJECTION_PROTOTYPES
from grader.offline.evidence import build_index, exemplar_reading
from grader.offline.exemplars import (
    VECTORS_PATH,
    build_exemplars,
    fingerprint,
    is_short,
    labelled_answers,
)
from grader.offline.vectors import PHRASES_PATH, recording, store_phrases

#: How exemplars are read for one card: the card's version and a function giving an answer's
#: vector and its claim units' vectors (``grader.offline.evidence.exemplar_reading``).
ExemplarReading = Callable[
    [Card], tuple[str, Callable[[str], tuple[np.ndarray | None, list[np.ndarray]]]]
]


def store(
    cards: Sequence[Card], reading: ExemplarReading, path: Path = VECTORS_PATH, *, keep_others: bool = False
) -> None:
    """Embed ``cards``' exemplars as ``reading`` reads them and write them to ``path`` (a line
    per card); with ``keep_others``, the stored vectors of every other card are kept."""
    arrays: dict[str, np.ndarray] = {}
    if keep_others and path.exists():
        renewed = {card.id for card in cards}
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files if name.split("/", 1)[0] not in renewed}
    for number, card in enumerate(cards, 1):
        version, answer_vector = reading(card)
        answers = labelled_answers(card)
        built = build_exemplars(answers, answer_vector)
        arrays[f"{card.id}/key"] = np.asarray(fingerprint(card, version, answers))
        arrays[f"{card.id}/ids"] = np.asarray([a.id for a in built.answers])
        arrays[f"{card.id}/answers"] = built.answer_vectors.astype(np.float16)
        arrays[f"{card.id}/claims"] = built.claim_vectors.astype(np.float16)
        arrays[f"{card.id}/owner"] = built.claim_owner.astype(np.int32)
        arrays[f"{card.id}/short"] = np.asarray([is_short(a) for a in built.answers], dtype=bool)
        print(f"  [{number}/{len(cards)}] {card.id}: {len(built.answers)} answers", file=sys.stderr, flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)


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
