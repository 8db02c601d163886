"""Mark a learner reachable or not (blocked the bot, came back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlmodel import Session

from bot.models import Learner

if TYPE_CHECKING:
    from bot.engine import QuizEngine


def set_active(engine: QuizEngine, learner_id: int | None, active: bool) -> bool:
    """Set ``Learner.active``; True when it changed. Reminders skip inactive learners."""
    if learner_id is None:
        return False
    with Session(engine.db) as session:
        learner = session.get(Learner, learner_id)
        if learner is None or learner.active == active:
            return False
        learner.active = active
        session.add(learner)
        session.commit()
        return True
