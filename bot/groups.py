"""A group chat's decks (issue 41, "Choosing decks"): in a group, /trap draws from the decks
the group's admins chose; in private, from each member's own. Members keep their own
schedules either way: the group narrows which cards a /trap in the group may bring.

Platform-agnostic: the adapter says which group (platform and chat id, as text) and whether
the person pressing is one of its admins; this room stores the choice and builds the list
with its toggle buttons. A button names its deck by position and a short digest of the
deck's name, so a button from before the loaded decks changed is refused, not applied to
whichever deck now sits at that position.
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from sqlalchemy.engine import Engine as DbEngine
from sqlmodel import Session, select

from bot.actions import Action, InvalidAction, Verb
from bot.clock import Clock
from bot.models import GroupChat
from bot.replies import Button, Reply, ReplyKind
from cards.deck import Deck

#: How many times a toggle retries after another admin's change slipped in between.
_ATTEMPTS = 8

ONLY_ADMINS = "Only this group's admins can change its decks."


def deck_tag(name: str) -> str:
    """Six hex digits of the deck name's SHA-256: enough to tell a stale button."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:6]


class GroupRoom:
    """Group chats' decks; the engine sets ``db``, ``deck`` and ``clock``."""

    db: DbEngine
    deck: Deck
    clock: Clock

    def group_decks(self, platform: str, chat_id: str | int) -> list[str]:
        """The loaded decks /trap draws from in this group: its admins' choice, or every
        loaded deck when it has none (or none of the chosen decks is loaded any more)."""
        stored = self._group(platform, chat_id)
        return self._loaded_choice(stored.decks if stored is not None else None)

    def group_decks_reply(self, platform: str, chat_id: str | int) -> Reply:
        """The group's decks, with a toggle per deck when more than one is loaded."""
        names = self.deck.names
        if len(names) < 2:
            only = self.deck.info(names[0]).title
            return Reply(f"This bot has one deck, **{only}**: /trap in this group draws from it.", kind=ReplyKind.SETTINGS)
        chosen = self.group_decks(platform, chat_id)
        lines = ["**This group's decks**"]
        for name in names:
            count = len(self.deck.in_decks([name]))
            mark = "✓" if name in chosen else "·"
            lines.append(f"{mark} {self.deck.info(name).title} (`{name}`): {count} trap{'s' if count != 1 else ''}")
        lines += [
            "",
            (
                "/trap in this group draws from the decks ticked ✓; each member keeps their own schedule, and "
                "in private their own decks (/settings) apply. Only the group's admins can change them: tap a deck to add or drop it."
            ),
        ]
        buttons = tuple(
            (
                Button(
                    ("✓ " if name in chosen else "Add ") + self.deck.info(name).title[:40],
                    Action(Verb.GROUP_DECK, arg=f"{index}.{deck_tag(name)}").encode(),
                ),
            )
            for index, name in enumerate(names)
        )
        return Reply("\n".join(lines), kind=ReplyKind.SETTINGS, buttons=buttons)

    def toggle_group_deck(self, platform: str, chat_id: str | int, data: str, *, by: str | int) -> Reply:
        """Add or drop the deck a group-deck button names; the caller checked that ``by`` is
        an admin. ``InvalidAction`` for a button that is not one or no longer applies. The
        group keeps at least one deck. Returns the group's decks as they are now."""
        action = Action.decode(data)
        if action.verb is not Verb.GROUP_DECK or action.arg is None:
            raise InvalidAction("that is not a group deck button")
        index_text, _, tag = action.arg.partition(".")
        names = self.deck.names
        if not index_text.isascii() or not index_text.isdecimal() or int(index_text) >= len(names) or deck_tag(names[int(index_text)]) != tag:
            raise InvalidAction("the loaded decks have changed since that list was sent; send /decks for the current one")
        name = names[int(index_text)]
        for _ in range(_ATTEMPTS):
            with Session(self.db) as session:
                row = self._group_in(session, platform, chat_id)
                chosen = self._loaded_choice(row.decks if row is not None else None)
                if name in chosen and len(chosen) == 1:
                    return Reply("That is the group's only deck; add another before dropping it.", kind=ReplyKind.ERROR)
                chosen = [n for n in chosen if n != name] if name in chosen else [n for n in names if n in chosen or n == name]
                stored = None if set(chosen) == set(names) else chosen
                if self._store(session, row, platform, chat_id, stored, by):
                    break
        else:
            raise InvalidAction("the group's decks were changing under that press; try again")
        return self.group_decks_reply(platform, chat_id)

    def move_group(self, platform: str, old_chat_id: str | int, new_chat_id: str | int) -> bool:
        """Carry a group's decks to its new chat id (a Telegram group that became a
        supergroup); True when moved. A choice already made under the new id is kept."""
        with Session(self.db) as session:
            if self._group_in(session, platform, new_chat_id) is not None:
                return False
            moved = session.execute(
                sa.update(GroupChat)
                .where(GroupChat.platform == platform, GroupChat.chat_id == str(old_chat_id))  # type: ignore[arg-type]
                .values(chat_id=str(new_chat_id))
            ).rowcount
            session.commit()
            return bool(moved)

    # ----- storage ------------------------------------------------------------------------

    def _loaded_choice(self, stored: list[str] | None) -> list[str]:
        names = self.deck.names
        chosen = [name for name in names if stored is None or name in stored]
        return chosen or names

    def _group(self, platform: str, chat_id: str | int) -> GroupChat | None:
        with Session(self.db, expire_on_commit=False) as session:
            return self._group_in(session, platform, chat_id)

    @staticmethod
    def _group_in(session: Session, platform: str, chat_id: str | int) -> GroupChat | None:
        return session.exec(
            select(GroupChat).where(GroupChat.platform == platform, GroupChat.chat_id == str(chat_id))
        ).first()

    def _store(
        self, session: Session, row: GroupChat | None, platform: str, chat_id: str | int, decks: list[str] | None, by: str | int
    ) -> bool:
        """Write ``decks`` if nobody changed the group since ``row`` was read; False otherwise."""
        now = self.clock.now()
        if row is None:
            session.add(GroupChat(platform=platform, chat_id=str(chat_id), decks=decks, revision=1, updated_by=str(by)[:64], updated_at=now))
            try:
                session.commit()
            except sa.exc.IntegrityError:  # another admin's first choice came first
                session.rollback()
                return False
            return True
        changed = session.execute(
            sa.update(GroupChat)
            .where(GroupChat.id == row.id, GroupChat.revision == row.revision)  # type: ignore[arg-type]
            .values(decks=decks, revision=row.revision + 1, updated_by=str(by)[:64], updated_at=now)
        ).rowcount
        session.commit()
        return changed == 1
