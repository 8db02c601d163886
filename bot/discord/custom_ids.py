"""Discord custom ids: built and parsed here, and nowhere else.

Two shapes, each at most 100 characters (Discord's limit):

- a button: ``trapbot:<owner>:<engine button data>``; the owner is the Discord user id the
  button belongs to, or ``*`` when anyone may press it (a server's trap of the day). The
  engine data (``bot.actions``, at most 64 bytes) says what the button does.
- the answer form (a modal): ``trapbot-answer:<owner>:<card id>``;
- the follow-up form (a modal): ``trapbot-followup:<owner>:<review id>``.

Everything is validated on the way in; a custom id that is not ours, malformed or from an
older version raises ``BadCustomId``. Whether a review belongs to the presser is checked by
the engine as well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.actions import Action, InvalidAction

BUTTON_PREFIX = "trapbot"
FORM_PREFIX = "trapbot-answer"
FOLLOWUP_FORM_PREFIX = "trapbot-followup"
ANYONE = "*"
MAX_LENGTH = 100
#: The custom id of the text input inside the answer form.
ANSWER_INPUT = "answer"

_OWNER = re.compile(r"[0-9]{1,20}")
_CARD_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,15}")


class BadCustomId(ValueError):
    """A custom id that is malformed, forged, or from an older version of trapbot."""


@dataclass(frozen=True)
class ButtonId:
    """A button: what it does (an engine action) and whose it is (None: anyone's)."""

    action: Action
    owner: int | None = None

    def encode(self) -> str:
        owner = ANYONE if self.owner is None else str(self.owner)
        return _checked(f"{BUTTON_PREFIX}:{owner}:{self.action.encode()}")

    @property
    def data(self) -> str:
        return self.action.encode()


@dataclass(frozen=True)
class AnswerFormId:
    """The answer form a user opened for one trap."""

    owner: int
    card_id: str

    def encode(self) -> str:
        if not _CARD_ID.fullmatch(self.card_id):
            raise ValueError(f"not a card id: {self.card_id!r}")
        return _checked(f"{FORM_PREFIX}:{self.owner}:{self.card_id}")


@dataclass(frozen=True)
class FollowUpFormId:
    """The form a user opened to answer the follow-up on one of their reviews."""

    owner: int
    review_id: int

    def encode(self) -> str:
        return _checked(f"{FOLLOWUP_FORM_PREFIX}:{self.owner}:{self.review_id}")


def _checked(custom_id: str) -> str:
    if len(custom_id) > MAX_LENGTH:
        raise ValueError(f"custom id longer than {MAX_LENGTH} characters: {custom_id!r}")
    return custom_id


def is_ours(custom_id: object) -> bool:
    """Whether the custom id claims to be trapbot's (it may still be malformed)."""
    return isinstance(custom_id, str) and custom_id.split(":", 1)[0] in (
        BUTTON_PREFIX,
        FORM_PREFIX,
        FOLLOWUP_FORM_PREFIX,
    )


def parse(custom_id: object) -> ButtonId | AnswerFormId | FollowUpFormId:
    """The button or form a custom id names, or ``BadCustomId``."""
    if not isinstance(custom_id, str) or len(custom_id) > MAX_LENGTH:
        raise BadCustomId("not a custom id")
    prefix, _, rest = custom_id.partition(":")
    owner_text, _, payload = rest.partition(":")
    if prefix == BUTTON_PREFIX:
        owner = None if owner_text == ANYONE else _owner(owner_text)
        try:
            action = Action.decode(payload)
        except InvalidAction as error:
            raise BadCustomId(str(error)) from None
        return ButtonId(action, owner)
    if prefix == FORM_PREFIX:
        if not _CARD_ID.fullmatch(payload):
            raise BadCustomId("the form names no trap")
        return AnswerFormId(_owner(owner_text), payload)
    if prefix == FOLLOWUP_FORM_PREFIX:
        if not payload.isdigit() or len(payload) > 12:
            raise BadCustomId("the form names no answer")
        return FollowUpFormId(_owner(owner_text), int(payload))
    raise BadCustomId("not one of trapbot's custom ids")


def _owner(text: str) -> int:
    if not _OWNER.fullmatch(text):
        raise BadCustomId("the owner is not a Discord user id")
    return int(text)


def may_use(target: ButtonId | AnswerFormId | FollowUpFormId, user_id: int) -> bool:
    """Whether this user may press the button or submit the form."""
    return target.owner is None or target.owner == user_id
