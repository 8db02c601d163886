"""Send the engine's replies to Telegram: chunked, with keyboards, photos, retries.

Failures: ``RetryAfter`` is first honoured by PTB's ``AIORateLimiter`` (it sleeps the time
Telegram asks for and retries); if it still comes through, it is slept once more here. Network
errors and timeouts are retried with exponential backoff. ``BadRequest`` and ``Forbidden`` are
not retried: they are raised for the caller (a push turns ``Forbidden`` into BLOCKED). A read
timeout after Telegram accepted a message can make a retry send it twice; a duplicate message
is the lesser evil next to a lost verdict.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from telegram import LinkPreviewOptions, Message, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError

from bot.replies import PLOT_FAILED, Reply
from bot.telegram.format import inline_keyboard, plot_caption, render, render_caption

if TYPE_CHECKING:
    from telegram import Bot

    from bot.engine import QuizEngine

log = logging.getLogger(__name__)
T = TypeVar("T")

NO_PREVIEW = LinkPreviewOptions(is_disabled=True)
TYPING_REFRESH_SECONDS = 4.5  # Telegram shows "typing" for about 5 s per action


@dataclass(frozen=True)
class Destination:
    """Where replies go: a chat, a forum topic in it, and the message to reply to (groups)."""

    chat_id: int
    thread_id: int | None = None
    reply_to: int | None = None


def retry_seconds(error: RetryAfter) -> float:
    """The wait Telegram asked for, whichever type this PTB version reports it as."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = error.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class Delivery:
    """Everything the adapter sends goes through here."""

    def __init__(
        self,
        bot: Bot,
        engine: QuizEngine,
        *,
        plot_wait_seconds: float = 3.0,
        late_plot_seconds: float | None = None,
        retry_base_seconds: float = 0.5,
        attempts: int = 4,
    ):
        self.bot = bot
        self.engine = engine
        self.plot_wait_seconds = plot_wait_seconds
        self.late_plot_seconds = late_plot_seconds
        self.retry_base_seconds = retry_base_seconds
        self.attempts = attempts
        self._background: set[asyncio.Task[Any]] = set()

    # ----- retries ---------------------------------------------------------------------

    async def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run one Bot API call, retrying what is worth retrying."""
        delay = self.retry_base_seconds
        for attempt in range(1, self.attempts + 1):
            try:
                return await make()
            except RetryAfter as error:
                if attempt == self.attempts:
                    raise
                await asyncio.sleep(retry_seconds(error) + 0.1)
            except BadRequest:
                raise
            except NetworkError as error:  # TimedOut included
                if attempt == self.attempts:
                    raise
                log.warning(
                    "Telegram call failed (%s); retrying in %.1f s", type(error).__name__, delay
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")

    # ----- sending ---------------------------------------------------------------------

    async def send(
        self, dest: Destination, replies: list[Reply], *, sent: list[Message] | None = None
    ) -> list[Message]:
        """Send every reply in order; only the first message replies to ``dest.reply_to``."""
        sent = [] if sent is None else sent
        for reply in replies:
            await self.send_reply(dest, reply, sent=sent)
            if sent:
                dest = replace(dest, reply_to=None)
        return sent

    async def send_reply(self, dest: Destination, reply: Reply, *, sent: list[Message]) -> None:
        chunks = render(reply.text)
        keyboard = inline_keyboard(reply.buttons)
        if not chunks and keyboard is not None:
            chunks = ["…"]  # a keyboard needs a message to hang on
        for index, chunk in enumerate(chunks):
            last = index == len(chunks) - 1
            sent.append(await self.message(dest, chunk, keyboard if last else None))
            dest = replace(dest, reply_to=None)
        if reply.image:
            await self.photo(dest, reply.image, reply.image_caption, sent=sent)
        if reply.plot_sim:
            await self.plot(dest, reply.plot_sim, sent=sent, card_id=reply.card_id)

    async def message(self, dest: Destination, html: str, keyboard: Any = None) -> Message:
        return await self.call(
            lambda: self.bot.send_message(
                dest.chat_id,
                html,
                parse_mode=ParseMode.HTML,
                reply_markup=keyboard,
                message_thread_id=dest.thread_id,
                reply_parameters=_reply_to(dest),
                link_preview_options=NO_PREVIEW,
            )
        )

    async def photo(
        self, dest: Destination, png: bytes, caption_markdown: str, *, sent: list[Message]
    ) -> None:
        caption, overflow = render_caption(caption_markdown)
        sent.append(
            await self.call(
                lambda: self.bot.send_photo(
                    dest.chat_id,
                    png,
                    caption=caption or None,
                    parse_mode=ParseMode.HTML,
                    filename="plot.png",
                    message_thread_id=dest.thread_id,
                    reply_parameters=_reply_to(dest),
                )
            )
        )
        for chunk in overflow:
            sent.append(await self.message(replace(dest, reply_to=None), chunk))

    async def plot(
        self, dest: Destination, sim_id: str, *, sent: list[Message], card_id: str | None = None
    ) -> None:
        """The simulation's plot now if it is ready within a few seconds, else when it is."""
        if self.engine.sims is None:
            return  # plots are off (TRAPBOT_PLOTS=false, or no simulation service)
        found = await self.engine.plot(sim_id, wait_seconds=self.plot_wait_seconds, card_id=card_id)
        if found is not None:
            await self.photo(dest, found.png, plot_caption(found.title, found.caption), sent=sent)
            return
        self.spawn(
            self._late_plot(replace(dest, reply_to=None), sim_id, card_id), name=f"late-plot:{sim_id}"
        )

    async def _late_plot(self, dest: Destination, sim_id: str, card_id: str | None = None) -> None:
        """The plot as a message of its own once it is computed (``late_plot_seconds`` None:
        however long that takes); if it cannot be made, the learner is told so."""
        found = await self.engine.plot(sim_id, wait_seconds=self.late_plot_seconds, card_id=card_id)
        try:
            if found is None:
                log.warning("plot %s could not be made; telling the learner", sim_id)
                await self.message(dest, render(PLOT_FAILED)[0])
                return
            await self.photo(dest, found.png, plot_caption(found.title, found.caption), sent=[])
        except TelegramError as error:
            log.warning("late plot %s could not be sent: %s", sim_id, error)

    # ----- editing ---------------------------------------------------------------------

    async def edit(self, chat_id: int, message_id: int, reply: Reply) -> bool:
        """Replace a message's text and buttons in place; False when it cannot be edited."""
        chunks = render(reply.text)
        if len(chunks) != 1 or reply.image or reply.plot_sim:
            return False
        try:
            await self.call(
                lambda: self.bot.edit_message_text(
                    chunks[0],
                    chat_id=chat_id,
                    message_id=message_id,
                    parse_mode=ParseMode.HTML,
                    reply_markup=inline_keyboard(reply.buttons),
                    link_preview_options=NO_PREVIEW,
                )
            )
        except BadRequest as error:
            if "not modified" in str(error).lower():
                return True
            log.info("could not edit message %s: %s", message_id, error)
            return False
        return True

    async def clear_buttons(self, chat_id: int, message_id: int) -> None:
        """Take the buttons off a message whose choice has been made (best effort)."""
        try:
            await self.call(
                lambda: self.bot.edit_message_reply_markup(
                    chat_id=chat_id, message_id=message_id, reply_markup=None
                )
            )
        except TelegramError as error:
            log.debug("could not clear buttons of message %s: %s", message_id, error)

    # ----- chat actions, background work -----------------------------------------------

    @asynccontextmanager
    async def typing(self, dest: Destination) -> AsyncIterator[None]:
        """Show "typing…" while the body runs (grading can take seconds with an LLM judge)."""
        await self._chat_action(dest)
        keeper = asyncio.create_task(self._keep_typing(dest), name="typing")
        try:
            yield
        finally:
            keeper.cancel()

    async def _keep_typing(self, dest: Destination) -> None:
        while True:
            await asyncio.sleep(TYPING_REFRESH_SECONDS)
            await self._chat_action(dest)

    async def _chat_action(self, dest: Destination) -> None:
        try:
            await self.bot.send_chat_action(
                dest.chat_id, ChatAction.TYPING, message_thread_id=dest.thread_id
            )
        except TelegramError as error:  # cosmetic: never fail an answer over it
            log.debug("chat action failed: %s", error)

    def spawn(self, work: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Run ``work`` beside the update handlers; ``close`` cancels what is left."""
        task = asyncio.create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    async def close(self) -> None:
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _reply_to(dest: Destination) -> ReplyParameters | None:
    if dest.reply_to is None:
        return None
    return ReplyParameters(message_id=dest.reply_to, allow_sending_without_reply=True)
