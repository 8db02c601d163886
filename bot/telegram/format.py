"""Render the engine's Markdown as Telegram HTML, cut to Telegram's size limits.

``TelegramRenderer`` (on the shared markdown-it-py parser, ``bot.markup``) marks bold, italic
and code with private-use characters; ``$...$`` math becomes Unicode (pylatexenc), lists keep
their bullets and nesting, links show their address after the text (Telegram links it).

Text is then turned into a list of visible characters, each with its style (bold, italic,
code). HTML is produced from that list, so every chunk is balanced by construction: a chunk
opens the tags its first characters need and closes them after its last. Cuts go, in order of
preference, at a paragraph break, a line break, then a space, where none of them lies inside a
formatted span; only a single span longer than the limit is cut inside (its tags are then
closed before the cut and reopened after it), and only a single "word" longer than the limit
is cut between characters. Lengths count UTF-16 code units, as Telegram does, so emoji
count two.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, groupby, repeat
from operator import itemgetter
from typing import TypeAlias

from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import MessageLimit

from bot.markup import MarkdownRenderer
from bot.replies import Button

MAX_MESSAGE = MessageLimit.MAX_TEXT_LENGTH  # 4096
MAX_CAPTION = MessageLimit.CAPTION_LENGTH  # 1024

BOLD, ITALIC, CODE = 1, 2, 4

# Private-use characters stand in for styles between the renderer and the character list;
# input never keeps them.
_BOLD_ON, _BOLD_OFF, _ITALIC_ON, _ITALIC_OFF = "\ue001", "\ue002", "\ue003", "\ue004"
_CODE_ON, _CODE_OFF = "\ue005", "\ue006"
_MARKERS = re.compile("[\ue000-\ue006]")
_MARKER_SPLIT = re.compile("([\ue001-\ue006])")
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


#: One visible character and its style bits (BOLD | ITALIC, or CODE alone). Plain tuples: a
#: long message has tens of thousands of them.
Char: TypeAlias = tuple[str, int]


class TelegramRenderer(MarkdownRenderer):
    """Styles as marker characters that ``styled_chars`` turns into style bits."""

    def bold(self, inner: str) -> str:
        return _BOLD_ON + inner + _BOLD_OFF

    def italic(self, inner: str) -> str:
        return _ITALIC_ON + inner + _ITALIC_OFF

    def code(self, text: str) -> str:
        return _CODE_ON + text + _CODE_OFF

    def code_block(self, text: str) -> str:
        return _CODE_ON + text + _CODE_OFF


def styled_chars(markdown: str) -> list[Char]:
    """The visible characters of ``markdown`` with their styles; paragraphs joined by a blank line."""
    rendered = TelegramRenderer().render(_MARKERS.sub("", markdown))
    chars: list[Char] = []
    bold = italic = code = 0
    for token in _MARKER_SPLIT.split(rendered):
        if token in (_BOLD_ON, _BOLD_OFF):
            bold += 1 if token == _BOLD_ON else -1
        elif token in (_ITALIC_ON, _ITALIC_OFF):
            italic += 1 if token == _ITALIC_ON else -1
        elif token in (_CODE_ON, _CODE_OFF):
            code += 1 if token == _CODE_ON else -1
        elif token:
            # Telegram's code entities may not sit inside bold or italic: code stands alone.
            style = CODE if code else (BOLD if bold else 0) | (ITALIC if italic else 0)
            chars.extend(zip(token, repeat(style)))
    return chars


def _open(style: int) -> str:
    if style & CODE:
        return "<code>"
    return ("<b>" if style & BOLD else "") + ("<i>" if style & ITALIC else "")


def _close(style: int) -> str:
    if style & CODE:
        return "</code>"
    return ("</i>" if style & ITALIC else "") + ("</b>" if style & BOLD else "")


def to_html(chars: Sequence[Char]) -> str:
    """Telegram HTML for a run of styled characters; every tag it opens it closes."""
    out: list[str] = []
    for style, run in groupby(chars, key=itemgetter(1)):
        text = "".join(ch for ch, _ in run).translate(_ESCAPES)
        out.append(f"{_open(style)}{text}{_close(style)}" if style else text)
    return "".join(out)


def utf16_length(text: str) -> int:
    """Length as Telegram counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def split_chars(
    chars: Sequence[Char], limit: int, first_limit: int | None = None
) -> list[list[Char]]:
    """Cut ``chars`` into pieces of at most ``limit`` UTF-16 units (the first at most ``first_limit``).

    Whitespace at a cut is dropped; every other character lands in exactly one piece.
    """
    widths = list(accumulate((2 if ch > "\uffff" else 1 for ch, _ in chars), initial=0))
    pieces: list[list[Char]] = []
    start, total = 0, len(chars)
    while True:
        while start < total and chars[start][0].isspace():
            start += 1
        if start >= total:
            return pieces
        budget = first_limit if (first_limit is not None and not pieces) else limit
        end = bisect_right(widths, widths[start] + budget) - 1  # chars[start:end] fits
        if end >= total:
            piece = list(chars[start:total])
            cut = total
        else:
            cut = _choose_cut(chars, start, end, budget)
            piece = list(chars[start:cut])
        while piece and piece[-1][0].isspace():
            piece.pop()
        if piece:
            pieces.append(piece)
        start = cut


def _choose_cut(chars: Sequence[Char], start: int, end: int, budget: int) -> int:
    """Where to end a piece that must stop at or before ``end``: the cleanest boundary there is."""

    def paragraph(i: int) -> bool:
        return chars[i] == ("\n", 0) and i > start and chars[i - 1][0] == "\n"

    def line(i: int) -> bool:
        return chars[i] == ("\n", 0)

    def word(i: int) -> bool:
        return chars[i][0].isspace() and not chars[i][1]

    def inside_span(i: int) -> bool:
        return chars[i][0].isspace()

    # Prefer a boundary that leaves the piece at least a quarter full, then accept any.
    for floor in (start + max(1, budget // 4), start + 1):
        for boundary in (paragraph, line, word, inside_span):
            for i in range(end, floor - 1, -1):
                if boundary(i):
                    return i - 1 if boundary is paragraph else i
    # One unbroken run longer than the limit: cut between characters, never inside an
    # emoji sequence or before a combining mark.
    cut = end
    while cut > start + 1 and (_joins_previous(chars[cut][0]) or chars[cut - 1][0] == "\u200d"):
        cut -= 1
    return cut


def _joins_previous(ch: str) -> bool:
    return (
        ch in ("\u200d", "\ufe0f", "\ufe0e")
        or unicodedata.category(ch) in ("Mn", "Me", "Mc")
        or ("\U0001f3fb" <= ch <= "\U0001f3ff")
    )


def render(markdown: str, limit: int = MAX_MESSAGE) -> list[str]:
    """The message as Telegram HTML chunks, each within ``limit`` visible UTF-16 units."""
    return [to_html(piece) for piece in split_chars(styled_chars(markdown), limit)]


def render_caption(markdown: str, limit: int = MAX_CAPTION) -> tuple[str, list[str]]:
    """A photo caption within ``limit``, and the overflow as follow-up message chunks."""
    pieces = split_chars(styled_chars(markdown), MAX_MESSAGE, first_limit=limit)
    if not pieces:
        return "", []
    return to_html(pieces[0]), [to_html(piece) for piece in pieces[1:]]


def plot_caption(title: str, caption: str) -> str:
    """The Markdown caption of a simulation's plot: its title in bold, then what to look at."""
    return f"**{title}**\n{caption}" if title else caption


def inline_keyboard(buttons: Sequence[Sequence[Button]]) -> InlineKeyboardMarkup | None:
    """The Reply's buttons as an inline keyboard whose callback data is the button's data."""
    rows = [
        [InlineKeyboardButton(b.label, callback_data=b.data) for b in row] for row in buttons if row
    ]
    return InlineKeyboardMarkup(rows) if rows else None
