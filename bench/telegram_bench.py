"""Telegram adapter throughput and answer-to-verdict latency against the fake Bot API.

Run: .venv/bin/python bench/telegram_bench.py [--learners 40] [--rounds 3] [--judge auto|offline|self]

The real PTB stack (polling, the per-user sequencer, HTML rendering, the engine on a SQLite
file) talks to ``tests/telegram/fake_bot_api.py`` over loopback. Every simulated learner, all at
once, repeats: /trap, an answer (a card's reference answer, alternating expert, partial and trap),
then the confirm tap (offline judge: "Confirm n/5"; self-grading: a rating). Measured:

- replies per second: bot messages delivered (sendMessage, editMessageText, sendPhoto) over the
  run's wall time, with Telegram's rate limits on (PTB's AIORateLimiter at 30 messages/s; the
  real ceiling in production) and off (what the process itself sustains);
- answer -> reading: from queueing the answer update to the bot's graded reply (the judge's
  reading to confirm, or the self-grading key), median and 95th percentile;
- confirm -> verdict: from queueing the confirm tap to the verdict message.

Plots are off (no simulation service): this measures the chat path. The fake server, the bot and
the simulated learners share one process and its event loop, so the figures are a lower bound of
what the bot alone sustains on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def load_fake_bot_api() -> Any:
    spec = importlib.util.spec_from_file_location(
        "fake_bot_api", ROOT / "tests" / "telegram" / "fake_bot_api.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build_grader(choice: str) -> tuple[Any, str]:
    if choice in ("auto", "offline"):
        try:
            from grader.offline import OfflineJudge
        except ImportError:
            if choice == "offline":
                raise
        else:
            return OfflineJudge(), "offline"
    from grader.selfgrade import SelfGrader

    return SelfGrader(), "self"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def run_once(args: argparse.Namespace, *, limiter: bool) -> dict[str, Any]:
    from datetime import UTC, datetime

    from bot.clock import FixedClock
    from bot.config import Settings
    from bot.db import make_engine, migrate
    from bot.engine import QuizEngine
    from bot.telegram.transport import DEFAULT_RATE_LIMITER, TelegramTransport
    from cards.deck import default_deck

    fake = load_fake_bot_api()
    deck = default_deck()
    grader, grader_name = build_grader(args.judge)
    if hasattr(grader, "warm"):  # load the model and index the cards the learners will meet
        await grader.warm(list(deck)[: args.rounds])
    workdir = Path(tempfile.mkdtemp(prefix="tg-bench-"))
    db_url = f"sqlite:///{workdir / 'bench.db'}"
    migrate(db_url)
    engine = QuizEngine(
        make_engine(db_url),
        deck,
        grader,
        FixedClock(datetime(2026, 3, 2, 8, 0, tzinfo=UTC)),
        interactive=True,
        default_new_per_day=10,
    )
    api = fake.FakeBotApi()
    await api.start()
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=db_url,
        telegram_bot_token=api.token,
        telegram_base_url=api.base_url,
        telegram_webhook_url=None,
    )
    transport = TelegramTransport(
        engine,
        settings,
        rate_limiter=DEFAULT_RATE_LIMITER if limiter else None,
        poll_timeout_seconds=5,
        connection_pool_size=args.pool,
    )
    await transport.start()
    answer_latency: list[float] = []
    confirm_latency: list[float] = []

    def graded(call: Any) -> bool:
        return any(
            key in call.text for key in ("Check my reading", "How close was your answer", "Grade ")
        )

    async def learner(index: int) -> None:
        person = api.user(f"L{index}")
        for round_ in range(args.rounds):
            mark = api.mark()
            api.send_command(person, "trap")
            question = await api.wait_for("sendMessage", since=mark, chat_id=person.id, timeout=120)
            card_id = next((c for c in deck.ids if c in question.text), None)
            if card_id is None:
                return  # nothing left to ask
            card = deck.get(card_id)
            kinds = ["expert", "partial", "trap"]
            wanted = kinds[(index + round_) % 3]
            answer = next(
                (a.text for a in card.reference_answers if a.kind == wanted),
                card.reference_answers[0].text,
            )
            mark = api.mark()
            sent_at = time.monotonic()
            api.send_text(person, answer, reply_to=question.result)
            reading = await api.wait_for(
                "sendMessage", since=mark, chat_id=person.id, where=graded, timeout=120
            )
            answer_latency.append(reading.at - sent_at)
            if "Grade " in reading.text:
                continue  # a judge that grades without asking
            buttons = reading.buttons()
            tap = (
                next((d for label, d in buttons if label.startswith("Confirm")), None)
                or buttons[-2][1]
            )
            mark = api.mark()
            pressed_at = time.monotonic()
            api.press(person, reading.result, tap)
            verdict = await api.wait_for(
                "sendMessage",
                since=mark,
                chat_id=person.id,
                where=lambda c: "Grade " in c.text,
                timeout=120,
            )
            confirm_latency.append(verdict.at - pressed_at)

    start_mark = api.mark()
    started = time.monotonic()
    await asyncio.gather(*(learner(i) for i in range(args.learners)))
    elapsed = time.monotonic() - started
    delivered = [
        c
        for c in api.calls_since(start_mark)
        if c.method in ("sendMessage", "editMessageText", "sendPhoto")
    ]
    refused = [c for c in api.calls_since(start_mark, ok=False)]
    await transport.stop()
    await api.stop()
    engine.db.dispose()
    return {
        "grader": grader_name,
        "limiter": limiter,
        "seconds": elapsed,
        "replies": len(delivered),
        "replies_per_second": len(delivered) / elapsed,
        "refused": len(refused),
        "answer_median_ms": 1000 * statistics.median(answer_latency),
        "answer_p95_ms": 1000 * percentile(answer_latency, 0.95),
        "confirm_median_ms": 1000 * statistics.median(confirm_latency)
        if confirm_latency
        else float("nan"),
        "answers": len(answer_latency),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--judge", choices=["auto", "offline", "self"], default="auto")
    parser.add_argument("--limiter", choices=["both", "on", "off"], default="both")
    parser.add_argument("--pool", type=int, default=32, help="HTTP connections to the Bot API")
    args = parser.parse_args()
    settings = {"both": [False, True], "on": [True], "off": [False]}[args.limiter]
    for limiter in settings:
        result = asyncio.run(run_once(args, limiter=limiter))
        print(
            f"judge={result['grader']} rate-limiter={'on' if limiter else 'off'} learners={args.learners} "
            f"rounds={args.rounds}: {result['replies']} replies in {result['seconds']:.1f} s = "
            f"{result['replies_per_second']:.1f} replies/s; answer->reading median "
            f"{result['answer_median_ms']:.0f} ms (p95 {result['answer_p95_ms']:.0f} ms) over "
            f"{result['answers']} answers; confirm->verdict median {result['confirm_median_ms']:.0f} ms; "
            f"refused calls {result['refused']}"
        )


if __name__ == "__main__":
    main()
