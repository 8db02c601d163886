"""Load the deck: one Markdown file per card, YAML front matter plus an explanation body."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from cards.schema import Card, hint_problems, variant_problems

DECK_DIR = Path(__file__).resolve().parent / "deck"
#: libyaml's safe loader when PyYAML was built with it (several times faster), else Python's.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CardFileError(ValueError):
    """A card file that does not parse or validate; ``problems`` are ``(field, problem)`` pairs."""

    def __init__(self, path: Path, problems: list[tuple[str, str]]):
        self.path = path
        self.problems = problems
        super().__init__("\n".join(f"{path.name}: {field}: {problem}" for field, problem in problems))


def split_front_matter(text: str) -> tuple[str, str]:
    """Split ``---\\nYAML\\n---\\nbody`` into its YAML and its body."""
    if not text.startswith("---\n"):
        raise ValueError("the file must start with a '---' line opening the front matter")
    end = text.find("\n---\n", 4)
    if end == -1:
        raise ValueError("the front matter is not closed by a '---' line")
    return text[4:end], text[end + 5 :]


def parse_card(path: Path) -> Card:
    """Parse and validate one card file, or raise ``CardFileError``."""
    text = path.read_text(encoding="utf-8")
    try:
        front, body = split_front_matter(text)
        data = yaml.load(front, Loader=_SAFE_LOADER)
    except (ValueError, yaml.YAMLError) as error:
        raise CardFileError(path, [("front matter", str(error).replace("\n", " "))]) from error
    if not isinstance(data, dict):
        raise CardFileError(path, [("front matter", "must be a YAML mapping")])
    data["explanation"] = body.strip()
    data["version"] = hashlib.sha256(text.encode()).hexdigest()[:12]
    try:
        card = Card.model_validate(data)
    except ValidationError as error:
        raise CardFileError(
            path,
            [(".".join(str(p) for p in e["loc"]) or "card", e["msg"]) for e in error.errors()],
        ) from error
    if card.id != path.stem:
        raise CardFileError(path, [("id", f"{card.id!r} does not match the file name {path.stem!r}")])
    return card


@dataclass(frozen=True)
class Deck:
    """The cards in their curriculum order (by id: rl-01 first)."""

    cards: tuple[Card, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {card.id: card for card in self.cards})

    def __len__(self) -> int:
        return len(self.cards)

    def __iter__(self):
        return iter(self.cards)

    def __contains__(self, card_id: object) -> bool:
        return card_id in self._by_id  # type: ignore[attr-defined]

    def get(self, card_id: str) -> Card:
        """The card with this id; ``KeyError`` with a clear message when there is none."""
        try:
            return self._by_id[card_id]  # type: ignore[attr-defined]
        except KeyError:
            raise KeyError(f"no card {card_id!r}; known ids: {', '.join(self.ids)}") from None

    @property
    def ids(self) -> list[str]:
        return [card.id for card in self.cards]


def lint_deck(directory: Path = DECK_DIR) -> list[str]:
    """Every problem in the deck as ``file: field: problem`` lines; empty when clean."""
    problems: list[str] = []
    paths = sorted(directory.glob("*.md"))
    if not paths:
        return [f"{directory}: deck: no card files"]
    sims = _known_sims()
    for path in paths:
        try:
            card = parse_card(path)
        except CardFileError as error:
            problems.extend(str(error).splitlines())
            continue
        if sims is not None and card.sim not in sims:
            problems.append(f"{path.name}: sim: unknown simulation {card.sim!r}")
        problems.extend(f"{path.name}: {problem}" for problem in content_problems(card))
    return problems


#: The fewest accepted phrasings (and opposites) a key point, or phrasings a misconception, carries.
MIN_ACCEPTS = 2


def content_problems(card: Card) -> list[str]:
    """What the schema cannot see: labels and phrasings present, weights meaningful, reference
    answers graded as the grade rule grades their labels, probes that are questions and give
    nothing away."""
    from grader.scoring import grade_from_labels
    from grader.textnorm import fold_phrase, occurs_on_word_boundaries

    found: list[str] = []
    for point in card.key_points:
        where = f"key_points.{point.id}"
        if point.label is None:
            found.append(f"{where}.label: missing (at most 60 characters, shown in the verdict)")
        if len(point.accepts) < MIN_ACCEPTS:
            found.append(f"{where}.accepts: {len(point.accepts)} phrasings; at least {MIN_ACCEPTS}")
        if len(point.opposites) < MIN_ACCEPTS:
            found.append(f"{where}.opposites: {len(point.opposites)} claims; at least {MIN_ACCEPTS}")
        both = {fold_phrase(a) for a in point.accepts} & {fold_phrase(o) for o in point.opposites}
        if both:
            found.append(f"{where}.opposites: also accepted as the point ({min(both)!r})")
        if point.core and point.weight != 1.0:
            found.append(f"{where}.weight: a core point's weight means nothing; leave it at 1")
        if point.probe is not None:
            if not point.probe.rstrip().endswith("?"):
                found.append(f"{where}.probe: must be a question")
            given = [a for a in point.accepts if occurs_on_word_boundaries(fold_phrase(a), point.probe)]
            if given:
                found.append(f"{where}.probe: gives the point away ({given[0]!r})")
    for misconception in card.misconceptions:
        where = f"misconceptions.{misconception.id}"
        if misconception.label is None:
            found.append(f"{where}.label: missing (at most 60 characters)")
        if len(misconception.phrasings) < MIN_ACCEPTS:
            found.append(
                f"{where}.phrasings: {len(misconception.phrasings)} phrasings; at least {MIN_ACCEPTS}"
            )
    found += hint_problems(card) + variant_problems(card)
    for answer in card.reference_answers:
        where = f"reference_answers.{answer.kind}"
        if answer.credits is None:
            found.append(f"{where}.credits: missing (the point ids the answer states)")
            continue
        ruled = grade_from_labels(card, answer.credits, answer.partial, answer.asserts)
        if ruled != answer.grade:
            found.append(f"{where}.grade: {answer.grade}, but the grade rule gives {ruled} for its labels")
    return found


def _known_sims() -> set[str] | None:
    try:
        from sims.registry import sim_ids
    except ImportError:  # the simulation registry is not there yet
        return None
    return set(sim_ids())


def load_deck(directory: Path = DECK_DIR) -> Deck:
    """Load every card; raise ``CardFileError`` on the first broken one."""
    cards = [parse_card(path) for path in sorted(directory.glob("*.md"))]
    return Deck(tuple(sorted(cards, key=_curriculum_key)))


def _curriculum_key(card: Card) -> tuple[int, str]:
    return (0 if card.id.startswith("rl-") else 1, card.id)


@lru_cache(maxsize=1)
def default_deck() -> Deck:
    return load_deck(DECK_DIR)
