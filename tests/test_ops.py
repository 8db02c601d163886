"""/healthz and /metrics over real HTTP on loopback; logs carry no secrets or answer text."""

from __future__ import annotations

import json
import logging
import socket

import aiohttp

from bot.ops import PUSHES, JsonFormatter, SecretFilter, start_ops_server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_health_and_metrics_endpoints() -> None:
    port = free_port()
    runner = await start_ops_server(port, host="127.0.0.1")
    try:
        PUSHES.labels("telegram", "sent").inc()
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                assert response.status == 200 and (await response.json()) == {"status": "ok"}
            async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
                body = await response.text()
        assert 'trapbot_pushes_total{outcome="sent",platform="telegram"}' in body
        assert "trapbot_grading_seconds" in body and "trapbot_push_lag_seconds" in body
    finally:
        await runner.cleanup()


def test_json_logs_mask_secrets_and_drop_answers() -> None:
    secret = "123456:ABCdefGhIJKlmnoPQRstuVWxyz"
    record = logging.LogRecord("bot", logging.INFO, __file__, 1, "token is %s", (secret,), None)
    record.answer = "my private answer"
    record.review_id = 7
    SecretFilter([secret]).filter(record)
    line = JsonFormatter().format(record)
    payload = json.loads(line)
    assert secret not in line and "***" in payload["message"]
    assert "my private answer" not in line and payload["review_id"] == 7
