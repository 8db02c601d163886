"""CPU time to render every card's question, key and explanation for each adapter.

    PYTHONPATH=. python bench/render_speed.py

Prints the mean CPU (process) time per message beside wall time; the machine is shared, so
CPU time is the figure to compare.
"""

from __future__ import annotations

import time

from bot import texts
from bot.discord.format import to_discord_markdown
from bot.markup import to_terminal
from bot.telegram.format import render
from cards.deck import default_deck


def main() -> None:
    messages = [
        text
        for card in default_deck().cards
        for text in (
            texts.question_text(card, repeat=False, due_label=""),
            texts.key_text(card),
            texts.explanation_text(card),
        )
    ]
    mean_chars = sum(map(len, messages)) / len(messages)
    print(f"{len(messages)} messages, {mean_chars:.0f} characters on average")
    for name, renderer in (
        ("telegram", render),
        ("discord", to_discord_markdown),
        ("terminal", lambda text: to_terminal(text, color=True)),
    ):
        renderer(messages[0])
        wall, cpu = time.perf_counter(), time.process_time()
        for text in messages:
            renderer(text)
        count = len(messages)
        print(
            f"{name:9s} cpu {(time.process_time() - cpu) / count * 1e3:.2f} ms, "
            f"wall {(time.perf_counter() - wall) / count * 1e3:.2f} ms per message"
        )


if __name__ == "__main__":
    main()
