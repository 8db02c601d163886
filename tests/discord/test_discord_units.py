"""Custom ids, Discord's limits, layout of buttons, the answer form's data, permission checks."""

from __future__ import annotations

import discord
import pytest

from bot.actions import MAX_BYTES, Action, Verb
from bot.discord.checks import Place, can_manage_server, missing_post_permissions, place_problem
from bot.discord.commands import timezone_choices
from bot.discord.custom_ids import (
    MAX_LENGTH,
    AnswerFormId,
    BadCustomId,
    ButtonId,
    is_ours,
    may_use,
    parse,
)
from bot.discord.format import (
    DESCRIPTION_MAX,
    EMBEDS_PER_MESSAGE,
    FIELD_VALUE_MAX,
    FIELDS_MAX,
    MESSAGE_TOTAL_MAX,
    build_embeds,
    discord_len,
    embed_size,
    group_into_messages,
    layout,
    render_reply,
    split_text,
    to_discord_markdown,
    unwrap,
)
from bot.discord.views import answer_form, build_view, button_rows, submitted_answer
from bot.replies import Button, Reply, ReplyKind

BIGGEST_SNOWFLAKE = 2**64 - 1


# ----- custom ids ------------------------------------------------------------------------


def test_custom_ids_round_trip_and_fit_discord() -> None:
    longest_data = Action(Verb.SETTINGS, 10**12 - 1, "a" * 24)
    assert len(longest_data.encode()) <= MAX_BYTES
    for target in (
        ButtonId(longest_data, BIGGEST_SNOWFLAKE),
        ButtonId(Action(Verb.ANSWER, arg="rl-08"), None),
        ButtonId(Action(Verb.OVERRIDE, 17, "3"), 1001),
        AnswerFormId(BIGGEST_SNOWFLAKE, "msft-12"),
    ):
        encoded = target.encode()
        assert len(encoded) <= MAX_LENGTH and is_ours(encoded)
        assert parse(encoded) == target


@pytest.mark.parametrize(
    "custom_id",
    [
        None,
        "",
        "trapbot",
        "trapbot:1001",
        "trapbot:abc:t1:next:-:-",  # owner not a user id
        "trapbot:1001:t0:next:-:-",  # an older version's data
        "trapbot:1001:t1:launch:-:-",  # an unknown verb
        "trapbot:1001:t1:rate:x:3",  # review id not a number
        "trapbot:1001:t1:ovr:²:12",  # a Unicode digit: isdigit() says yes, int() raises
        "trapbot:¹⁰⁰¹:t1:next:-:-",
        "trapbot:1001\n:t1:next:-:-",
        "trapbot-answer:1001:rl-08\n",
        "trapbot:" + "1" * 21 + ":t1:next:-:-",  # owner longer than a snowflake
        "trapbot-answer:1001:",  # no trap
        "trapbot-answer:1001:RL 08",
        "trapbot-answer:*:rl-08",  # a form always has an owner
        "other-bot:1001:t1:next:-:-",
        "trapbot:1001:t1:next:-:-" + "x" * 100,
    ],
)
def test_malformed_custom_ids_are_refused(custom_id) -> None:
    with pytest.raises(BadCustomId):
        parse(custom_id)


def test_only_the_owner_may_use_a_component() -> None:
    mine = ButtonId(Action(Verb.DISAGREE, 5), 1001)
    everyone = ButtonId(Action(Verb.ANSWER, arg="rl-08"), None)
    assert may_use(mine, 1001) and not may_use(mine, 1002)
    assert may_use(everyone, 1001) and may_use(everyone, 1002)
    assert not may_use(AnswerFormId(1001, "rl-08"), 1002)
    assert not is_ours("someone-else:1001") and not is_ours(42)


# ----- splitting text within Discord's limits ------------------------------------------


def _words(text: str) -> list[str]:
    return text.replace("**", "").split()


@pytest.mark.parametrize("limit", [40, 100, 1024])
def test_split_text_keeps_every_word_within_the_limit(limit: int) -> None:
    text = "\n\n".join(
        f"Paragraph {i} has **bold words {i}** and `code {i}` and then some more ordinary words."
        * (1 + i % 3)
        for i in range(30)
    )
    pieces = split_text(text, limit)
    assert all(discord_len(piece) <= limit for piece in pieces)
    assert _words(" ".join(pieces)) == _words(text)
    assert all(piece.count("**") % 2 == 0 for piece in pieces), "bold is closed and reopened"


def test_split_text_counts_astral_emoji_twice_and_never_splits_a_sequence() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    pieces = split_text(family * 300, 100)
    assert all(discord_len(piece) <= 100 for piece in pieces)
    assert "".join(pieces) == family * 300
    for piece in pieces:
        assert not piece.startswith("\u200d") and not piece.endswith("\u200d")
    robots = split_text("\U0001f916" * 4000, DESCRIPTION_MAX)
    assert "".join(robots) == "\U0001f916" * 4000 and len(robots) == 2
    assert DESCRIPTION_MAX - 8 <= discord_len(robots[0]) <= DESCRIPTION_MAX, (
        "a piece is filled, counting 2 per emoji"
    )


def test_layout_takes_a_bold_first_line_as_title_and_bold_lines_as_sections() -> None:
    shape = layout(
        "**Grade 3/5**: right  ·  next review\n\n✅ point one\n❌ point two\n\n**Why**\nBecause.\n\nMore."
    )
    assert shape.title == "Grade 3/5: right · next review"
    assert shape.description == "✅ point one\n❌ point two"
    assert shape.sections == [("Why", "Because.\n\nMore.")]
    assert layout("Saved.\n\n**Your settings**\n- a").title is None


def test_a_late_plots_caption_is_rendered() -> None:
    from bot.discord.format import render_plot
    from bot.replies import PlotImage

    sent = render_plot(PlotImage("s", b"png", "the gap grows as $\\epsilon T^2$ for *BC*", "A title"))
    assert sent.embeds[0].description == "the gap grows as ϵ T² for *BC*"


def test_nested_lists_code_with_angle_brackets_and_links() -> None:
    assert to_discord_markdown("- one\n  - inner\n- two\n\n1. first\n2. second") == (
        "- one\n  - inner\n- two\n\n1. first\n2. second"
    )
    assert to_discord_markdown("keep `a<b && c>d` and a_b*c") == "keep `a<b && c>d` and a\\_b\\*c"
    assert to_discord_markdown("[Gao et al.](https://arxiv.org/abs/2210.10760) in <#555>") == (
        "[Gao et al.](https://arxiv.org/abs/2210.10760) in <#555>"
    )


def test_math_becomes_unicode_and_soft_breaks_are_joined() -> None:
    assert (
        to_discord_markdown("set $\\beta = 0$ and pay $5 or US$7")
        == "set β = 0 and pay $5 or US$7"
    )
    # Discord renders no LaTeX: Unicode, with the underscores it would read as italics escaped.
    assert to_discord_markdown("$r_\\phi$ and $\\pi_{\\mathrm{ref}}$") == "r\\_ϕ and π\\_ref"
    assert (
        unwrap("one line\nwrapped here\n\n- item\n  continued\n- next")
        == "one line wrapped here\n\n- item continued\n- next"
    )


def test_huge_replies_become_several_embeds_and_messages_within_all_limits() -> None:
    sections = "\n\n".join(f"**Section {i}**\n" + ("word " * 400) for i in range(40))
    text = "**A title**\n" + ("intro " * 1500) + "\n\n" + sections
    embeds = build_embeds(text, colour=0, footer="caption " * 400)
    for embed in embeds:
        assert discord_len(embed.description or "") <= DESCRIPTION_MAX
        assert len(embed.fields) <= FIELDS_MAX
        assert all(discord_len(f.value) <= FIELD_VALUE_MAX for f in embed.fields)
        assert embed_size(embed) <= MESSAGE_TOTAL_MAX
    messages = group_into_messages(embeds)
    assert len(messages) > 1
    for message in messages:
        assert len(message) <= EMBEDS_PER_MESSAGE
        assert sum(embed_size(e) for e in message) <= MESSAGE_TOTAL_MAX
    names = [f.name for e in embeds for f in e.fields]
    assert "Section 39" in names and "Section 0 (cont.)" in names


def test_an_image_rides_on_the_last_message() -> None:
    reply = Reply(
        "**Your progress**\n" + "- line\n" * 2000,
        kind=ReplyKind.STATS,
        image=b"\x89PNG",
        image_caption="cap",
    )
    messages = render_reply(reply, owner=1)
    assert len(messages) >= 2 and messages[-1].attachments and not messages[0].attachments
    assert (
        messages[-1].embeds[-1].image.url == f"attachment://{messages[-1].attachments[0].filename}"
    )


# ----- buttons and the form ----------------------------------------------------------------


async def test_six_buttons_in_a_row_become_two_rows_of_three() -> None:
    row = tuple(Button(str(q), Action(Verb.RATE, 9, str(q)).encode()) for q in range(6))
    rows = button_rows(Reply("rate", kind=ReplyKind.CONFIRM, buttons=(row,)), owner=1001)
    assert [[b.label for b in r] for r in rows] == [["0", "1", "2"], ["3", "4", "5"]]
    view = build_view(rows)
    assert view is not None and view.is_finished(), "discord.py must not keep the view"
    assert len(view.to_components()) == 2


async def test_a_trap_gets_one_answer_button_and_pushes_keep_theirs() -> None:
    hint = Button("Hint", Action(Verb.HINT).encode())
    question = Reply("q", kind=ReplyKind.QUESTION, buttons=((hint,),), card_id="rl-08")
    assert [b.label for b in button_rows(question, 5)[0]] == ["Answer", "Hint"]
    pushed = Reply(
        "q",
        kind=ReplyKind.QUESTION,
        buttons=((Button("Answer now", Action(Verb.ANSWER, arg="rl-08").encode()),), (hint,)),
        card_id="rl-08",
    )
    labels = [b.label for row in button_rows(pushed, 5) for b in row]
    assert labels == ["Answer now", "Hint"]


def test_the_typed_answer_is_read_from_either_form_layout() -> None:
    with_label = {
        "components": [
            {"type": 10, "content": "q"},
            {"type": 18, "component": {"type": 4, "custom_id": "answer", "value": "mine"}},
        ]
    }
    with_row = {
        "components": [
            {"type": 1, "components": [{"type": 4, "custom_id": "answer", "value": "rows"}]}
        ]
    }
    assert submitted_answer(with_label) == "mine"
    assert submitted_answer(with_row) == "rows"
    assert (
        submitted_answer({"components": [{"type": 4, "custom_id": "other", "value": "x"}]}) is None
    )
    assert submitted_answer("garbage") is None


async def test_the_form_fits_discord() -> None:
    form = answer_form(
        "rl-08",
        1001,
        title="A very long title that runs past forty-five characters",
        question="Q?" * 3000,
    )
    payload = form.to_dict()
    assert len(payload["title"]) <= 45 and form.is_finished()
    assert len(payload["components"][0]["content"]) <= 4000


# ----- where commands run, and who configures a server ------------------------------------


class _Where:
    def __init__(self, guild_id, guild):
        self.guild_id = guild_id
        self.guild = guild


def test_place_checks_both_ways() -> None:
    server, dm, absent = _Where(1, object()), _Where(None, None), _Where(1, None)
    assert place_problem(server, Place.SERVER) is None and place_problem(dm, Place.DM) is None
    assert "works in a server" in place_problem(dm, Place.SERVER)
    assert "not a member" in place_problem(absent, Place.SERVER)
    assert "direct message" in place_problem(server, Place.DM)
    assert (
        place_problem(dm, Place.ANYWHERE) is None and place_problem(server, Place.ANYWHERE) is None
    )


def test_manage_server_and_post_permissions() -> None:
    assert can_manage_server(discord.Permissions(manage_guild=True))
    assert can_manage_server(discord.Permissions(administrator=True))
    assert not can_manage_server(discord.Permissions(manage_channels=True, manage_messages=True))
    assert not can_manage_server(None)
    assert (
        missing_post_permissions(
            discord.Permissions(view_channel=True, send_messages=True, embed_links=True)
        )
        == []
    )
    assert missing_post_permissions(discord.Permissions(view_channel=True)) == [
        "Send Messages",
        "Embed Links",
    ]
    assert missing_post_permissions(discord.Permissions(administrator=True)) == []


def test_timezone_suggestions() -> None:
    names = [choice.value for choice in timezone_choices("berl")]
    assert names == ["Europe/Berlin"]
    assert len(timezone_choices("")) == 25 and timezone_choices("")[0].value == "UTC"
    assert timezone_choices("new york")[0].value == "America/New_York"
