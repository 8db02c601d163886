"""Starting the chat waits for no heavy module: torch, matplotlib and the embedding model load
in the background once the first screen is up (the judge warms while the learner reads)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HEAVY = ("torch", "matplotlib", "sentence_transformers", "transformers")


def test_chat_start_imports_nothing_heavy(tmp_path) -> None:
    code = (
        "import sys, io, asyncio\n"
        "from bot.app import build_engine\n"
        "from bot.config import get_settings\n"
        "from bot.db import migrate\n"
        "from bot.terminal import TerminalChat\n"
        "migrate(get_settings().database_url)\n"
        "engine = build_engine(get_settings())\n"
        "class Screen(io.StringIO):\n"
        "    at_first_prompt = None\n"
        "    def write(self, text):\n"
        "        if text == '> ' and self.at_first_prompt is None:\n"
        f"            self.at_first_prompt = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "        return super().write(text)\n"
        "screen = Screen()\n"
        "asyncio.run(TerminalChat(engine, io.StringIO('/help\\n/quit\\n'), screen, user='ada').run())\n"
        "print('heavy=' + ','.join(screen.at_first_prompt))\n"
    )
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "TRAPBOT_SIM_CACHE_DIR": str(tmp_path / "sims")}
    env.pop("OPENAI_API_KEY", None)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "heavy="


def _serve(tmp_path, base_url: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'run.db'}",
        "TELEGRAM_BOT_TOKEN": "123456:bogus-token-for-the-test",
        "TELEGRAM_BASE_URL": base_url,
        "TRAPBOT_PLOTS": "false",
        "TRAPBOT_JUDGE": "self",
    }
    for name in ("DISCORD_BOT_TOKEN", "OPENAI_API_KEY", "TELEGRAM_WEBHOOK_URL"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "run"],
        env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the probe is closed


def _assert_one_readable_line(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "bogus-token" not in result.stderr + result.stdout
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("trapbot could not start: ") and expected in last, last


@pytest.mark.slow  # the real backoff: five tries over 7.5 s before the one line
def test_no_network_at_start_is_one_readable_line(tmp_path) -> None:
    result = _serve(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    _assert_one_readable_line(result, "Telegram is unreachable")


def test_a_network_failure_at_start_reads_as_one_line_without_secrets() -> None:
    """The fast half of the test above: the line the operator reads (the process-level path
    is the rejected-token test's)."""
    from telegram.error import NetworkError

    from bot.app import describe_startup_failure
    from bot.config import Settings

    settings = Settings(telegram_bot_token="123456:bogus-token-for-the-test", _env_file=None)
    error = NetworkError("httpx.ConnectError: All connection attempts failed for 123456:bogus-token-for-the-test\nmore")
    line = describe_startup_failure("telegram", error, settings)
    assert line.startswith("Telegram is unreachable (") and "check the network" in line
    assert "bogus-token" not in line and "\n" not in line


def test_a_rejected_token_is_one_readable_line(tmp_path) -> None:
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refusing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.dumps({"ok": False, "error_code": 401, "description": "Unauthorized"}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = _serve(tmp_path, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    _assert_one_readable_line(result, "Telegram rejected TELEGRAM_BOT_TOKEN")


def test_a_bad_setting_is_one_line_naming_it_and_not_its_value(monkeypatch, capsys) -> None:
    from bot.cli import main
    from bot.config import get_settings

    monkeypatch.setenv("TRAPBOT_NEW_PER_DAY", "many-secret-words")
    monkeypatch.setenv("TRAPBOT_LOG_FORMAT", "xml")
    get_settings.cache_clear()
    try:
        assert main(["migrate"]) == 2
    finally:
        get_settings.cache_clear()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trapbot could not start: bad setting ")
    assert "TRAPBOT_NEW_PER_DAY" in err and "TRAPBOT_LOG_FORMAT" in err
    assert "many-secret-words" not in err and "Traceback" not in err
