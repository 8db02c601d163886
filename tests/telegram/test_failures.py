"""Rate limits, network failures, blocked learners, a late plot, webhook mode."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select
from telegram.ext import AIORateLimiter

from bot.models import Learner
from bot.replies import Reply
from bot.transport import PushOutcome
from tests.telegram.flows import graded_trap

PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


async def eventually(condition: Any, timeout: float = 5.0) -> None:
    """Wait until ``condition()`` holds (state changed by an update the bot handles out of sight)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("the condition never held")
        await asyncio.sleep(0.02)


def learner_row(engine: Any, user_id: int) -> Learner:
    with Session(engine.db) as session:
        return session.exec(select(Learner).where(Learner.platform_user_id == str(user_id))).one()


@pytest.mark.filterwarnings(
    "ignore::telegram.warnings.PTBDeprecationWarning"
)  # raised inside PTB's RetryAfter
async def test_retry_after_is_honoured(make_bot: Any) -> None:
    bot = await make_bot(rate_limiter=AIORateLimiter(max_retries=2))
    api = bot.api
    ada = api.user("Ada")
    api.fail(
        "sendMessage",
        status=429,
        description="Too Many Requests: retry after 1",
        retry_after=1,
        chat_id=ada.id,
    )
    mark = api.mark()
    api.send_command(ada, "help")
    delivered = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    refused = api.calls_since(mark, "sendMessage", chat_id=ada.id, ok=False)
    assert [c.status for c in refused] == [429]
    assert refused[0].html == delivered.html  # the same message, sent again after the wait
    assert len(api.calls_since(mark, "sendMessage", chat_id=ada.id)) == 1


async def test_network_errors_are_retried_with_backoff(make_bot: Any) -> None:
    bot = await make_bot()
    api = bot.api
    ada = api.user("Ada")
    api.fail("sendMessage", status=502, description="Bad Gateway", chat_id=ada.id, times=2)
    mark = api.mark()
    api.send_command(ada, "help")
    delivered = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "Commands" in delivered.text
    assert len(api.calls_since(mark, "sendMessage", chat_id=ada.id, ok=False)) == 2
    assert len(api.calls_since(mark, "sendMessage", chat_id=ada.id)) == 1

    # Polling survives a failing getUpdates too.
    api.fail("getUpdates", status=500, description="Internal Server Error", times=1)
    mark = api.mark()
    api.send_command(ada, "help")
    await api.wait_for("sendMessage", since=mark, chat_id=ada.id)


async def test_a_learner_who_blocked_the_bot_is_marked_inactive(make_bot: Any) -> None:
    bot = await make_bot()
    api, engine, transport = bot.api, bot.engine, bot.transport
    ada = api.user("Ada")
    mark = api.mark()
    api.send_command(ada, "start")
    await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    learner = learner_row(engine, ada.id)
    assert learner.active

    api.block(ada)
    outcome = await transport.push(learner, await engine.next_trap(learner.id))
    assert outcome is PushOutcome.BLOCKED
    assert learner_row(engine, ada.id).active is False

    # She unblocks and writes again: active again, pushes reach her.
    api.unblock(ada)
    mark = api.mark()
    api.send_command(ada, "help")
    await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    learner = learner_row(engine, ada.id)
    assert learner.active
    assert await transport.push(learner, [Reply("Your daily trap is waiting.")]) is PushOutcome.SENT

    # Blocking reported by Telegram's my_chat_member update marks her inactive at once.
    api.block(ada, notify=True)
    await eventually(lambda: learner_row(engine, ada.id).active is False)
    api.unblock(ada, notify=True)
    await eventually(lambda: learner_row(engine, ada.id).active is True)


async def test_push_failures(make_bot: Any) -> None:
    bot = await make_bot()
    api, engine, transport = bot.api, bot.engine, bot.transport
    # Known only from a group: Telegram refuses to start a private conversation.
    group = api.group()
    bob = api.user("Bob")
    mark = api.mark()
    api.send_command(bob, "help", chat=group)
    await api.wait_for("sendMessage", since=mark, chat_id=group["id"])
    assert (
        await transport.push(learner_row(engine, bob.id), [Reply("hello")]) is PushOutcome.BLOCKED
    )

    # A transient failure that outlasts the retries: FAILED, and the learner stays active.
    ada = api.user("Ada")
    mark = api.mark()
    api.send_command(ada, "help")
    await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    api.fail(
        "sendMessage", status=500, description="Internal Server Error", chat_id=ada.id, times=10
    )
    assert await transport.push(learner_row(engine, ada.id), [Reply("hello")]) is PushOutcome.FAILED
    assert learner_row(engine, ada.id).active


async def test_a_late_plot_follows_the_verdict_without_blocking(
    make_bot: Any, gated_plots: Any, tmp_path: Path, plot_sim: Any
) -> None:
    if plot_sim is None:
        pytest.skip("no simulation is registered, so there is no plot caption to send")
    plots = gated_plots(PNG_1x1)
    plots.path = tmp_path / "plot.png"
    bot = await make_bot(sims=plots, plot_wait_seconds=0.2)
    api = bot.api
    ada = api.user("Ada")
    verdict = await graded_trap(api, ada, "a proxy, not the goal")

    # The plot is not ready; the learner goes on and is served meanwhile.
    api.send_command(ada, "help")
    helped = await api.wait_for(
        "sendMessage", since=verdict.index, chat_id=ada.id, where=lambda c: "Commands" in c.text
    )
    assert api.calls_since(verdict.index, "sendPhoto") == []  # none since the verdict

    plots.ready.set()
    photo = await api.wait_for("sendPhoto", since=verdict.index, chat_id=ada.id)
    assert photo.index > helped.index
    assert api.photo_bytes(photo) == PNG_1x1


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_webhook_mode(make_bot: Any) -> None:
    port = _free_port()
    bot = await make_bot(
        settings={
            "telegram_webhook_url": f"http://127.0.0.1:{port}/telegram/hook",
            "telegram_webhook_port": port,
        },
        webhook_listen="127.0.0.1",
    )
    api = bot.api
    hook = api.webhook
    assert hook is not None and hook.url.endswith("/telegram/hook") and hook.secret_token
    ada = api.user("Ada")
    mark = api.mark()
    api.send_command(ada, "trap")
    question = await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
    assert "rl-91" in question.text
    assert api.calls_since(0, "getUpdates", ok=None) == []


async def test_start_and_stop_twice(make_bot: Any) -> None:
    bot = await make_bot()
    await bot.transport.start()  # already running: nothing happens
    await bot.transport.stop()
    await bot.transport.stop()
    assert await bot.transport.push(learner_row_or_none(bot), [Reply("x")]) is PushOutcome.FAILED


def learner_row_or_none(bot: Any) -> Any:
    return Learner(
        platform="telegram", platform_user_id="1", chat_id="1", created_at=bot.clock.now()
    )
