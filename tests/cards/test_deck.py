"""The deck: every card parses and matches the trap list, and the lint names broken cards."""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from pathlib import Path

import pytest

import cards.deck as deck_module
from cards.deck import DECK_DIR, lint_deck, load_deck, parse_card
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


def test_deck_lints_clean():
    problems = lint_deck()
    assert problems == [], "\n".join(problems)


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
        assert card_question_plain(card.question) == seed_question(rows[card.id]["question"])

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


# --- the lint on broken decks -------------------------------------------------------------

MODEL_CARD = (DECK_DIR / "rl-08.md").read_text(encoding="utf-8")
PROBLEM_LINE = re.compile(r"^(?P<file>[\w.-]+\.md): (?P<field>[^:]+): (?P<problem>.+)$")


def write_card(
    directory: Path, file_id: str, text: str = MODEL_CARD, card_id: str | None = None
) -> None:
    """A copy of the model card saved as ``<file_id>.md`` with its id set to ``card_id``."""
    text = re.sub(r"^id: rl-08$", f"id: {card_id or file_id}", text, count=1, flags=re.MULTILINE)
    (directory / f"{file_id}.md").write_text(text, encoding="utf-8")


def without_block(text: str, key: str) -> str:
    """The card text without the top-level YAML key ``key`` and its indented block."""
    return re.sub(rf"^{key}:.*\n(?:[ -].*\n)*", "", text, count=1, flags=re.MULTILINE)


def parse_problems(lines: list[str]) -> dict[str, list[tuple[str, str]]]:
    by_file: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for line in lines:
        match = PROBLEM_LINE.match(line)
        assert match, f"not a 'file: field: problem' line: {line!r}"
        by_file[match["file"]].append((match["field"], match["problem"]))
    return by_file


@pytest.fixture
def no_sim_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lint without the simulation registry, so these tests do not depend on which sims exist."""
    monkeypatch.setattr(deck_module, "_known_sims", lambda: None)


def test_lint_is_empty_for_a_clean_copy(tmp_path: Path, no_sim_check: None):
    write_card(tmp_path, "rl-91")
    assert lint_deck(tmp_path) == []


def test_lint_reports_each_broken_card_as_file_field_problem(tmp_path: Path, no_sim_check: None):
    write_card(tmp_path, "rl-90")  # clean
    write_card(tmp_path, "rl-91", without_block(MODEL_CARD, "key_points"))
    write_card(
        tmp_path,
        "rl-92",
        MODEL_CARD.replace("tags: [reward-overoptimization,", "tags: [no-such-tag,"),
    )
    write_card(tmp_path, "rl-93", MODEL_CARD.removeprefix("---\n"))
    write_card(tmp_path, "rl-94", card_id="rl-95")
    write_card(
        tmp_path, "rl-96", MODEL_CARD.replace("sim: reward_overoptimization", "sim: [unclosed")
    )
    short_body = MODEL_CARD[: MODEL_CARD.index("\n---\n") + 5] + "Too short to explain anything.\n"
    write_card(tmp_path, "rl-97", short_body)

    problems = parse_problems(lint_deck(tmp_path))

    assert "rl-90.md" not in problems
    assert ("key_points", "Field required") in problems["rl-91.md"]
    assert [field for field, _ in problems["rl-92.md"]] == ["tags"]
    assert "no-such-tag" in problems["rl-92.md"][0][1]
    assert [field for field, _ in problems["rl-93.md"]] == ["front matter"]
    assert problems["rl-94.md"] == [("id", "'rl-95' does not match the file name 'rl-94'")]
    assert [field for field, _ in problems["rl-96.md"]] == ["front matter"]
    assert [field for field, _ in problems["rl-97.md"]] == ["explanation"]
    assert "150 to 450" in problems["rl-97.md"][0][1]


def test_lint_names_the_nested_field(tmp_path: Path, no_sim_check: None):
    write_card(tmp_path, "rl-91", MODEL_CARD.replace("weight: 0.5", "weight: -1", 1))
    problems = parse_problems(lint_deck(tmp_path))
    assert [field for field, _ in problems["rl-91.md"]] == ["key_points.3.weight"]


def test_lint_reports_an_unknown_simulation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(deck_module, "_known_sims", lambda: {"some_other_sim"})
    write_card(tmp_path, "rl-91")
    assert lint_deck(tmp_path) == ["rl-91.md: sim: unknown simulation 'reward_overoptimization'"]


def test_lint_of_an_empty_directory(tmp_path: Path):
    assert lint_deck(tmp_path) == [f"{tmp_path}: deck: no card files"]


def test_lint_checks_the_content_the_schema_cannot_see(tmp_path: Path, no_sim_check: None):
    broken = MODEL_CARD.replace("    label: The reward is a learned proxy\n", "", 1)
    broken = broken.replace("grade: 3", "grade: 4", 1)  # the partial answer, against its labels
    first_probe = re.search(r"    probe: >-\n((?:      .*\n)+)", broken)
    assert first_probe is not None
    broken = broken.replace(first_probe.group(0), "    probe: Is the reward a learned proxy\n", 1)
    write_card(tmp_path, "rl-91", broken)
    problems = dict(parse_problems(lint_deck(tmp_path)).get("rl-91.md", []))
    assert "missing" in problems["key_points.proxy-not-goal.label"]
    assert problems["key_points.proxy-not-goal.probe"] == "must be a question"
    assert problems["reference_answers.partial.grade"] == (
        "4, but the grade rule gives 3 for its labels"
    )


def test_lint_wants_opposites_that_are_not_the_point(tmp_path: Path, no_sim_check: None):
    opposites = re.findall(r"    opposites:\n((?:      - .*\n)+)", MODEL_CARD)
    assert len(opposites) >= 2
    first_accept = re.search(r"    accepts:\n      - (.*)\n", MODEL_CARD)
    assert first_accept is not None
    broken = MODEL_CARD.replace(opposites[0], "      - " + first_accept.group(1) + "\n", 1)
    broken = broken.replace("    opposites:\n" + opposites[1], "", 1)
    write_card(tmp_path, "rl-91", broken)
    problems = parse_problems(lint_deck(tmp_path)).get("rl-91.md", [])
    found = [problem for _, problem in problems]
    assert any(problem.startswith("also accepted as the point") for problem in found), found
    assert "0 claims; at least 2" in found, found
