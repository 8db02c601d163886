"""``trapbot cards ...``: list, show and start cards.

The bot's CLI calls ``register(subparsers)`` and then ``args.func(args)``; every sub-command
sets ``func`` to a handler that returns the exit code. ``lint`` and ``try`` need the grader and
the simulations, so they are added on the floor above (``bot.cards_cmd``).

    trapbot cards list [--json] [--deck DIR]   id, deck, title, plot and tags of every card
    trapbot cards show ID [--json] [--deck DIR]
    trapbot cards new ID [--deck DIR]          a commented template to fill in
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from cards.deck import DECK_DIR, CardFileError, Deck, load_deck, load_decks
from cards.schema import CARD_ID, Card
from cards.template import card_template

WRAP = 88
INDENT = "  "


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``cards`` command and its sub-commands to an argparse subparsers object; the
    sub-commands' own subparsers object is the returned parser's ``commands``."""
    cards_parser = subparsers.add_parser("cards", help="list, show, write and check cards")
    cards_parser.set_defaults(func=lambda args: _usage(cards_parser))
    commands = cards_parser.add_subparsers(dest="cards_command", metavar="COMMAND")
    cards_parser.commands = commands  # type: ignore[attr-defined]

    new = commands.add_parser("new", help="write a commented card template to fill in")
    new.add_argument("id", help="the new card's id: a short prefix and a number, e.g. team-01")
    new.add_argument("--deck", type=Path, default=Path("."), metavar="DIR", help="the deck folder (default: here)")
    new.add_argument("--force", action="store_true", help="overwrite an existing file")
    new.set_defaults(func=cmd_new)

    listing = commands.add_parser("list", help="id, title, sim and tags of every card")
    listing.add_argument("--json", action="store_true", help="print JSON")
    _add_deck_option(listing)
    listing.set_defaults(func=cmd_list)

    show = commands.add_parser("show", help="one card in full")
    show.add_argument("id", help="card id, e.g. rl-08")
    show.add_argument("--json", action="store_true", help="print the whole card as JSON")
    _add_deck_option(show)
    show.set_defaults(func=cmd_show)
    return cards_parser


def _add_deck_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--deck",
        type=Path,
        default=DECK_DIR,
        metavar="DIR",
        help="deck directory (default: the packaged deck and the folders in TRAPBOT_DECKS)",
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def cmd_new(args: argparse.Namespace) -> int:
    if not re.fullmatch(CARD_ID, args.id):
        print(f"{args.id!r} is not a card id: use a short lower-case prefix and a number, e.g. team-01", file=sys.stderr)
        return 2
    args.deck.mkdir(parents=True, exist_ok=True)
    path = args.deck / f"{args.id}.md"
    if path.exists() and not args.force:
        print(f"{path} exists; pass --force to overwrite it", file=sys.stderr)
        return 1
    path.write_text(card_template(args.id), encoding="utf-8")
    print(f"wrote {path}\nfill it in, then: trapbot cards lint {args.deck}  and  trapbot cards try {args.id} \"an answer\"")
    return 0


def _load(directory: Path, folders: Any = None) -> Deck | None:
    """The deck, or ``None`` after telling the user (on stderr) which card is broken. With
    ``folders`` (the configured decks) the built-in deck and those load, plus ``directory``
    when it is another folder; a broken card there is reported and left out."""
    if callable(folders):  # the configured folders, read when the command runs
        folders = folders()
    if folders is not None:
        extra = list(folders) + ([directory] if Path(directory).resolve() != DECK_DIR else [])
        deck = load_decks(extra)
        for problem in deck.problems:
            print(f"left out: {problem} (run `trapbot cards lint`)", file=sys.stderr)
        return deck
    try:
        return load_deck(directory)
    except CardFileError as error:
        print(f"the deck has a broken card (run `trapbot cards lint`):\n{error}", file=sys.stderr)
        return None


def cmd_list(args: argparse.Namespace) -> int:
    deck = _load(args.deck, getattr(args, "folders", None))
    if deck is None:
        return 1
    rows = [
        {"id": card.id, "title": card.title, "sim": plot_name(card), "tags": list(card.tags)}
        for card in deck
    ]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    header = {"id": "ID", "title": "TITLE", "sim": "SIM"}
    widths = {key: max([len(header[key])] + [len(row[key]) for row in rows]) for key in header}
    print(f"{'ID':<{widths['id']}}  {'TITLE':<{widths['title']}}  {'SIM':<{widths['sim']}}  TAGS")
    for row in rows:
        print(
            f"{row['id']:<{widths['id']}}  {row['title']:<{widths['title']}}  "
            f"{row['sim']:<{widths['sim']}}  {', '.join(row['tags'])}"
        )
    print(f"\n{len(rows)} cards")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    deck = _load(args.deck, getattr(args, "folders", None))
    if deck is None:
        return 1
    try:
        card = deck.get(args.id)
    except KeyError as error:
        print(error.args[0], file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(card.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        print(render_card(card))
    return 0


def plot_name(card: Card) -> str:
    """What the card shows beside its explanation: a simulation's id, an image's file, or "-"."""
    return card.sim or card.image or "-"


def _wrapped(text: str, indent: str = INDENT, first: str | None = None) -> str:
    return textwrap.fill(
        " ".join(text.split()),
        width=WRAP,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def render_card(card: Card) -> str:
    """The card as plain text for a terminal: every field a learner or author needs to read."""
    source = card.source
    where = ", ".join(part for part in (source.role, source.company, source.date) if part)
    if source.series:
        where += f" ({source.series})"
    lines = [
        f"{card.id}  {card.title}",
        f"Source: {where}",
        f"Plot: {plot_name(card)}    Tags: {', '.join(card.tags)}",
        "",
        "Question",
        _wrapped(card.question),
        "",
        "Trap (the answer most give)",
        _wrapped(card.trap),
        "",
        "Key points (* = core)",
    ]
    for point in card.key_points:
        marker = "*" if point.core else " "
        lines.append(
            _wrapped(
                f"[{point.id}, weight {point.weight:g}] {point.text}",
                first=f"{marker} ",
                indent="    ",
            )
        )
        if point.hint:
            lines.append(_wrapped(f"Hint: {point.hint}", indent="    "))
    lines += ["", "Misconceptions"]
    for item in card.misconceptions:
        lines.append(_wrapped(item.text, first="- ", indent="    "))
        lines.append(_wrapped(f"Why wrong: {item.why_wrong}", indent="    "))
    lines += [
        "",
        "Hint",
        _wrapped(card.hint),
        "",
        "Explanation",
        textwrap.indent(card.explanation, INDENT),
        "",
    ]
    if card.image:
        lines[-1:-1] = ["", _wrapped(f"Image: {card.image} ({card.caption})")]
    if card.variants:
        lines.append(f"Variants (the original's setting: {', '.join(card.situation or []) or 'none named'})")
        for variant in card.variants:
            lines.append(_wrapped(f"[{variant.id}] {variant.question}", first="- ", indent="    "))
            if variant.hint:
                lines.append(_wrapped(f"Hint: {variant.hint}", indent="    "))
            for override in variant.points:
                for name in ("label", "probe", "hint"):
                    value = getattr(override, name)
                    if value:
                        lines.append(_wrapped(f"{override.id} {name}: {value}", indent="      "))
        lines.append("")
    lines.append("References")
    for ref in card.references:
        parts = [f"{ref.authors} ({ref.year}). {ref.title}."]
        if ref.venue:
            parts.append(f"{ref.venue}.")
        if ref.arxiv:
            parts.append(f"arXiv:{ref.arxiv}")
        if ref.url:
            parts.append(ref.url)
        lines.append(_wrapped(" ".join(parts), first="- ", indent="    "))
    return "\n".join(lines)


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="cards")
    register(_parser.add_subparsers(dest="command", required=True))
    _args = _parser.parse_args()
    sys.exit(_args.func(_args))
