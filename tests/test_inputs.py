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


INVISIBLE_OR_EMOJI = [
    "\u200b\u200b\u200b",  # zero-width spaces (refused before too)
    "\u200d\u200d\u200d\u200c",  # zero-width joiners
    "\u0301" * 50,  # combining accents with nothing to sit on
    "\U0001F916\U0001F916\U0001F916",  # three robot emoji
    "\U0001F469\u200d\U0001F4BB \u2728 !?",  # emoji joined by ZWJ, a sparkle, punctuation
]


async def test_invisible_or_emoji_only_answers_are_refused_and_store_nothing(db, small_deck, clock: FixedClock) -> None:
    from sqlmodel import Session, select

    from bot.answers import EMPTY_ANSWER
    from bot.models import CardState, Review

    engine = QuizEngine(db, small_deck, SelfGrader(), clock)
    learner = engine.learner("telegram", "ada")
    await engine.next_trap(learner.id)
    for text in INVISIBLE_OR_EMOJI:
        [reply] = await engine.submit_answer(learner.id, text)
        assert reply.kind is ReplyKind.ERROR and reply.text == EMPTY_ANSWER, text
    with Session(db) as session:
        assert session.exec(select(Review)).all() == []
        [state] = session.exec(select(CardState)).all()
        assert state.last_reviewed_on is None
    assert engine.get_learner(learner.id).current_card_id == "rl-91"  # still open to answer
    [confirm] = await engine.submit_answer(learner.id, "KL")  # two letters are an answer
    assert confirm.kind is ReplyKind.CONFIRM


async def test_i_dont_know_is_graded_zero_without_the_trap_or_a_judge(db, small_deck, clock: FixedClock) -> None:
    from tests.test_engine import KeywordJudge

    judge = KeywordJudge()
    engine = QuizEngine(db, small_deck, judge, clock)
    learner = engine.learner("telegram", "ada")
    for text in ("I don't know", "idk", "No idea, sorry", "I don\u2019t remember."):
        clock.advance(minutes=10)
        await engine.next_trap(learner.id)
        replies = await engine.submit_answer(learner.id, text)
        verdict = replies[0]
        assert verdict.kind is ReplyKind.VERDICT and "Grade 0/5" in verdict.text, text
        assert "you said you don't know" in verdict.text and "trap" not in verdict.text.lower()
        assert "**Why**" in verdict.text
    assert judge.calls == 0
    clock.advance(minutes=10)
    [confirm_free] = await engine.next_trap(learner.id)
    graded = await engine.submit_answer(learner.id, "I don't know why the proxy reward fails")  # an attempt
    assert judge.calls == 1 and "you said you don't know" not in graded[0].text
    assert confirm_free.kind is ReplyKind.QUESTION


async def test_disagreeing_reads_as_a_sentence(db, small_deck, clock: FixedClock) -> None:
    from bot.actions import Verb
    from tests.test_engine import answer_and_rate, button

    engine = QuizEngine(db, small_deck, SelfGrader(), clock)
    learner = engine.learner("telegram", "ada")
    await engine.next_trap(learner.id)
    verdict = await answer_and_rate(engine, learner.id, 0)
    [ask] = await engine.act(learner.id, button(verdict, Verb.DISAGREE))
    [noted] = await engine.act(learner.id, button(ask, Verb.OVERRIDE, "2"))
    assert noted.text == "Noted: **2/5** is your grade. It comes back in 10 minutes, after what else is due."
    [ask] = await engine.act(learner.id, button(verdict, Verb.DISAGREE))
    [noted] = await engine.act(learner.id, button(ask, Verb.OVERRIDE, "5"))
    assert noted.text.startswith("Noted: **5/5** is your grade. Next review tomorrow (")
