"""One normal form for answer text, used wherever text is compared or scanned.

``fold`` is what quote checks and injection patterns see: NFKC (full-width letters become
ASCII), invisible characters removed (zero-width spaces and joiners, bidi controls, soft
hyphens), letters that look Latin folded to Latin (Cyrillic "а", Greek "ο"), casefolded,
quote styles and whitespace made uniform. An answer cannot hide a phrase from a pattern, or a
quote from the evidence check, by how it spells it.
"""

from __future__ import annotations

import re
import unicodedata

#: Cyrillic and Greek letters that render like Latin ones, after casefolding.
CONFUSABLES = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
        "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i",
        "ј": "j", "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g",
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j",
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
    }
)  # fmt: skip


def strip_invisible(text: str) -> str:
    """``text`` without format characters (category Cf: zero-width, bidi, soft hyphen)."""
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def fold(text: str) -> str:
    """The comparison form of ``text`` (see the module docstring)."""
    text = unicodedata.normalize("NFKC", strip_invisible(text)).casefold()
    text = text.translate(CONFUSABLES)
    return re.sub(r"\s+", " ", text).strip()


_EDGE = re.compile(r"^[\s.,;:!?\"'()\[\]…*_-]+|[\s.,;:!?\"'()\[\]…*_-]+$")
_WORDS = re.compile(r"\w+")


def fold_phrase(text: str) -> str:
    """``fold`` without the punctuation a quote tends to start or end with."""
    return _EDGE.sub("", fold(text))


def word_count(text: str) -> int:
    return len(_WORDS.findall(text))


def occurs_on_word_boundaries(needle: str, haystack: str) -> bool:
    """Whether folded ``needle`` occurs in folded ``haystack``, not inside a longer word."""
    needle, haystack = fold_phrase(needle), fold(haystack)
    if not needle:
        return False
    pattern = (r"(?<!\w)" if needle[0].isalnum() or needle[0] == "_" else "") + re.escape(needle)
    pattern += r"(?!\w)" if needle[-1].isalnum() or needle[-1] == "_" else ""
    return re.search(pattern, haystack) is not None
