"""Buttons and the answer form.

Buttons are never tracked by discord.py's view store: every press reaches
``DiscordHandlers.route`` through ``on_interaction`` and is parsed by ``custom_ids``. So a
button keeps working after a restart, and so does an answer form submitted after one (a
DynamicItem could not cover modals).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import discord

from bot.actions import Action, InvalidAction, Verb
from bot.discord.custom_ids import ANSWER_INPUT, AnswerFormId, ButtonId, FollowUpFormId
from bot.replies import Reply, ReplyKind
from cards.wording import wording_ref

log = logging.getLogger(__name__)

BUTTONS_PER_ROW = 5
ROWS_MAX = 5
LABEL_MAX = 80
#: Discord's limit for a text input; the engine accepts up to 8,000 characters.
ANSWER_MAX = 4000
FORM_TITLE_MAX = 45
TEXT_DISPLAY_MAX = 4000


@dataclass(frozen=True)
class ButtonSpec:
    label: str
    custom_id: str
    style: discord.ButtonStyle
    action: Action


def _style(action: Action) -> discord.ButtonStyle:
    if action.verb in (Verb.ANSWER, Verb.NEXT) or (
        action.verb is Verb.FOLLOWUP and action.arg in (None, "answer")
    ):
        return discord.ButtonStyle.primary
    if action.verb in (Verb.CONFIRM,):
        return discord.ButtonStyle.success
    if action.verb is Verb.FORGET and action.arg == "yes":
        return discord.ButtonStyle.danger
    return discord.ButtonStyle.secondary


def spec_for(action: Action, label: str, owner: int | None) -> ButtonSpec:
    label = label if len(label) <= LABEL_MAX else label[: LABEL_MAX - 1] + "…"
    return ButtonSpec(label, ButtonId(action, owner).encode(), _style(action), action)


def answer_button(card_id: str, owner: int | None, wording: int = 0) -> ButtonSpec:
    """Opens the answer form; ``wording`` says which wording of the card the form shows."""
    return spec_for(Action(Verb.ANSWER, arg=wording_ref(card_id, wording)), "Answer", owner)


def follow_up_button(review_id: int, owner: int | None) -> ButtonSpec:
    """Opens the follow-up form."""
    return spec_for(Action(Verb.FOLLOWUP, review_id, "answer"), "Answer", owner)


def _balanced(row: list[ButtonSpec]) -> list[list[ButtonSpec]]:
    """A row of more than five buttons as rows of near-equal length (six: three and three)."""
    count = -(-len(row) // BUTTONS_PER_ROW)
    size = -(-len(row) // count)
    return [row[i : i + size] for i in range(0, len(row), size)]


def button_rows(reply: Reply, owner: int | None) -> list[list[ButtonSpec]]:
    """The reply's buttons laid out for Discord, with an Answer button on a trap."""
    rows: list[list[ButtonSpec]] = []
    for row in reply.buttons:
        specs = []
        for button in row:
            try:
                specs.append(spec_for(Action.decode(button.data), button.label, owner))
            except (InvalidAction, ValueError):
                log.warning("dropping a button with bad data: %r", button.data)
        if specs:
            rows.extend(_balanced(specs))
    has_answer = any(spec.action.verb is Verb.ANSWER for row in rows for spec in row)
    answer: ButtonSpec | None = None
    if reply.expects_answer and reply.card_id and not has_answer:
        answer = answer_button(reply.card_id, owner, reply.wording)
    elif reply.kind is ReplyKind.FOLLOWUP and reply.review_id is not None:
        answer = follow_up_button(reply.review_id, owner)
    if answer is not None:
        if rows and len(rows[0]) < BUTTONS_PER_ROW:
            rows[0].insert(0, answer)
        else:
            rows.insert(0, [answer])
    if len(rows) > ROWS_MAX:
        log.warning("a reply had %d rows of buttons; Discord shows %d", len(rows), ROWS_MAX)
        rows = rows[:ROWS_MAX]
    return rows


def build_view(rows: list[list[ButtonSpec]]) -> discord.ui.View | None:
    """A view for sending; stopped first, so discord.py does not keep it (see above)."""
    if not rows:
        return None
    view = discord.ui.View(timeout=None)
    for index, row in enumerate(rows):
        for spec in row:
            view.add_item(
                discord.ui.Button(
                    label=spec.label, custom_id=spec.custom_id, style=spec.style, row=index
                )
            )
    view.stop()
    return view


def answer_form(card_id: str, owner: int, *, title: str, question: str) -> discord.ui.Modal:
    """The answer form: the question shown on top, a paragraph input below."""
    return _paragraph_form(
        title=_short(title or "Your answer", FORM_TITLE_MAX),
        custom_id=AnswerFormId(owner, card_id).encode(),
        shown=_short(question, TEXT_DISPLAY_MAX - 500) if question else "",
        label="Your answer",
        description="The mechanism, in your own words. Only you see the grade.",
        placeholder="Why does it break, and what would you do instead?",
    )


def follow_up_form(review_id: int, owner: int) -> discord.ui.Modal:
    """The follow-up's answer form. It shows no question: the follow-up is the message the
    button is on (the form opens at once, with no database read before it)."""
    return _paragraph_form(
        title="The follow-up",
        custom_id=FollowUpFormId(owner, review_id).encode(),
        shown="",
        label="Your answer to the follow-up",
        description="A sentence or two. It does not change your grade.",
        placeholder=None,
    )


def _paragraph_form(
    *, title: str, custom_id: str, shown: str, label: str, description: str, placeholder: str | None
) -> discord.ui.Modal:
    """A form of one required paragraph input, with ``shown`` text above it when given."""
    form = discord.ui.Modal(title=title, custom_id=custom_id, timeout=None)
    if shown:
        form.add_item(discord.ui.TextDisplay(shown))
    form.add_item(
        discord.ui.Label(
            text=label,
            description=description,
            component=discord.ui.TextInput(
                custom_id=ANSWER_INPUT,
                style=discord.TextStyle.paragraph,
                max_length=ANSWER_MAX,
                required=True,
                placeholder=placeholder,
            ),
        )
    )
    form.stop()  # handled by the router like every button, so not kept by discord.py either
    return form


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def submitted_answer(data: Any) -> str | None:
    """The answer typed into the form, from a modal-submit interaction's data; None if absent."""
    if not isinstance(data, dict):
        return None
    stack = list(data.get("components") or [])
    while stack:
        component = stack.pop(0)
        if not isinstance(component, dict):
            continue
        if component.get("custom_id") == ANSWER_INPUT:
            value = component.get("value")
            return value if isinstance(value, str) else None
        stack.extend(component.get("components") or [])
        if isinstance(component.get("component"), dict):
            stack.append(component["component"])
    return None
