"""Render the engine's Markdown subset as Telegram HTML, cut to Telegram's size limits.

The subset: ``**bold**``, ``_italic_`` (and ``*italic*``, which card questions use),
`` `code` ``, lines starting with ``- `` as bullets, and ``$...$`` inline math, which is shown as
``<code>`` because Telegram has no math rendering and monospace keeps ``r_\\phi`` readable.

Text is first turned into a list of visible characters, each with its style (bold, italic,
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

from bot.replies import Button

MAX_MESSAGE = MessageLimit.MAX_TEXT_LENGTH  # 4096
MAX_CAPTION = MessageLimit.CAPTION_LENGTH  # 1024

BOLD, ITALIC, CODE = 1, 2, 4

# Private-use characters stand in for markup while the regexes run; input never keeps them.
_SLOT = "\ue000"  # a code or math span, filled in order from a list
_BOLD_ON, _BOLD_OFF, _ITALIC_ON, _ITALIC_OFF = "\ue001", "\ue002", "\ue003", "\ue004"
_MARKERS = re.compile("[\ue000-\ue004]")

_PROTECTED = re.compile(r"`([^`\n]+)`|\$(?=\S)([^$]+?)(?<=\S)\$")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.DOTALL)
_ITALIC_UNDERSCORE = re.compile(r"(?<![\w*])_(?!\s)(.+?)(?<!\s)_(?!\w)", re.DOTALL)
_ITALIC_STAR = re.compile(r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])", re.DOTALL)
_BULLET = re.compile(r"^([ \t]*)- ", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_MARKER_SPLIT = re.compile("([\ue000-\ue004])")


#: One visible character and its style bits (BOLD | ITALIC, or CODE alone). Plain tuples: a
#: long message has tens of thousands of them.
Char: TypeAlias = tuple[str, int]


def styled_chars(markdown: str) -> list[Char]:
    """The visible characters of ``markdown`` with their styles; paragraphs joined by a blank line."""
    text = _MARKERS.sub("", markdown.replace("\r\n", "\n").replace("\r", "\n"))
    paragraphs = [p for p in _PARAGRAPH_BREAK.split(text.strip()) if p.strip()]
    chars: list[Char] = []
    for index, paragraph in enumerate(paragraphs):
        if index:
            chars += [("\n", 0), ("\n", 0)]
        chars += _paragraph_chars(paragraph.rstrip())
    return chars


def _paragraph_chars(paragraph: str) -> list[Char]:
    """Styles within one paragraph, so a stray ``**`` cannot bold the rest of the message."""
    paragraph = _BULLET.sub(lambda m: m.group(1) + "• ", paragraph)
    protected: list[str] = []

    def hold(match: re.Match[str]) -> str:
        protected.append(match.group(1) if match.group(1) is not None else match.group(2))
        return _SLOT

    text = _PROTECTED.sub(hold, paragraph)
    text = _BOLD.sub(lambda m: _BOLD_ON + m.group(1) + _BOLD_OFF, text)
    text = _ITALIC_UNDERSCORE.sub(lambda m: _ITALIC_ON + m.group(1) + _ITALIC_OFF, text)
    text = _ITALIC_STAR.sub(lambda m: _ITALIC_ON + m.group(1) + _ITALIC_OFF, text)
    chars: list[Char] = []
    style = 0
    spans = iter(protected)
    for token in _MARKER_SPLIT.split(text):
        if token == _BOLD_ON:
            style |= BOLD
        elif token == _BOLD_OFF:
            style &= ~BOLD
        elif token == _ITALIC_ON:
            style |= ITALIC
        elif token == _ITALIC_OFF:
            style &= ~ITALIC
        elif token == _SLOT:
            # Telegram's code entities may not sit inside bold or italic: code stands alone.
            chars.extend(zip(next(spans), repeat(CODE)))
        else:
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
