"""The engine's submit-grade-schedule round trip on a SQLite file.

Self-grading (submit, then rate 0-5) measures the engine and storage alone; the offline
judge, when installed, adds its grading time. Run: .venv/bin/python bench/engine_roundtrip.py
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime

from bot.actions import Action, Verb
from bot.clock import FixedClock
from bot.db import make_engine, migrate
from bot.engine import QuizEngine
from cards.deck import default_deck
from grader.selfgrade import SelfGrader


async def self_graded(engine: QuizEngine, learner_id: int) -> None:
    [confirm] = await engine.submit_answer(learner_id, "The proxy reward is not the goal; KL keeps it in distribution.")
    await engine.act(learner_id, Action(Verb.RATE, confirm.review_id, "4").encode())


async def judged(engine: QuizEngine, learner_id: int) -> None:
    await engine.submit_answer(learner_id, "The proxy reward is not the goal; KL keeps it in distribution.")


async def measure(grader, step, rounds: int, interactive: bool) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        migrate(url)
        clock = FixedClock(datetime(2026, 3, 2, 8, tzinfo=UTC))
        engine = QuizEngine(make_engine(url), default_deck(), grader, clock, interactive=interactive)
        times = []
        for i in range(rounds):
            learner = engine.learner("bench", str(i))
            await engine.next_trap(learner.id)
            start = time.perf_counter()
            await step(engine, learner.id)
            times.append(time.perf_counter() - start)
        engine.db.dispose()
        return times


def report(name: str, times: list[float]) -> None:
    ms = sorted(t * 1000 for t in times)
    print(f"{name}: median {statistics.median(ms):.2f} ms, p90 {ms[int(0.9 * len(ms))]:.2f} ms, n={len(ms)}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    report("submit + self-grade + schedule (SQLite)", await measure(SelfGrader(), self_graded, args.rounds, True))
    try:
        from grader.offline import OfflineJudge
    except ImportError:
        print("offline judge not installed; skipped")
        return
    judge = OfflineJudge()
    await judge.warm()
    report("submit + offline judge + schedule (SQLite)", await measure(judge, judged, args.rounds, False))


if __name__ == "__main__":
    asyncio.run(main())
