"""Plain reply objects the engine returns and every adapter renders.

Text is a small Markdown subset: ``**bold**``, ``_italic_``, `` `code` ``, lines starting
with ``- `` for bullets, and ``$...$`` for inline math. No platform type appears here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ReplyKind(StrEnum):
    QUESTION = "question"  # a trap to answer; the next free text is the answer
    CONFIRM = "confirm"  # a proposed grade waiting for the learner (self / assisted grading)
    VERDICT = "verdict"
    FOLLOWUP = "followup"  # the interviewer's follow-up question; the next free text answers it
    EXPLANATION = "explanation"
    HINT = "hint"
    STATS = "stats"
    SETTINGS = "settings"
    INFO = "info"
    ERROR = "error"


@dataclass(frozen=True)
class Button:
    label: str
    data: str  # encoded ``bot.actions.Action``; at most 64 bytes


@dataclass(frozen=True)
class Reply:
    text: str
    kind: ReplyKind = ReplyKind.INFO
    buttons: tuple[tuple[Button, ...], ...] = ()
    image: bytes | None = None  # a PNG made for this reply (the stats plot)
    image_caption: str = ""
    plot_sim: str | None = None  # a simulation's plot to send after the text
    card_id: str | None = None
    wording: int = 0  # which wording of card_id a question asks: 0 the original, n its n-th variant
    review_id: int | None = None
    ephemeral: bool = True  # for platforms that can show a message to one person only

    @property
    def expects_answer(self) -> bool:
        return self.kind is ReplyKind.QUESTION


@dataclass(frozen=True)
class PlotImage:
    """A simulation's plot, ready to send."""

    sim_id: str
    png: bytes
    caption: str
    title: str = ""
    path: str | None = None  # the cached PNG on disk, for surfaces that show a path


@dataclass
class Outbox:
    """Replies for learners other than the one who acted (recovered grades, pushes)."""

    items: list[tuple[int, list[Reply]]] = field(default_factory=list)


#: What every adapter says when a verdict's simulation could not make its plot at all.
PLOT_FAILED = "The simulation's plot for that verdict could not be made this time; the text above has the mechanism."
