"""``trapbot cards lint|list|show``, driven through ``register`` on a fresh argparse parser."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cards.deck as deck_module
from cards.cli import register
from cards.deck import DECK_DIR, load_deck

MODEL_CARD = (DECK_DIR / "rl-08.md").read_text(encoding="utf-8")
REPO_ROOT = Path(__file__).resolve().parents[2]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="trapbot")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def copy_model_card(directory: Path, card_id: str, text: str = MODEL_CARD) -> None:
    text = re.sub(r"^id: rl-08$", f"id: {card_id}", text, count=1, flags=re.MULTILINE)
    (directory / f"{card_id}.md").write_text(text, encoding="utf-8")


@pytest.fixture
def small_deck_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two clean copies of the model card, linted without the simulation registry."""
    monkeypatch.setattr(deck_module, "_known_sims", lambda: None)
    for card_id in ("rl-91", "rl-92"):
        copy_model_card(tmp_path, card_id)
    return tmp_path


def test_list_json_has_one_row_per_card(capsys):
    code, out, _ = run_cli(["cards", "list", "--json"], capsys)
    assert code == 0
    rows = json.loads(out)
    deck = load_deck()
    assert [row["id"] for row in rows] == deck.ids
    for row, card in zip(rows, deck, strict=True):
        assert set(row) == {"id", "title", "sim", "tags"}
        assert row == {"id": card.id, "title": card.title, "sim": card.sim, "tags": card.tags}


def test_list_table_shows_every_card(capsys, small_deck_dir: Path):
    code, out, _ = run_cli(["cards", "list", "--deck", str(small_deck_dir)], capsys)
    assert code == 0
    card = load_deck(small_deck_dir).get("rl-91")
    rows = [line for line in out.splitlines() if line.startswith("rl-9")]
    assert [row.split()[0] for row in rows] == ["rl-91", "rl-92"]
    for row in rows:
        assert card.title in row and card.sim in row and ", ".join(card.tags) in row
    assert "2 cards" in out


def test_list_with_a_broken_card_fails_and_says_why(capsys, small_deck_dir: Path):
    copy_model_card(
        small_deck_dir, "rl-93", MODEL_CARD.replace("sim: reward_overoptimization\n", "")
    )
    code, out, err = run_cli(["cards", "list", "--deck", str(small_deck_dir)], capsys)
    assert code == 1
    assert out == ""
    assert "rl-93.md: sim: Field required" in err


def test_show_json_is_the_whole_card(capsys):
    card = load_deck().get("rl-08")
    code, out, _ = run_cli(["cards", "show", "rl-08", "--json"], capsys)
    assert code == 0
    assert json.loads(out) == card.model_dump(mode="json")


def test_show_renders_every_section_and_marks_core_points(capsys):
    card = load_deck().get("rl-08")
    code, out, _ = run_cli(["cards", "show", "rl-08"], capsys)
    assert code == 0
    flat = " ".join(out.split())
    for text in (card.question, card.trap, card.hint, card.misconceptions[0].why_wrong):
        assert " ".join(text.split()) in flat
    for section in (
        "Question",
        "Trap",
        "Key points",
        "Misconceptions",
        "Hint",
        "Explanation",
        "References",
    ):
        assert re.search(rf"^{section}\b", out, flags=re.MULTILINE), section
    for point in card.key_points:
        marker = "*" if point.core else " "
        assert re.search(
            rf"^{re.escape(marker)} \[{re.escape(point.id)},", out, flags=re.MULTILINE
        ), point.id
    for ref in card.references:
        assert ref.title in flat
    for point in card.key_points:  # each point's hint, and every variant with its own words
        assert f"Hint: {point.hint}" in flat
    assert re.search(r"^Variants \(the original's setting: ", out, flags=re.MULTILINE)
    for variant in card.variants:
        assert f"[{variant.id}]" in flat
        for override in variant.points:
            assert " ".join((override.probe or override.label or override.hint or "").split()) in flat


def test_show_unknown_id_exits_2_with_a_message(capsys):
    code, out, err = run_cli(["cards", "show", "rl-99"], capsys)
    assert code == 2
    assert out == ""
    assert "rl-99" in err and "known ids" in err


def test_lint_ok_on_a_clean_deck(capsys, small_deck_dir: Path):
    code, out, _ = run_cli(["cards", "lint", "--deck", str(small_deck_dir)], capsys)
    assert code == 0
    assert out.strip() == "OK: 2 cards, no problems"


def test_lint_prints_file_field_problem_and_exits_1(capsys, small_deck_dir: Path):
    broken = MODEL_CARD.replace("tags: [reward-overoptimization,", "tags: [not-a-tag,")
    copy_model_card(small_deck_dir, "rl-93", broken)
    code, out, _ = run_cli(["cards", "lint", "--deck", str(small_deck_dir)], capsys)
    assert code == 1
    lines = out.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("rl-93.md: tags: ") and "not-a-tag" in lines[0]


def test_cards_without_a_subcommand_prints_usage(capsys):
    code, _, err = run_cli(["cards"], capsys)
    assert code == 2
    assert "lint" in err and "show" in err


def test_importing_the_cli_stays_light():
    probe = "import sys, cards.cli; print(sorted({'torch', 'matplotlib'} & set(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
