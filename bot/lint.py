"""The deck lint: what the loader finds (``cards.deck``), what needs the grade rule and the
text folding (``grader``), and whether each named simulation exists (``sims``).

It lives on the top floor because it composes the three; the deck itself imports neither.
Every problem names the file, the line and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cards.deck import BUILTIN, DECK_DIR, GENERAL_FIX, Deck, Problem, load_decks, locate
from cards.schema import Card, hint_problems, variant_problems
from grader.scoring import grade_from_labels
from grader.textnorm import fold_phrase, occurs_on_word_boundaries

#: The fewest accepted phrasings (and opposites) a key point, or phrasings a misconception, carries.
MIN_ACCEPTS = 2


def content_problems(card: Card) -> list[str]:
    """What the schema cannot see, as ``field: problem`` lines: labels and phrasings present,
    weights meaningful, reference answers graded as the grade rule grades their labels, probes
    that are questions and give nothing away."""
    found: list[str] = []
    for point in card.key_points:
        where = f"key_points.{point.id}"
        if point.label is None:
            found.append(f"{where}.label: missing (at most 60 characters, shown in the verdict)")
        if len(point.accepts) < MIN_ACCEPTS:
            found.append(f"{where}.accepts: {len(point.accepts)} phrasings; at least {MIN_ACCEPTS}")
        if len(point.opposites) < MIN_ACCEPTS:
            found.append(f"{where}.opposites: {len(point.opposites)} claims; at least {MIN_ACCEPTS}")
        both = {fold_phrase(a) for a in point.accepts} & {fold_phrase(o) for o in point.opposites}
        if both:
            found.append(f"{where}.opposites: also accepted as the point ({min(both)!r})")
        if point.core and point.weight != 1.0:
            found.append(f"{where}.weight: a core point's weight means nothing; leave it at 1")
        if point.probe is not None:
            if not point.probe.rstrip().endswith("?"):
                found.append(f"{where}.probe: must be a question")
            given = [a for a in point.accepts if occurs_on_word_boundaries(fold_phrase(a), point.probe)]
            if given:
                found.append(f"{where}.probe: gives the point away ({given[0]!r})")
    for misconception in card.misconceptions:
        where = f"misconceptions.{misconception.id}"
        if misconception.label is None:
            found.append(f"{where}.label: missing (at most 60 characters)")
        if len(misconception.phrasings) < MIN_ACCEPTS:
            found.append(
                f"{where}.phrasings: {len(misconception.phrasings)} phrasings; at least {MIN_ACCEPTS}"
            )
    found += hint_problems(card) + variant_problems(card)
    for answer in card.reference_answers:
        where = f"reference_answers.{answer.kind}"
        if answer.credits is None:
            found.append(f"{where}.credits: missing (the point ids the answer states)")
            continue
        ruled = grade_from_labels(card, answer.credits, answer.partial, answer.asserts)
        if ruled != answer.grade:
            found.append(f"{where}.grade: {answer.grade}, but the grade rule gives {ruled} for its labels")
    return found


#: Fixes for the content problems, by a phrase of the message.
_CONTENT_FIXES = (
    (".label: missing", "add label: a few words (at most 60 characters) shown beside the mark"),
    ("phrasings; at least", "add short phrasings people really use (2 or more)"),
    ("claims; at least", "add short wrong claims that say the reverse of the point (2 or more)"),
    ("also accepted as the point", "remove the phrase from one of the two lists"),
    ("core point's weight", "remove weight: from the core point"),
    ("must be a question", "end the probe with a question mark"),
    ("gives the point away", "reword it so it leads toward the point without saying it"),
    ("hint: missing", "add hint: one sentence that points toward the point without stating it"),
    ("copies the point's text", "point toward the idea in other words"),
    ("whole sentence", "start with a capital and end with a full stop or question mark"),
    ("but the grade rule gives", "set grade: to what the rule gives, or fix credits/partial/asserts"),
    (".credits: missing", "add credits: [the key point ids the answer states]"),
    ("names the original's", "write the variant's own wording (points: with label, probe or hint) without the original's setting words"),
    ("override it", "add the variant's own label, probe or hint for this point under its points:"),
    ("situation:", "list the words that name the original question's setting (situation: [...]; [] when none)"),
    ("unknown simulation", "name one of the built-in simulations (trapbot sims list), or use image: and caption:"),
)


def _content_fix(message: str) -> str:
    return next((fix for phrase, fix in _CONTENT_FIXES if phrase in message), GENERAL_FIX)


def known_sims() -> set[str]:
    from sims.registry import sim_ids

    return set(sim_ids())


def card_problems(card: Card, path: Path, sims: set[str] | None) -> list[Problem]:
    """The content problems and an unknown simulation of one loaded card, with lines and fixes."""
    lines = content_problems(card)
    if sims is not None and card.sim is not None and card.sim not in sims:
        lines.append(f"sim: unknown simulation {card.sim!r}")
    found = []
    for line in lines:
        field, _, message = line.partition(": ")
        found.append(Problem(path, field, message, locate(path, field), _content_fix(line)))
    return found


def lint(
    folders: Sequence[Path] = (), *, builtin: Path | None = DECK_DIR, sims: set[str] | None | str = "known"
) -> list[Problem]:
    """Every problem in the built-in deck and ``folders``: the loader's (broken files, ids that
    clash across decks, missing images) and each loaded card's content; empty when clean.
    ``sims``: the simulations a card may name ("known": the registry's; None: not checked)."""
    deck = load_decks(folders, builtin=builtin)
    return deck_problems(deck, sims=known_sims() if sims == "known" else sims)  # type: ignore[arg-type]


def deck_problems(deck: Deck, *, sims: set[str] | None = None) -> list[Problem]:
    """``lint`` for a deck already loaded."""
    found = list(deck.problems)
    for card in deck:
        path = deck.path_of(card.id)
        if path is not None:
            found += card_problems(card, path, sims)
    return found


def startup_problems(deck: Deck) -> list[Problem]:
    """What the bot says at start about the extra decks: files left out and unknown
    simulations (a card naming one loads; its plot is just missing). The built-in deck is
    checked by the test suite, not at every start."""
    sims = known_sims()
    found = list(deck.problems)
    for card in deck:
        if deck.deck_of(card.id) != BUILTIN and card.sim is not None and card.sim not in sims:
            path = deck.path_of(card.id)
            found.append(Problem(path or Path(card.id), "sim", f"unknown simulation {card.sim!r}",
                                 locate(path, "sim") if path else None, _content_fix("unknown simulation")))
    return found
