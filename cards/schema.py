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

#: A card id: a short lower-case prefix and a number ("rl-08", "team-03"); unique across decks,
#: at most 16 characters (the database's and the chat buttons' limit).
CARD_ID = r"^[a-z][a-z0-9]{0,9}-\d{2,4}$"
SLUG = r"^[a-z0-9][a-z0-9_-]*$"

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Slug = Annotated[str, StringConstraints(pattern=SLUG)]


#: The picture format a card's own plot has (the adapters send it as a PNG).
IMAGE_SUFFIXES = (".png",)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Strict):
    """Where the trap was asked, as the seed gives it."""

    company: str | None = None
    role: NonEmpty
    date: NonEmpty  # as the seed writes it, e.g. "Jan 27, 2026" or "Jun 2026"
    series: str | None = None  # e.g. "Reinforcement Learning #1"
    seed: str | None = None  # file name under shared/seeds/ (the built-in deck's cards)


Phrase = Annotated[str, StringConstraints(strip_whitespace=True, min_length=2, max_length=80)]
Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=60)]
#: A key point's hint: one sentence, shown as "what you missed" (``content_problems`` lints it).
Hint = Annotated[str, StringConstraints(strip_whitespace=True, min_length=12, max_length=200)]


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
    the demos in the replay buffer" against "drop them"); the offline judge reads an answer
    near one as a sign that it contradicts the point (a contradicted point keeps a grade at 2
    or below, as an asserted misconception keeps it at 1 or below).
    ``probe``: the question an interviewer asks to lead a candidate to the point without
    giving it away (the follow-up).
    ``hint``: one sentence that points a learner who missed the point toward it without
    stating it (the verdict's "what you missed" line): not a copy of the point's text, and
    none of its ``accepts`` (lint).
    """

    id: Slug
    label: Label | None = None
    hint: Hint | None = None
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


class PointInVariant(_Strict):
    """What a variant says differently about one key point (``id``) where its setting differs:
    the label shown, the follow-up probe, the hint. A field left out is the original's."""

    id: Slug
    label: Label | None = None
    probe: str | None = None
    hint: Hint | None = None


class Variant(_Strict):
    """Another question that needs the same mechanism in another setting.

    A variant is whole: everything a learner who answered it sees is about its setting. The
    original card names its setting in ``Card.situation``; the lint fails a variant unless
    it overrides (``hint``, ``points``) every label, probe or hint of the original that uses
    one of those terms, and its own overrides use none of them."""

    id: Slug
    question: NonEmpty
    hint: NonEmpty | None = None  # the /hint nudge for this wording
    points: list[PointInVariant] = Field(default_factory=list)
    #: Terms of the card's ``situation`` this variant's setting has too (a variant about
    #: another PPO pipeline shares "PPO"): the original's fields may show them.
    shares: list[Phrase] = Field(default_factory=list)


class DeckInfo(_Strict):
    """A deck folder's optional ``deck.yaml``: what the deck is, shown when learners choose decks."""

    title: NonEmpty
    description: str = ""
    language: str = "en"


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
    #: The plot shown with the explanation: a built-in simulation's id, or an image file
    #: beside the card (a PNG, a path relative to the card's folder) with its caption,
    #: or neither. A deck never ships code: its plots are pictures or built-in simulations.
    sim: Slug | None = None
    image: str | None = None
    caption: str | None = None
    tags: list[str] = Field(min_length=1)
    references: list[Reference] = Field(min_length=1)
    reference_answers: list[ReferenceAnswer] = Field(min_length=2)
    variants: list[Variant] = Field(default_factory=list)
    #: Words that name the original question's setting ("coding assistant", "sand"): what a
    #: variant must not show (see ``Variant``). Required when there are variants; an empty
    #: list says the original's wording names no setting of its own.
    situation: list[Phrase] | None = Field(default=None, max_length=24)
    explanation: NonEmpty  # the Markdown body after the front matter
    version: str = ""  # content hash, filled in by the loader

    @field_validator("image")
    @classmethod
    def _image_beside(cls, image: str | None) -> str | None:
        if image is None:
            return None
        if image.startswith(("/", "\\")) or ".." in image.replace("\\", "/").split("/"):
            raise ValueError("must name a file in the card's folder (no absolute path, no '..')")
        if not image.lower().endswith(IMAGE_SUFFIXES):
            raise ValueError(f"must be one of {', '.join(IMAGE_SUFFIXES)}")
        return image

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
        for variant in self.variants:
            unknown = sorted({point.id for point in variant.points} - point_ids)
            if unknown:
                raise ValueError(f"variants ({variant.id}): points name no key point: {unknown}")
        if self.sim is not None and self.image is not None:
            raise ValueError("sim and image: name a built-in simulation or an image, not both")
        if self.image is not None and not self.caption:
            raise ValueError("caption: an image needs a caption (one or two sentences on what it shows)")
        if self.caption is not None and self.image is None:
            raise ValueError("caption: only an image takes a caption (a simulation brings its own)")
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


# ----- content lint: hints and whole variants (``cards.deck.content_problems`` adds these) -----

#: The longest run of words a hint may share with its point's text before it reads as a
#: fragment of the key rather than a pointer toward it.
HINT_SHARED_WORDS = 5


def _fold(text: str) -> str:
    """Lower case, typographic quotes plain, punctuation other than word joiners as spaces."""
    text = text.casefold().replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(re.sub(r"[^\w'^+-]+", " ", text).split())


def mentions(text: str, term: str) -> bool:
    """Whether ``term`` occurs in ``text`` as whole words (a plural included), folded."""
    folded, wanted = _fold(text), _fold(term)
    return bool(wanted) and re.search(rf"(?<![\w]){re.escape(wanted)}(?:s|es)?(?![\w])", folded) is not None


def _shared_run(first: str, second: str, length: int) -> str | None:
    """A run of ``length`` consecutive words found in both texts, folded; None when none."""
    words = _fold(first).split()
    other = f" {_fold(second)} "
    for start in range(len(words) - length + 1):
        run = " ".join(words[start : start + length])
        if f" {run} " in other:
            return run
    return None


def _hint_problems_of(where: str, hint: str, point: KeyPoint) -> list[str]:
    found = []
    if not (hint[0].isupper() or hint[0].isdigit()) or hint.rstrip()[-1] not in ".?!":
        found.append(f"{where}: must be a whole sentence (a capital first, a full stop or question mark last)")
    shared = _shared_run(hint, point.text, HINT_SHARED_WORDS)
    if shared:
        found.append(f"{where}: copies the point's text ({shared!r}); point toward it instead")
    given = [phrase for phrase in point.accepts if mentions(hint, phrase)]
    if given:
        found.append(f"{where}: gives the point away ({given[0]!r})")
    if point.probe and _fold(hint) == _fold(point.probe):
        found.append(f"{where}: repeats the probe")
    return found


def hint_problems(card: Card) -> list[str]:
    """Every key point has a hint that is a sentence, no fragment of its text, and no accepted
    phrasing of the point."""
    found = []
    for point in card.key_points:
        where = f"key_points.{point.id}.hint"
        if point.hint is None:
            found.append(f"{where}: missing (one sentence toward the point, shown when it is missed)")
            continue
        found.extend(_hint_problems_of(where, point.hint, point))
    return found


def variant_problems(card: Card) -> list[str]:
    """Whole variants: the card names its setting (``situation``, each term used by the
    original), and every variant overrides each label, probe and hint, and the question hint,
    that names it, with overrides that name none of it."""
    if not card.variants:
        return []
    found = []
    if card.situation is None:
        found.append("situation: missing (the words that name the original question's setting; [] when none)")
    situation = card.situation or []
    original = [card.question, card.trap, card.hint] + [
        value for point in card.key_points for value in (point.label, point.probe, point.hint) if value
    ]
    for term in situation:
        if not any(mentions(text, term) for text in original):
            found.append(f"situation: {term!r} occurs nowhere in the original question, labels, probes or hints")

    for variant in card.variants:
        where = f"variants.{variant.id}"
        unknown = sorted(set(variant.shares) - set(situation))
        if unknown:
            found.append(f"{where}.shares: not in the card's situation: {unknown}")
        own = [term for term in situation if term not in variant.shares]

        def named(text: str | None, own: list[str] = own) -> str | None:
            return next((term for term in own if text and mentions(text, term)), None)

        overrides = {point.id: point for point in variant.points}
        term = named(card.hint)
        if term and variant.hint is None:
            found.append(f"{where}.hint: the card's hint names the original's {term!r}; write the variant's own")
        for point in card.key_points:
            override = overrides.get(point.id)
            for field in ("label", "probe", "hint"):
                mine = getattr(override, field) if override else None
                term = named(getattr(point, field))
                if term and mine is None:
                    found.append(f"{where}.points.{point.id}.{field}: the original's shows {term!r}; override it")
        for field, value in [("hint", variant.hint)] + [
            (f"points.{o.id}.{name}", getattr(o, name)) for o in variant.points for name in ("label", "probe", "hint")
        ]:
            term = named(value)
            if term:
                found.append(f"{where}.{field}: names the original's setting ({term!r})")
        for override in variant.points:
            point = card.key_point(override.id)
            if override.probe is not None:
                if not override.probe.rstrip().endswith("?"):
                    found.append(f"{where}.points.{override.id}.probe: must be a question")
                given = [phrase for phrase in point.accepts if mentions(override.probe, phrase)]
                if given:
                    found.append(f"{where}.points.{override.id}.probe: gives the point away ({given[0]!r})")
            if override.hint is not None:
                found.extend(_hint_problems_of(f"{where}.points.{override.id}.hint", override.hint, point))
    return found
