"""Steps several Telegram tests take the same way, against the loopback Bot API."""

from __future__ import annotations

from typing import Any


async def graded_trap(api: Any, user: Any, answer: str) -> Any:
    """``user`` asks for a trap, answers it, confirms the judge's reading: the verdict's call."""
    mark = api.mark()
    api.send_command(user, "trap")
    await api.wait_for("sendMessage", since=mark, chat_id=user.id)
    mark = api.mark()
    api.send_text(user, answer)
    confirm = await api.wait_for(
        "sendMessage", since=mark, chat_id=user.id, where=lambda c: "Check my reading" in c.text
    )
    mark = api.mark()
    api.press(user, confirm.result, next(d for _, d in confirm.buttons() if d.startswith("t1:ok:")))
    return await api.wait_for("sendMessage", since=mark, chat_id=user.id, where=lambda c: "Grade" in c.text)
