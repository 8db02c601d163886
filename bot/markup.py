"""Render the engine's Markdown subset for plain-text surfaces (the terminal)."""

from __future__ import annotations

import re

_BOLD = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)
_ITALIC = re.compile(r"(?<![\w*])_(?!\s)(.+?)(?<!\s)_(?!\w)", re.DOTALL)
_CODE = re.compile(r"`([^`]+)`")


def to_plain(markdown: str, *, bold: tuple[str, str] = ("", "")) -> str:
    """Drop emphasis markers; ``bold`` wraps bold text (ANSI codes in a terminal)."""
    text = _BOLD.sub(lambda m: f"{bold[0]}{m.group(1)}{bold[1]}", markdown)
    text = _ITALIC.sub(r"\1", text)
    return _CODE.sub(r"\1", text)
