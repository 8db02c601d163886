"""The engine's Markdown, parsed by markdown-it-py, and its ``$...$`` math made Unicode.

One parser (CommonMark with the dollar-math plugin) serves every adapter; each adapter has its
own ``MarkdownRenderer`` subclass that says how bold, italics, code, math and links look there
(``TerminalRenderer`` here, Telegram's and Discord's in their packages). Lists keep their
nesting; a card's prose keeps its line breaks unless the renderer unwraps them.

Math goes through pylatexenc. Our own code does only what pylatexenc leaves as typed: ``^`` and
``_`` groups (turned into Unicode super- and subscripts where every character has one, else
kept readable as ``e^(−n/d)``) and a few macros it does not know (``\\tfrac``, ``\\|``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pylatexenc import latexwalker, macrospec
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec
from pylatexenc.latex2text import get_default_latex_context_db as text_context_db

# ----- LaTeX to Unicode ----------------------------------------------------------------------

_SUPERSCRIPT = dict(
    zip(
        "0123456789+-=()nijkhlmoprstuvwxyzabcdefgABDEGHIJKLMNOPRTUVW*'",
        "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱʲᵏʰˡᵐᵒᵖʳˢᵗᵘᵛʷˣʸᶻᵃᵇᶜᵈᵉᶠᵍᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ*′",
        strict=True,
    )
)
_SUBSCRIPT = dict(
    zip("0123456789+-=()aehijklmnoprstuvxβγρφχ", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ", strict=True)
)
_OPERATOR = re.compile(r"\\(log|exp|ln|max|min|arg|sup|inf)(?![A-Za-z])\s*")
_RELATIONS = ("propto", "sim", "approx", "in", "le", "ge", "leq", "geq", "ll", "gg", "to", "leftarrow",
              "rightarrow", "succ", "prec", "neq", "equiv")
_PLACEHOLDER = re.compile("[\ue100-\ue1ff]")
_FRACTIONS = {("1", "2"): "½", ("1", "3"): "⅓", ("2", "3"): "⅔", ("1", "4"): "¼", ("3", "4"): "¾"}


def _fraction(node: Any, l2tobj: LatexNodes2Text) -> str:
    numerator, denominator = (
        l2tobj.nodelist_to_text([arg]).strip() if arg is not None else ""
        for arg in node.nodeargd.argnlist[-2:]
    )
    if (numerator, denominator) in _FRACTIONS:
        return _FRACTIONS[numerator, denominator]
    return f"{_grouped(numerator)}/{_grouped(denominator)}"


def _grouped(text: str) -> str:
    """Parentheses around a term that would read wrongly beside an operator."""
    return f"({text})" if re.search(r"[\s+\-−/·=]", text) else text


def _symbol(name: str) -> str:
    """What pylatexenc prints for a relation macro (it drops the space after it)."""
    return LatexNodes2Text(math_mode="text").latex_to_text("\\" + name).strip()


@lru_cache(maxsize=1)
def _converter() -> LatexNodes2Text:
    walker_db = latexwalker.get_default_latex_context_db()
    walker_db.add_context_category(
        "trapbot",
        prepend=True,
        macros=[macrospec.std_macro("tfrac", False, 2), macrospec.std_macro("dfrac", False, 2)],
    )
    text_db = text_context_db()
    text_db.add_context_category(
        "trapbot",
        prepend=True,
        macros=[
            MacroTextSpec("frac", simplify_repl=_fraction),
            MacroTextSpec("tfrac", simplify_repl=_fraction),
            MacroTextSpec("dfrac", simplify_repl=_fraction),
            MacroTextSpec("mid", "|"),
            MacroTextSpec("top", "T"),
            *(MacroTextSpec(name, f" {_symbol(name)} ") for name in _RELATIONS),
            MacroTextSpec(",", " "),
            MacroTextSpec("big", ""),
            MacroTextSpec("Big", ""),
        ],
    )
    converter = LatexNodes2Text(
        latex_context=text_db, math_mode="text", strict_latex_spaces="based-on-source"
    )
    converter._walker_context = walker_db  # read by latex_to_unicode below
    return converter


def _operator_word(match: re.Match[str]) -> str:
    """``\\log`` as the word log, spaced from a neighbouring symbol (``b\\log\\pi``: b log π)."""
    text, start, end = match.string, match.start(), match.end()
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    space_before = " " if before.isalnum() or before == ")" else ""
    return space_before + match.group(1) + (" " if after.isalnum() or after == "\\" else "")


def _script_group(source: str, start: int) -> tuple[str, int]:
    """The group after a ``^`` or ``_`` at ``start - 1``: its LaTeX and where it ends."""
    if start >= len(source):
        return "", start
    if source[start] == "{":
        depth = 0
        for index in range(start, len(source)):
            depth += {"{": 1, "}": -1}.get(source[index], 0)
            if depth == 0:
                return source[start + 1 : index], index + 1
        return source[start + 1 :], len(source)
    if source[start] == "\\":
        name = re.match(r"\\([A-Za-z]+|.)", source[start:])
        assert name is not None
        return name.group(0), start + len(name.group(0))
    return source[start], start + 1


def _script(marker: str, text: str) -> str:
    table = _SUPERSCRIPT if marker == "^" else _SUBSCRIPT
    text = text.strip()
    if text and all(ch in table for ch in text):
        return "".join(table[ch] for ch in text)
    if len(text) <= 1 or text.replace(" ", "").isalpha():
        return marker + text
    return f"{marker}({text})"


@lru_cache(maxsize=4096)  # a card's formulas come back in every verdict and explanation
def latex_to_unicode(latex: str) -> str:
    """Inline LaTeX as readable Unicode: ``\\mathbb{E}\\|a-\\mu\\|^2`` is ``𝔼‖a-μ‖²``."""
    # ``\|`` as the character itself keeps the spaces written around it (pylatexenc drops them).
    source = _OPERATOR.sub(_operator_word, latex.replace("\n", " ").replace("\\|", "‖"))
    scripts: list[str] = []
    out: list[str] = []
    index = 0
    while index < len(source):
        ch = source[index]
        if ch in "^_" and (index == 0 or source[index - 1] != "\\"):
            group, index = _script_group(source, index + 1)
            scripts.append(_script(ch, latex_to_unicode(group)))
            out.append(chr(0xE100 + len(scripts) - 1))
            continue
        out.append(ch)
        index += 1
    converter = _converter()
    walker = latexwalker.LatexWalker(
        "".join(out), latex_context=converter._walker_context, tolerant_parsing=True
    )
    nodes, _, _ = walker.get_latex_nodes()
    text = converter.nodelist_to_text(nodes)
    text = _PLACEHOLDER.sub(lambda m: scripts[ord(m.group(0)) - 0xE100], text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


# ----- Markdown ------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def markdown_parser() -> MarkdownIt:
    """CommonMark without raw HTML, indented code or setext headings (card prose is indented
    and wrapped freely), with ``$...$`` math; ``$5`` and ``$50k`` stay money."""
    parser = MarkdownIt("commonmark", {"html": False})
    parser.disable(["code", "lheading", "html_block", "html_inline"])
    return parser.use(dollarmath_plugin, allow_space=False, allow_digits=False, double_inline=True)


class MarkdownRenderer:
    """Walks markdown-it's tokens; subclasses say how each inline style looks.

    ``unwrap`` joins the soft line breaks of a paragraph (for surfaces that wrap themselves).
    """

    bullet = "• "
    quote_mark = "┃ "
    paragraph_gap = "\n\n"

    def __init__(self, *, unwrap: bool = False):
        self.unwrap = unwrap

    # inline styles: override in a subclass
    def text(self, text: str) -> str:
        return text

    def bold(self, inner: str) -> str:
        return inner

    def italic(self, inner: str) -> str:
        return inner

    def code(self, text: str) -> str:
        return text

    def math(self, latex: str) -> str:
        return latex_to_unicode(latex)

    def link(self, inner: str, href: str) -> str:
        return inner if not href or href == inner else f"{inner} ({href})"

    def code_block(self, text: str) -> str:
        return text

    def heading(self, inner: str) -> str:
        return self.bold(inner)

    # the walk
    def render(self, markdown: str) -> str:
        tokens = markdown_parser().parse(markdown.replace("\r\n", "\n").replace("\r", "\n"))
        blocks: list[str] = []
        lists: list[list[Any]] = []  # per open list: [ordered, next number, item count]
        pending_prefix: str | None = None
        in_heading = False
        quotes = previous_end = 0
        for token in tokens:
            kind = token.type
            if kind in ("bullet_list_open", "ordered_list_open"):
                start = int(token.attrGet("start") or 1) if kind == "ordered_list_open" else 0
                lists.append([kind == "ordered_list_open", start])
            elif kind in ("bullet_list_close", "ordered_list_close"):
                lists.pop()
            elif kind == "list_item_open":
                ordered, number = lists[-1]
                pending_prefix = f"{number}. " if ordered else self.bullet
                lists[-1][1] += 1
            elif kind in ("inline", "fence", "math_block", "hr"):
                if kind == "inline":
                    body = self.inline(token.children or [])
                    if in_heading:
                        body = self.heading(body)
                elif kind == "fence":
                    body = self.code_block(token.content.rstrip("\n"))
                elif kind == "math_block":
                    body = self.math(token.content)
                else:
                    body = "―" * 8
                indent = self.quote_mark * quotes + "  " * max(len(lists) - 1, 0)
                if pending_prefix is not None:
                    head, rest = indent + pending_prefix, indent + " " * len(pending_prefix)
                    pending_prefix = None
                else:
                    head = rest = indent + (" " * len(self.bullet) if lists else "")
                lines = body.split("\n")
                block = "\n".join([head + lines[0], *(rest + line for line in lines[1:])])
                # A blank line in the source stays one; adjacent lines stay adjacent.
                first_line, last_line = token.map or (previous_end + 1, previous_end + 1)
                gap = "\n" if first_line <= previous_end else self.paragraph_gap
                blocks.append((gap if blocks else "") + block)
                previous_end = last_line
            elif kind in ("blockquote_open", "blockquote_close"):
                quotes += 1 if kind == "blockquote_open" else -1
            elif kind in ("heading_open", "heading_close"):
                in_heading = kind == "heading_open"
        return "".join(blocks).strip("\n")

    def inline(self, children: list[Token]) -> str:
        out: list[str] = []
        stack: list[tuple[str, list[str], str]] = []  # (kind, outer buffer, href)
        for child in children:
            kind = child.type
            if kind == "text":
                out.append(self.text(child.content))
            elif kind == "softbreak":
                out.append(" " if self.unwrap else "\n")
            elif kind == "hardbreak":
                out.append("\n")
            elif kind == "code_inline":
                out.append(self.code(child.content))
            elif kind in ("math_inline", "math_inline_double"):
                out.append(self.math(child.content))
            elif kind in ("strong_open", "em_open", "link_open"):
                stack.append((kind, out, str(child.attrGet("href") or "")))
                out = []
            elif kind in ("strong_close", "em_close", "link_close") and stack:
                opened, outer, href = stack.pop()
                inner = "".join(out)
                if opened == "strong_open":
                    styled = self.bold(inner)
                elif opened == "em_open":
                    styled = self.italic(inner)
                else:
                    styled = self.link(inner, href)
                out = outer
                out.append(styled)
            elif kind == "image":
                out.append(self.text(child.content or ""))
            else:
                out.append(self.text(child.content))
        while stack:  # never happens with markdown-it's balanced output; keep the text anyway
            _, outer, _ = stack.pop()
            outer.extend(out)
            out = outer
        return "".join(out)


class TerminalRenderer(MarkdownRenderer):
    """ANSI bold and italics when ``color``, else the bare text; math in Unicode."""

    def __init__(self, *, color: bool = False, unwrap: bool = False):
        super().__init__(unwrap=unwrap)
        self.color = color

    def _ansi(self, code: str, inner: str) -> str:
        return f"\033[{code}m{inner}\033[0m" if self.color and inner else inner

    def bold(self, inner: str) -> str:
        return self._ansi("1", inner)

    def italic(self, inner: str) -> str:
        return self._ansi("3", inner)

    def code(self, text: str) -> str:
        return self._ansi("36", text)

    def code_block(self, text: str) -> str:
        return "\n".join(self._ansi("36", line) for line in text.split("\n"))


def to_plain(markdown: str) -> str:
    """The text without Markdown markers, math in Unicode (alerts, titles, labels)."""
    return TerminalRenderer().render(markdown)


def to_terminal(markdown: str, *, color: bool) -> str:
    return TerminalRenderer(color=color).render(markdown)
