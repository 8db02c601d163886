"""Offline Discord: small fake interactions, users, servers and channels that record what the
bot sends, and a bot wired to the real engine on a real database.

The fakes implement only the attributes the adapter uses; they are passed in (constructor
injection), nothing in discord.py is patched.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import discord
import pytest

from bot.clock import FixedClock
from bot.config import Settings
from bot.db import make_engine
from bot.discord.client import TrapbotClient
from bot.discord.guilds import GuildStore
from bot.discord.handlers import DiscordHandlers
from bot.discord.transport import DiscordTransport
from bot.engine import QuizEngine
from cards.deck import DECK_DIR, Deck, load_deck
from grader.base import Assessment, Judgement, MisconceptionJudgement, PointJudgement, PointVerdict
from grader.scoring import grade_from_judgement
from grader.selfgrade import SelfGrader
from tests.deck_plots import DeckPlots

BOT_USER_ID = 900000000000000001
_message_ids = itertools.count(7000)


def http_error(
    kind: type[discord.HTTPException], status: int, code: int = 0
) -> discord.HTTPException:
    """A discord.py HTTP error as the library raises it, from a minimal response."""
    return kind(SimpleNamespace(status=status, reason="test"), {"code": code, "message": "test"})


@dataclass
class Sent:
    """One message the bot sent (or an edit it made), in a form tests can read."""

    how: str  # response, followup, edit, channel, dm
    embeds: list[discord.Embed]
    files: dict[str, bytes]
    rows: list[list[dict[str, Any]]]
    ephemeral: bool | None = None

    @classmethod
    def record(cls, how: str, kwargs: dict[str, Any]) -> Sent:
        files = {f.filename: f.fp.read() for f in kwargs.get("files") or []}
        view = kwargs.get("view")
        rows = [row["components"] for row in view.to_components()] if view is not None else []
        return cls(how, list(kwargs.get("embeds") or []), files, rows, kwargs.get("ephemeral"))

    @property
    def text(self) -> str:
        parts = []
        for embed in self.embeds:
            parts += [embed.author.name or "", embed.title or "", embed.description or ""]
            parts += [f"{f.name}\n{f.value}" for f in embed.fields]
            parts.append(embed.footer.text or "")
        return "\n".join(part for part in parts if part)

    @property
    def buttons(self) -> list[dict[str, Any]]:
        return [button for row in self.rows for button in row]

    def custom_id(self, label: str) -> str:
        for button in self.buttons:
            if button["label"] == label:
                return button["custom_id"]
        raise AssertionError(f"no button {label!r} among {[b['label'] for b in self.buttons]}")


class FakeResponse:
    def __init__(self, interaction: FakeInteraction):
        self.interaction = interaction
        self._done = False

    def is_done(self) -> bool:
        return self._done

    def _answer(self, event: str) -> None:
        assert not self._done, "an interaction can be answered only once"
        self._done = True
        self.interaction.events.append(event)

    async def defer(self, *, ephemeral: bool = False, thinking: bool = False) -> None:
        self._answer("defer-thinking" if thinking else "defer-update")
        self.interaction.deferred_ephemeral = ephemeral

    async def send_message(self, content: str | None = None, **kwargs: Any) -> None:
        self._answer("message")
        self.interaction.sent.append(Sent.record("response", kwargs))

    async def send_modal(self, modal: discord.ui.Modal) -> None:
        self._answer("modal")
        self.interaction.modal = modal


class FakeFollowup:
    def __init__(self, interaction: FakeInteraction):
        self.interaction = interaction

    async def send(self, content: str | None = None, **kwargs: Any) -> None:
        assert self.interaction.response.is_done(), "a follow-up needs an answered interaction"
        if self.interaction.followup_error is not None:
            raise self.interaction.followup_error
        self.interaction.events.append("followup")
        self.interaction.sent.append(Sent.record("followup", kwargs))


class FakeUser:
    def __init__(
        self, user_id: int, name: str = "Ada", *, dms_open: bool = True, bot: bool = False
    ):
        self.id = user_id
        self.name = name
        self.display_name = name
        self.bot = bot
        self.dms_open = dms_open
        self.dms: list[Sent] = []

    async def send(self, **kwargs: Any) -> SimpleNamespace:
        if not self.dms_open:
            raise http_error(discord.Forbidden, 403, 50007)  # Cannot send messages to this user
        self.dms.append(Sent.record("dm", kwargs))
        return SimpleNamespace(id=next(_message_ids))


class FakeChannel:
    def __init__(
        self,
        channel_id: int,
        *,
        permissions: discord.Permissions | None = None,
        send_error: Exception | None = None,
    ):
        self.id = channel_id
        self.type = discord.ChannelType.text
        self.mention = f"<#{channel_id}>"
        self.permissions = (
            permissions
            if permissions is not None
            else discord.Permissions(view_channel=True, send_messages=True, embed_links=True)
        )
        self.send_error = send_error
        self.posts: list[Sent] = []

    def permissions_for(self, member: Any) -> discord.Permissions:
        assert member.id == BOT_USER_ID, "the bot checks its own permissions"
        return self.permissions

    async def send(self, **kwargs: Any) -> SimpleNamespace:
        if self.send_error is not None:
            raise self.send_error
        self.posts.append(Sent.record("channel", kwargs))
        return SimpleNamespace(id=next(_message_ids))


class FakeGuild:
    def __init__(self, guild_id: int, channels: tuple[FakeChannel, ...] = ()):
        self.id = guild_id
        self.me = SimpleNamespace(id=BOT_USER_ID)
        self.channels = {channel.id: channel for channel in channels}

    def get_channel(self, channel_id: int) -> FakeChannel | None:
        return self.channels.get(channel_id)


DM_CHANNEL = SimpleNamespace(type=discord.ChannelType.private)
SERVER_CHANNEL = SimpleNamespace(type=discord.ChannelType.text)


class FakeInteraction:
    """A slash command, a button press or a form submission from ``user``: in ``guild``,
    or in the user's DM with the bot when ``guild`` is None."""

    def __init__(
        self,
        user: FakeUser,
        *,
        guild: FakeGuild | None = None,
        guild_id: int | None = None,
        kind: discord.InteractionType = discord.InteractionType.application_command,
        data: dict[str, Any] | None = None,
        permissions: discord.Permissions | None = None,
        edit_error: Exception | None = None,
        followup_error: Exception | None = None,
    ):
        self.user = user
        self.guild = guild
        self.guild_id = guild.id if guild is not None else guild_id
        self.channel = SERVER_CHANNEL if self.guild_id is not None else DM_CHANNEL
        self.type = kind
        self.data = data or {}
        self.permissions = permissions if permissions is not None else discord.Permissions.none()
        self.edit_error = edit_error
        self.followup_error = followup_error
        self.events: list[str] = []
        self.sent: list[Sent] = []
        self.modal: discord.ui.Modal | None = None
        self.deferred_ephemeral: bool | None = None
        self.response = FakeResponse(self)
        self.followup = FakeFollowup(self)

    async def edit_original_response(self, **kwargs: Any) -> None:
        if self.edit_error is not None:
            raise self.edit_error
        self.events.append("edit")
        self.sent.append(Sent.record("edit", kwargs))

    @property
    def last(self) -> Sent:
        assert self.sent, f"nothing was sent (events: {self.events})"
        return self.sent[-1]

    @property
    def text(self) -> str:
        return "\n\n".join(sent.text for sent in self.sent)


def form_data(modal: discord.ui.Modal, answer: str) -> dict[str, Any]:
    """What Discord sends when the form is submitted: its components with the typed value."""
    components = modal.to_dict()["components"]
    for component in components:
        inner = component.get("component")
        if isinstance(inner, dict) and inner.get("type") == discord.ComponentType.text_input.value:
            inner["value"] = answer
    return {"custom_id": modal.custom_id, "components": components}


def tiny_png() -> bytes:
    """A valid 1x1 PNG."""

    def chunk(tag: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x80"))
        + chunk(b"IEND", b"")
    )


class ControlledPlots:
    """A simulation service whose plot is ready when the test says so."""

    def __init__(self, png_path: Path, *, ready: bool):
        self.png_path = png_path
        self.ready = asyncio.Event()
        if ready:
            self.ready.set()
        self.requests: list[tuple[str, float]] = []

    async def plot_for(self, sim_id: str, wait_seconds: float = 3.0) -> Any:
        self.requests.append((sim_id, wait_seconds))
        try:
            await asyncio.wait_for(self.ready.wait(), timeout=wait_seconds)
        except TimeoutError:
            return None
        return SimpleNamespace(png_path=self.png_path)


@pytest.fixture
def deck_plots(tmp_path: Path) -> Callable[..., DeckPlots]:
    return lambda slow=frozenset(): DeckPlots(tmp_path / "plots", tiny_png(), slow)


class NamedPointsJudge:
    """A test judge: a key point counts as present when the answer names its id, a
    misconception as asserted likewise. ``assisted`` asks the learner to confirm."""

    name = "named-points"

    def __init__(self, *, assisted: bool = False):
        self.assisted = assisted

    async def assess(self, card: Any, answer: str, *, interactive: bool) -> Assessment:
        points = tuple(
            PointJudgement(p.id, PointVerdict.PRESENT, p.id)
            if p.id in answer
            else PointJudgement(p.id, PointVerdict.ABSENT)
            for p in card.key_points
        )
        misconceptions = tuple(
            MisconceptionJudgement(m.id, m.id in answer, m.id if m.id in answer else "")
            for m in card.misconceptions
        )
        judgement = Judgement(judge=self.name, points=points, misconceptions=misconceptions)
        grade = grade_from_judgement(card, judgement, answer)
        return Assessment(self.name, grade, needs_confirmation=self.assisted and interactive)


def _registered_sim() -> str | None:
    try:
        from sims.registry import sim_ids
    except ImportError:
        return None
    ids = sim_ids()
    return (
        "reward_overoptimization" if "reward_overoptimization" in ids else (ids[0] if ids else None)
    )


@pytest.fixture
def sim_id() -> str:
    found = _registered_sim()
    if found is None:
        pytest.skip("no simulation is registered, so the engine cannot caption a plot")
    return found


@pytest.fixture
def plot_deck(tmp_path: Path, sim_id: str) -> Deck:
    """Three copies of the model card rl-08 (ids rl-81..83) that name a registered sim."""
    model = (DECK_DIR / "rl-08.md").read_text(encoding="utf-8")
    folder = tmp_path / "discord-deck"
    folder.mkdir()
    for number in (81, 82, 83):
        lines = [
            f"id: rl-{number}"
            if line == "id: rl-08"
            else (f"sim: {sim_id}" if line.startswith("sim: ") else line)
            for line in model.split("\n")
        ]
        (folder / f"rl-{number}.md").write_text("\n".join(lines), encoding="utf-8")
    return load_deck(folder)


@dataclass
class DiscordRig:
    """A bot on the real engine and database, with its test doubles."""

    engine: QuizEngine
    handlers: DiscordHandlers
    plots: ControlledPlots
    clock: FixedClock
    client: TrapbotClient
    guild: FakeGuild
    channel: FakeChannel
    users: dict[str, FakeUser] = field(default_factory=dict)

    def interaction(self, user: FakeUser, *, in_dm: bool = False, **kwargs: Any) -> FakeInteraction:
        return FakeInteraction(user, guild=None if in_dm else self.guild, **kwargs)

    async def command(
        self, name: str, user: FakeUser, *, in_dm: bool = False, **options: Any
    ) -> FakeInteraction:
        """Run a registered slash command's callback, as discord.py would."""
        interaction = self.interaction(
            user, in_dm=in_dm, permissions=options.pop("permissions", None)
        )
        command = self.client.tree.get_command(name)
        assert command is not None, f"/{name} is not registered"
        await command.callback(interaction, **options)
        return interaction

    async def press(
        self, sent: Sent, label: str, user: FakeUser, *, in_dm: bool = False, **kwargs: Any
    ) -> FakeInteraction:
        interaction = self.interaction(
            user,
            in_dm=in_dm,
            kind=discord.InteractionType.component,
            data={"custom_id": sent.custom_id(label), "component_type": 2},
            **kwargs,
        )
        await self.handlers.route(interaction)
        return interaction

    async def submit(
        self, modal: discord.ui.Modal, answer: str, user: FakeUser, *, in_dm: bool = False
    ) -> FakeInteraction:
        interaction = self.interaction(
            user,
            in_dm=in_dm,
            kind=discord.InteractionType.modal_submit,
            data=form_data(modal, answer),
        )
        await self.handlers.route(interaction)
        return interaction


@pytest.fixture
async def make_rig(
    db_url: str, plot_deck: Deck, clock: FixedClock, tmp_path: Path
) -> AsyncIterator[Callable[..., DiscordRig]]:
    png = tmp_path / "plot.png"
    png.write_bytes(tiny_png())
    made: list[DiscordRig] = []

    def make(
        *,
        judge: Any = "named",
        plots_ready: bool = True,
        plots: Any = None,
        deck: Deck | None = None,
        new_per_day: int = 1,
    ) -> DiscordRig:
        """``judge``: named (final grades), assisted (tick and confirm) or self (rate 0-5);
        ``plots``: a plot source instead of the one controlled by ``plots_ready``."""
        grader = (
            {
                "named": NamedPointsJudge(),
                "assisted": NamedPointsJudge(assisted=True),
                "self": SelfGrader(),
            }[judge]
            if isinstance(judge, str)
            else judge
        )
        plots = plots if plots is not None else ControlledPlots(png, ready=plots_ready)
        engine = QuizEngine(
            make_engine(db_url),
            deck or plot_deck,
            grader,
            clock,
            sims=plots,
            interactive=True,
            default_new_per_day=new_per_day,
        )
        handlers = DiscordHandlers(
            engine, GuildStore(engine.db, clock), plot_wait=0.05, late_plot_wait=None
        )
        channel = FakeChannel(555)
        rig = DiscordRig(
            engine,
            handlers,
            plots,
            clock,
            TrapbotClient(handlers),
            FakeGuild(4242, (channel,)),
            channel,
        )
        rig.users = {"ada": FakeUser(1001, "Ada"), "bob": FakeUser(1002, "Bob")}
        made.append(rig)
        return rig

    yield make
    for rig in made:
        await rig.handlers.close()
        rig.engine.db.dispose()


@pytest.fixture
def fakes() -> SimpleNamespace:
    """The fake classes and helpers, for tests that build their own."""
    return SimpleNamespace(
        Interaction=FakeInteraction,
        User=FakeUser,
        Guild=FakeGuild,
        Channel=FakeChannel,
        Sent=Sent,
        http_error=http_error,
        form_data=form_data,
        BOT_USER_ID=BOT_USER_ID,
    )


class FakeClient:
    """What the transport needs of a discord.py client: users, channels, login and close."""

    def __init__(
        self,
        *,
        users: dict[int, FakeUser] | None = None,
        channels: dict[int, FakeChannel] | None = None,
    ):
        self.users = users or {}
        self.channels = channels or {}
        self.calls: list[str] = []
        self.closed = asyncio.Event()

    def get_user(self, user_id: int) -> FakeUser | None:
        return None  # not cached: the transport fetches

    async def fetch_user(self, user_id: int) -> FakeUser:
        self.calls.append(f"fetch_user:{user_id}")
        if user_id not in self.users:
            raise http_error(discord.NotFound, 404, 10013)  # Unknown User
        return self.users[user_id]

    def get_channel(self, channel_id: int) -> FakeChannel | None:
        return self.channels.get(channel_id)

    async def fetch_channel(self, channel_id: int) -> FakeChannel:
        raise http_error(discord.NotFound, 404, 10003)  # Unknown Channel

    async def login(self, token: str) -> None:
        self.calls.append("login")

    async def connect(self) -> None:
        self.calls.append("connect")
        await self.closed.wait()

    async def close(self) -> None:
        self.calls.append("close")
        self.closed.set()


@pytest.fixture
def make_transport(
    make_rig: Callable[..., DiscordRig],
) -> Callable[..., tuple[DiscordTransport, DiscordRig, FakeClient]]:
    def make(**client_kwargs: Any) -> tuple[DiscordTransport, DiscordRig, FakeClient]:
        rig = make_rig()
        client = FakeClient(**client_kwargs)
        settings = Settings(discord_bot_token="test-token", _env_file=None)  # type: ignore[call-arg]
        transport = DiscordTransport(rig.engine, settings, client=client, handlers=rig.handlers)
        return transport, rig, client

    return make


@pytest.fixture
def sqlite_is_enough(request: pytest.FixtureRequest) -> None:
    """For tests of Discord behaviour with no SQL of their own: one database is enough."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("db_url") == "postgresql":
        pytest.skip(
            "Discord behaviour only: covered on SQLite; the SQL paths run on PostgreSQL too"
        )
