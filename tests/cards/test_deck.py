"""The deck: every card parses and matches the trap list (the lint: tests/test_decks_lint.py)."""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from pathlib import Path

import pytest

from cards.deck import DECK_DIR, load_deck, parse_card
from cards.schema import CARD_ID

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
TRAPS = SHARED / "traps.md"
EXPECTED_CARD_COUNT = 26
CARD_FILES = sorted(DECK_DIR.glob("*.md"))

needs_shared = pytest.mark.skipif(
    not TRAPS.is_file(),
    reason=f"the trap list {TRAPS} is absent (shared/ sits beside the repo root)",
)


def trap_rows() -> dict[str, dict[str, str]]:
    """The rows of the table in shared/traps.md: id -> where, date, question (verbatim)."""
    rows: dict[str, dict[str, str]] = {}
    for line in TRAPS.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line.startswith("|") or not line.endswith("|"):
            continue
        cells = [cell.strip() for cell in line[1:-1].split("|", 3)]
        if len(cells) == 4 and re.match(CARD_ID, cells[0]):
            rows[cells[0]] = {"where": cells[1], "date": cells[2], "question": cells[3]}
    return rows


def seed_question(verbatim: str) -> str:
    """The seed's question as a card must hold it: NFKC, without the “ ” quotes, spaces collapsed."""
    text = unicodedata.normalize("NFKC", verbatim).strip()
    if text.startswith("“") and text.endswith("”"):
        text = text[1:-1]
    return " ".join(text.split())


def card_question_plain(markdown: str) -> str:
    """A card's question without Markdown emphasis markers, spaces collapsed."""
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", markdown, flags=re.DOTALL)
    text = re.sub(r"\*(.+?)\*", r"\1", text, flags=re.DOTALL)
    text = re.sub(r"(?<!\w)_(.+?)_(?!\w)", r"\1", text, flags=re.DOTALL)
    return " ".join(text.split())


def test_emphasis_stripping_keeps_the_words():
    assert card_question_plain("to *increase\n capacity*. Using **DPO (x)** and _this_") == (
        "to increase capacity. Using DPO (x) and this"
    )
    assert card_question_plain("snake_case_name stays") == "snake_case_name stays"


def test_every_card_file_loads():
    deck = load_deck()
    assert len(deck) == len(CARD_FILES) > 0
    assert deck.ids == sorted(
        deck.ids, key=lambda card_id: (not card_id.startswith("rl-"), card_id)
    )


@needs_shared
def test_deck_ids_are_exactly_the_trap_ids():
    expected = set(trap_rows())
    assert len(expected) == EXPECTED_CARD_COUNT, "shared/traps.md should list 26 traps"
    found = {path.stem for path in CARD_FILES}
    assert found == expected, (
        f"missing: {sorted(expected - found)}; unexpected: {sorted(found - expected)}"
    )


@pytest.mark.parametrize("path", CARD_FILES, ids=lambda path: path.stem)
class TestCard:
    """Per card: the shape the deck brief asks for, and agreement with the trap list."""

    def test_shape(self, path: Path):
        card = parse_card(path)
        assert card.sim
        assert 3 <= len(card.key_points) <= 6
        assert any(point.core for point in card.key_points)
        assert 1 <= len(card.misconceptions) <= 3
        assert card.references
        assert 2 <= len(card.tags) <= 4, f"{len(card.tags)} tags; the brief asks for 2 to 4"
        grades = {answer.kind: answer.grade for answer in card.reference_answers}
        assert grades.get("expert") == 5
        assert grades.get("trap") in (0, 1)
        assert 2 <= grades.get("partial", -1) <= 3, "needs a partial reference answer graded 2 or 3"

    @needs_shared
    def test_question_is_the_seeds(self, path: Path):
        card = parse_card(path)
        rows = trap_rows()
        assert card.id in rows, f"{card.id} is not in shared/traps.md"
        asked, seed = card_question_plain(card.question), seed_question(rows[card.id]["question"])
        # The interviewer's words stay verbatim. A seed that states a plan without asking
        # anything (rl-11) may be followed by one question sentence, so the trap is a question.
        assert asked.startswith(seed), "the card must keep the seed's words"
        added = asked[len(seed):].strip()
        if added:
            assert "?" not in seed and added.endswith("?") and added.count("?") == 1, added

    @needs_shared
    def test_source_matches_the_trap_list(self, path: Path):
        card = parse_card(path)
        row = trap_rows().get(card.id)
        assert row is not None, f"{card.id} is not in shared/traps.md"
        assert card.source.date == row["date"]
        assert card.source.role in row["where"]
        if card.source.company:
            assert card.source.company in row["where"]
        if card.id.startswith("rl-"):
            assert card.source.series == f"Reinforcement Learning #{int(card.id[3:])}"
        assert (SHARED / "seeds" / card.source.seed).is_file()


def test_an_arxiv_id_names_one_paper_across_the_deck():
    def key(title: str) -> str:
        return re.sub(r"[^a-z0-9]", "", title.lower())

    titles: dict[str, set[str]] = defaultdict(set)
    for card in load_deck():
        for ref in card.references:
            if ref.arxiv:
                titles[ref.arxiv].add(key(ref.title))
    clashes = {arxiv: names for arxiv, names in titles.items() if len(names) > 1}
    assert not clashes, f"one arXiv id cited with different titles: {clashes}"
