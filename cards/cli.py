"""``trapbot cards ...``: lint, list and show the deck.

The bot's CLI calls ``register(subparsers)`` and then ``args.func(args)``; every sub-command
sets ``func`` to a handler that returns the exit code.

    trapbot cards lint [--deck DIR]            every problem as ``file: field: problem``
    trapbot cards list [--json] [--deck DIR]   id, title, sim and tags of every card
    trapbot cards show ID [--json] [--deck DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from cards.deck import DECK_DIR, CardFileError, Deck, lint_deck, load_deck
from cards.schema import Card

WRAP = 88
INDENT = "  "


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``cards`` command and its sub-commands to an argparse subparsers object."""
    cards_parser = subparsers.add_parser("cards", help="lint, list and show the deck's cards")
    cards_parser.set_defaults(func=lambda args: _usage(cards_parser))
    commands = cards_parser.add_subparsers(dest="cards_command", metavar="COMMAND")

    lint = commands.add_parser("lint", help="check every card file; exit 1 when any has a problem")
    _add_deck_option(lint)
    lint.set_defaults(func=cmd_lint)

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
        help="deck directory (default: the packaged deck)",
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def cmd_lint(args: argparse.Namespace) -> int:
    problems = lint_deck(args.deck)
    if problems:
        for line in problems:
            print(line)
        return 1
    count = len(list(Path(args.deck).glob("*.md")))
    print(f"OK: {count} cards, no problems")
    return 0


def _load(directory: Path) -> Deck | None:
    """The deck, or ``None`` after telling the user (on stderr) which card is broken."""
    try:
        return load_deck(directory)
    except CardFileError as error:
        print(f"the deck has a broken card (run `trapbot cards lint`):\n{error}", file=sys.stderr)
        return None


def cmd_list(args: argparse.Namespace) -> int:
    deck = _load(args.deck)
    if deck is None:
        return 1
    rows = [
        {"id": card.id, "title": card.title, "sim": card.sim, "tags": list(card.tags)}
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
    deck = _load(args.deck)
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
        f"Sim: {card.sim}    Tags: {', '.join(card.tags)}",
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
