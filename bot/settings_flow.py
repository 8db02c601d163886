"""Settings: the welcome with the defaults, /settings, and changes typed or tapped."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from bot import texts
from bot.actions import Action, InvalidAction, Verb
from bot.learners import LearnerRoom
from bot.models import Learner
from bot.prefs import (
    PreferenceError,
    parse_decks,
    parse_new_per_day,
    parse_on_off,
    parse_push_time,
    parse_timezone,
)
from bot.replies import Button, Reply, ReplyKind


class SettingsRoom(LearnerRoom):
    async def start(self, learner_id: int) -> list[Reply]:
        learner = self._require(learner_id)
        settings = self._settings_summary(learner)
        buttons = (
            (Button("Keep these settings", Action(Verb.SETTINGS, arg="accept").encode()),),
            (Button("Give me a trap now", Action(Verb.NEXT).encode()),),
        )
        return self.with_notices(learner_id, [
            Reply(
                texts.WELCOME
                + "\n\n"
                + settings
                + "\n\nChange them with /settings, or keep them with one tap.",
                kind=ReplyKind.SETTINGS,
                buttons=buttons,
            )
        ])

    def settings(self, learner_id: int) -> list[Reply]:
        learner = self._require(learner_id)
        pause = (
            Button("Resume reminders", Action(Verb.SETTINGS, arg="resume").encode())
            if learner.paused
            else Button("Pause reminders", Action(Verb.SETTINGS, arg="pause").encode())
        )
        interview = Button(
            "Interview mode off" if learner.interview else "Interview mode on",
            Action(Verb.SETTINGS, arg="interview-off" if learner.interview else "interview-on").encode(),
        )
        return self.with_notices(learner_id, [
            Reply(
                self._settings_summary(learner)
                + "\n\nTo change one, send for example `/settings timezone Europe/Berlin`, "
                "`/settings time 07:30`, `/settings new 2` or `/settings interview on`."
                + (" Choose decks with the buttons or `/settings decks NAME, NAME` (or `all`)." if len(self.deck.names) > 1 else ""),  # type: ignore[attr-defined]
                kind=ReplyKind.SETTINGS,
                buttons=((pause, interview),) + self._deck_buttons(learner),
            )
        ])

    def deck_choice(self, learner_id: int) -> list[Reply]:
        """The learner's decks with a toggle per deck (/decks in a private chat)."""
        learner = self._require(learner_id)
        names = self.deck.names  # type: ignore[attr-defined]
        if len(names) < 2:
            return [Reply(f"This bot has one deck, **{self.deck.info(names[0]).title}**: you study it.", kind=ReplyKind.SETTINGS)]  # type: ignore[attr-defined]
        return self.with_notices(learner_id, [
            Reply(
                "**Your decks**" + self._decks_line(learner) + "\n\nTap a deck to add or drop it, or send "
                "`/settings decks NAME, NAME` (`all` for every deck). In a group, /trap draws from the group's decks.",
                kind=ReplyKind.SETTINGS,
                buttons=self._deck_buttons(learner),
            )
        ])

    def _deck_buttons(self, learner: Learner) -> tuple[tuple[Button, ...], ...]:
        """One toggle per loaded deck, when there is more than the built-in one."""
        names = self.deck.names  # type: ignore[attr-defined]
        if len(names) < 2:
            return ()
        chosen = self._chosen_decks(learner)
        return tuple(
            (Button(("✓ " if name in chosen else "Add ") + self.deck.info(name).title[:40],  # type: ignore[attr-defined]
                    Action(Verb.SETTINGS, arg=f"deck-{index}").encode()),)
            for index, name in enumerate(names)
        )

    def _chosen_decks(self, learner: Learner) -> list[str]:
        """The loaded decks this learner studies (all when the stored choice names none of them)."""
        names = self.deck.names  # type: ignore[attr-defined]
        chosen = [name for name in names if learner.decks is None or name in learner.decks]
        return chosen or names

    def _settings_summary(self, learner: Learner) -> str:
        state = "paused" if learner.paused else "on"
        return (
            "**Your settings**\n"
            f"- Timezone: {learner.timezone}\n"
            f"- Daily push: {learner.push_time.strftime('%H:%M')} ({state})\n"
            f"- New traps a day: {learner.new_per_day}\n"
            f"- Interview mode: {'on' if learner.interview else 'off'} (a missed core point brings a follow-up question at once)"
        ) + self._decks_line(learner)

    def _decks_line(self, learner: Learner) -> str:
        names = self.deck.names  # type: ignore[attr-defined]
        if len(names) < 2:
            return ""
        chosen = self._chosen_decks(learner)
        titles = ", ".join(f"{self.deck.info(name).title} (`{name}`)" for name in chosen)  # type: ignore[attr-defined]
        return f"\n- Decks: {'all: ' if len(chosen) == len(names) else ''}{titles}"

    async def update_settings(self, learner_id: int, field: str, value: str) -> list[Reply]:
        """Change one setting from what the learner typed; a clear message when it does not parse."""
        self.get_learner(learner_id)  # a bad stored zone is repaired (and told) whatever is typed
        changes: dict[str, Any] = {}
        try:
            key = field.strip().casefold()
            if key in ("timezone", "tz", "zone"):
                changes["timezone"] = parse_timezone(value)
            elif key in ("time", "push", "push_time"):
                changes["push_time"] = parse_push_time(value)
            elif key in ("new", "new_per_day"):
                changes["new_per_day"] = parse_new_per_day(value)
            elif key in ("pause", "paused"):
                changes["paused"] = True
            elif key in ("resume",):
                changes["paused"] = False
            elif key in ("interview",):
                changes["interview"] = parse_on_off(value)
            elif key in ("deck", "decks"):
                changes["decks"] = parse_decks(value, self.deck.names)  # type: ignore[attr-defined]
            else:
                raise PreferenceError(
                    f"I have no setting called {field!r}: try timezone, time, new, interview, decks, pause or resume."
                )
        except PreferenceError as error:
            return self.with_notices(learner_id, [Reply(str(error), kind=ReplyKind.ERROR)])
        return self.with_notices(learner_id, self._apply_settings(learner_id, changes))

    def _apply_settings(self, learner_id: int, changes: dict[str, Any]) -> list[Reply]:
        with Session(self.db, expire_on_commit=False) as session:
            learner = session.get(Learner, learner_id)
            if learner is None:
                return [self._unknown_learner()]
            for name, value in changes.items():
                setattr(learner, name, value)
            if {"timezone", "push_time", "paused"} & changes.keys():
                learner.next_push_at = self._push_moment(learner)
            session.add(learner)
            session.commit()
        return [Reply("Saved.\n\n" + self._settings_summary(learner), kind=ReplyKind.SETTINGS)]

    async def _settings_action(self, learner_id: int, arg: str | None) -> list[Reply]:
        if arg == "accept":
            learner = self._require(learner_id)
            return [
                Reply(
                    f"All set: a trap every day at {learner.push_time.strftime('%H:%M')} ({learner.timezone}).",
                    buttons=((Button("Give me a trap now", Action(Verb.NEXT).encode()),),),
                )
            ]
        if arg in ("pause", "resume"):
            return self._apply_settings(learner_id, {"paused": arg == "pause"})
        if arg in ("interview-on", "interview-off"):
            return self._apply_settings(learner_id, {"interview": arg == "interview-on"})
        if arg and arg.startswith("deck-") and arg[5:].isdigit():
            return self._toggle_deck(learner_id, int(arg[5:]))
        raise InvalidAction("unknown settings button")

    def _toggle_deck(self, learner_id: int, index: int) -> list[Reply]:
        """Add or drop one deck; the last one chosen stays (a learner studies at least one)."""
        names = self.deck.names  # type: ignore[attr-defined]
        if index >= len(names):
            raise InvalidAction("that deck is no longer loaded")
        chosen = self._chosen_decks(self._require(learner_id))
        name = names[index]
        if name in chosen and len(chosen) == 1:
            return [Reply("That is the only deck you study; add another before dropping it.", kind=ReplyKind.ERROR)]
        chosen = [n for n in chosen if n != name] if name in chosen else chosen + [name]
        return self._apply_settings(learner_id, {"decks": None if set(chosen) == set(names) else chosen})
