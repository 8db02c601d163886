"""Button data: what a button does, encoded in at most 64 bytes and validated in one place.

Format: ``t1:<verb>:<review id or ->:<argument or ->``. Anything else is rejected with
``InvalidAction``; whether the review belongs to the presser is checked by the engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

PREFIX = "t1"
MAX_BYTES = 64


class Verb(StrEnum):
    RATE = "rate"  # self-grade 0-5 (arg: quality)
    TICK = "tick"  # toggle a key point in assisted grading (arg: point index)
    CONFIRM = "ok"  # accept the ticked points
    DISAGREE = "dis"  # show the 0-5 override buttons
    OVERRIDE = "ovr"  # replace the judge's quality (arg: quality)
    EXPLAIN = "exp"  # the full explanation
    NEXT = "next"  # the next trap
    EXTRA = "more"  # one more new trap beyond today's limit
    HINT = "hint"
    SKIP = "skip"
    UNDO = "undo"
    FORGET = "forget"  # arg: yes / no
    SETTINGS = "set"  # arg: accept-defaults, pause, resume
    SNOOZE = "snz"  # arg: hours
    SKIP_TODAY = "off"
    ANSWER = "ans"  # open a given trap to answer (arg: card id, or card id.variant index), e.g. from a push
    GROUP_DECK = "gdk"  # add or drop one of a group chat's decks (arg: deck position.name digest)
    FOLLOWUP = "fu"  # the interviewer's follow-up on a review (arg: -/answer: ask it, skip, yes/no: self-check)


_ARG = re.compile(r"[a-z0-9_.+-]{1,24}")


def _is_ascii_number(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also accepts "²" and "١", which ``int`` refuses or reads."""
    return text.isascii() and text.isdecimal()


class InvalidAction(ValueError):
    """Button data that is malformed, forged or from an older version."""


@dataclass(frozen=True)
class Action:
    verb: Verb
    review_id: int | None = None
    arg: str | None = None

    def encode(self) -> str:
        data = f"{PREFIX}:{self.verb.value}:{self.review_id if self.review_id is not None else '-'}:{self.arg or '-'}"
        if len(data.encode()) > MAX_BYTES:
            raise ValueError(f"button data too long: {data!r}")
        return data

    @classmethod
    def decode(cls, data: object) -> Action:
        if not isinstance(data, str) or len(data.encode("utf-8", "replace")) > MAX_BYTES:
            raise InvalidAction("button data is not a short string")
        parts = data.split(":")
        if len(parts) != 4 or parts[0] != PREFIX:
            raise InvalidAction("button data is from another version or not ours")
        _, verb_text, review_text, arg_text = parts
        try:
            verb = Verb(verb_text)
        except ValueError:
            raise InvalidAction(f"unknown button verb {verb_text!r}") from None
        review_id: int | None = None
        if review_text != "-":
            if not _is_ascii_number(review_text) or len(review_text) > 12:
                raise InvalidAction("review id is not a number")
            review_id = int(review_text)
        arg: str | None = None
        if arg_text != "-":
            if not _ARG.fullmatch(arg_text):
                raise InvalidAction("button argument is malformed")
            arg = arg_text
        return cls(verb, review_id, arg)

    def int_arg(self, low: int, high: int) -> int:
        """The argument as an integer in ``[low, high]``, or ``InvalidAction``."""
        if self.arg is None or not _is_ascii_number(self.arg) or not low <= int(self.arg) <= high:
            raise InvalidAction(f"expected a number from {low} to {high}")
        return int(self.arg)
