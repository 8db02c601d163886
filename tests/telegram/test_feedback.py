"""Feedback while grading: "typing…" before the reading, and the first grade made while the
judge's model was still loading says so, once."""

from __future__ import annotations

import asyncio
from typing import Any


async def test_the_first_grade_during_the_warm_up_says_so_once(make_bot: Any) -> None:
    bot = await make_bot()
    api = bot.api
    loaded = asyncio.Event()
    bot.transport.warmup.task = asyncio.ensure_future(loaded.wait())  # as serve() sets it
    ada = api.user("Ada")
    try:
        mark = api.mark()
        api.send_command(ada, "trap")
        await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
        mark = api.mark()
        api.send_text(ada, "a proxy, not the goal")
        note = await api.wait_for(
            "sendMessage", since=mark, chat_id=ada.id, where=lambda c: "judge was still loading" in c.text
        )
        reading = api.calls_since(mark, "sendMessage", chat_id=ada.id)[0]
        assert "Check my reading" in reading.text and reading.index < note.index
        typing = await api.wait_for("sendChatAction", since=mark, chat_id=ada.id)
        assert typing.index < reading.index

        loaded.set()
        mark = api.mark()
        api.send_command(ada, "trap")  # the reading waits: the same trap's confirmation again
        await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
        mark = api.mark()
        api.send_text(ada, "another answer to grade")
        await api.wait_for("sendMessage", since=mark, chat_id=ada.id)
        await asyncio.sleep(0.2)
        assert not any("judge was still loading" in c.text for c in api.calls_since(mark, "sendMessage"))
    finally:
        loaded.set()
