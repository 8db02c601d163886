"""Kill a sweep process at a random moment, restart after the lease, and count what the
learners got: nobody may be missed; a learner is pushed twice only when the kill fell
between the platform accepting a push and its record committing.

Run: .venv/bin/python bench/push_kill_bench.py [--trials 20] [--learners 150] [--send-ms 30] [--accept-at 0.5]

Each trial: ``--learners`` due on PostgreSQL, one sweep process paced at 25/s with a
platform whose send takes ``--send-ms``: the message reaches the platform and is accepted
``--accept-at`` of the way through (the learner is noted in a file at that moment, which is
when they see it), and the answer arrives at the end. SIGKILL at a uniformly random time
inside the sweep, then a second process six minutes later on the fake clock (after the
claims' lease) finishes the day. The duplicate window is measured from the platform's
acceptance to the record's commit (each record notes its commit in the file too).
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


def worker(url: str, out: str, at: str, send_ms: float, accept_at: float) -> None:
    from push_common import constant_pushes

    from bot.clock import FixedClock
    from bot.db import make_engine
    from bot.engine import QuizEngine
    from bot.reminders import ReminderSweeper
    from cards.deck import default_deck
    from grader.selfgrade import SelfGrader

    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT)  # one write a line: survives the kill whole

    class AcceptingPlatform:
        platform = "telegram"

        async def push(self, learner, replies) -> PushOutcome:
            await asyncio.sleep(send_ms * accept_at / 1000)  # the request on its way
            os.write(fd, f"accept {learner.id} {time.time():.6f}\n".encode())  # the learner has the message
            await asyncio.sleep(send_ms * (1 - accept_at) / 1000)  # the answer on its way back
            return PushOutcome.SENT

    class NotingSweeper(ReminderSweeper):
        def still_claimed(self, claims) -> list[bool]:
            held = super().still_claimed(claims)
            stamp = time.time()  # a /forget committed after this read is not seen by this push
            os.write(fd, "".join(f"check {c.learner.id} {stamp:.6f}\n" for c in claims).encode())
            return held

        def record_many(self, outcomes) -> None:
            super().record_many(outcomes)
            stamp = time.time()
            os.write(fd, "".join(f"commit {o[0].learner.id} {stamp:.6f}\n" for o in outcomes).encode())

    engine = QuizEngine(make_engine(url), default_deck(), SelfGrader(), FixedClock(datetime.fromisoformat(at)))
    constant_pushes(engine)
    print("ready", flush=True)
    asyncio.run(NotingSweeper(engine, {"telegram": AcceptingPlatform()}, rates={"telegram": 25.0}, sweep_seconds=3600).sweep())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--learners", type=int, default=150)
    parser.add_argument("--send-ms", type=float, default=30.0)
    parser.add_argument("--accept-at", type=float, default=0.5, help="share of the send before the platform accepts")
    parser.add_argument("--worker", nargs=5)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.worker[2], float(args.worker[3]), float(args.worker[4]))
        return
    rng = random.Random(0)
    doubled_trials = missed_total = doubled_total = 0
    windows: list[float] = []
    forget_windows: list[float] = []  # last check read -> platform accepted: a /forget in between is not seen
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(args.trials):
            out = Path(tmp) / f"pushed-{trial}.txt"
            with pg_schema() as url:
                load_learners(url, args.learners, MOMENT, moment=MOMENT, moment_count=args.learners)
                first = subprocess.Popen([sys.executable, __file__, "--worker", url, str(out), MOMENT.isoformat(), str(args.send_ms),
                                          str(args.accept_at)], stdout=subprocess.PIPE, text=True)
                first.stdout.readline()  # imports done
                time.sleep(rng.uniform(0.5, args.learners / 25.0 - 0.5))
                os.kill(first.pid, signal.SIGKILL)
                first.wait()
                killed_after = sum(1 for line in out.read_text().splitlines() if line.startswith("accept")) if out.exists() else 0
                later = (MOMENT + timedelta(minutes=6)).isoformat()
                subprocess.run([sys.executable, __file__, "--worker", url, str(out), later, str(args.send_ms), str(args.accept_at)],
                               check=True, stdout=subprocess.DEVNULL)
            lines = [line.split() for line in out.read_text().splitlines()]
            counts = Counter(who for kind, who, _ in lines if kind == "accept")
            accepted_at: dict[str, float] = {}
            checked_at: dict[str, float] = {}
            for kind, who, stamp in lines:
                if kind == "check":
                    checked_at[who] = float(stamp)
                elif kind == "accept":
                    accepted_at[who] = float(stamp)
                    if who in checked_at:
                        forget_windows.append(float(stamp) - checked_at.pop(who))
                elif who in accepted_at:
                    windows.append(float(stamp) - accepted_at.pop(who))
            missed = args.learners - len(counts)
            doubled = sum(1 for n in counts.values() if n > 1)
            missed_total += missed
            doubled_total += doubled
            doubled_trials += doubled > 0
            print(f"trial {trial + 1}: killed after {killed_after} pushes; missed {missed}, pushed twice {doubled}", flush=True)
    print(f"{args.trials} kills at random moments, {args.send_ms:g} ms sends at 25/s accepted {args.accept_at:.0%} of the way "
          f"through: trials with a learner pushed twice {doubled_trials}, learners pushed twice {doubled_total}, "
          f"learners missed {missed_total}", flush=True)
    if windows:
        median = _percentiles(windows)[0]
        print(f"duplicate window (platform accepted -> record committed), {_spread(windows)}; at 25/s that is "
              f"{median * 25 / 1000:.0%} of the time between two sends", flush=True)
    if forget_windows:
        print(f"from the last check of the claim to the platform accepting (a /forget in between still gets the push), "
              f"{_spread(forget_windows)}", flush=True)


def _percentiles(seconds: list[float]) -> tuple[float, float, float, float]:
    """Median, p90, p99 and max of ``seconds``, in milliseconds."""
    ordered = sorted(seconds)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000
    return pick(0.5), pick(0.9), pick(0.99), ordered[-1] * 1000


def _spread(seconds: list[float]) -> str:
    median, p90, p99, worst = _percentiles(seconds)
    return f"{len(seconds):,} pushes: median {median:.1f} ms, p90 {p90:.1f} ms, p99 {p99:.1f} ms, max {worst:.1f} ms"


if __name__ == "__main__":
    main()
