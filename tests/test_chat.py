"""A whole session through the terminal chat's real entry point, on a real SQLite file."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def chat(tmp_path: Path, lines: list[str]) -> str:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'chat.db'}",
        "TRAPBOT_JUDGE": "self",
        "TRAPBOT_PLOTS": "false",
        "TELEGRAM_BOT_TOKEN": "",
        "DISCORD_BOT_TOKEN": "",
        "USER": "ada",
        "LOGNAME": "ada",
    }
    env.pop("TELEGRAM_BOT_TOKEN")
    env.pop("DISCORD_BOT_TOKEN")
    result = subprocess.run(
        [str(Path(sys.executable).parent / "trapbot"), "run"],  # the installed console script
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,  # no .env from the repo
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_whole_session(tmp_path: Path) -> None:
    out = chat(
        tmp_path,
        [
            "k",  # keep the default settings (the same key on every screen)
            "/trap",
            "Because the agent's actions change its own input distribution, errors compound.",
            "4",  # self-grade
            "/stats",
            "/quit",
        ],
    )
    assert "trapbot drills the traps" in out
    assert "Give me a trap now" in out
    assert "rl-01" in out  # the first trap of the deck
    assert "The mechanism key" in out
    assert "Grade 4/5" in out
    assert re.search(r"next review tomorrow \(\w{3} \d{2} \w{3}\)", out)
    assert "Reviews done: 1" in out
    with sqlite3.connect(tmp_path / "chat.db") as connection:
        rows = connection.execute("SELECT card_id, status, quality, grader FROM review").fetchall()
    assert rows == [("rl-01", "graded", 4, "self")]

    # A second run resumes: the trap is not due, so nothing is asked twice.
    again = chat(tmp_path, ["/trap", "/quit"])
    assert "Nothing due right now" in again


def test_bad_input_in_the_chat(tmp_path: Path) -> None:
    out = chat(tmp_path, ["/nonsense", "an answer with no trap open", "/trap", "   ", "x" * 20_000, "/hint", "/skip", "/undo", "/quit"])
    assert "I don't know /nonsense" in out
    assert "no open trap" in out
    assert "That answer is empty" in out
    assert "the limit is 8,000" in out
    assert "💡" in out
    assert "Skipped" in out
    assert "no grade to take back" in out
