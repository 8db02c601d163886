"""Fixtures for the judges: the model card, a shared offline judge, a fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from cards.deck import DECK_DIR, parse_card
from cards.schema import Card


@pytest.fixture(scope="session")
def rl08() -> Card:
    return parse_card(DECK_DIR / "rl-08.md")


@pytest.fixture(scope="session")
def offline_judge(rl08: Card):
    """One offline judge for the session: loading MiniLM takes seconds, so it happens once."""
    from grader.offline import OfflineJudge

    judge = OfflineJudge()
    judge.index(rl08)
    return judge


Step = Callable[["FakeOpenAI", dict[str, Any]], Awaitable[web.StreamResponse]]


def completion(content: str) -> Step:
    """A step that answers with one chat completion whose message is ``content``."""

    async def step(server: FakeOpenAI, body: dict[str, Any]) -> web.StreamResponse:
        return web.json_response(
            {
                "id": f"chatcmpl-{len(server.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "test"),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    return step


def status(code: int, message: str = "error", headers: dict[str, str] | None = None) -> Step:
    async def step(server: FakeOpenAI, body: dict[str, Any]) -> web.StreamResponse:
        return web.json_response(
            {"error": {"message": message, "type": "test", "code": code}},
            status=code,
            headers=headers,
        )

    return step


def hang(seconds: float) -> Step:
    """A step that answers only after ``seconds`` (or when the server shuts down)."""

    async def step(server: FakeOpenAI, body: dict[str, Any]) -> web.StreamResponse:
        try:
            await asyncio.wait_for(server.release.wait(), seconds)
        except TimeoutError:
            pass
        return web.json_response({"error": {"message": "too late"}}, status=500)

    return step


@dataclass
class FakeOpenAI:
    """A chat-completions endpoint on 127.0.0.1 that plays ``steps`` in order (the last repeats)."""

    steps: list[Step] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        return await step(self, body)

    def answer_in(self, index: int = -1) -> str:
        """The user message of request ``index``, where the answer travels."""
        return next(m["content"] for m in self.requests[index]["messages"] if m["role"] == "user")


@pytest.fixture
async def fake_openai():
    server = FakeOpenAI()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.handle)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    server.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield server
    finally:
        server.release.set()
        await runner.cleanup()


def verdict_json(card: Card, verdicts: dict[str, tuple[str, str]], **extra: Any) -> str:
    """The judge output for ``card``: ``verdicts`` maps point id -> (verdict, quote)."""
    data = {
        "injection_suspected": extra.pop("injection_suspected", False),
        "points": [
            {
                "point_id": p.id,
                "verdict": verdicts.get(p.id, ("absent", ""))[0],
                "quote": verdicts.get(p.id, ("absent", ""))[1],
            }
            for p in card.key_points
        ],
        "misconceptions": [
            {"misconception_id": m.id, "asserted": False, "quote": ""} for m in card.misconceptions
        ],
        "feedback": extra.pop("feedback", "Say what the reward model is and where it is accurate."),
    }
    data.update(extra)
    return json.dumps(data)
