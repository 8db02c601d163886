"""Decks beyond the built-in one (issue 41): folders loaded beside it, ids unique across decks,
broken cards left out with their file, line and fix, the template, ``cards try``, a learner's
choice of decks, a card's own image, and a removed folder."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select

from bot.actions import InvalidAction
from bot.cards_cmd import register
from bot.clock import FixedClock
from bot.engine import CARD_IMAGE, QuizEngine
from bot.lint import lint
from bot.models import CardState, GroupChat
from bot.replies import ReplyKind
from cards.deck import BUILTIN, DECK_DIR, load_decks
from cards.template import card_template
from grader.selfgrade import SelfGrader

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "decks" / "team-traps"
MODEL_CARD = (DECK_DIR / "rl-08.md").read_text(encoding="utf-8")


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, decks: str = "") -> tuple[int, str, str]:
    from bot.config import get_settings

    monkeypatch.setenv("TRAPBOT_DECKS", decks)
    get_settings.cache_clear()
    try:
        parser = argparse.ArgumentParser(prog="trapbot")
        register(parser.add_subparsers(dest="command", required=True))
        args = parser.parse_args(argv)
        code = args.func(args)
    finally:
        get_settings.cache_clear()
    out, err = capsys.readouterr()
    return code, out, err


def a_deck_with(tmp_path: Path, name: str, cards: dict[str, str]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for card_id, text in cards.items():
        (folder / f"{card_id}.md").write_text(text, encoding="utf-8")
    return folder


def template_card(card_id: str) -> str:
    return card_template(card_id)


# ----- loading ------------------------------------------------------------------------------


def test_the_example_deck_loads_beside_the_built_in_one() -> None:
    deck = load_decks([EXAMPLE])
    assert deck.problems == ()
    assert deck.names == [BUILTIN, "team-traps"]
    assert deck.info("team-traps").title == "Team traps (example)"
    assert deck.ids[-1] == "grpo-01" and deck.deck_of("grpo-01") == "team-traps" and deck.deck_of("rl-01") == BUILTIN
    assert deck.image_path("grpo-01") == EXAMPLE / "grpo-01-mixed-groups.png"
    assert deck.image_path("rl-01") is None
    assert [card.id for card in deck.in_decks(["team-traps"])] == ["grpo-01"]
    assert len(deck.in_decks(None)) == len(deck) == 27


def test_an_id_in_two_decks_is_a_problem_naming_both_files(tmp_path: Path) -> None:
    first = a_deck_with(tmp_path, "first", {"team-01": template_card("team-01")})
    second = a_deck_with(tmp_path, "second", {"team-01": template_card("team-01")})
    deck = load_decks([first, second], builtin=None)
    assert deck.ids == ["team-01"] and deck.deck_of("team-01") == "first"
    [problem] = deck.problems
    assert problem.path == second / "team-01.md" and str(first / "team-01.md") in problem.message
    assert template_card("team-01").splitlines()[problem.line - 1] == "id: team-01"  # the line named
    assert "another id" in problem.fix
    # A clash with the built-in deck too.
    builtin_clash = a_deck_with(tmp_path, "third", {"rl-08": MODEL_CARD})
    [clash] = load_decks([builtin_clash]).problems
    assert str(DECK_DIR / "rl-08.md") in clash.message and clash.path == builtin_clash / "rl-08.md"


def test_a_bad_card_is_left_out_with_its_file_line_and_fix(tmp_path: Path) -> None:
    good = template_card("team-01")
    bad = template_card("team-02").replace("tags: [reward-modeling,", "tags: [no-such-tag,")
    folder = a_deck_with(tmp_path, "mixed", {"team-01": good, "team-02": bad})
    deck = load_decks([folder])
    assert "team-01" in deck and "team-02" not in deck
    [problem] = deck.problems
    assert problem.path == folder / "team-02.md" and problem.field == "tags" and "no-such-tag" in problem.message
    lines = bad.splitlines()
    assert lines[problem.line - 1].startswith("tags:")  # the line the problem names
    assert problem.fix
    assert str(problem).startswith(f"{folder / 'team-02.md'}:{problem.line}: tags: ")


def test_a_missing_image_a_missing_folder_and_an_empty_folder_are_said(tmp_path: Path) -> None:
    text = template_card("team-01").replace("sim: reward_overoptimization\n", "image: gone.png\ncaption: Not here.\n")
    folder = a_deck_with(tmp_path, "pics", {"team-01": text})
    empty = tmp_path / "empty"
    empty.mkdir()
    deck = load_decks([folder, tmp_path / "nowhere", empty], builtin=None)
    assert len(deck) == 0
    found = {(p.path.name, p.field): p for p in deck.problems}
    assert "gone.png" in found["team-01.md", "image"].message and found["team-01.md", "image"].line
    assert found["nowhere", "deck"].message == "no such folder"
    assert found["empty", "deck"].message == "no card files"


def test_an_image_outside_the_card_folder_is_refused(tmp_path: Path) -> None:
    text = template_card("team-01").replace("sim: reward_overoptimization\n", "image: ../secret.png\ncaption: No.\n")
    deck = load_decks([a_deck_with(tmp_path, "pics", {"team-01": text})], builtin=None)
    [problem] = deck.problems
    assert problem.field == "image" and "folder" in problem.message


# ----- lint and the template ----------------------------------------------------------------


def test_lint_names_file_line_and_fix_for_content_problems(tmp_path: Path) -> None:
    text = template_card("team-01").replace(
        '    probe: "What outputs will the reward model be scoring once the policy has been optimised against it?"',
        '    probe: "The reward model sees new outputs."',
    )
    folder = a_deck_with(tmp_path, "team", {"team-01": text})
    [problem] = lint([folder], builtin=None, sims=None)
    assert problem.field == "key_points.off-distribution.probe" and problem.message == "must be a question"
    assert text.splitlines()[problem.line - 1].strip().startswith("probe:")
    assert "question mark" in problem.fix


def test_lint_says_an_unknown_simulation(tmp_path: Path) -> None:
    folder = a_deck_with(tmp_path, "team", {"team-01": template_card("team-01").replace("sim: reward_overoptimization", "sim: my_sim")})
    [problem] = lint([folder], builtin=None, sims={"reward_overoptimization"})
    assert problem.field == "sim" and "my_sim" in problem.message and "image:" in problem.fix


def test_cards_new_writes_a_template_that_lints_clean(tmp_path, capsys, monkeypatch) -> None:
    folder = tmp_path / "mine"
    code, out, _ = run_cli(["cards", "new", "mine-01", "--deck", str(folder)], capsys, monkeypatch)
    assert code == 0 and "trapbot cards lint" in out
    text = (folder / "mine-01.md").read_text(encoding="utf-8")
    for field in ("id:", "source:", "question:", "trap:", "key_points:", "accepts:", "opposites:", "label:",
                  "probe:", "hint:", "misconceptions:", "sim:", "image:", "caption:", "tags:", "references:",
                  "reference_answers:"):
        assert field in text, field
    code, out, _ = run_cli(["cards", "lint", str(folder)], capsys, monkeypatch)
    assert code == 0 and out.strip() == "OK: 27 cards in 2 decks, no problems"
    # A second `new` does not overwrite; a bad id is refused with the rule.
    assert run_cli(["cards", "new", "mine-01", "--deck", str(folder)], capsys, monkeypatch)[0] == 1
    code, _, err = run_cli(["cards", "new", "Mine_1", "--deck", str(folder)], capsys, monkeypatch)
    assert code == 2 and "prefix and a number" in err


def test_cards_lint_of_a_broken_folder_exits_1_with_lines(tmp_path, capsys, monkeypatch) -> None:
    bad = template_card("team-02").replace("    core: true\n", "    core: maybe\n", 1)
    folder = a_deck_with(tmp_path, "team", {"team-01": template_card("team-01"), "team-02": bad})
    code, out, _ = run_cli(["cards", "lint"], capsys, monkeypatch, decks=str(folder))
    assert code == 1
    assert re.search(rf"^{re.escape(str(folder / 'team-02.md'))}:\d+: key_points\.0\.core: ", out, flags=re.MULTILINE)
    assert "1 problem in 1 file" in out


def test_the_example_card_lints_lists_and_shows(capsys, monkeypatch) -> None:
    code, out, _ = run_cli(["cards", "lint", str(EXAMPLE)], capsys, monkeypatch)
    assert code == 0, out
    code, out, _ = run_cli(["cards", "list"], capsys, monkeypatch, decks=str(EXAMPLE))
    assert code == 0 and re.search(r"^grpo-01 .*grpo-01-mixed-groups\.png", out, flags=re.MULTILINE)
    code, out, _ = run_cli(["cards", "show", "grpo-01"], capsys, monkeypatch, decks=str(EXAMPLE))
    assert code == 0 and "GRPO on prompts the model always fails" in out and "Image: grpo-01-mixed-groups.png" in out


def test_cards_try_grades_the_example_card_with_the_offline_judge(capsys, monkeypatch) -> None:
    """The offline judge has no labelled answers for this card: it reads it card-agnostically."""
    pytest.importorskip("sentence_transformers", reason="the offline judge's embedding model is not installed")
    right = ("Nothing: with all rewards equal the advantage is zero, so there is no gradient from that group. "
             "Only mixed groups give a gradient, about a third of prompts at 5% with G=8; use dynamic sampling.")
    code, out, _ = run_cli(["cards", "try", "grpo-01", right, "--deck", str(EXAMPLE)], capsys, monkeypatch)
    assert code == 0
    quality = int(re.search(r"^grpo-01: (\d)/5 \(offline\)", out, flags=re.MULTILINE).group(1))
    assert quality >= 3, out
    assert re.search(r"✓\s+zero-advantage \(core\): present", out)
    trap = load_decks([EXAMPLE]).get("grpo-01").trap
    code, out, _ = run_cli(["cards", "try", str(EXAMPLE / "grpo-01.md"), trap], capsys, monkeypatch)
    assert code == 0 and int(re.search(r"^grpo-01: (\d)/5", out, flags=re.MULTILINE).group(1)) <= 1, out


def test_cards_try_on_a_broken_card_says_why(tmp_path, capsys, monkeypatch) -> None:
    folder = a_deck_with(tmp_path, "team", {"team-01": template_card("team-01").replace("trap: >-", "trapp: >-")})
    code, _, err = run_cli(["cards", "try", "team-01", "an answer", "--deck", str(folder)], capsys, monkeypatch)
    assert code == 1 and "team-01.md:" in err and "trap" in err and "fix:" in err


# ----- the engine: a learner's decks, a card's own image, a removed folder ------------------------


async def test_a_learner_studies_the_decks_they_choose(db, clock: FixedClock) -> None:
    deck = load_decks([EXAMPLE])
    engine = QuizEngine(db, deck, SelfGrader(), clock)
    ada = engine.learner("telegram", "ada")
    [summary] = engine.settings(ada.id)
    assert "Decks: all: RL and RLHF traps (`builtin`), Team traps (example) (`team-traps`)" in summary.text
    assert "`/settings decks NAME, NAME`" in summary.text
    assert [b.label for row in summary.buttons[1:] for b in row] == ["✓ RL and RLHF traps", "✓ Team traps (example)"]
    [refused] = await engine.update_settings(ada.id, "decks", "nope")
    assert refused.kind is ReplyKind.ERROR and "builtin, team-traps" in refused.text
    [saved] = await engine.update_settings(ada.id, "decks", "team-traps")
    assert "Decks: Team traps (example)" in saved.text
    [question] = await engine.next_trap(ada.id)
    assert question.kind is ReplyKind.QUESTION and question.card_id == "grpo-01"
    # Dropping the last chosen deck is refused; adding the built-in one back by its button works.
    [only] = await engine.act(ada.id, summary.buttons[2][0].data)
    assert only.kind is ReplyKind.ERROR
    [both] = await engine.act(ada.id, summary.buttons[1][0].data)
    assert "Decks: all:" in both.text and engine.get_learner(ada.id).decks is None


async def test_the_verdict_of_an_image_card_brings_its_picture(db, clock: FixedClock) -> None:
    deck = load_decks([EXAMPLE])
    engine = QuizEngine(db, deck, SelfGrader(), clock)  # no simulation service at all
    ada = engine.learner("terminal", "ada")
    await engine.update_settings(ada.id, "decks", "team-traps")
    await engine.next_trap(ada.id)
    [confirm] = await engine.submit_answer(ada.id, "The advantages are all zero.")
    [verdict] = await engine.act(ada.id, confirm.buttons[0][-1].data)  # self-grade 5
    assert verdict.kind is ReplyKind.VERDICT and verdict.plot_sim == CARD_IMAGE and verdict.card_id == "grpo-01"
    plot = await engine.plot(verdict.plot_sim, card_id=verdict.card_id)
    assert plot is not None and plot.png == (EXAMPLE / "grpo-01-mixed-groups.png").read_bytes()
    assert plot.caption == deck.get("grpo-01").caption and plot.png.startswith(b"\x89PNG")


async def test_a_removed_deck_folder_keeps_history_and_stops_its_cards(db, tmp_path, clock: FixedClock) -> None:
    folder = tmp_path / "team-traps"
    shutil.copytree(EXAMPLE, folder)
    engine = QuizEngine(db, load_decks([folder], builtin=None), SelfGrader(), clock)
    ada = engine.learner("telegram", "ada")
    [question] = await engine.next_trap(ada.id)
    assert question.card_id == "grpo-01"
    [confirm] = await engine.submit_answer(ada.id, "zero advantage")
    await engine.act(ada.id, confirm.buttons[0][-1].data)
    shutil.rmtree(folder)
    # The bot restarts without the folder: the built-in deck only.
    after = QuizEngine(db, load_decks([folder]), SelfGrader(), clock)
    with Session(db) as session:
        kept = session.exec(select(CardState).where(CardState.learner_id == ada.id)).all()
    assert [state.card_id for state in kept] == ["grpo-01"]
    [question] = await after.next_trap(ada.id)
    assert question.card_id == "rl-01"
    stats = after.stats_data(ada.id)  # the history counts a card no loaded deck has; what is about cards does not
    assert stats.reviews_done == 1 and (stats.cards_seen, stats.cards_total, stats.set_aside) == (0, len(after.deck), 0)
    assert sum(count for _, count in stats.due_forecast) == 1 and not stats.mastery  # rl-01, opened above
    [kept] = await after.undo(ada.id)
    assert "no longer in the deck" in kept.text


def test_the_terminal_serves_a_deck_and_says_which_file_is_broken(tmp_path: Path) -> None:
    """``trapbot run`` with TRAPBOT_DECKS: a folder with a broken card still starts, names the
    file and why, and serves the good card with its own picture."""
    broken = a_deck_with(tmp_path, "broken", {"bad-01": template_card("bad-01").replace("question: >-", "questions: >-")})
    env = {key: value for key, value in os.environ.items() if key not in ("TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN")}
    env.update({
        "DATABASE_URL": f"sqlite:///{tmp_path / 'chat.db'}",
        "TRAPBOT_JUDGE": "self",
        "TRAPBOT_PLOTS": "false",
        "TRAPBOT_DECKS": os.pathsep.join([str(EXAMPLE), str(broken)]),
        "USER": "ada",
        "LOGNAME": "ada",
        "PYTHONPATH": str(ROOT),
    })
    lines = ["a", "/settings decks team-traps", "/trap", "The advantage is zero for every completion.", "5", "/quit"]
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "run"], input="\n".join(lines) + "\n", capture_output=True, text=True,
        env=env, cwd=tmp_path, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert re.search(rf"{re.escape(str(broken / 'bad-01.md'))}:\d+: question: Field required", result.stderr)
    assert "fix:" in result.stderr
    out = result.stdout
    assert "grpo-01" in out and "GRPO on prompts the model always fails" in out
    assert "Grade 5/5" in out
    assert re.search(rf"Plot: [^\n]*{re.escape(str(EXAMPLE / 'grpo-01-mixed-groups.png'))}", out)
    assert "two prompts in three teach nothing" in " ".join(out.split())


def test_every_problem_of_a_badly_broken_card_has_a_line_and_a_fix(tmp_path: Path) -> None:
    text = (template_card("team-01")
            .replace("    core: true\n", "    core: maybe\n", 1)
            .replace("title: A more accurate reward model (a few words, shown above the question)", "title: ''")
            .replace("    label: Optimisation seeks the reward model's errors\n", "    label: x\n"))
    broken_content = (template_card("team-02")
                      .replace('    hint: "Think about what a strong optimiser does with the few places where its scoring function is wrong."\n', "")
                      .replace("  - kind: trap\n    grade: 0", "  - kind: trap\n    grade: 1"))
    folder = a_deck_with(tmp_path, "team", {"team-01": text, "team-02": broken_content})
    problems = lint([folder], builtin=None, sims=None)
    assert {p.path.name for p in problems} == {"team-01.md", "team-02.md"} and len(problems) >= 5
    for problem in problems:
        assert problem.line is not None and problem.fix, problem
        assert str(problem).startswith(f"{problem.path}:{problem.line}: ")


def test_the_bot_start_logs_broken_files_and_unknown_simulations(tmp_path: Path, caplog) -> None:
    from bot.app import build_deck
    from bot.config import Settings

    unknown_sim = template_card("team-01").replace("sim: reward_overoptimization", "sim: not_a_sim")
    broken = template_card("team-02").replace("trap: >-", "trapp: >-")
    folder = a_deck_with(tmp_path, "team", {"team-01": unknown_sim, "team-02": broken})
    settings = Settings(_env_file=None, trapbot_decks=os.pathsep.join([str(folder), str(DECK_DIR)]))  # type: ignore[call-arg]
    with caplog.at_level("WARNING", logger="bot.app"):
        deck = build_deck(settings)
    assert "team-01" in deck and "team-02" not in deck and len(deck) == 27  # the built-in deck listed again is not a clash
    logged = caplog.text
    assert f"{folder / 'team-02.md'}:" in logged and "trap: Field required" in logged
    assert f"{folder / 'team-01.md'}:" in logged and "unknown simulation 'not_a_sim'" in logged


async def test_an_answer_waiting_on_a_removed_card_does_not_block_the_next_trap(db, tmp_path, clock: FixedClock) -> None:
    folder = tmp_path / "team-traps"
    shutil.copytree(EXAMPLE, folder)
    engine = QuizEngine(db, load_decks([folder], builtin=None), SelfGrader(), clock)
    ada = engine.learner("telegram", "ada")
    await engine.next_trap(ada.id)
    [confirm] = await engine.submit_answer(ada.id, "zero advantage")  # waits for the learner's grade
    assert confirm.kind is ReplyKind.CONFIRM
    shutil.rmtree(folder)
    after = QuizEngine(db, load_decks([folder]), SelfGrader(), clock)
    [question] = await after.next_trap(ada.id)
    assert question.kind is ReplyKind.QUESTION and question.card_id == "rl-01"
    [stale] = await after.act(ada.id, confirm.buttons[0][-1].data)  # its grade button, pressed late
    assert stale.kind is ReplyKind.ERROR and "no longer in the deck" in stale.text


# ----- a group's decks, and /stats over the decks a learner studies -------------------------------


async def answer(engine: QuizEngine, learner_id: int, quality: int, *, decks: list[str] | None = None) -> str:
    """Ask the learner's next trap (from ``decks`` when given) and self-grade it ``quality``."""
    [question] = await engine.next_trap(learner_id, decks=decks)
    assert question.kind is ReplyKind.QUESTION, question.text
    [confirm] = await engine.submit_answer(learner_id, "an answer")
    await engine.act(learner_id, confirm.buttons[0][quality].data)
    return question.card_id  # type: ignore[return-value]


async def test_stats_count_the_cards_of_the_decks_a_learner_studies(db, tmp_path, clock: FixedClock) -> None:
    """Met, the forecast and mastery follow the learner's decks; reviews and the streak are the
    whole history; a dropped deck's traps are said to be set aside, not silently lost."""
    deck = load_decks([a_deck_with(tmp_path, "core", {"core-01": template_card("core-01")}), EXAMPLE], builtin=None)
    engine = QuizEngine(db, deck, SelfGrader(), clock, default_new_per_day=2)
    ada = engine.learner("terminal", "ada")
    assert await answer(engine, ada.id, 5) == "core-01"  # due in 1 day
    assert await answer(engine, ada.id, 5, decks=["team-traps"]) == "grpo-01"  # as in a group on that deck
    every = engine.stats_data(ada.id)
    assert (every.cards_seen, every.cards_total, every.set_aside, every.all_decks) == (2, len(deck), 0, True)
    assert every.due_forecast[1][1] == 2 and {"reward-modeling", "variance"} <= every.mastery.keys()

    await engine.update_settings(ada.id, "decks", "team-traps")
    team = engine.stats_data(ada.id)
    assert (team.reviews_done, team.streak_days) == (2, 1)  # the history is whole
    assert (team.cards_seen, team.cards_total, team.set_aside, team.all_decks) == (1, 1, 1, False)
    assert sum(count for _, count in team.due_forecast) == 1 and team.due_forecast[1][1] == 1  # grpo-01 alone
    assert set(team.mastery) == set(deck.get("grpo-01").tags)
    [reply] = await engine.stats(ada.id, with_plot=False)
    assert "Traps met: 1 of 1 in your decks" in reply.text
    assert "Set aside: 1 trap you met in decks you do not study now" in reply.text and "/settings" in reply.text

    await engine.update_settings(ada.id, "decks", "all")
    [reply] = await engine.stats(ada.id, with_plot=False)
    assert f"Traps met: 2 of {len(deck)}\n" in reply.text and "Set aside" not in reply.text


async def test_a_groups_decks_rule_its_traps_and_an_old_button_is_refused(db, tmp_path, clock: FixedClock) -> None:
    core = a_deck_with(tmp_path, "core", {"core-01": template_card("core-01")})
    team = a_deck_with(tmp_path, "team", {"team-01": template_card("team-01")})
    papers = a_deck_with(tmp_path, "papers", {"paper-01": template_card("paper-01")})
    before = QuizEngine(db, load_decks([core, team, papers], builtin=None), SelfGrader(), clock)
    assert before.group_decks("telegram", -100) == ["core", "team", "papers"]
    listing = before.group_decks_reply("telegram", -100)
    core_button, team_button, papers_button = (row[0].data for row in listing.buttons)
    before.toggle_group_deck("telegram", -100, core_button, by=7)
    chosen = before.toggle_group_deck("telegram", -100, papers_button, by=7)
    assert [row[0].label for row in chosen.buttons] == ["Add core", "✓ team", "Add papers"]
    assert before.group_decks("telegram", -100) == ["team"]
    assert before.group_decks("telegram", -200) == ["core", "team", "papers"]  # another group: every deck

    # A member who studies the core deck alone and met today's one new trap in private: in the
    # group, the group's deck rules, and today's new trap is already met (one more on request).
    ada = before.learner("telegram", "ada")
    await before.update_settings(ada.id, "decks", "core")
    assert await answer(before, ada.id, 5) == "core-01"
    [done] = await before.next_trap(ada.id, decks=before.group_decks("telegram", -100))
    assert "met today's new traps" in done.text
    [question] = await before.act(ada.id, done.buttons[-1][0].data, decks=before.group_decks("telegram", -100))
    assert question.card_id == "team-01"

    # The bot restarts without the team folder: papers is second now. The group's choice names
    # no loaded deck, so every deck serves; a button of the old list pointing at a position whose
    # deck changed, or is gone, is refused; one whose deck is still there still works.
    after = QuizEngine(db, load_decks([core, papers], builtin=None), SelfGrader(), clock)
    assert after.group_decks("telegram", -100) == ["core", "papers"]
    for stale in (team_button, papers_button):
        with pytest.raises(InvalidAction, match="decks have changed since that list was sent"):
            after.toggle_group_deck("telegram", -100, stale, by=7)
    after.toggle_group_deck("telegram", -100, core_button, by=7)
    assert after.group_decks("telegram", -100) == ["papers"]
    [done] = await after.next_trap(ada.id, decks=after.group_decks("telegram", -100))
    [question] = await after.act(ada.id, done.buttons[-1][0].data, decks=after.group_decks("telegram", -100))
    assert question.card_id == "paper-01"
    # Other buttons are not group deck buttons; the engine's own act refuses a group deck button.
    with pytest.raises(InvalidAction):
        after.toggle_group_deck("telegram", -100, chosen.buttons[0][0].data.replace("gdk", "set"), by=7)
    [refused] = await after.act(ada.id, core_button)
    assert refused.kind is ReplyKind.ERROR


def test_two_admins_toggling_at_once_both_count(db, tmp_path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Olga's press reads the group's decks, Bob's press is stored meanwhile, then Olga's is
    written: the write finds the group changed, reads again and keeps Bob's change too."""
    folders = [a_deck_with(tmp_path, name, {f"{name}-01": template_card(f"{name}-01")}) for name in ("core", "team", "papers")]
    deck = load_decks(folders, builtin=None)
    olga, bob = QuizEngine(db, deck, SelfGrader(), clock), QuizEngine(db, deck, SelfGrader(), clock)
    _, team_button, papers_button = (row[0].data for row in olga.group_decks_reply("telegram", -100).buttons)
    bob.toggle_group_deck("telegram", -100, team_button, by=2)  # the group's row exists: ["core", "papers"]
    writes = []
    real_store = type(olga)._store

    def store_after_bob(self, session, row, *args):
        if not writes:  # Bob's press lands between Olga's read and her write
            bob.toggle_group_deck("telegram", -100, team_button, by=2)
        writes.append(row.revision if row is not None else None)
        return real_store(self, session, row, *args)

    monkeypatch.setattr(olga, "_store", store_after_bob.__get__(olga))
    olga.toggle_group_deck("telegram", -100, papers_button, by=1)
    assert writes == [1, 2]  # the first write was refused (revision 1 was gone) and retried
    assert olga.group_decks("telegram", -100) == ["core", "team"]  # Bob's team back, Olga's papers dropped


async def test_forget_keeps_a_groups_decks_and_drops_who_chose_them(db, clock: FixedClock) -> None:
    engine = QuizEngine(db, load_decks([EXAMPLE]), SelfGrader(), clock)
    olga = engine.learner("telegram", "7")
    [builtin_button, _] = (row[0].data for row in engine.group_decks_reply("telegram", -100).buttons)
    engine.toggle_group_deck("telegram", -100, builtin_button, by="7")
    await engine.forget(olga.id, confirmed=True)
    with Session(db) as session:
        [group] = session.exec(select(GroupChat)).all()
    assert (group.decks, group.updated_by) == (["team-traps"], "")
