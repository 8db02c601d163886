"""Load decks: folders of card files (YAML front matter plus an explanation body).

The built-in deck (``cards/deck/``) is always there; ``load_decks`` adds the folders a team
writes. A broken card or a clashing id never stops the others from loading: it is kept in
``Deck.problems`` with its file, line and fix, and left out. This module reads files only; what
needs the grader or the simulations to check (grade rule, sim names) is linted above it
(``bot.lint``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from cards.schema import Card, DeckInfo

DECK_DIR = Path(__file__).resolve().parent / "deck"
#: The built-in deck's name (what a learner's choice of decks stores).
BUILTIN = "builtin"
BUILTIN_INFO = DeckInfo(title="RL and RLHF traps", description="The built-in interview traps.")
#: A deck folder's optional description file.
DECK_FILE = "deck.yaml"
#: libyaml's safe loader when PyYAML was built with it (several times faster), else Python's.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Problem:
    """One problem in a deck folder: the file, the line (1-based; None when it has none), the
    field, what is wrong and how to fix it."""

    path: Path
    field: str
    message: str
    line: int | None = None
    fix: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        text = f"{where}: {self.field}: {self.message}"
        return f"{text}\n    fix: {self.fix}" if self.fix else text


class CardFileError(ValueError):
    """A card file that does not parse or validate; ``problems`` are ``(field, problem)`` pairs
    and ``lines`` the line of each (None when unknown)."""

    def __init__(self, path: Path, problems: list[tuple[str, str]], lines: list[int | None] | None = None):
        self.path = path
        self.problems = problems
        self.lines = lines or [None] * len(problems)
        super().__init__("\n".join(f"{path.name}: {field}: {problem}" for field, problem in problems))

    def as_problems(self) -> list[Problem]:
        return [
            Problem(self.path, field, message, line, fix_for(field, message))
            for (field, message), line in zip(self.problems, self.lines, strict=True)
        ]


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
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1  # +1: 1-based, +1: the opening '---'
        raise CardFileError(path, [("front matter", str(error).replace("\n", " "))], [line]) from error
    if not isinstance(data, dict):
        raise CardFileError(path, [("front matter", "must be a YAML mapping")], [2])
    data["explanation"] = body.strip()
    data["version"] = hashlib.sha256(text.encode()).hexdigest()[:12]
    try:
        card = Card.model_validate(data)
    except ValidationError as error:
        fields = [".".join(str(p) for p in e["loc"]) or "card" for e in error.errors()]
        raise CardFileError(
            path,
            [(name, e["msg"]) for name, e in zip(fields, error.errors(), strict=True)],
            [line_in(front, name) for name in fields],
        ) from error
    if card.id != path.stem:
        raise CardFileError(
            path, [("id", f"{card.id!r} does not match the file name {path.stem!r}")], [line_in(front, "id")]
        )
    return card


def line_in(front: str, field_path: str) -> int | None:
    """The file line (1-based, counting the opening '---') of a field such as
    ``key_points.2.accepts`` or ``key_points.some-point.hint`` (a list item found by its id);
    the nearest enclosing field's line when the field itself is missing (a required field:
    the line of its parent)."""
    try:
        node = yaml.compose(front, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if node is None:
        return 2
    if field_path == "explanation":
        return front.count("\n") + 3  # the body starts after the closing '---'
    line = node.start_mark.line
    for key in field_path.split("."):
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == key), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line, pair[1]
        elif isinstance(node, yaml.SequenceNode):
            item = _sequence_item(node, key)
            if item is None:
                break
            line, node = item.start_mark.line, item
        else:
            break
    return line + 2


def _sequence_item(node: yaml.SequenceNode, key: str) -> yaml.Node | None:
    if key.isdigit():
        index = int(key)
        return node.value[index] if index < len(node.value) else None
    for item in node.value:  # a list of mappings with ids: key_points, misconceptions, variants
        if isinstance(item, yaml.MappingNode) and any(
            getattr(k, "value", None) in ("id", "kind") and getattr(v, "value", None) == key for k, v in item.value
        ):
            return item
    return None


def locate(path: Path, field_path: str) -> int | None:
    """``line_in`` for a card file on disk."""
    try:
        front, _ = split_front_matter(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return line_in(front, field_path)


#: How to fix what pydantic or the loader says, by a phrase of its message.
_FIXES = (
    ("Field required", "add this field; `trapbot cards new ID` writes a template with every field"),
    ("Extra inputs are not permitted", "remove it or fix its spelling; the template lists every field"),
    ("should match pattern", "use a lower-case prefix and a number for a card id (team-01), lower-case words joined by - for other ids"),
    ("does not match the file name", "rename the file to ID.md or change the id"),
    ("words; it must have", "write the explanation (after the closing ---) in 150 to 450 words"),
    ("unknown tags", "use the tags listed in the message"),
    ("front matter", "start the file with a '---' line, the YAML fields, then a '---' line and the explanation"),
    ("should have at least", "add to it until it is long enough (the message says how long)"),
    ("should have at most", "shorten it, or drop the weakest items"),
    ("Input should be", "give the kind of value the template shows for this field"),
    ("at least", "add items until the count is met"),
    ("needs an expert answer", "add a reference answer of kind expert graded 5 and one of kind trap graded 0 or 1"),
    ("needs the trap answer", "add a reference answer of kind trap graded 0 or 1"),
    ("image", "put the image file in the card's folder and name it relative to it"),
    ("caption", "give an image a caption of a sentence or two; leave caption out otherwise"),
    ("also", "give one of the two cards another id"),
)


#: The fix when no rule above knows the problem better.
GENERAL_FIX = "compare with the template (`trapbot cards new ID`), which comments every field"


def fix_for(field_name: str, message: str) -> str:
    """A one-line fix for a problem."""
    for phrase, fix in _FIXES:
        if phrase in message or phrase == field_name:
            return fix
    return GENERAL_FIX


@dataclass(frozen=True)
class Deck:
    """The cards of every loaded deck in their curriculum order (the built-in deck first, by
    id), which deck and file each came from, and the problems of what was left out."""

    cards: tuple[Card, ...]
    sources: dict[str, tuple[str, Path]] = field(default_factory=dict, compare=False, hash=False)
    infos: dict[str, DeckInfo] = field(default_factory=dict, compare=False, hash=False)
    problems: tuple[Problem, ...] = field(default=(), compare=False, hash=False)

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

    @property
    def names(self) -> list[str]:
        """The loaded decks' names, the built-in deck first."""
        names = list(self.infos) or [BUILTIN]
        return names

    def info(self, name: str) -> DeckInfo:
        return self.infos.get(name) or (BUILTIN_INFO if name == BUILTIN else DeckInfo(title=name))

    def deck_of(self, card_id: str) -> str:
        return self.sources.get(card_id, (BUILTIN, None))[0]

    def path_of(self, card_id: str) -> Path | None:
        return self.sources.get(card_id, (BUILTIN, None))[1]

    def image_path(self, card_id: str) -> Path | None:
        """The card's own picture on disk, or None when it has none."""
        card, path = self._by_id.get(card_id), self.path_of(card_id)  # type: ignore[attr-defined]
        if card is None or card.image is None or path is None:
            return None
        return path.parent / card.image

    def in_decks(self, names: Iterable[str] | None) -> list[Card]:
        """The cards of the named decks in curriculum order; every card for None. A name no
        loaded deck has (a removed folder) is ignored."""
        if names is None:
            return list(self.cards)
        wanted = set(names)
        return [card for card in self.cards if self.deck_of(card.id) in wanted]


def read_deck_info(folder: Path) -> tuple[DeckInfo, list[Problem]]:
    """The folder's ``deck.yaml``, or a title from the folder's name when there is none."""
    path = folder / DECK_FILE
    fallback = DeckInfo(title=folder.name)
    if not path.is_file():
        return fallback, []
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER) or {}
        return DeckInfo.model_validate(data), []
    except yaml.YAMLError as error:
        return fallback, [Problem(path, "deck", str(error).replace("\n", " "), None, "fix the YAML syntax")]
    except ValidationError as error:
        return fallback, [
            Problem(path, ".".join(str(p) for p in e["loc"]) or "deck", e["msg"], None,
                    "deck.yaml takes title (required), description and language")
            for e in error.errors()
        ]


def load_decks(folders: Sequence[Path] = (), *, builtin: Path | None = DECK_DIR) -> Deck:
    """The built-in deck and every folder in ``folders``, each named after its folder. What
    does not load (a broken card, an id another deck has, a missing image, a missing folder)
    is left out and reported in ``Deck.problems``; the rest loads."""
    cards: list[Card] = []
    sources: dict[str, tuple[str, Path]] = {}
    infos: dict[str, DeckInfo] = {}
    problems: list[Problem] = []
    plan = ([(BUILTIN, builtin)] if builtin is not None else []) + [(Path(f).name, Path(f)) for f in folders]
    for name, folder in plan:
        if name != BUILTIN and builtin is not None and folder.resolve() == Path(builtin).resolve():
            continue  # the built-in deck listed again in TRAPBOT_DECKS
        if not folder.is_dir():
            problems.append(Problem(folder, "deck", "no such folder", None, "fix the path in TRAPBOT_DECKS"))
            continue
        if name in infos:
            problems.append(Problem(folder, "deck", f"another deck folder is also named {name!r}", None,
                                    "rename one of the folders (a deck's name is its folder's name)"))
            continue
        info, info_problems = read_deck_info(folder) if name != BUILTIN else (BUILTIN_INFO, [])
        infos[name] = info
        problems += info_problems
        paths = sorted(folder.glob("*.md"))
        if not paths:
            problems.append(Problem(folder, "deck", "no card files", None, "add cards: trapbot cards new ID --deck DIR"))
        for path in paths:
            if path.name.lower() == "readme.md":
                continue
            try:
                card = parse_card(path)
            except CardFileError as error:
                problems += error.as_problems()
                continue
            except (OSError, UnicodeDecodeError) as error:
                problems.append(Problem(path, "file", str(error), None, "save the card as UTF-8 text"))
                continue
            if card.id in sources:
                other = sources[card.id][1]
                problems.append(Problem(path, "id", f"{card.id!r} is also the id of {other}", locate(path, "id"),
                                        "give one of the two cards another id (and rename its file)"))
                continue
            if card.image is not None and not (path.parent / card.image).is_file():
                problems.append(Problem(path, "image", f"no file {card.image!r} beside the card", locate(path, "image"),
                                        f"put {card.image} in {path.parent} or fix the name"))
                continue
            cards.append(card)
            sources[card.id] = (name, path)
    order = {name: index for index, name in enumerate(infos)}
    cards.sort(key=lambda card: (order[sources[card.id][0]], *_curriculum_key(card)))
    return Deck(tuple(cards), sources, infos, tuple(problems))


def load_deck(directory: Path = DECK_DIR) -> Deck:
    """Load one folder's cards; raise ``CardFileError`` on the first broken one."""
    cards = [parse_card(path) for path in sorted(directory.glob("*.md"))]
    name = BUILTIN if directory.resolve() == DECK_DIR else directory.name
    sources = {card.id: (name, directory / f"{card.id}.md") for card in cards}
    return Deck(tuple(sorted(cards, key=_curriculum_key)), sources, {name: BUILTIN_INFO if name == BUILTIN else read_deck_info(directory)[0]})


def _curriculum_key(card: Card) -> tuple[int, str]:
    return (0 if card.id.startswith("rl-") else 1, card.id)


@lru_cache(maxsize=1)
def default_deck() -> Deck:
    return load_deck(DECK_DIR)
