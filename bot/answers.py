"""What the engine takes as an answer: cleaned text with something in it to read.

An answer with no letter or digit (invisible characters, combining accents alone, emoji
alone) is refused before anything is stored, like an empty one; "I don't know" is an
honest answer, stored and graded 0 without a judge.
"""

from __future__ import annotations

import re
import unicodedata

#: Longest answer graded; Discord's modal allows 4,000 characters, a thorough answer fits in 8,000.
MAX_ANSWER_CHARS = 8000
#: Fewest letters or digits an answer needs (a two-letter answer such as "KL" still counts).
MIN_ANSWER_CHARS = 2

EMPTY_ANSWER = (
    "That answer is empty: nothing was stored. Write what you would say in the interview, "
    'or send "I don\'t know" to see the mechanism.'
)

_KEEP_FORMAT = {"\u200c", "\u200d"}  # joiners shape emoji and some scripts


def clean_answer(text: str) -> str:
    """NFC text without control, private-use or invisible format characters, trimmed."""
    text = unicodedata.normalize("NFC", text)
    return "".join(
        ch
        for ch in text
        if ch in "\n\t"
        or ch in _KEEP_FORMAT
        or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co")
    ).strip()


def readable_chars(text: str) -> int:
    """How many letters and digits ``text`` has: what a judge can read. Joiners, combining
    marks, symbols and emoji carry no answer on their own."""
    return sum(1 for ch in text if unicodedata.category(ch)[0] in "LN")


def answer_problem(answer: str) -> str | None:
    """Why a cleaned answer is refused (nothing stored), or None when it is taken."""
    if len(answer) > MAX_ANSWER_CHARS:
        return (
            f"That answer is {len(answer):,} characters; the limit is {MAX_ANSWER_CHARS:,}. "
            "Shorten it to the mechanism and send it again: nothing was stored."
        )
    if readable_chars(answer) < MIN_ANSWER_CHARS:
        return EMPTY_ANSWER
    return None


_DONT_KNOW = re.compile(
    r"(?:sorry,?\s*)?(?:i\s*)?(?:really\s*)?(?:do\s*not|don'?t|dont)\s*(?:know|remember|recall)"
    r"(?:\s*(?:the\s*answer|this\s*one|sorry))?"
    r"|idk|dunno|no\s*(?:idea|clue)(?:\s*sorry)?|i\s*have\s*no\s*(?:idea|clue)|not\s*sure|pass|i\s*forgot"
    r"|(?:i\s*)?can'?t\s*remember"
)


def is_dont_know(answer: str) -> bool:
    """Whether the whole answer says only that the learner does not know (typographic quotes,
    case and end punctuation aside)."""
    folded = re.sub(r"[\s,;:]+", " ", answer.casefold().replace("\u2019", "'")).strip(" .!?…")
    return bool(_DONT_KNOW.fullmatch(folded))
