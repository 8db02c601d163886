"""What every judge returns, and the protocol the quiz engine grades through.

A judge gives per-point verdicts with evidence; it never gives the grade. The grade is
computed from the verdicts by ``grader.scoring.grade_from_judgement``, the same way for
every judge.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from cards.schema import Card


class PointVerdict(StrEnum):
    PRESENT = "present"
    PARTIAL = "partial"
    ABSENT = "absent"
    CONTRADICTED = "contradicted"


#: The verdicts that give a point credit ("you got there"): present or partial.
CREDITED = frozenset({PointVerdict.PRESENT, PointVerdict.PARTIAL})


@dataclass(frozen=True)
class PointJudgement:
    point_id: str
    verdict: PointVerdict
    quote: str = ""  # verbatim evidence from the answer; empty when absent


@dataclass(frozen=True)
class MisconceptionJudgement:
    misconception_id: str
    asserted: bool
    quote: str = ""


@dataclass(frozen=True)
class Judgement:
    """A judge's reading of one answer against one card's key."""

    judge: str  # "llm:<model>", "offline", "self", ...
    points: tuple[PointJudgement, ...]
    misconceptions: tuple[MisconceptionJudgement, ...] = ()
    injection_suspected: bool = False
    feedback: str = ""
    #: The point and misconception ids whose verdict the judge is unsure of, when one of them
    #: read the other way could turn a pass into a fail or a fail into a pass; empty when sure.
    unsure_points: tuple[str, ...] = ()
    #: How far the reading is from changing pass/fail (a probability distance; None: not measured).
    margin: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Judgement:
        return cls(
            judge=data["judge"],
            points=tuple(
                PointJudgement(p["point_id"], PointVerdict(p["verdict"]), p.get("quote", ""))
                for p in data.get("points", ())
            ),
            misconceptions=tuple(
                MisconceptionJudgement(m["misconception_id"], bool(m["asserted"]), m.get("quote", ""))
                for m in data.get("misconceptions", ())
            ),
            injection_suspected=bool(data.get("injection_suspected", False)),
            feedback=data.get("feedback", ""),
            unsure_points=tuple(data.get("unsure_points", ())),
            margin=data.get("margin"),
        )

    def verdict_for(self, point_id: str) -> PointVerdict:
        for point in self.points:
            if point.point_id == point_id:
                return point.verdict
        return PointVerdict.ABSENT


@dataclass(frozen=True)
class Grade:
    """The SM-2 quality (0-5) computed from a judgement, and why it is what it is."""

    quality: int
    score: float  # weighted coverage in [0, 1] before caps
    judgement: Judgement
    caps: tuple[str, ...] = field(default=())  # human-readable reasons the grade was capped


@dataclass(frozen=True)
class Assessment:
    """What a grader hands the engine.

    ``grade`` is final unless ``needs_confirmation`` is set: then the learner confirms or
    corrects the proposed per-point verdicts (assisted self-grading) or rates the answer
    0-5 (self-grading, where ``grade`` is None).
    """

    grader: str
    grade: Grade | None
    needs_confirmation: bool = False
    #: Another reading of the answer that disagrees with ``grade``, shown to the learner beside it
    #: (for the LLM judge: the offline reading, or its own grade before a misconception lowered it).
    second_reading: Grade | None = None
    #: Whether the judge is sure of pass/fail; when not, ``unsure_points`` are the point and
    #: misconception ids to ask the learner about (the others are sure and need no question).
    sure: bool = True
    unsure_points: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeSettings:
    """What the grader is told by whoever runs it (the bot reads these from its settings):
    which judge, and for the LLM judge its model, key, endpoint, time budget and cache."""

    judge: str = "auto"  # auto (the LLM judge when a key is given, else offline), llm, offline, self
    model: str = "gpt-4o-mini"
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = field(default=None, repr=False)  # may hold credentials: never logged
    timeout: float = 20.0
    cache_dir: str | None = None  # None: the user cache directory

    def resolved_judge(self) -> str:
        """``llm``, ``offline`` or ``self``: what ``auto`` means with these settings."""
        if self.judge == "auto":
            return "llm" if self.api_key else "offline"
        return self.judge


@runtime_checkable
class Grader(Protocol):
    """Anything that can assess a free-text answer against a card."""

    name: str

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        """Assess ``answer``; with ``interactive`` the learner may be asked to confirm."""
        ...


def warmable(grader: Grader) -> Any | None:
    """The judge with a model to load ahead of the first answer: the grader itself, or the
    offline judge an LLM judge falls back to; None when there is nothing to warm."""
    judge = getattr(grader, "fallback", None) or grader
    return judge if hasattr(judge, "warm") else None


async def read_followup(grader: Any, card: Card, answer: str, point_id: str | None = None) -> Assessment:
    """A grader's reading of an answer to a follow-up (``card`` carries the probe as its
    question; ``point_id`` is the point the probe leads to): its ``assess_followup`` when it
    has one, else ``assess``."""
    reader = getattr(grader, "assess_followup", None)
    if reader is not None:
        return await reader(card, answer, point_id)
    return await grader.assess(card, answer, interactive=False)
