"""Does a text answer this card's question at all? Cheap checks the offline judge makes before
and after its reading (issue 37, and issue 42's non-answers).

- ``restates_question``: a sentence that copies the question is no evidence.
- ``is_term_list``: a bare list of terms ("covariate shift, DAgger, exposure bias") states
  nothing, however many of the key's words it has.
- ``denial_frame``: "It is not true that ..." at the start denies the claim that follows.
- ``TopicIndex``: how much nearer an answer's words are to this card than to any other card
  of the deck (TF-IDF over each card's question, key, accepted phrasings and reference
  answers; scikit-learn's vectoriser, our stemmer). An expert answer to a neighbouring
  question is nearer its own card, so it cannot pass here.
"""

from __future__ import annotations

import re
import threading
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from grader.textnorm import STOPWORDS, fold, stem, words

if TYPE_CHECKING:
    from cards.schema import Card

#: Below this topic margin (this card's TF-IDF cosine minus the best other card's) an answer
#: reads as one to another question and cannot pass. Chosen on the fitting answers
#: (answers.jsonl, training.jsonl, which the card documents do not contain): just below the
#: lowest own-card margin of an answer that passes (-0.106, a math answer), so no own answer
#: there loses its pass; see ``python -m grader.calibration.offline_eval cross-card``.
OFF_TOPIC_MARGIN = -0.11

_STOP = frozenset(
    """a an the and or but if then than so as of in on at to for from by with without into
    over under about after before between through is are was were be been being do does did
    have has had will would shall should can could may might must it its this that these those
    there here they them their we our us you your i me my what which who when where why how
    all any both each more most other some such only own same too very just also not no""".split()  # noqa: SIM905 - a word list reads better as text
)
_WORD = re.compile(r"[a-z0-9]+")


def content_stems(text: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(fold(text)) if w not in _STOP]


def stem_pairs(text: str) -> set[tuple[str, str]]:
    stems = content_stems(text)
    return set(pairwise(stems))


def restates_question(sentence: str, question_pairs: set[tuple[str, str]]) -> bool:
    """Whether ``sentence`` copies the question: at least four pairs of adjacent content stems,
    80% of them the question's. A short answer in the question's words ("Monte Carlo
    survives") is an answer, not a copy."""
    pairs = stem_pairs(sentence)
    return len(pairs) >= 4 and sum(pair in question_pairs for pair in pairs) >= 0.8 * len(pairs)


_ITEM = re.compile(r"[,;\n|]|\s[-*•]\s|^\s*[-*•]\s")
#: Symbols that relate terms: a line with one states something ("KL -> 0", "J = ...").
_RELATION = re.compile(r"[=<>~∝→⇒←↑↓≈≤≥]|->|=>")


def is_term_list(text: str) -> bool:
    """At least three items (comma, semicolon, line or bullet separated), none longer than four
    words, almost no function words and no relation symbol: a list, not a claim."""
    items = [item.strip(" \t.-*•") for item in _ITEM.split(text)]
    items = [item for item in items if item]
    if len(items) < 3 or _RELATION.search(text):
        return False
    tokens = words(text)
    if not tokens or max(len(item.split()) for item in items) > 4:
        return False
    return sum(token in STOPWORDS for token in tokens) / len(tokens) <= 0.3


_DENIAL_WORD = r"(?:not|no|never|nobody|false|untrue|wrong|incorrect|myth|deny|disagree|mistake|mistaken|nonsense|\w+n't)"
#: What may stand between the denial and its "that": "not (the case|true|correct) that", "no
#: (evidence|one has ever shown) that", "wrong to (say|claim) that". Not any noun: "it is not
#: the data that matters" is a cleft sentence, not a denial of what follows.
_FRAME_FILLER = (
    r"(?:the|a|an|case|true|correct|right|accurate|so|fact|evidence|proof|reason|one|has|have|had|ever|been"
    r"|shown|proven|proved|established|demonstrated|to|say|claim|believe|think|suggest|accept|agree|should"
    r"|would|could|can|i|we|really|at|all|is|it|that's)"
)
_DENIAL_FRAME = re.compile(
    rf"^\W*(?:[\w']+\s+){{0,6}}?{_DENIAL_WORD}\s+(?:{_FRAME_FILLER}\s+){{0,5}}?that\s+",
    re.IGNORECASE,
)


def denial_frame(answer: str) -> int:
    """The length of a frame that denies what follows it at the start of ``answer`` ("It is
    not true that ", "I don't think that "), 0 when there is none."""
    match = _DENIAL_FRAME.match(answer)
    return match.end() if match else 0


def card_document(card: Card) -> str:
    parts = [card.title, card.question, card.trap]
    for point in card.key_points:
        parts += [point.label, point.text, *point.accepts, *point.opposites]
    for misconception in card.misconceptions:
        parts.append(misconception.text)
    parts += [reference.text for reference in card.reference_answers]
    return " ".join(parts)


def _analyzer(text: str) -> list[str]:
    stems = content_stems(text)
    return stems + [f"{a} {b}" for a, b in pairwise(stems)]


class TopicIndex:
    """TF-IDF vectors of the deck's cards (plus the card being graded when it is not in it)."""

    def __init__(self, cards: list[Card]):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.ids = [card.id for card in cards]
        self.vectoriser = TfidfVectorizer(analyzer=_analyzer, sublinear_tf=True)
        self.documents = self.vectoriser.fit_transform([card_document(card) for card in cards])

    def similarities(self, text: str) -> np.ndarray:
        return (self.documents @ self.vectoriser.transform([text]).T).toarray().ravel()

    def margin(self, card_id: str, text: str) -> float:
        """This card's cosine minus the best other card's (positive: nearest this card)."""
        sims = self.similarities(text)
        own = self.ids.index(card_id)
        others = np.delete(sims, own)
        return float(sims[own] - (others.max() if len(others) else 0.0))


_TOPICS: dict[tuple[str, str], TopicIndex] = {}
_TOPIC_LOCK = threading.Lock()


def topic_index(card: Card) -> TopicIndex:
    """The deck's topic index, or for a card that is not the deck's own (another version, a
    test card) the deck's with that card in its place; built once per card version."""
    from cards.deck import default_deck

    deck = default_deck()
    own = card.id in deck and deck.get(card.id).model_dump() == card.model_dump()
    key = ("deck", "") if own else (card.id, card.version or card.model_dump_json())
    with _TOPIC_LOCK:
        found = _TOPICS.get(key)
        if found is None:
            cards = list(deck) if own else [other for other in deck if other.id != card.id] + [card]
            found = _TOPICS[key] = TopicIndex(cards)
    return found
