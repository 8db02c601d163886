"""The terminal chat in process, on a real SQLite file: every verdict of a walk through the deck
shows its plot (one simulation slower than its verdict), the same action keeps its key, a stale
key says so, the judge's warm-up is said once, a tick redraws only what changed, the machine's
time zone is proposed, and no card leaves LaTeX unrendered."""

from __future__ import annotations

import asyncio
import io
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from bot import texts
from bot.db import make_engine
from bot.engine import QuizEngine
from bot.markup import to_terminal
from bot.models import Review
from bot.terminal import STALE_KEY, TerminalChat, key_for, machine_timezone
from cards.deck import default_deck
from grader.base import Assessment, Judgement, PointJudgement, PointVerdict
from grader.scoring import grade_from_judgement
from tests.deck_plots import DeckPlots

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
_CARD = re.compile(r"\b((?:rl|msft)-\d{2})\b")


class EveryPointJudge:
    """Credits every key point by the phrase the card accepts for it; asks to confirm when
    interactive. ``warming``: ``warm`` waits for it (a model still loading)."""

    name = "every-point"

    def __init__(self) -> None:
        self.warming = threading.Event()
        self.warming.set()

    @staticmethod
    def answer(card: Any) -> str:
        return "; ".join(p.accepts[0] for p in card.key_points) + "."

    async def warm(self, cards: Any = ()) -> None:
        await asyncio.to_thread(self.warming.wait)

    async def assess(self, card: Any, answer: str, *, interactive: bool) -> Assessment:
        if not self.warming.is_set():
            await asyncio.to_thread(self.warming.wait)  # the first answer waits for the model
        points = tuple(
            PointJudgement(p.id, PointVerdict.PRESENT, p.accepts[0])
            if p.accepts[0] in answer
            else PointJudgement(p.id, PointVerdict.ABSENT)
            for p in card.key_points
        )
        judgement = Judgement(judge=self.name, points=points)
        grade = grade_from_judgement(card, judgement, answer)
        return Assessment(self.name, grade, needs_confirmation=interactive)


class Learner:
    """Types into the chat: reads the screen so far and answers what it shows."""

    def __init__(self, screen: io.StringIO, decide: Any):
        self.screen = screen
        self.decide = decide
        self.seen = 0
        self.typed: list[str] = []

    def readline(self) -> str:
        shown = self.screen.getvalue()[self.seen :]
        self.seen = len(self.screen.getvalue())
        line = self.decide(shown)
        if line is None:
            return ""
        self.typed.append(line)
        return line + "\n"


class TtyScreen(io.StringIO):
    def isatty(self) -> bool:
        return True


def engine_on(db_url: str, grader: Any, plots: Any = None) -> QuizEngine:
    from datetime import UTC, datetime

    from bot.clock import FixedClock

    deck = default_deck()
    clock = FixedClock(datetime(2026, 3, 2, 8, 0, tzinfo=UTC))
    return QuizEngine(
        make_engine(db_url), deck, grader, clock, sims=plots, interactive=True,
        default_new_per_day=len(deck.cards),
    )


def sections(screen: str) -> list[str]:
    """The screen cut at each verdict: each piece from a 'Grade' line to the next input."""
    return [part for part in re.split(r"(?=\*?\*?Grade \d/5)", screen)[1:]]


async def test_a_walk_through_the_deck_shows_every_plot_before_the_buttons(
    db_url: str, tmp_path: Path
) -> None:
    deck = default_deck()
    slow_sim = deck.cards[1].sim
    plots = DeckPlots(tmp_path / "plots", PNG, slow=frozenset({slow_sim}))
    engine = engine_on(db_url, EveryPointJudge(), plots)
    screen = io.StringIO()
    loop = asyncio.get_running_loop()
    asked: list[str] = []

    def decide(shown: str) -> str | None:
        if "still being computed" in shown:
            loop.call_soon_threadsafe(plots.release.set)
        if "Check my reading" in shown:
            assert "[c] Confirm" in shown  # whatever the number of points
            return "c"
        found = [m for m in _CARD.findall(shown) if m in deck]
        if "(Type your answer" in shown and found:
            asked.append(found[0])
            return EveryPointJudge.answer(deck.get(found[0]))
        if len(asked) == len(deck.cards):
            return "/quit"
        return "/trap"

    chat = TerminalChat(engine, Learner(screen, decide), screen, user="ada", timezone="UTC",
                        plot_wait_seconds=0.05, viewer=lambda path: None)
    await chat.run()
    await chat.settle()
    out = screen.getvalue()
    assert sorted(asked) == sorted(c.id for c in deck.cards) and len(asked) == 26
    verdicts = sections(out)
    assert len(verdicts) == 26
    for card_id, verdict in zip(asked, verdicts, strict=True):
        sim = deck.get(card_id).sim
        buttons = verdict.index("[n] Next trap")
        if sim == slow_sim:
            assert verdict.index("still being computed") < buttons
        else:
            plot_line = verdict.index("📈 Plot: ")
            assert plot_line < buttons and f"{sim}.png" in verdict[plot_line:buttons], card_id
            assert "[v] open the plot" in verdict
    late = re.findall(r"📈 The plot is ready: .*", out)
    assert len(late) == 1 and f"{slow_sim}.png" in late[0]
    assert plots.prefetched == [deck.get(c).sim for c in asked]


async def test_keys_are_stable_and_a_stale_key_says_so(db_url: str, tmp_path: Path) -> None:
    deck = default_deck()
    engine = engine_on(db_url, EveryPointJudge(), DeckPlots(tmp_path / "plots", PNG))
    card = deck.cards[0]
    opened: list[str] = []
    script = iter(["/trap", EveryPointJudge.answer(card), "c", "c", "x", "v", "/quit"])
    screen = io.StringIO()
    chat = TerminalChat(engine, Learner(screen, lambda shown: next(script)), screen, user="ada",
                        timezone="UTC", viewer=lambda path: opened.append(path))
    await chat.run()
    out = screen.getvalue()
    # the old confirm key, and a letter no button has
    assert out.count(STALE_KEY.format(key="c")) == 1 and out.count(STALE_KEY.format(key="x")) == 1
    assert "That answer is empty" not in out
    with Session(engine.db) as session:
        assert len(session.exec(select(Review)).all()) == 1
    assert opened == [str(tmp_path / "plots" / f"{card.sim}.png")]


def test_the_same_action_has_the_same_key_on_every_card() -> None:
    from bot.actions import Action, Verb
    from bot.replies import Button

    for points in (3, 5, 6, 7):
        buttons = [Button(f"{i}. ✅", Action(Verb.TICK, 9, str(i)).encode()) for i in range(1, points + 1)]
        buttons.append(Button("Confirm 4/5", Action(Verb.CONFIRM, 9).encode()))
        assert [key_for(b) for b in buttons] == [*map(str, range(1, points + 1)), "c"]
    assert key_for(Button("Next trap", Action(Verb.NEXT).encode())) == "n"
    assert key_for(Button("Keep these settings", Action(Verb.SETTINGS, arg="accept").encode())) == "k"


async def test_the_first_grade_says_it_waited_for_the_judge(db_url: str, tmp_path: Path) -> None:
    deck = default_deck()
    judge = EveryPointJudge()
    judge.warming.clear()
    engine = engine_on(db_url, judge)
    first, second = deck.cards[0], deck.cards[1]
    loop = asyncio.get_running_loop()

    lines = iter(["/trap", EveryPointJudge.answer(first), "c", "/trap", EveryPointJudge.answer(second), "c", "/quit"])

    def decide(shown: str) -> str:
        line = next(lines)
        if line == EveryPointJudge.answer(first):
            loop.call_later(0.2, judge.warming.set)  # the model finishes loading meanwhile
        return line

    screen = io.StringIO()
    await TerminalChat(engine, Learner(screen, decide), screen, user="ada", timezone="UTC").run()
    out = screen.getvalue()
    assert out.count("the judge is still loading its model") == 1
    assert out.count("because the judge was still loading its model") == 1
    assert out.index("Check my reading") < out.index("because the judge was still loading")
    assert out.count("Grading your answer") == 2  # every answer shows it is being graded


async def test_a_tick_redraws_only_the_changed_lines(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Wide enough for the button line whatever terminal (or none) the suite runs under: a line
    # that does not fit is printed below instead, which is another test's case.
    monkeypatch.setenv("COLUMNS", "200")
    deck = default_deck()
    engine = engine_on(db_url, EveryPointJudge())
    card = deck.cards[0]
    script = iter(["/trap", EveryPointJudge.answer(card), "1", "/quit"])
    screen = TtyScreen()
    marks: dict[str, int] = {}

    def decide(shown: str) -> str:
        line = next(script)
        marks[line] = len(screen.getvalue())
        return line

    await TerminalChat(engine, Learner(screen, decide), screen, user="ada", timezone="UTC").run()
    redraw = screen.getvalue()[marks["1"] : marks["/quit"]]
    block = screen.getvalue()[marks[EveryPointJudge.answer(card)] : marks["1"]]
    assert "Check my reading" in block and "Check my reading" not in redraw
    assert re.search(r"\033\[\d+A", redraw), "the cursor goes back up to the block"
    rewritten = redraw.count("\033[2K")
    assert 1 <= rewritten <= 4, redraw  # the point, the grade line and the buttons, not 14 lines
    assert "[1] 1." in redraw and "grades" in redraw


async def test_a_new_learner_is_offered_the_machines_time_zone(db_url: str) -> None:
    engine = engine_on(db_url, EveryPointJudge())
    script = iter(["/quit"])
    screen = io.StringIO()
    chat = TerminalChat(engine, Learner(screen, lambda shown: next(script)), screen, user="ada",
                        timezone="Europe/Berlin")
    await chat.run()
    out = screen.getvalue()
    assert "This machine's time zone is Europe/Berlin" in out
    assert "Europe/Berlin" in out.split("Keep these settings")[0]


def test_the_machine_time_zone_comes_from_tz_or_localtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert machine_timezone() == "Asia/Tokyo"
    monkeypatch.setenv("TZ", ":America/Lima")
    assert machine_timezone() == "America/Lima"
    monkeypatch.setenv("TZ", "Not/AZone")
    found = machine_timezone()  # falls back to /etc/localtime's link (or None without one)
    assert found != "Not/AZone"


UNRENDERED = re.compile(r"\$[^$\s][^$]*\$|\\[A-Za-z]{2,}")


def test_no_card_leaves_latex_unrendered_in_the_terminal() -> None:
    for card in default_deck().cards:
        for text in (
            texts.question_text(card, repeat=False, due_label=""),
            texts.explanation_text(card),
            texts.key_text(card),
        ):
            shown = to_terminal(text, color=False)
            assert not UNRENDERED.search(shown), (card.id, UNRENDERED.search(shown).group(0))


async def test_without_a_terminal_a_tick_prints_only_the_changed_lines(db_url: str) -> None:
    deck = default_deck()
    engine = engine_on(db_url, EveryPointJudge())
    card = deck.cards[0]
    script = iter(["/trap", EveryPointJudge.answer(card), "1", "/quit"])
    screen = io.StringIO()
    marks: dict[str, int] = {}

    def decide(shown: str) -> str:
        line = next(script)
        marks[line] = len(screen.getvalue())
        return line

    await TerminalChat(engine, Learner(screen, decide), screen, user="ada", timezone="UTC").run()
    printed = [line for line in screen.getvalue()[marks["1"] : marks["/quit"]].split("\n") if line.strip("> ")]
    assert len(printed) == 3, printed  # the ticked point, the grade it gives, the buttons
    assert printed[0].startswith("1. ") and "grades" in printed[1] and "[c] Confirm" in printed[2]
