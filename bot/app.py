"""Assemble the engine from settings and serve every configured transport on one loop."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from typing import TYPE_CHECKING

from bot.clock import SystemClock
from bot.config import Settings
from bot.db import make_engine, migrate
from bot.engine import QuizEngine
from cards.deck import Deck, default_deck, load_decks
from grader.base import Grader, warmable

if TYPE_CHECKING:
    from bot.clock import Clock
    from bot.transport import Transport

log = logging.getLogger(__name__)


class StartupError(Exception):
    """trapbot could not start; the message is one line for the operator, without secrets."""


def describe_startup_failure(platform: str, error: BaseException, settings: Settings) -> str:
    """One readable line for a failure to connect at start (the traceback helps nobody here)."""
    name = type(error).__name__
    platform = platform.capitalize()
    if name == "InvalidToken":  # PTB's message repeats the token: not shown
        text = "Telegram rejected TELEGRAM_BOT_TOKEN: copy the token again from @BotFather"
    elif name in ("NetworkError", "TimedOut", "ClientConnectorError", "ConnectError", "gaierror") or isinstance(
        error, OSError | TimeoutError
    ):
        detail = str(error).strip().splitlines()[0][:160] if str(error).strip() else name
        text = f"{platform} is unreachable ({detail}): check the network, a proxy or the base URL"
    else:
        detail = str(error).strip().splitlines()[0][:200] if str(error).strip() else name
        text = f"{platform} failed to start: {detail}"
    for secret in settings.secrets():
        text = text.replace(secret, "***")
    return text


def build_grader(settings: Settings) -> Grader:
    """The judge ``TRAPBOT_JUDGE`` names; ``auto`` is the LLM judge with an API key, else offline."""
    choice = settings.judge_settings().resolved_judge()
    if choice == "self":
        from grader.selfgrade import SelfGrader

        return SelfGrader()
    try:
        from grader.offline import OfflineJudge
    except ImportError:  # the offline judge is not installed in this build
        if choice == "offline":
            raise
        offline = None
    else:
        offline = OfflineJudge()
    if choice == "llm":
        from grader.llm import LlmJudge

        return LlmJudge.from_settings(settings.judge_settings(), fallback=offline)
    if offline is not None:
        return offline
    from grader.selfgrade import SelfGrader

    return SelfGrader()


def build_sims(settings: Settings):
    try:
        from sims.service import SimService
    except ImportError:
        return None
    return SimService(cache_dir=settings.trapbot_sim_cache_dir)


def build_deck(settings: Settings) -> Deck:
    """The built-in deck and the ``TRAPBOT_DECKS`` folders. A card that does not load is left
    out and said (file, line, why, fix) in the log; the rest is served."""
    if not settings.deck_dirs:
        return default_deck()
    from bot.lint import startup_problems

    deck = load_decks(settings.deck_dirs)
    for problem in startup_problems(deck):
        log.warning("deck problem (`trapbot cards lint` lists them all): %s", problem)
    return deck


def build_engine(
    settings: Settings,
    *,
    clock: Clock | None = None,
    grader: Grader | None = None,
    interactive: bool = True,
    with_sims: bool = True,
) -> QuizEngine:
    return QuizEngine(
        make_engine(settings.database_url),
        build_deck(settings),
        grader or build_grader(settings),
        clock or SystemClock(),
        sims=build_sims(settings) if with_sims and settings.trapbot_plots else None,
        interactive=interactive,
        default_new_per_day=settings.trapbot_new_per_day,
    )


def build_transports(settings: Settings, engine: QuizEngine) -> list[Transport]:
    transports: list[Transport] = []
    if settings.telegram_bot_token is not None:
        from bot.telegram.transport import TelegramTransport

        transports.append(TelegramTransport(engine, settings))
    if settings.discord_bot_token is not None:
        from bot.discord.transport import DiscordTransport

        transports.append(DiscordTransport(engine, settings))
    return transports


async def recover_pending(engine: QuizEngine, by_platform: dict[str, Transport]) -> None:
    """In the background after start: grade the answers a crash left pending, for the learners
    of this process's platforms only, each reply sent through the platform that received the answer."""

    async def deliver(learner_id: int, replies: list) -> None:
        learner = engine.get_learner(learner_id)
        if learner is not None and learner.platform in by_platform:
            await by_platform[learner.platform].push(learner, replies)

    try:
        await engine.recover_pending(platforms=tuple(by_platform), deliver=deliver)
    except Exception:
        log.exception("recovering pending answers failed")


def freeze_heap() -> None:
    """Move what is alive now (modules, the deck, the ORM's mappers and compiled statements)
    out of the garbage collector's reach. A full collection then walks only what the running
    bot allocates: it held the GIL, and so the event loop, for 80-140 ms before."""
    gc.collect()
    gc.freeze()


async def _freeze_after(tasks: list[asyncio.Task]) -> None:
    await asyncio.gather(*tasks, return_exceptions=True)
    freeze_heap()  # the simulations' and the judge's models, loaded in the background


async def serve(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run every configured transport, the reminder sweep and the ops server on this one
    event loop until ``stop`` is set (by SIGINT/SIGTERM when not given)."""
    migrate(settings.database_url)
    engine = build_engine(settings)
    transports = build_transports(settings, engine)
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    started: list[Transport] = []
    for transport in transports:
        try:
            await transport.start()
        except Exception as error:  # a token or the network: one line, not a traceback
            for running in reversed(started):
                await running.stop()
            raise StartupError(describe_startup_failure(transport.platform, error, settings)) from error
        started.append(transport)
        log.info("%s is serving", transport.platform)
    by_platform = {t.platform: t for t in transports}
    recovery = asyncio.create_task(recover_pending(engine, by_platform))
    from bot.reminders import start_reminders

    reminders = await start_reminders(settings, engine, by_platform)
    ops = None
    if settings.trapbot_metrics_port is not None:
        from bot.ops import start_ops_server

        ops = await start_ops_server(settings.trapbot_metrics_port)
    warm = asyncio.create_task(engine.sims.warm_all()) if engine.sims is not None else None
    # The offline judge's embedding model loads in the background, not on the first answer.
    judge = warmable(engine.grader)
    warm_judge = asyncio.create_task(judge.warm(engine.deck)) if judge is not None else None
    for transport in transports:  # a first grade that waits for the model says so
        warmup = getattr(transport, "warmup", None)
        if warmup is not None:
            warmup.task = warm_judge
    freeze_heap()
    frozen = asyncio.create_task(_freeze_after([task for task in (warm, warm_judge) if task is not None]))
    try:
        await stop.wait()
    finally:
        await reminders.stop()
        if ops is not None:
            await ops.cleanup()
        for transport in reversed(transports):
            await transport.stop()
        for task in (recovery, warm, warm_judge, frozen):
            if task is not None:
                task.cancel()
        if engine.sims is not None:
            await engine.sims.close()
        close_judge = getattr(engine.grader, "close", None)
        if close_judge is not None:
            await close_judge()
