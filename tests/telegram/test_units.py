"""Small pieces without a server: update ordering, settings typed after /start, card ids in
replies, and a Bot API call recorded through PTB's request layer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from telegram import Bot, Update
from telegram.request import BaseRequest, RequestData

from bot.config import Settings
from bot.telegram.delivery import Delivery, Destination
from bot.telegram.handlers import find_card_id, parse_setup
from bot.telegram.sequencing import UserSequencer, sequence_key
from bot.telegram.transport import TelegramTransport


def update_from(user_id: int | None, update_id: int, text: str = "hi") -> Update:
    data: dict[str, Any] = {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 1_770_000_000,
            "chat": {"id": user_id or -100_123, "type": "private" if user_id else "channel"},
            "text": text,
        },
    }
    if user_id:
        data["message"]["from"] = {"id": user_id, "is_bot": False, "first_name": "U"}
    return Update.de_json(data, None)


async def test_sequencer_keeps_one_users_order_and_lets_others_pass() -> None:
    sequencer = UserSequencer(max_concurrent_updates=16)
    log: list[str] = []
    release_first = asyncio.Event()

    async def handle(name: str, wait: asyncio.Event | None = None) -> None:
        log.append(f"start {name}")
        if wait is not None:
            await wait.wait()
        log.append(f"end {name}")

    tasks = [
        asyncio.create_task(
            sequencer.process_update(update_from(1, 1), handle("a1", release_first))
        ),
        asyncio.create_task(sequencer.process_update(update_from(1, 2), handle("a2"))),
        asyncio.create_task(sequencer.process_update(update_from(2, 3), handle("b1"))),
    ]
    await asyncio.sleep(0.05)
    assert log == ["start a1", "start b1", "end b1"]  # b is not held up by a's slow update
    release_first.set()
    await asyncio.gather(*tasks)
    assert log[3:] == ["end a1", "start a2", "end a2"]
    assert sequencer.busy_keys() == 0  # idle users leave nothing behind


async def test_sequencer_closes_a_cancelled_queued_update() -> None:
    sequencer = UserSequencer()
    gate = asyncio.Event()

    async def hold() -> None:
        await gate.wait()

    ran: list[str] = []

    async def second() -> None:
        ran.append("second")

    first = asyncio.create_task(sequencer.process_update(update_from(1, 1), hold()))
    queued = asyncio.create_task(sequencer.process_update(update_from(1, 2), second()))
    await asyncio.sleep(0.01)
    queued.cancel()
    gate.set()
    await first
    with pytest.raises(asyncio.CancelledError):
        await queued
    assert ran == []


def test_sequence_keys() -> None:
    assert sequence_key(update_from(5, 1)) == ("user", 5)
    assert sequence_key(update_from(None, 2)) == ("chat", -100_123)
    assert sequence_key(object()) is None


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("Berlin 07:30", [("timezone", "Berlin"), ("time", "07:30")]),
        ("7pm, New York", [("timezone", "New York"), ("time", "7pm")]),
        ("UTC+2", [("timezone", "UTC+2")]),
        ("Europe/Lisbon", [("timezone", "Europe/Lisbon")]),
        ("6:45 am", [("time", "6:45 am")]),
        ("utc -5 ; 9", [("timezone", "utc -5"), ("time", "9")]),
        ("the reward model is a proxy", None),
        ("Atlantis 25:00", None),
        ("", None),
        ("x" * 200, None),
    ],
)
def test_settings_typed_after_start(typed: str, expected: Any) -> None:
    assert parse_setup(typed) == expected


def test_card_id_in_a_replied_trap(small_deck: Any) -> None:
    assert (
        find_card_id(
            "Reward climbing while the KL term spikes  ·  rl-92\nSenior AI Engineer", small_deck
        )
        == "rl-92"
    )
    assert find_card_id("see rl-99 and then rl-91", small_deck) == "rl-91"  # the first known id
    assert find_card_id("xrl-91 rl-91x rl-910", small_deck) is None
    assert find_card_id("", small_deck) is None


class RecordingRequest(BaseRequest):
    """A request layer that answers every call locally and keeps what PTB sent; the first
    ``failures`` sendMessage calls get a 502."""

    def __init__(self, failures: int = 0) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.failures = failures

    @property
    def read_timeout(self) -> float | None:
        return 1.0

    async def initialize(self) -> None:
        pass

    async def shutdown(self) -> None:
        pass

    async def do_request(
        self, url: str, method: str, request_data: RequestData | None = None, **_: Any
    ) -> tuple[int, bytes]:
        endpoint = url.rsplit("/", 1)[1]
        params = request_data.parameters if request_data else {}
        self.sent.append((endpoint, params))
        if self.failures > 0 and endpoint == "sendMessage":
            self.failures -= 1
            return 502, json.dumps(
                {"ok": False, "error_code": 502, "description": "Bad Gateway"}
            ).encode()
        if endpoint == "getMe":
            result: Any = {"id": 1, "is_bot": True, "first_name": "t", "username": "t_bot"}
        else:
            result = {
                "message_id": len(self.sent),
                "date": 0,
                "chat": {"id": params.get("chat_id"), "type": "private"},
                "text": "x",
            }
        return 200, json.dumps({"ok": True, "result": result}).encode()


async def test_delivery_splits_long_replies_and_retries_bad_gateways() -> None:
    from bot.replies import Button, Reply

    request = RecordingRequest(failures=1)
    bot = Bot("1:t", request=request, get_updates_request=RecordingRequest())
    await bot.initialize()
    delivery = Delivery(bot, engine=None, retry_base_seconds=0.01)  # type: ignore[arg-type]
    reply = Reply(
        ("A paragraph of the explanation. " * 60 + "\n\n") * 6,
        buttons=((Button("Next trap", "t1:next:-:-"),),),
    )
    sent = await delivery.send(Destination(42, reply_to=7), [reply])
    messages = [p for e, p in request.sent if e == "sendMessage"]
    assert len(messages) == len(sent) + 1 >= 3  # one 502, retried
    assert messages[0] == messages[1]
    assert "reply_parameters" in messages[0] and all(
        "reply_parameters" not in m for m in messages[2:]
    )
    assert all("reply_markup" not in m for m in messages[:-1]) and "reply_markup" in messages[-1]
    await bot.shutdown()


def test_transport_needs_a_token() -> None:
    with pytest.raises(ValueError, match="TELEGRAM_BOT_TOKEN"):
        TelegramTransport(None, Settings(_env_file=None, telegram_bot_token=None))  # type: ignore[arg-type, call-arg]
