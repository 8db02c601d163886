"""Answers left pending by a crash, graded when a process starts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from sqlmodel import Session, col, select

from bot.followups import FollowUps
from bot.learners import LearnerRoom
from bot.locks import LearnerLocks
from bot.models import Learner, Review, ReviewStatus
from bot.replies import Reply
from cards.deck import Deck

log = logging.getLogger(__name__)


class RecoveryRoom(LearnerRoom):
    """Needs the engine's ``_grade_stored``, ``_load_review`` and ``_update_review``."""

    deck: Deck
    followups: FollowUps
    _locks: LearnerLocks

    async def recover_pending(
        self,
        *,
        platforms: tuple[str, ...] | None = None,
        learner_id: int | None = None,
        deliver: Callable[[int, list[Reply]], Awaitable[object]] | None = None,
    ) -> list[tuple[int, list[Reply]]]:
        """Grade answers left pending by a crash; returns the replies owed to each learner.

        Only answers of learners on ``platforms`` (or of the one ``learner_id``) are taken, so
        a process recovers only what it can deliver; ``deliver`` gets each learner's replies as
        soon as they are graded. Another replica recovering at the same time is harmless: the
        answer is re-read under the learner's lock and skipped once it is no longer pending.
        """
        query = select(Review).where(Review.status == ReviewStatus.PENDING).order_by(col(Review.id))
        if platforms is not None:
            query = query.join(Learner, col(Learner.id) == Review.learner_id).where(col(Learner.platform).in_(platforms))
        if learner_id is not None:
            query = query.where(Review.learner_id == learner_id)

        def load() -> list[Review]:
            with Session(self.db, expire_on_commit=False) as session:
                return list(session.exec(query).all())

        owed: list[tuple[int, list[Reply]]] = []
        for review in await asyncio.to_thread(load):
            async with self._locks[review.learner_id]:
                current = self._load_review(review.id)
                if current is None or current.status != ReviewStatus.PENDING:
                    continue
                if current.card_id not in self.deck:
                    self._update_review(current.id, status=ReviewStatus.FAILED)
                    continue
                replies = await self._grade_stored(current, self.deck.get(current.card_id))
            item = (review.learner_id, [Reply("Your last answer was graded after a restart; the verdict follows."), *replies])
            owed.append(item)
            if deliver is not None:
                try:
                    await deliver(*item)
                except Exception:
                    log.exception("delivering a recovered grade to learner %s failed", review.learner_id)
        for follow_learner, row_id in self.followups.left_judging():  # follow-up answers, likewise
            if learner_id is not None and follow_learner != learner_id:
                continue
            async with self._locks[follow_learner]:
                replies = await self.followups.judge_stored(row_id)
            if replies:
                item = (follow_learner, [Reply("Your follow-up answer was read after a restart; what it found follows."), *replies])
                owed.append(item)
                if deliver is not None:
                    try:
                        await deliver(*item)
                    except Exception:
                        log.exception("delivering a recovered follow-up to learner %s failed", follow_learner)
        return owed
