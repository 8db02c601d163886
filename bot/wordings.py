"""Which wording each learner is asked, stored: the choice is ``cards.wording.choose_variant``;
this records every showing (``Asked``) so the open trap keeps its wording, the answer knows
what it answered, and the next review knows what this learner has seen least."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Session, col, select

from bot.models import Asked, Review, ReviewStatus
from cards.schema import Card, Variant
from cards.wording import choose_variant, variant_of


def ask(
    session: Session, learner_id: int, card: Card, *, rng: random.Random, now: datetime
) -> Variant | None:
    """The wording to show now (None: the original), recorded in ``session`` (the caller commits).

    The open showing of this card, if any, keeps its wording (asking again, a push, "Answer
    now"); otherwise the original at the first meeting, else the variant seen least."""
    return ask_many(session, [(learner_id, card)], rng=rng, now=now)[learner_id, card.id]


def ask_many(
    session: Session, asks: Sequence[tuple[int, Card]], *, rng: random.Random, now: datetime
) -> dict[tuple[int, str], Variant | None]:
    """``ask`` for several (learner, card) pairs in two reads, keyed by (learner id, card id)."""
    if not asks:
        return {}
    pairs = [(learner_id, card.id) for learner_id, card in asks]
    # Every showing of these cards to these learners in one read: the open one, and how
    # often each wording was seen.
    shown: dict[tuple[int, str], list[tuple[int, str | None, int | None]]] = {pair: [] for pair in pairs}
    for row in session.exec(
        select(Asked.learner_id, Asked.card_id, Asked.id, Asked.variant_id, Asked.review_id).where(
            sa.tuple_(col(Asked.learner_id), col(Asked.card_id)).in_(pairs)
        )
    ):
        shown[row[0], row[1]].append((row[2], row[3], row[4]))
    answered_before = {
        (row[0], row[1])
        for row in session.exec(
            select(Review.learner_id, Review.card_id)
            .where(
                sa.tuple_(col(Review.learner_id), col(Review.card_id)).in_(pairs),
                Review.status != ReviewStatus.UNDONE,
            )
            .distinct()
        )
    }
    chosen: dict[tuple[int, str], Variant | None] = {}
    showings = []
    for learner_id, card in asks:
        rows = shown[learner_id, card.id]
        open_ids = [(asked_id, variant_id) for asked_id, variant_id, review_id in rows if review_id is None]
        if open_ids:
            chosen[learner_id, card.id] = variant_of(card, max(open_ids)[1])
            continue
        seen = Counter(variant_id for _, variant_id, _ in rows)
        variant = choose_variant(card, seen, first_meeting=(learner_id, card.id) not in answered_before, rng=rng)
        showings.append({"learner_id": learner_id, "card_id": card.id, "variant_id": variant.id if variant else None,
                         "asked_at": now, "review_id": None})
        chosen[learner_id, card.id] = variant
    if showings:  # one multi-row insert: nothing here needs the new rows' ids
        session.execute(sa.insert(Asked), showings)
    return chosen


def answered(session: Session, learner_id: int, card_id: str, review_id: int) -> str | None:
    """Close the open showing with the review that answers it; the wording it asked (None: the
    original, also when the learner answered a card never shown to them, like a server's post)."""
    open_ask = _open(session, learner_id, card_id)
    if open_ask is None:
        return None
    open_ask.review_id = review_id
    session.add(open_ask)
    return open_ask.variant_id


def open_variant(session: Session, learner_id: int, card_id: str) -> str | None:
    """The wording of the open showing of this card (None: the original, or nothing open)."""
    open_ask = _open(session, learner_id, card_id)
    return open_ask.variant_id if open_ask is not None else None


def reopen(session: Session, review_id: int) -> None:
    """The review was undone: its showing is open again, so the new answer answers the same wording."""
    session.exec(sa.update(Asked).where(col(Asked.review_id) == review_id).values(review_id=None))  # type: ignore[call-overload]


def forget(session: Session, learner_id: int) -> None:
    session.exec(sa.delete(Asked).where(col(Asked.learner_id) == learner_id))  # type: ignore[call-overload]


def _open(session: Session, learner_id: int, card_id: str) -> Asked | None:
    return session.exec(
        select(Asked)
        .where(
            Asked.learner_id == learner_id, Asked.card_id == card_id, col(Asked.review_id).is_(None)
        )
        .order_by(col(Asked.id).desc())
    ).first()
