"""Fixtures for the Telegram adapter: the fake Bot API, a test deck, test judges, a running bot."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.clock import FixedClock
from bot.config import Settings
from bot.db import make_engine
from bot.engine import QuizEngine
from bot.telegram.transport import TelegramTransport
from cards.deck import DECK_DIR, Deck, load_deck
from grader.base import Assessment, Judgement, MisconceptionJudgement, PointJudgement, PointVerdict
from grader.scoring import grade_from_judgement
from tests.deck_plots import DeckPlots

HERE = Path(__file__).resolve().parent


def _load_fake_bot_api() -> Any:
    # ``tests`` is not importable here (a dependency ships a top-level ``tests`` package).
    spec = importlib.util.spec_from_file_location("trapbot_fake_bot_api", HERE / "fake_bot_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fake_bot_api = _load_fake_bot_api()


@pytest.fixture
def fake_api_module() -> Any:
    return fake_bot_api


@pytest.fixture
async def bot_api() -> AsyncIterator[Any]:
    api = fake_bot_api.FakeBotApi()
    await api.start()
    yield api
    await api.stop()


# ----- a deck whose cards name a simulation that exists -----------------------------------


def _preferred_sim() -> str | None:
    """A registered sim that computes in about a second (the plot's content does not matter here)."""
    try:
        from sims.registry import sim_ids
    except ImportError:
        return None
    known = sim_ids()
    for wanted in ("trajectory_stitching", "compounding_error", "bootstrap_init"):
        if wanted in known:
            return wanted
    return known[0] if known else None


def build_deck(directory: Path, ids: list[str], sim: str | None) -> Deck:
    """Copies of the model card rl-08 under other ids, naming ``sim`` when given."""
    source = (DECK_DIR / "rl-08.md").read_text(encoding="utf-8")
    directory.mkdir(parents=True, exist_ok=True)
    for card_id in ids:
        text = re.sub(r"^id: rl-08$", f"id: {card_id}", source, count=1, flags=re.MULTILINE)
        if sim is not None:
            text = re.sub(r"^sim: .*$", f"sim: {sim}", text, count=1, flags=re.MULTILINE)
        (directory / f"{card_id}.md").write_text(text, encoding="utf-8")
    return load_deck(directory)


@pytest.fixture(scope="session")
def plot_sim() -> str | None:
    return _preferred_sim()


@pytest.fixture(scope="session")
def sim_cache(tmp_path_factory: pytest.TempPathFactory, plot_sim: str | None) -> Path | None:
    """A sim cache directory holding ``plot_sim``'s plot, computed once per test session."""
    if plot_sim is None:
        return None
    try:
        from sims.service import SimService
    except ImportError:
        return None
    directory = tmp_path_factory.mktemp("sim-cache")

    async def warm() -> Any:
        service = SimService(cache_dir=directory, executor="thread")
        try:
            return await service.plot_for(plot_sim, wait_seconds=120)
        finally:
            await service.close()

    return directory if asyncio.run(warm()) is not None else None


@pytest.fixture
def test_deck(tmp_path: Path, plot_sim: str | None) -> Deck:
    return build_deck(tmp_path / "deck", ["rl-91", "rl-92", "rl-93"], plot_sim)


# ----- judges -----------------------------------------------------------------------------


class KeywordJudge:
    """A deterministic test judge: a key point is present when every word of its id is in the answer.

    ``approve it`` asserts the card's first misconception. With ``interactive`` it asks the
    learner to confirm, like the offline judge. ``gate``: answers containing "slow" wait for it.
    """

    name = "keywords"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.gate.set()
        self.started: list[str] = []

    async def assess(self, card: Any, answer: str, *, interactive: bool) -> Assessment:
        self.started.append(answer)
        if "slow" in answer:
            await self.gate.wait()
        lowered = answer.casefold()
        points = []
        for point in card.key_points:
            words = point.id.split("-")
            if all(word in lowered for word in words):
                points.append(PointJudgement(point.id, PointVerdict.PRESENT, answer))
            else:
                points.append(PointJudgement(point.id, PointVerdict.ABSENT, ""))
        misconceptions = tuple(
            MisconceptionJudgement(
                m.id, "approve it" in lowered, answer if "approve it" in lowered else ""
            )
            for m in card.misconceptions[:1]
        )
        judgement = Judgement(judge=self.name, points=tuple(points), misconceptions=misconceptions)
        grade = grade_from_judgement(card, judgement, answer)
        return Assessment(grader=self.name, grade=grade, needs_confirmation=interactive)


class GatedPlots:
    """A plot source whose plots are ready only once ``ready`` is set (a slow simulation)."""

    def __init__(self, png: bytes):
        self.ready = asyncio.Event()
        self.png = png
        self.path: Path | None = None

    async def plot_for(self, sim_id: str, wait_seconds: float = 3.0) -> Any:
        try:
            await asyncio.wait_for(asyncio.shield(self.ready.wait()), wait_seconds)
        except TimeoutError:
            return None
        assert self.path is not None
        self.path.write_bytes(self.png)

        @dataclass
        class Found:
            png_path: Path

        return Found(self.path)


@pytest.fixture
def deck_plots() -> type[DeckPlots]:
    return DeckPlots


# ----- a running bot against the fake Bot API ------------------------------------------------


def telegram_settings(api: Any, db_url: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": db_url,
        "telegram_bot_token": api.token,
        "telegram_base_url": api.base_url,
        "telegram_webhook_url": None,
        "discord_bot_token": None,
        "openai_api_key": None,
    }
    values.update(extra)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@dataclass
class RunningBot:
    api: Any
    transport: TelegramTransport
    engine: QuizEngine
    clock: FixedClock
    judge: Any


def make_transport(engine: QuizEngine, settings: Settings, **options: Any) -> TelegramTransport:
    """A transport with test-sized waits: no rate limiter, quick retries and plot waits."""
    defaults: dict[str, Any] = {
        "rate_limiter": None,
        "plot_wait_seconds": 2.0,
        "late_plot_seconds": None,
        "split_wait_seconds": 0.3,
        "retry_base_seconds": 0.05,
        "poll_timeout_seconds": 5,
    }
    defaults.update(options)
    return TelegramTransport(engine, settings, **defaults)


@pytest.fixture
def sims_for_test(sim_cache: Path | None) -> Any:
    if sim_cache is None:
        return None
    from sims.service import SimService

    return SimService(cache_dir=sim_cache, executor="thread")


@pytest.fixture
def keyword_judge() -> KeywordJudge:
    return KeywordJudge()


@pytest.fixture
def gated_plots() -> type[GatedPlots]:
    return GatedPlots


@pytest.fixture
async def make_bot(
    bot_api: Any, db_url: str, test_deck: Deck, clock: FixedClock
) -> AsyncIterator[Any]:
    """``await make_bot(judge=..., sims=..., settings=dict(...), **transport options)``: a started bot."""
    started: list[RunningBot] = []

    async def make(
        *,
        judge: Any = None,
        sims: Any = None,
        deck: Deck | None = None,
        settings: dict[str, Any] | None = None,
        new_per_day: int = 1,
        **options: Any,
    ) -> RunningBot:
        judge = judge if judge is not None else KeywordJudge()
        engine = QuizEngine(
            make_engine(db_url),
            deck or test_deck,
            judge,
            clock,
            sims=sims,
            interactive=True,
            default_new_per_day=new_per_day,
        )
        transport = make_transport(
            engine, telegram_settings(bot_api, db_url, **(settings or {})), **options
        )
        await transport.start()
        bot = RunningBot(bot_api, transport, engine, clock, judge)
        started.append(bot)
        return bot

    yield make
    for bot in reversed(started):
        await bot.transport.stop()
        if bot.engine.sims is not None and hasattr(bot.engine.sims, "close"):
            await bot.engine.sims.close()
        bot.engine.db.dispose()


@pytest.fixture
async def running_bot(make_bot: Any, sims_for_test: Any) -> RunningBot:
    """A bot with the keyword judge and, when the sims exist, real cached plots."""
    return await make_bot(sims=sims_for_test)
