"""``trapbot cards ...``: the deck's own commands (``cards.cli``: list, show, new) and the two
that need the grader and the simulations beside the deck:

    trapbot cards lint [DIR ...]          the built-in deck, TRAPBOT_DECKS and DIR; file:line, problem, fix
    trapbot cards try ID "answer" [--deck DIR] [--judge offline|llm]   each point's mark and the grade
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from cards import cli as cards_cli
from cards.deck import DECK_DIR, CardFileError, Deck, load_decks, parse_card
from cards.schema import Card


def register(subparsers: Any) -> argparse.ArgumentParser:
    parser = cards_cli.register(subparsers)
    parser.set_defaults(folders=None)
    commands = parser.commands  # type: ignore[attr-defined]
    for name in ("list", "show"):
        commands.choices[name].set_defaults(folders=configured_folders)

    lint = commands.add_parser("lint", help="check the decks' card files; exit 1 when any has a problem")
    lint.add_argument("dirs", nargs="*", type=Path, metavar="DIR", help="deck folders to check beside the configured ones")
    lint.set_defaults(func=cmd_lint)

    trying = commands.add_parser("try", help="grade an answer against a card, point by point")
    trying.add_argument("id", help="the card's id (or the path of its file)")
    trying.add_argument("answer", help="the answer to grade, in quotes")
    trying.add_argument("--deck", type=Path, action="append", default=[], metavar="DIR", help="a deck folder to look in")
    trying.add_argument("--judge", choices=("offline", "llm"), default="offline", help="which judge reads it (default offline)")
    trying.set_defaults(func=cmd_try)
    return parser


def configured_folders() -> list[Path]:
    """The deck folders TRAPBOT_DECKS lists."""
    from bot.config import get_settings

    return get_settings().deck_dirs


def _folders(args: argparse.Namespace) -> list[Path]:
    configured = configured_folders()
    extra = [Path(d) for d in getattr(args, "dirs", []) + getattr(args, "deck", [])]
    seen = {p.resolve() for p in configured}
    return configured + [d for d in extra if d.resolve() not in seen and d.resolve() != DECK_DIR]


def cmd_lint(args: argparse.Namespace) -> int:
    from bot.lint import deck_problems, known_sims

    deck = load_decks(_folders(args))
    problems = deck_problems(deck, sims=known_sims())
    for problem in problems:
        print(problem)
    if problems:
        files = len({problem.path for problem in problems})
        print(f"\n{len(problems)} problem{'s' * (len(problems) != 1)} in {files} file{'s' * (files != 1)}")
        return 1
    print(f"OK: {len(deck)} cards in {len(deck.names)} deck{'s' * (len(deck.names) != 1)}, no problems")
    return 0


def find_card(args: argparse.Namespace) -> Card | None:
    """The card to try: a file path, or an id in the built-in deck, TRAPBOT_DECKS or --deck; a
    card that does not load is parsed alone so its problem is said."""
    given = Path(args.id)
    if given.suffix == ".md" and given.is_file():
        return _parse_or_say(given)
    folders = _folders(args)
    for folder in folders:
        path = folder / f"{args.id}.md"
        if path.is_file():
            return _parse_or_say(path)
    deck: Deck = load_decks(folders)
    if args.id in deck:
        return deck.get(args.id)
    print(f"no card {args.id!r} in the built-in deck or {', '.join(map(str, folders)) or 'TRAPBOT_DECKS'}; "
          "pass --deck DIR or the card file's path", file=sys.stderr)
    return None


def _parse_or_say(path: Path) -> Card | None:
    try:
        return parse_card(path)
    except CardFileError as error:
        for problem in error.as_problems():
            print(problem, file=sys.stderr)
        return None


@lru_cache(maxsize=2)
def _judge(name: str) -> Any:
    """The judge ``try`` reads with, built once per process (its models load in seconds)."""
    if name == "llm":
        from bot.app import build_grader
        from bot.config import get_settings

        settings = get_settings().model_copy(update={"trapbot_judge": "llm"})
        return build_grader(settings)
    from grader.offline import OfflineJudge

    return OfflineJudge()


def cmd_try(args: argparse.Namespace) -> int:
    from bot.texts import point_label
    from grader.base import PointVerdict

    card = find_card(args)
    if card is None:
        return 1
    print(f"Reading the answer with the {args.judge} judge (the offline judge loads its model: a few seconds)...",
          file=sys.stderr, flush=True)
    assessment = asyncio.run(_judge(args.judge).assess(card, args.answer, interactive=False))
    grade = assessment.grade
    if grade is None:
        print("the judge gave no grade", file=sys.stderr)
        return 1
    marks = {PointVerdict.PRESENT: "✓", PointVerdict.PARTIAL: "~", PointVerdict.ABSENT: "✗", PointVerdict.CONTRADICTED: "✗!"}
    print(f"{card.id}: {grade.quality}/5 ({assessment.grader})")
    for point in card.key_points:
        verdict = grade.judgement.verdict_for(point.id)
        quote = next((p.quote for p in grade.judgement.points if p.point_id == point.id and p.quote), "")
        core = "core" if point.core else f"weight {point.weight:g}"
        line = f"  {marks.get(verdict, '?'):<2} {point.id} ({core}): {verdict.value}  {point_label(point)}"
        print(line + (f'\n       "{quote}"' if quote else ""))
    for item in grade.judgement.misconceptions:
        if item.asserted:
            print(f"  !  misconception {item.misconception_id} asserted" + (f': "{item.quote}"' if item.quote else ""))
    for cap in grade.caps:
        print(f"  capped: {cap}")
    return 0
