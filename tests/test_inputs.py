"""Inputs that used to crash: Unicode digits in button data, invalid UTF-8 in the terminal chat."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from bot.clock import FixedClock
from bot.engine import QuizEngine
from bot.replies import ReplyKind
from grader.selfgrade import SelfGrader


async def test_unicode_digits_in_button_data_get_a_clear_message(db, small_deck, clock: FixedClock) -> None:
    engine = QuizEngine(db, small_deck, SelfGrader(), clock)
    learner = engine.learner("telegram", "ada")
    for data in ("t1:ovr:²:12", "t1:ovr:1:²", "t1:rate:١:5", "t1:snz:-:³"):
        [reply] = await engine.act(learner.id, data)
        assert reply.kind is ReplyKind.ERROR
        assert "not one of mine" in reply.text or "no longer applies" in reply.text


def test_invalid_utf8_in_the_chat_keeps_the_line(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN")}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'chat.db'}", TRAPBOT_JUDGE="self", TRAPBOT_PLOTS="false",
               USER="ada", LOGNAME="ada", PYTHONIOENCODING="utf-8")
    answer = b"the proxy \xff\xfe reward is exploited once the KL leash is gone"
    result = subprocess.run(
        [str(Path(sys.executable).parent / "trapbot"), "chat"],
        input=b"/trap\n" + answer + b"\n/quit\n",
        capture_output=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert b"The mechanism key" in result.stdout  # the answer was taken and graded
    with sqlite3.connect(tmp_path / "chat.db") as connection:
        [(stored,)] = connection.execute("SELECT answer FROM review").fetchall()
    assert stored == "the proxy \ufffd\ufffd reward is exploited once the KL leash is gone"
