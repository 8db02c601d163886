"""A fake Telegram Bot API server on 127.0.0.1, for tests and benchmarks.

It speaks enough of the Bot API for python-telegram-bot to run against it unmodified, pointed
at it with ``base_url(f"{api.base_url}/bot")`` (trapbot: ``TELEGRAM_BASE_URL=api.base_url``):
``getMe``, ``getUpdates`` (long polling), ``setWebhook``/``deleteWebhook``/``getWebhookInfo``
(with webhook delivery to the bot), ``sendMessage``, ``sendPhoto`` (multipart),
``sendChatAction``, ``answerCallbackQuery``, ``editMessageText``, ``editMessageReplyMarkup``,
``deleteMessage``, ``setMyCommands``/``getMyCommands``/``deleteMyCommands``.

It checks what Telegram checks, with Telegram's error texts: HTML that does not parse (unknown
or unbalanced tags, a bare ``<``, ``>`` or ``&``), text over 4,096 or captions over 1,024
UTF-16 units after entity parsing, empty text, callback data over 64 bytes, unknown chats,
a second answer to a callback query, an edit that changes nothing. Failures can be injected
(``fail``: 429 with ``retry_after``, 403, 5xx) and a user can block the bot (``block``).

The test side plays the users: ``send_text``, ``send_command``, ``press``, ``send_content``,
``edit_text`` queue realistic updates; ``calls`` records every request and ``wait_for``
awaits one. Load it by path, since ``tests`` is not an importable package here::

    spec = importlib.util.spec_from_file_location("fake_bot_api", ROOT / "tests/telegram/fake_bot_api.py")
    module = importlib.util.module_from_spec(spec); sys.modules[spec.name] = module
    spec.loader.exec_module(module)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import ClientSession, web

BOT_TOKEN = "123456789:AAF-fake-token-for-the-local-bot-api"
MAX_TEXT = 4096
MAX_CAPTION = 1024
MAX_CALLBACK_DATA = 64
#: Parameters PTB sends JSON-encoded inside a form.
JSON_FIELDS = frozenset(
    {
        "reply_markup",
        "allowed_updates",
        "commands",
        "reply_parameters",
        "link_preview_options",
        "entities",
        "caption_entities",
        "scope",
        "media",
    }
)
INT_FIELDS = frozenset(
    {"chat_id", "message_id", "offset", "limit", "timeout", "message_thread_id", "max_connections"}
)
CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)


# ----- Telegram's HTML parse mode ---------------------------------------------------------


class HtmlError(ValueError):
    """HTML Telegram would refuse; the message is Telegram's own wording."""


_TAG_NAMES = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "code": "code",
    "pre": "pre",
    "a": "text_link",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "blockquote": "blockquote",
}
_TAG = re.compile(
    r"<(/?)([A-Za-z][A-Za-z0-9-]*)((?:\s+[A-Za-z-]+\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>\"']+))*)\s*>"
)
_ENTITY = re.compile(r"&(lt|gt|amp|quot|#[0-9]{1,7}|#x[0-9A-Fa-f]{1,6});")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_SPECIAL = re.compile(r"[<>&]")


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def parse_html(html: str) -> tuple[str, list[dict[str, Any]]]:
    """Text and entities (UTF-16 offsets) of a Telegram HTML string, or ``HtmlError``."""
    out: list[str] = []
    units = 0  # UTF-16 length of out so far
    stack: list[tuple[str, int, str]] = []  # tag, start offset, href
    entities: list[dict[str, Any]] = []
    pos = 0

    def byte_offset(index: int) -> int:
        return len(html[:index].encode("utf-8"))

    while pos < len(html):
        ch = html[pos]
        if ch == "<":
            match = _TAG.match(html, pos)
            if match is None:
                raise HtmlError(
                    f"Bad Request: can't parse entities: Unsupported start tag at byte offset {byte_offset(pos)}"
                )
            closing, name = match.group(1) == "/", match.group(2).lower()
            if name not in _TAG_NAMES:
                raise HtmlError(
                    f'Bad Request: can\'t parse entities: Unsupported start tag "{name}" at byte offset {byte_offset(pos)}'
                )
            if closing:
                if not stack or stack[-1][0] != name:
                    expected = f"</{stack[-1][0]}>" if stack else "nothing"
                    raise HtmlError(
                        "Bad Request: can't parse entities: Unmatched end tag at byte offset "
                        f'{byte_offset(pos)}, expected "{expected}", found "</{name}>"'
                    )
                tag, start, href = stack.pop()
                if units > start:
                    entity: dict[str, Any] = {
                        "type": _TAG_NAMES[tag],
                        "offset": start,
                        "length": units - start,
                    }
                    if tag == "a":
                        entity["url"] = href
                    entities.append(entity)
            else:
                href_match = re.search(r"href\s*=\s*[\"']?([^\"'\s>]+)", match.group(3) or "")
                stack.append((name, units, href_match.group(1) if href_match else ""))
            pos = match.end()
            continue
        if ch == "&":
            match = _ENTITY.match(html, pos)
            if match is None:
                raise HtmlError(
                    f"Bad Request: can't parse entities: Character '&' is reserved and must be escaped at byte offset {byte_offset(pos)}"
                )
            name = match.group(1)
            if name.startswith("#x"):
                decoded = chr(int(name, 0))
            elif name.startswith("#"):
                decoded = chr(int(name[1:]))
            else:
                decoded = _NAMED[name]
            out.append(decoded)
            units += utf16_length(decoded)
            pos = match.end()
            continue
        if ch == ">":
            raise HtmlError(
                f"Bad Request: can't parse entities: Character '>' is reserved and must be escaped at byte offset {byte_offset(pos)}"
            )
        special = _SPECIAL.search(html, pos)
        end = special.start() if special else len(html)
        out.append(html[pos:end])
        units += utf16_length(html[pos:end])
        pos = end
    if stack:
        raise HtmlError(
            f"Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"{stack[-1][0]}\""
        )
    return _strip_with_entities("".join(out), entities)


def _strip_with_entities(
    text: str, entities: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    """Telegram trims surrounding whitespace and shifts the entities with it."""
    lead = utf16_length(text) - utf16_length(text.lstrip())
    stripped = text.strip()
    total = utf16_length(stripped)
    kept = []
    for entity in sorted(entities, key=lambda e: (e["offset"], -e["length"])):
        start = max(0, entity["offset"] - lead)
        end = min(total, entity["offset"] + entity["length"] - lead)
        if end > start:
            kept.append({**entity, "offset": start, "length": end - start})
    return stripped, kept


# ----- the record of calls --------------------------------------------------------------


@dataclass
class ApiCall:
    """One request the bot made, and what the fake answered."""

    index: int
    method: str  # as the bot spelled it, e.g. "sendMessage"
    params: dict[str, Any]
    files: dict[str, bytes]
    status: int
    result: Any  # the "result" on success, the error description otherwise
    at: float  # time.monotonic() when answered

    @property
    def ok(self) -> bool:
        return self.status == 200

    @property
    def chat_id(self) -> int | None:
        value = self.params.get("chat_id")
        return int(value) if value is not None else None

    @property
    def text(self) -> str:
        """The plain text the user sees (after entity parsing) of a message or caption."""
        if isinstance(self.result, dict):
            return self.result.get("text") or self.result.get("caption") or ""
        return ""

    @property
    def html(self) -> str:
        return str(self.params.get("text") or self.params.get("caption") or "")

    def button_data(self) -> list[str]:
        return [b.get("callback_data", "") for row in _keyboard(self.params) for b in row]

    def buttons(self) -> list[tuple[str, str]]:
        return [
            (b["text"], b.get("callback_data", "")) for row in _keyboard(self.params) for b in row
        ]


def _keyboard(params: dict[str, Any]) -> list[list[dict[str, Any]]]:
    markup = params.get("reply_markup")
    if isinstance(markup, dict):
        return markup.get("inline_keyboard", [])
    return []


@dataclass(frozen=True)
class FakeUser:
    id: int
    first_name: str
    username: str | None = None
    last_name: str | None = None
    language_code: str = "en"

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "is_bot": False, "first_name": self.first_name}
        if self.last_name:
            data["last_name"] = self.last_name
        if self.username:
            data["username"] = self.username
        data["language_code"] = self.language_code
        return data


class ApiError(Exception):
    def __init__(self, status: int, description: str, parameters: dict[str, Any] | None = None):
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters


@dataclass
class _Failure:
    method: str
    status: int
    description: str
    retry_after: int | None
    chat_id: int | None
    times: int


@dataclass
class _Webhook:
    url: str
    secret_token: str | None
    allowed_updates: list[str] | None
    task: asyncio.Task[None] | None = field(default=None, repr=False)


# ----- the server -----------------------------------------------------------------------


class FakeBotApi:
    """A Bot API stand-in: ``async with FakeBotApi() as api: ...`` or ``await api.start()``."""

    def __init__(
        self,
        token: str = BOT_TOKEN,
        *,
        bot_id: int | None = None,
        username: str = "trapbot_test_bot",
        first_name: str = "trapbot",
        sends_per_second: float | None = None,
    ):
        self.token = token
        # Telegram's global limit: more sends than this in any one-second window get a 429.
        self.sends_per_second = sends_per_second
        self._recent_sends: list[float] = []
        self.rate_limited = 0
        self.bot_id = bot_id if bot_id is not None else int(token.split(":", 1)[0])
        self.username = username
        self.first_name = first_name
        self.calls: list[ApiCall] = []
        self.commands: list[dict[str, str]] = []
        self.pending: list[dict[str, Any]] = []  # updates not yet confirmed by an offset
        self.chats: dict[int, dict[str, Any]] = {}
        self.known_users: dict[int, FakeUser] = {}
        self.blocked: set[int] = set()
        self.admins: dict[int, dict[int, str]] = {}  # group chat id -> user id -> "creator" / "administrator"
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.photos: dict[tuple[int, int], bytes] = {}
        self.callback_queries: dict[str, bool] = {}  # id -> answered
        self.callback_answers: dict[str, dict[str, Any]] = {}
        self.webhook: _Webhook | None = None
        self._failures: list[_Failure] = []
        self._update_ids = itertools.count(700_000_001)
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._user_ids = itertools.count(100_000_001)
        self._group_ids = itertools.count(1)
        self._query_ids = itertools.count(4_000_000_000_001)
        self._changed: asyncio.Condition | None = None
        self._runner: web.AppRunner | None = None
        self._client: ClientSession | None = None
        self._closing = False
        self.port = 0

    # ----- lifecycle --------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """What TELEGRAM_BASE_URL should be: the bot calls ``{base_url}/bot<token>/<method>``."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FakeBotApi:
        self._changed = asyncio.Condition()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        self._closing = True
        await self._notify()
        if self.webhook is not None and self.webhook.task is not None:
            self.webhook.task.cancel()
            await asyncio.gather(self.webhook.task, return_exceptions=True)
        if self._client is not None:
            await self._client.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _notify(self) -> None:
        assert self._changed is not None
        async with self._changed:
            self._changed.notify_all()

    def _notify_soon(self) -> None:
        if self._changed is not None:
            asyncio.get_running_loop().create_task(self._notify())

    # ----- people and chats -------------------------------------------------------------

    @property
    def bot_user(self) -> dict[str, Any]:
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": self.first_name,
            "username": self.username,
        }

    def user(
        self, first_name: str = "Ada", *, user_id: int | None = None, username: str | None = None
    ) -> FakeUser:
        person = FakeUser(
            user_id if user_id is not None else next(self._user_ids), first_name, username
        )
        self.known_users[person.id] = person
        return person

    def private_chat(self, person: FakeUser) -> dict[str, Any]:
        chat = {"id": person.id, "type": "private", "first_name": person.first_name}
        if person.username:
            chat["username"] = person.username
        self.chats[person.id] = chat
        return chat

    def group(self, title: str = "RL reading group", *, forum: bool = False, basic: bool = False) -> dict[str, Any]:
        """A supergroup; ``basic``: a basic group (a small negative id, may migrate to a supergroup)."""
        number = next(self._group_ids)
        chat_id = -4_000_000 - number if basic else -1_001_000_000_000 - number
        chat: dict[str, Any] = {"id": chat_id, "type": "group" if basic else "supergroup", "title": title}
        if forum:
            chat["is_forum"] = True
        self.chats[chat_id] = chat
        return chat

    def make_admin(self, chat: dict[str, Any], person: FakeUser, *, owner: bool = False) -> None:
        """``person`` becomes the group's creator or one of its administrators (getChatMember says so)."""
        self.admins.setdefault(chat["id"], {})[person.id] = "creator" if owner else "administrator"

    def migrate(self, chat: dict[str, Any]) -> dict[str, Any]:
        """A basic group becomes a supergroup with a new id, as Telegram reports it: a service
        message in the old chat naming the new id, and one in the new chat naming the old."""
        new = {"id": -1_001_000_000_000 - next(self._group_ids), "type": "supergroup", "title": chat.get("title", "")}
        self.chats[new["id"]] = new
        self.admins[new["id"]] = dict(self.admins.get(chat["id"], {}))
        sender = {"id": 1087968824, "is_bot": True, "first_name": "Group", "username": "GroupAnonymousBot"}
        for where, field_name, value in ((chat, "migrate_to_chat_id", new["id"]), (new, "migrate_from_chat_id", chat["id"])):
            message = {
                "message_id": self._next_message_id(where["id"]),
                "from": sender,
                "sender_chat": where,
                "chat": where,
                "date": int(time.time()),
                field_name: value,
            }
            self.messages[(where["id"], message["message_id"])] = message
            self.enqueue(message=message)
        return new

    def block(self, person: FakeUser, *, notify: bool = False) -> None:
        """The user blocks the bot: sends to their private chat get 403 from now on."""
        self.blocked.add(person.id)
        if notify:
            self._member_update(person, "kicked")

    def unblock(self, person: FakeUser, *, notify: bool = False) -> None:
        self.blocked.discard(person.id)
        if notify:
            self._member_update(person, "member")

    def _member_update(self, person: FakeUser, status: str) -> dict[str, Any]:
        old = "member" if status == "kicked" else "kicked"
        return self.enqueue(
            my_chat_member={
                "chat": self.chats.get(person.id) or self.private_chat(person),
                "from": person.json(),
                "date": int(time.time()),
                "old_chat_member": {
                    "status": old,
                    "user": self.bot_user,
                    **({"until_date": 0} if old == "kicked" else {}),
                },
                "new_chat_member": {
                    "status": status,
                    "user": self.bot_user,
                    **({"until_date": 0} if status == "kicked" else {}),
                },
            }
        )

    # ----- the users' side: queue updates -------------------------------------------------

    def enqueue(self, **fields: Any) -> dict[str, Any]:
        """Queue a raw update (``message=...``, ``callback_query=...``); the update id is added."""
        update = {"update_id": next(self._update_ids), **fields}
        self.pending.append(update)
        self._notify_soon()
        return update

    def _next_message_id(self, chat_id: int) -> int:
        counter = self._message_ids.setdefault(chat_id, itertools.count(1))
        return next(counter)

    def _user_message(
        self,
        person: FakeUser,
        chat: dict[str, Any] | None,
        *,
        reply_to: dict[str, Any] | None = None,
        thread_id: int | None = None,
        **content: Any,
    ) -> dict[str, Any]:
        chat = chat or self.chats.get(person.id) or self.private_chat(person)
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat["id"]),
            "from": person.json(),
            "chat": chat,
            "date": int(time.time()),
            **content,
        }
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        if reply_to is not None:
            message["reply_to_message"] = self._current(reply_to)
        self.messages[(chat["id"], message["message_id"])] = message
        return message

    def _current(self, message: dict[str, Any]) -> dict[str, Any]:
        """The latest version of a message (after edits), without its own reply-to."""
        stored = self.messages.get((message["chat"]["id"], message["message_id"]), message)
        return {k: v for k, v in stored.items() if k != "reply_to_message"}

    def send_text(
        self,
        person: FakeUser,
        text: str,
        *,
        chat: dict[str, Any] | None = None,
        reply_to: dict[str, Any] | None = None,
        thread_id: int | None = None,
    ) -> dict[str, Any]:
        """The user sends a text message; command and @mention entities are added like Telegram does."""
        text = text.strip()  # Telegram trims what users send
        entities = _auto_entities(text)
        content: dict[str, Any] = {"text": text}
        if entities:
            content["entities"] = entities
        message = self._user_message(
            person, chat, reply_to=reply_to, thread_id=thread_id, **content
        )
        self.enqueue(message=message)
        return message

    def send_command(
        self,
        person: FakeUser,
        command: str,
        args: str = "",
        *,
        chat: dict[str, Any] | None = None,
        address_bot: bool = False,
    ) -> dict[str, Any]:
        head = f"/{command}@{self.username}" if address_bot else f"/{command}"
        return self.send_text(person, f"{head} {args}".rstrip(), chat=chat)

    def send_content(
        self,
        person: FakeUser,
        kind: str,
        *,
        chat: dict[str, Any] | None = None,
        reply_to: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A non-text message: ``sticker``, ``photo``, ``voice``, ``document`` or ``location``."""
        file = {
            "file_id": f"fake-{kind}-{next(self._update_ids)}",
            "file_unique_id": f"u{next(self._update_ids)}",
        }
        contents = {
            "sticker": {
                "sticker": {
                    **file,
                    "type": "regular",
                    "width": 512,
                    "height": 512,
                    "is_animated": False,
                    "is_video": False,
                    "emoji": "👍",
                }
            },
            "photo": {"photo": [{**file, "width": 90, "height": 90, "file_size": 1200}]},
            "voice": {"voice": {**file, "duration": 3, "mime_type": "audio/ogg"}},
            "document": {
                "document": {**file, "file_name": "answer.pdf", "mime_type": "application/pdf"}
            },
            "location": {"location": {"latitude": 52.52, "longitude": 13.405}},
        }
        message = self._user_message(person, chat, reply_to=reply_to, **contents[kind])
        self.enqueue(message=message)
        return message

    def edit_text(self, person: FakeUser, message: dict[str, Any], new_text: str) -> dict[str, Any]:
        edited = {**self._current(message), "text": new_text, "edit_date": int(time.time())}
        self.messages[(message["chat"]["id"], message["message_id"])] = edited
        self.enqueue(edited_message=edited)
        return edited

    def press(
        self, person: FakeUser, message: dict[str, Any], data: str, *, check: bool = True
    ) -> str:
        """The user taps an inline button of a bot message; returns the callback query id.

        ``check`` insists the button is on the message as it is now (a forged press passes False).
        """
        current = self._current(message)
        if check:
            present = [
                b.get("callback_data")
                for row in current.get("reply_markup", {}).get("inline_keyboard", [])
                for b in row
            ]
            if data not in present:
                raise AssertionError(
                    f"no button {data!r} on message {current.get('message_id')}: {present}"
                )
        query_id = str(next(self._query_ids))
        self.callback_queries[query_id] = False
        self.enqueue(
            callback_query={
                "id": query_id,
                "from": person.json(),
                "message": current,
                "chat_instance": str(abs(current["chat"]["id"]) * 7 + 3),
                "data": data,
            }
        )
        return query_id

    # ----- the test's side: observe -----------------------------------------------------

    def mark(self) -> int:
        """A cursor: calls from here on are "since" it."""
        return len(self.calls)

    def calls_since(
        self,
        mark: int = 0,
        method: str | None = None,
        *,
        chat_id: int | None = None,
        ok: bool | None = True,
    ) -> list[ApiCall]:
        return [
            call
            for call in self.calls[mark:]
            if (method is None or call.method.lower() == method.lower())
            and (chat_id is None or call.chat_id == chat_id)
            and (ok is None or call.ok == ok)
        ]

    async def wait_for(
        self,
        method: str | None = None,
        *,
        since: int = 0,
        chat_id: int | None = None,
        where: Callable[[ApiCall], bool] | None = None,
        ok: bool | None = True,
        timeout: float = 10.0,
    ) -> ApiCall:
        """The first call since ``since`` that matches; waits for it up to ``timeout`` seconds."""
        assert self._changed is not None
        checked = since  # calls before this index are known not to match

        def find() -> ApiCall | None:
            nonlocal checked
            while checked < len(self.calls):
                call = self.calls[checked]
                checked += 1
                if (
                    (method is None or call.method.lower() == method.lower())
                    and (chat_id is None or call.chat_id == chat_id)
                    and (ok is None or call.ok == ok)
                    and (where is None or where(call))
                ):
                    checked -= 1  # found: stay on it
                    return call
            return None

        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: find() is not None), timeout)
            except TimeoutError:
                recent = [(c.method, c.status, c.text[:60]) for c in self.calls[since:]][-12:]
                raise AssertionError(
                    f"no {method or 'call'} matched within {timeout} s; calls since: {recent}"
                ) from None
        found = find()
        assert found is not None
        return found

    async def drained(self, timeout: float = 10.0) -> None:
        """Wait until the bot has fetched every queued update."""
        assert self._changed is not None
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: not self.pending), timeout)

    def fail(
        self,
        method: str,
        *,
        status: int = 500,
        description: str = "Internal Server Error",
        retry_after: int | None = None,
        chat_id: int | None = None,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` calls of ``method`` (to ``chat_id``) fail like this."""
        self._failures.append(
            _Failure(method.lower(), status, description, retry_after, chat_id, times)
        )

    def message(self, chat_id: int, message_id: int) -> dict[str, Any]:
        return self.messages[(chat_id, message_id)]

    def photo_bytes(self, call: ApiCall) -> bytes:
        return self.photos[(call.result["chat"]["id"], call.result["message_id"])]

    # ----- HTTP ---------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params, files = await _read_params(request)
        status, body = 200, None
        if request.match_info["token"] != self.token:
            status, body = 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        else:
            try:
                self._maybe_fail(method.lower(), params)
                handler = getattr(self, f"_api_{method.lower()}", None)
                if handler is None:
                    raise ApiError(404, "Not Found")
                result = await handler(params, files)
                body = {"ok": True, "result": result}
            except ApiError as error:
                status = error.status
                body = {"ok": False, "error_code": error.status, "description": error.description}
                if error.parameters:
                    body["parameters"] = error.parameters
        call = ApiCall(
            index=len(self.calls),
            method=method,
            params=params,
            files=files,
            status=status,
            result=body.get("result") if status == 200 else body.get("description"),
            at=time.monotonic(),
        )
        self.calls.append(call)
        await self._notify()
        return web.json_response(body, status=status)

    def _maybe_fail(self, method: str, params: dict[str, Any]) -> None:
        if self.sends_per_second is not None and method.startswith(("send", "edit", "answer")) and method != "sendchataction":
            now = time.monotonic()
            self._recent_sends = [t for t in self._recent_sends if now - t < 1.0]
            if len(self._recent_sends) >= self.sends_per_second:
                self.rate_limited += 1
                raise ApiError(429, "Too Many Requests: retry after 1", {"retry_after": 1})
            self._recent_sends.append(now)
        for failure in self._failures:
            if failure.method != method or failure.times <= 0:
                continue
            if failure.chat_id is not None and str(params.get("chat_id")) != str(failure.chat_id):
                continue
            failure.times -= 1
            parameters = (
                {"retry_after": failure.retry_after} if failure.retry_after is not None else None
            )
            raise ApiError(failure.status, failure.description, parameters)

    # ----- methods ------------------------------------------------------------------------

    async def _api_getme(self, params: dict[str, Any], files: dict[str, bytes]) -> dict[str, Any]:
        return {
            **self.bot_user,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    async def _api_getupdates(
        self, params: dict[str, Any], files: dict[str, bytes]
    ) -> list[dict[str, Any]]:
        if self.webhook is not None:
            raise ApiError(
                409,
                "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
            )
        offset = int(params.get("offset") or 0)
        limit = max(1, min(100, int(params.get("limit") or 100)))
        timeout = float(params.get("timeout") or 0)
        if offset:
            self.pending = [u for u in self.pending if u["update_id"] >= offset]
            self._notify_soon()
        assert self._changed is not None
        if not self.pending and timeout > 0 and not self._closing:
            async with self._changed:
                try:
                    await asyncio.wait_for(
                        self._changed.wait_for(lambda: bool(self.pending) or self._closing), timeout
                    )
                except TimeoutError:
                    pass
        return self.pending[:limit]

    async def _api_deletewebhook(self, params: dict[str, Any], files: dict[str, bytes]) -> bool:
        if self.webhook is not None and self.webhook.task is not None:
            self.webhook.task.cancel()
        self.webhook = None
        if _truthy(params.get("drop_pending_updates")):
            self.pending.clear()
        return True

    async def _api_setwebhook(self, params: dict[str, Any], files: dict[str, bytes]) -> bool:
        url = str(params.get("url") or "")
        if not url:
            return await self._api_deletewebhook(params, files)
        if not url.startswith(("https://", "http://")):
            raise ApiError(
                400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"
            )
        if self.webhook is not None and self.webhook.task is not None:
            self.webhook.task.cancel()
        if _truthy(params.get("drop_pending_updates")):
            self.pending.clear()
        self.webhook = _Webhook(url, params.get("secret_token"), params.get("allowed_updates"))
        self.webhook.task = asyncio.get_running_loop().create_task(self._deliver(self.webhook))
        return True

    async def _api_getwebhookinfo(
        self, params: dict[str, Any], files: dict[str, bytes]
    ) -> dict[str, Any]:
        return {
            "url": self.webhook.url if self.webhook else "",
            "has_custom_certificate": False,
            "pending_update_count": len(self.pending),
        }

    async def _deliver(self, hook: _Webhook) -> None:
        """Post queued updates to the webhook one at a time, in order, retrying failures."""
        if self._client is None:
            self._client = ClientSession()
        headers = (
            {"X-Telegram-Bot-Api-Secret-Token": hook.secret_token} if hook.secret_token else {}
        )
        assert self._changed is not None
        while self.webhook is hook:
            async with self._changed:
                await self._changed.wait_for(lambda: bool(self.pending) or self.webhook is not hook)
            if self.webhook is not hook:
                return
            update = self.pending[0]
            try:
                async with self._client.post(hook.url, json=update, headers=headers) as response:
                    delivered = 200 <= response.status < 300
            except OSError:
                delivered = False
            if delivered:
                if self.pending and self.pending[0] is update:
                    self.pending.pop(0)
                await self._notify()
            else:
                await asyncio.sleep(0.1)

    async def _api_setmycommands(self, params: dict[str, Any], files: dict[str, bytes]) -> bool:
        commands = params.get("commands") or []
        if not isinstance(commands, list) or len(commands) > 100:
            raise ApiError(400, "Bad Request: too many commands")
        for command in commands:
            name, description = command.get("command", ""), command.get("description", "")
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(description) <= 256:
                raise ApiError(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID")
        self.commands = [
            {"command": c["command"], "description": c["description"]} for c in commands
        ]
        return True

    async def _api_getmycommands(
        self, params: dict[str, Any], files: dict[str, bytes]
    ) -> list[dict[str, str]]:
        return list(self.commands)

    async def _api_deletemycommands(self, params: dict[str, Any], files: dict[str, bytes]) -> bool:
        self.commands = []
        return True

    def _chat_for_send(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("chat_id") is None:
            raise ApiError(400, "Bad Request: chat_id is empty")
        chat_id = int(params["chat_id"])
        if chat_id in self.blocked:
            raise ApiError(403, "Forbidden: bot was blocked by the user")
        if chat_id in self.chats:
            return self.chats[chat_id]
        if chat_id in self.known_users:
            raise ApiError(403, "Forbidden: bot can't initiate conversation with a user")
        raise ApiError(400, "Bad Request: chat not found")

    def _reply_target(self, chat: dict[str, Any], params: dict[str, Any]) -> dict[str, Any] | None:
        reply = params.get("reply_parameters")
        if not isinstance(reply, dict) or "message_id" not in reply:
            return None
        target = self.messages.get((chat["id"], int(reply["message_id"])))
        if target is None and not reply.get("allow_sending_without_reply"):
            raise ApiError(400, "Bad Request: message to be replied not found")
        return {k: v for k, v in target.items() if k != "reply_to_message"} if target else None

    def _bot_message(
        self, chat: dict[str, Any], params: dict[str, Any], **content: Any
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat["id"]),
            "from": self.bot_user,
            "chat": chat,
            "date": int(time.time()),
            **content,
        }
        if params.get("message_thread_id") is not None and chat.get("is_forum"):
            message["message_thread_id"] = int(params["message_thread_id"])
            message["is_topic_message"] = True
        replied = self._reply_target(chat, params)
        if replied is not None:
            message["reply_to_message"] = replied
        markup = _checked_markup(params.get("reply_markup"))
        if markup is not None:
            message["reply_markup"] = markup
        self.messages[(chat["id"], message["message_id"])] = message
        return message

    async def _api_sendmessage(
        self, params: dict[str, Any], files: dict[str, bytes]
    ) -> dict[str, Any]:
        chat = self._chat_for_send(params)
        text, entities = _parse_text(params.get("text"), params.get("parse_mode"))
        if not text:
            raise ApiError(400, "Bad Request: message text is empty")
        if utf16_length(text) > MAX_TEXT:
            raise ApiError(400, "Bad Request: message is too long")
        content: dict[str, Any] = {"text": text}
        if entities:
            content["entities"] = entities
        return self._bot_message(chat, params, **content)

    async def _api_sendphoto(
        self, params: dict[str, Any], files: dict[str, bytes]
    ) -> dict[str, Any]:
        chat = self._chat_for_send(params)
        png = files.get("photo")
        if png is None:
            raise ApiError(400, "Bad Request: there is no photo in the request")
        caption, entities = _parse_text(params.get("caption"), params.get("parse_mode"))
        if utf16_length(caption) > MAX_CAPTION:
            raise ApiError(400, "Bad Request: message caption is too long")
        width, height = _png_size(png)
        unique = next(self._update_ids)
        sizes = [
            {
                "file_id": f"photo-{unique}-{i}",
                "file_unique_id": f"p{unique}{i}",
                "width": w,
                "height": h,
                "file_size": len(png) // (4 - i),
            }
            for i, (w, h) in enumerate(
                [
                    (max(1, width // 10), max(1, height // 10)),
                    (max(1, width // 3), max(1, height // 3)),
                    (width, height),
                ]
            )
        ]
        content: dict[str, Any] = {"photo": sizes}
        if caption:
            content["caption"] = caption
        if entities:
            content["caption_entities"] = entities
        message = self._bot_message(chat, params, **content)
        self.photos[(chat["id"], message["message_id"])] = png
        return message

    async def _api_sendchataction(self, params: dict[str, Any], files: dict[str, bytes]) -> bool:
        self._chat_for_send(params)
        if params.get("action") not in CHAT_ACTIONS:
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        return True

    async def _api_getchatmember(self, params: dict[str, Any], files: dict[str, bytes]) -> dict[str, Any]:
        chat_id, user_id = int(params.get("chat_id") or 0), int(params.get("user_id") or 0)
        if chat_id not in self.chats:
            raise ApiError(400, "Bad Request: chat not found")
        person = self.known_users.get(user_id)
        if person is None:
            raise ApiError(400, "Bad Request: user not found")
        status = self.admins.get(chat_id, {}).get(user_id, "member")
        member: dict[str, Any] = {"status": status, "user": person.json()}
        if status == "creator":
            member["is_anonymous"] = False
        elif status == "administrator":
            member.update(
                {
                    "can_be_edited": False,
                    "is_anonymous": False,
                    "can_manage_chat": True,
                    "can_delete_messages": True,
                    "can_manage_video_chats": True,
                    "can_restrict_members": True,
                    "can_promote_members": False,
                    "can_change_info": True,
                    "can_invite_users": True,
                    "can_post_stories": False,
                    "can_edit_stories": False,
                    "can_delete_stories": False,
                }
            )
        return member

    async def _api_answercallbackquery(
        self, params: dict[str, Any], files: dict[str, bytes]
    ) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        if self.callback_queries.get(query_id, True):
            raise ApiError(
                400,
                "Bad Request: query is too old and response timeout expired or query ID is invalid",
            )
        text = str(params.get("text") or "")
        if len(text) > 200:
            raise ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        self.callback_queries[query_id] = True
        self.callback_answers[query_id] = {
            "text": text,
            "show_alert": _truthy(params.get("show_alert")),
        }
        return True

    def _editable(self, params: dict[str, Any]) -> tuple[tuple[int, int], dict[str, Any]]:
        if params.get("chat_id") is None or params.get("message_id") is None:
            raise ApiError(400, "Bad Request: message identifier is not specified")
        key = (int(params["chat_id"]), int(params["message_id"]))
        message = self.messages.get(key)
        if message is None:
            raise ApiError(400, "Bad Request: message to edit not found")
        if message["from"]["id"] != self.bot_id:
            raise ApiError(400, "Bad Request: message can't be edited")
        return key, message

    async def _api_editmessagetext(
        self, params: dict[str, Any], files: dict[str, bytes]
    ) -> dict[str, Any]:
        key, message = self._editable(params)
        text, entities = _parse_text(params.get("text"), params.get("parse_mode"))
        if not text:
            raise ApiError(400, "Bad Request: message text is empty")
        if utf16_length(text) > MAX_TEXT:
            raise ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        markup = _checked_markup(params.get("reply_markup"))
        if (
            message.get("text") == text
            and message.get("entities", []) == entities
            and message.get("reply_markup") == markup
        ):
            raise ApiError(
                400,
                "Bad Request: message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message",
            )
        edited = {k: v for k, v in message.items() if k not in ("entities", "reply_markup")}
        edited.update(text=text, edit_date=int(time.time()))
        if entities:
            edited["entities"] = entities
        if markup is not None:
            edited["reply_markup"] = markup
        self.messages[key] = edited
        return edited

    async def _api_editmessagereplymarkup(
        self, params: dict[str, Any], files: dict[str, bytes]
    ) -> dict[str, Any]:
        key, message = self._editable(params)
        markup = _checked_markup(params.get("reply_markup"))
        if message.get("reply_markup") == markup:
            raise ApiError(
                400,
                "Bad Request: message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message",
            )
        edited = {k: v for k, v in message.items() if k != "reply_markup"}
        edited["edit_date"] = int(time.time())
        if markup is not None:
            edited["reply_markup"] = markup
        self.messages[key] = edited
        return edited

    async def _api_deletemessage(self, params: dict[str, Any], files: dict[str, bytes]) -> bool:
        key, _ = self._editable(params)
        del self.messages[key]
        return True


# ----- helpers --------------------------------------------------------------------------


async def _read_params(request: web.Request) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Parameters from a query string, a form, a multipart body or JSON, decoded like Telegram."""
    raw: dict[str, Any] = dict(request.query)
    files: dict[str, bytes] = {}
    if request.can_read_body:
        if request.content_type == "application/json":
            raw.update(await request.json())
        else:
            form = await request.post()
            for name, value in form.items():
                if isinstance(value, web.FileField):
                    files[name] = value.file.read()
                else:
                    raw[name] = value
    params: dict[str, Any] = {}
    for name, value in raw.items():
        if isinstance(value, str) and name in JSON_FIELDS:
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        elif isinstance(value, str) and name in INT_FIELDS and re.fullmatch(r"-?\d+", value):
            value = int(value)
        params[name] = value
    return params, files


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1"))


def _parse_text(value: Any, parse_mode: Any) -> tuple[str, list[dict[str, Any]]]:
    text = "" if value is None else str(value)
    if str(parse_mode or "").upper() == "HTML":
        try:
            return parse_html(text)
        except HtmlError as error:
            raise ApiError(400, str(error)) from None
    return text.strip(), []


def _checked_markup(markup: Any) -> dict[str, Any] | None:
    if markup is None or markup == "":
        return None
    if not isinstance(markup, dict):
        raise ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
    if "inline_keyboard" not in markup:
        return markup
    rows = markup["inline_keyboard"]
    if not rows:
        return None
    for row in rows:
        for button in row:
            if not button.get("text"):
                raise ApiError(
                    400, "Bad Request: text buttons are unallowed in the inline keyboard"
                )
            data = button.get("callback_data")
            if data is not None and not 1 <= len(data.encode("utf-8")) <= MAX_CALLBACK_DATA:
                raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
    return markup


_MENTION = re.compile(r"(?<![\w@])@[A-Za-z][A-Za-z0-9_]{3,31}")


def _auto_entities(text: str) -> list[dict[str, Any]]:
    """The entities Telegram's servers add to a user's plain text: a leading command, mentions."""
    entities = []
    command = re.match(r"/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?", text)
    if command:
        entities.append(
            {"type": "bot_command", "offset": 0, "length": utf16_length(command.group(0))}
        )
    for match in _MENTION.finditer(text):
        if command and match.start() < command.end():
            continue
        entities.append(
            {
                "type": "mention",
                "offset": utf16_length(text[: match.start()]),
                "length": utf16_length(match.group(0)),
            }
        )
    return entities


def _png_size(data: bytes) -> tuple[int, int]:
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ApiError(400, "Bad Request: IMAGE_PROCESS_FAILED")
    return struct.unpack(">II", data[16:24])
