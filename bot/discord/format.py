"""Engine replies as Discord embeds, cut cleanly to fit Discord's limits.

Limits (Discord counts characters; we count UTF-16 code units, which is never fewer, so an
emoji-heavy text cannot slip over): title 256, description 4096, field name 256, field value
1024, footer 2048, 25 fields an embed, 6000 characters over all the embeds of one message,
10 embeds a message. Long text is cut at a paragraph, then a line, then a word; a word longer
than the room is cut between characters, never inside a surrogate pair or after a joiner.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import discord

from bot.discord.views import ButtonSpec, button_rows
from bot.markup import MarkdownRenderer, latex_to_unicode, to_plain
from bot.replies import PlotImage, Reply, ReplyKind

TITLE_MAX = 256
DESCRIPTION_MAX = 4096
FIELD_NAME_MAX = 256
FIELD_VALUE_MAX = 1024
FOOTER_MAX = 2048
AUTHOR_MAX = 256
FIELDS_MAX = 25
MESSAGE_TOTAL_MAX = 6000
EMBEDS_PER_MESSAGE = 10

COLOURS = {
    ReplyKind.QUESTION: 0x5865F2,
    ReplyKind.CONFIRM: 0xE67E22,
    ReplyKind.HINT: 0xF1C40F,
    ReplyKind.ERROR: 0xED4245,
    ReplyKind.EXPLANATION: 0x3498DB,
}
GRADE_COLOURS = {0: 0xED4245, 1: 0xED4245, 2: 0xED4245, 3: 0xFEE75C, 4: 0x57F287, 5: 0x57F287}
NEUTRAL = 0x99AAB5

_FIRST_BOLD = re.compile(r"^\*\*(.+?)\*\*")
_HEADING = re.compile(r"^\*\*([^*\n]{1,200})\*\*:?$")
_GRADE = re.compile(r"\*\*Grade (\d)/5\*\*")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_ENGINE_ANSWER_HINT = "Answer in a message of your own words."
DISCORD_ANSWER_HINT = "Press Answer to reply in your own words."
#: Escaped in text: what Discord reads as inline markup. ``<#id>``/``<@id>`` mentions stay whole.
_DISCORD_SPECIAL = re.compile(r"([\\*_~|`])")


def discord_len(text: str) -> int:
    """Length as UTF-16 code units: an upper bound on what Discord counts."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class DiscordRenderer(MarkdownRenderer):
    """The engine's Markdown re-written in Discord's dialect from markdown-it-py's tokens.

    Text is escaped, so a formula's ``r_t`` or a stray ``*`` shows as typed; ``$...$`` math
    becomes Unicode (pylatexenc) since Discord renders no LaTeX.
    """

    bullet = "- "
    quote_mark = "> "

    def text(self, text: str) -> str:
        return _DISCORD_SPECIAL.sub(r"\\\1", text)

    def bold(self, inner: str) -> str:
        return f"**{inner}**" if inner else ""

    def italic(self, inner: str) -> str:
        return f"*{inner}*" if inner else ""

    def code(self, text: str) -> str:
        fence = "``" if "`" in text else "`"
        return f"{fence}{text}{fence}" if text.strip() else text

    def code_block(self, text: str) -> str:
        return f"```\n{text.replace('```', '` ` `')}\n```"

    def math(self, latex: str) -> str:
        return self.text(latex_to_unicode(latex))

    def link(self, inner: str, href: str) -> str:
        if not href.startswith(("http://", "https://")):
            return inner
        return f"[{inner}]({href.replace(')', '%29')})"


def to_discord_markdown(text: str, *, unwrap: bool = False) -> str:
    """The engine's Markdown as Discord shows it; ``unwrap`` joins soft line breaks (a card's
    explanation is wrapped at 90 columns, and Discord shows every newline)."""
    return DiscordRenderer(unwrap=unwrap).render(text)


def unwrap(markdown: str) -> str:
    """Discord Markdown with the paragraphs' soft line breaks joined; list items stay apart."""
    return to_discord_markdown(markdown, unwrap=True)


_WHY = "\n**Why**\n"


def plain(markdown: str) -> str:
    """Text without Markdown, for places that render none (titles, labels, footers)."""
    return re.sub(r"[ \t]{2,}", " ", to_plain(markdown)).strip()


def truncate(text: str, limit: int) -> str:
    if discord_len(text) <= limit:
        return text
    return text[: _fitting_prefix(text, limit - 1)].rstrip() + "…"


def _fitting_prefix(text: str, limit: int) -> int:
    """The largest n with ``discord_len(text[:n]) <= limit``."""
    used = 0
    for index, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > limit:
            return index
    return len(text)


def _joins_previous(ch: str) -> bool:
    return ch in "\u200d\ufe0e\ufe0f" or unicodedata.category(ch) in ("Mn", "Mc", "Me", "Sk")


def _cut_point(text: str, limit: int) -> int:
    end = _fitting_prefix(text, limit)
    window = text[:end]
    for separator in ("\n\n", "\n", " "):
        at = window.rfind(separator)
        if at > end // 4:
            return at
    cut = end
    while cut > 1 and (_joins_previous(text[cut]) or text[cut - 1] == "\u200d"):
        cut -= 1
    return max(cut, 1)


def split_text(text: str, limit: int) -> list[str]:
    """Pieces of at most ``limit``, cut at the best boundary; bold and code spans are
    closed at the end of a piece and reopened at the start of the next."""
    if limit < 8:
        raise ValueError("limit too small to split cleanly")
    pieces: list[str] = []
    rest = text.strip()
    while rest and discord_len(rest) > limit:
        # Room for the markers a piece may need to close and reopen.
        cut = _cut_point(rest, limit - 4)
        head, rest = rest[:cut].rstrip(), rest[cut:].lstrip(" \n")
        reopen = ""
        if head.count("**") % 2:
            head, reopen = head + "**", "**"
        if head.replace("```", "").count("`") % 2:
            head, reopen = head + "`", reopen + "`"
        if head.strip("*` "):
            pieces.append(head)
        rest = reopen + rest if rest else ""
    if rest.strip("*` "):
        pieces.append(rest)
    return pieces


@dataclass(frozen=True)
class Attachment:
    filename: str
    data: bytes


@dataclass
class Outgoing:
    """One Discord message: embeds, files, and rows of buttons."""

    embeds: list[discord.Embed]
    attachments: list[Attachment] = field(default_factory=list)
    buttons: list[list[ButtonSpec]] = field(default_factory=list)


@dataclass(frozen=True)
class Layout:
    title: str | None
    description: str
    sections: list[tuple[str, str]]


def layout(text: str) -> Layout:
    """Split reply text into a title (a bold first line), a description, and sections
    (paragraphs that open with a line in bold only, such as ``**Why**``)."""
    text = text.strip()
    first, _, body = text.partition("\n")
    title = None
    if _FIRST_BOLD.match(first) and body.strip():
        candidate = plain(first)
        if discord_len(candidate) <= TITLE_MAX:
            title, text = candidate, body.strip()
    description: list[str] = []
    sections: list[list[str]] = []
    for block in _PARAGRAPH.split(text):
        if not block.strip():
            continue
        head, _, rest = block.partition("\n")
        heading = _HEADING.match(head.strip())
        if heading and rest.strip():
            sections.append([heading.group(1).strip(), rest.strip()])
        elif sections:
            sections[-1][1] += "\n\n" + block.strip()
        else:
            description.append(block.strip())
    return Layout(title, "\n\n".join(description), [(name, body) for name, body in sections])


def embed_size(embed: discord.Embed) -> int:
    """What counts toward the 6000 limit, in UTF-16 code units."""
    size = discord_len(embed.title or "") + discord_len(embed.description or "")
    size += sum(discord_len(f.name or "") + discord_len(f.value or "") for f in embed.fields)
    size += discord_len(embed.footer.text or "") + discord_len(embed.author.name or "")
    return size


def build_embeds(
    text: str,
    *,
    colour: int,
    author: str | None = None,
    footer: str | None = None,
    convert: bool = True,
) -> list[discord.Embed]:
    """Embeds that hold all of ``text``, each within every per-embed limit; ``convert``
    False: ``text`` is Discord Markdown already."""
    shape = layout(to_discord_markdown(text) if convert else text)
    chunks = split_text(shape.description, DESCRIPTION_MAX) or [""]
    embeds: list[discord.Embed] = []
    current = discord.Embed(
        title=truncate(shape.title, TITLE_MAX) if shape.title else None,
        description=chunks[0] or None,
        colour=colour,
    )
    if author:
        current.set_author(name=truncate(plain(author), AUTHOR_MAX))
    for chunk in chunks[1:]:
        embeds.append(current)
        current = discord.Embed(description=chunk, colour=colour)
    for name, body in shape.sections:
        name = truncate(plain(name), FIELD_NAME_MAX - 12)
        for index, value in enumerate(split_text(body, FIELD_VALUE_MAX)):
            label = name if index == 0 else f"{name} (cont.)"
            room = MESSAGE_TOTAL_MAX - embed_size(current)
            if len(current.fields) >= FIELDS_MAX or discord_len(label) + discord_len(value) > room:
                embeds.append(current)
                current = discord.Embed(colour=colour)
            current.add_field(name=label, value=value, inline=False)
    if footer:
        footer = truncate(plain(footer), FOOTER_MAX)
        if embed_size(current) + discord_len(footer) > MESSAGE_TOTAL_MAX:
            embeds.append(current)
            current = discord.Embed(colour=colour)
        current.set_footer(text=footer)
    embeds.append(current)
    return embeds


def group_into_messages(embeds: list[discord.Embed]) -> list[list[discord.Embed]]:
    """Consecutive embeds packed into messages of at most 10 embeds and 6000 characters."""
    messages: list[list[discord.Embed]] = []
    size = 0
    for embed in embeds:
        needed = embed_size(embed)
        if (
            not messages
            or len(messages[-1]) >= EMBEDS_PER_MESSAGE
            or size + needed > MESSAGE_TOTAL_MAX
        ):
            messages.append([])
            size = 0
        messages[-1].append(embed)
        size += needed
    return messages


def colour_for(reply: Reply) -> int:
    if reply.kind is ReplyKind.VERDICT:
        grade = _GRADE.search(reply.text)
        return GRADE_COLOURS[int(grade.group(1))] if grade else NEUTRAL
    return COLOURS.get(reply.kind, NEUTRAL)


def _attachment_name(stem: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem)[:60] + ".png"


def render_reply(
    reply: Reply,
    *,
    owner: int | None,
    card_title: str | None = None,
    plot: PlotImage | None = None,
) -> list[Outgoing]:
    """The Discord messages for one reply: its text, its image or plot, its buttons.

    ``owner`` is the Discord user the buttons belong to (None: anyone may press them).
    ``card_title`` names the trap above a verdict or a grading prompt.
    """
    text = reply.text
    if reply.kind is ReplyKind.QUESTION:
        text = text.replace(_ENGINE_ANSWER_HINT, DISCORD_ANSWER_HINT)
    if reply.kind is ReplyKind.EXPLANATION:
        text = unwrap(text)
    elif reply.kind is ReplyKind.VERDICT and _WHY in text:
        verdict, why = text.split(_WHY, 1)
        text = to_discord_markdown(verdict) + "\n\n**Why**\n" + unwrap(why)
    else:
        text = to_discord_markdown(text)
    author = (
        card_title if reply.kind in (ReplyKind.VERDICT, ReplyKind.CONFIRM, ReplyKind.HINT) else None
    )
    attachment: Attachment | None = None
    footer: str | None = None
    if plot is not None:
        attachment = Attachment(_attachment_name(f"plot-{plot.sim_id}"), plot.png)
        footer = f"{plot.title}: {plot.caption}" if plot.title else plot.caption
    elif reply.image is not None:
        attachment = Attachment(_attachment_name(f"{reply.kind.value}"), reply.image)
        footer = reply.image_caption or None
    embeds = build_embeds(text, colour=colour_for(reply), author=author, footer=footer, convert=False)
    if attachment is not None:
        embeds[-1].set_image(url=f"attachment://{attachment.filename}")
    messages = [Outgoing(group) for group in group_into_messages(embeds)]
    if attachment is not None:
        messages[-1].attachments.append(attachment)
    messages[-1].buttons = button_rows(reply, owner)
    return messages


def render_plot(plot: PlotImage) -> Outgoing:
    """A plot sent on its own, when it was not ready in time for its verdict."""
    attachment = Attachment(_attachment_name(f"plot-{plot.sim_id}"), plot.png)
    embed = discord.Embed(
        title=truncate(plot.title or "The simulation", TITLE_MAX),
        description=truncate(to_discord_markdown(plot.caption), DESCRIPTION_MAX) or None,
        colour=COLOURS[ReplyKind.EXPLANATION],
    )
    embed.set_image(url=f"attachment://{attachment.filename}")
    return Outgoing([embed], [attachment])


def render_notice(text: str, *, error: bool = False) -> Outgoing:
    """A short message of the adapter's own (not from the engine)."""
    colour = COLOURS[ReplyKind.ERROR] if error else NEUTRAL
    return Outgoing(group_into_messages(build_embeds(text, colour=colour))[0])
