"""How long the event loop is blocked during a busy push sweep on PostgreSQL.

Run: .venv/bin/python bench/push_loop_bench.py [--learners 3000] [--seconds 60] [--rate 25 --discord-rate 5] [--delay 0.02]

A probe task sleeps 10 ms at a time and records how late it wakes; meanwhile one sweep
pushes due learners through the real engine (the trap chosen and stored for each push) to
no-op Telegram and Discord platforms whose sends take ``--delay`` seconds. Reported: the
share of the window the loop was blocked (the sum of wake-up delays), the longest single
delay, and the same probe on an idle loop for comparison (timer granularity); the same share
seen by events arriving from outside (``arrival_probe``, as a Telegram update arrives); the loop's own
busy time (every callback timed), which leaves out waits for a CPU or the GIL; and the time
from each send's answer to its record's commit (the window in which a crash repeats a push).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Self

sys.path.insert(0, str(Path(__file__).resolve().parent))
from push_common import NoopPlatform, load_learners, pg_schema

from bot.app import freeze_heap
from bot.clock import FixedClock
from bot.db import make_engine
from bot.engine import QuizEngine
from bot.reminders import ReminderSweeper
from cards.deck import default_deck
from grader.selfgrade import SelfGrader

MOMENT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TICK = 0.010


class CallbackTimer:
    """Times every callback the loop runs (asyncio.Handle._run): the loop's own busy time,
    apart from waits for the CPU or the GIL that the probe also counts."""

    def __init__(self) -> None:
        self.durations: list[float] = []
        self.slow: list[tuple[float, str]] = []  # callbacks over 10 ms: what held the loop
        self.original = asyncio.events.Handle._run
        timer = self

        def timed(handle: asyncio.Handle) -> None:
            began = time.perf_counter()
            try:
                timer.original(handle)
            finally:
                took = time.perf_counter() - began
                timer.durations.append(took)
                if took > 0.010:
                    timer.slow.append((took, repr(handle)[:160]))

        self.timed = timed

    def __enter__(self) -> Self:
        asyncio.events.Handle._run = self.timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.events.Handle._run = self.original  # type: ignore[method-assign]


def arrival_probe(loop: asyncio.AbstractEventLoop, stop: threading.Event, lags: list[float]) -> None:
    """An event arriving from outside every 10 ms, as a Telegram update does: a thread wakes
    at each moment and hands the loop a callback; the lag is from that moment to the callback
    running. Unlike the sleeping probe it carries no timer rounding (epoll waits in whole
    milliseconds, so a 10 ms sleep wakes up to 1 ms late on an idle loop), but it does count
    the thread's own wake-up and any wait for the GIL a worker thread holds."""
    handled = threading.Event()

    def arrived(moment: float) -> None:
        lags.append(time.perf_counter() - moment)
        handled.set()

    while not stop.is_set():
        moment = time.perf_counter() + TICK
        time.sleep(TICK)
        handled.clear()
        loop.call_soon_threadsafe(arrived, moment)
        handled.wait()


async def probe(stop: asyncio.Event, lags: list[float]) -> None:
    while not stop.is_set():
        before = time.perf_counter()
        await asyncio.sleep(TICK)
        lags.append(max(0.0, time.perf_counter() - before - TICK))


def machine_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


def summary(name: str, lags: list[float], seconds: float, extra: str = "") -> None:
    ordered = sorted(lags)
    print(f"{name}: blocked {sum(lags) / seconds:.1%} of {seconds:.0f} s, longest block {max(lags) * 1000:.1f} ms, "
          f"p99 {ordered[int(len(ordered) * 0.99)] * 1000:.1f} ms, median {statistics.median(lags) * 1000:.2f} ms"
          f"{extra}", flush=True)


async def main(learners: int, seconds: float, rate: float, discord_rate: float, delay: float) -> None:
    stop, lags = asyncio.Event(), []
    task = asyncio.create_task(probe(stop, lags))
    arrivals, arrival_lags = threading.Event(), []
    arrival = asyncio.create_task(asyncio.to_thread(arrival_probe, asyncio.get_running_loop(), arrivals, arrival_lags))
    await asyncio.sleep(10)
    stop.set()
    arrivals.set()
    await task
    await arrival
    summary("idle loop", lags, 10, f"; load average {os.getloadavg()[0]:.2f}")
    summary("idle loop, arrival probe", arrival_lags, 10)
    idle_share, idle_arrival_share = sum(lags) / 10, sum(arrival_lags) / 10
    with pg_schema() as url:
        load_learners(url, learners, MOMENT, moment=MOMENT, moment_count=learners, platforms=("telegram", "discord"))
        engine = QuizEngine(make_engine(url), default_deck(), SelfGrader(), FixedClock(MOMENT))
        transports = {"telegram": NoopPlatform("telegram", delay), "discord": NoopPlatform("discord", delay)}
        sweeper = ReminderSweeper(engine, transports, rates={"telegram": rate, "discord": discord_rate}, sweep_seconds=seconds)
        # The duplicate window: from the platform's answer to the record's commit.
        windows: list[float] = []
        record = sweeper._record_sent

        async def timed_record(*args) -> None:
            began = time.perf_counter()
            await record(*args)
            windows.append(time.perf_counter() - began)

        sweeper._record_sent = timed_record
        freeze_heap()  # as ``trapbot run`` does once it has started
        stop, lags = asyncio.Event(), []
        task = asyncio.create_task(probe(stop, lags))
        arrivals, arrival_lags = threading.Event(), []
        arrival = asyncio.create_task(asyncio.to_thread(arrival_probe, asyncio.get_running_loop(), arrivals, arrival_lags))
        started, cpu, machine = time.perf_counter(), time.process_time(), machine_cpu()
        with CallbackTimer() as callbacks:
            report = await sweeper.sweep()
        elapsed = time.perf_counter() - started
        cpu, machine = time.process_time() - cpu, [after - before for before, after in zip(machine, machine_cpu(), strict=True)]
        stop.set()
        arrivals.set()
        await task
        await arrival
        summary(f"busy sweep at {rate:g}/s Telegram + {discord_rate:g}/s Discord, sends of {delay * 1000:.0f} ms", lags, elapsed,
                f"; pushed {report.sent:,} ({report.sent / elapsed:.1f}/s), errors {report.errors}")
        summary("the same sweep, arrival probe", arrival_lags, elapsed)
        # What the sweep adds to what an idle loop already shows (timer rounding, wake-ups).
        print(f"beyond the idle loop: sleeping probe {sum(lags) / elapsed - idle_share:+.1%}, "
              f"arrival probe {sum(arrival_lags) / elapsed - idle_arrival_share:+.1%} of the minute", flush=True)
        busy = sorted(callbacks.durations)
        print(f"loop's own callbacks during the sweep: {sum(busy) / elapsed:.1%} of the time, longest {busy[-1] * 1000:.1f} ms, "
              f"p99.9 {busy[int(len(busy) * 0.999)] * 1000:.2f} ms ({len(busy):,} callbacks)", flush=True)
        for took, what in sorted(callbacks.slow, reverse=True)[:3]:
            print(f"  a callback of {took * 1000:.1f} ms: {what}", flush=True)
        print(f"this process's CPU (loop and worker threads): {cpu / max(report.sent, 1) * 1000:.1f} ms a push, "
              f"{cpu / elapsed:.0%} of one core; the machine's CPUs busy {machine[0] / max(machine[1], 1):.0%}; "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        windows.sort()
        print(f"send answered to record committed: median {statistics.median(windows) * 1000:.1f} ms, "
              f"p99 {windows[int(len(windows) * 0.99)] * 1000:.1f} ms, max {windows[-1] * 1000:.1f} ms ({len(windows)} pushes)", flush=True)
        engine.db.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=25.0)
    parser.add_argument("--discord-rate", type=float, default=5.0)
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval for this run (default: Python's 5 ms)")
    args = parser.parse_args()
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    asyncio.run(main(args.learners, args.seconds, args.rate, args.discord_rate, args.delay))
