"""The deck lint (``bot.lint``): the built-in deck is clean, and broken cards are named by file,
field and problem (moved here from tests/cards: the lint composes the deck, the grader and the sims)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from bot.lint import lint
from cards.deck import DECK_DIR


def test_deck_lints_clean():
    problems = [str(p) for p in lint()]
    assert problems == [], "\n".join(problems)


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
def no_sim_check() -> None:
    """Kept for the tests' signatures: ``lint_deck`` below checks sims only when given some."""


def lint_deck(directory: Path, sims: set[str] | None = None) -> list[str]:
    """One folder's problems (the built-in deck left out) as ``file: field: problem`` lines."""
    return [
        f"{p.path.name if p.path.suffix == '.md' else p.path}: {p.field}: {p.message}"
        for p in lint([directory], builtin=None, sims=sims)
    ]


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


def test_lint_reports_an_unknown_simulation(tmp_path: Path):
    write_card(tmp_path, "rl-91")
    assert lint_deck(tmp_path, sims={"some_other_sim"}) == ["rl-91.md: sim: unknown simulation 'reward_overoptimization'"]


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
