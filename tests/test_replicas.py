"""Correctness across replicas beyond pushes: learner locks and recovery of pending answers."""

from __future__ import annotations

import asyncio
import gc
import io
from datetime import UTC, datetime

import pytest
from sqlmodel import Session, select

from bot.app import recover_pending
from bot.clock import FixedClock
from bot.engine import QuizEngine
from bot.locks import LearnerLocks
from bot.models import Learner, Review, ReviewStatus
from bot.replies import Reply
from bot.terminal import TerminalChat
from bot.transport import PushOutcome
from grader.selfgrade import SelfGrader


def pending_answer(engine: QuizEngine, learner: Learner) -> int:
    with Session(engine.db) as session:
        review = Review(learner_id=learner.id, card_id="rl-91", answer="the proxy is exploited", created_at=engine.clock.now())
        session.add(review)
        session.commit()
        return review.id  # type: ignore[return-value]


def status_of(engine: QuizEngine, review_id: int) -> str:
    with Session(engine.db) as session:
        return session.exec(select(Review.status).where(Review.id == review_id)).one()


async def test_unused_learner_locks_are_freed(db) -> None:
    locks = LearnerLocks(db)
    for learner_id in range(1000):
        async with locks[learner_id]:
            pass
    gc.collect()
    assert len(locks) == 0
    order = []

    async def hold(tag: str) -> None:
        async with locks[7]:
            order.append(f"{tag} in")
            await asyncio.sleep(0.01)
            order.append(f"{tag} out")

    await asyncio.gather(hold("a"), hold("b"))
    assert order == ["a in", "a out", "b in", "b out"]  # still mutual exclusion while in use
    locks.dispose()


async def hold(
    locks: LearnerLocks, learner: int, inside: asyncio.Event, release: asyncio.Event, order: list
) -> None:
    """Hold ``learner``'s lock from ``inside`` until ``release``, noting both in ``order``."""
    async with locks[learner]:
        order.append("one in")
        inside.set()
        await release.wait()
        order.append("one out")


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_two_replicas_never_hold_one_learner_at_once(db) -> None:
    """Two engines stand for two processes: their in-process locks are separate, so only the
    PostgreSQL advisory lock keeps them apart."""
    one, two = LearnerLocks(db), LearnerLocks(db)
    inside = asyncio.Event()
    release = asyncio.Event()
    order = []


    async def second() -> None:
        await inside.wait()
        async with two[42]:
            order.append("two in")
        async with two[43]:  # another learner is not held up
            order.append("two other")

    task_one = asyncio.create_task(hold(one, 42, inside, release, order))
    task_two = asyncio.create_task(second())
    await inside.wait()
    await asyncio.sleep(0.2)
    assert order == ["one in"]  # replica two waits
    release.set()
    await asyncio.gather(task_one, task_two)
    assert order == ["one in", "one out", "two in", "two other"]
    one.dispose()
    two.dispose()



@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_work_run_under_a_learner_lock_waits_for_another_replica(db) -> None:
    """``LearnerLocks.run`` (lock, work and commit in one transaction, one worker-thread call)
    excludes the same learner as ``locks[id]`` of another replica, runs at once for another
    learner, and gives the lock back when its transaction ends, committed or rolled back."""
    one, two = LearnerLocks(db), LearnerLocks(db)
    inside, release = asyncio.Event(), asyncio.Event()
    order = []


    task = asyncio.create_task(hold(one, 42, inside, release, order))
    await inside.wait()
    assert await two.run(43, lambda bind: "other") == "other"  # another learner is not held up
    waiting = asyncio.create_task(two.run(42, lambda bind: order.append("two ran")))
    await asyncio.sleep(0.2)
    assert order == ["one in"]  # replica two waits for the advisory lock
    release.set()
    await asyncio.gather(task, waiting)
    assert order == ["one in", "one out", "two ran"]
    async with one[42]:  # and gave it back
        order.append("one again")
    with pytest.raises(ZeroDivisionError):
        await two.run(42, lambda bind: 1 / 0)
    async with one[42]:  # given back after an error too
        order.append("one after the error")
    assert order[-2:] == ["one again", "one after the error"]
    one.dispose()
    two.dispose()


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_a_learner_held_by_run_waits_for_its_transaction(db) -> None:
    """The other way round: while ``run``'s work is in its transaction, another replica's
    ``locks[id]`` waits, and takes the lock once that transaction has committed."""
    import threading

    one, two = LearnerLocks(db), LearnerLocks(db)
    started, finish = threading.Event(), threading.Event()
    order = []

    def work(bind) -> str:
        assert bind is not None and bind.in_transaction()  # the lock lives in this transaction
        started.set()
        finish.wait(5)
        order.append("run done")
        return "ok"

    running = asyncio.create_task(one.run(42, work))
    await asyncio.to_thread(started.wait, 5)

    async def other() -> None:
        async with two[42]:
            order.append("two in")

    waiting = asyncio.create_task(other())
    await asyncio.sleep(0.2)
    assert order == []  # replica two waits for the transaction
    finish.set()
    assert await running == "ok"
    await waiting
    assert order == ["run done", "two in"]
    one.dispose()
    two.dispose()


async def test_a_push_chooses_and_opens_its_trap_in_one_transaction(db, small_deck, clock: FixedClock) -> None:
    """The push's database work (trap chosen, card opened, follow-ups closed, wording recorded)
    commits once, where it took four sessions and four commits before."""
    import sqlalchemy as sa

    engine = QuizEngine(db, small_deck, SelfGrader(), clock)
    learner = engine.learner("telegram", "ada", chat_id="ada")
    commits = []

    def committed(connection) -> None:
        commits.append(connection)

    sa.event.listen(db, "commit", committed)
    try:
        replies = await engine.push_replies(learner.id)  # type: ignore[arg-type]
    finally:
        sa.event.remove(db, "commit", committed)
    assert replies[-1].card_id == "rl-91" and len(commits) == 1
    opened = engine.get_learner(learner.id)  # type: ignore[arg-type]
    assert opened is not None and opened.current_card_id == "rl-91" and opened.current_asked_at == clock.now()
    again = await engine.push_replies(learner.id)  # type: ignore[arg-type]
    assert again[-1].card_id == "rl-91" and again[-1].wording == replies[-1].wording  # the open showing keeps its wording

class Platform:
    def __init__(self, platform: str):
        self.platform = platform
        self.pushed: list[tuple[str, list[Reply]]] = []

    async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
        self.pushed.append((learner.platform_user_id, replies))
        return PushOutcome.SENT


async def test_recovery_delivers_through_the_platform_that_took_the_answer(db, small_deck, clock: FixedClock) -> None:
    engine = QuizEngine(db, small_deck, SelfGrader(), clock, interactive=False)
    telegram_review = pending_answer(engine, engine.learner("telegram", "tg"))
    discord_review = pending_answer(engine, engine.learner("discord", "dc"))
    terminal = engine.learner("terminal", "ada")
    terminal_review = pending_answer(engine, terminal)

    # The terminal chat recovers its own learner's answer and nobody else's.
    out = io.StringIO()
    await TerminalChat(engine, io.StringIO("/quit\n"), out, user="ada").run()
    assert "graded after a restart" in out.getvalue()
    assert status_of(engine, terminal_review) != ReviewStatus.PENDING
    assert status_of(engine, telegram_review) == status_of(engine, discord_review) == ReviewStatus.PENDING

    # A Telegram-only replica recovers the Telegram answer and delivers it on Telegram.
    telegram = Platform("telegram")
    await recover_pending(engine, {"telegram": telegram})
    assert [user for user, _ in telegram.pushed] == ["tg"]
    assert "graded after a restart" in telegram.pushed[0][1][0].text
    assert status_of(engine, telegram_review) != ReviewStatus.PENDING
    assert status_of(engine, discord_review) == ReviewStatus.PENDING  # left to the Discord process


async def test_recovery_skips_an_answer_another_replica_already_took(db, small_deck, clock: FixedClock) -> None:
    engine = QuizEngine(db, small_deck, SelfGrader(), clock, interactive=False)
    review_id = pending_answer(engine, engine.learner("telegram", "tg"))
    other = QuizEngine(db, small_deck, SelfGrader(), clock, interactive=False)
    first, second = await asyncio.gather(
        engine.recover_pending(platforms=("telegram",)), other.recover_pending(platforms=("telegram",))
    )
    assert len(first) + len(second) == 1
    assert status_of(engine, review_id) != ReviewStatus.PENDING


class HangingJudge:
    """A judge that never answers, like an unreachable LLM endpoint."""

    name = "hanging"

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def assess(self, card, answer: str, *, interactive: bool):
        self.started.set()
        await asyncio.Event().wait()


async def test_serve_does_not_wait_for_recovery(tmp_path, small_deck, monkeypatch) -> None:
    """A dead judge used to hold up start by pending answers x timeout: recovery now runs in
    the background while the platforms and the sweep are already serving."""
    import bot.app
    import bot.reminders
    from bot.clock import SystemClock
    from bot.config import Settings
    from bot.db import make_engine, migrate

    url = f"sqlite:///{tmp_path / 'serve.db'}"
    migrate(url)
    judge = HangingJudge()
    engine = QuizEngine(make_engine(url), small_deck, judge, SystemClock(), interactive=False)
    pending_answer(engine, engine.learner("telegram", "tg"))

    class Serving(Platform):
        async def start(self) -> None: ...

        async def stop(self) -> None: ...

    sweeping = asyncio.Event()

    class Reminders:
        async def stop(self) -> None: ...

    async def start_reminders(settings, engine, transports):
        sweeping.set()
        return Reminders()

    monkeypatch.setattr(bot.app, "build_engine", lambda settings: engine)
    monkeypatch.setattr(bot.app, "build_transports", lambda settings, engine: [Serving("telegram")])
    monkeypatch.setattr(bot.reminders, "start_reminders", start_reminders)
    stop = asyncio.Event()
    serving = asyncio.create_task(bot.app.serve(Settings(database_url=url, trapbot_plots=False), stop))
    await asyncio.wait_for(sweeping.wait(), 30)
    await asyncio.wait_for(judge.started.wait(), 30)  # the recovery is grading, in the background
    assert gc.get_freeze_count() > 0  # start-up's objects are out of the collector's reach
    stop.set()
    await asyncio.wait_for(serving, 30)
    gc.unfreeze()


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_a_page_of_pushes_leaves_out_a_learner_another_replica_holds(db, small_deck) -> None:
    """The page's batch tries every learner's advisory lock once and never waits: a learner
    held by another replica (answering there) is left out, the rest are asked together."""
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    engine = QuizEngine(db, small_deck, SelfGrader(), clock)
    ids = [engine.learner("telegram", f"u{i}").id for i in range(3)]
    other_replica = LearnerLocks(db)
    async with other_replica[ids[1]]:
        page = await engine.push_replies_many(ids)  # type: ignore[arg-type]
    assert sorted(page) == [ids[0], ids[2]] and all(page.values())
    assert await engine.push_replies(ids[1])  # free again: asked alone
    other_replica.dispose()
