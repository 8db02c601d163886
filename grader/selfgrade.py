"""Self-grading: the learner sees the mechanism key and rates their own answer 0-5."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.base import Assessment

if TYPE_CHECKING:
    from cards.schema import Card


class SelfGrader:
    """Asks the learner for the grade; there is nothing automatic to fall back on."""

    name = "self"

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        if not interactive:
            raise RuntimeError("self-grading needs a learner to rate the answer")
        return Assessment(grader=self.name, grade=None, needs_confirmation=True)
