"""Start-up of `trapbot chat` to its first prompt, and which heavy modules a start imports.

Run: .venv/bin/python bench/startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("torch", "matplotlib", "sentence_transformers", "transformers")


def time_to_prompt(env: dict[str, str]) -> float:
    trapbot = str(Path(sys.executable).parent / "trapbot")
    start = time.perf_counter()
    process = subprocess.Popen([trapbot, "chat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None
    seen = b""
    while not seen.endswith(b"> "):
        chunk = process.stdout.read1(4096)
        if not chunk:
            raise RuntimeError(f"chat exited before its prompt: {seen[-400:]!r}")
        seen += chunk
    elapsed = time.perf_counter() - start
    process.communicate(b"/quit\n", timeout=30)
    return elapsed


def heavy_modules_at_start(env: dict[str, str]) -> list[str]:
    code = (
        "import sys, io, asyncio\n"
        "from bot.app import build_engine\n"
        "from bot.config import get_settings\n"
        "from bot.terminal import TerminalChat\n"
        "engine = build_engine(get_settings())\n"
        "chat = TerminalChat(engine, io.StringIO('/quit\\n'), io.StringIO())\n"
        "asyncio.run(chat.run())\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/bench.db", "TRAPBOT_SIM_CACHE_DIR": f"{tmp}/sims"}
        time_to_prompt(env)  # first run migrates the new database
        times = [time_to_prompt(env) for _ in range(args.runs)]
        heavy = heavy_modules_at_start(env)
    print(f"trapbot chat to first prompt: median {statistics.median(times) * 1000:.0f} ms "
          f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}, n={len(times)})")
    print(f"heavy modules imported at start: {heavy or 'none'}")


if __name__ == "__main__":
    main()
