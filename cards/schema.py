"""The card schema: one trap, its mechanism key and its explanation."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

#: Mechanism families. A learner's mastery is reported per family, so cards share them.
TAGS: frozenset[str] = frozenset(
    {
        "distribution-shift",
        "compounding-error",
        "imitation-learning",
        "multimodality",
        "reward-overoptimization",
        "reward-design",
        "reward-modeling",
        "kl-control",
        "exploration",
        "credit-assignment",
        "offline-rl",
        "preference-data",
        "bootstrapping",
        "variance",
        "bias",
        "function-approximation",
        "continuous-control",
        "meta-rl",
        "test-time-compute",
        "verification",
        "data-quality",
        "overfitting",
        "policy-gradient",
        "optimization-stability",
        "sim-to-real",
        "hierarchical-rl",
    }
)

CARD_ID = r"^(rl-\d{2}|msft-\d{2})$"
SLUG = r"^[a-z0-9][a-z0-9_-]*$"

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Slug = Annotated[str, StringConstraints(pattern=SLUG)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Strict):
    """Where the trap was asked, as the seed gives it."""

    company: str | None = None
    role: NonEmpty
    date: NonEmpty  # as the seed writes it, e.g. "Jan 27, 2026" or "Jun 2026"
    series: str | None = None  # e.g. "Reinforcement Learning #1"
    seed: NonEmpty  # file name under shared/seeds/


Phrase = Annotated[str, StringConstraints(strip_whitespace=True, min_length=2, max_length=80)]
Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=60)]


class KeyPoint(_Strict):
    """One atomic, checkable claim of the mechanism.

    ``core``: the points a learner must state to have recalled the mechanism. All of them,
    and no misconception, is quality 3 (a pass in SM-2); any missing is at most 2.
    ``weight``: relative importance among the non-core points, which lift a pass to 4 and 5
    (``grader.scoring``); it means nothing on a core point and is left at 1 there.
    ``label``: at most 60 characters, what the verdict shows beside the mark.
    ``accepts``: short phrasings people really use for the point (jargon, symbols, common
    paraphrases), matched by the offline judge beside ``text``.
    ``opposites``: short wrong claims that say the reverse of the point on its subject ("keep
    the demos in the replay buffer" against "drop them"); an answer that asserts one
    contradicts the point, which caps its grade at 2, as a listed misconception caps it at 1.
    ``probe``: the question an interviewer asks to lead a candidate to the point without
    giving it away (the follow-up).
    """

    id: Slug
    label: Label | None = None
    text: NonEmpty
    core: bool = False
    weight: float = Field(default=1.0, gt=0, le=5)
    accepts: list[Phrase] = Field(default_factory=list, max_length=24)
    opposites: list[Phrase] = Field(default_factory=list, max_length=24)
    probe: str | None = None


class Misconception(_Strict):
    """A wrong answer people really give, and why it is wrong."""

    id: Slug
    label: Label | None = None
    text: NonEmpty
    why_wrong: NonEmpty
    #: Short ways people assert it, for the offline judge (like ``KeyPoint.accepts``).
    phrasings: list[Phrase] = Field(default_factory=list, max_length=24)


class Reference(_Strict):
    authors: NonEmpty
    year: int = Field(ge=1950, le=2100)
    title: NonEmpty
    venue: str | None = None
    arxiv: Annotated[str, StringConstraints(pattern=r"^\d{4}\.\d{4,5}$")] | None = None
    url: str | None = None


class ReferenceAnswer(_Strict):
    """An answer with its labels: the points it states (``credits``), states in part
    (``partial``), and the misconceptions it asserts; ``grade`` follows from them by the
    grade rule (the lint checks that it does)."""

    kind: Literal["expert", "partial", "missing-core", "trap", "off-topic"]
    grade: int = Field(ge=0, le=5)
    text: NonEmpty
    credits: list[Slug] | None = None
    partial: list[Slug] = Field(default_factory=list)
    asserts: list[Slug] = Field(default_factory=list)


class Variant(_Strict):
    """Another question that needs the same mechanism in another setting."""

    id: Slug
    question: NonEmpty


class Card(_Strict):
    """A trap: the question, the answer most give, and the mechanism that breaks it."""

    id: Annotated[str, StringConstraints(pattern=CARD_ID)]
    title: NonEmpty
    source: Source
    question: NonEmpty
    trap: NonEmpty
    key_points: list[KeyPoint] = Field(min_length=3, max_length=6)
    misconceptions: list[Misconception] = Field(min_length=1, max_length=3)
    hint: NonEmpty
    sim: Slug
    tags: list[str] = Field(min_length=1)
    references: list[Reference] = Field(min_length=1)
    reference_answers: list[ReferenceAnswer] = Field(min_length=2)
    variants: list[Variant] = Field(default_factory=list)
    explanation: NonEmpty  # the Markdown body after the front matter
    version: str = ""  # content hash, filled in by the loader

    @field_validator("tags")
    @classmethod
    def _known_tags(cls, tags: list[str]) -> list[str]:
        unknown = sorted(set(tags) - TAGS)
        if unknown:
            raise ValueError(f"unknown tags {unknown}; known: {sorted(TAGS)}")
        if len(set(tags)) != len(tags):
            raise ValueError("tags repeat")
        return tags

    @field_validator("explanation")
    @classmethod
    def _explanation_length(cls, body: str) -> str:
        words = len(re.findall(r"\S+", body))
        if not 150 <= words <= 450:
            raise ValueError(f"explanation has {words} words; it must have 150 to 450")
        return body

    @model_validator(mode="after")
    def _consistent(self) -> Card:
        for name, items in (("key_points", self.key_points), ("misconceptions", self.misconceptions)):
            ids = [item.id for item in items]
            if len(set(ids)) != len(ids):
                raise ValueError(f"{name}: ids repeat: {ids}")
        if not any(point.core for point in self.key_points):
            raise ValueError("key_points: at least one point must be core")
        if all(point.core for point in self.key_points):
            raise ValueError("key_points: at least one point must be non-core (it lifts 3 to 4 and 5)")
        point_ids = {point.id for point in self.key_points}
        misconception_ids = {m.id for m in self.misconceptions}
        for answer in self.reference_answers:
            unknown = sorted(
                (set(answer.credits or ()) | set(answer.partial)) - point_ids
                | set(answer.asserts) - misconception_ids
            )
            if unknown:
                raise ValueError(f"reference_answers ({answer.kind}): unknown ids {unknown}")
        kinds = {answer.kind: answer.grade for answer in self.reference_answers}
        if kinds.get("expert") != 5:
            raise ValueError("reference_answers: needs an expert answer graded 5")
        if "trap" not in kinds or kinds["trap"] > 1:
            raise ValueError("reference_answers: needs the trap answer graded 0 or 1")
        return self

    def key_point(self, point_id: str) -> KeyPoint:
        return next(point for point in self.key_points if point.id == point_id)

    @property
    def core_points(self) -> list[KeyPoint]:
        return [point for point in self.key_points if point.core]

    @property
    def extra_points(self) -> list[KeyPoint]:
        """The non-core points, which lift a pass to 4 and 5."""
        return [point for point in self.key_points if not point.core]
