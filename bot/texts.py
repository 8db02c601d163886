"""The words trapbot says: builders that turn cards, grades and stats into Markdown."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from grader.base import Judgement, PointVerdict

if TYPE_CHECKING:
    from cards.schema import Card

MARK = {
    PointVerdict.PRESENT: "✅",
    PointVerdict.PARTIAL: "🟡",
    PointVerdict.ABSENT: "❌",
    PointVerdict.CONTRADICTED: "⛔",
}
QUALITY_WORDS = {
    0: "blackout: fell for the trap",
    1: "wrong, but the key rang a bell",
    2: "wrong, the mechanism is missing",
    3: "right, with real gaps",
    4: "right, a small gap",
    5: "complete",
}

WELCOME = (
    "**trapbot** drills the traps of reinforcement learning and RLHF interviews: one question "
    "a day, the answer most candidates give, and the mechanism that breaks it.\n\n"
    "Answer in your own words. You get a grade point by point against the mechanism, the "
    "explanation with a plot from a small simulation, and the next review date from "
    "spaced repetition (SM-2)."
)

HELP = (
    "**Commands**\n"
    "- /trap: the next due trap, or a new one\n"
    "- /hint: a nudge for the open trap\n"
    "- /skip: put the open trap back for later\n"
    "- /stats: streak, reviews, what is due, mastery per mechanism\n"
    "- /settings: timezone, push time, new traps a day, pause\n"
    "- /undo: take back your last grade\n"
    "- /forget: delete everything stored about you\n"
    "- /help: this message\n\n"
    "To answer, just send your answer as a message after a trap."
)


def question_text(card: Card, *, repeat: bool, due_label: str) -> str:
    header = f"**{card.title}**  ·  `{card.id}`"
    source = card.source
    where = " at ".join(part for part in (source.role, source.company) if part)
    lines = [header, f"_{where}, {source.date}_" if where else f"_{source.date}_", "", card.question]
    if repeat:
        lines += ["", "_Again today: SM-2 repeats a trap until it scores 4 or more._"]
    lines += ["", f"_{(due_label + ' ') if due_label else ''}Answer in a message of your own words._"]
    return "\n".join(lines)


def key_text(card: Card) -> str:
    """The mechanism key, shown for self-grading."""
    lines = ["**The mechanism key**"]
    for index, point in enumerate(card.key_points, 1):
        core = " (core)" if point.core else ""
        lines.append(f"{index}. {point.text}{core}")
    lines += ["", f"**The trap:** {card.trap}"]
    return "\n".join(lines)


def self_grade_prompt(card: Card) -> str:
    return (
        key_text(card)
        + "\n\nHow close was your answer? Rate it 0-5: 5 complete, 4 a small gap, 3 right with "
        "real gaps, 2 the mechanism missing, 1 wrong but familiar, 0 fell for the trap."
    )


def assisted_prompt(card: Card, judgement: Judgement, quality: int) -> str:
    lines = ["**Check my reading of your answer.** Tap a point to correct it, then confirm.", ""]
    for index, point in enumerate(card.key_points, 1):
        verdict = judgement.verdict_for(point.id)
        core = " (core)" if point.core else ""
        lines.append(f"{index}. {MARK[verdict]} {point.text}{core}")
    fell = _asserted(card, judgement)
    if fell:
        lines += ["", f"⚠️ It reads like the trap: _{fell}_"]
    lines += ["", f"As ticked, that grades **{quality}/5**."]
    return "\n".join(lines)


def _asserted(card: Card, judgement: Judgement) -> str:
    asserted = {m.misconception_id for m in judgement.misconceptions if m.asserted}
    return "; ".join(m.text for m in card.misconceptions if m.id in asserted)


def verdict_text(
    card: Card,
    quality: int,
    judgement: Judgement | None,
    caps: tuple[str, ...],
    next_label: str,
    grader: str,
) -> str:
    lines = [f"**Grade {quality}/5**: {QUALITY_WORDS[quality]}  ·  {next_label}"]
    if judgement is not None and judgement.points:
        lines.append("")
        for point in card.key_points:
            verdict = judgement.verdict_for(point.id)
            core = " (core)" if point.core else ""
            lines.append(f"{MARK[verdict]} {point.text}{core}")
        asserted = {m.misconception_id for m in judgement.misconceptions if m.asserted}
        for misconception in card.misconceptions:
            if misconception.id in asserted:
                lines += [
                    "",
                    f"⚠️ **You fell for the trap:** {misconception.text}",
                    f"Why it breaks: {misconception.why_wrong}",
                ]
        if caps:
            lines += ["", "_Capped: " + "; ".join(caps) + "._"]
        if judgement.feedback:
            lines += ["", judgement.feedback]
    lines += ["", f"_Graded by: {grader}_", "", "**Why**", first_paragraph(card.explanation)]
    return "\n".join(lines)


def first_paragraph(markdown: str) -> str:
    return markdown.strip().split("\n\n", 1)[0].strip()


def explanation_text(card: Card) -> str:
    lines = [f"**{card.title}**", "", card.explanation.strip(), "", "**References**"]
    for ref in card.references:
        arxiv = f", arXiv:{ref.arxiv}" if ref.arxiv else ""
        lines.append(f"- {ref.authors} ({ref.year}). _{ref.title}_{arxiv}")
    return "\n".join(lines)


def day_label(today: date, due: date) -> str:
    days = (due - today).days
    when = due.strftime("%a %d %b")
    if days <= 0:
        return "again today"
    if days == 1:
        return f"next review tomorrow ({when})"
    return f"next review in {days} days ({when})"
