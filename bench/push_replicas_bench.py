"""Several sweep processes on one PostgreSQL: do they split a push moment, and do they stay
under the shared send limit together?

Run: .venv/bin/python bench/push_replicas_bench.py [--learners 20000] [--processes 2 3 4]
     [--paced-learners 1500] [--rate 100]

Phase 1: ``--learners`` learners due at one moment; N processes sweep at once (no-op platform,
no pacing). Reported per N: rows each process claimed, rows claimed by more than one process,
push-log claims lost to another process (contended), learners pushed twice, wall time.
Phase 2: ``--paced-learners`` due, the Telegram limit set to ``--rate``/s for everyone
(PushPace); reported: the highest number of sends in any one-second window across all
processes together, and the overall rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from push_common import constant_pushes, fast_commits, load_learners, pg_schema

from bot.transport import PushOutcome

MOMENT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class FilePlatform:
    platform = "telegram"

    def __init__(self, out: str):
        self.handle = open(out, "a", buffering=1)  # noqa: SIM115

    async def push(self, learner, replies) -> PushOutcome:
        self.handle.write(f"{learner.id} {time.time():.4f}\n")
        return PushOutcome.SENT


def worker(url: str, out: str, rate: float) -> None:
    from bot.clock import FixedClock
    from bot.db import make_engine
    from bot.engine import QuizEngine
    from bot.reminders import ReminderSweeper
    from cards.deck import default_deck
    from grader.selfgrade import SelfGrader

    db = make_engine(url)
    fast_commits(db)
    engine = QuizEngine(db, default_deck(), SelfGrader(), FixedClock(MOMENT))
    constant_pushes(engine)
    sweeper = ReminderSweeper(engine, {"telegram": FilePlatform(out)}, rates={"telegram": rate}, sweep_seconds=3600)
    report = asyncio.run(sweeper.sweep())
    print(json.dumps({"due": report.due, "sent": report.sent, "contended": report.contended, "changed": report.not_claimed}))


def run(url: str, processes: int, rate: float, tmp: Path) -> tuple[list[dict], list[tuple[int, float]], float]:
    outs = [tmp / f"out-{processes}-{rate:g}-{i}.txt" for i in range(processes)]
    started = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, __file__, "--worker", url, str(out), str(rate)], stdout=subprocess.PIPE, text=True)
        for out in outs
    ]
    reports = [json.loads(proc.communicate(timeout=3600)[0]) for proc in procs]
    elapsed = time.perf_counter() - started
    sends = []
    for out in outs:
        for line in out.read_text().split("\n"):
            if line:
                learner, at = line.split()
                sends.append((int(learner), float(at)))
    return reports, sends, elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=20_000)
    parser.add_argument("--processes", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--paced-learners", type=int, default=1_500)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--paced-only", action="store_true")
    parser.add_argument("--worker", nargs=3)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], float(args.worker[2]))
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for n in [] if args.paced_only else args.processes:
            with pg_schema() as url:
                load_learners(url, args.learners, MOMENT, moment=MOMENT, moment_count=args.learners)
                reports, sends, elapsed = run(url, n, 1e9, tmp)
            claimed = [r["due"] for r in reports]
            pushed = Counter(learner for learner, _ in sends)
            contended = sum(r["contended"] for r in reports)
            print(f"{n} processes, {args.learners:,} due at one moment: rows claimed per process {claimed} "
                  f"(sum {sum(claimed):,}: {sum(claimed) - args.learners:,} rows claimed twice); "
                  f"push-log claims contended {contended} ({contended / max(1, sum(claimed)):.1%}); "
                  f"pushed {len(pushed):,}, twice {sum(1 for c in pushed.values() if c > 1)}; {elapsed:.1f} s "
                  f"({len(sends) / elapsed:.0f} pushes/s together)", flush=True)
        for n in args.processes:
            with pg_schema() as url:
                load_learners(url, args.paced_learners, MOMENT, moment=MOMENT, moment_count=args.paced_learners)
                reports, sends, elapsed = run(url, n, args.rate, tmp)
            times = sorted(at for _, at in sends)
            window, peak, low = 1.0, 0, 0
            for high, at in enumerate(times):
                while times[low] <= at - window:
                    low += 1
                peak = max(peak, high - low + 1)
            span = times[-1] - times[0]
            print(f"{n} processes sharing {args.rate:g}/s: {len(sends):,} sends, most in any 1 s window {peak}, "
                  f"overall {(len(sends) - 1) / span:.1f}/s; per process {[r['sent'] for r in reports]}", flush=True)


if __name__ == "__main__":
    main()
