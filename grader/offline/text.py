"""Text as the offline judge reads it: sentences and clauses with their offsets, negation and
its scope, stemmed content words, claims (not lists of terms), and claims only reported.

No model here: plain regular expressions and sets, so it is cheap to test and to read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from grader.textnorm import STOPWORDS, fold, stem, words
from grader.textnorm import claim_word_count as word_count
from grader.textnorm import tidy_quotes as _tidy

__all__ = ["STOPWORDS", "stem", "word_count", "words"]

_ABBREVIATIONS = {
    "e.g",
    "i.e",
    "al",
    "etc",
    "vs",
    "cf",
    "approx",
    "fig",
    "eq",
    "resp",
    "dr",
    "mr",
    "ms",
}
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*(?:[-*•]|\d+[.)])?\s*")
_CLAUSE_BREAK = re.compile(
    r"\s*;\s*|:\s+|\s+[—–]\s+|\s+-\s+|,\s+(?=(?:but|so|which|whereas|while|although|though|yet)\b)"
    r"|\s+(?=(?:because|whereas|although)\b)|\s+(?=but\b)",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|neither|nor|cannot)\b|n't\b|\bfail(?:s|ed)? to\b",
    re.IGNORECASE,
)
#: Phrases with a negation word that do not negate the claim around them.
_NOT_NEGATING = re.compile(
    r"\bnot only\b|\bor not\b|\bno matter\b|\bno doubt\b|\bnothing but\b|\bnot least\b"
    r"|\bnothing (?:stops|prevents|keeps|holds)\b|\bno free lunch\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Span:
    """A piece of a text with its offsets, so quoting it is verbatim."""

    start: int
    end: int
    text: str


def _cut(text: str, start: int, end: int) -> Span | None:
    piece = text[start:end]
    stripped = piece.strip(" \t\r\n-*•,.")
    if not stripped:
        return None
    offset = start + piece.index(stripped)
    return Span(offset, offset + len(stripped), stripped)


def _split(
    text: str,
    start: int,
    end: int,
    pattern: re.Pattern[str],
    keep: Callable[[str, int, re.Match[str]], bool],
) -> list[Span]:
    spans: list[Span] = []
    cursor = start
    for match in pattern.finditer(text, start, end):
        if match.start() <= cursor or not keep(text, cursor, match):
            continue
        span = _cut(text, cursor, match.start())
        if span is not None:
            spans.append(span)
        cursor = match.end()
    tail = _cut(text, cursor, end)
    if tail is not None:
        spans.append(tail)
    return spans


def _ends_sentence(text: str, cursor: int, match: re.Match[str]) -> bool:
    before = text[cursor : match.start()].rstrip()
    if not before.endswith("."):
        return True
    last = re.search(r"([A-Za-z.]+)\.$", before)
    return not (last and last.group(1).lower() in _ABBREVIATIONS)


def sentences(text: str) -> list[Span]:
    """The sentences and list items of ``text``."""
    return _split(text, 0, len(text), _SENTENCE_BREAK, _ends_sentence)


def clauses(text: str, sentence: Span, *, min_words: int = 4) -> list[Span]:
    """The clauses of one sentence; a clause too short to stand alone joins its neighbour."""
    pieces = _split(text, sentence.start, sentence.end, _CLAUSE_BREAK, lambda *_: True)
    merged: list[Span] = []
    for piece in pieces:
        if merged and word_count(merged[-1].text) < min_words:
            previous = merged.pop()
            piece = Span(previous.start, piece.end, text[previous.start : piece.end])
        merged.append(piece)
    if len(merged) > 1 and word_count(merged[-1].text) < min_words:
        last, previous = merged.pop(), merged.pop()
        merged.append(Span(previous.start, last.end, text[previous.start : last.end]))
    return merged


def polarity(text: str) -> int:
    """0 for an affirmed text, 1 for a negated one: the parity of its negation cues."""
    cleaned = _NOT_NEGATING.sub(" ", _tidy(text))
    return len(_NEGATION.findall(cleaned)) % 2


_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[,;:.!?()]", re.IGNORECASE)
_SCOPE_END = frozenset(
    {
        ",",
        ";",
        ":",
        ".",
        "!",
        "?",
        "(",
        ")",
        "but",
        "because",
        "and",
        "while",
        "which",
        "whereas",
        "although",
        "though",
        "so",
        "since",
        "unless",
        "until",
        "before",
        "after",
        "if",
        "when",
        "instead",
    }
)


@dataclass(frozen=True)
class Lexicon:
    """A text's content words, and those inside the scope of a negation."""

    content: frozenset[str]
    negated: frozenset[str]
    polarity: int


def lexicon(text: str) -> Lexicon:
    """Content words (stemmed) and which of them a negation governs.

    A negation's scope runs from the cue to the end of its clause (punctuation or a
    conjunction), so in "regions where the reward model was never trained" only "trained"
    is negated, while in "the KL term does not keep the policy close" the whole predicate is.
    """
    cleaned = _NOT_NEGATING.sub(" ", _tidy(text))
    content: set[str] = set()
    negated: set[str] = set()
    for lower, in_scope in _in_scope(token.lower() for token in _TOKEN.findall(cleaned)):
        if lower in STOPWORDS or len(lower) < 2:
            continue
        word = stem(lower)
        content.add(word)
        if in_scope:
            negated ^= {word}
    return Lexicon(frozenset(content), frozenset(negated), polarity(text))


def _in_scope(tokens: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """Each token that is neither a negation cue nor a scope end, and whether a negation
    governs it: a cue opens a scope, punctuation or a conjunction closes it."""
    in_scope = False
    for token in tokens:
        if _NEGATION.fullmatch(token) or token.endswith("n't") or token in ("fail", "fails", "failed"):
            in_scope = True
        elif token in _SCOPE_END:
            in_scope = False
        else:
            yield token, in_scope


_PHRASE_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|[0-9]+|[,;:.!?()]")


@dataclass(frozen=True)
class Tokens:
    """A text's content stems in order, each with whether a negation governs it."""

    stems: tuple[str, ...]
    negated: tuple[bool, ...]


def scoped_tokens(text: str) -> Tokens:
    """Stems of ``fold(text)`` without stopwords, letters and digits split ("T^2" and "T²"
    both give t, 2), each flagged when it lies in a negation's scope (as in ``lexicon``)."""
    cleaned = _NOT_NEGATING.sub(" ", fold(text))
    stems: list[str] = []
    negated: list[bool] = []
    for token, in_scope in _in_scope(_PHRASE_TOKEN.findall(cleaned)):
        if token not in STOPWORDS:
            stems.append(stem(token))
            negated.append(in_scope)
    return Tokens(tuple(stems), tuple(negated))


def phrase_hit(unit: Tokens, phrase: Tokens) -> int:
    """+1 when ``phrase`` occurs in ``unit`` (its stems in a row) with the same sign, -1 when
    it occurs under a negation the phrase does not have, 0 when it does not occur."""
    n = len(phrase.stems)
    if not n:
        return 0
    found = 0
    for start in range(len(unit.stems) - n + 1):
        if unit.stems[start : start + n] == phrase.stems:
            if unit.negated[start] == phrase.negated[0]:
                return 1
            found = -1
    return found


def same_polarity(unit: Lexicon, phrase: Lexicon) -> bool:
    """Whether ``unit`` states what ``phrase`` states with the same sign, judged on the words
    they share: when a third or more of them are negated on one side only, the signs differ.
    Without shared words, fall back to the parity of the negation cues."""
    shared = unit.content & phrase.content
    if not shared:
        return unit.polarity == phrase.polarity
    flipped = (unit.negated ^ phrase.negated) & shared
    return not flipped or len(flipped) * 3 < len(shared)


def is_claim(text: str) -> bool:
    """Whether ``text`` reads as a statement rather than a list of terms.

    A claim has at least four words, a fair share of function words (a keyword list has
    almost none), and is not a run of comma-separated fragments of one or two words.
    """
    tokens = words(text)
    if len(tokens) < 4:
        return False
    if sum(token in STOPWORDS for token in tokens) / len(tokens) < 0.2:
        return False
    items = [item for item in re.split(r"[,/|+]|\band\b|\bor\b", text) if item.strip()]
    return not (len(items) >= 4 and len(tokens) / len(items) < 3.0)


#: The words a direct question opens with (after an "and", "so" or "but"); negative ones
#: ("isn't", "doesn't") are left out on purpose.
_ASKING = frozenset(
    (
        *("what", "why", "how", "when", "where", "which", "who", "whom", "whose"),
        *("is", "are", "was", "were", "do", "does", "did", "has", "have", "had"),
        *("can", "could", "should", "would", "will", "shall", "may", "might", "must"),
    )
)


def asks(text: str) -> bool:
    """Whether ``text`` is a direct question: it ends in a question mark and opens with a
    question word or an auxiliary ("Is it just overfitting?", "So why does it fail?")."""
    found = [word for word in words(text) if word[0].isalpha()]
    while found and found[0] in ("and", "so", "but", "then", "now", "ok", "okay"):
        found = found[1:]
    return text.rstrip().endswith("?") and bool(found) and found[0] in _ASKING
