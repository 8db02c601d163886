"""End-to-end push rate: the reminder sweep through the real Telegram adapter to a fake Bot
API on 127.0.0.1 that enforces Telegram's global limit (30 sends a second, 429 beyond it).

Run: .venv/bin/python bench/push_rate_bench.py [--learners 500] [--pace 25]

Reports the sustained pushes per second, how many learners were pushed (every one, once),
how many 429s the fake server gave and how many pushes failed because of them.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from pydantic import SecretStr

from bot.clock import FixedClock
from bot.config import Settings
from bot.db import make_engine, migrate
from bot.engine import QuizEngine
from bot.reminders import ReminderSweeper
from bot.telegram.transport import TelegramTransport
from cards.deck import default_deck
from grader.selfgrade import SelfGrader

ROOT = Path(__file__).resolve().parent.parent


def load_fake_api():
    spec = importlib.util.spec_from_file_location("fake_bot_api", ROOT / "tests/telegram/fake_bot_api.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def main(learners: int, pace: float) -> None:
    fake = load_fake_api()
    async with fake.FakeBotApi(sends_per_second=30) as api:
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/push.db"
            migrate(url)
            clock = FixedClock(datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC))
            engine = QuizEngine(make_engine(url), default_deck(), SelfGrader(), clock)
            for _ in range(learners):
                person = api.user()
                api.private_chat(person)
                learner = engine.learner("telegram", person.id, chat_id=person.id)
                await engine.update_settings(learner.id, "time", "09:00")
            settings = Settings(
                telegram_bot_token=SecretStr(api.token), telegram_base_url=api.base_url, trapbot_plots=False
            )
            transport = TelegramTransport(engine, settings)
            await transport.start()
            try:
                sweeper = ReminderSweeper(engine, {"telegram": transport}, rates={"telegram": pace}, sweep_seconds=3600)
                mark = len(api.calls)
                started = time.perf_counter()
                report = await sweeper.sweep()
                elapsed = time.perf_counter() - started
            finally:
                await transport.stop()
            sends = [c for c in api.calls[mark:] if c.method == "sendMessage" and c.status == 200]
            per_chat = Counter(int(c.params["chat_id"]) for c in sends)
            print(
                f"{report.sent:,} of {learners:,} learners pushed in {elapsed:.1f} s: "
                f"{report.sent / elapsed:.1f} pushes/s sustained (pacing {pace:g}/s, limit 30/s)"
            )
            print(
                f"chats reached: {len(per_chat):,}; chats with more than one push message: "
                f"{sum(1 for n in per_chat.values() if n > 1)}; 429s from the server: {api.rate_limited}; "
                f"pushes failed: {report.failed}"
            )
            engine.db.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=500)
    parser.add_argument("--pace", type=float, default=25.0)
    args = parser.parse_args()
    asyncio.run(main(args.learners, args.pace))
