"""Telegram updates in, engine calls out.

What counts as an answer:
- in a private chat, any text that is not a command (a reply to a trap's message answers that
  trap: its card id, e.g. ``rl-08``, is in the question's first line; a reply to a follow-up's
  message, or a plain message while a follow-up is open, answers the follow-up);
- in a group, only a reply to one of the bot's trap messages, or a message that mentions the
  bot; it is graded for whoever sent it, each member with their own schedule.

Right after /start in a private chat, a short text that reads as a place, an offset or a time
("Berlin 07:30", "UTC+2", "7pm") sets the timezone and push time instead.

Telegram apps split a message longer than 4,096 characters into several messages. A text close
to that length is therefore held for a moment (``split_wait_seconds``) and joined with the parts
that follow it, so a long answer is graded once, as one answer.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, select
from telegram import BotCommand, Message, MessageEntity, Update
from telegram.constants import ChatMemberStatus, ChatType
from telegram.error import Forbidden, TelegramError
from telegram.ext import (
    CallbackQueryHandler,
    ChatMemberHandler,
    CommandHandler,
    MessageHandler,
    filters,
)

from bot import texts
from bot.actions import Action, InvalidAction, Verb
from bot.groups import ONLY_ADMINS
from bot.markup import to_plain
from bot.models import Learner
from bot.prefs import PreferenceError, parse_push_time, parse_timezone
from bot.replies import Button, Reply, ReplyKind
from bot.telegram.delivery import Delivery, Destination
from bot.telegram.format import utf16_length
from bot.telegram.sequencing import UserSequencer
from bot.transport import JudgeWarmup

if TYPE_CHECKING:
    from telegram import Bot
    from telegram.ext import Application, ContextTypes

    from bot.engine import QuizEngine
    from cards.deck import Deck

log = logging.getLogger(__name__)

PLATFORM = "telegram"

COMMANDS = (
    BotCommand("start", "What trapbot is, and your timezone and push time"),
    BotCommand("trap", "The next trap: a due review or a new one"),
    BotCommand("hint", "A nudge for the open trap"),
    BotCommand("skip", "Put the open trap back for later"),
    BotCommand("stats", "Streak, what is due, mastery, with a plot"),
    BotCommand("settings", "Push time, timezone, new traps a day, pause"),
    BotCommand("decks", "The decks /trap draws from (in a group: the group's)"),
    BotCommand("undo", "Take back your last grade"),
    BotCommand("forget", "Delete everything stored about you"),
    BotCommand("help", "The commands"),
)

SETUP_HINT = "Or send your city or UTC offset and a time right here, for example `Berlin 07:30` or `UTC+2 7pm`."
SETUP_UNREAD = (
    "I read that as neither a place nor a time. Send a city (`Berlin`), a zone (`Europe/Berlin`), "
    "an offset (`UTC+2`) and/or a time (`07:30`), or tap a button above."
)
TEXT_ONLY = "I grade text only: send your answer as a message (stickers, photos and voice notes are not read)."
EDITED = (
    "Edits are not graded again: I graded the message as you first sent it. "
    "To replace that grade, send /undo and then your new answer."
)
GROUP_HELP = (
    "\n\nIn a group, answer a trap by replying to its message; each of you gets your own grade and schedule. "
    "/decks shows the decks /trap draws from: in a group the group's (its admins choose them), in private your own."
)
GROUP_SETTINGS = "\n\nIn this group, /trap draws from the group's decks (/decks); your own decks apply in private."
NOT_A_GROUP_LIST = "That button belongs to a group's deck list."
ADMINS_UNKNOWN = "I could not check who this group's admins are; try again in a moment."
FAILED = "Something went wrong on my side. Anything you sent is saved; try again in a moment."

#: Buttons whose message is used up once pressed: their keyboard is taken off.
SPENT_BY_PRESS = frozenset(
    {
        Verb.RATE,
        Verb.CONFIRM,
        Verb.OVERRIDE,
        Verb.FORGET,
        Verb.SETTINGS,
        Verb.SNOOZE,
        Verb.SKIP_TODAY,
        Verb.SKIP,
        Verb.EXTRA,
    }
)

#: How a follow-up's message starts (``bot.followups``), as Telegram shows it.
FOLLOW_UP_HEADER = "Follow-up"
_CARD_ID = re.compile(r"(?<![\w-])([a-z][a-z0-9]*-\d+)(?![\w-])")


def find_card_id(text: str, deck: Deck) -> str | None:
    """The first deck card id in a message's text (the trap's header carries it)."""
    for match in _CARD_ID.finditer(text):
        if match.group(1) in deck:
            return match.group(1)
    return None


def parse_setup(text: str) -> list[tuple[str, str]] | None:
    """Settings typed after /start: ``[(field, value), ...]``, or None when it is not that."""
    value = " ".join(text.split())
    if not value or len(value) > 64:
        return None
    if _reads(parse_push_time, value):
        return [("time", value)]
    if _reads(parse_timezone, value):
        return [("timezone", value)]
    tokens = [t for t in re.split(r"[,;]?\s+|,|;", value) if t]
    for i in range(1, len(tokens)):
        head, tail = " ".join(tokens[:i]), " ".join(tokens[i:])
        if _reads(parse_timezone, head) and _reads(parse_push_time, tail):
            return [("timezone", head), ("time", tail)]
        if _reads(parse_push_time, head) and _reads(parse_timezone, tail):
            return [("timezone", tail), ("time", head)]
    return None


def _reads(parse: Callable[[str], Any], value: str) -> bool:
    try:
        parse(value)
    except PreferenceError:
        return False
    return True


@dataclass(frozen=True)
class Incoming:
    """Who sent an update and where the replies go."""

    user_id: int
    learner_id: int
    private: bool
    dest: Destination


@dataclass
class _Parts:
    """A long text waiting for the parts Telegram split off it."""

    incoming: Incoming
    card_id: str | None
    texts: list[str]
    follow_up: bool = False
    timer: asyncio.Task[Any] | None = field(default=None, repr=False)


class TelegramHandlers:
    """The update callbacks; one instance per running bot."""

    def __init__(
        self,
        engine: QuizEngine,
        delivery: Delivery,
        sequencer: UserSequencer,
        *,
        split_wait_seconds: float = 1.5,
        split_threshold: int = 3500,
        warmup: JudgeWarmup | None = None,
    ):
        self.engine = engine
        self.warmup = warmup or JudgeWarmup()
        self.delivery = delivery
        self.sequencer = sequencer
        self.split_wait_seconds = split_wait_seconds
        self.split_threshold = split_threshold
        self.setup_pending: set[int] = set()  # user ids whose next short text may be settings
        self.parts: dict[int, _Parts] = {}

    def register(self, app: Application) -> None:
        new = filters.UpdateType.MESSAGE  # edited messages have a handler of their own
        commands: dict[str, Callable[[Update, Any], Awaitable[None]]] = {
            "start": self.on_start,
            "trap": self.on_trap,
            "hint": self.on_hint,
            "skip": self.on_skip,
            "stats": self.on_stats,
            "settings": self.on_settings,
            "decks": self.on_decks,
            "undo": self.on_undo,
            "forget": self.on_forget,
            "help": self.on_help,
        }
        for name, callback in commands.items():
            app.add_handler(CommandHandler(name, callback, filters=new))
        app.add_handler(MessageHandler(new & filters.COMMAND, self.on_unknown_command))
        app.add_handler(CallbackQueryHandler(self.on_button))
        app.add_handler(MessageHandler(new & filters.TEXT & ~filters.COMMAND, self.on_text))
        app.add_handler(MessageHandler(filters.UpdateType.EDITED_MESSAGE, self.on_edited))
        app.add_handler(MessageHandler(filters.StatusUpdate.MIGRATE, self.on_migrate))
        app.add_handler(
            MessageHandler(new & ~filters.TEXT & ~filters.StatusUpdate.ALL, self.on_other)
        )
        app.add_handler(ChatMemberHandler(self.on_membership, ChatMemberHandler.MY_CHAT_MEMBER))
        app.add_error_handler(self.on_error)

    # ----- who and where ----------------------------------------------------------------

    def incoming(self, update: Update) -> Incoming | None:
        """The sender as a learner (created on first contact), or None for updates to ignore."""
        user, chat = update.effective_user, update.effective_chat
        if user is None or chat is None or user.is_bot or chat.type == ChatType.CHANNEL:
            return None
        private = chat.type == ChatType.PRIVATE
        learner = self.engine.learner(
            PLATFORM, user.id, display_name=user.full_name, chat_id=chat.id if private else None
        )
        if private and not learner.active:
            self.engine.set_active(learner.id, True)  # they unblocked the bot and wrote again
        message = update.effective_message
        thread = (
            getattr(message, "message_thread_id", None)
            if getattr(message, "is_topic_message", False)
            else None
        )
        reply_to = message.message_id if (message is not None and not private) else None
        assert learner.id is not None
        return Incoming(user.id, learner.id, private, Destination(chat.id, thread, reply_to))

    async def _begin(self, update: Update) -> Incoming | None:
        """Common start of every command and button: finish a held long text first."""
        incoming = self.incoming(update)
        if incoming is not None:
            await self._flush_parts(incoming.user_id)
            self.setup_pending.discard(incoming.user_id)
        return incoming

    async def _run(
        self,
        incoming: Incoming,
        work: Callable[[], Awaitable[list[Reply]]],
        *,
        typing: bool = False,
    ) -> None:
        """Call the engine, then send what it said; engine errors become a clear message."""
        try:
            if typing:
                async with self.delivery.typing(incoming.dest):
                    replies = await work()
            else:
                replies = await work()
        except InvalidAction as error:
            replies = [Reply(f"That did not work: {error}.", kind=ReplyKind.ERROR)]
        except Exception:
            log.exception("engine call failed for learner %s", incoming.learner_id)
            replies = [Reply(FAILED, kind=ReplyKind.ERROR)]
        await self.send(incoming, replies)

    async def send(self, incoming: Incoming, replies: list[Reply]) -> None:
        await self._send(incoming.dest, replies, incoming.learner_id if incoming.private else None)

    async def _send(self, dest: Destination, replies: list[Reply], private_learner: int | None = None) -> None:
        try:
            await self.delivery.send(dest, replies)
        except Forbidden as error:
            log.info("cannot write to chat %s: %s", dest.chat_id, error)
            if private_learner is not None:
                self.engine.set_active(private_learner, False)
        except TelegramError as error:
            log.warning("sending to chat %s failed: %s", dest.chat_id, error)

    def decks_here(self, incoming: Incoming) -> list[str] | None:
        """The decks /trap draws from where ``incoming`` came from: a group's own; None in
        private (the learner's own)."""
        return None if incoming.private else self.engine.group_decks(PLATFORM, incoming.dest.chat_id)

    # ----- commands ---------------------------------------------------------------------

    async def on_start(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        incoming = await self._begin(update)
        if incoming is None:
            return

        async def work() -> list[Reply]:
            replies = await self.engine.start(incoming.learner_id)
            if incoming.private and replies:
                self.setup_pending.add(incoming.user_id)
                replies[0] = replace(replies[0], text=replies[0].text + "\n\n" + SETUP_HINT)
            return replies

        await self._run(incoming, work)

    async def on_trap(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if incoming := await self._begin(update):
            decks = self.decks_here(incoming)
            await self._run(incoming, lambda: self.engine.next_trap(incoming.learner_id, decks=decks))

    async def on_hint(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if incoming := await self._begin(update):
            await self._run(incoming, lambda: self.engine.hint(incoming.learner_id))

    async def on_skip(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if incoming := await self._begin(update):
            await self._run(incoming, lambda: self.engine.skip(incoming.learner_id))

    async def on_stats(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if incoming := await self._begin(update):
            await self._run(
                incoming, lambda: self.engine.stats(incoming.learner_id, with_plot=True)
            )

    async def on_undo(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if incoming := await self._begin(update):
            await self._run(incoming, lambda: self.engine.undo(incoming.learner_id))

    async def on_forget(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        # Always asks first, whatever follows the command.
        if incoming := await self._begin(update):
            await self._run(incoming, lambda: self.engine.forget(incoming.learner_id))

    async def on_help(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if incoming := await self._begin(update):
            text = texts.HELP + "\n\nReply to a trap's message to answer that trap." + GROUP_HELP
            await self.send(incoming, [Reply(text)])

    async def on_settings(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        incoming = await self._begin(update)
        if incoming is None:
            return
        args = list(context.args or [])

        async def work() -> list[Reply]:
            if not args:
                replies = self.engine.settings(incoming.learner_id)
            else:
                replies = await self.engine.update_settings(
                    incoming.learner_id, args[0], " ".join(args[1:])
                )
            if incoming.private or len(self.engine.deck.names) < 2 or not replies:
                return replies
            last = replies[-1]
            return [*replies[:-1], replace(last, text=last.text + GROUP_SETTINGS)]

        await self._run(incoming, work)

    async def on_decks(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """In private, the learner's own decks; in a group, the group's, with toggles only its
        admins may use. Needs no learner in a group: an anonymous admin writes as the group."""
        message, chat = update.effective_message, update.effective_chat
        if message is None or chat is None or chat.type == ChatType.CHANNEL:
            return
        incoming = await self._begin(update)
        if chat.type == ChatType.PRIVATE:
            if incoming is not None:

                async def work() -> list[Reply]:
                    return self.engine.deck_choice(incoming.learner_id)

                await self._run(incoming, work)
            return
        thread = message.message_thread_id if message.is_topic_message else None
        dest = Destination(chat.id, thread, message.message_id)
        try:
            replies = [self.engine.group_decks_reply(PLATFORM, chat.id)]
        except Exception:
            log.exception("the decks of chat %s failed", chat.id)
            replies = [Reply(FAILED, kind=ReplyKind.ERROR)]
        await self._send(dest, replies)

    async def on_unknown_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        chat = update.effective_chat
        if message is None or chat is None or chat.type != ChatType.PRIVATE:
            return  # in groups, other bots' commands are none of our business
        incoming = await self._begin(update)
        if incoming is None:
            return
        command = (message.text or "").split(maxsplit=1)[0][:40]
        await self.send(
            incoming,
            [Reply(f"I don't know {command}. Send /help for the commands.", kind=ReplyKind.ERROR)],
        )

    # ----- answers and other messages -------------------------------------------------------

    async def on_text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, chat, user = update.effective_message, update.effective_chat, update.effective_user
        if message is None or chat is None or user is None:
            return
        text = message.text or ""
        private = chat.type == ChatType.PRIVATE
        held = self.parts.get(user.id)
        card_id = self._replied_card(message, context.bot)
        follow_up = card_id is not None and self._replied_follow_up(message)
        if (
            not private
            and card_id is None
            and (held is None or held.incoming.dest.chat_id != chat.id)
        ):
            stripped = self._without_mention(message, context.bot)
            if stripped is None:
                return  # group chatter: not an answer, and no learner record for it
            text = stripped
        incoming = self.incoming(update)
        if incoming is None:
            return
        if held is not None:
            if held.incoming.dest.chat_id == incoming.dest.chat_id:
                held.texts.append(text)
                if self._looks_split(text):
                    self._arm(incoming.user_id, held)
                else:
                    await self._flush_parts(incoming.user_id)
                return
            await self._flush_parts(incoming.user_id)
        setup = private and incoming.user_id in self.setup_pending and card_id is None
        if setup and await self._setup_input(incoming, text):
            return
        if self._looks_split(text):
            held = _Parts(incoming, card_id, [text], follow_up=follow_up)
            self.parts[incoming.user_id] = held
            self._arm(incoming.user_id, held)
            return
        await self._answer(incoming, text, card_id, follow_up=follow_up)

    async def _answer(
        self, incoming: Incoming, text: str, card_id: str | None, *, follow_up: bool = False
    ) -> None:
        self.setup_pending.discard(incoming.user_id)
        await self._run(
            incoming,
            lambda: self.warmup.grade(
                self.engine.submit_answer(
                    incoming.learner_id, text, card_id=card_id, to_follow_up=follow_up
                )
            ),
            typing=True,
        )

    async def _setup_input(self, incoming: Incoming, text: str) -> bool:
        """Apply settings typed after /start; False when the text should be read as an answer."""
        changes = parse_setup(text)
        if changes is None:
            learner = self.engine.get_learner(incoming.learner_id)
            if learner is not None and learner.current_card_id is not None:
                self.setup_pending.discard(incoming.user_id)
                return False
            await self.send(incoming, [Reply(SETUP_UNREAD, kind=ReplyKind.ERROR)])
            return True
        self.setup_pending.discard(incoming.user_id)

        async def work() -> list[Reply]:
            replies: list[Reply] = []
            for name, value in changes:
                replies = await self.engine.update_settings(incoming.learner_id, name, value)
                if any(r.kind is ReplyKind.ERROR for r in replies):
                    return replies
            trap_now = ((Button("Give me a trap now", Action(Verb.NEXT).encode()),),)
            return [replace(r, buttons=r.buttons or trap_now) for r in replies]

        await self._run(incoming, work)
        return True

    def _looks_split(self, text: str) -> bool:
        return utf16_length(text) >= self.split_threshold

    def _arm(self, user_id: int, held: _Parts) -> None:
        if held.timer is not None:
            held.timer.cancel()
        held.timer = self.delivery.spawn(self._parts_timer(user_id, held), name=f"parts:{user_id}")

    async def _parts_timer(self, user_id: int, held: _Parts) -> None:
        await asyncio.sleep(self.split_wait_seconds)
        async with self.sequencer.turn(("user", user_id)):
            if self.parts.get(user_id) is held:
                await self._flush_parts(user_id)

    async def _flush_parts(self, user_id: int) -> None:
        """Grade a held long text now, with its parts. The caller holds the user's turn."""
        held = self.parts.pop(user_id, None)
        if held is None:
            return
        if held.timer is not None and held.timer is not asyncio.current_task():
            held.timer.cancel()
        await self._answer(
            held.incoming, "\n".join(held.texts), held.card_id, follow_up=held.follow_up
        )

    async def flush_all(self) -> None:
        """Grade every held long text (at shutdown: nothing a learner sent is dropped)."""
        for user_id in list(self.parts):
            async with self.sequencer.turn(("user", user_id)):
                await self._flush_parts(user_id)

    def _replied_card(self, message: Message, bot: Bot) -> str | None:
        replied = message.reply_to_message
        if replied is None or replied.from_user is None or replied.from_user.id != bot.id:
            return None
        return find_card_id(replied.text or replied.caption or "", self.engine.deck)

    @staticmethod
    def _replied_follow_up(message: Message) -> bool:
        """Whether the bot message replied to is a follow-up question (its first word says so)."""
        replied = message.reply_to_message
        return replied is not None and (replied.text or "").startswith(FOLLOW_UP_HEADER)

    @staticmethod
    def _without_mention(message: Message, bot: Bot) -> str | None:
        """The text without the bot's @mention, or None when the bot is not mentioned."""
        text = message.text or ""
        username = (bot.username or "").casefold()
        found = False
        entities = message.parse_entities([MessageEntity.MENTION, MessageEntity.TEXT_MENTION])
        for entity, value in entities.items():
            if (entity.type == MessageEntity.MENTION and value[1:].casefold() == username) or (
                entity.type == MessageEntity.TEXT_MENTION
                and entity.user is not None
                and entity.user.id == bot.id
            ):
                found = True
                text = text.replace(value, " ", 1)
        return text.strip() if found else None

    async def on_other(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Stickers, photos, voice notes, files: a pointer to text in private, silence in groups."""
        message, chat = update.effective_message, update.effective_chat
        if message is None or chat is None:
            return
        if chat.type != ChatType.PRIVATE and self._replied_card(message, context.bot) is None:
            return
        incoming = self.incoming(update)
        if incoming is not None:
            await self.send(incoming, [Reply(TEXT_ONLY)])

    async def on_edited(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, chat = update.edited_message, update.effective_chat
        if message is None or chat is None or chat.type != ChatType.PRIVATE or not message.text:
            return
        if message.text.startswith("/"):
            return
        incoming = self.incoming(update)
        if incoming is not None:
            await self.send(incoming, [Reply(EDITED)])

    # ----- buttons ----------------------------------------------------------------------

    async def on_button(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        if query is None:
            return
        incoming = await self._begin(update)
        data = query.data
        if incoming is None or not isinstance(data, str) or not data:
            await self._answer_query(query, "That button does nothing.", alert=False)
            return
        try:
            verb: Verb | None = Action.decode(data).verb
        except InvalidAction:
            verb = None
        if verb is Verb.GROUP_DECK:
            await self._on_group_deck(update, context.bot, query, data)
            return
        try:
            replies = await self.engine.act(incoming.learner_id, data, decks=self.decks_here(incoming))
        except Exception:
            log.exception("button failed for learner %s", incoming.learner_id)
            await self._answer_query(query, to_plain(FAILED), alert=True)
            return
        if replies and all(r.kind is ReplyKind.ERROR for r in replies):
            # Stale, forged or someone else's button: tell only the person who pressed it.
            await self._answer_query(query, to_plain(replies[0].text), alert=True)
            return
        await self._answer_query(query)
        message = query.message if isinstance(query.message, Message) else None
        if verb is Verb.FORGET and any("deleted" in r.text for r in replies):
            self.setup_pending.discard(incoming.user_id)
        if message is not None:
            if verb is Verb.TICK and len(replies) == 1 and replies[0].kind is ReplyKind.CONFIRM:
                if await self.delivery.edit(message.chat.id, message.message_id, replies[0]):
                    return
            elif verb in SPENT_BY_PRESS:
                await self.delivery.clear_buttons(message.chat.id, message.message_id)
            if not incoming.private:
                incoming = replace(
                    incoming, dest=replace(incoming.dest, reply_to=message.message_id)
                )
        await self.send(incoming, replies)

    async def _on_group_deck(self, update: Update, bot: Bot, query: Any, data: str) -> None:
        """A group admin adds or drops one of the group's decks; the list is redrawn in place.
        Anyone else, and a button that no longer applies, gets a short alert."""
        chat, user = update.effective_chat, update.effective_user
        message = query.message if isinstance(query.message, Message) else None
        if chat is None or user is None or message is None or chat.type in (ChatType.PRIVATE, ChatType.CHANNEL):
            await self._answer_query(query, NOT_A_GROUP_LIST, alert=True)
            return
        try:
            member = await bot.get_chat_member(chat.id, user.id)
        except TelegramError as error:
            log.warning("getChatMember in chat %s failed: %s", chat.id, error)
            await self._answer_query(query, ADMINS_UNKNOWN, alert=True)
            return
        if member.status not in (ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR):
            await self._answer_query(query, ONLY_ADMINS, alert=True)
            return
        try:
            reply = self.engine.toggle_group_deck(PLATFORM, chat.id, data, by=user.id)
        except InvalidAction as error:
            await self._answer_query(query, f"That button no longer applies: {error}.", alert=True)
            return
        except Exception:
            log.exception("toggling a deck of chat %s failed", chat.id)
            await self._answer_query(query, to_plain(FAILED), alert=True)
            return
        if reply.kind is ReplyKind.ERROR:
            await self._answer_query(query, to_plain(reply.text), alert=True)
            return
        await self._answer_query(query, "Saved.")
        if not await self.delivery.edit(chat.id, message.message_id, reply):
            thread = message.message_thread_id if message.is_topic_message else None
            await self._send(Destination(chat.id, thread, None), [reply])

    async def _answer_query(
        self, query: Any, text: str | None = None, *, alert: bool = False
    ) -> None:
        try:
            await query.answer(text=text[:200] if text else None, show_alert=alert)
        except TelegramError as error:  # too old (over ~15 minutes) or already answered
            log.debug("callback query answer failed: %s", error)

    # ----- membership, errors ---------------------------------------------------------------

    async def on_membership(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A learner blocking (or unblocking) the bot in private: stop (or resume) pushes."""
        change = update.my_chat_member
        if change is None or change.chat.type != ChatType.PRIVATE:
            return
        with Session(self.engine.db) as session:
            learner = session.exec(
                select(Learner).where(
                    Learner.platform == PLATFORM,
                    Learner.platform_user_id == str(change.from_user.id),
                )
            ).first()
        if learner is None:
            return
        status = change.new_chat_member.status
        if status in (ChatMemberStatus.BANNED, ChatMemberStatus.LEFT):
            self.engine.set_active(learner.id, False)
        elif status == ChatMemberStatus.MEMBER:
            self.engine.set_active(learner.id, True)

    async def on_migrate(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A group that became a supergroup gets a new chat id: its decks go with it."""
        message = update.effective_message
        if message is None:
            return
        if message.migrate_to_chat_id:
            self.engine.move_group(PLATFORM, message.chat.id, message.migrate_to_chat_id)
        elif message.migrate_from_chat_id:
            self.engine.move_group(PLATFORM, message.migrate_from_chat_id, message.chat.id)

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        update_id = update.update_id if isinstance(update, Update) else None
        log.error("update %s raised", update_id, exc_info=context.error)
