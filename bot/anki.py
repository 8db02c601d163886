"""``trapbot export anki [--deck NAME ...] --out FILE.apkg``: the decks as an Anki package.

One Anki deck per trapbot deck (``trapbot::<title>``), one note per card: the question on the
front; the trap, the key points, the explanation and the plot (a card's own picture, or its
simulation's plot) on the back. Note ids come from the card ids and deck ids from the deck
names, so importing a re-export updates the notes instead of adding copies. Written with
genanki; the Markdown is rendered by markdown-it-py.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import html
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from cards.deck import Deck, load_decks
from cards.schema import Card

#: The note type's id: fixed, so every export (and every re-import) shares one note type.
MODEL_ID = 1_607_392_041
FIELDS = ["Id", "Question", "Trap", "KeyPoints", "Explanation", "Plot", "Caption", "Source"]
CSS = """
.card { font-family: -apple-system, "Segoe UI", sans-serif; font-size: 17px; text-align: left; max-width: 46em; margin: auto; }
.id { color: #888; font-size: 13px; }
.trap { background: #fff4e5; border-left: 4px solid #f0a030; padding: .4em .8em; }
.core { font-weight: bold; }
.caption { color: #555; font-size: 14px; }
img { max-width: 100%; }
"""
FRONT = '<div class="id">{{Id}}</div>\n{{Question}}'
BACK = """{{FrontSide}}
<hr id="answer">
<h3>The trap</h3><div class="trap">{{Trap}}</div>
<h3>The mechanism (bold: core points)</h3>{{KeyPoints}}
<h3>Why</h3>{{Explanation}}
{{#Plot}}<div>{{Plot}}</div><div class="caption">{{Caption}}</div>{{/Plot}}
<div class="id">{{Source}}</div>"""

_MATH = re.compile(r"\$([^$\n]+)\$")


@lru_cache(maxsize=1)
def note_model() -> Any:
    """The note type (genanki is imported when an export runs, not with the CLI)."""
    import genanki

    return genanki.Model(
        MODEL_ID,
        "trapbot trap",
        fields=[{"name": name} for name in FIELDS],
        templates=[{"name": "Trap", "qfmt": FRONT, "afmt": BACK}],
        css=CSS,
    )


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def markdown_html(text: str) -> str:
    """Markdown as HTML, with ``$...$`` as MathJax ``\\(...\\)`` (which Anki renders)."""
    formulas: list[str] = []

    def hold(match: re.Match[str]) -> str:
        formulas.append(match.group(1))
        return f"\ue000{len(formulas) - 1}\ue001"  # private-use marks, which Markdown leaves alone

    rendered = _markdown().render(_MATH.sub(hold, text))
    return re.sub("\ue000(\\d+)\ue001", lambda m: "\\(" + html.escape(formulas[int(m.group(1))]) + "\\)", rendered)


def stable_id(*parts: str) -> int:
    """An id from names, the same on every run (Anki wants 31 to 63 bit positive integers)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return (1 << 40) + int.from_bytes(digest[:5], "big")


def media_name(card: Card) -> str:
    return f"trapbot-{card.id}.png"


#: A plot source: the card's plot PNG and its caption, or None when it has none.
PlotSource = Callable[[Card], "tuple[bytes, str] | None"]


def note_for(card: Card, deck_title: str, plot: tuple[bytes, str] | None) -> Any:
    import genanki

    points = "".join(
        f'<li class="{"core" if point.core else "extra"}">{html.escape(" ".join(point.text.split()))}</li>'
        for point in card.key_points
    )
    source = ", ".join(part for part in (card.source.role, card.source.company, card.source.date) if part)
    fields = [
        card.id,
        markdown_html(card.question),
        markdown_html(card.trap),
        f"<ul>{points}</ul>",
        markdown_html(card.explanation),
        f'<img src="{media_name(card)}">' if plot else "",
        html.escape(plot[1]) if plot else "",
        html.escape(f"{deck_title} · {source}"),
    ]
    return genanki.Note(model=note_model(), fields=fields, guid=genanki.guid_for("trapbot", card.id), tags=list(card.tags))


def build_package(
    deck: Deck, names: Sequence[str] | None, plots: PlotSource, media_dir: Path,
    progress: Callable[[str], None] = lambda line: None,
) -> Any:
    """The package of the named decks (all for None); plot PNGs are written to ``media_dir``."""
    import genanki

    anki_decks, media = [], []
    for name in names or deck.names:
        info = deck.info(name)
        anki_deck = genanki.Deck(stable_id("trapbot deck", name), f"trapbot::{info.title}", description=info.description)
        cards = deck.in_decks([name])
        for number, card in enumerate(cards, 1):
            progress(f"[{name} {number}/{len(cards)}] {card.id}")
            plot = plots(card)
            if plot is not None:
                path = media_dir / media_name(card)
                path.write_bytes(plot[0])
                media.append(str(path))
            anki_deck.add_note(note_for(card, info.title, plot))
        anki_decks.append(anki_deck)
    return genanki.Package(anki_decks, media_files=media)


def deck_plots(deck: Deck, *, render: bool, cache_dir: str | None) -> PlotSource:
    """Plots as the bot shows them: a card's own picture, else its simulation's plot from the
    cache (computed when ``render``; a simulation that fails or is unknown gives none)."""
    service = None

    def plot(card: Card) -> tuple[bytes, str] | None:
        nonlocal service
        image = deck.image_path(card.id)
        if image is not None:
            return image.read_bytes(), card.caption or ""
        if card.sim is None:
            return None
        try:
            from sims import cache, registry
        except ImportError:
            return None
        try:
            caption = registry.caption(card.sim, card.id)
            found = cache.lookup(card.sim, None, cache_dir)
            if found is None and render:
                from sims.service import SimService

                service = service or SimService(cache_dir=cache_dir, executor="thread")
                found = asyncio.run(service.plot_for(card.sim, wait_seconds=600))
        except KeyError:
            return None
        return (found.png(), caption) if found is not None else None

    return plot


def register(subparsers: Any) -> argparse.ArgumentParser:
    export = subparsers.add_parser("export", help="export the decks to another tool")
    export.set_defaults(func=lambda args: (export.print_help(sys.stderr), 2)[1])
    formats = export.add_subparsers(dest="export_format", metavar="FORMAT")
    anki = formats.add_parser("anki", help="an Anki package (.apkg): one Anki deck per trapbot deck")
    anki.add_argument("--deck", action="append", metavar="NAME", help="a deck to export (repeatable; default: all)")
    anki.add_argument("--out", type=Path, required=True, metavar="FILE.apkg", help="the package to write")
    anki.add_argument("--plots", choices=("render", "cached", "none"), default="render",
                      help="simulation plots: compute missing ones (default), only cached ones, or none")
    anki.set_defaults(func=cmd_anki)
    return export


def cmd_anki(args: argparse.Namespace) -> int:
    from bot.config import get_settings

    settings = get_settings()
    deck = load_decks(settings.deck_dirs)
    for problem in deck.problems:
        print(f"left out: {problem}", file=sys.stderr)
    unknown = [name for name in args.deck or [] if name not in deck.names]
    if unknown:
        print(f"no deck {unknown[0]!r}; the decks are {', '.join(deck.names)}", file=sys.stderr)
        return 2
    if args.plots == "none":
        plots: PlotSource = lambda card: None
    else:
        plots = deck_plots(deck, render=args.plots == "render", cache_dir=settings.trapbot_sim_cache_dir)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="trapbot-anki-") as media_dir:
        package = build_package(deck, args.deck, plots, Path(media_dir), progress)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        package.write_to_file(str(args.out))
    notes = sum(len(d.notes) for d in package.decks)
    print(f"wrote {args.out}: {notes} notes in {len(package.decks)} Anki deck{'s' * (len(package.decks) != 1)}, "
          f"{len(package.media_files)} plots")
    return 0
