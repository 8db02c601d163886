"""Kill a sweep process at a random moment, restart after the lease, and count what the
learners got: nobody may be missed; a learner is pushed twice only when the kill fell
between the platform accepting a push and its record committing.

Run: .venv/bin/python bench/push_kill_bench.py [--trials 20] [--learners 150] [--send-ms 30]

Each trial: ``--learners`` due on PostgreSQL, one sweep process paced at 25/s with a
platform that takes ``--send-ms`` and then accepts (appends the learner to a file), SIGKILL
at a uniformly random time inside the sweep, then a second process six minutes later on the
fake clock (after the claims' lease) finishes the day.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from push_common import load_learners, pg_schema

from bot.transport import PushOutcome

MOMENT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def worker(url: str, out: str, at: str, send_ms: float) -> None:
    from push_common import constant_pushes

    from bot.clock import FixedClock
    from bot.db import make_engine
    from bot.engine import QuizEngine
    from bot.reminders import ReminderSweeper
    from cards.deck import default_deck
    from grader.selfgrade import SelfGrader

    class AcceptingPlatform:
        platform = "telegram"

        async def push(self, learner, replies) -> PushOutcome:
            await asyncio.sleep(send_ms / 1000)
            with open(out, "a") as handle:  # noqa: ASYNC230 - the platform has accepted the message
                handle.write(f"{learner.id}\n")
            return PushOutcome.SENT

    engine = QuizEngine(make_engine(url), default_deck(), SelfGrader(), FixedClock(datetime.fromisoformat(at)))
    constant_pushes(engine)
    print("ready", flush=True)
    asyncio.run(ReminderSweeper(engine, {"telegram": AcceptingPlatform()}, rates={"telegram": 25.0}, sweep_seconds=3600).sweep())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--learners", type=int, default=150)
    parser.add_argument("--send-ms", type=float, default=30.0)
    parser.add_argument("--worker", nargs=4)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.worker[2], float(args.worker[3]))
        return
    rng = random.Random(0)
    doubled_trials = missed_total = doubled_total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(args.trials):
            out = Path(tmp) / f"pushed-{trial}.txt"
            with pg_schema() as url:
                load_learners(url, args.learners, MOMENT, moment=MOMENT, moment_count=args.learners)
                first = subprocess.Popen([sys.executable, __file__, "--worker", url, str(out), MOMENT.isoformat(), str(args.send_ms)],
                                         stdout=subprocess.PIPE, text=True)
                first.stdout.readline()  # imports done
                time.sleep(rng.uniform(0.5, args.learners / 25.0 - 0.5))
                os.kill(first.pid, signal.SIGKILL)
                first.wait()
                killed_after = len(out.read_text().split()) if out.exists() else 0
                later = (MOMENT + timedelta(minutes=6)).isoformat()
                subprocess.run([sys.executable, __file__, "--worker", url, str(out), later, str(args.send_ms)],
                               check=True, stdout=subprocess.DEVNULL)
            counts = Counter(out.read_text().split())
            missed = args.learners - len(counts)
            doubled = sum(1 for n in counts.values() if n > 1)
            missed_total += missed
            doubled_total += doubled
            doubled_trials += doubled > 0
            print(f"trial {trial + 1}: killed after {killed_after} pushes; missed {missed}, pushed twice {doubled}", flush=True)
    print(f"{args.trials} kills at random moments, {args.send_ms:g} ms sends at 25/s: trials with a learner pushed twice "
          f"{doubled_trials}, learners pushed twice {doubled_total}, learners missed {missed_total}", flush=True)


if __name__ == "__main__":
    main()
