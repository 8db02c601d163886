"""One normal form for answer text, used wherever text is compared or scanned.

``fold`` is what quote checks and injection patterns see: NFKC (full-width letters become
ASCII), invisible characters removed (zero-width spaces and joiners, bidi controls, soft
hyphens, variation selectors, blank fillers), accents and other combining marks dropped,
letters that look Latin folded to Latin (Cyrillic "а", Greek "ο", Armenian "օ"),
casefolded, quote styles and whitespace made uniform. An answer cannot hide a phrase from a pattern, or a
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
        "ј": "j", "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ӏ": "l", "ԍ": "g",
        "ɑ": "a", "ı": "i", "ɩ": "i", "ȷ": "j", "ʏ": "y", "օ": "o", "ս": "u", "հ": "h", "ո": "n",
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j",
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
    }
)  # fmt: skip


#: Invisible characters outside category Cf: the combining grapheme joiner, variation
#: selectors, and the Hangul and Braille blanks that render as nothing.
_INVISIBLE = frozenset("\u034f\u115f\u1160\u3164\uffa0\u2800") | frozenset(
    chr(c) for c in [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]
)


def strip_invisible(text: str) -> str:
    """``text`` without format characters (category Cf: zero-width, bidi, soft hyphen) or
    other characters that render as nothing."""
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf" and ch not in _INVISIBLE)


def unhide(text: str) -> str:
    """NFKC ``text`` without invisible characters, case kept (what a base64 scan needs)."""
    return unicodedata.normalize("NFKC", strip_invisible(text))


def fold(text: str, *, keep_lines: bool = False) -> str:
    """The comparison form of ``text`` (see the module docstring). With ``keep_lines`` a run
    of white space that holds a line break becomes one newline instead of one space: the same
    length, so offsets in one form are offsets in the other."""
    if (
        text.isascii()
    ):  # no invisible, compatibility or combining characters to undo (40% of answers)
        text = text.lower()
    else:
        text = _fold_unicode(text)
    if keep_lines:
        return re.sub(r"\s+", lambda m: "\n" if "\n" in m.group() else " ", text).strip()
    return re.sub(r"\s+", " ", text).strip()


def _fold_unicode(text: str) -> str:
    text = unicodedata.normalize("NFD", unhide(text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", text).casefold().translate(CONFUSABLES)


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


# ----- words and stems ---------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?", re.IGNORECASE)
STOPWORDS = frozenset(
    """a an the and or but if then than so as of in on at to for from by with without into onto
    over under about after before between through during is are was were be been being am do
    does did doing have has had having will would shall should can could may might must it
    its this that these those there here they them their we our us you your i me my he she
    his her not no nor never what which who whom whose when where why how all any both each
    few more most other some such only own same too very just also because while until up
    down out off again further once don doesn isn aren wasn weren won wouldn shouldn cannot
    get gets got one it's that's can't don't doesn't isn't won't""".split()  # noqa: SIM905 - a word list reads better as text
)


def tidy_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


def words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(tidy_quotes(text))]


def claim_word_count(text: str) -> int:
    """Words as the offline judge counts them (letters and digits, with an apostrophe suffix)."""
    return len(_WORD.findall(text))


#: Words whose -ical is not the -ic beside it: "critical" is not about the critic.
_NOT_IC = frozenset({"critical", "critically"})


def stem(word: str) -> str:
    """A crude suffix stripper: enough to match "keeps"/"keep", "trained"/"training" and
    "quadratically"/"quadratic"."""
    if word not in _NOT_IC:
        for suffix in ("ically", "ical"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                return word[: -len(suffix)] + "ic"
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
