"""Everything trapbot does on Discord, over the quiz engine.

Slash commands (``commands.py`` registers them), every button press and every answer form
land here. Each entry point answers Discord within its 3 seconds (a modal, or a deferral),
then calls the engine and sends the replies. Nothing here raises into discord.py: a failure
becomes a clear private message, and an answer that was not stored is handed back as a file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, Protocol

import discord

from bot import texts as engine_texts
from bot.actions import Action, Verb
from bot.discord import texts
from bot.discord.checks import Place, can_manage_server, missing_post_permissions, place_problem
from bot.discord.custom_ids import (
    AnswerFormId,
    BadCustomId,
    ButtonId,
    FollowUpFormId,
    is_ours,
    may_use,
    parse,
)
from bot.discord.format import (
    Attachment,
    Outgoing,
    render_notice,
    render_plot,
    render_reply,
    to_discord_markdown,
)
from bot.discord.guilds import GuildStore, local_today, trap_of_the_day
from bot.discord.models import DiscordGuild
from bot.discord.views import (
    answer_button,
    answer_form,
    build_view,
    follow_up_button,
    follow_up_form,
    submitted_answer,
)
from bot.engine import QuizEngine
from bot.models import Learner
from bot.prefs import PreferenceError, parse_decks, parse_push_time, parse_timezone
from bot.replies import PLOT_FAILED, Reply, ReplyKind
from bot.transport import JudgeWarmup
from cards.wording import parse_wording_ref, question_for

log = logging.getLogger(__name__)

PLATFORM = "discord"
_CARD_REF = re.compile(r"\b((?:rl|msft)-\d{2})\b")
_SETTINGS_EXAMPLE = re.compile(r"`/settings (timezone|time|new|interview) ([^`]+)`")
_DISCORD_OPTION = {
    "timezone": "timezone",
    "time": "time",
    "new": "new_per_day",
    "interview": "interview",
}
_DISCORD_VALUE = {"on": "True", "off": "False"}  # Discord's boolean options
LEADERBOARD_SIZE = 10


class Sink(Protocol):
    """Somewhere messages go: an interaction's responses, or a channel."""

    async def send(self, message: Outgoing) -> Any: ...


def send_kwargs(message: Outgoing) -> dict[str, Any]:
    """Keyword arguments for discord.py's send methods; files are made fresh for each send."""
    kwargs: dict[str, Any] = {"embeds": message.embeds}
    if message.attachments:
        kwargs["files"] = [
            discord.File(io.BytesIO(a.data), filename=a.filename) for a in message.attachments
        ]
    view = build_view(message.buttons)
    if view is not None:
        kwargs["view"] = view
    return kwargs


class InteractionSink:
    """The first message answers the interaction (or fills its deferral); later ones follow up."""

    def __init__(self, interaction: Any, *, ephemeral: bool):
        self.interaction = interaction
        self.ephemeral = ephemeral

    async def send(self, message: Outgoing) -> Any:
        kwargs = send_kwargs(message)
        if not self.interaction.response.is_done():
            return await self.interaction.response.send_message(ephemeral=self.ephemeral, **kwargs)
        return await self.interaction.followup.send(ephemeral=self.ephemeral, **kwargs)

    async def send_late(self, message: Outgoing) -> Any:
        """To the user's DMs, when the interaction's follow-up window has closed."""
        return await self.interaction.user.send(**send_kwargs(message))


class ChannelSink:
    """A channel or a DM: pushes, typed answers in DMs, a server's trap of the day."""

    def __init__(self, channel: Any):
        self.channel = channel

    async def send(self, message: Outgoing) -> Any:
        return await self.channel.send(**send_kwargs(message))


@asynccontextmanager
async def typing_in(channel: Any) -> AsyncIterator[None]:
    """Discord's typing indicator in ``channel`` for the body; a failure to show it is ignored."""
    start = getattr(channel, "typing", None)
    indicator = start() if start is not None else None
    shown = False
    if indicator is not None:
        try:
            await indicator.__aenter__()
            shown = True
        except discord.HTTPException as error:
            log.debug("typing indicator failed: %s", error)
    try:
        yield
    finally:
        if shown:
            await indicator.__aexit__(None, None, None)


def is_direct_message(interaction: Any) -> bool:
    return (
        interaction.guild_id is None
        and getattr(interaction.channel, "type", None) == discord.ChannelType.private
    )


def display_name(user: Any) -> str:
    return str(getattr(user, "display_name", None) or getattr(user, "name", "") or "")


class DiscordHandlers:
    """The bot's behaviour; ``client.py`` connects it to Discord, tests call it directly."""

    def __init__(
        self,
        engine: QuizEngine,
        store: GuildStore,
        *,
        plot_wait: float = 3.0,
        late_plot_wait: float | None = None,
    ):
        self.engine = engine
        self.store = store
        self.plot_wait = plot_wait
        self.late_plot_wait = late_plot_wait  # None: however long the simulation takes
        self.warmup = JudgeWarmup()  # the runner sets its task: the judge loading since start
        self._tasks: set[asyncio.Task[None]] = set()

    # ----- identity and privacy ------------------------------------------------------

    async def learner_for(self, interaction: Any) -> Learner:
        """The learner behind this Discord user; a DM also tells where reminders go."""
        user = interaction.user
        in_dm = is_direct_message(interaction)
        learner = self.engine.learner(
            PLATFORM, user.id, display_name=display_name(user), chat_id=user.id if in_dm else None
        )
        return await self.settle_reach(learner, dm_works=in_dm)

    async def settle_reach(self, learner: Learner, *, dm_works: bool) -> Learner:
        """Keep the daily sweep to learners it can reach: reminders go by DM, so someone met
        only in a server stays out of it until they turn reminders on, and someone whose DMs
        were closed comes back once a DM from them (or to them) shows DMs work again."""
        if learner.chat_id is None and learner.active:
            active = False
        elif dm_works and not learner.active:
            active = True
        else:
            return learner
        self.engine.set_active(learner.id, active)
        if active:
            # Back in the sweep: "setting" the same timezone recomputes when the next push is due.
            await self.engine.update_settings(learner.id, "timezone", learner.timezone)  # type: ignore[arg-type]
        return self.engine.get_learner(learner.id) or learner  # type: ignore[arg-type]

    @staticmethod
    def ephemeral(interaction: Any) -> bool:
        """Answers and grades are private everywhere but in the learner's own DM with the bot."""
        return not is_direct_message(interaction)

    # ----- sending -------------------------------------------------------------------

    def card_title(self, card_id: str | None) -> str | None:
        if card_id and card_id in self.engine.deck:
            card = self.engine.deck.get(card_id)
            return f"{card.title} · {card.id}"
        return None

    async def deliver(self, replies: list[Reply], sink: Sink, *, owner: int | None) -> Any:
        """Send replies in order; a plot that is not ready in time follows when it is."""
        last = None
        for reply in replies:
            plot = None
            if reply.plot_sim:
                plot = await self.engine.plot(
                    reply.plot_sim, wait_seconds=self.plot_wait, card_id=reply.card_id
                )
            for message in render_reply(
                reply, owner=owner, card_title=self.card_title(reply.card_id), plot=plot
            ):
                last = await sink.send(message)
            if reply.plot_sim and plot is None:
                self.later(self._late_plot(reply.plot_sim, sink, reply.card_id))
        return last

    async def _late_plot(self, sim_id: str, sink: Sink, card_id: str | None = None) -> None:
        """The plot as a follow-up once computed; if it cannot be made, the learner is told."""
        plot = await self.engine.plot(sim_id, wait_seconds=self.late_plot_wait, card_id=card_id)
        if plot is None:
            log.warning("the plot for %s could not be made; telling the learner", sim_id)
            message = render_notice(PLOT_FAILED)
        else:
            message = render_plot(plot)
        try:
            await sink.send(message)
        except discord.HTTPException:
            # An interaction's follow-ups expire after 15 minutes: the plot goes by DM then.
            late = getattr(sink, "send_late", None)
            try:
                if late is None:
                    raise
                await late(message)
            except discord.HTTPException:
                log.warning("could not send the late plot for %s", sim_id, exc_info=True)

    def later(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for the plots still on their way (tests; a graceful stop)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def notice(
        self,
        interaction: Any,
        text: str,
        *,
        error: bool = True,
        attachments: list[Attachment] | None = None,
    ) -> None:
        """A message of the adapter's own, never raises; errors are ephemeral even in a DM."""
        message = render_notice(text, error=error)
        if attachments:
            message.attachments.extend(attachments)
        ephemeral = error or self.ephemeral(interaction)
        try:
            await InteractionSink(interaction, ephemeral=ephemeral).send(message)
        except discord.HTTPException:
            log.warning("could not send a notice", exc_info=True)

    async def guarded(self, interaction: Any, work: Awaitable[None]) -> None:
        """Run one handler; anything unexpected becomes a private apology, never a crash."""
        try:
            await work
        except Exception:
            log.exception("a Discord handler failed")
            await self.notice(interaction, texts.FAILED)

    async def run_engine(
        self,
        interaction: Any,
        call: Callable[[int], Awaitable[list[Reply]]],
        *,
        needs: Place = Place.ANYWHERE,
    ) -> None:
        """Defer at once, ask the engine for this user, send what it says."""
        problem = place_problem(interaction, needs)
        if problem:
            await self.notice(interaction, problem)
            return
        ephemeral = self.ephemeral(interaction)
        await interaction.response.defer(ephemeral=ephemeral, thinking=True)
        learner = await self.learner_for(interaction)
        replies = await call(learner.id)  # type: ignore[arg-type]
        await self.deliver(
            replies, InteractionSink(interaction, ephemeral=ephemeral), owner=interaction.user.id
        )

    # ----- slash commands ------------------------------------------------------------

    async def trap(self, interaction: Any) -> None:
        await self.guarded(interaction, self.run_engine(interaction, self.engine.next_trap))

    async def hint(self, interaction: Any) -> None:
        await self.guarded(interaction, self.run_engine(interaction, self.engine.hint))

    async def skip(self, interaction: Any) -> None:
        await self.guarded(interaction, self.run_engine(interaction, self.engine.skip))

    async def stats(self, interaction: Any) -> None:
        async def call(learner_id: int) -> list[Reply]:
            return await self.engine.stats(learner_id, with_plot=True)

        await self.guarded(interaction, self.run_engine(interaction, call))

    async def undo(self, interaction: Any) -> None:
        await self.guarded(interaction, self.run_engine(interaction, self.engine.undo))

    async def forget(self, interaction: Any) -> None:
        await self.guarded(interaction, self.run_engine(interaction, self.engine.forget))

    async def help(self, interaction: Any) -> None:
        await self.guarded(interaction, self.notice(interaction, texts.HELP, error=False))

    async def settings(
        self,
        interaction: Any,
        *,
        timezone: str | None = None,
        time: str | None = None,
        reminders: bool | None = None,
        new_per_day: int | None = None,
        interview: bool | None = None,
    ) -> None:
        async def call(learner_id: int) -> list[Reply]:
            return await self._settings(
                interaction, learner_id, timezone, time, reminders, new_per_day, interview
            )

        await self.guarded(interaction, self.run_engine(interaction, call))

    async def _settings(
        self,
        interaction: Any,
        learner_id: int,
        timezone: str | None,
        push_time: str | None,
        reminders: bool | None,
        new_per_day: int | None,
        interview: bool | None = None,
    ) -> list[Reply]:
        problems: list[Reply] = []
        changed = False
        interview_value = None if interview is None else ("on" if interview else "off")
        for field, value in (
            ("timezone", timezone),
            ("time", push_time),
            ("new", new_per_day),
            ("interview", interview_value),
        ):
            if value is None:
                continue
            errors = [
                r
                for r in await self.engine.update_settings(learner_id, field, str(value))
                if r.kind is ReplyKind.ERROR
            ]
            problems += errors
            changed = changed or not errors
        if reminders is not None:
            if reminders and not await self._reach_by_dm(interaction):
                problems.append(Reply(texts.DM_CLOSED, kind=ReplyKind.ERROR))
            else:
                if reminders:
                    dm = self.engine.learner(
                        PLATFORM, interaction.user.id, chat_id=interaction.user.id
                    )
                    await self.settle_reach(dm, dm_works=True)
                await self.engine.update_settings(
                    learner_id, "resume" if reminders else "pause", ""
                )
                changed = True
        summary = self.engine.settings(learner_id)[0]
        learner = self.engine.get_learner(learner_id)
        on = learner is not None and learner.chat_id is not None and not learner.paused
        dm_line = (
            "DM reminders: **on**, daily at your push time."
            if on
            else "DM reminders: **off**. Turn them on with `/settings reminders: True`."
        )
        text = _SETTINGS_EXAMPLE.sub(
            lambda m: (
                f"`/settings {_DISCORD_OPTION[m.group(1)]}: {_DISCORD_VALUE.get(m.group(2), m.group(2))}`"
            ),
            summary.text,
        )
        text = ("Saved.\n\n" if changed else "") + text + "\n\n" + dm_line
        return problems + [dataclasses.replace(summary, text=text)]

    async def _reach_by_dm(self, interaction: Any) -> bool:
        """Whether the bot can DM this user; says hello there when the command came from a server."""
        if is_direct_message(interaction):
            return True
        try:
            await interaction.user.send(**send_kwargs(render_notice(texts.DM_WELCOME, error=False)))
        except discord.Forbidden:
            return False
        except discord.HTTPException:
            log.warning("could not open a DM for reminders", exc_info=True)
            return False
        return True

    # ----- buttons and the answer form -------------------------------------------------

    async def route(self, interaction: Any) -> None:
        """Every component press and modal submission; others (slash commands) are not ours."""
        if interaction.type is discord.InteractionType.component:
            await self.guarded(interaction, self.on_button(interaction))
        elif interaction.type is discord.InteractionType.modal_submit:
            await self.guarded(interaction, self.on_form(interaction))

    async def on_button(self, interaction: Any) -> None:
        custom_id = (interaction.data or {}).get("custom_id")
        if not is_ours(custom_id):
            return
        try:
            target = parse(custom_id)
        except BadCustomId:
            await self.notice(interaction, texts.STALE)
            return
        if not isinstance(target, ButtonId):
            await self.notice(interaction, texts.STALE)
            return
        if not may_use(target, interaction.user.id):
            await self.notice(interaction, texts.NOT_YOURS)
            return
        action = target.action
        if action.verb is Verb.ANSWER:
            await self.open_form(interaction, action.arg or "")
        elif (
            action.verb is Verb.FOLLOWUP and action.arg == "answer" and action.review_id is not None
        ):
            await interaction.response.send_modal(
                follow_up_form(action.review_id, interaction.user.id)
            )
        elif action.verb is Verb.TICK:
            await self._press_in_place(interaction, action)
        else:
            await self.run_engine(interaction, lambda learner_id: self._act(learner_id, action))

    async def _act(self, learner_id: int, action: Action) -> list[Reply]:
        if action.verb is Verb.FORGET and action.arg == "yes":
            self.store.forget_learner(learner_id)
        return await self.engine.act(learner_id, action.encode())

    async def open_form(self, interaction: Any, ref: str) -> None:
        """Show the answer form at once (no database work before it: Discord waits 3 s), with
        the wording the button names (``rl-08`` the original, ``rl-08.2`` its second variant)."""
        card_id, wording = parse_wording_ref(ref)
        if card_id not in self.engine.deck:
            await self.notice(interaction, texts.NO_SUCH_TRAP)
            return
        card = self.engine.deck.get(card_id)
        form = answer_form(
            card_id,
            interaction.user.id,
            title=card.title if not wording else "The same mechanism, another setting",
            question=to_discord_markdown(question_for(card, wording)),
        )
        await interaction.response.send_modal(form)

    async def _press_in_place(self, interaction: Any, action: Action) -> None:
        """A tick in assisted grading updates the grading message instead of adding one."""
        await interaction.response.defer()
        learner = await self.learner_for(interaction)
        replies = await self.engine.act(learner.id, action.encode())  # type: ignore[arg-type]
        sink = InteractionSink(interaction, ephemeral=self.ephemeral(interaction))
        first = replies[0] if replies else None
        if (
            first is None
            or first.kind is not ReplyKind.CONFIRM
            or first.review_id != action.review_id
        ):
            await self.deliver(replies, sink, owner=interaction.user.id)
            return
        messages = render_reply(
            first, owner=interaction.user.id, card_title=self.card_title(first.card_id)
        )
        try:
            view = build_view(messages[0].buttons)
            await interaction.edit_original_response(embeds=messages[0].embeds, view=view)
        except discord.NotFound:  # the grading message is gone: send the update as a new one
            await sink.send(messages[0])
        for message in messages[1:]:
            await sink.send(message)
        await self.deliver(replies[1:], sink, owner=interaction.user.id)

    async def on_form(self, interaction: Any) -> None:
        custom_id = (interaction.data or {}).get("custom_id")
        if not is_ours(custom_id):
            return
        text = submitted_answer(interaction.data) or ""
        kept = [Attachment("your-answer.txt", text.encode("utf-8"))] if text.strip() else []
        try:
            target = parse(custom_id)
        except BadCustomId:
            target = None
        if isinstance(target, FollowUpFormId):
            await self._follow_up_form(interaction, target, text, kept)
            return
        if not isinstance(target, AnswerFormId):
            await self.notice(
                interaction, f"{texts.STALE} {texts.ANSWER_KEPT if kept else ''}", attachments=kept
            )
            return
        if not may_use(target, interaction.user.id):
            await self.notice(interaction, texts.FORM_NOT_YOURS)
            return
        ephemeral = self.ephemeral(interaction)
        await interaction.response.defer(ephemeral=ephemeral, thinking=True)
        sink = InteractionSink(interaction, ephemeral=ephemeral)
        if not text.strip():
            await sink.send(
                Outgoing(
                    render_notice(texts.EMPTY_FORM, error=True).embeds,
                    buttons=[[answer_button(target.card_id, interaction.user.id)]],
                )
            )
            return
        try:
            learner = await self.learner_for(interaction)
            replies = await self.warmup.grade(
                self.engine.submit_answer(learner.id, text, card_id=target.card_id)  # type: ignore[arg-type]
            )
        except Exception:
            log.exception("grading an answer from Discord failed")
            await self.notice(interaction, f"{texts.FAILED} {texts.ANSWER_KEPT}", attachments=kept)
            return
        stored = any(reply.review_id is not None for reply in replies)
        if stored:
            await self.deliver(replies, sink, owner=interaction.user.id)
            return
        # The engine turned the answer down before storing it: hand the text back, offer the form again.
        for reply in replies:
            messages = render_reply(
                reply, owner=interaction.user.id, card_title=self.card_title(reply.card_id)
            )
            messages[-1].attachments.extend(kept)
            if target.card_id in self.engine.deck and not messages[-1].buttons:
                messages[-1].buttons = [[answer_button(target.card_id, interaction.user.id)]]
            for message in messages:
                await sink.send(message)

    async def _follow_up_form(
        self, interaction: Any, target: FollowUpFormId, text: str, kept: list[Attachment]
    ) -> None:
        """The follow-up's answer: read against its one point; the grade stays as it was."""
        if not may_use(target, interaction.user.id):
            await self.notice(interaction, texts.FORM_NOT_YOURS)
            return
        ephemeral = self.ephemeral(interaction)
        await interaction.response.defer(ephemeral=ephemeral, thinking=True)
        sink = InteractionSink(interaction, ephemeral=ephemeral)
        owner = interaction.user.id
        try:
            learner = await self.learner_for(interaction)
            replies = await self.engine.submit_answer(
                learner.id,  # type: ignore[arg-type]
                text,
                follow_up_of=target.review_id,
            )
        except Exception:
            log.exception("reading a follow-up answer from Discord failed")
            await self.notice(interaction, f"{texts.FAILED} {texts.ANSWER_KEPT}", attachments=kept)
            return
        if any(reply.kind is ReplyKind.ERROR for reply in replies):
            # Not stored (empty, too long, or the follow-up is closed): hand the text back.
            for reply in replies:
                messages = render_reply(reply, owner=owner)
                messages[-1].attachments.extend(kept)
                if "closed" not in reply.text and not messages[-1].buttons:
                    messages[-1].buttons = [[follow_up_button(target.review_id, owner)]]
                for message in messages:
                    await sink.send(message)
            return
        await self.deliver(replies, sink, owner=owner)

    # ----- direct messages -------------------------------------------------------------

    async def on_direct_message(self, message: Any) -> None:
        """A message typed in a DM with the bot is an answer (DMs carry their content
        without the privileged message-content intent)."""
        if message.author.bot or message.guild is not None:
            return
        if getattr(message.channel, "type", None) != discord.ChannelType.private:
            return
        sink = ChannelSink(message.channel)
        text = message.content or ""
        try:
            if text.startswith("/"):
                await sink.send(render_notice(texts.TYPED_COMMAND, error=False))
                return
            author = message.author
            learner = self.engine.learner(
                PLATFORM, author.id, display_name=display_name(author), chat_id=author.id
            )
            learner = await self.settle_reach(learner, dm_works=True)
            card_id = self._replied_card(message)
            async with typing_in(message.channel):  # "trapbot is typing…" while it grades
                replies = await self.warmup.grade(
                    self.engine.submit_answer(
                        learner.id,  # type: ignore[arg-type]
                        text,
                        card_id=card_id,
                        to_follow_up=card_id is not None and self._replied_follow_up(message),
                    )
                )
            await self.deliver(replies, sink, owner=author.id)
        except Exception:
            log.exception("answering a direct message failed")
            try:
                await sink.send(render_notice(texts.FAILED))
            except discord.HTTPException:
                pass

    @staticmethod
    def _replied_follow_up(message: Any) -> bool:
        """Whether the bot message a DM replies to is a follow-up question (its embed's title
        starts with "Follow-up")."""
        quoted = getattr(getattr(message, "reference", None), "resolved", None)
        embeds = getattr(quoted, "embeds", None)
        return isinstance(embeds, list) and any(
            (embed.title or "").startswith("Follow-up") for embed in embeds
        )

    def _replied_card(self, message: Any) -> str | None:
        """The trap a DM replies to, read from the embed of the bot's message it quotes."""
        reference = getattr(message, "reference", None)
        quoted = getattr(reference, "resolved", None)
        if not isinstance(getattr(quoted, "embeds", None), list) or not getattr(
            quoted.author, "bot", False
        ):
            return None
        for embed in quoted.embeds:
            for found in _CARD_REF.findall(f"{embed.title or ''} {embed.author.name or ''}"):
                if found in self.engine.deck:
                    return found
        return None

    # ----- a server's trap of the day and leaderboard ------------------------------------

    async def setup_server(
        self,
        interaction: Any,
        *,
        channel: Any = None,
        time: str | None = None,
        timezone: str | None = None,
        enabled: bool | None = None,
        decks: str | None = None,
    ) -> None:
        await self.guarded(
            interaction, self._setup_server(interaction, channel, time, timezone, enabled, decks)
        )

    async def _setup_server(
        self,
        interaction: Any,
        channel: Any,
        push_time: str | None,
        timezone: str | None,
        enabled: bool | None,
        decks: str | None = None,
    ) -> None:
        problem = place_problem(interaction, Place.SERVER)
        if problem:
            await self.notice(interaction, problem)
            return
        if not can_manage_server(interaction.permissions):
            await self.notice(
                interaction,
                "Setting up the trap of the day needs the **Manage Server** permission.",
            )
            return
        guild = interaction.guild
        current = self.store.get(guild.id)
        if channel is None and push_time is None and timezone is None and enabled is None and decks is None:
            await self.notice(interaction, self._server_status(current), error=False)
            return
        try:
            post_at = (
                parse_push_time(push_time)
                if push_time
                else (current.post_time if current else None)
            )
            zone = (
                parse_timezone(timezone) if timezone else (current.timezone if current else "UTC")
            )
            chosen = parse_decks(decks, self.engine.deck.names) if decks else (current.decks if current else None)
        except PreferenceError as error:
            await self.notice(interaction, str(error))
            return
        channel_id = (
            channel.id if channel is not None else (int(current.channel_id) if current else None)
        )
        if channel_id is None or post_at is None:
            await self.notice(
                interaction,
                "Pick a channel and a time, for example `/trapbot-setup channel: #traps time: 09:00 timezone: Europe/Berlin`.",
            )
            return
        target = channel if channel is not None else guild.get_channel(channel_id)
        if target is None:
            await self.notice(
                interaction, "The configured channel is gone: pick another with `channel:`."
            )
            return
        missing = _missing_in(target, guild)
        if missing:
            await self.notice(
                interaction,
                f"I can't post in {_mention(target)}: I need {', '.join(f'**{name}**' for name in missing)} there. "
                "Grant them in the channel's permissions, then run /trapbot-setup again.",
            )
            return
        config = self.store.configure(
            guild.id,
            channel_id=channel_id,
            post_time=post_at,
            timezone=zone,
            configured_by=interaction.user.id,
            enabled=current.enabled if enabled is None and current else enabled is not False,
        )
        self.store.set_decks(config, chosen)
        config.decks = chosen
        await self.notice(interaction, self._server_status(config), error=False)

    def _server_status(self, config: DiscordGuild | None) -> str:
        if config is None:
            return (
                "No trap of the day here yet. Set one up with "
                "`/trapbot-setup channel: #traps time: 09:00 timezone: Europe/Berlin`."
            )
        now = self.engine.clock.now()
        when = f"{config.post_time.strftime('%H:%M')} ({config.timezone})"
        if not config.enabled:
            lines = [
                f"**Trap of the day is off.** It was set for <#{config.channel_id}> at {when}. Turn it on with `enabled: True`."
            ]
        else:
            today = local_today(config, now)
            card = self.engine.deck.get(trap_of_the_day(self.engine.deck, config.guild_id, today, config.decks))
            posted = config.last_posted_on == today
            lines = [
                f"**Trap of the day** goes to <#{config.channel_id}> every day at {when}.",
                f"Today's trap: **{card.title}** ({'posted' if posted else 'not posted yet'}).",
                "Everyone who presses Answer is graded privately and scheduled on their own.",
            ] + ([f"Decks: {', '.join(config.decks)}."] if config.decks else [])
        if config.last_error:
            lines.append(f"⚠️ The last post failed: {config.last_error}")
        return "\n\n".join(lines)

    async def leaderboard(self, interaction: Any, action: str = "show") -> None:
        await self.guarded(interaction, self._leaderboard(interaction, action))

    async def _leaderboard(self, interaction: Any, action: str) -> None:
        problem = place_problem(interaction, Place.SERVER)
        if problem:
            await self.notice(interaction, problem)
            return
        guild_id = interaction.guild_id
        learner = await self.learner_for(interaction)
        if action == "join":
            self.store.join_leaderboard(guild_id, learner.id)  # type: ignore[arg-type]
            await self.notice(
                interaction,
                "You are on this server's leaderboard: your streak shows, nothing else. Leave with `/leaderboard action: leave`.",
                error=False,
            )
            return
        if action == "leave":
            self.store.leave_leaderboard(guild_id, learner.id)  # type: ignore[arg-type]
            await self.notice(interaction, "You are off this server's leaderboard.", error=False)
            return
        await interaction.response.defer(ephemeral=False, thinking=True)
        rows = []
        for learner_id in self.store.leaderboard_members(guild_id):
            member = self.engine.get_learner(learner_id)
            if member is not None:
                rows.append(
                    (
                        self.engine.stats_data(learner_id).streak_days,
                        member.display_name or "someone",
                    )
                )
        rows.sort(key=lambda row: (-row[0], row[1].casefold()))
        if rows:
            lines = ["**Streaks on this server**"] + [
                f"{rank}. {discord.utils.escape_markdown(name)}: {streak} day{'s' if streak != 1 else ''}"
                for rank, (streak, name) in enumerate(rows[:LEADERBOARD_SIZE], 1)
            ]
            lines.append("\nJoin with `/leaderboard action: join`; only your streak shows.")
        else:
            lines = [
                "Nobody is on this server's leaderboard yet. Join with `/leaderboard action: join`: only your streak shows."
            ]
        await InteractionSink(interaction, ephemeral=False).send(
            render_notice("\n".join(lines), error=False)
        )

    def trap_of_the_day_reply(self, card_id: str, day_label: str) -> Reply:
        """The public post: the question, with an Answer button anyone may press."""
        card = self.engine.deck.get(card_id)
        text = engine_texts.question_text(card, repeat=False, due_label="")
        text += f"\n\n_Trap of the day, {day_label}. Only you see your answer and grade._"
        return Reply(text, kind=ReplyKind.QUESTION, card_id=card_id, ephemeral=False)


def _missing_in(channel: Any, guild: Any) -> list[str]:
    """Permissions the bot lacks in ``channel``; none when the channel cannot be checked
    (a channel missing from the cache arrives as a partial one: resolve it first)."""
    if not hasattr(channel, "permissions_for") and hasattr(channel, "resolve"):
        channel = channel.resolve() or channel
    permissions_for = getattr(channel, "permissions_for", None)
    if permissions_for is None or getattr(guild, "me", None) is None:
        return []
    return missing_post_permissions(permissions_for(guild.me))


def _mention(channel: Any) -> str:
    return getattr(channel, "mention", None) or f"<#{channel.id}>"
