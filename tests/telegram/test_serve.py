"""`trapbot run`'s runner: Telegram, the reminder sweep and the ops server on one event loop."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import SecretStr

from bot.app import serve
from bot.config import Settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_one_process_serves_telegram_reminders_and_metrics(bot_api: Any, tmp_path: Path) -> None:
    port = free_port()
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'serve.db'}",
        telegram_bot_token=SecretStr(bot_api.token),
        telegram_base_url=bot_api.base_url,
        trapbot_judge="self",
        trapbot_plots=False,
        trapbot_metrics_port=port,
    )
    stop = asyncio.Event()
    running = asyncio.create_task(serve(settings, stop))
    try:
        await bot_api.wait_for("setMyCommands", timeout=30)
        ada = bot_api.user("Ada")
        bot_api.private_chat(ada)
        mark = bot_api.mark()
        bot_api.send_command(ada, "start")
        welcome = await bot_api.wait_for("sendMessage", since=mark, chat_id=ada.id, timeout=30)
        assert "trapbot" in welcome.text
        mark = bot_api.mark()
        bot_api.send_command(ada, "trap")
        question = await bot_api.wait_for("sendMessage", since=mark, chat_id=ada.id, timeout=30)
        assert "rl-01" in question.text
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 200
        assert not running.done()
    finally:
        stop.set()
        await asyncio.wait_for(running, timeout=30)
