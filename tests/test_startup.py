"""Starting the chat waits for no heavy module: torch, matplotlib and the embedding model load
in the background once the first screen is up (the judge warms while the learner reads)."""

from __future__ import annotations

import os
import subprocess
import sys

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
