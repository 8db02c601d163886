"""``TelegramTransport``: the Telegram bot, started and stopped on the shared event loop.

``trapbot run`` starts it when ``TELEGRAM_BOT_TOKEN`` is set. It long-polls by default and
listens for webhooks when ``TELEGRAM_WEBHOOK_URL`` is set; ``TELEGRAM_BASE_URL`` points it at
another Bot API server (a local ``telegram-bot-api``, or the fake one the tests use).

The PTB ``Application`` is driven by hand (initialize, start, start the updater; the reverse
on stop) rather than with ``run_polling``, which would own the event loop that Discord and the
reminder scheduler share.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from telegram import Update
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, TelegramError
from telegram.ext import AIORateLimiter, Application, ApplicationBuilder, BaseRateLimiter

from bot.telegram.delivery import Delivery, Destination
from bot.telegram.handlers import COMMANDS, PLATFORM, TelegramHandlers
from bot.telegram.sequencing import UserSequencer
from bot.transport import JudgeWarmup, PushOutcome

if TYPE_CHECKING:
    from telegram import Message

    from bot.config import Settings
    from bot.engine import QuizEngine
    from bot.models import Learner
    from bot.replies import Reply

log = logging.getLogger(__name__)

ALLOWED_UPDATES = (
    Update.MESSAGE,
    Update.EDITED_MESSAGE,
    Update.CALLBACK_QUERY,
    Update.MY_CHAT_MEMBER,
)
DEFAULT_RATE_LIMITER = "default"
#: Push failures that mean the chat is gone for good, reported as BadRequest by the Bot API.
UNREACHABLE = ("chat not found", "user not found", "peer_id_invalid")


def default_rate_limiter() -> AIORateLimiter:
    """Telegram's published limits (30 messages/s overall, 20/min per group), and retry on 429."""
    return AIORateLimiter(max_retries=3)


class TelegramTransport:
    """One Telegram bot: serves learners' updates and sends their pushes."""

    platform = PLATFORM

    def __init__(
        self,
        engine: QuizEngine,
        settings: Settings,
        *,
        rate_limiter: BaseRateLimiter[Any] | str | None = DEFAULT_RATE_LIMITER,
        plot_wait_seconds: float = 3.0,
        late_plot_seconds: float | None = None,
        split_wait_seconds: float = 1.5,
        retry_base_seconds: float = 0.5,
        poll_timeout_seconds: float = 10.0,
        webhook_listen: str = "0.0.0.0",
        max_concurrent_updates: int = 256,
        connection_pool_size: int = 32,
        pool_timeout_seconds: float = 10.0,
    ):
        if settings.telegram_bot_token is None:
            raise ValueError("TELEGRAM_BOT_TOKEN is not set")
        self.engine = engine
        self.settings = settings
        self._rate_limiter = (
            default_rate_limiter() if rate_limiter == DEFAULT_RATE_LIMITER else rate_limiter
        )
        self.plot_wait_seconds = plot_wait_seconds
        self.late_plot_seconds = late_plot_seconds
        self.split_wait_seconds = split_wait_seconds
        self.retry_base_seconds = retry_base_seconds
        self.poll_timeout_seconds = poll_timeout_seconds
        self.webhook_listen = webhook_listen
        self.sequencer = UserSequencer(max_concurrent_updates)
        self.connection_pool_size = connection_pool_size
        self.pool_timeout_seconds = pool_timeout_seconds
        self.app: Application[Any, Any, Any, Any, Any, Any] | None = None
        self.delivery: Delivery | None = None
        self.handlers: TelegramHandlers | None = None
        self.warmup = JudgeWarmup()  # the runner sets its task: the judge loading since start

    # ----- lifecycle --------------------------------------------------------------------

    def _build(self) -> Application[Any, Any, Any, Any, Any, Any]:
        assert self.settings.telegram_bot_token is not None
        builder = (
            ApplicationBuilder()
            .token(self.settings.telegram_bot_token.get_secret_value())
            .concurrent_updates(self.sequencer)
            .job_queue(None)  # the reminders have their own scheduler
            # httpcore scans its whole pool on every request: PTB's default of 256 connections
            # costs more CPU than it saves once many chats are busy. Requests beyond the pool
            # wait for a free connection (up to the pool timeout) instead.
            .connection_pool_size(self.connection_pool_size)
            .pool_timeout(self.pool_timeout_seconds)
        )
        if isinstance(self._rate_limiter, BaseRateLimiter):
            builder = builder.rate_limiter(self._rate_limiter)
        base = (self.settings.telegram_base_url or "").rstrip("/")
        if base:
            builder = builder.base_url(f"{base}/bot").base_file_url(f"{base}/file/bot")
        return builder.build()

    async def start(self) -> None:
        """Connect, register the commands, and start polling or the webhook listener."""
        if self.app is not None:
            return
        _keep_token_out_of_logs()
        app = self._build()
        self.delivery = Delivery(
            app.bot,
            self.engine,
            plot_wait_seconds=self.plot_wait_seconds,
            late_plot_seconds=self.late_plot_seconds,
            retry_base_seconds=self.retry_base_seconds,
        )
        self.handlers = TelegramHandlers(
            self.engine,
            self.delivery,
            self.sequencer,
            split_wait_seconds=self.split_wait_seconds,
            warmup=self.warmup,
        )
        self.handlers.register(app)
        try:
            await self._initialize(app)
            try:
                await self.delivery.call(lambda: app.bot.set_my_commands(COMMANDS))
            except TelegramError as error:  # the menu is a convenience; the bot works without it
                log.warning("setMyCommands failed: %s", error)
            await app.start()
            if self.settings.telegram_webhook_url:
                await self._start_webhook(app)
            else:
                await app.updater.start_polling(  # type: ignore[union-attr]
                    timeout=int(self.poll_timeout_seconds),
                    allowed_updates=list(ALLOWED_UPDATES),
                    bootstrap_retries=5,
                )
        except BaseException:
            await self._shutdown(app)
            raise
        self.app = app
        log.info(
            "telegram bot @%s is %s",
            app.bot.username,
            "on a webhook" if self.settings.telegram_webhook_url else "polling",
        )

    async def _initialize(self, app: Application[Any, Any, Any, Any, Any, Any]) -> None:
        """``getMe`` and friends, retried with backoff while the network is down."""
        delay = self.retry_base_seconds
        for attempt in range(1, 6):
            try:
                await app.initialize()
                return
            except InvalidToken:
                raise
            except NetworkError as error:
                if attempt == 5:
                    raise
                log.warning(
                    "Telegram is unreachable (%s); retrying in %.1f s", type(error).__name__, delay
                )
                await asyncio.sleep(delay)
                delay *= 2

    async def _start_webhook(self, app: Application[Any, Any, Any, Any, Any, Any]) -> None:
        url = self.settings.telegram_webhook_url
        assert url is not None
        # The public URL's path is the path we listen on, so a proxy can forward it unchanged.
        await app.updater.start_webhook(  # type: ignore[union-attr]
            listen=self.webhook_listen,
            port=self.settings.telegram_webhook_port,
            url_path=urlsplit(url).path.lstrip("/"),
            webhook_url=url,
            secret_token=secrets.token_urlsafe(32),
            allowed_updates=list(ALLOWED_UPDATES),
            bootstrap_retries=5,
        )

    async def stop(self) -> None:
        """Stop taking updates, finish what is in flight, then disconnect."""
        app, self.app = self.app, None
        if app is None:
            return
        await self._shutdown(app)

    async def _shutdown(self, app: Application[Any, Any, Any, Any, Any, Any]) -> None:
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        if app.running:
            await app.stop()  # waits for the updates being handled
        if self.handlers is not None:
            await self.handlers.flush_all()  # a long answer still waiting for its parts
        if self.delivery is not None:
            await self.delivery.close()  # late plots nobody will wait for any more
        await app.shutdown()

    # ----- pushes -----------------------------------------------------------------------

    async def push(self, learner: Learner, replies: list[Reply]) -> PushOutcome:
        """Send replies unprompted to the learner's private chat."""
        if self.app is None or self.delivery is None:
            return PushOutcome.FAILED
        target = learner.chat_id or learner.platform_user_id
        try:
            chat_id = int(target)
        except ValueError:
            log.warning("learner %s has no usable Telegram chat id", learner.id)
            return PushOutcome.BLOCKED
        sent: list[Message] = []
        try:
            await self.delivery.send(Destination(chat_id), replies, sent=sent)
        except Forbidden:
            self.engine.set_active(learner.id, False)
            return PushOutcome.BLOCKED
        except BadRequest as error:
            if any(reason in str(error).lower() for reason in UNREACHABLE):
                self.engine.set_active(learner.id, False)
                return PushOutcome.BLOCKED
            log.warning("push to learner %s failed: %s", learner.id, error)
            return PushOutcome.SENT if sent else PushOutcome.FAILED
        except TelegramError as error:  # RetryAfter after retries, network errors
            log.warning("push to learner %s failed: %s", learner.id, error)
            return PushOutcome.SENT if sent else PushOutcome.FAILED
        return PushOutcome.SENT


def _keep_token_out_of_logs() -> None:
    """httpx logs every request URL at INFO, and Bot API URLs contain the token."""
    http_log = logging.getLogger("httpx")
    if http_log.level == logging.NOTSET or http_log.level < logging.WARNING:
        http_log.setLevel(logging.WARNING)
