"""The engine's rooms: the answer path stays small, and the stats plot takes plain data."""

from __future__ import annotations

import ast
from datetime import date
from pathlib import Path

from bot.stats_plot import render_stats

ROOT = Path(__file__).resolve().parent.parent


def test_the_engine_keeps_to_the_answer_path() -> None:
    lines = (ROOT / "bot" / "engine.py").read_text(encoding="utf-8").count("\n")
    assert lines <= 700, f"bot/engine.py has {lines} lines; settings, stats, snooze and history live beside it"


def test_the_stats_plot_imports_nothing_of_the_bot() -> None:
    tree = ast.parse((ROOT / "bot" / "stats_plot.py").read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not {name for name in imported if name and name.split(".")[0] == "bot"}


def test_the_stats_plot_draws_from_plain_data() -> None:
    png = render_stats([(date(2026, 3, 2), 2), (date(2026, 3, 3), 0)], {"kl-control": 0.4, "exploration": 0.9},
                       streak_days=3, reviews_done=7)
    assert png.startswith(b"\x89PNG")
