"""Embed every card's labelled answers as the offline judge reads them and store the vectors
(``grader.exemplars.VECTORS_PATH``), so a start embeds none: ``python -m
grader.calibration.store_exemplars`` after any change to a card or to the training set."""

from __future__ import annotations

from cards.deck import default_deck
from grader.exemplars import VECTORS_PATH, store
from grader.reading import exemplar_reading


def store_exemplars() -> None:
    """Write the stored exemplars of the whole deck."""
    store(list(default_deck()), exemplar_reading)
    print(f"wrote {VECTORS_PATH}")


if __name__ == "__main__":
    store_exemplars()
