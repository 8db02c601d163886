"""``cards`` is the bottom floor (issue 40): none of its modules imports the grader, the
simulations or the bot, not even inside a function. The checks that need them (the grade rule,
sim names) live in ``bot.lint``."""

from __future__ import annotations

import ast
from pathlib import Path

import cards

HIGHER_FLOORS = {"bot", "grader", "sims", "bench"}


def imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_cards_imports_nothing_above_it() -> None:
    package = Path(cards.__file__).resolve().parent
    reaching_up = {
        path.name: sorted(imported_packages(path) & HIGHER_FLOORS) for path in sorted(package.glob("*.py"))
    }
    assert {name: found for name, found in reaching_up.items() if found} == {}
