"""Every card, every wording, every reply kind built from a card: no cut sentence, no fragment
of the key shown as a hint, and a variant never shows the original's setting."""

from __future__ import annotations

import re

import pytest

from bot import texts
from bot.followups import FollowUps
from cards.deck import DECK_DIR, load_deck
from cards.schema import Card, mentions
from cards.wording import as_asked
from grader.base import Judgement, MisconceptionJudgement, PointJudgement, PointVerdict

DECK = load_deck(DECK_DIR)
WORDINGS = [(card, variant.id) for card in DECK for variant in card.variants] + [(card, None) for card in DECK]
#: What a prose block may end with: a sentence end, maybe inside closing markup or brackets.
SENTENCE_END = re.compile(r"[.?!]['\")\]_*`]*$|\$$")
#: Lines that are not prose: list items, marked points, headings, display maths.
NOT_PROSE = re.compile(r"^(- |\d+\. |[✅🟡❌⛔💡⚠⚖]|\*\*[^*]+\*\*$|\*\*Grade \d/5\*\*: |\*\*[^*]+\*\*  ·  `|_.*_$|\$|\|)")


def cut_blocks(text: str) -> list[str]:
    """The paragraphs of ``text`` that end mid-sentence: a colon with nothing after it, an
    ellipsis, or prose without a sentence end."""
    blocks = [block.strip() for block in text.split("\n\n") if block.strip()]
    cut = []
    for index, block in enumerate(blocks):
        last = block.splitlines()[-1].strip()
        # A sentence may run on through a display formula or a list that follows it.
        continued = index + 1 < len(blocks) and blocks[index + 1].startswith(("$", "- ", "1. "))
        dangling = "…" in block or (block.endswith(":") and index == len(blocks) - 1)
        unended = not continued and not block.endswith(":") and not NOT_PROSE.match(last) and not SENTENCE_END.search(last)
        if dangling or unended:
            cut.append(block)
    return cut


def judgement(card: Card, missing: str | None = None, *, asserts: bool = False) -> Judgement:
    points = tuple(
        PointJudgement(p.id, PointVerdict.ABSENT if p.id == missing else PointVerdict.PRESENT, "quote")
        for p in card.key_points
    )
    return Judgement(
        judge="test",
        points=points,
        misconceptions=tuple(MisconceptionJudgement(m.id, asserts and i == 0) for i, m in enumerate(card.misconceptions)),
    )


def replies_of(card: Card) -> dict[str, str]:
    """Every text built from one card (as asked), keyed by what it is."""
    built = {
        "question": texts.question_text(card, repeat=False, due_label="2 more due today."),
        "question again": texts.question_text(card, repeat=True, due_label=""),
        "hint": f"💡 {card.hint}",
        "explanation": texts.explanation_text(card),
        "key": texts.key_text(card),
        "self-grade": texts.self_grade_prompt(card),
        "assisted": texts.assisted_prompt(card, judgement(card, card.key_points[0].id), 2),
        "verdict, trap": texts.verdict_text(card, 1, judgement(card, card.key_points[0].id, asserts=True), (), "back in 10 minutes, after what else is due", "test"),
        "verdict, follow-up": texts.verdict_text(card, 2, judgement(card, card.core_points[0].id), (), "next review tomorrow (Tue 03 Mar)", "test", follow_up=True),
        "verdict, self": texts.verdict_text(card, 3, None, (), "next review tomorrow (Tue 03 Mar)", "self"),
        "verdict, I don't know": texts.verdict_text(card, 0, None, (), "back in 10 minutes, after what else is due", texts.DONT_KNOW_GRADER),
    }
    for point in card.key_points:
        built[f"verdict missing {point.id}"] = texts.verdict_text(
            card, 4 if not point.core else 2, judgement(card, point.id), (), "next review in 6 days (Mon 09 Mar)", "test"
        )
        if point.probe:
            built[f"follow-up {point.id}"] = FollowUps.prompt(card, point, 1).text
            built[f"follow-up shown {point.id}"] = FollowUps._shown(FollowUps.__new__(FollowUps), card, point, 1, "Not yet.").text
    return built


@pytest.mark.parametrize(("card", "variant_id"), WORDINGS, ids=lambda value: value.id if isinstance(value, Card) else str(value))
def test_no_reply_cuts_a_sentence(card: Card, variant_id: str | None) -> None:
    asked = as_asked(card, variant_id)
    for kind, text in replies_of(asked).items():
        assert not cut_blocks(text), f"{card.id} {variant_id} {kind}: {cut_blocks(text)}"


@pytest.mark.parametrize("card", list(DECK), ids=lambda card: card.id)
def test_the_missed_point_line_is_its_hint_not_a_fragment_of_the_key(card: Card) -> None:
    for point in card.key_points:
        verdict = texts.verdict_text(card, 2, judgement(card, point.id), (), "next review tomorrow", "test")
        [line] = [line for line in verdict.splitlines() if line.startswith(("**A core point to find:**", "**To make it complete:**"))]
        assert point.hint and line.endswith(point.hint)
        assert point.hint.casefold() not in " ".join(point.text.split()).casefold()


@pytest.mark.parametrize(("card", "variant_id"), [(c, v) for c, v in WORDINGS if v], ids=str)
def test_a_variant_shows_none_of_the_originals_setting(card: Card, variant_id: str) -> None:
    variant = next(v for v in card.variants if v.id == variant_id)
    own = [term for term in card.situation or [] if term not in variant.shares]
    asked = as_asked(card, variant_id)
    shown = [asked.hint] + [value for p in asked.key_points for value in (p.label, p.probe, p.hint) if value]
    for term in own:
        assert not any(mentions(text, term) for text in shown), (card.id, variant_id, term)


def test_the_why_paragraph_carries_what_a_colon_announces() -> None:
    why = texts.first_paragraph(DECK.get("rl-10").explanation)
    assert not why.endswith(":") and "\\log" not in why.split("\n\n")[0] and why.count("\n\n") == 1


def test_the_first_sentence_is_never_cut() -> None:
    long = "A sentence with many words, " * 12 + "and its end. Then another."
    assert texts.first_sentence(long) == ("A sentence with many words, " * 12 + "and its end.").strip()
