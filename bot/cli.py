"""The ``trapbot`` command. Sub-commands import what they need when they run."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys


def _run(args: argparse.Namespace) -> int:
    from bot.config import get_settings

    settings = get_settings()
    if not settings.transports:
        print(
            "No TELEGRAM_BOT_TOKEN or DISCORD_BOT_TOKEN is set, so trapbot opens the terminal chat.",
            file=sys.stderr,
        )
        return _chat(args)
    from bot.app import StartupError, serve

    try:
        asyncio.run(serve(settings))
    except StartupError as error:
        print(f"trapbot could not start: {error}", file=sys.stderr)
        return 1
    return 0


def _chat(args: argparse.Namespace) -> int:
    from bot.app import build_engine
    from bot.config import get_settings
    from bot.db import migrate_if_needed
    from bot.terminal import QUIT_TEXT, run_chat

    settings = get_settings()
    migrate_if_needed(settings.database_url)
    engine = build_engine(settings)

    async def main() -> None:
        try:
            await run_chat(engine)
        finally:
            if engine.sims is not None:  # a plot still computing is of no use to a closed chat
                await engine.sims.close(terminate=True)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:  # Ctrl-C: every answer is stored as it is sent
        print(f"\n{QUIT_TEXT}", flush=True)
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from bot.config import get_settings
    from bot.db import migrate

    url = get_settings().database_url
    migrate(url)
    print(f"Database is at the newest schema: {url.split('@')[-1]}")
    return 0


#: Packages that add their own sub-commands with ``register(subparsers)``.
PLUGINS = ("bot.cards_cmd", "sims.cli", "grader.cli", "bot.anki")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trapbot", description="Drill the traps of RL and RLHF interviews.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="serve every configured chat platform (the terminal chat when none)").set_defaults(
        func=_run
    )
    sub.add_parser("chat", help="the quiz in this terminal").set_defaults(func=_chat)
    sub.add_parser("migrate", help="bring the database to the newest schema").set_defaults(func=_migrate)
    for name in PLUGINS:
        try:
            module = importlib.import_module(name)
        except ImportError as error:
            if error.name != name:
                raise
            continue
        module.register(sub)
    return parser


def configure_logging() -> None:
    """Text or JSON lines on stderr; configured secrets are masked in every record."""
    from bot.config import get_settings
    from bot.ops import JsonFormatter, SecretFilter

    settings = get_settings()
    handler = logging.StreamHandler()
    if settings.trapbot_log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(SecretFilter(settings.secrets()))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.trapbot_log_level.upper())
    for noisy in ("alembic", "httpx", "httpx2", "apscheduler", "sentence_transformers", "transformers", "openai"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    from pydantic import ValidationError

    from bot.config import get_settings

    args = build_parser().parse_args(argv)
    try:
        get_settings()
    except ValidationError as error:
        print(f"trapbot could not start: {settings_problems(error)}", file=sys.stderr)
        return 2
    configure_logging()
    args.judge_settings = get_settings().judge_settings()  # the grader reads no settings itself
    return args.func(args)


def settings_problems(error: Exception) -> str:
    """A settings validation error as one line: each variable, what is wrong, never its value
    (it may be a secret)."""
    problems = [
        f"{'.'.join(str(part) for part in item['loc']).upper()}: {item['msg']}"
        for item in error.errors()  # type: ignore[attr-defined]
    ]
    return "bad setting " + "; ".join(problems) + " (see the README's settings table)"


if __name__ == "__main__":
    sys.exit(main())
